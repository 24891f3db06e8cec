"""CUDA-to-HIP name tables derived from the installed toolchains, not listed by hand.

The repair layer needs to know, for the CUDA names hipify-perl leaves in a HIP text, their HIP
counterparts. Each table here is computed from the files of the toolchains (NVIDIA, AMD, and HIP on NVIDIA):

* **headers**: hipify-perl's own header map (read from the installed script's substitutions), and
  for a CUDA header it does not map, the HIP header that names the most of what hipify-perl maps that
  header's identifiers to (``cuda_bf16.h`` -> ``hip/hip_bfloat16.h`` for hipify-perl 6.0, which maps
  ``__nv_bfloat16`` to ``hip_bfloat16``), else one found on the AMD include path by the naming HIP uses
  (``math_constants.h`` -> ``hip/hip_math_constants.h``, ``surface_types.h`` -> ``hip/surface_types.h``),
  else the HIP header of the mapped header whose folder it belongs to (``cub/block/block_reduce.cuh``
  -> ``<cub/cub.cuh>``'s ``hipcub/hipcub.hpp``);
* **presence macros**: the include guard of every CUDA header reached from a mapped one, and the
  empty marker macros it defines (``CUSPARSEAPI``), each paired with the include guard of the HIP
  header its header maps to, or where it maps to none, of the nearest mapped header including it
  (``__DRIVER_TYPES_H__`` -> ``HIP_INCLUDE_HIP_DRIVER_TYPES_H``); names the HIP headers define
  themselves are left out;
* **version macros**: the numeric macros with ``VER`` in their name that the CUDA headers define or
  nvcc predefines (``CUDA_VERSION``, ``CUDART_VERSION``, ``__CUDACC_VER_MAJOR__``), with their
  values on the NVIDIA side;
* **compiler macros**: of the macros that say which compiler compiles the file (:data:`COMPILER_MACROS`:
  ``__NVCC__``), those nvcc predefines as ``1``, hipify-perl does not map and HIP does not define, each paired with
  what hipify-perl maps ``__CUDACC__`` to (``__HIPCC__``), the macro that says HIP's compiler does; and the HIP
  macros hipify-perl writes (``__HIPCC__``, ``__HIPCUB_ALIGN_BYTES``): a file that tests another decides for HIP
  itself;
* **constants**: macros of a CUDA header whose HIP header defines the same macro under HIP's prefix
  with the same definition (``CUDART_PI_F`` -> ``HIP_PI_F``);
* **runtime overloads**: the C++ overloads CUDA's runtime header adds to its C API (a two-argument
  ``cudaEventCreate``, a ``cudaFuncSetAttribute`` that takes the kernel itself), as the calls they make,
  where HIP's runtime header has no overload of its own on one of its platforms (:func:`runtime_overloads`);
* **NVIDIA typedefs**: the identifiers hipify-perl writes (``hipMemcpyKind`` for ``cudaMemcpyKind``) that HIP's
  NVIDIA platform declares as typedefs (``typedef enum cudaMemcpyKind hipMemcpyKind;``), from the HIP-on-NVIDIA
  toolchain's headers (:func:`toolchains.hip_nvidia.platform_typedefs`);
* **cooperative groups**: which of CUDA's cooperative-groups functions asked about (``reduce``:
  :data:`toolchains.amd.COOPERATIVE_GROUPS_FUNCTIONS`) the HIP header hipify-perl maps ``cooperative_groups.h``
  to, with what it includes, never names (HIP 7.2 has no ``reduce``);
* **device builtins**: which of CUDA's device builtins asked about (:data:`toolchains.amd.CUDA_DEVICE_BUILTINS`:
  the CUDA 12.8 ``__nv_atomic_*`` builtins, the cache-hinted loads and stores, ``__dp4a``) the HIP header hipify-perl
  maps ``cuda_runtime.h`` to (the one hipcc includes first), with what it includes, never names;
* **HIP definitions**: per HIP platform, the device functions HIP's runtime header defines there, by name and
  parameter types (``atomicMin(float*, float)``, which CUDA lacks and both define), as the platform's compiler
  preprocesses it (hipcc for AMD, nvcc for NVIDIA, where CUDA's own are among them).

:func:`derive` computes them from the toolchains' header indexes; :func:`cached_names` once per set of toolchain
fingerprints, kept in this machine's cache.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import blake3

from store.machine_cache import machine_cache
from toolchains.amd import COOPERATIVE_GROUPS_FUNCTIONS, CUDA_DEVICE_BUILTINS, NVCC_PREINCLUDE

if TYPE_CHECKING:
    from toolchains.base import Toolchain

SCHEME = 10
"""Enters the cache key and the tables' digest: bump when the derivation changes."""

