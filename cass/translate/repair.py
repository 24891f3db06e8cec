"""The post-HIPIFY repair layer: named, versioned rewrite rules for documented gaps of hipify-perl
and HIP, applied to the HIP text of every file (main file and headers).

Each rule fixes one gap that has a HIP equivalent and changes nothing a correct program computes:

* ``cuda_header_guards``: a helper header tests a CUDA header's include guard or marker macro
  (``#ifdef __DRIVER_TYPES_H__``, ``#ifdef CUSPARSEAPI``, ...) before it defines its error-check
  macros; hipify-perl maps the ``#include`` but not the guard, so after translation the test
  never holds and every user of the macro fails as ``undeclared``. In presence tests only
  (``#ifdef``, ``#ifndef``, ``defined``), the macro becomes the guard of the HIP header that stands
  for its header (the question stays "was that header included?"); a test that guards the
  project's own fallback definition of the macro (``#ifndef X`` then ``#define X``) is left alone.
* ``cuda_version_macros``: version macros (``CUDA_VERSION``, ``CUDART_VERSION``,
  ``__CUDACC_VER_MAJOR__``, ``CUBLAS_VER_MAJOR``, ...) are undefined in HIP code, so ``#if
  CUDA_VERSION >= 9000`` picks the oldest branch and ``#if CUDA_VERSION < 8000 #error ...`` stops
  the build. They take their values on the NVIDIA side (presence tests hold), so the HIP text follows
  the branches the CUDA build took: the pair's two sides are the same program. In code and in ``#define``
  bodies a use takes the value too (a branch that tested ``defined(__CUDACC_VER_MAJOR__)`` then uses it); not in
  comments, literals or other directives, not where ``defined`` tests it or ``#``/``##`` takes its name, and not
  where the file defines the macro itself.
* ``nvcc_compiler_macros``: nvcc predefines ``__NVCC__`` to say it compiles the file; hipify-perl maps only
  ``__CUDACC__`` (to ``__HIPCC__``), so ``#ifdef __NVCC__`` / ``#define HOST_DEVICE __host__ __device__`` drops
  the annotations on AMD. In conditional directives, each test of it becomes ``(defined(__NVCC__) ||
  defined(__HIPCC__))``, which holds on both HIP platforms (nvcc defines the first on NVIDIA's). nvcc's feature
  flags (``__NVCC_DIAG_PRAGMA_SUPPORT__``, ``__CUDACC_DEVICE_ATOMIC_BUILTINS__``) stay undefined: HIP's compiler
  has none of those features. A file whose conditionals test a ``__HIP*`` macro hipify-perl never writes
  (``__HIP_DEVICE_COMPILE__``, ``__HIP_PLATFORM_AMD__``) decides for HIP itself and is left alone.
  ``__HIPCC__`` itself (hipify-perl's ``__CUDACC__``, which nvcc defines as ``1``) is defined empty by HIP's
  NVIDIA headers, so a value test (``#if __HIPCC__``) becomes a presence test (``#if defined(__HIPCC__)``) in every
  file.
* ``unmapped_headers``: CUDA headers with a HIP counterpart that hipify-perl leaves as they are
  (CUB's sub-headers such as ``<cub/block/block_reduce.cuh>`` -> hipCUB's umbrella header;
  ``<math_constants.h>`` -> ``<hip/hip_math_constants.h>`` before hipify-perl 7) become it, unless
  the sample has a file of that name; CUDA constants HIP defines under its own prefix with the same
  definition (``CUDART_PI_F`` -> ``HIP_PI_F``) are renamed.

The tables (presence macros, version macros, headers and constants, runtime overloads, NVIDIA typedefs) are not
written here:
they are derived from the installed toolchains (:mod:`cass.translate.names`), and their digest
enters the repair action's key.
* ``cuda_runtime_overloads``: the C++ overloads of CUDA's runtime header that HIP lacks on either of its
  platforms (derived from CUDA's runtime header, HIP's, and HIP's as nvcc preprocesses it for the NVIDIA platform,
  where ``hipMallocAsync`` has no template for a typed pointer), replaced by the call they make there:
  ``cudaEventCreate(event, flags)`` (hipified to a two-argument ``hipEventCreate``) is
  ``cudaEventCreateWithFlags(event, flags)``;
  ``cudaFuncSetAttribute(kernel, attr, value)`` passes ``(const void*)kernel``, ``cudaHostAlloc(&p, ...)``
  ``(void**)(void*)&p``.
* ``cublas_gemm_ex``: ``cublasSgemmEx`` (a single-precision-compute GEMM on inputs of given data
  types), which hipify-perl leaves unmapped, is hipBLAS's ``hipblasGemmEx`` with a 32-bit float
  compute type and the default algorithm (``HIPBLAS_COMPUTE_32F`` from HIP 6, whose hipBLAS takes
  compute types; ``HIPBLAS_R_32F`` before); and from HIP 6, a data type given as the compute type
  of ``hipblasGemmEx``/``...BatchedEx``/``...StridedBatchedEx`` (``HIP_R_32F``, which cuBLAS's
  backward-compatible overloads accept and map) becomes the compute type cuBLAS maps it to.
* ``hip_vector_compound_operators``: CUDA's vector types (``float3``, ``int2``, ...) have no
  operators, so projects define their own; HIP's vector types have them (member compound
  assignments ``+=``, ``-=``, ``*=``, ``/=``, and ``+``, ``-``, ``*``, ``/`` between two vectors of one
  type, a vector and a scalar, a scalar and a vector), which make a project's own free ones
  ambiguous. A project's definition is removed only where its body is exactly the component-wise
  one HIP's computes (``a.x += b.x; ...``, ``return make_float2(a.x / b.x, a.y / b.y);``), and a
  scalar operand only where its type is the vector's element type (HIP converts a scalar to the
  vector's element type first); it stays for HIP's NVIDIA platform (``#if !defined(__HIP_PLATFORM_AMD__)``),
  whose vector types are CUDA's.
* ``hip_defined_functions``: CUDA lacks some overloads of its device functions (``atomicMin`` and ``atomicMax`` on
  ``float`` and ``double``, ``atomicExch`` on ``double``), so projects define their own; HIP's runtime header
  defines them, for AMD (all three) and on its NVIDIA platform (the first two), where the project's definition is
  a redefinition. A project's file-scope, non-template ``__device__`` definition with the name and parameter types
  of one HIP defines on a platform (the derived tables, from each platform's compiler preprocessing HIP's runtime
  header) is left out there (``#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)`` where
  both define it), and HIP's is called. A definition in a ``#define``, one whose head has ``__host__`` (HIP's may
  be a device function only) or a macro before its specifiers, or whose body leaves a conditional directive open
  or whose braces do not balance between each two of them (they may then balance only per branch), is left alone.
  The body is not compared: the overload HIP defines under that name computes what CUDA's name says
  (``atomicMin`` on floats is the atomic minimum), as a human port takes it (HeCBench's ``michalewicz``).
* ``thrust_cuda_backend``: thrust's CUDA backend names (``thrust::cuda::par``,
  ``thrust::cuda_cub::``, ``thrust::system::cuda::``, ``thrust::cuda_category``, ``<thrust/system/cuda/...>``) become
  rocThrust's HIP backend ones (``thrust::hip::par``, ...), the same algorithms' device policy, on AMD; on HIP's
  NVIDIA platform, whose thrust is CUDA's, they stay (``CASS_THRUST(thrust::cuda, thrust::hip)::par``, and the
  ``#include`` in an ``#if`` on the platform).
* ``ptx_inline_asm``: PTX inline assembly idioms (lane id and lane masks, ``bfe``/``bfi`` bit
  fields, ``ld``/``st`` with cache hints) become the C++ they compute (:mod:`cass.translate.ptx`);
  other PTX is left as it is. The special registers (lane id, lane masks, multiprocessor id) become device
  functions that only HIP's AMD platform has: on HIP's NVIDIA platform the PTX stays
  (``CASS_PTX(asm(...), (id = __lane_id()))``); the other idioms' C++ builds on both.
* ``hip_elaborated_types``: ``enum hipMemcpyKind kind`` (hipify-perl's text for ``enum cudaMemcpyKind``) names a
  tag on AMD, but HIP's NVIDIA platform declares ``typedef enum cudaMemcpyKind hipMemcpyKind``, a typedef, which no
  ``enum``, ``struct`` or ``union`` keyword may name. Before such a name (the derived table: the names hipify-perl
  writes that HIP's NVIDIA headers declare as typedefs), the keyword goes: on AMD the name is both the tag and a
  typedef of it, so the name alone is the same type on both platforms. Declarations and definitions of the tag
  (``{``, ``:``, ``;`` or ``final`` after the name) are left alone, and so are tags only AMD has
  (``typedef struct ihipStream_t *hipStream_t``).
* ``cooperative_groups_reduce``: CUDA's ``cooperative_groups::reduce(group, value, op)`` and its operators
  (``cg::plus``, ``less``, ``greater``, ``bit_and``, ``bit_or``, ``bit_xor``) have no HIP counterpart (the derived
  table says whether the HIP header of ``cooperative_groups.h`` names ``reduce``), and hipify-perl maps
  ``<cooperative_groups/reduce.h>`` to HIP's cooperative groups header. A file calling ``reduce`` through
  ``cooperative_groups`` or an alias it declares for it gets :data:`COOPERATIVE_GROUPS_REDUCE` at its top: CUDA's
  header on HIP's NVIDIA platform, the same functions written over the group's shuffles on AMD (CUDA's order of
  operations on a tile).
* ``cuda_device_builtins``: CUDA device builtins hipify-perl leaves as they are and HIP's runtime header never
  names (the derived table; of those :mod:`cass.translate.device_builtins` writes): CUDA 12.8's ``__nv_atomic_*``
  builtins (over clang's ``__hip_atomic_*``, CUDA's scopes as HIP's), the cache-hinted loads and stores (plain ones:
  a hint changes no value) and ``__dp4a``. A file calling one gets its group's block at its top, once, for AMD only:
  on HIP's NVIDIA platform the builtins are CUDA's own.
* ``warp_sync_builtins``: ``__shfl_*_sync``, ``__ballot_sync``, ``__any_sync``, ``__all_sync``,
  ``__activemask`` and ``__syncwarp``. HIP before 6.2 has only the maskless forms: the mask
  argument is dropped (HIP's forms act on the whole wavefront, which a correct CUDA program's
  full-warp mask names; gfx10+ archs such as gfx1100 run wave32, so widths and ballot bits match
  a CUDA warp). HIP 6.2 and later declare the ``_sync`` forms (with
  ``HIP_ENABLE_WARP_SYNC_BUILTINS``, which the AMD toolchain then passes) but demand a 64-bit mask:
  the mask is widened to ``unsigned long long``. On every HIP ``__activemask()`` is the ballot of
  all active lanes, and the masks that ``__ballot_sync`` and ``__activemask`` return are narrowed
  to CUDA's 32-bit ``unsigned int`` (the target is wave32), so overloads such as ``__ffs`` resolve
  as they do for CUDA.
  No HIP declares ``__syncwarp()``: it becomes a wavefront barrier between release and acquire
  fences at wavefront scope (lanes of a wavefront run in lockstep; the fences order their memory
  operations as ``__syncwarp`` does).
  Each rewritten call is ``CASS_WARP(<the CUDA call>, <the AMD form>)``, a macro the file defines once at its top
  (:func:`platform_select`): the AMD form for AMD, the CUDA call on HIP's NVIDIA platform (whose headers are CUDA's,
  where HIP 5.7's own votes are ones ptxas refuses from sm_70 and AMD's builtins are unknown), so the translation
  builds on both.

A rule's ``version`` is bumped whenever its output can change; the rule set's id (every rule's
name and version) enters the repair action's key, with the HIP version the rules were chosen for.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cass.engine.actions import pipeline_toolchains
from cass.engine.cached import CachedMap
from cass.engine.placement import Placement
from cass.translate.ctext import (
    DIRECTIVE_LINE,
    PREPROCESSOR_LINE,
    block_end,
    find_heads,
    inside_spans,
    literal_spans,
    rewrite_calls,
    top_level,
)
from cass.translate.device_builtins import add_definitions
from cass.translate.names import CAST_OF_NAME, CudaHipNames, toolchain_names
from cass.translate.ptx import rewrite_asm
from store import ActionSpec, Store
from toolchains.amd import WARP_SYNC_HIP
from toolchains.headers import parameter_types, split_top_level, strip_comments

Version = tuple[int, int]



def all_wave32(archs: list[str]) -> bool:
    """Whether every gfx arch runs 32-lane wavefronts by default (RDNA: gfx10, gfx11, gfx12)."""
    return all(re.fullmatch(r"gfx1\d{3}\w*", arch) for arch in archs)


@dataclass(frozen=True, eq=False)
class RepairTarget:
    """What the rules are chosen for: the AMD toolchain's HIP version and the CUDA-to-HIP names derived from
    both toolchains (the NVIDIA side's version macros among them: the HIP text follows the same
    version-dependent branches)."""

    hip: Version
    names: CudaHipNames = field(default_factory=CudaHipNames)
    wave32: bool = True
    """every configured gfx arch runs 32-lane wavefronts (gfx10 and later), as CUDA's warps are"""
    hipblas_v2: bool = False
    """hipBLAS declares the v2 API (``hipblasComputeType_t``) that hipify-perl 7 maps cuBLAS to"""
    shadowed: frozenset[str] = frozenset()
    """header names of :attr:`CudaHipNames.headers` that the sample's own files provide, and its own paths under a
    folder that end in a header hipify-perl maps (:meth:`CudaHipNames.provided_by`)"""

    def key(self) -> dict:
        key = {"hip_version": f"{self.hip[0]}.{self.hip[1]}", "names": self.names.digest, "wave32": self.wave32,
               "hipblas_v2": self.hipblas_v2}
        return {**key, "shadowed": sorted(self.shadowed)} if self.shadowed else key


