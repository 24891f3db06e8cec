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
from collections import Counter

import polars as pl

from cass.engine.stage_work import CHUNK_ROWS, shard_parts
from cass.pipeline.context import Stage
from cass.pipeline.manifests import DROPPED_SCHEMA, replacing, write_parquet
from cass.pipeline.metrics import write_metrics
from cass.training.instruct import HOLDOUT, IDENTITY, SCHEMA, TEXTS, dataset_info, same_text
from cass.training.prompts import TASKS
from cass.training.units import unit_parts, units
from store import Store


def run(stage: Stage) -> None:
    params = stage.params
    root = str(stage.store.root)
    fitting = stage.upstream("tokens")["unit_id"]   # a unit's id is its row's sample_id at both levels
    files, kernels = stage.upstream("normalize"), stage.upstream("kernels")
    per_shard = params["export"]["rows_per_shard"]
    holdout = sorted(params["export"]["holdout_origins"])
    chosen = list(stage.work.map(   # which examples are written: no texts kept
        chosen_examples, unit_parts(files, kernels, fitting), root, holdout, stage.name,
        count=-(-files.height // CHUNK_ROWS)))
    dropped = pl.concat([pl.DataFrame(schema=DROPPED_SCHEMA), *(d for _, d in chosen)])
    metrics: dict = {}
    with replacing(stage.data_dir) as folder:
        for task in TASKS:
            table = pl.concat([pl.DataFrame(schema=EXAMPLE_IDS), *(e[task.name] for e, _ in chosen)]).sort("id")
            (folder / task.name).mkdir()
            slices, count = shard_parts(table, per_shard)
            shard_of = table.select(pl.col("unit_id").alias("sample_id"),
                                    (pl.int_range(pl.len()) // per_shard).alias("shard"))
            parts = zip(slices, *(by_shard(rows, shard_of, count) for rows in (files, kernels)), strict=True)
            shards = stage.work.write_shards(example_shard, parts, count, folder / task.name, root, task.name)
            reasons = Counter(dropped.filter(pl.col("sample_id").str.ends_with(f"/{task.name}"))["reason"])
            metrics[task.name] = {"rows": table.height, "shards": shards,
                                  "by_level": dict(sorted(table["level"].value_counts().iter_rows())),
                                  "dropped_identity": reasons[IDENTITY], "dropped_holdout": reasons[HOLDOUT]}
        write_parquet(dropped, folder / "dropped.parquet")
        (folder / "dataset_info.json").write_text(json.dumps(dataset_info(), indent=2, sort_keys=True) + "\n")
    kept = sum(m["rows"] for m in metrics.values())
    metrics.update({"in": kept + dropped.height, "kept": kept, "dropped": dropped.height,
                    "dropped_by_reason": dict(sorted(Counter(dropped["reason"]).items()))})
    write_metrics(stage.name, metrics)
    print(metrics)


EXAMPLE_IDS = {**{k: v for k, v in SCHEMA.items() if k != "messages"}, "unit_id": pl.String}
"""An example chosen, before its messages are made: its identity and its unit's id."""


def by_shard(rows: pl.DataFrame, shard_of: pl.DataFrame, count: int) -> list[pl.DataFrame]:
    """The rows of the units of each of ``count`` shards (``shard_of``: a unit's ``sample_id`` -> its ``shard``), in
    one pass over ``rows``."""
    tagged = rows.join(shard_of, on="sample_id", how="inner").partition_by("shard", as_dict=True)
    return [tagged.get((n,), rows.clear()).drop("shard", strict=False) for n in range(count)]


def chosen_examples(part: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame], store_root: str, holdout: list[str],
                    stage: str) -> tuple[dict[str, pl.DataFrame], pl.DataFrame]:
    """A chunk's units as examples per task (identities, no texts), and the examples not written, with why."""
    _, unit_files, unit_kernels = part
    examples: dict[str, list[dict]] = {task.name: [] for task in TASKS}
    dropped = []
    for i in units(Store(store_root), unit_files, unit_kernels):
        for task in TASKS:
            prompt, answer = TEXTS[task.name]
            example_id = f"{i['unit_id']}/{task.name}"
            why = ((HOLDOUT, f"origin {i['origin']} is in export.holdout_origins") if i["origin"] in holdout else
                   (IDENTITY, "the answer is the prompt's text")
                   if same_text(i["texts"][prompt], i["texts"][answer]) else None)
            if why:
                dropped.append({"sample_id": example_id, "origin": i["origin"], "path": i["path"],
                                "domain": i["domain"], "stage": stage, "reason": why[0],
                                "detail": f"{task.name} task, {i['level']} level: {why[1]}"})
            else:
                examples[task.name].append({"id": example_id, "level": i["level"], "sample_id": i["sample_id"],
                                            "kernel": i["kernel"], "origin": i["origin"], "path": i["path"],
                                            "domain": i["domain"], "unit_id": i["unit_id"]})
    return ({name: pl.DataFrame(rows, schema=EXAMPLE_IDS) for name, rows in examples.items()},
            pl.DataFrame(dropped, schema=DROPPED_SCHEMA))


def example_shard(part: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame], store_root: str, task_name: str
                  ) -> pl.DataFrame:
    """One shard of a task's examples (in id order) with their messages, from the rows of their units' files and
    kernels, the texts read from the store for this shard alone."""
    examples, files, kernels = part
    task = next(t for t in TASKS if t.name == task_name)
    texts = {i["unit_id"]: i["texts"] for i in units(Store(store_root), files, kernels)}
    prompt, answer = TEXTS[task.name]
    messages = [task.messages(texts[u][prompt], texts[u][answer]) for u in examples["unit_id"]]
    return examples.with_columns(pl.Series("messages", messages, dtype=SCHEMA["messages"])).select(list(SCHEMA))
