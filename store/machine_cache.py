"""This machine's cache, shared by every project on it: built tokenizers and models, analysis memos,
helper folders. Nothing in it is an output: deleting it costs only time."""

from __future__ import annotations

import os
from pathlib import Path


def machine_cache(name: str) -> Path:
    """``$CASS_CACHE/<name>``, else ``~/.cache/cass/<name>``."""
    return Path(os.environ.get("CASS_CACHE") or Path.home() / ".cache" / "cass").expanduser() / name
