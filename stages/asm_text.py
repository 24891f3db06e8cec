"""Normalising, splitting and matching the device assembly of the exported pairs.

Pure text functions (no I/O, no external tools), deterministic: the same input always gives the
same output. Both normalisers are idempotent and end every line they return with ``\n``.

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

``kernel_base_name`` takes the unqualified name out of an Itanium-mangled name, ``match_kernels``
pairs CUDA and HIP kernels (by mangled name, else by a base name unique on both sides: vector types
such as ``float2`` mangle differently in HIP), and ``kernel_source`` finds a ``__global__``
function's full text in a CUDA or HIP source.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = [
    "kernel_base_name",
    "kernel_source",
    "match_kernels",
    "normalize_amd",
    "normalize_sass",
    "split_amd",
    "split_sass",
    "standalone_amd_kernel",
]

# ---------------------------------------------------------------------------------------- SASS

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


# ----------------------------------------------------------------------------------------- AMD

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


# ------------------------------------------------------------------------------ mangled names

_ITANIUM_SUBSTITUTION = re.compile(r"S[0-9A-Z]*_|S[tabsiod]")
_ITANIUM_SKIPPED = re.compile(r"S[0-9A-Z]*_|S[tabsiod]|T[0-9]*_|Dv[0-9]+_")


class _Demangle(ValueError):
    """The name is outside the subset of the Itanium grammar that ``kernel_base_name`` reads."""


def _source_name(s: str, i: int) -> tuple[str, int]:
    """Reads ``<length><identifier>`` at ``i``."""
    m = re.compile(r"[1-9][0-9]*").match(s, i)
    if not m:
        raise _Demangle(s)
    end = m.end() + int(m.group(0))
    if end > len(s):
        raise _Demangle(s)
    return s[m.end() : end], end


def _skip_template_args(s: str, i: int) -> int:
    """Index after the ``I ... E`` template argument list that starts at ``i``."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c.isdigit():
            i = _source_name(s, i)[1]
            continue
        if c == "L":  # literal: L <type> <value> E, or L _Z <encoding> E
            if s.startswith("_Z", i + 1):
                depth += 1
                i += 3
                continue
            i += 1
            if i < len(s) and s[i].isdigit():
                i = _source_name(s, i)[1]
            elif s.startswith("D", i):
                i += 2
            else:
                i += 1
            m = re.compile(r"n?[0-9a-f_.]*E").match(s, i)  # decimal integer or lowercase-hex float
            if not m:
                raise _Demangle(s)
            i = m.end()
            continue
        if c in "INXJ":
            depth += 1
        elif c == "E":
            depth -= 1
            if depth == 0:
                return i + 1
            if depth < 0:
                raise _Demangle(s)
        elif c in "STD" and (m := _ITANIUM_SKIPPED.match(s, i)):  # substitution, template param, vector
            i = m.end()
            continue
        elif c == "D":
            i += 2
            continue
        i += 1
    raise _Demangle(s)


def _unqualified_name(s: str, i: int) -> tuple[str, int]:
    """Reads an unqualified name (source name plus optional ABI tags) at ``i``."""
    name, i = _source_name(s, i)
    while s.startswith("B", i):  # ABI tag, e.g. B5cxx11
        i = _source_name(s, i + 1)[1]
    return name, i


def kernel_base_name(mangled: str) -> str:
    """Unqualified function name of an Itanium-mangled name, without namespaces or template args.

    ``_Z17count_twin_primesPKjiPj`` -> ``count_twin_primes``, ``_ZN3ltk4blas4gemmEPf`` -> ``gemm``,
    ``_Z6kernelIfEvPT_i`` -> ``kernel``, ``_ZL6kernelPf`` (static) -> ``kernel``. A name that is not
    mangled (``extern "C"``), or that this small reader does not understand (operators,
    constructors, local entities), is returned unchanged.
    """
    if not mangled.startswith("_Z"):
        return mangled
    s = mangled
    i = 2
    try:
        if s.startswith("L", i):  # internal linkage
            i += 1
        if not s.startswith("N", i):
            return _unqualified_name(s, i)[0]
        i += 1
        while i < len(s) and s[i] in "rVKRO":  # cv- and ref-qualifiers of member functions
            i += 1
        last: str | None = None
        while i < len(s) and s[i] != "E":
            c = s[i]
            if c.isdigit():
                last, i = _unqualified_name(s, i)
            elif c == "I":
                i = _skip_template_args(s, i)
            elif c == "S" and (m := _ITANIUM_SUBSTITUTION.match(s, i)):
                i = m.end()
            elif c == "L":
                i += 1
            else:
                raise _Demangle(s)
        if last is None or i >= len(s):
            raise _Demangle(s)
        return last
    except _Demangle:
        return mangled