@dataclass(frozen=True)
class Rule:
    """One rewrite: ``apply(text, target)`` returns the repaired text (the same text when nothing
    matched)."""

    name: str
    version: int
    gap: str
    apply: Callable[[str, RepairTarget], str]


_WORD_CACHE: dict[tuple[str, str], re.Pattern | None] = {}


def _words(names: CudaHipNames, table: str) -> re.Pattern | None:
    """A regex matching any name of one of the derived tables as a whole word (None for an empty table)."""
    key = (names.digest, table)
    if key not in _WORD_CACHE:
        words = sorted(names.tables()[table], key=len, reverse=True)
        _WORD_CACHE[key] = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b") if words else None
    return _WORD_CACHE[key]


_PRESENCE_TEST = re.compile(r"\bdefined\s*(?:\(\s*(\w+)\s*\)|(\w+))")
_NEXT_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)[ \t]*(\w*)", re.M)


def _own_fallback(text: str, m: re.Match, macro: str) -> bool:
    """Whether the conditional directive ``m`` guards the project's own definition of ``macro``: it tests that
    ``macro`` is absent and the next directive defines it."""
    kind, rest = m.group(1), m.group(2).strip()
    absent = kind in ("ifndef", "elifndef") or re.fullmatch(rf"!\s*defined\s*(?:\(\s*{macro}\s*\)|{macro})", rest)
    following = _NEXT_DIRECTIVE.search(text, m.end())
    return bool(absent) and following is not None and following.groups() == ("define", macro)


