"""Stage ``execute``: every pair with a ``main`` built for an NVIDIA GPU on both sides, each
program run on the run host (the CUDA original ``execute.runs`` times, the HIP translation ``execute.hip_runs``
times), the outputs compared.

Each program is built from its main file and the units its run spec lists and run as the spec says (arguments,
working directory, data files, time limit; :mod:`cass.sources.runspecs`). ``exec_status`` per pair is
:mod:`cass.execution.verify`'s verdict, ``exec_verified`` whether it is verified; ``no_main``,
``not_run:no_gpu_host`` and ``not_run:transient`` (a build or run killed for no reason of the source: not cached,
retried by ``dvc repro -f execute``) besides. No row is dropped: the manifest is the pair stage's with the execution
columns added. The main functions are found a chunk at a time on the stage's workers (:mod:`cass.engine.stage_work`).
A pair one of whose sides a compile stage's fallback compiled is built as its HIP-NVIDIA check was
(:data:`cass.execution.programs.ROUTES`): on Debian's CUDA, or with the build root's headers.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from cass.engine.placement import Placement
from cass.execution.hosts import resolve_host
from cass.execution.programs import routed_toolchains
from cass.execution.verify import COLUMNS, execute, main_signatures
from cass.pipeline.context import Stage


def run(stage: Stage) -> None:
    params = stage.params["execute"]
    rows = stage.upstream("pair")
    out = stage.output(rows.height)
    placement = Placement.of(stage.params)
    host = resolve_host(params["host"], placement)
    mains = {}
    for part in stage.work.chunks(main_signatures, rows.select("sample_id", "files"), str(stage.store.root)):
        mains |= part
    pairs = list(rows.iter_rows(named=True))
    runnable = [row for row in pairs if mains[row["sample_id"]] is not None]
    routed = routed_toolchains(stage.params, placement, runnable) if host else {}   # no host: nothing is built
    added, report = execute(stage.store, params, pairs, mains, host, placement, routed)
    statuses = Counter(r["exec_status"] for r in added)
    out.run.update(report)
    unverified = Counter(r["exec_status"] for r in added if not r["exec_verified"])
    out.extra_metrics.update(exec_status=dict(sorted(statuses.items())), host=report["host"],
                             verified=sum(r["exec_verified"] for r in added),
                             unverified_by_status=dict(sorted(unverified.items())),
                             limits=params["limits"], archs=params["archs"], runs=params["runs"],
                             hip_runs=params["hip_runs"],
                             tolerance=params["tolerance"])
    extra = pl.DataFrame(added, schema={"sample_id": pl.String, **COLUMNS})
    print(out.write(rows.join(extra, on="sample_id", how="left")))