COMPILER_MACROS = frozenset({"__NVCC__"})
"""nvcc's predefined macros that say which compiler compiles the file. Its feature flags
(``__NVCC_DIAG_PRAGMA_SUPPORT__``: ``nv_diag_suppress`` pragmas; ``__CUDACC_DEVICE_ATOMIC_BUILTINS__``: the
``__nv_atomic_*`` builtins) say what nvcc has, which HIP's compiler does not: they stay undefined in HIP code."""

_NUMERIC = re.compile(r"[\s()0-9xXa-fA-FuUlL+*/%<>&|^~-]+")


class HeaderIndex:
    """A toolchain's :func:`toolchains.headers.index_headers`, with include closures."""

    def __init__(self, headers: dict[str, dict]):
        self.headers = headers
        self.canonical = {alias: name for name, facts in headers.items() for alias in facts.get("names", [name])}
        self._closures: dict[str, frozenset[str]] = {}

    def __contains__(self, name: str) -> bool:
        return name in self.canonical

    def facts(self, name: str) -> dict:
        return self.headers[self.canonical[name]]

    def closure(self, root: str) -> frozenset[str]:
        """Every header ``root`` includes, directly or not (every branch of every conditional)."""
        root = self.canonical[root]
        if root not in self._closures:
            seen, todo = {root}, [root]
            while todo:
                for included in self.headers[todo.pop()]["includes"]:
                    if included not in seen and included in self.headers:
                        seen.add(included)
                        todo.append(included)
            self._closures[root] = frozenset(seen)
        return self._closures[root]

    def closure_objects(self, root: str) -> dict[str, set[str]]:
        """Every definition of every object-like macro in ``root``'s closure, by name."""
        found: dict[str, set[str]] = {}
        for member in sorted(self.closure(root)):
            for name, body in self.headers[member]["objects"].items():
                found.setdefault(name, set()).add(body)
        return found

    def defined(self, roots: Iterable[str]) -> set[str]:
        """Every macro the closures of ``roots`` define."""
        return {name for root in roots for member in self.closure(root)
                for name in (*self.headers[member]["objects"], *self.headers[member]["functions"])}

    def presence_macro(self, name: str) -> str | None:
        """The macro whose definition says the header was included: its guard, else its first empty marker."""
        facts = self.facts(name)
        return facts["guard"] or next((n for n, body in facts["objects"].items() if not body), None)


