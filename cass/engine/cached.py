"""The one loop every per-item cache runs: describe each item's action (:class:`store.ActionSpec`, which alone
derives its key), look the actions up in the store's action cache, compute only the misses, record each result as
it comes, count hits and misses.

Tool runs (:class:`cass.engine.actions.ActionRunner`), repairs, MinHash signatures, token counts, model
completions and fetched blobs all go through :class:`CachedMap`, so each cached result is an action record
(shared by `dvc push`/`pull` through the packs, checked on every read) and every stage counts the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TypeVar

from store import ActionRecord, ActionSpec, Store

Item = TypeVar("Item", bound=Hashable)
Outputs = Mapping[str, bytes]
"""A result's output blobs by name, before they are stored."""


class CachedMap:
    """Results keyed in ``store``'s action cache (the store tracks the keys used: :func:`store.tracking`)."""

    def __init__(self, store: Store):
        self.store = store
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()   # results may be recorded from a backend's threads

    def lookup(self, action: ActionSpec) -> ActionRecord | None:
        """The record of ``action``, counted as a hit, or None (a damaged output makes it None: the store sets it
        aside and the result is computed again)."""
        record = self.store.lookup(action.key)
        with self._lock:
            self.hits += record is not None
        return record

    def split(self, actions: Mapping[Item, ActionSpec]) -> tuple[dict[Item, ActionRecord], list[Item]]:
        """(the records of the items already known, the items to compute, in ``actions``' order)."""
        found = {item: record for item, action in actions.items() if (record := self.lookup(action)) is not None}
        return found, [item for item in actions if item not in found]

    def record(self, action: ActionSpec, outputs: Outputs, status: str = "ok", exit_code: int = 0,
               stderr: bytes | None = b"") -> ActionRecord:
        """Store a computed result's blobs, then its record (blobs first: a record never names a missing blob);
        ``stderr`` None records none (a computation that has no error stream)."""
        blobs = {name: self.store.put(data) for name, data in sorted(outputs.items())}
        record = ActionRecord(status, exit_code, blobs, "" if stderr is None else self.store.put(stderr))
        self.store.record(action.key, record)
        with self._lock:
            self.misses += 1
        return record

    def map(self, actions: Mapping[Item, ActionSpec],
            compute: Callable[[list[Item]], Iterable[tuple[Item, Outputs]]],
            stderr: bytes | None = b"") -> dict[Item, ActionRecord]:
        """The record of every item: the known ones from the store, the others from one call of ``compute`` on
        them, each recorded as ``compute`` yields it (an interrupted run keeps what it finished; ``stderr`` as
        :meth:`record` takes it)."""
        found, missing = self.split(actions)
        if missing:
            for item, outputs in compute(missing):
                found[item] = self.record(actions[item], outputs, stderr=stderr)
            if lost := [item for item in missing if item not in found]:
                raise ValueError(f"{len(lost)} of {len(missing)} items got no result, e.g. {lost[0]!r}")
        return found

    def counts(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}
