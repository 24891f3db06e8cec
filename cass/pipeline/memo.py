"""Per-item results of pure computations, kept in the store's action cache.

A stage after the compilers computes something per text (a token count, say) from nothing but the
text and fixed settings. :class:`Memo` keys each result by BLAKE3 of the computation's name, its
settings and the text's digest, so a rerun computes only the texts it has not seen, on any machine
that shares the store (the keys it used go into the stage's ``actions.parquet``, hence into the packs
that `dvc push` shares). Values are small JSON documents stored as blobs; equal values share one blob.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence

from store import ActionRecord, Store, canonical_json, digest_bytes


class Memo:
    """``name`` + ``settings`` (JSON-able) name one pure function of a text; results by text digest."""

    def __init__(self, store: Store, name: str, settings: Mapping):
        self.store = store
        self.name = name
        self.settings = dict(settings)
        self.keys: set[str] = set()
        self.hits = 0
        self.misses = 0

    def _key(self, text_digest: str) -> str:
        return Store.action_key({"memo": self.name, "settings": self.settings, "text": text_digest})

    def map(self, texts: Sequence[str], compute: Callable[[list[str]], list]) -> list:
        """``compute(texts)`` for every text, calling ``compute`` once, on the texts not seen before
        (distinct ones only), and recording their results."""
        digests = [digest_bytes(text.encode()) for text in texts]
        found: dict[str, object] = {}
        for digest in dict.fromkeys(digests):
            key = self._key(digest)
            self.keys.add(key)
            record = self.store.lookup(key)
            if record is not None:
                found[digest] = json.loads(self.store.get(record.outputs["value"]))
        todo = {d: text for d, text in zip(digests, texts, strict=True) if d not in found}
        self.hits += len(found)
        self.misses += len(todo)
        if todo:
            values = compute(list(todo.values()))
            if len(values) != len(todo):
                raise ValueError(f"memo {self.name}: {len(todo)} texts but {len(values)} results")
            for digest, value in zip(todo, values, strict=True):
                blob = self.store.put(canonical_json(value))
                self.store.record(self._key(digest), ActionRecord("ok", 0, {"value": blob}))
                found[digest] = value
        return [found[d] for d in digests]

    def counts(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}