def _rewrite_conditionals(text: str, table: dict[str, str], tested: Callable[[str], str],
                          valued: Callable[[str], str] | None = None) -> str:
    """Conditional directives with each presence test of a macro of ``table`` rewritten: ``#ifdef M`` /
    ``#ifndef M`` and ``defined(M)`` by ``tested(M)`` (a name takes ``M``'s place; a number or a parenthesised
    expression takes the test's, and ``#ifdef``/``#ifndef`` become ``#if``), and with ``valued`` every other use of
    ``M`` in ``#if``/``#elif``; the project's own fallback definitions are left alone."""
    def directive(m: re.Match) -> str:
        kind, rest = m.group(1), m.group(2)
        lead = m.group(0)[: m.start(2) - m.start(0)]
        if kind in ("ifdef", "ifndef", "elifdef", "elifndef"):
            head = re.match(r"(\s*)(\w+)(.*)", rest, re.S)
            if not head or head.group(2) not in table or _own_fallback(text, m, head.group(2)):
                return m.group(0)
            new = tested(head.group(2))
            keyword = f"{m.group(0)[: m.start(1) - m.start(0)]}{'if' if kind.startswith('if') else 'elif'}"
            if new.isdigit():   # a value, not a name: the directive becomes an #if
                truth = int(new) != 0 if kind.endswith("ifdef") else int(new) == 0
                return f"{keyword} {int(truth)}{head.group(3)}"
            if not new.isidentifier():   # an expression: the directive becomes an #if testing it
                return f"{keyword} {'' if kind.endswith('ifdef') else '!'}{new}{head.group(3)}"
            return f"{lead}{head.group(1)}{new}{head.group(3)}"
        if kind not in ("if", "elif"):
            return m.group(0)

        def presence(d: re.Match) -> str:
            name = d.group(1) or d.group(2)
            if name not in table or _own_fallback(text, m, name):
                return d.group(0)
            new = tested(name)
            if new.startswith("(") and d.string.startswith(new[1:-1], d.start()):
                return d.group(0)   # the expression already (repaired before, or written so)
            return d.group(0).replace(name, new) if new.isidentifier() else new
        def value(w: re.Match) -> str:
            return w.group(0) if w.group(1) is None or w.group(1) not in table else valued(w.group(1))
        rest = _PRESENCE_TEST.sub(presence, rest)
        if valued is not None:   # names outside presence tests (those left are the project's own fallbacks)
            rest = re.sub(r"\bdefined\s*(?:\(\s*\w+\s*\)|\w+)|\b(\w+)\b", value, rest)
        return lead + rest

    return PREPROCESSOR_LINE.sub(directive, text)


def cuda_header_guards(text: str, target: RepairTarget) -> str:
    presence = target.names.presence
    words = _words(target.names, "presence")
    if words is None or not words.search(text):
        return text
    return _rewrite_conditionals(text, presence, lambda name: presence[name])


def _define_presence_tests(text: str, table: dict[str, str], own: set[str]) -> str:
    """In ``#define`` bodies, each ``defined M`` of a macro of ``table`` the text does not define itself holds
    (``1``), as it does in conditionals."""
    def presence(d: re.Match) -> str:
        name = d.group(1) or d.group(2)
        return "1" if name in table and name not in own else d.group(0)
    return DIRECTIVE_LINE.sub(lambda m: _PRESENCE_TEST.sub(presence, m.group(0)) if m.group(1) == "define"
                          else m.group(0), text)


_NO_VALUE_AFTER = re.compile(r"(?:\bdefined\s*\(?|#)\s*$")
"""Where a macro's name is no use of its value: tested by ``defined``, stringized or pasted (``#M``, ``x ## M``)."""
_PASTED_BEFORE = re.compile(r"[ \t]*##")


def _own_definitions(text: str) -> set[str]:
    """The macros the text defines or undefines itself."""
    return {m.group(2) for m in _NEXT_DIRECTIVE.finditer(text) if m.group(1) in ("define", "undef")}


