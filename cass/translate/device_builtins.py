"""CUDA device builtins that hipify-perl leaves as they are and HIP does not declare, written for AMD.

Each group is a block the repair rule ``cuda_device_builtins`` puts once at the top of a file that calls one of its
builtins (:func:`prelude`): guarded by its own macro (a header and the file including it may both get it), empty on
HIP's NVIDIA platform, whose headers are CUDA's own, and there only for the builtins HIP's runtime header lacks
(:attr:`cass.translate.names.CudaHipNames.device_builtins`, derived from the toolchain):

* ``CASS_NV_ATOMIC``: CUDA 12.8's ``__nv_atomic_*`` builtins (loads, stores, exchanges, compare-exchanges, the
  read-modify-write operations with and without the old value, the fence) over clang's ``__hip_atomic_*`` builtins.
  CUDA's memory orders are C++'s (``__NV_ATOMIC_RELAXED`` ... ``__NV_ATOMIC_SEQ_CST``, numbered as ``__ATOMIC_*``),
  and its thread scopes become HIP's memory scopes: thread -> single thread, block -> work-group, cluster and device
  -> agent (a device has no clusters on AMD), system -> system; an omitted scope is the system, as in CUDA. A weak
  compare-exchange is a strong one (allowed: weak may only fail more often), and the fence is a system-wide one of
  the given order (at least as strong as CUDA's at any scope).
* ``CASS_CACHE_HINTS``: the cache-hinted loads (``__ldcg``, ``__ldca``, ``__ldcs``, ``__ldlu``) and stores
  (``__stwb``, ``__stcg``, ``__stcs``, ``__stwt``): a hint names where a value is cached, never which value is read
  or written, so each is a plain load or store of any type. ``__ldcv`` (no cached copy may be used: a volatile read)
  is left out.
* ``CASS_DP4A``: ``__dp4a``, the four-way dot product of bytes added to an accumulator, signed for ``int`` and
  ``char4``, unsigned for ``unsigned int`` and ``uchar4``, wrapping as CUDA's does.
"""

from __future__ import annotations

import re

from toolchains.amd import NV_ATOMIC_OPERATIONS

SYSTEM = "int scope = __NV_THREAD_SCOPE_SYSTEM"

NV_ATOMIC_ENUMS = """enum { __NV_ATOMIC_RELAXED = __ATOMIC_RELAXED, __NV_ATOMIC_CONSUME = __ATOMIC_CONSUME,
       __NV_ATOMIC_ACQUIRE = __ATOMIC_ACQUIRE, __NV_ATOMIC_RELEASE = __ATOMIC_RELEASE,
       __NV_ATOMIC_ACQ_REL = __ATOMIC_ACQ_REL, __NV_ATOMIC_SEQ_CST = __ATOMIC_SEQ_CST };
enum { __NV_THREAD_SCOPE_THREAD = __HIP_MEMORY_SCOPE_SINGLETHREAD,
       __NV_THREAD_SCOPE_BLOCK = __HIP_MEMORY_SCOPE_WORKGROUP,
       __NV_THREAD_SCOPE_CLUSTER = __HIP_MEMORY_SCOPE_AGENT, __NV_THREAD_SCOPE_DEVICE = __HIP_MEMORY_SCOPE_AGENT,
       __NV_THREAD_SCOPE_SYSTEM = __HIP_MEMORY_SCOPE_SYSTEM };
"""
"""CUDA's orders and scopes as the values clang's ``__hip_atomic_*`` builtins take."""


def _function(signature: str, body: str) -> str:
    return f"{signature} {{ {body} }}\n"


_TEMPLATE_T = "template <class T> __device__ inline"
_TEMPLATE_TU = "template <class T, class U> __device__ inline"

