"""Normalised device assembly next to the raw text, proven to still assemble (stage ``normalize``:
:mod:`cass.stages.normalize`)."""

from __future__ import annotations


def normalize_all(store, pieces: list[dict], normalize) -> tuple[list[dict], tuple[int, int]]:
    """One vendor's assembly per arch normalised and stored, with the whitespace-separated token
    counts (raw, normalised) over all its archs."""
    stored, before, after = [], 0, 0
    for asm in pieces:
        raw = store.get_text(asm["digest"])
        text = normalize(raw)
        before, after = before + len(raw.split()), after + len(text.split())
        stored.append({"arch": asm["arch"], "digest": store.put_text(text)})
    return stored, (before, after)
