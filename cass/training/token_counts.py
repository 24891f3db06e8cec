"""What normalisation saves in the target model's tokens (stage ``tokens``: :mod:`cass.stages.tokens`)."""

from __future__ import annotations

import polars as pl


def sass_token_counts(store, files: pl.DataFrame, file_units: list[dict], tokens) -> list[tuple[int, int]]:
    """(raw, normalised) tokenizer tokens of each file's SASS (first arch); ``file_units`` are the file-level units
    of ``files``, in order, holding the normalised text. :func:`cass.pipeline.metrics.mean_reduction` of them is
    what the normalisation saves."""
    raw = tokens([store.get_text(r[0]["digest"]) for r in files["nvidia_device_asm"]])
    norm = tokens([unit["texts"][2] for unit in file_units])
    return list(zip(raw, norm, strict=True))