NV_ATOMICS: dict[str, str] = {
    "__nv_atomic_load_n": _function(f"{_TEMPLATE_T} T __nv_atomic_load_n(T* p, int order, {SYSTEM})",
                                    "return __hip_atomic_load(p, order, scope);"),
    "__nv_atomic_load": _function(f"{_TEMPLATE_T} void __nv_atomic_load(T* p, T* ret, int order, {SYSTEM})",
                                  "*ret = __hip_atomic_load(p, order, scope);"),
    "__nv_atomic_store_n": _function(f"{_TEMPLATE_TU} void __nv_atomic_store_n(T* p, U value, int order, {SYSTEM})",
                                     "__hip_atomic_store(p, (T)value, order, scope);"),
    "__nv_atomic_store": _function(f"{_TEMPLATE_T} void __nv_atomic_store(T* p, T* value, int order, {SYSTEM})",
                                   "__hip_atomic_store(p, *value, order, scope);"),
    "__nv_atomic_exchange_n": _function(
        f"{_TEMPLATE_TU} T __nv_atomic_exchange_n(T* p, U value, int order, {SYSTEM})",
        "return __hip_atomic_exchange(p, (T)value, order, scope);"),
    "__nv_atomic_exchange": _function(
        f"{_TEMPLATE_T} void __nv_atomic_exchange(T* p, T* value, T* ret, int order, {SYSTEM})",
        "*ret = __hip_atomic_exchange(p, *value, order, scope);"),
    "__nv_atomic_compare_exchange_n": _function(
        f"{_TEMPLATE_TU} bool __nv_atomic_compare_exchange_n(T* p, T* expected, U desired, bool weak, int success, "
        f"int failure, {SYSTEM})",
        "(void)weak; return __hip_atomic_compare_exchange_strong(p, expected, (T)desired, success, failure, scope);"),
    "__nv_atomic_compare_exchange": _function(
        f"{_TEMPLATE_T} bool __nv_atomic_compare_exchange(T* p, T* expected, T* desired, bool weak, int success, "
        f"int failure, {SYSTEM})",
        "(void)weak; return __hip_atomic_compare_exchange_strong(p, expected, *desired, success, failure, scope);"),
    "__nv_atomic_thread_fence": _function(f"__device__ inline void __nv_atomic_thread_fence(int order, {SYSTEM})",
                                          "(void)scope; __atomic_thread_fence(order);"),
    **{f"__nv_atomic_fetch_{op}": _function(
        f"{_TEMPLATE_TU} T __nv_atomic_fetch_{op}(T* p, U value, int order, {SYSTEM})",
        f"return __hip_atomic_fetch_{op}(p, (T)value, order, scope);") for op in NV_ATOMIC_OPERATIONS},
    **{f"__nv_atomic_{op}": _function(
        f"{_TEMPLATE_TU} void __nv_atomic_{op}(T* p, U value, int order, {SYSTEM})",
        f"(void)__hip_atomic_fetch_{op}(p, (T)value, order, scope);") for op in NV_ATOMIC_OPERATIONS},
}

CACHE_HINTS: dict[str, str] = {
    **{name: _function(f"{_TEMPLATE_T} T {name}(const T* p)", "return *p;")
       for name in ("__ldcg", "__ldca", "__ldcs", "__ldlu")},
    **{name: _function(f"{_TEMPLATE_TU} void {name}(T* p, U value)", "*p = value;")
       for name in ("__stwb", "__stcg", "__stcs", "__stwt")},
}

DP4A = """__device__ inline int __dp4a(int a, int b, int c) {
  unsigned int sum = (unsigned int)c;
  for (int i = 0; i < 32; i += 8) sum += (unsigned int)((int)(signed char)(a >> i) * (int)(signed char)(b >> i));
  return (int)sum;
}
__device__ inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
  for (int i = 0; i < 32; i += 8) c += ((a >> i) & 0xffu) * ((b >> i) & 0xffu);
  return c;
}
__device__ inline int __dp4a(char4 a, char4 b, int c) {
  int x, y;
  __builtin_memcpy(&x, &a, 4);
  __builtin_memcpy(&y, &b, 4);
  return __dp4a(x, y, c);
}
__device__ inline unsigned int __dp4a(uchar4 a, uchar4 b, unsigned int c) {
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
    """Whether ``text`` names one of ``names`` as a call (``name (``)."""
    return bool(names) and re.search(rf"\b(?:{'|'.join(sorted(names))})\s*\(", text) is not None


def add_definitions(text: str, lacking: frozenset[str]) -> str:
    """``text`` with, at its top, the block of every group one of whose ``lacking`` builtins it calls (once)."""
    blocks = [prelude(guard, lacking) for guard, (_, definitions) in GROUPS.items()
              if f"#define {guard}\n" not in text and called(text, lacking & definitions.keys())]
    return "".join(blocks) + text
