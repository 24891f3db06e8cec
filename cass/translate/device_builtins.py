"""CUDA device builtins that hipify-perl leaves as they are and HIP does not declare, written for AMD.

Each group is a block the repair rule ``cuda_device_builtins`` puts once at the top of a file that calls one of its
builtins (:func:`prelude`): guarded by its own macro (a header and the file including it may both get it), empty on
HIP's NVIDIA platform, whose headers are CUDA's own, and there only for the builtins HIP's runtime header lacks
(:attr:`cass.translate.names.CudaHipNames.device_builtins`, derived from the toolchain):

* ``CASS_NV_ATOMIC``: CUDA 12.8's ``__nv_atomic_*`` builtins (loads, stores, exchanges, compare-exchanges, the
  read-modify-write operations with and without the old value, the fence) over clang's ``__hip_atomic_*`` builtins.
  CUDA's orders and scopes keep CUDA's names and numbers (``__NV_ATOMIC_RELAXED`` ... ``__NV_ATOMIC_SEQ_CST`` are 0 to
  5, as C++'s ``__ATOMIC_*`` are; ``__NV_THREAD_SCOPE_THREAD`` ... ``__NV_THREAD_SCOPE_SYSTEM`` 0 to 4), so a scope
  held in a variable means what it means in CUDA; each function takes a scope to HIP's memory scope: thread -> single
  thread, block -> work-group, cluster and device -> agent (an AMD device has no clusters; nvcc itself takes a
  cluster as the device below sm_90, warning 20302), system -> system; an omitted scope is the system, as in CUDA. A
  weak compare-exchange is a strong one (allowed: weak may only fail more often), and the fence is a system-wide one
  of the given order (at least as strong as CUDA's at any scope). Where a header already defines the orders or
  scopes as macros, the block leaves them to it.
* ``CASS_CACHE_HINTS``: the cache-hinted loads (``__ldcg``, ``__ldca``, ``__ldcs``, ``__ldlu``) and stores
  (``__stwb``, ``__stcg``, ``__stcs``, ``__stwt``): a hint names where a value is cached, never which value is read
  or written, so each is a plain load or store of any type. ``__ldcv`` (no cached copy may be used: a volatile read)
  is left out.
* ``CASS_DP4A``: ``__dp4a``, the four-way dot product of bytes added to an accumulator, signed for ``int`` and
  ``char4``, unsigned for ``unsigned int`` and ``uchar4``, wrapping as CUDA's does.

Every definition is a function template, so a project's own non-template definition of a builtin (an AMD fallback
it wrote itself) is preferred to it, never a redefinition; a builtin the file itself defines as a macro is left out of
its block.
"""

from __future__ import annotations

import re

from cass.translate.ctext import find_heads
from toolchains.amd import NV_ATOMIC_OPERATIONS

_SCOPE_PARAM = "int scope = __NV_THREAD_SCOPE_SYSTEM"

NV_ATOMIC_ENUMS = """#ifndef __NV_ATOMIC_RELAXED
enum { __NV_ATOMIC_RELAXED, __NV_ATOMIC_CONSUME, __NV_ATOMIC_ACQUIRE, __NV_ATOMIC_RELEASE, __NV_ATOMIC_ACQ_REL,
       __NV_ATOMIC_SEQ_CST };
#endif
#ifndef __NV_THREAD_SCOPE_THREAD
enum { __NV_THREAD_SCOPE_THREAD, __NV_THREAD_SCOPE_BLOCK, __NV_THREAD_SCOPE_CLUSTER, __NV_THREAD_SCOPE_DEVICE,
       __NV_THREAD_SCOPE_SYSTEM };
#endif
static_assert(__ATOMIC_RELAXED == 0 && __ATOMIC_CONSUME == 1 && __ATOMIC_ACQUIRE == 2 && __ATOMIC_RELEASE == 3 &&
              __ATOMIC_ACQ_REL == 4 && __ATOMIC_SEQ_CST == 5, "CUDA's atomic orders are C++'s");
__device__ inline constexpr int cass_nv_scope(int scope) {
  return scope == __NV_THREAD_SCOPE_THREAD ? __HIP_MEMORY_SCOPE_SINGLETHREAD
       : scope == __NV_THREAD_SCOPE_BLOCK ? __HIP_MEMORY_SCOPE_WORKGROUP
       : scope == __NV_THREAD_SCOPE_SYSTEM ? __HIP_MEMORY_SCOPE_SYSTEM : __HIP_MEMORY_SCOPE_AGENT;
}
"""
"""CUDA's orders and scopes as CUDA's header declares them (the orders numbered as C++'s), and CUDA's scope as the
memory scope clang's ``__hip_atomic_*`` builtins take."""


