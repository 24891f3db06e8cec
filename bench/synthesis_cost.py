"""What synthesizing 1,000 programs costs on a GPU server: the two measured factors (RESULTS.md, "Synthesis cost").

``tokens`` (any machine): Qwen2.5 tokens of the synthesize stage's prompts (``synthesize.programs`` draws with the
default mix) and of complete CUDA programs of the kind it keeps (kernel and ``main``: the bundled corpus's files, a
stand-in for a model's answers, which cannot be had here).

``throughput`` (a machine with an NVIDIA GPU): generated tokens per second of a Qwen2.5-Coder-shaped model (random
bf16 weights: speed depends on the shape, not the values) under transformers' batched ``generate``, every sequence
forced to ``--new-tokens``; taken as a lower bound for vLLM or SGLang, which batch continuously.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SHAPES = {   # the published configs of Qwen2.5-Coder-7B/32B-Instruct
    "qwen2.5-coder-7b": {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                         "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064},
    "qwen2.5-coder-32b": {"hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
                          "num_attention_heads": 40, "num_key_value_heads": 8, "vocab_size": 152064},
}


def tokens(draws: int) -> dict:
    from cass.pipeline.context import load_params
    from cass.sources.synthetic import TEMPLATES_FILE, Templates, draw_prompts
    from cass.text.cuda import main_signature
    from cass.text.filters import defines_kernel
    from cass.training.qwen import wheel_encoder

    sp = load_params(REPO / "params.yaml")["synthesize"]
    encoder = wheel_encoder()
    prompts = [sum(len(encoder.encode(m["content"])) for m in d.messages)
               for d in draw_prompts(Templates.load(TEMPLATES_FILE), draws, sp["seed"], sp["categories"],
                                     sp["personas"])]
    texts = [p.read_text() for p in sorted((REPO / "corpus").rglob("*.cu"))]
    programs = [len(encoder.encode(t)) for t in texts if defines_kernel(t) and main_signature(t) is not None]
    return {"prompts": len(prompts), "prompt_tokens_mean": round(statistics.mean(prompts), 1),
            "programs": len(programs), "program_tokens_mean": round(statistics.mean(programs), 1),
            "program_tokens_median": statistics.median(programs)}


def throughput(shape: str, batches: list[int], prompt_tokens: int, new_tokens: int) -> list[dict]:
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    config = Qwen2Config(**SHAPES[shape], max_position_embeddings=32768, rope_theta=1e6, tie_word_embeddings=False)
    started = time.monotonic()
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).eval()
    print(f"{shape}: {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B parameters made in "
          f"{time.monotonic() - started:.0f} s", flush=True)
    rows = []
    for batch in batches:
        ids = torch.randint(1000, 100000, (batch, prompt_tokens), device="cuda")
        options = {"max_new_tokens": new_tokens, "min_new_tokens": new_tokens, "do_sample": False,
                   "pad_token_id": 0, "attention_mask": torch.ones_like(ids)}
        try:
            with torch.no_grad():
                model.generate(ids, **{**options, "max_new_tokens": 8, "min_new_tokens": 8})   # warm-up
                torch.cuda.synchronize()
                start = time.monotonic()
                out = model.generate(ids, **options)
                torch.cuda.synchronize()
        except torch.OutOfMemoryError:
            rows.append({"shape": shape, "batch": batch, "out_of_memory": True})
            print(json.dumps(rows[-1]), flush=True)
            torch.cuda.empty_cache()
            continue
        seconds = time.monotonic() - start
        made = batch * (out.shape[1] - prompt_tokens)
        rows.append({"shape": shape, "batch": batch, "prompt_tokens": prompt_tokens, "new_tokens": new_tokens,
                     "seconds": round(seconds, 2), "generated_tokens_per_s": round(made / seconds, 1),
                     "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1),
                     "gpu": torch.cuda.get_device_name()})
        print(json.dumps(rows[-1]), flush=True)
    del model
    torch.cuda.empty_cache()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("tokens").add_argument("--draws", type=int, default=1000)
    gpu = sub.add_parser("throughput")
    gpu.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    gpu.add_argument("--batches", type=int, nargs="+", default=[16, 64])
    gpu.add_argument("--prompt-tokens", type=int, default=160)
    gpu.add_argument("--new-tokens", type=int, default=512)
    gpu.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.command == "tokens":
        print(json.dumps(tokens(args.draws), indent=2))
        return
    rows = [r for shape in args.shapes
            for r in throughput(shape, args.batches, args.prompt_tokens, args.new_tokens)]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
