"""Comparing a translation's standard output with its CUDA original's own runs, and what an output says of itself
(its self-check, its usage).

The CUDA original runs at least :data:`MIN_CALIBRATION_RUNS` times; its outputs, aligned line by line and word by
word (:class:`Calibration`), say what a translation must reproduce:

- a **steady** line or word (the same in every CUDA run) must be the same in the translation's output, but that a
  number may differ within the tolerance: an integer only by an integer equal to it, other numbers within
  ``atol + rtol * |expected|``;
- a **volatile** word, one that is variable by nature (:func:`volatile_fields`: a timing or rate by its label, its
  unit or its column's header, an address, a date or clock time), is masked where it varies between the CUDA runs,
  and where it is steady if it is a timing by itself (its own unit, an address, a clock, a timing column's header):
  any value passes;
- any other word that varies is **ranged**: each number in it must lie within the CUDA runs' range widened by their
  spread on both sides (integers exact at the ends), the text around the numbers the same;
- a line whose number of words varies between the CUDA runs is masked where every number in it is volatile, else
  the translation's line must be one of the CUDA runs' versions.

An output with no **computed value** (:meth:`Calibration.computed_values`) tells nothing about the computation: it
is judged ``no_signal``, never a match. Outputs are decoded so that bytes that are not UTF-8 stay distinct.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

DECODING = "surrogateescape"
"""How outputs are read as text: bytes that are not UTF-8 keep their identity (two different bytes never compare
equal)."""
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|(?<![A-Za-z])[-+]?(?:inf|nan)\b", re.IGNORECASE)
INTEGER = re.compile(r"[-+]?\d+")
MIN_CALIBRATION_RUNS = 3
"""The fewest runs of a CUDA original its outputs are calibrated on: with two, a value that happens to agree twice
(a timing in whole milliseconds) is taken as steady, and a range has no spread to speak of."""
SIGNAL_SPREAD = 0.05
"""A value that varies between the CUDA runs counts as a computed value only where its runs agree this closely
(spread over magnitude): one that varies more could be matched by almost anything in its range."""

TIMING = re.compile(r"\b(?:time(?!\s*-?\s*steps?\b)|timings?|timed|timer|elapsed|took|duration|runtime|run-time|"
                    r"latency|speed-?ups?|throughput|bandwidth|perf|performance|efficiency|[kmgtp]?flops|[kmgt]ops|"
                    r"fps|per\s+sec(?:ond)?|clocks?|cycles|ticks|date)\b", re.IGNORECASE)
"""Labels of values that vary by nature between runs of a correct program (``time step`` names a step, not a
timing)."""
UNIT = re.compile(r"[(\[]?(?:[munµ]?s|secs?|seconds?|[mun]secs?|(?:milli|micro|nano)seconds?|minutes?|hours?|"
                  r"[\w.]*/s(?:ec(?:ond)?s?)?|[kmgtp]?flops|[kmgt]?hz|cycles?|ticks?)[)\]]?[.,;:]*", re.IGNORECASE)
"""Units of time and rate, alone as a word (``(ms)``, ``GB/s``, ``GHash/sec``) or glued to a number (``12.5ms``)."""
COUNTED = re.compile(r"cycles?|ticks?", re.IGNORECASE)
"""Units of :data:`UNIT` that count rather than time: a steady count of them is compared."""
HEX_VALUE = re.compile(r"(?:0x)?(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}")
"""A hash or bit pattern printed in hex (``bbde464b6355...``): a computed value, though its digits touch letters."""
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b|\b\d{4}-\d{2}-\d{2}\b")


def text_of(output: bytes) -> str:
    return output.decode("utf-8", DECODING)


def first_difference(expected: bytes, actual: bytes) -> str:
    """Where two outputs first differ: ``line N: <expected> | <actual>`` (lines cut at 200 characters)."""
    a, b = text_of(expected).splitlines(), text_of(actual).splitlines()
    for n, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            return f"line {n}: {x[:200]!r} | {y[:200]!r}"
    if len(a) == len(b):
        return "outputs differ only in line endings or trailing bytes"
    n = min(len(a), len(b)) + 1
    longer, which = (a, "expected") if len(a) > len(b) else (b, "actual")
    return f"line {n}: only the {which} output has {longer[n - 1][:200]!r}"


def _is_integer(token: str) -> bool:
    return INTEGER.fullmatch(token) is not None


def numbers_close(expected: str, actual: str, rtol: float, atol: float) -> bool:
    """Two number tokens: an integer only as an integer equal to it; any other number within ``atol + rtol *
    |expected|`` (NaN only as NaN, an infinity only as itself)."""
    if _is_integer(expected):
        return _is_integer(actual) and int(expected) == int(actual)
    a, b = float(expected), float(actual)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return a == b or abs(a - b) <= atol + rtol * abs(a)


def tolerant_equal(expected: bytes | str, actual: bytes | str, rtol: float, atol: float) -> bool:
    """The same text around the numbers, and every number close to its peer (:func:`numbers_close`)."""
    a = text_of(expected) if isinstance(expected, bytes) else expected
    b = text_of(actual) if isinstance(actual, bytes) else actual
    if NUMBER.split(a) != NUMBER.split(b):   # the text between the numbers, and as many numbers
        return False
    return all(numbers_close(x, y, rtol, atol) for x, y in zip(NUMBER.findall(a), NUMBER.findall(b), strict=True))


def _spread(column: tuple[str, ...]) -> tuple[float, float] | None:
    """(lowest, highest) of a column of number tokens, or None where one is not finite."""
    values = [float(v) for v in column]
    if any(math.isnan(v) or math.isinf(v) for v in values):
        return None
    return min(values), max(values)


def in_range(versions: list[str], actual: str, rtol: float, atol: float) -> bool:
    """Whether a word that varies between the CUDA runs (``versions``) is matched by ``actual``: the same text
    around the numbers as every version, and each number within the versions' range widened by their spread on both
    sides (and the tolerance; integers only by integers)."""
    skeleton = NUMBER.split(versions[0])
    if any(NUMBER.split(v) != skeleton for v in versions) or NUMBER.split(actual) != skeleton:
        return any(tolerant_equal(v, actual, rtol, atol) for v in versions)
    columns = zip(*(NUMBER.findall(v) for v in versions), strict=True)
    for column, got in zip(columns, NUMBER.findall(actual), strict=True):
        if len(set(column)) == 1:
            if not numbers_close(column[0], got, rtol, atol):
                return False
            continue
        bounds = _spread(column)
        integers = all(map(_is_integer, column))
        if bounds is None or (integers and not _is_integer(got)):
            if got not in column:
                return False
            continue
        lo, hi = bounds
        slack = 0 if integers else atol + rtol * max(abs(lo), abs(hi))
        if not lo - (hi - lo) - slack <= float(got) <= hi + (hi - lo) + slack:
            return False
    return True


def _glued(text: str, match: re.Match) -> bool:
    before = text[match.start() - 1] if match.start() else ""
    after = text[match.end()] if match.end() < len(text) else ""
    return bool(re.match(r"[A-Za-z_]", before) or re.match(r"[A-Za-z_]", after))


def _label_numbers(word: str) -> bool:
    """Whether every number in ``word`` is part of a name or glued to letters (``float3``, ``sm_90``, ``3x3``)."""
    return all(_glued(word, m) for m in NUMBER.finditer(word))


def _marked_volatile(words: list[str], i: int) -> bool:
    """Whether word ``i`` is volatile by itself or its next word: an address, a date or clock time, a number with a
    unit of time or rate glued to it or after it."""
    word = words[i]
    if ADDRESS.search(word) or CLOCK.search(word):
        return True
    if NUMBER.search(word) and UNIT.fullmatch(NUMBER.sub("", word).strip("()[]{},;:=")):
        return True
    return i + 1 < len(words) and UNIT.fullmatch(words[i + 1]) is not None


def _timed_by_itself(words: list[str], i: int) -> bool:
    """Whether word ``i`` is volatile by itself or its unit alone, a count of cycles or ticks aside (``3 cycles``)."""
    unit = NUMBER.sub("", words[i]).strip("()[]{},;:=") or (words[i + 1] if i + 1 < len(words) else "")
    return _marked_volatile(words, i) and COUNTED.fullmatch(unit.strip("()[]{},;:=.")) is None


def volatile_fields(words: list[str]) -> list[bool]:
    """Which words of a line are variable by nature: an address, a date or clock time, a number with a unit of time
    or rate (glued, or the next word), or a number whose label (the words since the previous number) names a timing
    or rate; a bare number right after another field is of that field's kind (``5.2 4.9 (us)``, ``552 +- 237``)."""
    kinds: list[bool] = []
    previous = None   # the last word that holds a number of its own (not one of a name's)
    for i, word in enumerate(words):
        if _marked_volatile(words, i):
            volatile = True
        else:
            label = " ".join(words[(previous + 1 if previous is not None else 0):i])
            if re.search(r"[A-Za-z]", label):
                volatile = TIMING.search(label) is not None
            else:
                volatile = previous is not None and kinds[previous]
        kinds.append(volatile)
        if NUMBER.search(word) and not _label_numbers(word):
            previous = i
    return kinds


