"""What a program read back from the GPU, and whether a translation read back the same.

The kernel counter (``toolchains/launch_counter.c``) digests every copy from device to host memory a run makes: its
bytes, a 64-bit digest, its non-zero bytes, and the sums of its finite values read as float32 and as float64 with
the count of the others. A program that checks its own result and prints ``PASS``, or prints nothing but timings,
still copies its result to the host; these digests are where a wrong kernel shows.

Compared per argument set (:func:`compare_reads`), against the CUDA original's runs:

- the CUDA runs must make the same copies (number and sizes), else the reads are not compared (``unobserved``);
- each HIP run must make those copies too, else they ``differ``;
- a copy whose bytes are the same in every CUDA run is **steady**: the HIP copy must have the same bytes, or, where
  it is a single floating-point value (4 bytes read as a float32, 8 as a float64: a reduction's result, whose last
  bits move with the order of its atomics), be **close**: within ``rtol`` of it, both values normal or zero (an
  integer below 2**23, or 2**52, reads as a subnormal float, and any two such would be close). A larger copy is
  never close: sums within the tolerance passed mutants that shift an array by one element or drop a block of it
  (the tune half's survivors);
- a copy whose bytes vary between the CUDA runs (timings, atomics in another order) is not compared.

Reads that agree tell something only where a steady copy holds a non-zero byte (``agree``; else ``silent``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

FORMAT = b"device-reads 1"
FLOAT32_MIN, FLOAT64_MIN = 1.1754943508222875e-38, 2.2250738585072014e-308
"""The smallest normal float32 and float64."""


class DeviceReadsError(ValueError):
    """A device reads file that does not read as the counter writes it."""


@dataclass(frozen=True)
class Copy:
    """One copy from device to host memory, digested."""

    size: int
    digest: str
    nonzero: int
    f32_sum: float
    f32_other: int
    f64_sum: float
    f64_other: int

    def value(self) -> float | None:
        """The copy as one floating-point number (4 bytes: a float32, 8: a float64), or None: another size, a value
        that is not finite, or a subnormal one (the bit pattern of an integer below 2**23, or 2**52, reads so)."""
        if self.size not in (4, 8) or (self.f32_other if self.size == 4 else self.f64_other):
            return None
        number = self.f32_sum if self.size == 4 else self.f64_sum
        return number if number == 0 or abs(number) >= (FLOAT32_MIN if self.size == 4 else FLOAT64_MIN) else None

    def close_to(self, expected: Copy, tolerance: dict) -> bool:
        """Both single floating-point values of the same size (:meth:`value`), within ``rtol`` of each other."""
        got, want = self.value(), expected.value()
        return (self.size == expected.size and got is not None and want is not None
                and abs(got - want) <= tolerance["rtol"] * abs(want))


@dataclass(frozen=True)
class DeviceReads:
    """A run's copies from device to host (``copies`` in all: those past the counter's limit are folded into the last
    record; the header's count of asynchronous copies still pending at exit, never read, is not compared)."""

    copies: int
    records: tuple[Copy, ...]

    @classmethod
    def parse(cls, data: bytes) -> DeviceReads:
        lines = data.decode("ascii", "replace").splitlines()
        head = lines[0].split() if lines else []
        if len(head) != 6 or " ".join(head[:2]).encode() != FORMAT or head[2] != "copies" or head[4] != "pending":
            raise DeviceReadsError(f"not a device reads file (first line {lines[0][:80] if lines else ''!r})")
        if not head[3].isdigit() or not head[5].isdigit():
            raise DeviceReadsError(f"not a device reads file (first line {lines[0][:80]!r})")
        records = []
        for n, line in enumerate(lines[1:], 2):
            words = line.split()
            try:
                size, digest, nonzero, f32, f32_other, f64, f64_other = words
                records.append(Copy(int(size), digest, int(nonzero), float(f32), int(f32_other), float(f64),
                                    int(f64_other)))
            except ValueError as error:
                raise DeviceReadsError(f"line {n} of the device reads ({line[:80]!r}): {error}") from error
        return cls(int(head[3]), tuple(records))

    def layout(self) -> tuple[int, tuple[int, ...]]:
        return self.copies, tuple(c.size for c in self.records)


@dataclass(frozen=True)
class ReadsComparison:
    """How a translation's device reads compare: ``agree``, ``silent`` (nothing steady to tell by), ``differ`` or
    ``unobserved``; with the steady copies that were only close."""

    status: str
    detail: str = ""
    close: int = 0


def describe(reads: DeviceReads) -> str:
    sizes = ", ".join(f"{c.size}" for c in reads.records[:6]) + (", ..." if len(reads.records) > 6 else "")
    return f"{reads.copies} cop{'y' if reads.copies == 1 else 'ies'} ({sizes} bytes)" if reads.copies else "no copy"


def compare_reads(cuda: list[DeviceReads | None], hip: list[DeviceReads | None], tolerance: dict,
                  ) -> ReadsComparison:
    """Each HIP run's device reads against the CUDA original's runs' (None: not observed)."""
    if not cuda or any(r is None for r in cuda):
        return ReadsComparison("unobserved", "the CUDA original's device reads were not recorded")
    if len({r.layout() for r in cuda}) > 1:
        return ReadsComparison("unobserved", "the CUDA original's runs copy different amounts from the GPU")
    expected = cuda[0]
    steady = [len({r.records[i].digest for r in cuda}) == 1 for i in range(len(expected.records))]
    close = 0
    for n, run in enumerate(hip, 1):
        if run is None:
            return ReadsComparison("differ", f"HIP run {n}: no device reads recorded (the CUDA original's: "
                                   f"{describe(expected)})")
        if run.layout() != expected.layout():
            return ReadsComparison("differ", f"HIP run {n} copied {describe(run)} from the GPU; the CUDA original "
                                   f"copied {describe(expected)}")
        for i, (got, want) in enumerate(zip(run.records, expected.records, strict=True)):
            if not steady[i]:
                continue
            if got.digest == want.digest:
                continue
            if not got.close_to(want, tolerance):
                return ReadsComparison("differ", f"HIP run {n}: copy {i + 1} of {len(run.records)} from the GPU "
                                       f"({got.size} bytes) differs: float32 sum {_number(got.f32_sum)} for "
                                       f"{_number(want.f32_sum)}, float64 sum {_number(got.f64_sum)} for "
                                       f"{_number(want.f64_sum)}")
            close += 1
    varying = steady.count(False)
    if not any(s and c.nonzero for s, c in zip(steady, expected.records, strict=True)):
        return ReadsComparison("silent", "no steady copy from the GPU holds a non-zero byte", close=close)
    detail = (f"device reads agree: {sum(steady)} steady copies of {describe(expected)}"
              + (f", {close} only within the tolerance" if close else "")
              + (f", {varying} varying between the CUDA runs (not compared)" if varying else ""))
    return ReadsComparison("agree", detail, close=close)


def _number(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.9g}"
