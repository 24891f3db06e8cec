"""Small, exact helpers for rewriting C/C++ text: calls with balanced arguments, preprocessor lines.

They skip string and character literals and comments where it matters (inside an argument list,
a ``)`` or ``,`` in a literal or comment is not a delimiter), and leave every byte they do not
rewrite as it was.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass


def _skip_literal(text: str, i: int) -> int:
    """Index after the string/char literal or comment starting at ``i`` (``i`` if none starts there)."""
    c = text[i]
    if c == "'" and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return i   # a digit separator (1'000) or the prefix of a literal (u8'x') is no literal start
    if c in "\"'":
        j = i + 1
        while j < len(text) and text[j] != c:
            j += 2 if text[j] == "\\" else 1
        return j + 1
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    return i


def literal_spans(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of every comment and string or character literal, in order."""
    spans, i = [], 0
    starts = re.compile(r"[\"']|//|/\*")
    while (m := starts.search(text, i)) is not None:
        end = _skip_literal(text, m.start())
        if end == m.start():
            i = m.end()
            continue
        spans.append((m.start(), end))
        i = end
    return spans


def inside_spans(spans: list[tuple[int, int]], pos: int) -> bool:
    """Whether ``pos`` lies in one of ``spans`` (sorted, disjoint)."""
    k = bisect.bisect_right(spans, (pos, math.inf)) - 1
    return k >= 0 and spans[k][0] <= pos < spans[k][1]


@dataclass(frozen=True)
class Call:
    """A call ``name(args)`` found in a text: the span of the whole call and of each argument."""

    start: int
    end: int
    args: tuple[tuple[int, int], ...]


def find_calls(text: str, name: str, separator: str = ",", spans: list[tuple[int, int]] | None = None) -> list[Call]:
    """Every call of ``name`` (an identifier followed by ``(``, not part of a longer identifier or a
    member access; or a regex ``head`` ending in ``(``, see :func:`find_heads`) outside comments and
    literals, with its top-level arguments split at ``separator``; calls whose parentheses do not
    balance are skipped. ``spans``: the text's :func:`literal_spans`, where the caller has them."""
    return find_heads(text, rf"(?<![\w.>:]){re.escape(name)}\s*\(", separator, spans) if name in text else []


def find_heads(text: str, head: str, separator: str = ",", spans: list[tuple[int, int]] | None = None) -> list[Call]:
    """Like :func:`find_calls` for every match of the regex ``head``, which ends at an ``(``."""
    calls = []
    spans = literal_spans(text) if spans is None else spans
    for m in re.finditer(head, text):
        if inside_spans(spans, m.start()):
            continue
        depth, i, arg_start, args = 1, m.end(), m.end(), []
        while i < len(text) and depth:
            j = _skip_literal(text, i)
            if j != i:
                i = j
                continue
            c = text[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth == 0:
                    args.append((arg_start, i))
            elif c == separator and depth == 1:
                args.append((arg_start, i))
                arg_start = i + 1
            i += 1
        if depth == 0:
            if len(args) == 1 and not text[args[0][0]:args[0][1]].strip():
                args = []
            calls.append(Call(m.start(), i, tuple(args)))
    return calls


CALL_KEYWORDS = frozenset({"return", "else", "do", "case", "throw", "co_return", "co_yield", "sizeof", "new",
                           "delete", "decltype", "and", "or", "not", "typeid", "alignof", "noexcept"})
"""Keywords an expression (and so a call) can follow."""


def _comment_ending_at(text: str, spans: list[tuple[int, int]], pos: int) -> tuple[int, int] | None:
    """The comment whose last character is at ``pos - 1``, if any."""
    k = bisect.bisect_right(spans, (pos - 1, math.inf)) - 1
    if k >= 0 and spans[k][0] <= pos - 1 < spans[k][1] and text[spans[k][0]] == "/":
        return spans[k]
    return None


def is_declaration(text: str, call: Call, spans: list[tuple[int, int]]) -> bool:
    """Whether a match of ``name(...)`` declares or defines ``name`` (a type or qualifier names
    it: ``void __syncwarp(unsigned)``; ``#define name(...)``) instead of calling it. ``spans`` are
    the text's :func:`literal_spans`: comments before the call are skipped, and a preprocessor
    line ending right before it (``#endif``, ``#pragma unroll``) names no type."""
    i = call.start
    while True:
        while i > 0 and text[i - 1].isspace():
            i -= 1
        comment = _comment_ending_at(text, spans, i) if i else None
        if comment is None:
            break
        i = comment[0]
    line = text[text.rfind("\n", 0, i) + 1:i].lstrip()
    if line.startswith("#"):
        return re.fullmatch(r"#\s*define", line) is not None
    m = re.search(r"([A-Za-z_]\w*)$", text[max(0, i - 256):i])
    return m is not None and m.group(1) not in CALL_KEYWORDS


def rewrite_calls(text: str, name: str, rewrite: Callable[[list[str], str], str]) -> str:
    """``text`` with each call of ``name`` replaced by ``rewrite(arguments, call text)``; calls
    nested in an argument are rewritten first (the arguments passed are already rewritten);
    declarations and definitions of ``name`` are left alone."""
    if name not in text:
        return text
    out, pos, spans = [], 0, literal_spans(text)
    for call in find_calls(text, name, spans=spans):
        if call.start < pos or is_declaration(text, call, spans):   # nested in a call already handled
            continue
        args = [rewrite_calls(text[s:e], name, rewrite) for s, e in call.args]
        out += [text[pos:call.start], rewrite(args, text[call.start:call.end])]
        pos = call.end
    return "".join(out) + text[pos:]


PREPROCESSOR_LINE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef)\b((?:\\\n|\\.|[^\\\n])*)$", re.M)
"""A conditional directive with its continuation lines: group 1 the directive, group 2 the rest."""


