"""Stage ``execute``: every pair with a ``main`` built for an NVIDIA GPU on both sides, each
program run ``execute.runs`` times on the run host, the outputs compared.

``exec_status`` per pair: ``match`` (the same stdout on both sides, every run), ``match_tolerant``
(the numbers differ within ``execute.tolerance``, the rest is equal), ``mismatch`` (with the first
differing line), ``nondeterministic`` (a side's runs differ), ``cuda_failed``/``hip_failed`` (the
build failed or a run did not exit 0), ``needs_input`` (the CUDA original takes arguments and fails
without them), ``timeout``, ``no_main``, ``not_run:no_gpu_host`` and ``not_run:transient`` (a build or run
killed for no reason of the source: not cached, retried by ``dvc repro -f execute``). No row is dropped: the manifest
is the pair stage's with the execution columns added.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from cass.execution.hosts import resolve_host
from cass.execution.verify import COLUMNS, execute
from cass.pipeline.context import Stage
from toolchains.cluster import scheduler_address


def run(stage: Stage) -> None:
    params = stage.params["execute"]
    rows = stage.upstream("pair")
    out = stage.output(rows.height)
    host = resolve_host(params["host"], scheduler_address(stage.params["executor"]))
    added, report = execute(stage.store, params, list(rows.iter_rows(named=True)), host, stage.params["executor"])
    statuses = Counter(r["exec_status"] for r in added)
    out.action_keys = set(report.pop("keys", []))
    out.run.update(report)
    out.extra_metrics.update(exec_status=dict(sorted(statuses.items())), host=report["host"],
                             limits=params["limits"], archs=params["archs"], runs=params["runs"],
                             tolerance=params["tolerance"])
    extra = pl.DataFrame(added, schema={"sample_id": pl.String, **COLUMNS})
    print(out.write(rows.join(extra, on="sample_id", how="left")))
