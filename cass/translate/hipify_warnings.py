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
  is the same. Most checks (``m/($func)/g`` in 6.0, ``m/\b($func)\b/g`` in 7.0, the line itself
  not printed) see only the words of a line that hold their names: every name is made of word
  characters, so a match lies inside one word, word boundaries fall where the line's do, and a
  scalar ``m//g`` match, which starts where the previous successful one ended (``pos``), finds the
  same names in the same order. Lines whose names are all of that kind are checked once per
  distinct sequence of what those checks can see of them (per word, from its first name to its
  last for substring matches, the word itself for whole-word ones), as a line of just that (a
  13k-line OpenGL header has 735 lines naming CUDA's removed ``texture``: hipify-perl 6.0 checks
  three lines for them, 7.0 one);
* the check of the translated text, applied here to the ``-quiet-warnings`` output exactly as
  hipify-perl does it (whitelisted names replaced by ``ZAP``, the first ``\\bcuda[A-Z]\\w+`` of a
  line flagged with the line), numbered as hipify-perl numbers it (before the
  ``#include "hip/hip_runtime.h"`` line it may add on top).

Perl's hash order decides the order of a line's deprecated/removed/experimental warnings; the AMD
toolchain runs hipify-perl with a fixed ``PERL_HASH_SEED``, so both runs agree.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from toolchains.hipify_script import warning_tables

_LEFT_CUDA_NAME = re.compile(r"\bcuda[A-Z]\w+")
HIP_INCLUDE = '#include "hip/hip_runtime.h"'


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
    """What the installed hipify-perl checks: the identifiers its per-line warnings look for, the
    whitelist of ``cuda...`` names it never flags in translated text, and the names whose every
    check says only whether a line holds them (as a substring, or as a whole word)."""

    names: tuple[str, ...]
    whitelist: tuple[str, ...]
    substring_names: tuple[str, ...] = ()
    word_names: tuple[str, ...] = ()

    @classmethod
    def from_script(cls, script: str) -> WarningTables:
        """The tables of a hipify-perl script (:func:`toolchains.hipify_script.warning_tables`)."""
        return cls(*warning_tables(script))

    @property
    def matcher(self) -> re.Pattern:
        return _matcher(self.names)

    @functools.cached_property
    def _by_prefix(self) -> tuple[int, dict[str, tuple[str, ...]]]:
        """Names by their first characters (as many as the shortest name has, at most 4)."""
        size = min(4, *map(len, self.names)) if self.names else 1
        index: dict[str, list[str]] = {}
        for name in self.names:
            index.setdefault(name[:size], []).append(name)
        return size, {k: tuple(v) for k, v in index.items()}

    @functools.cached_property
    def _kinds(self) -> tuple[frozenset[str], frozenset[str]]:
        return frozenset(self.substring_names), frozenset(self.word_names)

    def checked_words(self, line: str) -> tuple[str, ...] | None:
        """What of ``line`` its checks can see, where every name it holds is checked only by a
        plain match (None where some check looks at more of the line): in order, per word holding
        a name, the part from its first name to its last (substring matches), the whole word
        where whole-word matches may look at it (words that are a name), nothing for words whole-word
        matches cannot match (a name inside a longer word)."""
        substring, word = self._kinds
        size, by_prefix = self._by_prefix
        seen = []
        for token in _WORD.finditer(line):
            text = token.group(0)
            spans, kinds = [], set()
            for i in range(len(text)):
                for name in by_prefix.get(text[i:i + size], ()):
                    if text.startswith(name, i):
                        kinds.add("substring" if name in substring else "word" if name in word else "line")
                        spans.append((i, i + len(name)))
            if "line" in kinds:
                return None
            if kinds == {"substring"}:
                seen.append(text[min(s for s, _ in spans):max(e for _, e in spans)])
            elif "substring" in kinds or any(span == (0, len(text)) for span in spans):
                seen.append(text)
        return tuple(seen)


_WORD = re.compile(r"[A-Za-z0-9_]+")
r"""A word as hipify-perl's ``\w`` sees it (Perl reads the file as bytes: ASCII word characters)."""


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


@dataclass(frozen=True)
class WarningCheck:
    """The input of hipify-perl's per-line checks for one file: its candidate lines, where lines
    checked only by plain matches give way to one line per distinct sequence of the words holding
    names; and the file's line numbers each checked line stands for."""

    lines: tuple[str, ...]
    origins: tuple[tuple[int, ...], ...]

    @property
    def text(self) -> bytes:
        return "".join(line + "\n" for line in self.lines).encode("utf-8", "surrogateescape")

    @property
    def candidates(self) -> int:
        return sum(map(len, self.origins))


def warning_check(text: str, tables: WarningTables) -> WarningCheck:
    """What to give hipify-perl's per-line checks for ``text`` (no lines where none can warn)."""
    lines = perl_lines(text)
    checked: dict[str, list[int]] = {}
    for n in candidate_lines(text, tables):
        words = tables.checked_words(lines[n - 1])
        if words == ():
            continue   # its names sit inside longer words, where whole-word checks find nothing
        checked.setdefault(lines[n - 1] if words is None else " ".join(words), []).append(n)
    return WarningCheck(tuple(checked), tuple(tuple(v) for v in checked.values()))


def map_line_numbers(stderr: str, path: str, origins: tuple[tuple[int, ...], ...]) -> str:
    """hipify-perl's per-line warnings about the checked lines of ``path``, repeated for and
    numbered by every line of the whole file each checked line stands for, in the file's line
    order (6.0 writes ``  warning: PATH:N: ...``, 7.0 ``  PATH:N: warning: ...``). Its check of
    the checked lines' translated text (``  warning: PATH:#N : ...``) is left out: that check is
    made on the whole file's translation (:func:`translated_text_warnings`)."""
    numbered = re.compile(rf"^(  (?:warning: )?{re.escape(path)}:)(\d+)(:.*)$")
    translated = re.compile(rf"^  warning: {re.escape(path)}:#\d+ : ")
    out: list[tuple[int, int, str]] = []
    at = (0,)   # the lines a line without a number of its own follows
    for seq, line in enumerate(stderr.split("\n")[:-1] if stderr.endswith("\n") else stderr.split("\n")):
        if not line or translated.match(line):
            continue
        m = numbered.match(line)
        if m and 1 <= int(m.group(2)) <= len(origins):
            at = origins[int(m.group(2)) - 1]
            out += [(origin, seq, f"{m.group(1)}{origin}{m.group(3)}\n") for origin in at]
        else:
            out += [(origin, seq, line + "\n") for origin in at[:1]]
    return "".join(text for _, _, text in sorted(out))


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
