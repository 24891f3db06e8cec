"""Failure categories from compiler diagnostics, so every failed sample says why it failed.

Categories: ``generated_header`` (a project header the tree does not hold, such as one its build
generates from code: ingest lists them per sample as ``unresolved_includes``), ``missing_header``
(a system or library header the toolchain lacks), ``hipify_gap`` (a CUDA identifier or header left untranslated in
HIP code), ``unsupported_construct`` (the compiler rejects a language/arch feature),
``syntax``, ``undeclared``, ``no_output``, ``compile_error`` (anything else), and ``timeout`` or
``transient`` for runs that never finished.
"""

from __future__ import annotations

import re
from collections.abc import Collection

_MISSING_HEADER = re.compile(
    r"fatal error: .*(?:No such file or directory|file not found)|cannot open source file", re.I)
_MISSING_NAME = re.compile(r"fatal error: '?([^':\n]+?)'?(?:: No such file or directory| file not found)|"
                           r"cannot open source file \"([^\"]+)\"")
_CUDA_HEADER = re.compile(
    r"['\"<](?:cu\w*|nv\w*|mma|thrust|cub|cooperative_groups|sm_\d+_\w+|device_\w+|(?:texture|surface)_\w+)"
    r"[/\w.]*['\">]? file not found|(?:cu\w*|nv\w*|mma|thrust|cub)[/\w.]*: No such file")
_UNDECLARED = re.compile(
    r"(?:use of undeclared identifier|unknown type name|no member named|identifier) "
    r"['\"]?([A-Za-z_][\w:]*)['\"]?(?: is undefined)?")
_CUDA_NAME = re.compile(r"^(?:cuda|cu[A-Z]|CU|__shfl|__ballot|__any_sync|__all_sync|__activemask|"
                        r"__syncwarp|__match|__reduce|nvcuda|wmma|__nv|__ld(?:g|cg|ca|cs|lu|cv)\b|__st(?:wt|wb|cs|cg)\b|"
                        r"atomic\w*_system)")
"""CUDA's names (runtime, driver, warp-level and cache-hinted load/store intrinsics, WMMA) that no HIP declares."""
_UNSUPPORTED = re.compile(r"not supported|unsupported|is not allowed|requires .* (?:arch|target)", re.I)
_SYNTAX = re.compile(r"error: expected|syntax error|expected a ['\"]", re.I)


def first_error_line(stderr: str) -> str:
    """The first line that reports an error (or the first non-empty line)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else ""


def missing_header(stderr: str) -> str | None:
    """The name of the first header a compiler could not find, as the source spelled it."""
    m = _MISSING_NAME.search(stderr)
    return (m.group(1) or m.group(2)).strip() if m else None


def categorize(stderr: str, vendor: str, unresolved: Collection[str] = ()) -> str:
    """The failure category of a failed compile from its stderr; ``unresolved`` are the sample's
    includes of project headers its tree does not hold."""
    if _MISSING_HEADER.search(stderr):
        if vendor == "amd" and _CUDA_HEADER.search(stderr):
            return "hipify_gap"   # a CUDA header left in HIP code, even under a folder the tree also has
        return "generated_header" if missing_header(stderr) in unresolved else "missing_header"
    for match in _UNDECLARED.finditer(stderr):
        if vendor == "amd" and _CUDA_NAME.match(match.group(1)):
            return "hipify_gap"
    if _SYNTAX.search(stderr):
        return "syntax"
    if _UNDECLARED.search(stderr):
        return "undeclared"
    if _UNSUPPORTED.search(stderr):
        return "unsupported_construct"
    return "compile_error"