def volatile_field(words: list[str], i: int) -> bool:
    """Whether word ``i`` of a line is variable by nature (:func:`volatile_fields`)."""
    return volatile_fields(words)[i]


def names_a_timing(word: str) -> bool:
    """Whether a column header names a timing or rate (``Avg(ms)``, ``BW(GB/s)``, ``time``)."""
    return bool(TIMING.search(word) or any(UNIT.fullmatch(inner) for inner in re.findall(r"[(\[]([^)\]]+)[)\]]", word)))


def _numbers_volatile(line: str, some: bool = True) -> bool:
    """Whether every word of ``line`` that holds a number of its own is volatile by nature (``some``: and there is
    one)."""
    words = line.split()
    own = [i for i, w in enumerate(words) if NUMBER.search(w) and not _label_numbers(w)]
    kinds = volatile_fields(words)
    return (bool(own) or not some) and all(kinds[i] for i in own)


@dataclass
class Comparison:
    """How one output compared with the calibration: ``status`` (``match``, ``match_masked``, ``match_tolerant``,
    ``mismatch``), where it first differed, and how many fields were masked and ranged."""

    status: str
    detail: str = ""
    masked: int = 0
    ranged: int = 0


@dataclass(frozen=True)
class Calibration:
    """A CUDA original's outputs aligned by line: per line the version of every run."""

    versions: tuple[tuple[str, ...], ...]
    raw: tuple[bytes, ...] = field(default=(), compare=False)

    @classmethod
    def of(cls, outputs: list[bytes]) -> Calibration | None:
        """From a program's runs (at least :data:`MIN_CALIBRATION_RUNS`); None where they differ in their number of
        lines (nothing to align)."""
        if len(outputs) < MIN_CALIBRATION_RUNS:
            raise ValueError(f"calibrating on {len(outputs)} runs of the CUDA original; at least "
                             f"{MIN_CALIBRATION_RUNS} are needed (execute.runs)")
        split = [text_of(o).splitlines() for o in outputs]
        if len({len(s) for s in split}) > 1:
            return None
        return cls(tuple(zip(*split, strict=True)), tuple(outputs))

    @property
    def lines(self) -> int:
        return len(self.versions)

    def compare(self, output: bytes, tolerance: dict) -> Comparison:
        """``output`` judged against the calibration (see the module's docstring)."""
        lines = text_of(output).splitlines()
        expected = self.raw[0] if self.raw else b""
        if len(lines) != self.lines:
            return Comparison("mismatch", first_difference(expected, output))
        result = Comparison("match")
        tolerant = False
        for n, (versions, line) in enumerate(zip(self.versions, lines, strict=True), 1):
            if line == versions[0] and len(set(versions)) == 1:
                continue
            why = self._line(versions, line, tolerance, result, self.masked_columns(n - 1))
            if why == "tolerant":
                tolerant = True
            elif why is not None:
                return Comparison("mismatch", f"line {n}: {why}", result.masked, result.ranged)
        if result.masked or result.ranged:
            result.status = "match_masked"
        if tolerant:
            result.status = "match_tolerant"
            result.detail = first_difference(expected, output)
        elif result.status == "match" and output not in self.raw:
            result.status, result.detail = "match_tolerant", first_difference(expected, output)
        return result

    def _header(self, n: int, width: int) -> list[str] | None:
        """The nearest steady line above line ``n`` (within 20 lines) with ``width`` words: its column header."""
        return next((self.versions[m][0].split() for m in range(n - 1, max(-1, n - 21), -1)
                     if len(set(self.versions[m])) == 1 and len(self.versions[m][0].split()) == width), None)

    def _timing_columns(self, n: int, width: int) -> frozenset[int]:
        """The words of line ``n`` (``width`` words) under a column header naming a timing or rate (``Kernel Avg(ms)
        BW(GB/s)``)."""
        header = self._header(n, width)
        return frozenset(i for i in range(width) if header is not None and names_a_timing(header[i]))

    def volatile_columns(self, n: int) -> frozenset[int]:
        """The words of line ``n`` (0-based; its versions of one width) volatile by nature: by their own label or unit
        (:func:`volatile_fields`), or by the header of their column naming a timing or rate in that place."""
        words = self.versions[n][0].split()
        return frozenset(i for i, kind in enumerate(volatile_fields(words)) if kind) | \
            self._timing_columns(n, len(words))

    def masked_columns(self, n: int) -> frozenset[int]:
        """The volatile words of line ``n`` that are masked: those that vary between the CUDA runs, and the steady ones
        that are timings by themselves (a unit of time or rate of their own, an address, a clock; or under a timing's
        column header): a coarse timing may agree in every run. A steady word volatile only by its label or by the
        word before it (``Throughput test: checksum 987654``) is compared."""
        words = [v.split() for v in self.versions[n]]
        if len({len(w) for w in words}) > 1:
            return frozenset()
        timed = self._timing_columns(n, len(words[0]))
        kinds = volatile_fields(words[0])
        return frozenset(i for i, kind in enumerate(kinds) if i in timed or (
            kind and (len({w[i] for w in words}) > 1 or _timed_by_itself(words[0], i))))

    @staticmethod
    def _line(versions: tuple[str, ...], line: str, tolerance: dict, result: Comparison,
              masked: frozenset[int]) -> str | None:
        """None where ``line`` matches its CUDA versions, ``tolerant`` where it matches within the tolerance, else
        why it does not (counting masked and ranged fields into ``result``; ``masked``: the volatile columns)."""
        if len(set(versions)) == 1 and not masked:
            return "tolerant" if tolerant_equal(versions[0], line, **tolerance) else f"{versions[0][:200]!r} | " \
                                                                                         f"{line[:200]!r}"
        words = [v.split() for v in versions]
        if len({len(w) for w in words}) > 1:
            if all(_numbers_volatile(v) for v in versions) and _numbers_volatile(line, some=False):
                result.masked += 1
                return None
            if line in versions:
                return None
            if any(tolerant_equal(v, line, **tolerance) for v in versions):
                return "tolerant"
            return f"{line[:200]!r} is none of the CUDA runs' versions of a line that holds more than timings"
        got = line.split()
        if len(got) != len(words[0]):
            return f"{versions[0][:200]!r} | {line[:200]!r}"
        tolerant = False
        for i, column in enumerate(zip(*words, strict=True)):
            if i in masked:
                result.masked += got[i] != column[0] or len(set(column)) > 1
            elif len(set(column)) == 1:
                if got[i] != column[0]:
                    if not tolerant_equal(column[0], got[i], **tolerance):
                        return f"word {i + 1}: {column[0]!r} | {got[i]!r}"
                    tolerant = True
            elif in_range(list(column), got[i], **tolerance):
                result.ranged += 1
            else:
                return (f"word {i + 1}: {got[i]!r} is outside the CUDA runs' range {sorted(set(column))} "
                        "widened by their spread")
        return "tolerant" if tolerant else None

    def computed_values(self, args: tuple[str, ...] = ()) -> int:
        """How many values of the output could tell a wrong program: numbers (and hex hashes) in the steady words,
        or in words that vary between the CUDA runs by at most :data:`SIGNAL_SPREAD`, that are not a timing or rate
        (by label, unit or column header), not part of a name or glued to letters, not one of the program's arguments
        echoed, and not a self-check's own count (``Errors: 0``, ``Test 1 of 3``)."""
        echoed = {_canonical(m.group()) for a in args for m in NUMBER.finditer(a)}
        count = 0
        for n, versions in enumerate(self.versions):
            words = [v.split() for v in versions]
            if len({len(w) for w in words}) > 1:
                continue
            volatile = self.volatile_columns(n)
            checks = [m.span() for m in SELF_CHECK_COUNT.finditer(versions[0])]
            places = [m.start() for m in re.finditer(r"\S+", versions[0])]
            for i, column in enumerate(zip(*words, strict=True)):
                if i in volatile or not _steady_enough(column) or any(a <= places[i] < b for a, b in checks):
                    continue
                word = column[0]
                count += bool(HEX_VALUE.search(word)) + sum(not _glued(word, m) and _canonical(m.group()) not in echoed
                                                            for m in NUMBER.finditer(word))
        return count