@dataclass(frozen=True)
class CudaHipNames:
    """The derived tables (see the module docstring); ``hipify_headers``: hipify-perl's own header map; of the
    CUDA headers it maps that the NVIDIA side installs, ``covered``: those with a presence macro pair, and
    ``uncovered``: those without, and why."""

    headers: dict[str, str] = field(default_factory=dict)
    presence: dict[str, str] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    constants: dict[str, str] = field(default_factory=dict)
    overloads: dict[str, dict[str, dict]] = field(default_factory=dict)
    """HIP runtime function -> arity -> the call CUDA's C++ overload of that arity makes (``target``, ``args`` over
    ``params``, ``defaults`` of the optional ones), where HIP has no such overload"""
    nvidia_typedefs: list[str] = field(default_factory=list)
    cooperative_groups: list[str] = field(default_factory=list)
    """CUDA's cooperative-groups functions HIP's cooperative groups lack (of those asked about: ``reduce``)"""
    device_builtins: list[str] = field(default_factory=list)
    """CUDA's device builtins HIP's runtime header lacks (of :data:`toolchains.amd.CUDA_DEVICE_BUILTINS`)"""
    hip_definitions: dict[str, dict[str, list[list[str]]]] = field(default_factory=dict)
    """HIP platform (``amd``, ``nvidia``) -> device function -> the parameter types of each of its overloads HIP's
    runtime header defines there"""
    compiler: dict[str, str] = field(default_factory=dict)
    """nvcc's compiler macro -> HIP's (``__NVCC__`` -> ``__HIPCC__``)"""
    hipified_macros: list[str] = field(default_factory=list)
    """The ``__HIP*`` names hipify-perl writes"""
    hipify_headers: dict[str, str] = field(default_factory=dict)
    covered: list[str] = field(default_factory=list)
    uncovered: dict[str, str] = field(default_factory=dict)

    @cached_property
    def digest(self) -> str:
        """Of the tables the repair rules read: enters the repair action's key."""
        return blake3.blake3(json.dumps([SCHEME, self.tables()], sort_keys=True).encode()).hexdigest()

    def tables(self) -> dict[str, dict | list]:
        return {"headers": self.headers, "presence": self.presence, "versions": self.versions,
                "constants": self.constants, "overloads": self.overloads,
                "nvidia_typedefs": self.nvidia_typedefs, "cooperative_groups": self.cooperative_groups,
                "device_builtins": self.device_builtins, "hip_definitions": self.hip_definitions,
                "compiler": self.compiler,
                "hipified_macros": self.hipified_macros}

    def provided_by(self, paths: Iterable[str]) -> frozenset[str]:
        """The derived header names (``cub/x.cuh``, ``math_constants.h``) that files of these paths provide, and the
        paths under a folder (``util/cuda.h``, ``src/util/cuda.h``) that end in a header hipify-perl maps: a project's
        own header hipify-perl renames in its includes."""
        tails = {"/".join(parts[i:]) for p in paths for parts in [p.split("/")] for i in range(len(parts))}
        derived = {h for h in self.headers if h in tails}   # h is a path or what follows one of its "/"
        renamed = {t for t in tails if any(t.endswith("/" + h) for h in self.hipify_headers)}
        return frozenset(derived | renamed)

    def summary(self) -> str:
        return (f"{len(self.covered)} CUDA headers hipify-perl maps with a guard pair "
                f"({len(self.uncovered)} without), {len(self.presence)} presence macros (guards and markers), "
                f"{len(self.headers)} more headers, {len(self.versions)} version macros, "
                f"{len(self.constants)} constants, {sum(map(len, self.overloads.values()))} runtime overloads, "
                f"{len(self.nvidia_typedefs)} HIP names that are typedefs on NVIDIA, "
                f"cooperative groups lacking {', '.join(self.cooperative_groups) or 'nothing asked about'} in HIP, "
                f"{len(self.device_builtins)} CUDA device builtins HIP lacks, "
                f"device functions HIP defines: "
                f"{', '.join(f'{sum(map(len, t.values()))} on {p}' for p, t in self.hip_definitions.items())}, "
                f"{len(self.compiler)} compiler macros")


def _evaluate(body: str, known: dict[str, str]) -> str | None:
    """A numeric macro's value as an integer expression of literals (other numeric macros expanded), or None."""
    for _ in range(8):
        expanded = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: f"({known[m.group(0)]})" if m.group(0) in known
                          else m.group(0), body)
        if expanded == body:
            break
        body = expanded
    if not _NUMERIC.fullmatch(body) or not re.search(r"\d", body):
        return None
    return " ".join(body.split())


def is_version_name(name: str) -> bool:
    """``CUDA_VERSION``, ``CUBLAS_VER_MAJOR``, ``__CUDACC_VER_MINOR__``: a part of the name is VER or ends in
    VERSION."""
    return any(part == "VER" or part.endswith("VERSION") for part in name.split("_"))


def _hip_candidates(cuda_name: str) -> list[str]:
    """HIP's names for a top-level CUDA header: cuda_x.h -> hip/hip_x.h; x.h -> hip/hip_x.h, hip/x.h."""
    if "/" in cuda_name:
        return []
    if "cuda" in cuda_name:
        return [f"hip/{cuda_name.replace('cuda', 'hip')}"]
    return [f"hip/hip_{cuda_name}", f"hip/{cuda_name}"]


def _folder(name: str) -> str:
    """The folder a header name belongs to (``""`` for a top-level header)."""
    return name.split("/")[0] if "/" in name else ""


def _stem(name: str) -> str:
    return name.rsplit("/", 1)[-1].split(".")[0]


def _library_token(name: str) -> str:
    """The library a header name stands for, as macro names spell it: ``cusparse.h`` -> ``CUSPARSE``."""
    return re.split(r"[_\d]", _stem(name), maxsplit=1)[0].upper()


def _prefix(names: Iterable[str]) -> str | None:
    counts = Counter(n.split("_", 1)[0] + "_" for n in names if "_" in n.strip("_") and not n.startswith("_"))
    return counts.most_common(1)[0][0] if counts else None


