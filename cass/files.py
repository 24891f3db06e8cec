"""Files written with stable bytes (sorted rows, no timestamps), so DVC sees a rerun with the same results as
unchanged: Parquet tables and metrics-style JSON."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl


def write_json(path: Path, value: dict) -> None:
    """A metrics-style JSON file: sorted keys, indented, stable bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n")


def write_parquet(df: pl.DataFrame, path: Path, sort_by: str | None = "sample_id") -> None:
    """Write a table deterministically (stable row order, zstd, no timestamps)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if sort_by and sort_by in df.columns and df.height:
        df = df.sort(sort_by, maintain_order=True)
    tmp = path.with_suffix(".tmp")
    df.write_parquet(tmp, compression="zstd", compression_level=9, statistics=True)
    tmp.replace(path)
