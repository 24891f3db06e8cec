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

from cass.engine.cached import CachedMap
from store import ActionSpec, Store, canonical_json, digest_bytes


class Memo:
    """``name`` + ``settings`` (JSON-able) name one pure function of a text; results by text digest."""

    def __init__(self, store: Store, name: str, settings: Mapping):
        self.name = name
        self.settings = dict(settings)
        self.cache = CachedMap(store)

    def _action(self, text_digest: str) -> ActionSpec:
        return ActionSpec("cass", f"memo:{self.name}", self.settings, inputs={"text": text_digest}, outputs=("value",))

    def map(self, texts: Sequence[str], compute: Callable[[list[str]], list]) -> list:
        """``compute(texts)`` for every text, calling ``compute`` once, on the texts not seen before
        (distinct ones only), and recording their results."""
        digests = [digest_bytes(text.encode()) for text in texts]
        by_digest = dict(zip(digests, texts, strict=True))

        def missing(todo: list[str]) -> list[tuple[str, dict[str, bytes]]]:
            values = compute([by_digest[d] for d in todo])
            if len(values) != len(todo):
                raise ValueError(f"memo {self.name}: {len(todo)} texts but {len(values)} results")
            return [(d, {"value": canonical_json(v)}) for d, v in zip(todo, values, strict=True)]

        records = self.cache.map({d: self._action(d) for d in by_digest}, missing, stderr=None)
        values = {d: json.loads(self.cache.store.get(r.outputs["value"])) for d, r in records.items()}
        return [values[d] for d in digests]

    def counts(self) -> dict[str, int]:
        return self.cache.counts()
