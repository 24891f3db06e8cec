"""Domain labels by keyword counts, as the CASS paper's appendix A.3 describes.

Each domain has a keyword list (one data file, ``cass/sources/domain_keywords.yaml``). A source's
identifiers and words are split (``camelCase`` and ``snake_case`` into parts), lower-cased, and
counted against every list; a word matches a keyword when it equals it or equals it plus a
plural ``s``. The domain with the most hits wins; ties go to the domain listed first; a file with
no hit gets the default domain.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class DomainLabeler:
    """Keyword lists per domain (in file order) and the default domain."""

    keywords: dict[str, frozenset[str]]
    default: str

    @classmethod
    def load(cls, path: Path) -> DomainLabeler:
        with path.open() as f:
            data = yaml.safe_load(f)
        try:
            keywords = {name: frozenset(w.lower() for w in words) for name, words in data["domains"].items()}
            return cls(keywords, data["default"])
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path}: expected 'default: <domain>' and 'domains: {{name: [keywords]}}' ({exc})") \
                from exc

    def counts(self, text: str) -> dict[str, int]:
        """Keyword hits per domain."""
        words = Counter(_WORD.findall(_CAMEL.sub(r"\1 \2", text).lower()))
        hits = {}
        for domain, keys in self.keywords.items():
            hits[domain] = sum(n for w, n in words.items() if w in keys or (w.endswith("s") and w[:-1] in keys))
        return hits

    def label(self, text: str) -> str:
        """The domain with the most keyword hits (the default when none)."""
        hits = self.counts(text)
        best = max(hits.values(), default=0)
        return next(d for d, n in hits.items() if n == best) if best else self.default
