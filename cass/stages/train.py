"""Stage ``train``: supervised fine-tuning on the instruct export with TRL's ``SFTTrainer`` (off by default).

The base model is ``train.base_model``: a model directory, or ``tiny-qwen2`` (built offline from ``tiny_model``).
The examples are the chat messages of the instruct configs named in ``train.tasks`` (``data/instruct/<task>/``), so
training and inference share one prompt module (:mod:`cass.training.prompts`). The loss is on the answer only (TRL's
prompt-completion form); an example longer than ``train.max_length`` is left out (truncation would cut its answer)
and counted. ``train.method`` is ``full`` or
``lora`` (``peft``; the adapter is merged into the saved model). Checkpoints go to
``train.checkpoint_dir/<run digest>/`` every ``train.save_steps`` steps; the digest covers the base model's files,
the examples and every training parameter, so a run that was killed resumes from its last checkpoint and a changed
run starts afresh. The trained model (weights and tokenizer) goes to ``data/train/model``, the trainer's log to
``data/train/log.csv`` (step, loss, learning rate: the loss curve ``dvc plots show`` draws) and the figures of the
run to ``metrics/train.json``.
"""

from __future__ import annotations

from cass.models.backends import TRAINED_MODEL, start_optional_stage
from cass.models.train import train, write_log
from cass.pipeline.context import Stage
from cass.pipeline.metrics import write_metrics, write_run_report


def run(stage: Stage) -> None:
    params = stage.params
    tp = params["train"]
    if not start_optional_stage(stage.name, stage.data_dir, tp["enabled"]):
        return
    facts = train(tp, params["tiny_model"], stage.upstream_dir("instruct"), TRAINED_MODEL)
    log = facts.pop("log")
    write_log(log, stage.data_dir / "log.csv")
    losses = [loss for _, loss, _ in log]
    timing = {k: facts.pop(k) for k in ("runtime_s", "samples_per_s", "tokens_per_s", "resumed")}   # how it went
    write_metrics(stage.name, {"enabled": True, **facts, "first_loss": losses[0] if losses else None,
                          "final_loss": losses[-1] if losses else None})
    write_run_report(stage.name, timing)
    print(f"train: {facts['steps']} steps on {facts['examples']} examples in {timing['runtime_s']} s "
          f"({timing['samples_per_s']} examples/s, {timing['tokens_per_s']} tokens/s"
          f"{', resumed' if timing['resumed'] else ''}); model in {TRAINED_MODEL}")
