"""Branch parity: the branches of a C/C++ text's conditional groups, the markers that report which a compiler
took, and the groups whose taken branch differs between two compilers (stage ``branch_parity``:
:mod:`cass.stages.branch_parity`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from toolchains.headers import strip_comments

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")
_MARKER = re.compile(r"__cass_branch_([hd])_(\d+)_(\d+)__")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_NOT_MACROS = frozenset({"defined", "__has_include", "__has_include_next", "__has_attribute", "__has_builtin",
                         "__has_feature", "__has_cpp_attribute", "__has_extension", "true", "false"})
_QUERY = re.compile(r"\b(__has_\w+)\s*\(\s*(?:<[^>\n]*>|\"[^\"\n]*\"|[^()\n]*)\s*\)")
"""A ``__has_include(<cuda_fp16.h>)``-like query: what it asks about names no macro."""
PASSES = {"h": "host", "d": "device"}

DIVERGENCE = pl.Struct({"file": pl.String, "line": pl.Int64, "pass": pl.String, "nvidia_line": pl.Int64,
                        "amd_line": pl.Int64, "macros": pl.List(pl.String)})
"""One divergence: the group's ``#if`` line, the line of the branch each side took (null: none)."""


@dataclass(frozen=True)
class Branch:
    """One branch of a conditional group: ``number`` counts the branches of its file, ``group`` its groups."""

    number: int
    group: int
    line: int
    """1-based line of its directive"""
    end: int
    """last line of its directive (continuations)"""
    condition: str
    parent: int | None
    """the branch the group lies in (None at the top)"""


def branches(text: str) -> list[Branch]:
    """Every branch of every conditional group of a C/C++ text (comments and continuations handled)."""
    lines = strip_comments(text).split("\n")
    found: list[Branch] = []
    open_groups: list[tuple[int, int | None]] = []   # (group, branch it lies in)
    current: list[int | None] = [None]                # the innermost open branch
    groups = 0
    i = 0
    while i < len(lines):
        start, logical = i, lines[i]
        while logical.endswith("\\") and i + 1 < len(lines):
            i += 1
            logical = logical[:-1] + " " + lines[i]
        m = _DIRECTIVE.match(logical)
        i += 1
        if not m:
            continue
        kind, rest = m.groups()
        if kind.startswith("if"):
            open_groups.append((groups, current[-1]))
            groups += 1
        elif not open_groups:
            continue   # an unbalanced #elif/#else/#endif: the compiler reports it
        if kind == "endif":
            open_groups.pop()
            current.pop()
            continue
        group, parent = open_groups[-1]
        if not kind.startswith("if"):
            current.pop()
        found.append(Branch(len(found), group, start + 1, i, f"{kind} {rest.strip()}".strip(), parent))
        current.append(found[-1].number)
    return found


def marker(file_number: int, branch: int) -> str:
    """The lines that report, on a compiler's stderr, that it took a branch, and in which pass."""
    return (f"#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)\n#warning __cass_branch_d_{file_number}_"
            f"{branch}__\n#else\n#warning __cass_branch_h_{file_number}_{branch}__\n#endif\n")


def instrument(text: str, file_number: int, found: list[Branch]) -> str:
    """``text`` with :func:`marker` lines after each branch's directive."""
    lines = text.split("\n")
    after = {b.end: b.number for b in found}
    out = []
    for n, line in enumerate(lines, 1):
        out.append(line)
        if n in after:
            out.append(marker(file_number, after[n]).rstrip("\n"))
    return "\n".join(out)


def taken(stderr: str) -> set[tuple[str, int, int]]:
    """(pass, file number, branch number) of every marker a compiler reported."""
    return {(p, int(f), int(b)) for p, f, b in _MARKER.findall(stderr)}


def divergences(files: list[tuple[str, list[Branch]]], nvidia: set[tuple[str, int, int]],
                amd: set[tuple[str, int, int]]) -> list[dict]:
    """The groups whose taken branch differs between the sides, per pass, in branches both sides entered."""
    found = []
    for number, (path, marked) in enumerate(files):
        by_group: dict[int, list[Branch]] = {}
        for b in marked:
            by_group.setdefault(b.group, []).append(b)
        for p, pass_name in PASSES.items():
            nv = {b for (q, f, b) in nvidia if q == p and f == number}
            hip = {b for (q, f, b) in amd if q == p and f == number}
            for group in by_group.values():
                parent = group[0].parent
                if parent is not None and not (parent in nv and parent in hip):
                    continue
                ids = {b.number for b in group}
                if ids & nv == ids & hip:
                    continue
                line_of = {b.number: b.line for b in group}
                macros = sorted({n for b in group if not b.condition.startswith("else")
                                 for n in _NAME.findall(_QUERY.sub(r"\1()", b.condition.split(None, 1)[-1]))
                                 if n not in _NOT_MACROS})
                found.append({"file": path, "line": group[0].line, "pass": pass_name,
                              "nvidia_line": min((line_of[b] for b in ids & nv), default=None),
                              "amd_line": min((line_of[b] for b in ids & hip), default=None), "macros": macros})
    return found


def aligned(cuda: list[Branch], hip: list[Branch]) -> bool:
    """Whether a HIP text has the CUDA text's conditional structure (the same groups and branches, in order)."""
    return [(b.group, b.parent) for b in cuda] == [(b.group, b.parent) for b in hip]
