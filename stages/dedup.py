"""Stage dedup: exact duplicates by content, before anything is compiled.

Two samples are exact duplicates when their main files and their local headers have the same
bytes. One representative per group is kept by a deterministic rule: the smallest
(origin, path). The others are dropped with reason ``exact_duplicate`` naming the kept sample.
"""

from __future__ import annotations

import polars as pl

from stages.common import StageOutput, read_manifest
from store import digest_bytes

STAGE = "dedup"


def content_key(files: list[dict]) -> str:
    """Digest of a sample's file contents (main file first, then headers in path order)."""
    return digest_bytes("\n".join(f["digest"] for f in files).encode())


def main() -> None:
    rows = read_manifest("filter")
    out = StageOutput(STAGE, rows_in=rows.height)
    keyed = rows.with_columns(
        pl.col("files").map_elements(content_key, return_dtype=pl.String).alias("_content")
    ).sort("origin", "path")
    first = keyed.group_by("_content", maintain_order=True).first()
    representative = dict(zip(first["_content"], first["path"], strict=True))
    kept_ids = set(first["sample_id"])
    for row in keyed.iter_rows(named=True):
        if row["sample_id"] not in kept_ids:
            out.drop(row, "exact_duplicate", f"same content as {representative[row['_content']]}")
    kept = rows.filter(pl.col("sample_id").is_in(kept_ids))
    print(out.write(kept))


if __name__ == "__main__":
    main()
