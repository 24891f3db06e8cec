"""AMD GPU assembly text (``hipcc --cuda-device-only -S``): normalising it and splitting it per kernel.

Pure text functions (no I/O, no external tools), deterministic: the same input always gives the
same output. The normaliser is idempotent and ends every line it returns with ``\n``.

``normalize_amd`` (``hipcc --cuda-device-only -S`` output for gfx1100, clang 17) removes only what
the assembler ignores, so the result assembles to the same object as the input:

* ``;`` comments: everything from the first ``;`` that is not inside a ``"..."`` string literal to
  the end of the line (this drops the ``; %bb.N:`` block comments, the ``; -- Begin function``
  markers and the ``; Kernel info:`` statistics);
* trailing whitespace and blank (or comment-only) lines;
* leading whitespace: an indented line starts with exactly one tab; a line at column 0 (labels)
  stays there.

Inside the ``.amdgpu_metadata`` ... ``.end_amdgpu_metadata`` block (YAML, where indentation is
structure) lines are kept verbatim except for trailing whitespace and blank lines; no comment is
removed there. Every instruction, label and directive is kept, including ``.amdhsa_kernel``
descriptors, ``.section``/``.text`` switches, ``.p2align``, ``.size``, ``.type``, ``.ident`` and
the metadata. Whitespace inside a line is not touched. (On the 44 exported rows the normalised text
assembles with ``llvm-mc-17 -mcpu=gfx1100`` to an object byte-identical to the raw text's; with the
YAML indentation collapsed it does not assemble: "invalid HSA metadata".)

See :mod:`cass.text.sass` for how kernels are split (``split_amd``, ``standalone_amd_kernel``).
"""

from __future__ import annotations

import re

_AMD_METADATA_BEGIN = re.compile(r"^\s*\.amdgpu_metadata\s*(?:;.*)?$")
_AMD_METADATA_END = re.compile(r"^\s*\.end_amdgpu_metadata\s*(?:;.*)?$")


def _strip_amd_comment(line: str) -> str:
    """``line`` without its ``;`` comment; a ``;`` inside a ``"..."`` string is not a comment."""
    if ";" not in line:
        return line
    in_string = False
    i = 0
    while i < len(line):
        c = line[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c == ";":
            return line[:i]
        i += 1
    return line


def normalize_amd(text: str) -> str:
    """AMD device assembly without comments, blank lines and extra whitespace (see module docstring)."""
    out: list[str] = []
    in_metadata = False
    for raw in text.splitlines():
        if in_metadata and not _AMD_METADATA_END.match(raw):
            line = raw.rstrip()
            if line:
                out.append(line)
            continue
        line = _strip_amd_comment(raw).rstrip()
        if not line:
            continue
        body = line.lstrip()
        out.append(body if body == line else "\t" + body)
        if _AMD_METADATA_BEGIN.match(line):
            in_metadata = True
        elif _AMD_METADATA_END.match(line):
            in_metadata = False
    return "".join(line + "\n" for line in out)


_AMD_KERNEL = re.compile(r"^\s*\.amdhsa_kernel\s+([^\s;]+)")
_AMD_SECTION_SWITCH = re.compile(r"^\s*(?:\.text|\.data|\.bss|\.rodata|\.section\s+\S.*)\s*(?:;.*)?$")
_AMD_SYMBOL_DIRECTIVE = re.compile(r"^\s*\.(?:protected|globl|global|weak|hidden|p2align|align|type)\b")
_AMD_SYMBOL_START = re.compile(r"^\s*\.(?:protected|globl|global|weak|hidden)\s+([^\s,;]+)")
_AMD_TARGET = re.compile(r"^\s*\.(?:amdgcn_target|amdhsa_code_object_version)\b")


def _amd_kernel_bounds(lines: list[str]) -> dict[str, tuple[int, int]]:
    """Mangled kernel name -> (first line, one past the ``.size`` line) in ``lines``."""
    names = [m.group(1) for line in lines if (m := _AMD_KERNEL.match(line))]
    bounds: dict[str, tuple[int, int]] = {}
    for name in names:
        if name in bounds:
            raise ValueError(f"kernel {name} occurs twice")
        label = re.compile(rf"^{re.escape(name)}:")
        size = re.compile(rf"^\s*\.size\s+{re.escape(name)}\s*,")
        at = next((i for i, line in enumerate(lines) if label.match(line)), None)
        if at is None:
            raise ValueError(f"kernel {name} has no label")
        start = at
        while start > 0 and _AMD_SYMBOL_DIRECTIVE.match(lines[start - 1]):
            start -= 1
        if start > 0 and _AMD_SECTION_SWITCH.match(lines[start - 1]):
            start -= 1
        end = next((i for i in range(at, len(lines)) if size.match(lines[i])), None)
        if end is None:
            raise ValueError(f"kernel {name} has no .size line")
        bounds[name] = (start, end + 1)
    return bounds


def split_amd(text: str) -> dict[str, str]:
    """Mangled kernel name -> its contiguous piece of raw or normalised AMD device assembly.

    Only functions with an ``.amdhsa_kernel`` descriptor are included, in order of appearance.
    Raises ValueError if a kernel's label or ``.size`` line is missing or a kernel occurs twice.
    """
    lines = text.splitlines(keepends=True)
    return {name: "".join(lines[a:b]) for name, (a, b) in _amd_kernel_bounds(lines).items()}


def standalone_amd_kernel(piece: str, full_text: str) -> str:
    """``piece`` (from ``split_amd(full_text)``) made to assemble alone as it does in ``full_text``.

    Prepends the file's ``.amdgcn_target`` (and ``.amdhsa_code_object_version``) lines and, when the
    piece does not start with a section switch, the last section switch before it in ``full_text``.
    Raises ValueError if ``piece`` is not a piece of ``full_text``.
    """
    at = full_text.find(piece)
    if not piece or at < 0:
        raise ValueError("piece is not part of full_text")
    before = full_text[:at].splitlines()
    head = [line.strip() for line in before if _AMD_TARGET.match(line)]
    first = piece.splitlines()[0]
    if not _AMD_SECTION_SWITCH.match(first):
        section = next((line for line in reversed(before) if _AMD_SECTION_SWITCH.match(line)), None)
        if section is not None:
            head.append(_strip_amd_comment(section).strip())
    return "".join("\t" + line + "\n" for line in head) + piece
