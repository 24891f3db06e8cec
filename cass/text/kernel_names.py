"""Kernel names: the unqualified name in an Itanium-mangled name, and CUDA/HIP kernels paired by name.

``kernel_base_name`` takes the unqualified name out of an Itanium-mangled name, ``match_kernels``
pairs CUDA and HIP kernels (by mangled name, else by a base name unique on both sides: vector types
such as ``float2`` mangle differently in HIP), and ``kernel_source`` finds a ``__global__``
function's full text in a CUDA or HIP source.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

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