def _code_uses(text: str, words: re.Pattern, value: Callable[[str], str], own: set[str]) -> str:
    """Each use of a macro ``words`` matches in code and ``#define`` bodies replaced by ``value(name)``; not in
    comments, literals or other directives, not where ``defined`` tests it or ``#``/``##`` takes its name, and not
    where the text defines or undefines that macro itself (``own``)."""
    skipped: list[tuple[int, int]] = []
    directives = ((m.start(), m.end()) for m in DIRECTIVE_LINE.finditer(text) if m.group(1) != "define")
    for start, end in sorted([*literal_spans(text), *directives]):
        if skipped and start < skipped[-1][1]:   # overlapping (a comment on a directive's line): merged
            skipped[-1] = (skipped[-1][0], max(end, skipped[-1][1]))
        else:
            skipped.append((start, end))

    def use(m: re.Match) -> str:
        before = text[text.rfind("\n", 0, m.start()) + 1:m.start()]
        if (m.group(1) in own or inside_spans(skipped, m.start()) or _NO_VALUE_AFTER.search(before)
                or _PASTED_BEFORE.match(text, m.end())):
            return m.group(0)
        return value(m.group(1))
    return words.sub(use, text)


def cuda_version_macros(text: str, target: RepairTarget) -> str:
    versions = target.names.versions
    words = _words(target.names, "versions")
    if words is None or not words.search(text):
        return text
    text = _rewrite_conditionals(text, versions, lambda name: "1", lambda name: f"({versions[name]})")
    own = _own_definitions(text)
    text = _define_presence_tests(text, versions, own)
    return _code_uses(text, words, lambda name: versions[name] if versions[name].isdigit() else f"({versions[name]})",
                      own)


def _decides_for_hip(text: str, written: list[str]) -> bool:
    """Whether a conditional of the text, comments aside, tests a ``__HIP*`` macro hipify-perl never writes (Eigen's
    ``__HIP_DEVICE_COMPILE__``): the file decides for HIP itself."""
    chars = list(text)
    for start, end in literal_spans(text):   # comments and literals blanked, lines kept: directives stay directives
        chars[start:end] = re.sub(r"[^\n]", " ", text[start:end])
    code = "".join(chars)
    return any(name not in written for m in PREPROCESSOR_LINE.finditer(code)
               for name in re.findall(r"\b__HIP\w*", m.group(2)))


def nvcc_compiler_macros(text: str, target: RepairTarget) -> str:
    compiler = target.names.compiler
    hip_compilers = dict.fromkeys(compiler.values(), "")
    if any(name in text for name in hip_compilers):
        # nvcc defines __CUDACC__ (hipify-perl's __HIPCC__) as 1, HIP's NVIDIA headers define __HIPCC__ empty, where
        # `#if __HIPCC__` has no expression: a value test becomes a presence test
        text = _rewrite_conditionals(text, hip_compilers, lambda name: name, lambda name: f"defined({name})")
    words = _words(target.names, "compiler")
    if words is None or not words.search(text) or _decides_for_hip(text, target.names.hipified_macros):
        return text
    both = lambda name: f"(defined({name}) || defined({compiler[name]}))"  # noqa: E731
    return _rewrite_conditionals(text, compiler, both, both)


