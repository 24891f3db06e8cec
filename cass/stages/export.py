"""Stage ``export``: paired samples -> Parquet shards (zstd) with every text materialised, a shard at a time.

Two tables (schemas in docs/outputs.md): ``pairs`` (one row per file-level pair, raw and normalised
device assembly, token counts) and ``kernels`` (one row per kernel matched across vendors).
Rows are sorted by id and cut into shards of ``export.rows_per_shard`` rows, named as
``datasets.push_to_hub`` names them. Toolchain versions and flags are recorded in every pair
row, next to the artifacts they produced.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import replacing
from cass.pipeline.metrics import write_metrics
from cass.training.export import (
    TOKEN_COLUMNS,
    execution_columns,
    export_row,
    kernel_row,
    kernel_schema,
    provenance,
    schema,
    write_table,
)


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    pairs = stage.upstream("normalize")
    counts = {r.pop("unit_id"): r for r in pl.read_parquet(stage.upstream_path("tokens", "counts"))
              .select("unit_id", *TOKEN_COLUMNS).iter_rows(named=True)}
    prov = provenance(params, stage.toolchain_record())
    executed = {r["sample_id"]: execution_columns(r) for r in stage.upstream("execute").iter_rows(named=True)}
    per_shard = params["export"]["rows_per_shard"]
    with replacing(stage.data_dir) as folder:   # a text that fails its digest check leaves the old shards whole
        metrics = {
            "pairs": write_table(folder, pairs.sort("sample_id"),
                                 lambda r: {**export_row(store, r, prov), **counts[r["sample_id"]],
                                            **executed[r["sample_id"]]}, schema(params), "pairs", per_shard),
            "exec_status": dict(sorted(Counter(executed[i]["exec_status"] for i in pairs["sample_id"]).items())),
            "kernels": write_table(folder, stage.upstream("kernels").sort("sample_id"),
                                   lambda r: kernel_row(store, r, counts[r["sample_id"]]), kernel_schema(params),
                                   "kernels", per_shard)}
    write_metrics(stage.name, metrics)
    print(metrics)
