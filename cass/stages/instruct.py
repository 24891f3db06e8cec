"""Stage ``instruct``: the training-ready configs, as chat messages in the CASS prompt formats.

Two configs, one per task (:mod:`cass.training.prompts`), each holding the file-level and kernel-level
units that fit the token budget (``tokens`` stage): ``data/instruct/source/`` and
``data/instruct/asm/`` (Parquet shards ``train-XXXXX-of-XXXXX.parquet``; column ``messages`` is a
list of ``{role, content}``, the format TRL's SFT trainer and LLaMA-Factory's ``sharegpt``
loader read), plus ``data/instruct/dataset_info.json`` declaring both for LLaMA-Factory.

An example whose answer equals its prompt after whitespace normalisation is not written: HIPIFY
leaves most kernel bodies as they are, and such a pair teaches a model to copy its input. It is
listed in ``data/instruct/dropped.parquet`` (the stages' dropped-rows schema, ``sample_id`` the
example's id) with the reason ``identity_translation`` and counted
in the metrics (``in`` / ``kept`` / ``dropped_by_reason``, examples over both tasks, which the
analysis funnel shows). Units of ``export.holdout_origins`` (the benchmark's tasks, origin ``bench``) are
never training data: they are listed and counted the same way with the reason ``benchmark_holdout``.
Kernel-level source examples therefore remain only where translation changed the kernel; every kernel
keeps its assembly example, whose two sides always differ.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from functools import partial

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import DROPPED_SCHEMA, write_parquet, write_shards
from cass.pipeline.metrics import write_metrics
from cass.training.instruct import HOLDOUT, IDENTITY, SCHEMA, TEXTS, dataset_info, same_text
from cass.training.prompts import TASKS, Task
from cass.training.units import unit_chunks, units
from store import Store


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    fitting = stage.upstream("tokens")["unit_id"]   # a unit's id is its row's sample_id at both levels
    files, kernels = stage.upstream("normalize"), stage.upstream("kernels")
    if stage.data_dir.exists():
        shutil.rmtree(stage.data_dir)
    per_shard = params["export"]["rows_per_shard"]
    holdout = set(params["export"]["holdout_origins"])
    examples: dict[str, list[dict]] = {task.name: [] for task in TASKS}
    dropped = []
    for _, chunk in unit_chunks(store, files, kernels, fitting):   # which examples are written: no texts kept
        for i in chunk:
            for task in TASKS:
                prompt, answer = TEXTS[task.name]
                example_id = f"{i['unit_id']}/{task.name}"
                why = ((HOLDOUT, f"origin {i['origin']} is in export.holdout_origins") if i["origin"] in holdout else
                       (IDENTITY, "the answer is the prompt's text")
                       if same_text(i["texts"][prompt], i["texts"][answer]) else None)
                if why:
                    dropped.append({"sample_id": example_id, "origin": i["origin"], "path": i["path"],
                                    "domain": i["domain"], "stage": stage.name, "reason": why[0],
                                    "detail": f"{task.name} task, {i['level']} level: {why[1]}"})
                else:
                    examples[task.name].append({"id": example_id, "level": i["level"], "sample_id": i["sample_id"],
                                                "kernel": i["kernel"], "origin": i["origin"], "path": i["path"],
                                                "domain": i["domain"], "unit_id": i["unit_id"]})
    metrics: dict = {}
    for task in TASKS:
        table = pl.DataFrame(examples[task.name], schema={**{k: v for k, v in SCHEMA.items() if k != "messages"},
                                                          "unit_id": pl.String}).sort("id")

        shards = write_shards(table.height, partial(example_shard, store, files, kernels, task, table),
                              stage.data_dir / task.name, per_shard)
        reasons = Counter(d["reason"] for d in dropped if d["sample_id"].endswith(f"/{task.name}"))
        metrics[task.name] = {"rows": table.height, "shards": shards,
                              "by_level": dict(sorted(table["level"].value_counts().iter_rows())),
                              "dropped_identity": reasons[IDENTITY], "dropped_holdout": reasons[HOLDOUT]}
    write_parquet(pl.DataFrame(dropped, schema=DROPPED_SCHEMA), stage.data_dir / "dropped.parquet")
    kept = sum(m["rows"] for m in metrics.values())
    metrics.update({"in": kept + len(dropped), "kept": kept, "dropped": len(dropped),
                    "dropped_by_reason": dict(sorted(Counter(d["reason"] for d in dropped).items()))})
    (stage.data_dir / "dataset_info.json").write_text(json.dumps(dataset_info(), indent=2, sort_keys=True) + "\n")
    write_metrics(stage.name, metrics)
    print(metrics)


def example_shard(store: Store, files: pl.DataFrame, kernels: pl.DataFrame, task: Task, examples: pl.DataFrame,
                  offset: int, length: int) -> pl.DataFrame:
    """One shard of a task's examples (rows ``offset`` on of ``examples``, in id order) with their messages, the
    texts read from the store for this shard alone."""
    part = examples.slice(offset, length)
    ids = part["unit_id"].implode()
    texts = {i["unit_id"]: i["texts"] for i in units(store, files.filter(pl.col("sample_id").is_in(ids)),
                                                      kernels.filter(pl.col("sample_id").is_in(ids)))}
    prompt, answer = TEXTS[task.name]
    messages = [task.messages(texts[u][prompt], texts[u][answer]) for u in part["unit_id"]]
    return part.with_columns(pl.Series("messages", messages, dtype=SCHEMA["messages"])).select(list(SCHEMA))
