"""Supervised fine-tuning on the instruct export with TRL's ``SFTTrainer`` (stage ``train``:
:mod:`cass.stages.train`)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import blake3

from cass.models.backends import directory_digest, local_model


def shards(tasks: list[str], instruct: Path) -> list[Path]:
    """The Parquet shards of the instruct configs ``tasks``."""
    files = sorted(p for task in tasks for p in (instruct / task).glob("*.parquet"))
    if not files:
        raise FileNotFoundError(f"no instruct shards for {tasks} under {instruct}: run the instruct stage first")
    return files


def run_digest(base: Path, files: list[Path], params: dict) -> str:
    """What a run's checkpoints belong to: the base model's files, the examples and the training parameters."""
    h = blake3.blake3(directory_digest(base).encode())
    for f in files:
        h.update(f.read_bytes())
    h.update(json.dumps({k: v for k, v in params.items() if k != "enabled"}, sort_keys=True).encode())
    return h.hexdigest()[:16]


def train(params: dict, tiny: dict, instruct: Path, out: Path, callbacks: list | None = None) -> dict:
    """Fine-tune ``params['base_model']`` on the instruct examples; the trained model in ``out``; the run's figures."""
    import datasets
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    base = local_model(params["base_model"], tiny)
    files = shards(params["tasks"], instruct)
    data = datasets.load_dataset("parquet", data_files=[str(f) for f in files], split="train").select_columns(
        ["messages"])
    checkpoints = Path(params["checkpoint_dir"]) / run_digest(base, files, params)
    resume = any(checkpoints.glob("checkpoint-*"))
    tokenizer = AutoTokenizer.from_pretrained(str(base))
    # the loss on the answer only (prompt-completion form); an example longer than max_length would lose its
    # answer to truncation, so it is left out and counted
    lengths = [len(tokenizer.apply_chat_template(m, return_dict=True)["input_ids"]) for m in data["messages"]]
    fitting = [i for i, n in enumerate(lengths) if n <= params["max_length"]]
    if not fitting:
        raise ValueError(f"none of the {len(lengths)} examples fits train.max_length ({params['max_length']} tokens; "
                         f"the shortest has {min(lengths)})")
    data = data.select(fitting).map(lambda row: {"prompt": row["messages"][:1], "completion": row["messages"][1:]},
                                    remove_columns=["messages"])
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype="auto")
    peft_config = None
    if params["method"] == "lora":
        from peft import LoraConfig

        lora = params["lora"]
        peft_config = LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=lora["dropout"],
                                 target_modules=lora["target_modules"], task_type="CAUSAL_LM")
    elif params["method"] != "full":
        raise ValueError(f"train.method is {params['method']!r}: choose full or lora")
    config = SFTConfig(output_dir=str(checkpoints), num_train_epochs=params["epochs"], max_steps=params["max_steps"],
                       learning_rate=params["learning_rate"], per_device_train_batch_size=params["batch_size"],
                       gradient_accumulation_steps=params["gradient_accumulation"], seed=params["seed"],
                       max_length=params["max_length"], save_steps=params["save_steps"], save_total_limit=2,
                       logging_steps=1, report_to=[], use_cpu=not torch.cuda.is_available(), disable_tqdm=False)
    trainer = SFTTrainer(model=model, args=config, train_dataset=data, processing_class=tokenizer,
                         peft_config=peft_config, callbacks=callbacks)
    result = trainer.train(resume_from_checkpoint=resume or None)
    trained = trainer.model.merge_and_unload() if peft_config else trainer.model
    if out.exists():
        shutil.rmtree(out)
    trained.save_pretrained(out)
    tokenizer.save_pretrained(out)
    losses = [(e["step"], e["loss"], e.get("learning_rate")) for e in trainer.state.log_history if "loss" in e]
    # TRL counts the tokens it trained on (padding excluded) as it logs; in this run, after a resume
    tokens = max((e["num_tokens"] for e in trainer.state.log_history if "num_tokens" in e), default=0)
    return {"base_model": params["base_model"], "base_digest": directory_digest(base), "method": params["method"],
            "examples": data.num_rows, "examples_over_max_length": len(lengths) - len(fitting),
            "steps": result.global_step, "resumed": resume, "log": losses,
            "runtime_s": round(result.metrics["train_runtime"], 2),
            "samples_per_s": round(result.metrics["train_samples_per_second"], 3),
            "tokens_per_s": round(tokens / result.metrics["train_runtime"], 1)}


def write_log(losses: list[tuple], path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["step", "loss", "learning_rate"])
        writer.writerows(losses)
