"""Per-file licenses from a Debian ``copyright`` file (machine-readable format, DEP-5).

A ``Files:`` paragraph lists whitespace-separated patterns (``*`` matches any run of characters,
``/`` included; ``?`` one character) relative to the source tree's root, and names its license
on the first line of ``License:``. The last paragraph whose patterns match a path wins. A file
that is not in the machine-readable format gives every path the license its text names first
(``LGPL``, ``GPL``, ``Apache``, ``BSD``, ``Expat``), or ``unknown``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

FORMAT_FIELD = "format"

PERMISSIVE = re.compile(
    r"^(?:expat|mit|bsd|isc|zlib|apache|bsl|boost|psf|python|public-?domain|cc0|unlicense|x11|ncsa|curl|"
    r"libpng|ijg|ftl|wtfpl|ofl)", re.I)
FREE_TEXT_LICENSES = (
    ("LGPL", re.compile(r"GNU (?:Lesser|Library) General Public License", re.I)),
    ("AGPL", re.compile(r"GNU Affero General Public License", re.I)),
    ("GPL", re.compile(r"GNU General Public License", re.I)),
    ("Apache", re.compile(r"Apache License", re.I)),
    ("Expat", re.compile(r"Permission is hereby granted, free of charge", re.I)),
    ("BSD", re.compile(r"Redistribution and use in source and binary forms", re.I)),
)
COPYLEFT = re.compile(r"^(?:l?gpl|agpl|mpl|cecill|epl|cddl|osl|eupl|cc-by-sa|gfdl)", re.I)


def _single_type(name: str) -> str:
    return "permissive" if PERMISSIVE.match(name) else "copyleft" if COPYLEFT.match(name) else "unknown"


def license_type(name: str) -> str:
    """``permissive``, ``copyleft`` or ``unknown`` for a DEP-5 license expression: an ``or`` choice
    takes its most permissive alternative, an ``and`` conjunction its most restrictive part
    (``and`` binds tighter, as in DEP-5)."""
    rank = {"permissive": 0, "unknown": 1, "copyleft": 2}
    choices = []
    for option in re.split(r"\s+or\s+", name.strip(), flags=re.I):
        parts = [_single_type(p.strip()) for p in re.split(r"\s+and\s+", option, flags=re.I) if p.strip()]
        choices.append(max(parts, key=rank.__getitem__) if parts else "unknown")
    return min(choices, key=rank.__getitem__) if choices else "unknown"


def _paragraphs(text: str) -> list[dict[str, str]]:
    """RFC 822-style paragraphs: field names lower-cased, continuation lines joined with newlines."""
    paragraphs, current, last = [], {}, None
    for line in text.splitlines():
        if not line.strip():
            if current:
                paragraphs.append(current)
            current, last = {}, None
        elif line[0] in " \t" and last is not None:
            current[last] += "\n" + line.strip()
        elif ":" in line and not line.startswith("#"):
            name, _, value = line.partition(":")
            last = name.strip().lower()
            current[last] = value.strip()
    if current:
        paragraphs.append(current)
    return paragraphs


@functools.cache
def _pattern(glob: str) -> re.Pattern:
    parts = [".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob]
    return re.compile("".join(parts) + r"\Z")


@dataclass(frozen=True)
class Copyright:
    """The ``Files:`` paragraphs of a copyright file, in order: (patterns, license short name)."""

    stanzas: tuple[tuple[tuple[str, ...], str], ...]
    machine_readable: bool

    @classmethod
    def parse(cls, text: str) -> Copyright:
        paragraphs = _paragraphs(text)
        if not paragraphs or FORMAT_FIELD not in paragraphs[0]:
            found = [(m.start(), name) for name, rx in FREE_TEXT_LICENSES if (m := rx.search(text))]
            return cls(((("*",), min(found)[1]),) if found else (), False)
        stanzas = tuple((tuple(p["files"].split()), ((p.get("license") or "").splitlines() or [""])[0].strip()
                         or "unknown") for p in paragraphs if "files" in p)
        return cls(stanzas, True)

    def license_of(self, path: str) -> str:
        """The license short name of a path relative to the source tree's root."""
        found = "unknown"
        for patterns, name in self.stanzas:
            if any(_pattern(g).match(path) for g in patterns):
                found = name
        return found
