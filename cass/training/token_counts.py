"""What normalisation saves in the target model's tokens (stage ``tokens``: :mod:`cass.stages.tokens`)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from store import Store


def sass_token_counts(store: Store, files: pl.DataFrame, file_units: list[dict],
                      tokens: Callable[[list[str]], list[int]]) -> list[tuple[int, int]]:
    """(raw, normalised) tokenizer tokens of each file's SASS (first arch); ``file_units`` are the file-level units
    of ``files``, in order, holding the normalised text. :func:`cass.pipeline.metrics.mean_reduction` of them is
    what the normalisation saves."""
    raw = tokens([store.get_text(r[0]["digest"]) for r in files["nvidia_device_asm"]])
    norm = tokens([unit["texts"][2] for unit in file_units])
    return list(zip(raw, norm, strict=True))
