"""hipify-perl's warnings without its slow pass over every line.

hipify-perl's default mode checks every line of a file against each of its thousands of
unsupported, deprecated, removed and experimental CUDA identifiers, one regex compilation each
(about 45 ms per line here: minutes for a large header), then flags ``cuda[A-Z]...`` names left in
the translated text. ``-quiet-warnings`` skips both and writes byte-identical HIP text. The
warnings are rebuilt from two cheaper pieces:

* the per-line checks, by the real hipify-perl in default mode on only the lines that contain
  one of the identifiers of those checks (a substring test with one trie-shaped regex built from
  the installed script's own tables; under 1% of the lines of real code), with the line numbers
  of its warnings mapped back to the file's; every check looks at one line alone, so the result
  is the same;
* the check of the translated text, applied here to the ``-quiet-warnings`` output exactly as
  hipify-perl does it (whitelisted names replaced by ``ZAP``, the first ``\\bcuda[A-Z]\\w+`` of a
  line flagged with the line), numbered as hipify-perl numbers it (before the
  ``#include "hip/hip_runtime.h"`` line it may add on top).

Perl's hash order decides the order of a line's deprecated/removed/experimental warnings; the AMD
toolchain runs hipify-perl with a fixed ``PERL_HASH_SEED``, so both runs agree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WARN_SUB = re.compile(r"^sub warn\w+ \{", re.M)
_TABLE_REF = re.compile(r"[@%](\w+)")
_STRING = re.compile(r'"([A-Za-z_]\w*)"')
_LEFT_CUDA_NAME = re.compile(r"\bcuda[A-Z]\w+")
HIP_INCLUDE = '#include "hip/hip_runtime.h"'


def _bracketed(text: str, start: int, opener: str) -> str:
    """The text from the ``opener`` at or after ``start`` to its matching closer."""
    closer = {"(": ")", "{": "}"}[opener]
    i = text.index(opener, start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == opener:
            depth += 1
        elif text[j] == closer:
            depth -= 1
            if depth == 0:
                return text[i:j + 1]
    raise ValueError(f"unbalanced {opener} at {i}")


def _table(script: str, name: str) -> str:
    """The parenthesised initialiser of the array or hash ``name`` (empty if there is none)."""
    m = re.search(rf"^(?:my )?[@%]{re.escape(name)} = \(", script, re.M)
    return _bracketed(script, m.end() - 1, "(") if m else ""


def trie_pattern(words: list[str]) -> str:
    """A regex matching any of ``words``, shaped as their prefix tree (fast with Python's re)."""
    trie: dict = {}
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:
        alts = [re.escape(ch) + build(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{body})?" if "" in node else body

    return build(trie)


@dataclass(frozen=True)
class WarningTables:
    """What the installed hipify-perl checks: the identifiers its per-line warnings look for and
    the whitelist of ``cuda...`` names it never flags in translated text."""

    names: tuple[str, ...]
    whitelist: tuple[str, ...]

    @classmethod
    def from_script(cls, script: str) -> WarningTables:
        """Read the tables out of hipify-perl's own source: the names its ``warn*`` subs list, and
        the arrays and hashes they loop over (6.0 lists names inline, 7.0 in ``@...Functions``)."""
        subs = [_bracketed(script, m.end() - 1, "{") for m in _WARN_SUB.finditer(script)]
        names = {n for body in subs for n in _STRING.findall(body)}
        for table in sorted({t for body in subs for t in _TABLE_REF.findall(body)}):
            names.update(_STRING.findall(_table(script, table)))
        if not names:
            raise ValueError("no warning tables found in the hipify-perl script")
        return cls(tuple(sorted(names)), tuple(_STRING.findall(_table(script, "whitelist"))))

    @property
    def matcher(self) -> re.Pattern:
        return _matcher(self.names)


_MATCHERS: dict[tuple[str, ...], re.Pattern] = {}


def _matcher(names: tuple[str, ...]) -> re.Pattern:
    if names not in _MATCHERS:
        _MATCHERS[names] = re.compile(trie_pattern(list(names)))
    return _MATCHERS[names]


def perl_lines(text: str) -> list[str]:
    """``split /\\n/`` as Perl does it: trailing empty fields dropped."""
    lines = text.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    return lines


def candidate_lines(text: str, tables: WarningTables) -> list[int]:
    """1-based numbers of the lines a per-line check of hipify-perl could warn about."""
    match = tables.matcher.search
    return [n for n, line in enumerate(perl_lines(text), 1) if match(line)]


def reduced_input(text: str, lines: list[int]) -> bytes:
    """The file made of just the ``lines`` (1-based), for hipify-perl's per-line checks."""
    kept = perl_lines(text)
    return "".join(kept[n - 1] + "\n" for n in lines).encode("utf-8", "surrogateescape")


def map_line_numbers(stderr: str, path: str, lines: list[int]) -> str:
    """hipify-perl's per-line warnings about the reduced file ``path``, numbered by the lines of the
    whole file (6.0 writes ``  warning: PATH:N: ...``, 7.0 ``  PATH:N: warning: ...``). Its check of
    the reduced file's translated text (``  warning: PATH:#N : ...``) is left out: that check is
    made on the whole file's translation (:func:`translated_text_warnings`)."""
    numbered = re.compile(rf"^(  (?:warning: )?{re.escape(path)}:)(\d+)(:)", re.M)
    translated = re.compile(rf"^  warning: {re.escape(path)}:#\d+ : .*\n?", re.M)

    def renumber(m: re.Match) -> str:
        n = int(m.group(2))
        return f"{m.group(1)}{lines[n - 1]}{m.group(3)}" if 1 <= n <= len(lines) else m.group(0)

    return numbered.sub(renumber, translated.sub("", stderr))


def translated_text_warnings(path: str, cuda_text: str, hip_text: str, tables: WarningTables) -> str:
    """hipify-perl's check of the translated text, from the ``-quiet-warnings`` output."""
    lines = perl_lines(hip_text)
    if len(lines) == len(perl_lines(cuda_text)) + 1 and lines and lines[0].rstrip("\r") == HIP_INCLUDE:
        lines = lines[1:]   # added when printing, after the check
    whitelist = [re.compile(rf"\b{re.escape(w)}\b") for w in tables.whitelist]
    out = []
    for n, line in enumerate(lines, 1):
        if "cuda" not in line:
            continue
        for w in whitelist:
            line = w.sub("ZAP", line)
        if _LEFT_CUDA_NAME.search(line):
            out.append(f"  warning: {path}:#{n} : {line}\n")
    return "".join(out)
