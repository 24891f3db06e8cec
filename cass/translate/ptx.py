"""PTX inline assembly idioms of real CUDA code, as the C++ they stand for.

CUDA code embeds PTX with ``asm("..." : outputs : inputs)`` for things the language did not
offer: lane ids, multiprocessor ids and lane masks, bit-field extract and insert, loads and stores with cache hints.
AMD compilers cannot assemble PTX. Each idiom below is rewritten to an expression with the same
value on every input PTX defines it for (the PTX ISA's definitions). Loads and stores are
translated only for integer registers (``r``, ``l``, ``h`` constraints with ``.u``/``.s``/``.b``
types) and the cache hints ``.cs``, ``.nc``, ``.ca``, ``.cg``, ``.lu``, ``.cv``, ``.wb``, ``.wt``,
which change no value a correct program reads; an ``asm volatile``, a ``"memory"`` clobber or a
``.cv`` load (fetch again) becomes a ``volatile`` access, so the compiler can neither drop nor hoist
it. Memory-model qualifiers (``.relaxed``, ``.acquire``, ...), other registers and anything else
are left as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from cass.translate.ctext import find_heads
from toolchains.headers import split_top_level

ASM_HEAD = r"(?<![\w.])(?:asm|__asm__|__asm)(\s+(?:volatile|__volatile__))?\s*\("
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_OPERAND = re.compile(r'^\s*"([^"]*)"\s*\((.*)\)\s*$', re.S)
INTEGER_CONSTRAINTS = {"r", "l", "h", "=r", "=l", "=h"}
C_TYPES = {"u8": "unsigned char", "u16": "unsigned short", "u32": "unsigned int", "u64": "unsigned long long",
           "s8": "signed char", "s16": "short", "s32": "int", "s64": "long long", "b8": "unsigned char",
           "b16": "unsigned short", "b32": "unsigned int", "b64": "unsigned long long"}
_TYPE = r"(u8|u16|u32|u64|s8|s16|s32|s64|b8|b16|b32|b64)"
_REGS = r"\{?\s*(%\d+(?:\s*,\s*%\d+)*)\s*\}?"
_ADDRESS = r"\[\s*%(\d+)\s*(?:\+\s*(\d+))?\s*\]"
_HINTS = r"((?:\.(?:cs|nc|ca|cg|lu|cv|wb|wt))*)"
_LOAD = re.compile(rf"^ld(?:\.global)?{_HINTS}\.(?:v([24])\.)?{_TYPE}\s+{_REGS}\s*,\s*{_ADDRESS}\s*;?$")
_STORE = re.compile(rf"^st(?:\.global)?{_HINTS}\.(?:v([24])\.)?{_TYPE}\s+{_ADDRESS}\s*,\s*{_REGS}\s*;?$")
SPECIAL_REGISTERS = {
    "smid": "__smid()", "laneid": "__lane_id()", "lanemask_lt": "(unsigned)__lanemask_lt()",
    "lanemask_gt": "(unsigned)__lanemask_gt()", "lanemask_le": "(unsigned)(__lanemask_lt() | __lanemask_eq())",
    "lanemask_ge": "(unsigned)~__lanemask_lt()",
}
"""PTX special registers as the device functions of HIP's AMD platform (HIP's NVIDIA platform has none); all but
``%smid`` count lanes."""
_SPECIAL_MOVE = re.compile(r"mov\.u32 %0, %(smid|laneid|lanemask_(?:lt|le|gt|ge));?")
BFE = {
    32: "({{ unsigned __v = {0}, __p = ({1}) & 0xff, __l = ({2}) & 0xff; "
        "(__p >= 32 || __l == 0) ? 0u : (__v >> __p) & (__l >= 32 ? ~0u : (1u << __l) - 1u); }})",
    64: "({{ unsigned long long __v = {0}; unsigned __p = ({1}) & 0xff, __l = ({2}) & 0xff; "
        "(__p >= 64 || __l == 0) ? 0ull : (__v >> __p) & (__l >= 64 ? ~0ull : (1ull << __l) - 1ull); }})",
}
"""PTX ``bfe.u32``/``bfe.u64``: position and length use their low 8 bits; a zero length or a
position past the top gives 0; bits past the top are zero."""
BFI = ("({{ unsigned __a = {0}, __b = {1}, __p = ({2}) & 0xff, __l = ({3}) & 0xff; "
       "unsigned __m = (__p >= 32 || __l == 0) ? 0u : (__l >= 32 ? ~0u : (1u << __l) - 1u) << __p; "
       "__m ? (__b & ~__m) | ((__a << __p) & __m) : __b; }})")
"""PTX ``bfi.b32 f, a, b, pos, len``: ``b`` with the field at ``pos`` of width ``len`` taken from
``a`` (truncated at bit 31); a zero length or a position past the top gives ``b``."""


@dataclass(frozen=True)
class AsmStatement:
    """One ``asm`` statement: its template, operand expressions, and whether the compiler must
    keep its memory accesses (``volatile`` or a ``"memory"`` clobber)."""

    template: str
    outputs: list[str]
    inputs: list[str]
    volatile: bool = False


def _template(text: str, macros: dict[str, str]) -> str | None:
    """The asm template: its string literals (and string macros of the file) joined."""
    pieces, rest = [], text.strip()
    while rest:
        if m := _STRING.match(rest):
            pieces.append(m.group(1))
        elif (m := re.match(r"[A-Za-z_]\w*", rest)) and m.group(0) in macros:
            pieces.append(macros[m.group(0)])
        else:
            return None
        rest = rest[m.end():].lstrip()
    return re.sub(r"\s+", " ", "".join(pieces).replace("\\n", " ").replace("\\t", " ")).strip()


def _operands(text: str) -> list[str] | None:
    """The expressions of ``"constraint"(expr), ...`` operands (None if one does not parse or
    is no integer register)."""
    if not text.strip():
        return []
    found = []
    for part in split_top_level(text, "([{", ")]}"):
        m = _OPERAND.match(part)
        if m is None or m.group(1).strip() not in INTEGER_CONSTRAINTS:
            return None
        found.append(m.group(2).strip())
    return found


def translate(statement: AsmStatement, lanes: bool = True) -> str | None:
    """The C++ expression an asm statement stands for, or None if it is no known idiom (or names
    operands it does not have); ``lanes``: translate lane ids and masks."""
    try:
        return _translate(statement, lanes)
    except IndexError:
        return None


def _translate(statement: AsmStatement, lanes: bool) -> str | None:
    t, outs, ins = statement.template, statement.outputs, statement.inputs
    ops = [*outs, *ins]

    def op(ref: str) -> str:
        return f"({ops[int(ref.strip().lstrip('%'))]})"

    if m := _SPECIAL_MOVE.fullmatch(t.replace("%%", "%")):
        return f"({outs[0]} = {SPECIAL_REGISTERS[m.group(1)]})" if lanes or m.group(1) == "smid" else None
    if m := re.fullmatch(r"bfe\.u(32|64) %0, %1, %2, %3;?", t):
        return f"({outs[0]} = {BFE[int(m.group(1))].format(op('1'), op('2'), op('3'))})"
    if re.fullmatch(r"bfi\.b32 %0, %1, %2, %3, %4;?", t):
        return f"({outs[0]} = {BFI.format(op('1'), op('2'), op('3'), op('4'))})"
    if m := _LOAD.match(t):
        hints, width, ptype, regs, addr, offset = m.groups()
        regs = re.findall(r"%\d+", regs)
        if len(regs) != int(width or 1) or any(int(r[1:]) >= len(outs) for r in regs):
            return None
        qualifier = "volatile " if statement.volatile or ".cv" in hints else ""
        base = f"((const {qualifier}{C_TYPES[ptype]} *)((const char *){op(addr)} + {offset or 0}))"
        return "(" + ", ".join(f"{outs[int(r[1:])]} = {base}[{i}]" for i, r in enumerate(regs)) + ")"
    if m := _STORE.match(t):
        _, width, ptype, addr, offset, regs = m.groups()
        regs = re.findall(r"%\d+", regs)
        if len(regs) != int(width or 1):
            return None
        ctype = C_TYPES[ptype]
        base = f"(({'volatile ' if statement.volatile else ''}{ctype} *)((char *){op(addr)} + {offset or 0}))"
        return "(" + ", ".join(f"{base}[{i}] = ({ctype}){op(r)}" for i, r in enumerate(regs)) + ")"
    return None


def rewrite_asm(text: str, lanes: bool = True, amd_only: Callable[[str, str], str] | None = None) -> str:
    """``text`` with every asm statement of a known PTX idiom replaced by its C++ expression;
    ``lanes``: lane ids and masks too (only where a wavefront has a warp's 32 lanes); ``amd_only(asm statement,
    expression)``: what stands for a special register's expression (:data:`SPECIAL_REGISTERS`; default: the
    expression)."""
    if "asm" not in text:
        return text
    macros = dict(re.findall(r'^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+"([^"\\\n]*)"[ \t]*$', text, re.M)[::-1])
    out, pos = [], 0
    for call in find_heads(text, ASM_HEAD, separator=":"):
        if call.start < pos or not 2 <= len(call.args) <= 4:
            continue
        parts = [text[s:e] for s, e in call.args]
        template = _template(parts[0], macros)
        outputs, inputs = _operands(parts[1]), _operands(parts[2] if len(parts) > 2 else "")
        if template is None or outputs is None or inputs is None:
            continue
        volatile = "volatile" in text[call.start:call.args[0][0]] or (len(parts) > 3 and '"memory"' in parts[3])
        new = translate(AsmStatement(template, outputs, inputs, volatile), lanes)
        if new is not None and amd_only is not None and _SPECIAL_MOVE.fullmatch(template.replace("%%", "%")):
            new = amd_only(text[call.start:call.end], new)
        if new is not None:
            out += [text[pos:call.start], new]
            pos = call.end
    return "".join(out) + text[pos:]
