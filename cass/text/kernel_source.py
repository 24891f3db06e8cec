"""A kernel's full text in a CUDA or HIP source (a ``__global__`` function) or an OpenCL C source (a
``__kernel`` function); comments, literals and preprocessor lines masked while searching."""

from __future__ import annotations

import functools
import re

from cass.text.kernel_names import kernel_base_name


@functools.lru_cache(maxsize=4)
def mask_source(source: str) -> str:
    """``source`` with comments, string/char literals and preprocessor lines blanked to spaces.

    Newlines are kept and every other masked character becomes a space, so indices agree with
    ``source``. Cached: every kernel of a file is cut from the same masked text.
    """
    out = list(source)
    n = len(source)
    i = 0
    line_start = True

    def blank(a: int, b: int) -> None:
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = source[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if line_start and c == "#":  # preprocessor directive, with backslash continuations
            j = i
            while j < n and source[j] != "\n":
                if source.startswith("/*", j):
                    close = source.find("*/", j + 2)
                    j = n if close < 0 else close + 2
                    continue
                if source[j] == "\\" and source.startswith("\n", j + 1):
                    j += 2
                    continue
                if source[j] == "\\" and source.startswith("\r\n", j + 1):
                    j += 3
                    continue
                j += 1
            blank(i, j)
            i = j
            continue
        line_start = False
        if source.startswith("//", i):
            j = source.find("\n", i)
            j = n if j < 0 else j
            while j < n and source[j - 1] == "\\":  # a line comment continued by a backslash
                nxt = source.find("\n", j + 1)
                j = n if nxt < 0 else nxt
            blank(i, j)
            i = j
            continue
        if source.startswith("/*", i):
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            blank(i, j)
            i = j
            continue
        if c == "R" and source.startswith('"', i + 1) and not (i and (source[i - 1].isalnum() or source[i - 1] == "_")):
            m = re.compile(r'R"([^ ()\\\t\n]{0,16})\(').match(source, i)
            if m:
                close = source.find(")" + m.group(1) + '"', m.end())
                j = n if close < 0 else close + len(m.group(1)) + 2
                blank(i, j)
                i = j
                continue
        if c == "'":
            k = i - 1
            while k >= 0 and (source[k].isalnum() or source[k] in "_."):
                k -= 1
            if k + 1 < i and source[k + 1].isdigit():  # digit separator: 1'000'000
                i += 1
                continue
        if c in "\"'":
            j = i + 1
            while j < n and source[j] != c and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            blank(i, j)
            i = j
            continue
        i += 1
    return "".join(out)


def match_close(masked: str, i: int, open_c: str, close_c: str) -> int | None:
    """Index of the bracket closing the one at ``i`` in masked text, or None."""
    depth = 0
    for j in range(i, len(masked)):
        c = masked[j]
        if c == open_c:
            depth += 1
        elif c == close_c:
            depth -= 1
            if depth == 0:
                return j
    return None


_GLOBAL = re.compile(r"\b__global__\b")
_OPENCL_KERNEL = re.compile(r"\b(?:__kernel|kernel)\b")
_TEMPLATE = re.compile(r"\btemplate\b")


def kernel_source(source: str, name: str, opencl: bool = False) -> str | None:
    """Text of the ``__global__`` function ``name`` in a CUDA or HIP source (``opencl``: of the ``__kernel``
    function in an OpenCL C source), or None.

    ``name`` is the plain function name (a mangled name is reduced with ``kernel_base_name``).
    The text runs from the start of the line where the declaration begins (its ``template <...>``
    line if it has one; attributes, ``__launch_bounds__(...)``, ``extern "C"`` or a return type on
    an earlier line belong to the declaration; if other code precedes the declaration on that line,
    from its first token) to the brace closing its body, comments, string/char literals and
    preprocessor lines skipped when matching brackets. Declarations without a body are ignored; with
    several definitions (overloads, specialisations) the first in the source is returned.
    """
    name = kernel_base_name(name)
    masked = mask_source(source)
    marker = _OPENCL_KERNEL if opencl else _GLOBAL
    pattern = re.compile(rf"(?<![\w~])\b{re.escape(name)}\s*(?:<[^;{{}}()]*>\s*)?\(")
    for m in pattern.finditer(masked):
        head_start = max(masked.rfind(c, 0, m.start()) for c in ";{}") + 1
        head = masked[head_start : m.start()]
        if not marker.search(head) or re.search(r"(?:::|\.|->)\s*$", head):
            continue
        close = match_close(masked, m.end() - 1, "(", ")")
        if close is None:
            continue
        # after the parameter list: trailing attributes, noexcept, -> type ... up to '{' or ';'
        j = close + 1
        depth = 0
        while j < len(masked):
            c = masked[j]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth == 0 and c in "{;":
                break
            j += 1
        if j >= len(masked) or masked[j] != "{":
            continue
        end = match_close(masked, j, "{", "}")
        if end is None:
            continue
        template = _TEMPLATE.search(head)
        first = head_start + (template.start() if template else len(head) - len(head.lstrip()))
        start = source.rfind("\n", 0, first) + 1
        if masked[start:first].strip():  # other code before it on its line, e.g. extern "C" {
            start = first
        return source[start : end + 1]
    return None
