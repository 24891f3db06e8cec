"""Reading a built copy of the pipeline: stage metrics and Parquet digests (shared by the tests
that run `dvc repro` in a project)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def metrics(project: Path, stage: str) -> dict:
    """``metrics/<stage>.json`` of a project."""
    return json.loads((project / "metrics" / f"{stage}.json").read_text())


def parquet_hashes(project: Path, under: str = "data") -> dict[str, str]:
    """sha256 of every Parquet file below ``under``, by path relative to the project."""
    return {str(p.relative_to(project)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((project / under).rglob("*.parquet"))}
