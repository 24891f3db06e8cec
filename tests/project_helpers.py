"""Reading a built copy of the pipeline: stage metrics and Parquet digests (shared by the tests
that run `dvc repro` in a project)."""

from __future__ import annotations

import json
from pathlib import Path

from cass.scaffold import parquet_hashes, run_report

__all__ = ["metrics", "parquet_hashes", "run_report"]


def metrics(project: Path, stage: str) -> dict:
    """``metrics/<stage>.json`` of a project."""
    return json.loads((project / "metrics" / f"{stage}.json").read_text())