def match_kernels(cuda_names: Iterable[str], hip_names: Iterable[str]) -> dict[str, str]:
    """CUDA mangled kernel name -> mangled name of the same kernel on the HIP side.

    Equal mangled names are paired first. The rest are paired by ``kernel_base_name`` where that
    name belongs to exactly one unpaired kernel on each side: a vector type in the signature
    mangles differently (CUDA ``float2`` is ``6float2``, HIP's is ``15HIP_vector_typeIfLj2EE``).
    Kernels left ambiguous or alone are left out. Keys follow the order of ``cuda_names``.
    """
    cuda, hip = list(cuda_names), list(hip_names)
    hip_set = set(hip)
    pairs = {name: name for name in cuda if name in hip_set}
    rest_cuda = [name for name in cuda if name not in pairs]
    rest_hip = [name for name in hip if name not in pairs]
    by_base_cuda: dict[str, list[str]] = {}
    by_base_hip: dict[str, list[str]] = {}
    for name in rest_cuda:
        by_base_cuda.setdefault(kernel_base_name(name), []).append(name)
    for name in rest_hip:
        by_base_hip.setdefault(kernel_base_name(name), []).append(name)
    for base, names in by_base_cuda.items():
        if len(names) == 1 and len(by_base_hip.get(base, ())) == 1:
            pairs[names[0]] = by_base_hip[base][0]
    return {name: pairs[name] for name in cuda if name in pairs}


# ------------------------------------------------------------------------------- CUDA source


@functools.lru_cache(maxsize=4)
def _mask_source(source: str) -> str:
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


def _match_close(masked: str, i: int, open_c: str, close_c: str) -> int | None:
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
_TEMPLATE = re.compile(r"\btemplate\b")


def kernel_source(source: str, name: str) -> str | None:
    """Text of the ``__global__`` function ``name`` in a CUDA or HIP source, or None.

    ``name`` is the plain function name (a mangled name is reduced with ``kernel_base_name``).
    The text runs from the start of the line where the declaration begins (its ``template <...>``
    line if it has one; attributes, ``__launch_bounds__(...)``, ``extern "C"`` or a return type on
    an earlier line belong to the declaration; if other code precedes the declaration on that line,
    from its first token) to the brace closing its body, comments, string/char literals and
    preprocessor lines skipped when matching brackets. Declarations without a body are ignored; with
    several definitions (overloads, specialisations) the first in the source is returned.
    """
    name = kernel_base_name(name)
    masked = _mask_source(source)
    pattern = re.compile(rf"(?<![\w~])\b{re.escape(name)}\s*(?:<[^;{{}}()]*>\s*)?\(")
    for m in pattern.finditer(masked):
        head_start = max(masked.rfind(c, 0, m.start()) for c in ";{}") + 1
        head = masked[head_start : m.start()]
        if not _GLOBAL.search(head) or re.search(r"(?:::|\.|->)\s*$", head):
            continue
        close = _match_close(masked, m.end() - 1, "(", ")")
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
        end = _match_close(masked, j, "{", "}")
        if end is None:
            continue
        template = _TEMPLATE.search(head)
        first = head_start + (template.start() if template else len(head) - len(head.lstrip()))
        start = source.rfind("\n", 0, first) + 1
        if masked[start:first].strip():  # other code before it on its line, e.g. extern "C" {
            start = first
        return source[start : end + 1]
    return None


# -- CUDA host assembly: nvcc's registration boilerplate ----------------------------------------------

_REGISTRATION = re.compile(r"__cudaUnregisterBinaryUtil|__sti____cudaRegisterAll|__nv_cudaEntityRegisterCallback|"
                           r"__nv_save_fatbinhandle_for_managed_rt|__nv_init_managed_rt|__nv_inited_managed_rt|"
                           r"__nv_fatbinhandle_for_managed_rt|__fatDeviceText|__cudaFatCubinHandle")
_TYPE = re.compile(r"^\s*\.type\s+([^,\s]+),\s*@(?:function|object)")
_SIZE = re.compile(r"^\s*\.size\s+([^,\s]+),")
_SYMBOL_DATA = re.compile(r"^\s*\.(?:local|comm|globl|weak|hidden)\s+([^,\s]+)")


def strip_host_registration(text: str) -> str:
    """CUDA host assembly without the registration code nvcc adds to every file.

    Removed: the functions and objects whose names are nvcc's registration machinery
    (``__sti____cudaRegisterAll``, ``__cudaUnregisterBinaryUtil``, ``__nv_cudaEntityRegisterCallback``,
    the managed-runtime helpers, ``__fatDeviceText``, ``__cudaFatCubinHandle``), each from its
    ``.type`` line to its ``.size`` line (an object's data lines after ``.size`` up to the next
    directive that is not data), their ``.local``/``.comm`` lines, and the ``.init_array`` entry
    that calls the registration function. Kernel stubs and host code are kept."""
    lines = text.splitlines()
    keep: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        typed = _TYPE.match(line)
        if typed and _REGISTRATION.search(typed.group(1)):
            name = typed.group(1)
            j = i + 1
            while j < len(lines) and not (_SIZE.match(lines[j]) and _SIZE.match(lines[j]).group(1) == name):
                j += 1
            j += 1
            if "@object" in line:  # the object's label and data follow its .size line
                while j < len(lines) and (lines[j].startswith(name + ":") or
                                          re.match(r"^\s*\.(?:long|quad|byte|short|zero|value)\b", lines[j])):
                    j += 1
            i = j
            continue
        symbol = _SYMBOL_DATA.match(line)
        if symbol and _REGISTRATION.search(symbol.group(1)):
            i += 1
            continue
        if re.match(r"^\s*\.section\s+\.init_array\b", line):
            j = i + 1
            while j < len(lines) and re.match(r"^\s*\.(?:align|p2align|quad)\b", lines[j]):
                j += 1
            entries = [b for b in lines[i + 1:j] if ".quad" in b]
            if entries and all(_REGISTRATION.search(b) for b in entries):
                i = j
                continue
        keep.append(line)
        i += 1
    return "\n".join(keep) + ("\n" if text.endswith("\n") else "")
