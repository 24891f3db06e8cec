"""Stage ``tokens``: token counts with the target model's tokenizer, and the token-budget filter, a chunk of
files (and their kernels) at a time, on the stage's workers.

Units are the file-level pairs (``normalize``) and the kernel-level pairs (``kernels``). For each
unit and task (:mod:`cass.training.prompts`: CUDA source -> HIP source; SASS -> AMD device assembly,
both normalised, first arch of each vendor), the prompt (instruction + fenced input) and the
answer (fenced output) are tokenised in batches; counts are memoised per text in the store
(:class:`cass.pipeline.memo.Memo`, keyed by the tokenizer files' digest), so a rerun tokenises only new
texts and loads the tokenizer only if there are any. A unit is kept when prompt plus answer fit
``tokens.max_tokens`` for every task; otherwise it is dropped as ``over_budget`` with its counts.
``data/tokens/counts.parquet`` holds the counts of every unit, kept or not. The metrics record
the tokenizer used and the token reduction of normalised SASS against raw SASS.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from cass.engine.stage_work import CHUNK_ROWS
from cass.pipeline.context import Stage
from cass.pipeline.manifests import manifest_path, write_parquet
from cass.pipeline.memo import Memo
from cass.pipeline.metrics import mean_reduction
from cass.training.prompts import ASM, COUNT_COLUMNS, SOURCE, TASKS
from cass.training.token_counts import sass_token_counts
from cass.training.tokenizer import BUILT_HERE, counter, install_tokenizer, tokenizer_digest
from cass.training.units import unit_chunks, unit_parts, units
from store import Store


def run(stage: Stage) -> None:
    params = stage.params
    tparams = params["tokens"]
    store = stage.store
    files, kernels = stage.upstream("normalize"), stage.upstream("kernels")

    tokenizer_dir = stage.data_dir / "tokenizer"   # what the counts are made with, for training
    used = install_tokenizer(tparams, lambda: (t for _, chunk in unit_chunks(store, files, kernels) for i in chunk
                                               if i["level"] == "file" for t in i["texts"]), tokenizer_dir)
    digest = tokenizer_digest(tokenizer_dir)
    limit = tparams["max_tokens"]
    tables, items, sass_counts, memo_counts = [], [], [], Counter()
    for chunk in stage.work.map(count_chunk, unit_parts(files, kernels), str(store.root), str(tokenizer_dir), digest,
                                tparams["batch_size"], tparams["tokenizer"] in BUILT_HERE,
                                count=-(-files.height // CHUNK_ROWS)):
        tables.append(chunk.table)
        items += chunk.items
        sass_counts += chunk.sass_counts
        memo_counts.update(chunk.memo_counts)
    if len(items) != files.height + kernels.height:
        raise RuntimeError(f"tokens: {files.height} files and {kernels.height} kernels in, but {len(items)} "
                             "units made: a kernel's file is not among the files")
    empty = pl.DataFrame(schema={"unit_id": pl.String, "level": pl.String, "sample_id": pl.String,
                                 "kernel": pl.String, **dict.fromkeys(COUNT_COLUMNS, pl.Int64)})
    counts = pl.concat(tables or [empty]).with_columns(
        *((pl.col(f"{t.name}_prompt_tokens") + pl.col(f"{t.name}_answer_tokens") <= limit).alias(f"fits_{t.name}")
          for t in TASKS))
    write_parquet(counts, manifest_path(stage.name, "counts"), sort_by="unit_id")

    out = stage.output(len(items))
    kept = []
    for item, row in zip(items, counts.iter_rows(named=True), strict=True):
        identity = {"sample_id": item["unit_id"], "origin": item["origin"], "path": item["path"],
                    "domain": item["domain"]}
        over = [f"{t.name}: {row[f'{t.name}_prompt_tokens']} + {row[f'{t.name}_answer_tokens']} tokens > {limit}"
                for t in TASKS if not row[f"fits_{t.name}"]]
        if over:
            out.drop(identity, "over_budget", f"{item['level']}: " + "; ".join(over))
        else:
            kept.append({**identity, "unit_id": item["unit_id"], "level": item["level"],
                         "file_sample_id": item["sample_id"], "kernel": item["kernel"],
                         **{c: row[c] for c in COUNT_COLUMNS}})
    out.extra_metrics.update(tokenizer=used, max_tokens=limit,
                             kept_by_level=dict(sorted(Counter(k["level"] for k in kept).items())),
                             sass_token_reduction=mean_reduction(sass_counts))
    out.run["memo"] = {"hits": memo_counts["hits"], "misses": memo_counts["misses"]}
    schema = {"sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
              "unit_id": pl.String, "level": pl.String, "file_sample_id": pl.String, "kernel": pl.String,
              **dict.fromkeys(COUNT_COLUMNS, pl.Int64)}
    print(out.write(pl.DataFrame(kept, schema=schema)))


@dataclass
class Counted:
    """A chunk's units counted: their counts table, identities, (raw, normalised) SASS tokens, memo hits and
    misses."""

    table: pl.DataFrame
    items: list[dict]
    sass_counts: list[tuple[int, int]]
    memo_counts: dict[str, int]


def count_chunk(part: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame], store_root: str, tokenizer_dir: str,
                digest: str, batch_size: int, backend_only: bool) -> Counted:
    """One chunk of files and their kernels counted (on a worker; the tokenizer is loaded only for texts not
    counted before)."""
    store = Store(store_root)
    memo = Memo(store, "tokens.count", {"tokenizer": digest})
    count = counter(Path(tokenizer_dir), batch_size, backend_only)
    counted = count_units(store, part, lambda texts: memo.map(texts, count))
    counted.memo_counts = memo.counts()
    return counted


def count_units(store: Store, part: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame],
                tokens: Callable[[list[str]], list[int]]) -> Counted:
    """A chunk's units counted by ``tokens`` (one call per column of texts: each task's prompts and answers, then
    the files' raw and normalised SASS); no memo counts."""
    files, unit_files, unit_kernels = part
    chunk = units(store, unit_files, unit_kernels)
    table = pl.DataFrame({
        "unit_id": [i["unit_id"] for i in chunk], "level": [i["level"] for i in chunk],
        "sample_id": [i["sample_id"] for i in chunk], "kernel": [i["kernel"] for i in chunk],
        "source_prompt_tokens": tokens([SOURCE.prompt(i["texts"][0]) for i in chunk]),
        "source_answer_tokens": tokens([SOURCE.answer(i["texts"][1]) for i in chunk]),
        "asm_prompt_tokens": tokens([ASM.prompt(i["texts"][2]) for i in chunk]),
        "asm_answer_tokens": tokens([ASM.answer(i["texts"][3]) for i in chunk]),
    }, schema_overrides={"kernel": pl.String, **dict.fromkeys(COUNT_COLUMNS, pl.Int64)})
    items = [{k: i[k] for k in ("unit_id", "level", "sample_id", "origin", "path", "domain", "kernel")} for i in chunk]
    sass = sass_token_counts(store, files, chunk[:files.height], tokens)
    return Counted(table, items, sass, {})