_INCLUDE_LINE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*)([<"])([^>"\n]+)[>"]', re.M)


def unmapped_headers(text: str, target: RepairTarget) -> str:
    headers = target.names.headers
    text = _INCLUDE_LINE.sub(lambda m: f"{m.group(1)}<{headers[m.group(3)]}>"
                             if m.group(3) in headers and m.group(3) not in target.shadowed else m.group(0), text)
    constants = target.names.constants
    words = _words(target.names, "constants")
    return words.sub(lambda m: constants[m.group(1)], text) if words is not None else text


def own_headers_kept(text: str, target: RepairTarget) -> str:
    """A quoted include of one of the sample's own headers whose path ends in a CUDA header's name
    (``"util/cuda.h"``), which hipify-perl renamed as that header (``"util/hip/hip_runtime.h"``), named as it was:
    the project's header is translated at its own path."""
    hipify = target.names.hipify_headers
    renamed: dict[str, set[str]] = {}
    for own in target.shadowed:
        for cuda in (h for h in hipify if own.endswith("/" + h)):
            renamed.setdefault(own[:-len(cuda)] + hipify[cuda], set()).add(own)
    for name, owns in sorted(renamed.items()):
        if len(owns) == 1:   # two own headers renamed alike (util/cuda.h, util/cuda_runtime.h): which one is unknown
            [own] = owns
            line = re.compile(rf'^([ \t]*#[ \t]*include[ \t]*"){re.escape(name)}"', re.M)
            text = line.sub(lambda m, own=own: f'{m.group(1)}{own}"', text)
    return text


def _overload_call(name: str, overloads: dict[str, dict]) -> Callable[[list[str], str], str]:
    def rewrite(args: list[str], original: str) -> str:
        if str(len(args)) not in overloads:   # a template argument list's commas split an argument: join it again
            args = split_top_level(",".join(args))
        overload = overloads.get(str(len(args)))
        if overload is None:
            return original
        given = [a.strip() for a in args]
        values = dict(zip(overload["params"], given + overload["defaults"][len(given) - overload["required"]:],
                          strict=True))
        passed, cast_already = [], []
        for expression in overload["args"]:
            casts, passed_name = CAST_OF_NAME.match(expression).groups()
            value = values.get(passed_name)
            passed.append(expression if value is None else value if not casts else f"{casts}({value})")
            if casts and value is not None:   # the outermost cast: the type the C API takes
                cast_already.append(_squeezed(value).startswith(_squeezed(casts).split(")")[0] + ")"))
        if overload["target"] == name and cast_already and all(cast_already):
            return original   # the call passes what the C API takes already: it calls that, not the overload
        return f"{overload['target']}({', '.join(passed)})"
    return rewrite


def _squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def cuda_runtime_overloads(text: str, target: RepairTarget) -> str:
    for name, overloads in target.names.overloads.items():
        if name in text:
            text = rewrite_calls(text, name, _overload_call(name, overloads))
    return text


COMPUTE_TYPES = {"HIP_R_16F": "HIPBLAS_COMPUTE_16F", "HIP_R_32F": "HIPBLAS_COMPUTE_32F",
                 "HIP_R_64F": "HIPBLAS_COMPUTE_64F", "HIP_R_32I": "HIPBLAS_COMPUTE_32I"}
"""cuBLAS's mapping of a data type given as a GEMM's compute type (its backward-compatible
overloads accept ``CUDA_R_32F`` where CUDA 11 takes ``CUBLAS_COMPUTE_32F``)."""
COMPUTE_ARGUMENT = {"hipblasGemmEx": (19, 17), "hipblasGemmBatchedEx": (20, 18),
                    "hipblasGemmStridedBatchedEx": (23, 21)}
"""hipBLAS GEMM calls: (argument count, index of the compute type)."""


def cublas_gemm_ex(text: str, target: RepairTarget) -> str:
    v2 = target.hipblas_v2
    text = rewrite_calls(text, "cublasSgemmEx", lambda args, original: (
        f"hipblasGemmEx({','.join(args)}, {'HIPBLAS_COMPUTE_32F' if v2 else 'HIPBLAS_R_32F'}, HIPBLAS_GEMM_DEFAULT)"
        if len(args) == 17 else original))
    if not v2:
        return text

    def compute_type(name: str):
        count, index = COMPUTE_ARGUMENT[name]

        def rewrite(args: list[str], original: str) -> str:
            if len(args) != count or args[index].strip() not in COMPUTE_TYPES:
                return original
            value = args[index]
            args[index] = value.replace(value.strip(), COMPUTE_TYPES[value.strip()])
            return f"{name}({','.join(args)})"
        return rewrite

    for name in COMPUTE_ARGUMENT:
        text = rewrite_calls(text, name, compute_type(name))
    return text


_VECTOR_TYPE = r"(?:u?char|u?short|u?int|u?long|(?:u?longlong)|float|double)([1-4])"
_QUALIFIERS = r"^[ \t]*(?:(?:static|inline|__inline__|__forceinline__|__host__|__device__|__HOST_DEVICE__)\s+)*"
_COMPOUND_OPERATOR = re.compile(
    _QUALIFIERS + r"void\s+"
    rf"operator\s*([-+*/])=\s*\(\s*({_VECTOR_TYPE})\s*&\s*(\w+)\s*,\s*(?:const\s+)?(\w+)\s*&?\s*(\w+)\s*\)\s*"
    r"\{([^{}]*)\}[ \t]*\n?", re.M)
_OPERAND_TYPE = r"((?:(?:unsigned|signed|long|short)\s+)*\w+)"
"""A vector type or a scalar one, multi-word ones (``unsigned long long``) included."""
_BINARY_OPERATOR = re.compile(
    _QUALIFIERS + rf"(?:const\s+)?(\w+)\s+operator\s*([-+*/])\s*\(\s*(?:const\s+)?{_OPERAND_TYPE}\s*&?\s*(\w+)\s*,"
    rf"\s*(?:const\s+)?{_OPERAND_TYPE}\s*&?\s*(\w+)\s*\)\s*\{{([^{{}}]*)\}}[ \t]*\n?", re.M)
_ELEMENT = {"char": "signed char", "uchar": "unsigned char", "short": "short", "ushort": "unsigned short",
            "int": "int", "uint": "unsigned int", "long": "long", "ulong": "unsigned long", "longlong": "long long",
            "ulonglong": "unsigned long long", "float": "float", "double": "double"}
"""The element type of each CUDA vector type family (``float`` of ``float2``), as C spells it."""


def _gone(m: re.Match, what: str, vtype: str) -> str:
    """A definition HIP's own on AMD makes ambiguous, left to HIP's NVIDIA platform (whose vector types are CUDA's,
    without operators)."""
    return (f"#if !defined(__HIP_PLATFORM_AMD__) /* {what}: HIP's {vtype} has it on AMD */\n"
            f"{m.group(0).rstrip(chr(10))}\n#endif\n")


def _element_of(vtype: str) -> str | None:
    m = re.fullmatch(_VECTOR_TYPE, vtype)
    return _ELEMENT.get(vtype[: -1]) if m else None


def hip_vector_compound_operators(text: str, target: RepairTarget) -> str:
    def compound(m: re.Match) -> str:
        op, vtype, width, a, btype, b, body = m.groups()
        expected = [f"{a}.{c}{op}={b}.{c};" for c in "xyzw"[: int(width)]]
        if btype != vtype or re.sub(r"\s+", "", body) != "".join(expected):
            return m.group(0)
        return _gone(m, f"operator{op}=({vtype}&, {vtype})", vtype)

    def binary(m: re.Match) -> str:
        result, op, atype, a, btype, b, body = m.groups()
        atype, btype = " ".join(atype.split()), " ".join(btype.split())
        element = _element_of(result)
        if element is None:
            return m.group(0)
        lanes = "xyzw"[: int(result[-1])]
        scalar = {element, element.replace("signed char", "char"), element.replace("unsigned int", "unsigned")}
        if atype == btype == result:
            parts = [f"{a}.{c}{op}{b}.{c}" for c in lanes]
        elif atype == result and btype in scalar:
            parts = [f"{a}.{c}{op}{b}" for c in lanes]
        elif btype == result and atype in scalar:
            parts = [f"{a}{op}{b}.{c}" for c in lanes]
        else:
            return m.group(0)
        if re.sub(r"\s+", "", body) != f"returnmake_{result}({','.join(parts)});":
            return m.group(0)
        return _gone(m, f"operator{op}({atype}, {btype})", result)

    return _BINARY_OPERATOR.sub(binary, _COMPOUND_OPERATOR.sub(compound, text))


_SPECIFIERS = frozenset({"static", "inline", "extern", "constexpr", "__device__", "__forceinline__", "__inline__",
                         "__noinline__"})
"""What may come before a device definition's return type (a macro or ``__host__`` there: the rule leaves it)."""
_HEAD_ATTRIBUTES = re.compile(r"__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)|__launch_bounds__\s*\([^()]*\)")
_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b.*$", re.M)
_PLATFORM_MACROS = {"amd": "__HIP_PLATFORM_AMD__", "nvidia": "__HIP_PLATFORM_NVIDIA__"}
"""The macro each HIP platform's headers define."""


@functools.lru_cache(maxsize=8)
def _definition_heads(names: tuple[str, ...]) -> re.Pattern:
    """A name of ``names`` followed by a parameter list and a body's ``{``."""
    return re.compile(rf"(?<![\w.>:~])(?:{'|'.join(names)})\s*\((?=[^(){{}};]*\)\s*\{{)")


def _device_definition_head(head: str) -> bool:
    """Whether ``head`` (what comes before a function's name) is only :data:`_SPECIFIERS`, ``__device__`` among them,
    then a return type: a template, ``__host__`` (HIP's overload may be a device one only) or a macro before the
    last specifier is not."""
    words = re.findall(r"[A-Za-z_]\w*", _HEAD_ATTRIBUTES.sub(" ", strip_comments(head)))
    last = max((i for i, w in enumerate(words) if w in _SPECIFIERS), default=-1)
    return "__device__" in words[:last + 1] and all(w in _SPECIFIERS for w in words[:last + 1])


def _balanced_between_conditionals(text: str, start: int, end: int, skipped: list[tuple[int, int]]) -> bool:
    """Whether the body ``text[start:end]`` closes every conditional directive it opens, and its braces balance
    between each two of them, so that every preprocessor branch closes the body where all of them counted together
    do (``skipped``: the spans whose braces do not count)."""
    body = text.index("{", start) + 1, end - 1
    conditionals = list(_CONDITIONAL.finditer(text, *body))
    depth = 0
    for m in conditionals:
        depth += 1 if m.group(1) in ("if", "ifdef", "ifndef") else -1 if m.group(1) == "endif" else 0
        if depth < 0:
            return False
    if depth:
        return False
    cuts = [body[0], *(i for m in conditionals for i in (m.start(), m.end())), body[1]]
    for a, b in zip(cuts[::2], cuts[1::2], strict=True):
        braces = [c for i, c in enumerate(text[a:b], a) if c in "{}" and not inside_spans(skipped, i)]
        if braces.count("{") != braces.count("}"):
            return False
    return True


def hip_defined_functions(text: str, target: RepairTarget) -> str:
    tables = target.names.hip_definitions
    names = tuple(sorted({name for table in tables.values() for name in table}))
    if not names or not _definition_heads(names).search(text):
        return text   # no head of a definition of one of the names
    spans = literal_spans(text)
    calls = find_heads(text, _definition_heads(names).pattern, spans=spans)
    scope = top_level(text, spans) if calls else None
    skipped = sorted([*spans, *scope.directives]) if scope else []
    newline = "\r\n" if "\r\n" in text else "\n"
    out, pos = [], 0
    for call in calls:
        start = scope.statement_start(call.start)
        if start is None or call.start < pos or not _device_definition_head(text[start:call.start]):
            continue   # inside a block or a preprocessor line, or not a plain device definition
        name = re.match(r"\w+", text[call.start:]).group(0)
        params = parameter_types(strip_comments(text[call.args[0][0]:call.args[-1][1]]) if call.args else "")
        platforms = [p for p, table in tables.items() if list(params) in table.get(name, ())]
        end = block_end(text, text.index("{", call.end), skipped)
        if not platforms or end is None or not _balanced_between_conditionals(text, call.end, end, skipped):
            continue   # not HIP's, or a body whose braces may balance only per preprocessor branch
        test = " && ".join(f"!defined({_PLATFORM_MACROS[p]})" for p in platforms)
        guard = f"#if {test} /* HIP defines {name}({', '.join(params)}) */{newline}"
        if text.endswith(guard, 0, start):
            continue   # repaired before
        before = "" if text[text.rfind("\n", 0, start) + 1:start].strip() == "" else newline
        rest = text[end:text.find("\n", end) if "\n" in text[end:] else len(text)]
        out += [text[pos:start], before, guard, text[start:end], newline + "#endif" + (newline if rest.strip() else "")]
        pos = end
    return "".join(out) + text[pos:]


def platform_select(macro: str) -> str:
    """The prelude a rule puts once at the top of a file it rewrites: ``macro(cuda, amd)`` is the CUDA form on HIP's
    NVIDIA platform (whose headers are CUDA's) and the AMD form elsewhere, so the translation builds on both."""
    return (f"#ifndef {macro}\n#if defined(__HIP_PLATFORM_NVIDIA__)\n#define {macro}(cuda, amd) cuda\n"
            f"#else\n#define {macro}(cuda, amd) amd\n#endif\n#endif\n")


def _selected(text: str, repaired: str, prelude: str) -> str:
    return repaired if repaired == text else prelude + repaired


THRUST_SELECT = "CASS_THRUST"
THRUST_PRELUDE = platform_select(THRUST_SELECT)
_THRUST_CUDA = {"thrust::cuda_cub": "thrust::hip_rocprim", "thrust::system::cuda": "thrust::system::hip",
                "thrust::cuda": "thrust::hip"}
_THRUST_NAME = re.compile(r"\b(thrust::cuda_cub|thrust::system::cuda|thrust::cuda)::")
_THRUST_CATEGORY = re.compile(r"\bthrust::((?:system::)?)cuda_category\b")
_THRUST_INCLUDE = re.compile(r'^([ \t]*#[ \t]*include[ \t]*[<"])thrust/system/cuda/'
                             r'([^>"\r\n]*[>"][ \t]*(?://[^\r\n]*|/\*[^\r\n]*?\*/[ \t]*)?)(\r?)$', re.M)
"""A whole ``#include`` line of thrust's CUDA backend (a ``//`` comment, or a ``/* */`` one that ends on the line, may
follow; one that goes on would enclose the lines written after it)."""


def thrust_cuda_backend(text: str, target: RepairTarget) -> str:
    if "thrust" not in text or THRUST_PRELUDE in text:
        return text   # no thrust, or repaired before
    repaired = _THRUST_NAME.sub(lambda m: f"{THRUST_SELECT}({m.group(1)}, {_THRUST_CUDA[m.group(1)]})::", text)
    repaired = _THRUST_CATEGORY.sub(lambda m: f"{THRUST_SELECT}({m.group(0)}, thrust::{m.group(1)}hip_category)",
                                    repaired)
    repaired = _THRUST_INCLUDE.sub(lambda m: f"#if defined(__HIP_PLATFORM_NVIDIA__){m.group(3)}\n{m.group(0)}\n"
                                             f"#else{m.group(3)}\n{m.group(1)}thrust/system/hip/{m.group(2)}"
                                             f"{m.group(3)}\n#endif{m.group(3)}", repaired)
    return _selected(text, repaired, THRUST_PRELUDE)


PTX_SELECT = "CASS_PTX"
PTX_PRELUDE = platform_select(PTX_SELECT)


def ptx_inline_asm(text: str, target: RepairTarget) -> str:
    if PTX_PRELUDE in text:
        return text   # repaired before
    repaired = rewrite_asm(text, lanes=target.wave32,
                           amd_only=lambda original, translated: f"{PTX_SELECT}({original}, {translated})")
    return _selected(text, repaired, PTX_PRELUDE) if PTX_SELECT in repaired else repaired


_ELABORATED = re.compile(r"\b(?:enum|struct|union)\s+(\w+)\b(?!(?:\s|/\*.*?\*/|//[^\n]*\n)*(?:[{:;]|final\b))", re.S)
"""An elaborated type specifier, not where it declares or defines the tag (whitespace and comments before ``{``,
``:``, ``;`` or ``final``)."""


_GROUPS_ALIAS = re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:::\s*)?cooperative_groups\s*;")
COOPERATIVE_GROUPS_REDUCE = """#ifndef CASS_CG_REDUCE
#define CASS_CG_REDUCE
#if defined(__HIP_PLATFORM_NVIDIA__)
#include <cooperative_groups/reduce.h>
#else
namespace cooperative_groups {
template <class T> struct plus { __device__ T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { __device__ T operator()(T a, T b) const { return b < a ? b : a; } };
template <class T> struct greater { __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __device__ T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { __device__ T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { __device__ T operator()(T a, T b) const { return a ^ b; } };
template <class T, class Shuffle> __device__ T cass_words(T value, Shuffle shuffle) {
  unsigned int words[(sizeof(T) + 3) / 4] = {};
  __builtin_memcpy(words, &value, sizeof(T));
  for (unsigned int& word : words) word = shuffle(word);
  __builtin_memcpy(&value, words, sizeof(T));
  return value;
}
template <class Group, class T, class Op> __device__ T cass_fold(const Group& group, T value, Op op, long) {
  const unsigned int size = group.size();
  for (unsigned int offset = 1; offset < size; offset *= 2) {
    T other = cass_words(value, [&](unsigned int word) { return group.shfl_down(word, offset); });
    if (group.thread_rank() + offset < size) value = op(value, other);
  }
  return cass_words(value, [&](unsigned int word) { return group.shfl(word, 0); });
}
template <class Group, class T, class Op>
__device__ auto cass_fold(const Group& group, T value, Op op, int) -> decltype(void(group.shfl_xor(0u, 1u)), T(value)) {
  for (unsigned int mask = group.size() / 2; mask > 0; mask /= 2)
    value = op(value, cass_words(value, [&](unsigned int word) { return group.shfl_xor(word, mask); }));
  return value;
}
template <class Group, class T, class Op> __device__ T reduce(const Group& group, T value, Op op) {
  return cass_fold(group, value, op, 0);
}
}
#endif
#endif
"""
"""CUDA's ``cooperative_groups::reduce`` and its operators (``cooperative_groups/reduce.h``): on HIP's NVIDIA platform
CUDA's header (hipify-perl's ``hip_cooperative_groups.h`` does not include it), on AMD the same functions over the
group's shuffles (values of any trivially copyable type, shuffled as 32-bit words). A tile folds as CUDA's does, an
xor butterfly from half its size down, so even a float sum is CUDA's to the bit; a coalesced group (no xor shuffle)
folds lane ``i + offset``'s value into lane ``i``'s for offsets 1, 2, 4, ... while that lane is in the group, then
every lane takes lane 0's result: exact operations give CUDA's result, a float sum may differ in its last bits."""