def _steady_enough(column: tuple[str, ...]) -> bool:
    """Whether a word's versions agree closely enough for its value to tell: the same text, or numbers whose spread
    is at most :data:`SIGNAL_SPREAD` of their magnitude."""
    if len(set(column)) == 1:
        return True
    numbers = [NUMBER.findall(v) for v in column]
    if len({len(n) for n in numbers}) > 1 or len({NUMBER.sub("#", v) for v in column}) > 1:
        return False
    for values in zip(*numbers, strict=True):
        bounds = _spread(values)
        if bounds is None or bounds[1] - bounds[0] > SIGNAL_SPREAD * max(abs(bounds[0]), abs(bounds[1])):
            return False
    return True


def _canonical(token: str) -> str:
    try:
        value = float(token)
    except ValueError:
        return token
    return repr(value)


FAIL = re.compile(r"\b(?:fail(?:s|ed|ure|ures)?|incorrect|mismatch(?:es|ed)?|wrong\s+(?:results?|answers?|output))\b",
                  re.IGNORECASE)
NO_FAILURES = re.compile(r"\b(?:number\s+of\s+)?(?:fail(?:s|ed|ures?)|mismatch(?:es)?|errors?)\s*[:=]?\s*0(?![.\d])|"
                         r"\b(?:failures|mismatches|errors)\b[^\n\d]{0,40}?[:=]?\s*0[ \t]*$|"
                         r"\b0\s+(?:fail(?:s|ed|ures?)|mismatch(?:es)?|errors?)\b|\bfail(?:s|ed)?\s+as\s+expected\b",
                         re.IGNORECASE | re.MULTILINE)
