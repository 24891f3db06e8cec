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

import sys
from pathlib import Path

from cass.benchmark.generate import PREDICTIONS, extraction_counts, generate, write_predictions
from cass.benchmark.tasks import load_tasks
from cass.models.backends import BackendUnavailable, load_backend, start_optional_stage
from cass.pipeline.context import Stage
from cass.pipeline.metrics import write_metrics, write_run_report


def run(stage: Stage) -> None:
    params = stage.params
    gp = params["generate"]
    if not start_optional_stage(stage.name, stage.data_dir, gp["enabled"]):
        return
    tasks = load_tasks(Path(params["benchmark"]["tasks"]))
    try:
        rows, facts = generate(stage.store, params, tasks, load_backend(gp, params["tiny_model"]))
    except BackendUnavailable as exc:   # what came back is in the store
        sys.exit(f"generate: {exc}; the completions that came back are kept: run again to resume")
    write_predictions(rows, stage.data_dir / PREDICTIONS)
    write_metrics(stage.name, {"enabled": True, "name": gp["name"], "model": facts["model"],
                               "sampling": facts["sampling"], "predictions": len(rows),
                               "extracted": extraction_counts(rows)})
    write_run_report(stage.name, facts["report"])
    print(f"generate: {len(rows)} predictions ({facts['report']['generated']} generated, "
          f"{facts['report']['hits']} from the store) in {stage.data_dir / PREDICTIONS}")
