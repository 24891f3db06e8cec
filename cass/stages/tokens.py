"""Stage ``tokens``: token counts with the target model's tokenizer, and the token-budget filter.

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

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import manifest_path, write_parquet
from cass.pipeline.memo import Memo
from cass.training.prompts import ASM, COUNT_COLUMNS, SOURCE, TASKS
from cass.training.token_counts import sass_reduction
from cass.training.tokenizer import BUILT_HERE, counter, install_tokenizer, tokenizer_digest
from cass.training.units import units


def run(stage: Stage) -> None:
    params = stage.params
    tparams = params["tokens"]
    store = stage.store
    files, kernels = stage.upstream("normalize"), stage.upstream("kernels")
    items = units(store, files, kernels)
    tokenizer_dir = stage.data_dir / "tokenizer"   # what the counts are made with, for training
    used = install_tokenizer(tparams, lambda: (t for i in items if i["level"] == "file" for t in i["texts"]),
                             tokenizer_dir)
    memo = Memo(store, "tokens.count", {"tokenizer": tokenizer_digest(tokenizer_dir)})
    count = counter(tokenizer_dir, tparams["batch_size"], tparams["tokenizer"] in BUILT_HERE)

    def tokens(texts: list[str]) -> list[int]:
        return memo.map(texts, count)

    columns = {
        "source_prompt_tokens": tokens([SOURCE.prompt(i["texts"][0]) for i in items]),
        "source_answer_tokens": tokens([SOURCE.answer(i["texts"][1]) for i in items]),
        "asm_prompt_tokens": tokens([ASM.prompt(i["texts"][2]) for i in items]),
        "asm_answer_tokens": tokens([ASM.answer(i["texts"][3]) for i in items]),
    }
    limit = tparams["max_tokens"]
    counts = pl.DataFrame({
        "unit_id": [i["unit_id"] for i in items], "level": [i["level"] for i in items],
        "sample_id": [i["sample_id"] for i in items], "kernel": [i["kernel"] for i in items],
        **{name: pl.Series(values, dtype=pl.Int64) for name, values in columns.items()},
    }, schema_overrides={"kernel": pl.String}).with_columns(
        *((pl.col(f"{t.name}_prompt_tokens") + pl.col(f"{t.name}_answer_tokens") <= limit).alias(f"fits_{t.name}")
          for t in TASKS))
    write_parquet(counts, manifest_path(stage.name, "counts"), sort_by="unit_id")

    out = stage.output(len(items), action_keys=memo.keys)
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
                             sass_token_reduction=sass_reduction(store, files, items[:files.height], tokens))
    out.run["memo"] = memo.counts()
    schema = {"sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
              "unit_id": pl.String, "level": pl.String, "file_sample_id": pl.String, "kernel": pl.String,
              **dict.fromkeys(COUNT_COLUMNS, pl.Int64)}
    print(out.write(pl.DataFrame(kept, schema=schema)))
