"""Calls to remote services (Software Heritage, Debian's archive, the Hub): retry delays and git blob ids."""

from __future__ import annotations

import hashlib
import random


def backoff_s(attempt: int, base_s: float = 0.5, cap_s: float = 30.0) -> float:
    """Delay before retry ``attempt`` (1-based) of a network call: exponential, capped, with
    jitter over its upper half."""
    ceiling = min(cap_s, base_s * 2 ** (attempt - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def git_blob_id(data: bytes) -> str:
    """git's object id of a file's bytes (how Software Heritage and the Hub name plain files)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