def _public(header: str) -> bool:
    """A header code includes by name: at most one folder deep, not in a ``*_detail`` folder."""
    parts = header.split("/")
    return len(parts) <= 2 and not any(part.endswith("_detail") for part in parts[:-1])


def _declaring(hip: HeaderIndex, names: dict[str, str]) -> Callable[[Iterable[str], str | None], str | None]:
    """A function from a CUDA header's identifiers (and the HIP header HIP's naming suggests, if any) to the
    public HIP header whose closure names the most of what hipify-perl maps them to, provided it names at least
    half of them (the suggested one where it does too; else the smallest closure, then the name); else the
    suggested header. Reserved macro names (``__HIPCC__``) say nothing of a header and are left out."""
    targets = set(names.values())
    named = {h: set().union(*(set(hip.facts(m).get("identifiers", [])) & targets for m in hip.closure(h)))
             for h in hip.headers if _public(h)}

    def best(cuda_names: Iterable[str], suggested: str | None) -> str | None:
        wanted = {t for n in cuda_names if (t := names.get(n)) and not (t.startswith("__") and t.endswith("__"))}
        hits = {h: len(wanted & found) for h, found in named.items()}
        top = max(hits.values(), default=0)
        if not top or 2 * top < len(wanted) or (suggested and 2 * hits.get(suggested, 0) >= len(wanted)):
            return suggested
        return min((h for h, n in hits.items() if n == top), key=lambda h: (len(hip.closure(h)), h))
    return best


