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
from cass.hub.layout import SOURCES, STAGING, FileParts, FrameParts, Parts, card, write_configs
from cass.pipeline.context import Stage
from cass.pipeline.manifests import replacing
from cass.pipeline.metrics import write_metrics


def run(stage: Stage) -> None:
    params = stage.params
    shard_bytes = params["hub"]["shard_bytes"]
    sources = {name: tuple(sorted((stage.upstream_dir(folder.split("/")[0]) / folder.split("/", 1)[1])
                                  .glob("*.parquet"))) for name, (folder, _) in SOURCES.items()}
    training = ~pl.col("origin").is_in(params["export"]["holdout_origins"])   # no held-out origin in a config
    configs: dict[str, tuple[Parts, str]] = {name: (FileParts(sources[name], training), key)
                                             for name, (_, key) in SOURCES.items()}
    verified = training & pl.col("exec_verified").fill_null(False)
    if pl.scan_parquet(sources["pairs"]).filter(verified).select(pl.len()).collect().item():
        configs["verified"] = (FileParts(sources["pairs"], verified), "sample_id")   # an empty one would not load
    suite = stage.upstream("real_tasks")
    if suite.height:   # the real-program suite's tasks, by reference (files by digest; the card in translation_bench)
        configs[f"benchmark_{REAL_SUITE}"] = (FrameParts(suite), "sample_id")
    for origin in sorted(pl.scan_parquet(sources["pairs"]).select("origin").unique().collect()["origin"]):
        configs[f"pairs_{origin}"] = (FileParts(sources["pairs"], pl.col("origin") == origin), "sample_id")
    with replacing(stage.data_dir) as root:   # a failure leaves the earlier layout whole
        written = write_configs(stage.work, root, configs, shard_bytes)
        shutil.rmtree(root / STAGING, ignore_errors=True)
        (root / "README.md").write_text(card(params, written, stage.upstream_metrics(),
                                             stage.toolchain_record()))
    metrics = {name: {"rows": config.rows, "shards": len(config.paths)} for name, config in written.items()}
    write_metrics(stage.name, metrics)
    print(metrics)

