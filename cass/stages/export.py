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
    EXEC_COLUMNS,
    TOKEN_COLUMNS,
    execution_columns,
    kernel_rows,
    kernel_schema,
    pair_rows,
    provenance,
    schema,
    write_table,
)


def run(stage: Stage) -> None:
    params = stage.params
    root = str(stage.store.root)
    counts = pl.read_parquet(stage.upstream_path("tokens", "counts")).select(
        pl.col("unit_id").alias("sample_id"), *TOKEN_COLUMNS)
    executed = pl.DataFrame([{"sample_id": r["sample_id"], **execution_columns(r)}
                             for r in stage.upstream("execute").iter_rows(named=True)],
                            schema={"sample_id": pl.String, **EXEC_COLUMNS})
    pairs = carrying(stage.upstream("normalize"), counts, executed)
    kernels = carrying(stage.upstream("kernels"), counts)
    prov = provenance(params, stage.toolchain_record())
    per_shard = params["export"]["rows_per_shard"]
    with replacing(stage.data_dir) as folder:   # a text that fails its digest check leaves the old shards whole
        metrics = {
            "pairs": write_table(stage.work, folder, pairs, pair_rows, "pairs", per_shard, root, prov, schema(params)),
            "exec_status": dict(sorted(Counter(pairs["exec_status"]).items())),
            "kernels": write_table(stage.work, folder, kernels, kernel_rows, "kernels", per_shard, root,
                                   kernel_schema(params))}
    write_metrics(stage.name, metrics)
    print(metrics)


def carrying(rows: pl.DataFrame, *columns: pl.DataFrame) -> pl.DataFrame:
    """Manifest ``rows`` (sorted by id) with the ``columns`` tables' columns for each row, which must have them."""
    for table in columns:
        if (missing := rows.join(table, on="sample_id", how="anti")).height:
            raise KeyError(f"export: no {table.columns[1]!r} for sample {missing['sample_id'][0]} "
                           f"({missing['path'][0]}); {missing.height} rows lack it")
        rows = rows.join(table, on="sample_id", how="left")
    return rows.sort("sample_id")