"""A count of failures that is zero (``Number of failures: 0``, ``mismatches vs host = 0``, ``0 mismatches``; not
``failed at index 0``), or a failure the program provokes on purpose (``assert failed as expected``): no failure."""
PASS = re.compile(r"\bPASS(?:ED|ES)?\b|\bPass(?:ed|es)?\b|(?i:\b(?:passed|success|successful(?:ly)?|succeeded)\b)|"
                  r"(?i:\b(?:tests?|verification|validation|check|result)\s*[:=]?\s*(?:pass(?:ed)?|ok|correct)\b)")
"""Upper-case or capitalised ``PASS`` alone (a lower-case ``pass`` is also a word: ``forward pass``)."""
USAGE = re.compile(r"(?im)^\W*usage\s*:")


SELF_CHECK_COUNT = re.compile(rf"{NO_FAILURES.pattern}|\b(?:tests?|checks?|cases?)\s+\d+\s*(?:of|/)\s*\d+",
                              re.IGNORECASE | re.MULTILINE)
"""A self-check's own count (``Errors: 0``, ``mismatches=0``, ``Test 1 of 3``): numbers of the check, not of the
computation."""


def self_check(output: bytes) -> str | None:
    """What a program's own check says: ``fail`` (any failure line, whatever its case: ``FAIL``, ``Test failed``,
    ``incorrect``, a mismatch; not a count of zero failures), ``pass`` (``PASS``, ``Test passed``, ``Success``,
    ``Verification: correct``; a lower-case ``pass`` alone is a word, not a verdict), or None (no self-check
    printed)."""
    text = NO_FAILURES.sub(" ", text_of(output))
    return "fail" if FAIL.search(text) else "pass" if PASS.search(text) else None


def prints_usage(*outputs: bytes) -> bool:
    """Whether a program printed its usage (``Usage: ...``) on stdout or stderr."""
    return any(USAGE.search(text_of(o)) for o in outputs)
