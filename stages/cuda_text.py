"""Comment and string handling for CUDA/C++ source text, shared by the filter and dedup stages.

Strings are matched before comments, so a ``//`` or ``/*`` inside a string literal is not taken
for a comment.
"""

from __future__ import annotations

import re

_COMMENT_OR_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|//[^\n]*|/\*.*?\*/', re.S)


def strip_comments(source: str) -> str:
    """Source with every comment replaced by a space; string literals kept."""
    return _COMMENT_OR_STRING.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else " ", source)


def strip_comments_and_strings(source: str) -> str:
    """Source with comments replaced by a space and string literals emptied (quotes kept)."""
    return _COMMENT_OR_STRING.sub(lambda m: '""' if m.group(0)[0] == '"' else " ", source)
