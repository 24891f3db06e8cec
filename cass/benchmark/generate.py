"""The benchmark's tasks translated by a model: prompts, generation, the code taken from each answer (stage
``generate``: :mod:`cass.stages.generate`, and ``cass generate``)."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from cass.benchmark.assembly import sass
from cass.benchmark.tasks import Task
from cass.models.backends import Backend, Messages, Sampling
from cass.models.completions import complete_all, extract
from cass.training.prompts import TASKS
from store import Store

PREDICTIONS = "predictions.jsonl"


def prompts(store: Store, params: dict, tasks: dict[str, Task], kinds: list[str]) -> dict[tuple[str, str], Messages]:
    """The chat prompt of every (task id, kind)."""
    by_name = {t.name: t for t in TASKS}
    unknown = sorted(set(kinds) - set(by_name))
    if unknown:
        raise ValueError(f"generate.tasks names {unknown}: the tasks are {sorted(by_name)}")
    inputs = {"source": {t: task.cuda for t, task in tasks.items()}}
    if "asm" in kinds:
        inputs["asm"] = sass(store, params, tasks)
    return {(t, kind): [{"role": "user", "content": by_name[kind].prompt(inputs[kind][t])}]
            for kind in kinds for t in sorted(tasks) if inputs[kind][t]}


def generate(store: Store, params: dict, tasks: dict[str, Task], backend: Backend) -> tuple[list[dict], dict]:
    """The predictions of ``backend`` for ``tasks`` (evaluator rows plus how each was extracted) and a run report."""
    gp = params["generate"]
    return translate(store, gp, prompts(store, params, tasks, gp["tasks"]), backend)


def translate(store: Store, gp: dict, asked: dict[tuple[str, str], Messages],
              backend: Backend) -> tuple[list[dict], dict]:
    """:func:`generate` for prompts already made (``gp``: the ``generate`` parameters)."""
    sampling = Sampling(gp["temperature"], gp["top_p"], gp["max_new_tokens"], gp["samples"], gp["seed"])
    lengths = {k: backend.prompt_tokens(m) for k, m in asked.items()}
    too_long = {k for k, n in lengths.items() if n is not None and n > gp["max_prompt_tokens"]}
    started = time.monotonic()
    texts, counts, failed = complete_all(store, backend, {k: m for k, m in asked.items() if k not in too_long},
                                         sampling, "translations")
    fences = {t.name: t.answer_fence for t in TASKS}
    rows = [{"task_id": task_id, "task": kind, "sample": sample, "prediction": "", "extracted": "prompt_too_long"}
            for task_id, kind in too_long for sample in range(sampling.samples)]   # never sent: an empty prediction
    rows += [{"task_id": task_id, "task": kind, "sample": sample, "prediction": "", "extracted": "request_failed"}
             for task_id, kind, sample in failed]
    for (task_id, kind, sample), text in texts.items():
        code, how = extract(text, fences[kind])
        rows.append({"task_id": task_id, "task": kind, "sample": sample, "prediction": code, "extracted": how})
    rows.sort(key=lambda r: (r["task_id"], r["task"], r["sample"]))
    report = {**counts, "wall_s": round(time.monotonic() - started, 3), "prompts": len(asked),
              "prompts_too_long": len(too_long),
              "requests_failed": {"/".join(map(str, k)): e for k, e in failed.items()}}
    return rows, {"model": backend.identity, "sampling": sampling.describe(), "report": report}


def extraction_counts(rows: list[dict]) -> dict[str, int]:
    """How the predictions' code was taken, counted per ``<task>:<how>``."""
    counts = Counter((r["task"], r["extracted"]) for r in rows)
    return {f"{kind}:{how}": n for (kind, how), n in sorted(counts.items())}


def write_predictions(rows: list[dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))
