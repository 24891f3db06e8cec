"""Stage ``hub``: the dataset as the Hugging Face Hub lays datasets out, with its dataset card.

``data/hub/`` mirrors the target repository: ``data/<config>/train-XXXXX-of-XXXXX.parquet``
(named as ``datasets.push_to_hub`` names shards) and ``README.md``. Configs: ``pairs``
(file-level), ``verified`` (the pairs the execute stage verified: ``exec_verified``, outputs that agree and kernels
launched on the GPU in every run; left out while there is none), ``kernels`` (kernel-level), ``instruct_source``
and ``instruct_asm`` (training messages), ``pairs_<origin>`` per origin, and ``benchmark_hecbench`` (the
real-program suite's tasks: domain, difficulty, license, visible arguments, files by digest; stage ``real_tasks``).
A row's shard is chosen by a stable key (BLAKE3 of its id modulo the shard count), and the shard count by the
table's size over
``hub.shard_bytes``, so changing one sample rewrites one shard per config that holds it.
The card has YAML ``configs:``, the license field, a schema table per config, counts per stage
and drop reason, the exact toolchain versions, flags, dedup and tokenizer parameters, and how
to cite the CASS paper.
"""

from __future__ import annotations

import shutil

import polars as pl

from cass.benchmark import REAL_SUITE
from cass.hub.layout import SOURCES, card, write_config
from cass.pipeline.context import Stage
from cass.pipeline.metrics import write_metrics


def run(stage: Stage) -> None:
    params = stage.params
    shard_bytes = params["hub"]["shard_bytes"]
    configs: dict[str, pl.DataFrame] = {}
    keys: dict[str, str] = {}
    tables = {name: pl.read_parquet(sorted((stage.upstream_dir(folder.split("/")[0]) / folder.split("/", 1)[1])
                                           .glob("*.parquet"))) for name, (folder, _) in SOURCES.items()}
    holdout = pl.col("origin").is_in(params["export"]["holdout_origins"])
    for name, (_, key) in SOURCES.items():   # the held-out origins (the benchmark's tasks) in no training config
        configs[name] = tables[name].filter(~holdout)
        keys[name] = key
    verified = configs["pairs"].filter(pl.col("exec_verified").fill_null(False))
    if verified.height:   # an empty config would not load (`datasets` finds no data in it)
        configs["verified"] = verified
        keys["verified"] = "sample_id"
    suite = stage.upstream("real_tasks")
    if suite.height:   # the real-program suite's tasks, by reference (files by digest; the card in translation_bench)
        configs[f"benchmark_{REAL_SUITE}"] = suite
        keys[f"benchmark_{REAL_SUITE}"] = "sample_id"
    for origin in sorted(tables["pairs"]["origin"].unique()):
        configs[f"pairs_{origin}"] = tables["pairs"].filter(pl.col("origin") == origin)
        keys[f"pairs_{origin}"] = "sample_id"
    root = stage.data_dir
    if root.exists():
        shutil.rmtree(root)
    files = {name: write_config(root, table, keys[name], name, shard_bytes) for name, table in configs.items()}
    (root / "README.md").write_text(card(root, params, configs, files, stage.upstream_metrics(),
                                         stage.toolchain_record()))
    metrics = {name: {"rows": configs[name].height, "shards": len(paths)} for name, paths in files.items()}
    write_metrics(stage.name, metrics)
    print(metrics)
