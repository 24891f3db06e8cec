"""Comment and string handling for CUDA/C++ source text, shared by the filter and dedup stages.

Strings are matched before comments, so a ``//`` or ``/*`` inside a string literal is not taken
for a comment.
"""

from __future__ import annotations

import re

_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_MARKER_AFTER_QUOTE = re.compile(r'"[^"\n]*(?://|/\*)')
"""Matches wherever a string literal could hold ``//`` or ``/*`` (never misses one: the last
quote before such a marker on its line is followed by no other quote up to it)."""


def strip_comments(source: str) -> str:
    """Source with every comment replaced by a space; string literals kept."""
    if not _MARKER_AFTER_QUOTE.search(source):  # no string can hold a marker: the plain pass is exact
        return _COMMENT.sub(" ", source)
    return _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else " ", source)


def strip_comments_and_strings(source: str) -> str:
    """Source with comments replaced by a space and string literals emptied (quotes kept)."""
    return _COMMENT_OR_STRING.sub(lambda m: '""' if m.group(0)[0] == '"' else " ", source)


_MAIN = re.compile(r"\bint\s+main\s*\(([^)]*)\)")


def main_signature(source: str) -> str | None:
    """The parameter list of the file's ``int main(...)``, or None when it defines no ``main``."""
    return main_parameters(strip_comments_and_strings(source))


def main_parameters(code: str) -> str | None:
    """:func:`main_signature` of source already stripped of comments and strings."""
    found = _MAIN.search(code)
    return found.group(1).strip() if found else None