def block_end(text: str, open_index: int, spans: list[tuple[int, int]]) -> int | None:
    """The index just past the ``}`` that closes the ``{`` at ``open_index`` (braces in ``spans``, the text's
    :func:`literal_spans`, do not count); None if none closes it."""
    depth = 0
    for m in re.finditer(r"[{}]", text[open_index:]):
        if inside_spans(spans, open_index + m.start()):
            continue
        depth += 1 if m.group(0) == "{" else -1
        if depth == 0:
            return open_index + m.end()
    return None


DIRECTIVE_LINE = re.compile(r"^[ \t]*#[ \t]*(\w+)(?:\\\r?\n|\\.|[^\\\n])*$", re.M)
"""A preprocessor directive with its continuation lines (group 1: its name): scanned in order, a continuation line
that starts with ``#`` (``#x`` in a macro's body) is never taken for one."""


@dataclass(frozen=True)
class TopLevel:
    """Where a text's file scope is: the starts of its statements there (the first code after a ``;``, after a block
    closed back to file scope, after a preprocessor line, or the text's start), and what is not such a statement:
    its blocks' insides and its preprocessor lines (sorted, disjoint spans)."""

    starts: tuple[int, ...]
    enclosed: tuple[tuple[int, int], ...]
    directives: tuple[tuple[int, int], ...]
    """the spans of the text's preprocessor lines"""

    def statement_start(self, pos: int) -> int | None:
        """The start of the file-scope statement ``pos`` is in; None where ``pos`` is inside a block or a
        preprocessor line."""
        k = bisect.bisect_right(self.enclosed, (pos, math.inf)) - 1
        if k >= 0 and self.enclosed[k][0] <= pos < self.enclosed[k][1]:
            return None
        k = bisect.bisect_right(self.starts, pos) - 1
        return self.starts[k] if k >= 0 else None


def top_level(text: str, spans: list[tuple[int, int]]) -> TopLevel:
    """The file scope of ``text`` (``spans``: its :func:`literal_spans`; braces and ``;`` in them or in preprocessor
    lines do not count). Where its braces do not balance (they may per preprocessor branch), nothing after the
    first block left open is at file scope."""
    directives = [(m.start(), m.end()) for m in DIRECTIVE_LINE.finditer(text)]
    skipped = sorted([*spans, *directives])
    ends, blocks, depth, opened = [0, *(end for _, end in directives)], [], 0, 0
    for m in re.finditer(r"[{};]", text):
        if inside_spans(skipped, m.start()):
            continue
        c = m.group(0)
        if c == "{":
            opened = m.start() if depth == 0 else opened
            depth += 1
        elif c == "}" and depth:
            depth -= 1
            if depth == 0:
                blocks.append((opened + 1, m.start()))
                ends.append(m.end())
        elif c == ";" and depth == 0:
            ends.append(m.end())
    if depth:
        blocks.append((opened + 1, len(text)))   # braces that balance only per preprocessor branch: no file scope after
    starts = set()
    for end in ends:
        i = end
        while i < len(text):
            if text[i].isspace():
                i += 1
            elif (j := _skip_literal(text, i)) != i and text[i] == "/":
                i = j   # a comment before the statement
            else:
                break
        starts.add(i)
    enclosed = sorted([*blocks, *((a, b) for a, b in directives if not any(s <= a < e for s, e in blocks))])
    return TopLevel(tuple(sorted(starts)), tuple(enclosed), tuple(directives))