def _function(signature: str, body: str) -> str:
    return f"{signature} {{ {body} }}\n"


_TEMPLATE = "template <class = void> __device__ inline"
_TEMPLATE_T = "template <class T> __device__ inline"
_TEMPLATE_TU = "template <class T, class U> __device__ inline"
_TEMPLATE_TUV = "template <class T, class U, class V> __device__ inline"

NV_ATOMICS: dict[str, str] = {
    "__nv_atomic_load_n": _function(f"{_TEMPLATE_T} T __nv_atomic_load_n(T* p, int order, {_SCOPE_PARAM})",
                                    "return __hip_atomic_load(p, order, cass_nv_scope(scope));"),
    "__nv_atomic_load": _function(f"{_TEMPLATE_TU} void __nv_atomic_load(T* p, U* ret, int order, {_SCOPE_PARAM})",
                                  "*ret = __hip_atomic_load(p, order, cass_nv_scope(scope));"),
    "__nv_atomic_store_n": _function(
        f"{_TEMPLATE_TU} void __nv_atomic_store_n(T* p, U value, int order, {_SCOPE_PARAM})",
        "__hip_atomic_store(p, (T)value, order, cass_nv_scope(scope));"),
    "__nv_atomic_store": _function(
        f"{_TEMPLATE_TU} void __nv_atomic_store(T* p, U* value, int order, {_SCOPE_PARAM})",
        "__hip_atomic_store(p, (T)*value, order, cass_nv_scope(scope));"),
    "__nv_atomic_exchange_n": _function(
        f"{_TEMPLATE_TU} T __nv_atomic_exchange_n(T* p, U value, int order, {_SCOPE_PARAM})",
        "return __hip_atomic_exchange(p, (T)value, order, cass_nv_scope(scope));"),
    "__nv_atomic_exchange": _function(
        f"{_TEMPLATE_TUV} void __nv_atomic_exchange(T* p, U* value, V* ret, int order, {_SCOPE_PARAM})",
        "*ret = __hip_atomic_exchange(p, (T)*value, order, cass_nv_scope(scope));"),
    "__nv_atomic_compare_exchange_n": _function(
        f"{_TEMPLATE_TU} bool __nv_atomic_compare_exchange_n(T* p, T* expected, U desired, bool weak, int success, "
        f"int failure, {_SCOPE_PARAM})",
        "(void)weak; return __hip_atomic_compare_exchange_strong(p, expected, (T)desired, success, failure, "
        "cass_nv_scope(scope));"),
    "__nv_atomic_compare_exchange": _function(
        f"{_TEMPLATE_T} bool __nv_atomic_compare_exchange(T* p, T* expected, T* desired, bool weak, int success, "
        f"int failure, {_SCOPE_PARAM})",
        "(void)weak; return __hip_atomic_compare_exchange_strong(p, expected, *desired, success, failure, "
        "cass_nv_scope(scope));"),
    "__nv_atomic_thread_fence": _function(f"{_TEMPLATE} void __nv_atomic_thread_fence(int order, {_SCOPE_PARAM})",
                                          "(void)scope; __atomic_thread_fence(order);"),
    **{f"__nv_atomic_fetch_{op}": _function(
        f"{_TEMPLATE_TU} T __nv_atomic_fetch_{op}(T* p, U value, int order, {_SCOPE_PARAM})",
        f"return __hip_atomic_fetch_{op}(p, (T)value, order, cass_nv_scope(scope));") for op in NV_ATOMIC_OPERATIONS},
    **{f"__nv_atomic_{op}": _function(
        f"{_TEMPLATE_TU} void __nv_atomic_{op}(T* p, U value, int order, {_SCOPE_PARAM})",
        f"(void)__hip_atomic_fetch_{op}(p, (T)value, order, cass_nv_scope(scope));") for op in NV_ATOMIC_OPERATIONS},
}

