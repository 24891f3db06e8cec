"""Stage ``real_tasks``: the real-program suite's tasks read from the mirror of their pinned upstream commit.

Every file a task names (its CUDA program, its human port, its data files: ``translation_bench/real/tasks.json``) is
read from ``benchmark.real.source`` and checked against the manifest's BLAKE3 digest, then put in the store. A task
whose files do not all check is dropped with the first file that failed (``mirror_missing``: no mirror there;
``mirror_mismatch``: a file missing or other than the manifest's), so a collaborator without the mirror builds the
dataset without the suite and the metrics say so. DVC does not see the mirror (it is outside the project): the stage
reruns when its code, parameters or the manifest change; a mirror put in place later is read with `dvc repro --force
--single-item real_tasks`. What later stages use is in the store by digest (the packs carry it), not in the mirror.
The manifest (one row per task: its id, domain, difficulty and CUDA files) is what ``dedup`` decontaminates against
and ``evaluate`` scores.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cass.benchmark import REAL_SUITE
from cass.benchmark.real_tasks import MANIFEST, load_files, read_manifest
from cass.pipeline.context import Stage
from cass.pipeline.manifests import FILES_DTYPE

SCHEMA = {"sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
          "difficulty": pl.String, "constructs": pl.List(pl.String), "lines": pl.Int64, "units": pl.Int64,
          "license": pl.String, "upstream_commit": pl.String, "visible_args": pl.List(pl.String),
          "hidden_differs": pl.Boolean, "files": FILES_DTYPE}
"""One row per task: what the Hub's ``benchmark_hecbench`` config publishes (the files by path and digest, not
their texts: the suite is kept by reference)."""


def run(stage: Stage) -> None:
    real = stage.params["benchmark"]["real"]
    upstream, tasks = read_manifest(MANIFEST)
    out = stage.output(len(tasks))
    mirror = Path(real["source"])
    rows = [{"sample_id": t.id, "origin": REAL_SUITE, "path": t.main, "domain": t.domain, "difficulty": t.difficulty,
             "constructs": t.constructs, "lines": t.lines, "units": 1 + len(t.units), "license": t.license,
             "upstream_commit": upstream["commit"], "visible_args": t.visible_args, "hidden_differs": t.hidden_differs,
             "files": [{"path": p, "digest": d} for p, d in t.files.items()]} for t in tasks]
    if not (mirror / "src").is_dir():
        for row in rows:
            out.drop(row, "mirror_missing", f"no mirror of {upstream['repository']} at {mirror} "
                                            "(params.yaml benchmark.real.source; once it is there: dvc repro "
                                            "--force --single-item real_tasks)")
        kept = []
    else:
        _, problems = load_files(stage.store, mirror, tasks)
        for row in rows:
            if row["sample_id"] in problems:
                out.drop(row, "mirror_mismatch", problems[row["sample_id"]])
        kept = [r for r in rows if r["sample_id"] not in problems]
    out.extra_metrics.update({"suite": REAL_SUITE, "upstream": upstream, "source": str(mirror)})
    metrics = out.write(pl.DataFrame(kept, schema=SCHEMA))
    print(f"real_tasks: {metrics['kept']} of {metrics['in']} tasks read from {mirror} "
          f"({upstream['repository']} {upstream['commit'][:12]}), dropped {metrics['dropped_by_reason'] or 'none'}")
