"""Comparing two programs' standard output: exactly, with the fields that vary between a program's own runs masked
(:class:`Calibration`), or with numbers equal within a tolerance; and what a program's output says of itself (its
self-check, its usage)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

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


PASS = re.compile(r"\bPASS(?:ED)?\b|\b[Tt]ests? passed\b|\bResult\s*=\s*PASS\b")
FAIL = re.compile(r"\bFAIL(?:ED|URE)?\b|\b[Tt]ests? failed\b|\bResult\s*=\s*FAIL\b")
USAGE = re.compile(r"(?im)^\W*usage\s*:")
VOLATILE = "\x00volatile\x00"


def self_check(output: bytes) -> str | None:
    """What a program's own check says: ``fail`` (any failure line), ``pass``, or None (no self-check printed)."""
    text = output.decode(errors="replace")
    return "fail" if FAIL.search(text) else "pass" if PASS.search(text) else None


def prints_usage(*outputs: bytes) -> bool:
    """Whether a program printed its usage (``Usage: ...``) on stdout or stderr."""
    return any(USAGE.search(o.decode(errors="replace")) for o in outputs)


@dataclass(frozen=True)
class Calibration:
    """The fields of a program's output that differ between its own runs (timings, addresses, dates): by line,
    the word positions that vary, or None for a line whose words themselves vary in number."""

    lines: int
    volatile: dict[int, frozenset[int] | None]

    @property
    def fields(self) -> int:
        """How many fields are masked (a whole line counts as one)."""
        return sum(len(v) if v is not None else 1 for v in self.volatile.values())

    @classmethod
    def of(cls, outputs: list[bytes]) -> Calibration | None:
        """From a program's runs; None where they differ in their number of lines (nothing to align)."""
        split = [o.decode(errors="replace").splitlines() for o in outputs]
        if len({len(s) for s in split}) > 1:
            return None
        volatile: dict[int, frozenset[int] | None] = {}
        for n, versions in enumerate(zip(*split, strict=True)):
            if len(set(versions)) == 1:
                continue
            words = [v.split() for v in versions]
            if len({len(w) for w in words}) > 1:
                volatile[n] = None
            else:
                volatile[n] = frozenset(i for i, column in enumerate(zip(*words, strict=True)) if len(set(column)) > 1)
        return cls(len(split[0]), volatile)

    def mask(self, output: bytes) -> bytes | None:
        """``output`` with the volatile fields replaced by one marker (None: its lines do not align)."""
        lines = output.decode(errors="replace").splitlines()
        if len(lines) != self.lines:
            return None
        masked = []
        for n, line in enumerate(lines):
            where = self.volatile.get(n, frozenset())
            if where is None:
                masked.append(VOLATILE)
            elif where:
                masked.append(" ".join(VOLATILE if i in where else w for i, w in enumerate(line.split())))
            else:
                masked.append(line)
        return "\n".join(masked).encode()