def cooperative_groups_reduce(text: str, target: RepairTarget) -> str:
    if "reduce" not in target.names.cooperative_groups or COOPERATIVE_GROUPS_REDUCE in text:
        return text
    spaces = "|".join(sorted({"cooperative_groups", *_GROUPS_ALIAS.findall(text)}))
    return COOPERATIVE_GROUPS_REDUCE + text if re.search(rf"\b(?:{spaces})\s*::\s*reduce\s*\(", text) else text


def cuda_device_builtins(text: str, target: RepairTarget) -> str:
    return add_definitions(text, frozenset(target.names.device_builtins))


def hip_elaborated_types(text: str, target: RepairTarget) -> str:
    typedefs = frozenset(target.names.nvidia_typedefs)
    if not typedefs or not re.search(r"\b(?:enum|struct|union)\b", text):
        return text
    return _ELABORATED.sub(lambda m: m.group(1) if m.group(1) in typedefs else m.group(0), text)


SHUFFLES = ("__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync")
VOTES = ("__ballot_sync", "__any_sync", "__all_sync")
MASK_RESULTS = ("__ballot_sync",)
"""Votes whose result is a lane mask (32 bits in CUDA, 64 in HIP)."""
ACTIVEMASK = "((unsigned int)__ballot(1))"
SYNCWARP = ("(__builtin_amdgcn_fence(__ATOMIC_RELEASE, \"wavefront\"), __builtin_amdgcn_wave_barrier(), "
            "__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"wavefront\"))")