def counterparts(cuda: HeaderIndex, hip: HeaderIndex, hipify: dict[str, str], names: dict[str, str],
                 uncovered: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(every CUDA header with a HIP header that stands for it, the ``#include`` names of those hipify-perl
    leaves as they are): hipify-perl's map; for a top-level header (named without a folder) it does not map,
    the HIP header that names the most of what hipify-perl maps its identifiers to (``names``), else one found
    by HIP's naming; then the nearest header of its folder that has one and includes it; then, for a folder
    named like a top-level header that has one and includes some of that folder (``cooperative_groups/``,
    ``cooperative_groups.h``), that one.
    CUDA headers hipify-perl maps to nothing HIP has go to ``uncovered``."""
    mapped: dict[str, str] = {}
    for cuda_name, hip_name in sorted(hipify.items()):
        if cuda_name not in cuda:
            continue
        if hip_name in hip:
            mapped[cuda_name] = hip_name
        else:
            uncovered[cuda_name] = f"hipify-perl maps it to {hip_name or 'nothing'}, not on the AMD include path"
    counterpart = dict(mapped)
    headers: dict[str, str] = {}
    declaring = _declaring(hip, names)
    reached = set().union(*(cuda.closure(m) for m in mapped))
    for name in sorted(reached | {n for n in cuda.headers if "/" not in n and n.endswith(".h")}):
        if name in counterpart or name in hipify:
            continue
        found = declaring(cuda.facts(name).get("identifiers", []),
                          next((c for c in _hip_candidates(name) if c in hip), None))
        if found:
            counterpart[name] = headers[name] = found
    closures = {name: cuda.closure(name) for name in counterpart}
    including: dict[str, list[str]] = {}
    for header, members in closures.items():
        for member in members:
            including.setdefault(member, []).append(header)
    for name in sorted(set(including) - set(counterpart)):
        folder = _folder(name)
        pool = [h for h in including[name] if _folder(h) == folder or (folder and _stem(h) == folder)]
        if pool:
            nearest = min(pool, key=lambda h: (len(closures[h]), h))
            counterpart[name] = counterpart[nearest]
            if folder and name not in hipify:
                headers[name] = counterpart[nearest]
    umbrella = {_stem(h): h for h in list(counterpart)   # cooperative_groups.h, which includes cooperative_groups/*
                if "/" not in h and any(_folder(m) == _stem(h) for m in cuda.closure(h))}
    for name in sorted(cuda.headers):
        if name not in counterpart and name not in hipify and (owner := umbrella.get(_folder(name))):
            counterpart[name] = headers[name] = counterpart[owner]
    return counterpart, headers


CAST_OF_NAME = re.compile(r"^((?:\(\s*[\w\s*]+\)\s*)*)([A-Za-z_]\w*)$")
"""An argument a runtime overload passes on: a name (a parameter or a constant), under casts only."""


def _renamed(expression: str, names: dict[str, str]) -> str:
    return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: names.get(m.group(0), m.group(0)), expression)


def _by_name(functions: list[dict]) -> dict[str, list[dict]]:
    by_name: dict[str, list[dict]] = {}
    for f in functions:
        by_name.setdefault(f["name"], []).append(f)
    return by_name


def runtime_overloads(cuda: HeaderIndex, hip: HeaderIndex, names: dict[str, str],
                      nvidia_platform: list[dict] | None = None) -> dict[str, dict[str, dict]]:
    """The C++ overloads of CUDA's runtime header that HIP lacks, as the calls they make: a CUDA function whose
    body is one ``return ::other(args)`` with every argument a parameter or constant under casts, renamed to HIP's
    names by hipify-perl's map, for each arity where HIP declares no overload of its own (a template for a
    template) on AMD or, given its runtime functions (``nvidia_platform``), on HIP's NVIDIA platform, and where,
    unless the overload only casts its parameters on to its own name, CUDA's C API does not take as many arguments
    (there the overload is chosen by type, which a rewrite cannot see)."""
    cuda_functions = [f for facts in cuda.headers.values() for f in facts.get("runtime", [])]
    amd_platform = [f for facts in hip.headers.values() for f in facts.get("runtime", [])]
    platforms = [_by_name(amd_platform), *([_by_name(nvidia_platform)] if nvidia_platform is not None else [])]
    c_api: dict[str, set[int]] = {}
    for f in cuda_functions:
        if f["target"] is None and not f["template"]:
            c_api.setdefault(f["name"], set()).update(range(f["required"], len(f["params"]) + 1))
    table: dict[str, dict[str, dict]] = {}
    for f in cuda_functions:
        hip_name, hip_target = names.get(f["name"]), names.get(f["target"] or "")
        matches = [CAST_OF_NAME.match(a) for a in f["args"] or []]
        if not hip_name or not hip_target or not all(matches):
            continue
        passes_on = f["target"] == f["name"] and [m.group(2) for m in matches] == f["params"]
        for arity in range(f["required"], len(f["params"]) + 1):
            if arity in c_api.get(f["name"], ()) and not passes_on:
                continue
            if all(any(h["template"] == f["template"] and h["required"] <= arity <= len(h["params"])
                       for h in functions.get(hip_name, [])) for functions in platforms):
                continue
            table.setdefault(hip_name, {}).setdefault(str(arity), {
                "target": hip_target, "params": f["params"], "required": f["required"],
                "defaults": [_renamed(d, names) for d in f["defaults"]],
                "args": [_renamed(a, names) for a in f["args"]]})
    return dict(sorted(table.items()))


def derive(cuda_index: dict, hip_index: dict, hip_nvidia_index: dict | None = None) -> CudaHipNames:
    """The tables from the NVIDIA toolchain's header index (``headers``, ``predefined``), the AMD one's
    (``headers``, ``hipify``, ``hipify_names``) and the HIP-on-NVIDIA one's (``typedefs``, ``runtime``)."""
    cuda, hip = HeaderIndex(cuda_index.get("headers", {})), HeaderIndex(hip_index.get("headers", {}))
    hipify = hip_index.get("hipify", {})
    uncovered: dict[str, str] = {}
    names = hip_index.get("hipify_names", {})
    counterpart, headers = counterparts(cuda, hip, hipify, names, uncovered)
    hip_defined = hip.defined(set(counterpart.values()))

    defined_in = Counter(n for name in counterpart for n in cuda.facts(name)["objects"])
    presence: dict[str, str] = {}
    for name, hip_name in sorted(counterpart.items()):
        facts, hip_macro = cuda.facts(name), hip.presence_macro(hip_name)
        token = _library_token(name)
        markers = [n for n in facts["empty"] if defined_in[n] == 1 and token in n.upper() and n != facts["guard"]]
        for macro in [facts["guard"], *markers]:
            if hip_macro and macro and macro not in hip_defined:
                presence.setdefault(macro, hip_macro)
    for cuda_name in sorted(set(hipify) - set(uncovered)):
        if cuda_name in cuda and (guard := cuda.facts(cuda_name)["guard"]) not in presence:
            uncovered[cuda_name] = (f"{cuda_name} has no include guard" if guard is None else
                                    f"HIP defines {guard}" if guard in hip_defined else
                                    f"{counterpart[cuda_name]} has no guard or marker macro")

    numeric: dict[str, str] = {}
    for name in sorted(counterpart):
        facts = cuda.facts(name)
        for macro in facts["unconditional"]:
            numeric.setdefault(macro, facts["objects"][macro])
    numeric.update(cuda_index.get("predefined", {}))
    versions = {name: value for name in sorted(numeric) if is_version_name(name) and name not in hip_defined
                and (value := _evaluate(numeric[name], {k: v for k, v in numeric.items() if k != name}))}
    hip_compiler, predefined = names.get("__CUDACC__"), cuda_index.get("predefined", {})
    compiler = {name: hip_compiler for name in sorted(COMPILER_MACROS)
                if hip_compiler and predefined.get(name) == "1" and name not in names and name not in hip_defined}

    constants: dict[str, str] = {}
    for name, hip_name in sorted(counterpart.items()):
        cuda_objects = {n: b for n, b in cuda.facts(name)["objects"].items() if b}
        hip_objects = hip.closure_objects(hip_name)
        cp, hp = _prefix(cuda_objects), _prefix(hip_objects)
        if not cp or not hp or cp == hp:
            continue
        for macro, body in cuda_objects.items():
            twin = hp + macro.removeprefix(cp)
            if macro.startswith(cp) and macro not in hip_defined and body.replace(cp, hp) in hip_objects.get(twin, ()):
                constants.setdefault(macro, twin)
    overloads = runtime_overloads(cuda, hip, names, (hip_nvidia_index or {}).get("runtime"))
    nvidia_typedefs = sorted(set(names.values()) & set((hip_nvidia_index or {}).get("typedefs", [])))
    covered = sorted(n for n in hipify if n in cuda and n not in uncovered)
    return CudaHipNames(
        headers, presence, versions, constants, overloads, nvidia_typedefs,
        cooperative_groups=_lacking(hip, hipify.get("cooperative_groups.h"), COOPERATIVE_GROUPS_FUNCTIONS),
        device_builtins=_lacking(hip, hipify.get(NVCC_PREINCLUDE), CUDA_DEVICE_BUILTINS), compiler=compiler,
        hip_definitions={"amd": hip_index.get("definitions", {}),
                         "nvidia": (hip_nvidia_index or {}).get("definitions", {})},
        hipified_macros=sorted({n for n in names.values() if n.startswith("__HIP")}), hipify_headers=hipify,
        covered=covered, uncovered=uncovered)


