"""Benchmark: the `tokens` stage's counting on a built project's texts, with the tokenizers backend's
``encode_batch`` (ids, offsets, masks) against its ``encode_batch_fast`` (ids only), in one run, alternating.

The texts are those the stage counts (:func:`cass.training.units.unit_chunks`: each file-level and kernel-level
unit's source and assembly texts), the tokenizer the one the stage installed (``data/tokens/tokenizer``), in the
stage's batches (``tokens.batch_size``). Both must give the same counts; the table gives wall and CPU seconds.

    python bench/token_counts.py PROJECT [--repeats 3]

``PROJECT``: a project built up to `tokens` (the repository itself after `dvc repro`, or a copy of the bundled
build).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

import polars as pl  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from cass.pipeline.context import load_params  # noqa: E402
from cass.training.units import unit_chunks  # noqa: E402
from store import Store  # noqa: E402


def texts_of(project: Path) -> list[str]:
    files = pl.read_parquet(project / "data" / "normalize" / "manifest.parquet")
    kernels = pl.read_parquet(project / "data" / "kernels" / "manifest.parquet")
    store = Store(project / ".cass" / "store")
    return [text for _, chunk in unit_chunks(store, files, kernels) for unit in chunk for text in unit["texts"]]


def timed(encode, texts: list[str], batch: int) -> tuple[float, float, list[int]]:
    wall, cpu = time.perf_counter(), time.process_time()
    counts = [len(e.ids) for start in range(0, len(texts), batch)
              for e in encode(texts[start:start + batch], add_special_tokens=False)]
    return time.perf_counter() - wall, time.process_time() - cpu, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(args.project / "data" / "tokens" / "tokenizer" / "tokenizer.json"))
    batch = load_params(args.project / "params.yaml")["tokens"]["batch_size"]
    texts = texts_of(args.project)
    runs: dict[str, list[tuple[float, float]]] = {"encode_batch": [], "encode_batch_fast": []}
    counts = {}
    for _ in range(args.repeats):
        for name in runs:
            wall, cpu, counts[name] = timed(getattr(tokenizer, name), texts, batch)
            runs[name].append((wall, cpu))
    if counts["encode_batch"] != counts["encode_batch_fast"]:
        raise SystemExit("the two calls gave different counts")
    print(f"{len(texts):,} texts, {sum(map(len, texts)):,} characters, {sum(counts['encode_batch']):,} tokens, "
          f"batches of {batch}, {args.repeats} runs each (alternating)\n")
    print("| call | wall s, min / median / max | CPU s, median | ratio of median wall |\n|---|---|---:|---:|")
    base = sorted(w for w, _ in runs["encode_batch"])[args.repeats // 2]
    for name, measured in runs.items():
        walls, cpus = sorted(w for w, _ in measured), sorted(c for _, c in measured)
        median = walls[args.repeats // 2]
        print(f"| `{name}` | {walls[0]:.2f} / {median:.2f} / {walls[-1]:.2f} | {cpus[args.repeats // 2]:.2f} | "
              f"{median / base:.2f} |")


if __name__ == "__main__":
    main()