CACHE_HINTS: dict[str, str] = {
    **{name: _function(f"{_TEMPLATE_T} T {name}(const T* p)", "return *p;")
       for name in ("__ldcg", "__ldca", "__ldcs", "__ldlu")},
    **{name: _function(f"{_TEMPLATE_TU} void {name}(T* p, U value)", "*p = value;")
       for name in ("__stwb", "__stcg", "__stcs", "__stwt")},
}

DP4A = """template <class = void> __device__ inline int __dp4a(int a, int b, int c) {
  unsigned int sum = (unsigned int)c;
  for (int i = 0; i < 32; i += 8) sum += (unsigned int)((int)(signed char)(a >> i) * (int)(signed char)(b >> i));
  return (int)sum;
}
template <class = void> __device__ inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
  for (int i = 0; i < 32; i += 8) c += ((a >> i) & 0xffu) * ((b >> i) & 0xffu);
  return c;
}
template <class = void> __device__ inline int __dp4a(char4 a, char4 b, int c) {
  int x, y;
  __builtin_memcpy(&x, &a, 4);
  __builtin_memcpy(&y, &b, 4);
  return __dp4a(x, y, c);
}
template <class = void> __device__ inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) {
  unsigned int x, y;
  __builtin_memcpy(&x, &a, 4);
  __builtin_memcpy(&y, &b, 4);
  return __dp4a(x, y, c);
}
"""

GROUPS: dict[str, tuple[str, dict[str, str]]] = {
    "CASS_NV_ATOMIC": (NV_ATOMIC_ENUMS, NV_ATOMICS),
    "CASS_CACHE_HINTS": ("", CACHE_HINTS),
    "CASS_DP4A": ("", {"__dp4a": DP4A}),
}
"""Guard macro -> (what the group's definitions share, each builtin's definitions)."""

DEFINED = frozenset(name for _, definitions in GROUPS.values() for name in definitions)


def prelude(guard: str, lacking: frozenset[str]) -> str:
    """The block of group ``guard``: its definitions of the builtins of ``lacking``, for AMD only."""
    shared, definitions = GROUPS[guard]
    body = "".join(text for name, text in sorted(definitions.items()) if name in lacking)
    return (f"#ifndef {guard}\n#define {guard}\n#if !defined(__HIP_PLATFORM_NVIDIA__)\n#include <hip/hip_runtime.h>\n"
            f"{shared}{body}#endif\n#endif\n")


def called(text: str, names: frozenset[str]) -> bool:
    """Whether ``text`` calls one of ``names`` (outside comments and literals: :func:`find_heads`)."""
    return bool(names) and bool(find_heads(text, rf"(?<![\w.>:])(?:{'|'.join(sorted(names))})\s*\("))


def macros(text: str, names: frozenset[str]) -> frozenset[str]:
    """The names of ``names`` that ``text`` defines as macros."""
    if not names:
        return frozenset()
    pattern = rf"^[ \t]*#[ \t]*define[ \t]+({'|'.join(sorted(names))})\b"
    return frozenset(re.findall(pattern, text, re.M))


def add_definitions(text: str, lacking: frozenset[str]) -> str:
    """``text`` with, at its top, the block of every group one of whose ``lacking`` builtins it calls (once), without
    the builtins it defines as macros."""
    lacking -= macros(text, lacking)
    blocks = [prelude(guard, lacking) for guard, (_, definitions) in GROUPS.items()
              if f"#define {guard}\n" not in text and called(text, lacking & definitions.keys())]
    return "".join(blocks) + text