def _lacking(hip: HeaderIndex, header: str | None, asked: frozenset[str]) -> list[str]:
    """The names of ``asked`` that the HIP ``header``, with what it includes, never names (none where HIP has no
    such header: nothing is known)."""
    if header not in hip:
        return []
    named = set().union(*(hip.facts(m).get("identifiers", ()) for m in hip.closure(header)))
    return sorted(asked - named)


_CACHE_FORMAT = 3
"""Of the cached tables' file (2: ``covered`` kept; 3: ``hip_definitions``): a new format recomputes them."""


def cached_names(key: dict, compute: Callable[[], CudaHipNames]) -> CudaHipNames:
    """The tables for toolchains identified by ``key`` (their fingerprints), computed by ``compute()`` once
    per key and kept in this machine's cache."""
    identity = {"scheme": SCHEME, "format": _CACHE_FORMAT, **key}
    digest = blake3.blake3(json.dumps(identity, sort_keys=True).encode()).hexdigest()
    path = machine_cache("cuda_hip_names") / f"{digest}.json"
    try:
        return CudaHipNames(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        pass
    names = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(asdict(names), sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass   # a read-only cache: the tables are still right, only not kept
    return names


def toolchain_names(nvidia: Toolchain, amd: Toolchain, hip_nvidia: Toolchain) -> CudaHipNames:
    """The tables of the installed (or reported) toolchains, derived once per set of fingerprints of the tools
    whose files they come from (nvcc's tree, hipcc's HIP headers, hipify-perl's script, HIP's NVIDIA headers)."""
    key = {"nvcc": nvidia.fingerprint("nvcc"), "hipcc": amd.fingerprint("hipcc"),
           "hipify-perl": amd.fingerprint("hipify-perl"), "hip-nvidia": hip_nvidia.fingerprint("nvcc"),
           "cooperative_groups": sorted(COOPERATIVE_GROUPS_FUNCTIONS),   # what the AMD index records of HIP's names
           "device_builtins": sorted(CUDA_DEVICE_BUILTINS), "compiler_macros": sorted(COMPILER_MACROS)}
    return cached_names(key, lambda: derive(nvidia.header_index(), amd.header_index(), hip_nvidia.header_index()))
