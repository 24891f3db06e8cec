"""The paper's source filters, each drop with its reason (stage ``filter``: :mod:`cass.stages.filter`)."""

from __future__ import annotations

import re

from cass.text.cuda import strip_comments, strip_comments_and_strings
from toolchains.language import is_opencl

_KERNEL = re.compile(r"\b__global__\b")
_OPENCL_QUALIFIER = (r"\b(?:__kernel|kernel)\s+(?:__attribute__\s*\(\([^;{}]*?\)\)\s*)*void\b"
                     r"|\bvoid\s+(?:__kernel|kernel)\b")
_OPENCL_KERNEL = re.compile(_OPENCL_QUALIFIER)
"""``__kernel void``, with attributes between (``__kernel __attribute__((reqd_work_group_size(64,1,1))) void``), or
``void __kernel``: not the word ``kernel`` alone, a common variable name (a filter's kernel)."""
_HELLO = re.compile(r'"[^"\n]*hello[\s,_-]*(?:world|cuda|gpu|from)[^"\n]*"', re.I)
TRIVIAL_CODE_LINES = 30
_KERNEL_BODY = re.compile(r"__global__[^{;]*\{\s*\}")
_OPENCL_KERNEL_BODY = re.compile(rf"(?:{_OPENCL_QUALIFIER})\s+\w+\s*\([^{{;]*\)\s*\{{\s*\}}")


def kernel_patterns(path: str) -> tuple[re.Pattern, re.Pattern]:
    """(a kernel definition, an empty kernel) in the language of the file at ``path``."""
    return (_OPENCL_KERNEL, _OPENCL_KERNEL_BODY) if is_opencl(path) else (_KERNEL, _KERNEL_BODY)


def defines_kernel(text: str, path: str = "") -> bool:
    """Whether a text (of the file at ``path``) defines a kernel outside comments and strings."""
    kernel = kernel_patterns(path)[0]
    return bool(kernel.search(text)) and bool(kernel.search(strip_comments_and_strings(text)))


def drop_reason(source: str, params: dict, kernel_in_headers: bool = False, path: str = "") -> tuple[str, str] | None:
    """Why a source (of the main file at ``path``) fails the filters (reason, detail), or None if it passes;
    ``kernel_in_headers``: a local header it includes defines a kernel."""
    kernel, empty_kernel = kernel_patterns(path)
    lines = source.count("\n") + (0 if source.endswith("\n") or not source else 1)
    if lines < params["min_lines"]:
        return "too_short", f"{lines} lines < {params['min_lines']}"
    if lines > params["max_lines"]:
        return "too_long", f"{lines} lines > {params['max_lines']}"
    code = strip_comments_and_strings(source)
    kernels = len(kernel.findall(code))
    if params["require_kernel"] and kernels == 0 and not kernel_in_headers:
        keyword = "__kernel" if is_opencl(path) else "__global__"
        return "no_kernel", f"no {keyword} function in the file or its local headers"
    if params["drop_trivial"]:
        code_without_comments = strip_comments(source)
        code_lines = sum(1 for ln in code_without_comments.splitlines() if ln.strip())
        if code_lines < TRIVIAL_CODE_LINES and _HELLO.search(code_without_comments):
            return "trivial", f"hello-world boilerplate ({code_lines} lines of code print a greeting)"
        if kernels and len(empty_kernel.findall(code)) == kernels:
            return "trivial", "every kernel has an empty body"
    return None
