"""The project's content-addressed artifact store: blobs by BLAKE3 digest plus an action cache."""

from store.action import ActionSpec, action_key
from store.cas import (
    SCHEMA_VERSION,
    ActionRecord,
    CorruptObjectError,
    MissingObjectError,
    Store,
    StoreStats,
    canonical_json,
    digest_bytes,
    tracking,
)

__all__ = [
    "SCHEMA_VERSION",
    "ActionRecord",
    "ActionSpec",
    "CorruptObjectError",
    "MissingObjectError",
    "Store",
    "StoreStats",
    "action_key",
    "canonical_json",
    "digest_bytes",
    "tracking",
]
