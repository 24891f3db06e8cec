"""Stage ``generate``'s work (and ``cass generate``): the benchmark's tasks translated by a model.

For every task and every kind in ``generate.tasks`` the prompt is the one the instruct export trains on
(:mod:`cass.training.prompts`): the task's CUDA program for ``source``, its SASS for ``nvidia.archs[0]`` for ``asm``
(the pipeline's own cached compile, normalised as the instruct export's SASS is). ``generate.samples`` completions
are drawn per prompt. Each completion is a cached action of the store, keyed by the model's identity
(:mod:`cass.models.backends`), the prompt, the sampling parameters and the sample's number, recorded as soon as it
is made: a killed run resumes where it stopped, and an unchanged run generates nothing. The code is taken from the
answer's fence (the task's answer fence, else the first fence, else the whole text; how, per prediction). A prompt
longer than ``generate.max_prompt_tokens`` (counted where the backend knows the tokenizer) is not sent: its
prediction is empty, counted as ``prompt_too_long``; so is that of a request the server refuses with 400, 413 or 422
(``request_failed``, not recorded, so the stage's next run asks again). Predictions go to
``data/generate/predictions.jsonl`` in the evaluator's format (``sample`` numbers the samples: the evaluator
reports pass@k over them).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from cass.benchmark.baselines import sass
from cass.benchmark.tasks import Task, load_tasks
from cass.models.backends import Backend, BackendUnavailable, Messages, Sampling, load_backend, start_optional_stage
from cass.models.completions import complete_all, extract
from cass.pipeline.context import Stage
from cass.pipeline.manifests import DATA_DIR
from cass.pipeline.metrics import write_metrics, write_run_report
from cass.training.prompts import TASKS
from store import Store

STAGE = "generate"
OUT_DIR = DATA_DIR / STAGE
PREDICTIONS = "predictions.jsonl"


def prompts(store: Store, params: dict, tasks: dict[str, Task], kinds: list[str],
            workers: int | None) -> dict[tuple[str, str], Messages]:
    """The chat prompt of every (task id, kind)."""
    by_name = {t.name: t for t in TASKS}
    unknown = sorted(set(kinds) - set(by_name))
    if unknown:
        raise ValueError(f"generate.tasks names {unknown}: the tasks are {sorted(by_name)}")
    inputs = {"source": {t: task.cuda for t, task in tasks.items()}}
    if "asm" in kinds:
        inputs["asm"] = sass(store, params, tasks, workers)
    return {(t, kind): [{"role": "user", "content": by_name[kind].prompt(inputs[kind][t])}]
            for kind in kinds for t in sorted(tasks) if inputs[kind][t]}


def generate(store: Store, params: dict, tasks: dict[str, Task], backend: Backend) -> tuple[list[dict], dict]:
    """The predictions of ``backend`` for ``tasks`` (evaluator rows plus how each was extracted) and a run report."""
    gp = params["generate"]
    return translate(store, gp, prompts(store, params, tasks, gp["tasks"], params["executor"]["workers"] or None),
                     backend)


def translate(store: Store, gp: dict, asked: dict[tuple[str, str], Messages],
              backend: Backend) -> tuple[list[dict], dict]:
    """:func:`generate` for prompts already made (``gp``: the ``generate`` parameters)."""
    sampling = Sampling(gp["temperature"], gp["top_p"], gp["max_new_tokens"], gp["samples"], gp["seed"])
    lengths = {k: backend.prompt_tokens(m) for k, m in asked.items()}
    too_long = {k for k, n in lengths.items() if n is not None and n > gp["max_prompt_tokens"]}
    started = time.monotonic()
    texts, counts, failed = complete_all(store, backend, {k: m for k, m in asked.items() if k not in too_long},
                                         sampling, STAGE)
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


def run(stage: Stage) -> None:
    params = stage.params
    gp = params["generate"]
    if not start_optional_stage(STAGE, OUT_DIR, gp["enabled"]):
        return
    tasks = load_tasks(Path(params["benchmark"]["tasks"]))
    try:
        rows, facts = generate(stage.store, params, tasks, load_backend(gp, params["tiny_model"]))
    except BackendUnavailable as exc:   # what came back is in the store
        sys.exit(f"generate: {exc}; the completions that came back are kept: run again to resume")
    write_predictions(rows, OUT_DIR / PREDICTIONS)
    write_metrics(STAGE, {"enabled": True, "name": gp["name"], "model": facts["model"], "sampling": facts["sampling"],
                          "predictions": len(rows),
                          "extracted": extraction_counts(rows)})
    write_run_report(STAGE, facts["report"])
    print(f"generate: {len(rows)} predictions ({facts['report']['generated']} generated, "
          f"{facts['report']['hits']} from the store) in {OUT_DIR / PREDICTIONS}")
