"""What normalisation saves in the target model's tokens (stage ``tokens``: :mod:`cass.stages.tokens`)."""

from __future__ import annotations

import polars as pl

from cass.pipeline.metrics import mean_reduction


def sass_reduction(store, files: pl.DataFrame, file_units: list[dict], tokens) -> float:
    """Mean fraction of tokenizer tokens removed from SASS by the normalisation (first arch);
    ``file_units`` are the file-level units of ``files``, in order, holding the normalised text."""
    raw = tokens([store.get_text(r[0]["digest"]) for r in files["nvidia_device_asm"]])
    norm = tokens([unit["texts"][2] for unit in file_units])
    return mean_reduction(list(zip(raw, norm, strict=True)))
