"""Facts read out of the hipify-perl script itself: its header map and the tables of its diagnostics."""

from __future__ import annotations

import re

from toolchains.headers import balanced_end

_SUBST_INCLUDE = re.compile(r'subst\("([^"]+)",\s*"([^"]*)",\s*"include(?:_cuda_main_header(?:_v2)?)?"\)')
_WARN_SUB = re.compile(r"^sub warn\w+ \{", re.M)
_PLAIN_MATCH = re.compile(r"m/(\\b)?\(\$func\)(\\b)?/g;")
_ANY_MATCH = re.compile(r"m/[^;]*\$func[^;]*/g;")
_TABLE_REF = re.compile(r"[@%](\w+)")
_STRING = re.compile(r'"([A-Za-z_]\w*)"')


_SUBST = re.compile(r'subst\("(\w+)",\s*"(\w*)",\s*"(\w+)"\)')


def _hip_mode(script: str) -> str:
    """The body of hipify-perl's HIP-mode substitutions (its ``simpleSubstitutions``)."""
    body = script.split("sub simpleSubstitutions", 1)[-1]
    return body[: body.find("\n}\n")] if "\n}\n" in body else body


def header_map(script: str) -> dict[str, str]:
    """hipify-perl's header substitutions in its HIP mode, CUDA name -> HIP name (empty where it removes the
    ``#include``)."""
    return {a.replace("\\/", "/"): b.replace("\\/", "/") for a, b in _SUBST_INCLUDE.findall(_hip_mode(script))}


def name_map(script: str) -> dict[str, str]:
    """hipify-perl's identifier substitutions in its HIP mode (functions, types, constants), CUDA -> HIP."""
    return {a: b for a, b, kind in _SUBST.findall(_hip_mode(script)) if not kind.startswith("include") and b}


def _bracketed(text: str, start: int, opener: str) -> str:
    """The text from the ``opener`` at or after ``start`` to its matching closer."""
    i = text.index(opener, start)
    return text[i:balanced_end(text, i, opener)]


def _table(script: str, name: str) -> str:
    """The parenthesised initialiser of the array or hash ``name`` (empty if there is none)."""
    m = re.search(rf"^(?:my )?[@%]{re.escape(name)} = \(", script, re.M)
    return _bracketed(script, m.end() - 1, "(") if m else ""


def _match_kind(sub_body: str) -> str:
    """How a warn sub matches its names: ``substring`` (``m/($func)/g``), ``word``
    (``m/\b($func)\b/g``), or ``line`` (anything else, or the line printed)."""
    matches = _ANY_MATCH.findall(sub_body)
    plain = _PLAIN_MATCH.fullmatch(matches[0]) if len(matches) == 1 else None
    if plain is None or "$_" in sub_body:
        return "line"
    bounds = (plain.group(1), plain.group(2))
    return "word" if all(bounds) else "substring" if not any(bounds) else "line"


def warning_tables(script: str) -> tuple[tuple[str, ...], ...]:
    """What the script's diagnostics check: (every identifier its ``warn*`` subs look for, the whitelist of
    ``cuda...`` names it never flags in translated text, the names every check of which is a substring test,
    those every check of which is a whole-word test). Read from the names the subs list and the arrays and
    hashes they loop over (6.0 lists names inline, 7.0 in ``@...Functions``), and how each sub matches them."""
    kinds: dict[str, set[str]] = {}
    for m in _WARN_SUB.finditer(script):
        body = _bracketed(script, m.end() - 1, "{")
        names = set(_STRING.findall(body))
        for table in _TABLE_REF.findall(body):
            names.update(_STRING.findall(_table(script, table)))
        kind = _match_kind(body)
        for name in names:
            kinds.setdefault(name, set()).add(kind)
    if not kinds:
        raise ValueError("no warning tables found in the hipify-perl script")
    return (tuple(sorted(kinds)), tuple(_STRING.findall(_table(script, "whitelist"))),
            tuple(sorted(n for n, k in kinds.items() if k == {"substring"})),
            tuple(sorted(n for n, k in kinds.items() if k == {"word"})))
