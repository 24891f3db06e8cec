"""NVIDIA SASS text (``cuobjdump -sass`` output): normalising it and splitting it per kernel.

Pure text functions (no I/O, no external tools), deterministic: the same input always gives the
same output. The normaliser is idempotent and ends every line it returns with ``\n``.

``normalize_sass`` (``cuobjdump -sass`` output) removes exactly:

* the instruction encodings: every ``/* 0x<hex> */`` comment, and with it every continuation line
  that held only such a comment (the second 64-bit half of each 128-bit instruction);
* the ``..........`` line that ends every function;
* the file and function header lines ``code for sm_XX``, ``.target sm_XX`` and
  ``.headerflags @"..."``: they are identical in every function of a target (the target is already
  in the column name), nothing refers to them. (Other header lines, e.g. cuobjdump's
  ``Fatbin elf code:`` banner, are kept.)
* the padding after the end of each function: its trailing ``NOP`` instructions and the
  unpredicated ``BRA <own address>`` self-loop before them (it follows the last ``EXIT`` or
  ``RET``). ``NOP`` s and branches anywhere else are kept;
* whitespace: every run of spaces/tabs becomes one space, lines are stripped, empty lines dropped.

It keeps the ``Function : <mangled name>`` headers and the ``/*0090*/`` address labels of the
instructions, because branch, call and ``BSSY`` targets (``BRA 0x1c0``) name those addresses, and
the `` ;`` that ends each instruction.

``split_sass`` and ``split_amd`` map each kernel's mangled name to its piece of a raw or normalised
text, in order of appearance. A SASS piece runs from its ``Function :`` line to the line before the
next one. An AMD piece runs from the section switch (``.text``/``.section ...``) directly before
the kernel's symbol directives (when there is one directly before them) or else its first
``.protected``/``.globl`` line, through its ``.size NAME, ...`` line, and so holds its code and its
``.amdhsa_kernel`` descriptor. Only functions with an ``.amdhsa_kernel`` descriptor are kernels.
A piece alone assembles with ``llvm-mc -mcpu=gfx1100`` (the ``-mcpu`` flag stands in for the
``.amdgcn_target`` line), but a piece that starts at ``.protected`` then lands in the default
``.text`` section; ``standalone_amd_kernel`` prepends the file's ``.amdgcn_target`` line and the
section in effect where the piece starts, so that the piece assembles as in the full file.
References to ``__constant__``/``__device__`` variables stay undefined symbols there.
"""

from __future__ import annotations

import re

_SASS_ENCODING = re.compile(r"/\*\s*0x[0-9a-fA-F]+\s*\*/")
_SASS_DROPPED_LINE = re.compile(r"(?:code for sm_\w+|\.target\s+sm_\w+|\.headerflags\b.*|\.{3,})")
_SASS_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
_SASS_INSTRUCTION = re.compile(r"^/\*([0-9a-fA-F]+)\*/\s*(.*?)\s*;?$")
_SASS_SELF_BRANCH = re.compile(r"BRA\s+(0x[0-9a-fA-F]+)")


def _is_sass_padding(line: str) -> bool:
    """True for a normalised ``NOP`` line or an unpredicated branch to its own address."""
    m = _SASS_INSTRUCTION.match(line)
    if not m:
        return False
    body = m.group(2)
    if body == "NOP":
        return True
    b = _SASS_SELF_BRANCH.fullmatch(body)
    return b is not None and int(b.group(1), 16) == int(m.group(1), 16)


def _drop_sass_padding(lines: list[str]) -> list[str]:
    """Drop trailing padding instructions from one function's normalised lines."""
    end = len(lines)
    while end and _is_sass_padding(lines[end - 1]):
        end -= 1
    return lines[:end]


def normalize_sass(text: str) -> str:
    """Normalised ``cuobjdump -sass`` text (see the module docstring for what is removed)."""
    out: list[str] = []
    function: list[str] = []
    for raw in text.splitlines():
        line = " ".join(_SASS_ENCODING.sub(" ", raw).split())
        if not line or _SASS_DROPPED_LINE.fullmatch(line):
            continue
        if _SASS_FUNCTION.match(line):
            out += _drop_sass_padding(function)
            function = []
        function.append(line)
    out += _drop_sass_padding(function)
    return "".join(line + "\n" for line in out)


def split_sass(text: str) -> dict[str, str]:
    """Mangled kernel name -> its ``Function :`` section of raw or normalised SASS text.

    Raises ValueError if a name occurs twice (e.g. a dump holding several architectures).
    """
    lines = text.splitlines(keepends=True)
    starts = [(i, m.group(1)) for i, line in enumerate(lines) if (m := _SASS_FUNCTION.match(line))]
    pieces: dict[str, str] = {}
    for k, (start, name) in enumerate(starts):
        if name in pieces:
            raise ValueError(f"function {name} occurs twice")
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        pieces[name] = "".join(lines[start:end])
    return pieces