def _drop_mask(maskless: str) -> Callable[[list[str], str], str]:
    def rewrite(args: list[str], original: str) -> str:
        return f"{maskless}({','.join(args[1:]).strip()})" if len(args) >= 2 else original
    return rewrite


def _widen_mask(name: str) -> Callable[[list[str], str], str]:
    def rewrite(args: list[str], original: str) -> str:
        if not args or args[0].strip().startswith("(unsigned long long)"):
            return original
        call = f"{name}((unsigned long long)({args[0].strip()}),{','.join(args[1:])})"
        return f"((unsigned int){call})" if name in MASK_RESULTS else call
    return rewrite


VOTES_WITH_MASK = {
    "__ballot_sync": "((unsigned int)(__ballot({p}) & ({m})))",
    "__any_sync": "(int)((__ballot({p}) & ({m})) != 0)",
    "__all_sync": "({{ unsigned long long __m = ({m}); (int)((__ballot({p}) & __m) == (__ballot(1) & __m)); }})",
}
"""CUDA's votes over the active threads of the mask, from HIP's ballot of the active lanes."""


def _vote(name: str) -> Callable[[list[str], str], str]:
    def rewrite(args: list[str], original: str) -> str:
        return VOTES_WITH_MASK[name].format(m=args[0].strip(), p=args[1].strip()) if len(args) == 2 else original
    return rewrite


WARP_SELECT = "CASS_WARP"
WARP_PRELUDE = platform_select(WARP_SELECT)
"""Chooses a warp call's form by HIP platform: on NVIDIA, HIP's headers are CUDA's, whose own ``*_sync`` intrinsics
work (HIP 5.7's NVIDIA votes are the ones ptxas refuses from sm_70, and AMD's builtins are unknown there)."""


def _per_platform(rewrite: Callable[[list[str], str], str]) -> Callable[[list[str], str], str]:
    """A rewrite for AMD that leaves the CUDA call on HIP's NVIDIA platform."""
    def choose(args: list[str], original: str) -> str:
        amd = rewrite(args, original)
        return original if amd == original else f"{WARP_SELECT}({original}, {amd})"
    return choose


