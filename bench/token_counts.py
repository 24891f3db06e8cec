"""Benchmark: the `tokens` stage's counting on a cold store, with the tokenizers backend's ``encode_batch`` (ids,
offsets, masks) against its ``encode_batch_fast`` (ids only, which the stage uses), in one run.

The texts are those the stage tokenises when its memo holds none of them: each chunk's calls of
:func:`cass.stages.tokens.count_units` (each task's prompts and answers, the files' raw and normalised SASS), each
call's distinct texts in the stage's batches (``tokens.batch_size``), with the tokenizer the stage installed
(``data/tokens/tokenizer``; one of ``BUILT_HERE``, which the stage counts with the backend). After one untimed round,
the two calls alternate which goes first (ABBA); both must give the same counts. The table gives wall and CPU
seconds per round.

    python bench/token_counts.py PROJECT [--repeats 5]

``PROJECT``: a project built up to `tokens` (the repository itself after `dvc repro`, or a copy of the bundled
build); its store is the one its ``store.dir`` names.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

import polars as pl  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from cass.pipeline.context import load_params  # noqa: E402
from cass.stages.tokens import count_units  # noqa: E402
from cass.training.tokenizer import BUILT_HERE  # noqa: E402
from cass.training.units import unit_parts  # noqa: E402
from store import Store  # noqa: E402

CALLS = ("encode_batch", "encode_batch_fast")


def stage_calls(project: Path, params: dict) -> list[list[str]]:
    """The distinct texts of each call the stage makes to count a cold store's units."""
    files = pl.read_parquet(project / "data" / "normalize" / "manifest.parquet")
    kernels = pl.read_parquet(project / "data" / "kernels" / "manifest.parquet")
    store = Store(project / params["store"]["dir"])
    calls: list[list[str]] = []

    def record(texts: list[str]) -> list[int]:
        calls.append(list(dict.fromkeys(texts)))
        return [0] * len(texts)

    for part in unit_parts(files, kernels):
        count_units(store, part, record)
    return calls


def timed(encode, calls: list[list[str]], batch: int) -> tuple[float, float, list[int]]:
    wall, cpu = time.perf_counter(), time.process_time()
    counts = [len(e.ids) for texts in calls for start in range(0, len(texts), batch)
              for e in encode(texts[start:start + batch], add_special_tokens=False)]
    return time.perf_counter() - wall, time.process_time() - cpu, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("project", type=Path)
    parser.add_argument("--repeats", type=int, default=5, help="timed rounds (at least 1)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    params = load_params(args.project / "params.yaml")
    if params["tokens"]["tokenizer"] not in BUILT_HERE:
        raise SystemExit(f"tokens.tokenizer {params['tokens']['tokenizer']!r} is counted through transformers, not "
                         "the tokenizers backend this benchmark times")
    tokenizer = Tokenizer.from_file(str(args.project / "data" / "tokens" / "tokenizer" / "tokenizer.json"))
    batch = params["tokens"]["batch_size"]
    calls = stage_calls(args.project, params)
    counts = {name: timed(getattr(tokenizer, name), calls, batch)[2] for name in CALLS}   # the untimed round
    if counts["encode_batch"] != counts["encode_batch_fast"]:
        raise SystemExit("the two calls gave different counts")
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in CALLS}
    for round_ in range(args.repeats):
        for name in CALLS if round_ % 2 == 0 else reversed(CALLS):
            wall, cpu, _ = timed(getattr(tokenizer, name), calls, batch)
            runs[name].append((wall, cpu))
    texts = [t for c in calls for t in c]
    print(f"{len(calls)} calls, {len(texts):,} texts, {sum(map(len, texts)):,} characters, "
          f"{sum(counts['encode_batch']):,} tokens (the same both ways), batches of {batch}, {args.repeats} timed "
          "rounds after one untimed\n")
    print("| call | wall s, min / median / max | CPU s, median | ratio of median wall |\n|---|---|---:|---:|")
    base = statistics.median(w for w, _ in runs["encode_batch"])
    for name, measured in runs.items():
        walls = [w for w, _ in measured]
        print(f"| `{name}` | {min(walls):.2f} / {statistics.median(walls):.2f} / {max(walls):.2f} | "
              f"{statistics.median(c for _, c in measured):.2f} | {statistics.median(walls) / base:.2f} |")


if __name__ == "__main__":
    main()
