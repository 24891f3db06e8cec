"""Stage ``analyze``: execute the analysis notebooks of ``analysis/`` headless.

Each ``analysis/*.py`` file (jupytext percent format; ``_*.py`` helpers are skipped) is converted with jupytext to
a notebook and executed with nbclient on an IPython kernel that runs *this* interpreter (the venv's python,
whatever kernelspecs are installed), with the notebook's folder as working directory. The notebooks write, each
to a folder of its own from which the stage puts the files in place once all have run,

* figures to ``$CASS_FIGURES_DIR`` (default ``analysis/figures/*.png``),
* small CSV tables to ``$CASS_PLOTS_DIR`` (default ``analysis/plots/*.csv``, DVC ``plots``),
* numbers to ``$CASS_ANALYSIS_METRICS`` (default ``analysis/metrics.json``, DVC ``metrics``), one key per notebook,

and this stage writes each executed notebook to ``$CASS_EXECUTED_DIR/<name>.ipynb`` (default
``analysis/executed``). They read ``$CASS_EXPORT_DIR`` (default ``data/export``, or ``hf://datasets/<repo>/data``)
and ``$CASS_METRICS_DIR`` (default ``metrics``). Relative paths are taken from the current directory and passed
to the kernel as absolute paths.

The notebooks are independent: they run at once, as many as there are cores (``--jobs``), one thread each
(:data:`THREAD_VARIABLES`), a worker's notebooks on one kernel made fresh for each (:class:`NotebookKernel`; on 2
cores, one kernel starts, with its first notebook's library imports, while the keys below are computed), each
writing its metrics section to a file of its own, merged into the metrics file at the end. A cell that raises fails
the stage: the message names the notebook, the cell and the error, and the partly executed notebook is still written
for inspection. A notebook whose table has no rows (an empty export) stops with ``NothingToPlot`` instead: it is
skipped, and its metrics section says why. The metrics file is started afresh unless ``--only`` is given.

For a local export and metrics folder, each notebook's declared reads (``READS``: the tables' columns, by glob,
and the stages whose metrics it reads) are all it sees, and its outputs are kept in the store (``store.dir``) under
the bytes of those inputs, its code and its environment (:class:`cass.report.notebooks.NotebookMemo`): a rerun runs
only the notebooks whose inputs changed and puts the others' kept outputs in place. A remote export runs every
notebook, unrestricted. The kept outputs are not in the store's packs, and ``cass store gc`` removes them (the
next run makes them again).

Usage: ``python -m stages.analyze [--only NAME ...] [--timeout SECONDS] [--jobs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from cass.pipeline.context import load_params, open_store
from cass.pipeline.metrics import write_json
from cass.report.notebooks import (
    NOTEBOOK_DIR,
    AnalysisError,
    NotebookMemo,
    analysis_environment,
    notebooks,
    run_notebooks,
)


def main(argv: list[str] | None = None) -> int:
    """Run the notebooks; 0 on success, 1 (with the notebook, cell and error on stderr) on a failure."""
    parser = argparse.ArgumentParser(prog="python -m stages.analyze", description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these notebooks (e.g. lengths)")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds per cell (default 1800)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="notebooks run at once (default: the cores)")
    args = parser.parse_args(argv)

    env = analysis_environment()
    metrics_file = Path(env["CASS_ANALYSIS_METRICS"])
    try:
        paths = notebooks(only=args.only)
        if not paths:
            raise AnalysisError(f"no notebooks in {NOTEBOOK_DIR}")
        memo = NotebookMemo(open_store(load_params()), env) if NotebookMemo.usable(env) else None
        sections = run_notebooks(paths, env, args.timeout, args.jobs, memo)
    except AnalysisError as error:
        print(f"analyze: FAILED: {error}", file=sys.stderr)
        return 1
    # a full run rebuilds every section (no stale keys); --only replaces its notebooks' sections
    merged = json.loads(metrics_file.read_text()) if args.only and metrics_file.exists() else {}
    merged.update(sections)
    write_json(metrics_file, merged)
    skipped = "".join(f"; skipped {name}.py: {section['skipped']}" for name, section in sorted(sections.items())
                      if isinstance(section, dict) and "skipped" in section)
    ran = f"{memo.cache.misses} run, {memo.cache.hits} kept from the store" if memo else f"{len(paths)} run"
    print(f"analyze: {len(paths)} notebooks ({ran}); figures in {env['CASS_FIGURES_DIR']}, tables in "
          f"{env['CASS_PLOTS_DIR']}, metrics in {metrics_file}{skipped}")
    return 0
