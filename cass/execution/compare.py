"""Comparing two programs' standard output: exactly, or with numbers equal within a tolerance."""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b", re.IGNORECASE)


def first_difference(expected: bytes, actual: bytes) -> str:
    """Where two outputs first differ: ``line N: <expected> | <actual>`` (lines cut at 200 characters)."""
    a, b = expected.decode(errors="replace").splitlines(), actual.decode(errors="replace").splitlines()
    for n, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            return f"line {n}: {x[:200]!r} | {y[:200]!r}"
    if len(a) == len(b):
        return "outputs differ only in line endings or trailing bytes"
    n = min(len(a), len(b)) + 1
    longer, which = (a, "expected") if len(a) > len(b) else (b, "actual")
    return f"line {n}: only the {which} output has {longer[n - 1][:200]!r}"


def _close(x: str, y: str, rtol: float, atol: float) -> bool:
    a, b = float(x), float(y)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return a == b or abs(a - b) <= atol + rtol * abs(a)


def tolerant_equal(expected: bytes, actual: bytes, rtol: float, atol: float) -> bool:
    """The same text around the numbers, and every number within ``atol + rtol * |expected|`` of its peer."""
    a, b = expected.decode(errors="replace"), actual.decode(errors="replace")
    if NUMBER.split(a) != NUMBER.split(b):   # the text between the numbers, and as many numbers
        return False
    return all(_close(x, y, rtol, atol) for x, y in zip(NUMBER.findall(a), NUMBER.findall(b), strict=True))
