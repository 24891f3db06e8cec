"""Deduplicating a corpus: MinHash signatures kept as cached actions, the order that picks each group's representative,
the reference texts of decontamination (stage ``dedup``: :mod:`cass.stages.dedup`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import polars as pl

from cass.dedup.minhash import MinHashParams, signatures_parallel
from cass.engine.cached import CachedMap
from store import ActionSpec, Store

REMOVED_SCHEMA = {"sample_id": pl.String, "origin": pl.String, "path": pl.String, "reason": pl.String,
                  "cluster": pl.Int64, "kept_sample_id": pl.String, "kept": pl.String, "similarity": pl.Float64}


def cached_signatures(store: Store, texts: dict[str, str], params: MinHashParams,
                      workers: int = 1) -> tuple[dict[str, np.ndarray], int]:
    """Signature per content digest, from the store where present; returns (signatures, how
    many were computed)."""
    spec = {k: v for k, v in params.describe().items() if k not in ("threshold", "bands", "rows")}
    cache = CachedMap(store)

    def compute(missing: list[str]) -> Iterable[tuple[str, dict[str, bytes]]]:
        missing = sorted(missing)
        computed = signatures_parallel([texts[d] for d in missing], params, workers)
        return ((d, {"signature": sig.tobytes()}) for d, sig in zip(missing, computed, strict=True))

    records = cache.map({d: ActionSpec("cass", "minhash", spec, inputs={"text": d}, outputs=("signature",))
                         for d in texts}, compute)
    found = {d: np.frombuffer(store.get(r.outputs["signature"]), dtype=np.uint32) for d, r in records.items()}
    return found, cache.misses


def rank(rows: pl.DataFrame) -> pl.DataFrame:
    """Rows in representative order: permissive license, most files (headers found), longest, smallest id."""
    license_rank = (pl.when(pl.col("license_type") == "permissive").then(0).otherwise(1)
                    if "license_type" in rows.columns else pl.lit(0))
    return rows.with_columns(license_rank.alias("_license"), pl.col("files").list.len().alias("_files")).sort(
        ["_license", "_files", "bytes", "sample_id"], descending=[False, True, True, False]).drop("_license", "_files")


def reference_texts(trees: list[str], extensions: list[str]) -> dict[str, str]:
    """path -> text of every reference file (for decontamination)."""
    files = sorted(p for t in trees for p in Path(t).rglob("*") if p.is_file() and p.suffix in extensions)
    return {str(p): p.read_text(errors="replace") for p in files}