def warp_sync_builtins(text: str, target: RepairTarget) -> str:
    if not target.wave32:
        return text   # a CUDA warp is no wavefront of 64 lanes: nothing here would compute the same
    if WARP_PRELUDE in text:
        return text   # repaired before
    rewrites = {"__activemask": lambda args, original: ACTIVEMASK,
                "__syncwarp": lambda args, original: SYNCWARP}   # no HIP declares it
    if target.hip >= WARP_SYNC_HIP:
        rewrites |= {name: _widen_mask(name) for name in (*SHUFFLES, *VOTES)}
    else:
        rewrites |= {name: _drop_mask(name.removesuffix("_sync")) for name in SHUFFLES}
        rewrites |= {name: _vote(name) for name in VOTES}
    repaired = text
    for name in (*SHUFFLES, *VOTES, "__activemask", "__syncwarp"):
        repaired = rewrite_calls(repaired, name, _per_platform(rewrites[name]))
    return _selected(text, repaired, WARP_PRELUDE)


RULES: tuple[Rule, ...] = (
    Rule("cuda_header_guards", 2, "CUDA headers' include guards and markers tested in conditionals are not mapped "
         "by hipify-perl", cuda_header_guards),
    Rule("cuda_version_macros", 6, "CUDA version macros are undefined in HIP code", cuda_version_macros),
    Rule("nvcc_compiler_macros", 5, "the macros nvcc predefines to say it compiles the file are undefined in HIP "
         "code", nvcc_compiler_macros),
    Rule("unmapped_headers", 2, "CUDA headers and constants with HIP counterparts that hipify-perl leaves",
         unmapped_headers),
    Rule("own_headers_kept", 1, "hipify-perl renames a project's own header whose path ends in a CUDA header's name",
         own_headers_kept),
    Rule("cuda_runtime_overloads", 5, "C++ overloads of the CUDA runtime that HIP lacks", cuda_runtime_overloads),
    Rule("cublas_gemm_ex", 5, "cublasSgemmEx and data types as GEMM compute types have no hipify mapping",
         cublas_gemm_ex),
    Rule("hip_vector_compound_operators", 3,
         "a project's component-wise vector operators clash with HIP's own", hip_vector_compound_operators),
    Rule("hip_defined_functions", 4, "overloads of CUDA's device functions that CUDA lacks and HIP defines make a "
         "project's own a redefinition", hip_defined_functions),
    Rule("thrust_cuda_backend", 3, "thrust's CUDA backend names have rocThrust HIP ones", thrust_cuda_backend),
    Rule("ptx_inline_asm", 4, "PTX inline assembly cannot be assembled for AMD GPUs", ptx_inline_asm),
    Rule("hip_elaborated_types", 1, "HIP's NVIDIA platform declares HIP's types as typedefs of CUDA's, which no "
         "enum, struct or union keyword may name", hip_elaborated_types),
    Rule("cooperative_groups_reduce", 3, "HIP's cooperative groups have no reduce", cooperative_groups_reduce),
    Rule("cuda_device_builtins", 3, "CUDA device builtins HIP lacks: __nv_atomic_*, cache-hinted loads and "
         "stores, __dp4a", cuda_device_builtins),
    Rule("warp_sync_builtins", 7, "warp-sync builtins: missing before HIP 6.2, 64-bit masks from HIP 6.2",
         warp_sync_builtins),
)


def ruleset_id(rules: tuple[Rule, ...] = RULES) -> str:
    """The rule set's identity: every rule's name and version, in order."""
    return ",".join(f"{r.name}@{r.version}" for r in rules)


def repair(text: str, target: RepairTarget, rules: tuple[Rule, ...] = RULES) -> tuple[str, list[str]]:
    """The repaired text and the names of the rules that changed it, in rule order."""
    fired = []
    for rule in rules:
        new = rule.apply(text, target)
        if new != text:
            fired.append(rule.name)
            text = new
    return text, fired


def repair_bytes(data: bytes, target: RepairTarget, rules: tuple[Rule, ...] = RULES) -> tuple[bytes, list[str]]:
    """:func:`repair` on a file's bytes (bytes that are not UTF-8 pass through unchanged)."""
    text, fired = repair(data.decode("utf-8", "surrogateescape"), target, rules)
    return text.encode("utf-8", "surrogateescape"), fired


class CachedRepair:
    """Repairs stored HIP files as cached actions: the key holds the rule set's id, the repair
    target and the input digest; the record names the repaired file and the rules that fired."""

    def __init__(self, store: Store, target: RepairTarget, rules: tuple[Rule, ...] = RULES):
        self.store = store
        self.target = target
        self.rules = rules
        self.ruleset = ruleset_id(rules)
        self.cache = CachedMap(store)
        self._done: dict[tuple[str, frozenset[str]], tuple[str, list[str]]] = {}

    def __call__(self, digest: str, shadowed: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
        """(digest of the repaired file, names of the rules that changed it); ``shadowed``: the header names the
        file's sample provides itself (:attr:`RepairTarget.shadowed`)."""
        if (digest, shadowed) not in self._done:
            target = replace(self.target, shadowed=shadowed)

            def compute(_: list[str]) -> list[tuple[str, dict[str, bytes]]]:
                repaired, fired = repair_bytes(self.store.get(digest), target, self.rules)
                return [(digest, {"hip": repaired, "fired": json.dumps(fired).encode()})]

            action = ActionSpec("cass", "cass-repair", self.ruleset, inputs={"input": digest}, outputs=("hip", "fired"),
                                env=target.key())
            record = self.cache.map({digest: action}, compute)[digest]
            self._done[digest, shadowed] = (record.outputs["hip"],
                                            json.loads(self.store.get_text(record.outputs["fired"])))
        return self._done[digest, shadowed]


def pipeline_repair_target(params: dict) -> RepairTarget:
    """What the pipeline's repair stage repairs for: ``params``' toolchains (HIP's NVIDIA back end among them) and
    AMD archs."""
    toolchains = pipeline_toolchains(params, ("nvidia", "amd"))
    amd, hip_nvidia = toolchains["amd"], Placement.of(params).toolchain("hip-nvidia")
    return RepairTarget(hip=amd.hip_version(), names=toolchain_names(toolchains["nvidia"], amd, hip_nvidia),
                        wave32=all_wave32(params["amd"]["archs"]), hipblas_v2=amd.hipblas_v2())


def pipeline_repairer(store: Store, params: dict) -> CachedRepair:
    """The repair layer as the pipeline's repair stage applies it (:func:`pipeline_repair_target`)."""
    return CachedRepair(store, pipeline_repair_target(params))

