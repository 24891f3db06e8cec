"""What programs read back from the GPU, as the oracle judges it (:mod:`cass.execution.device_reads`,
:func:`cass.execution.verify.judge`): the wrong programs an output could not tell, rejected by their device reads;
the right ones accepted. The reads here are written as the counter writes them (``toolchains/launch_counter.c``;
its `gpu` test in tests/test_programs.py makes them on a GPU)."""

from __future__ import annotations

import math
import struct

import pytest

from cass.execution.device_reads import Copy, DeviceReads, DeviceReadsError, compare_reads
from cass.execution.programs import Run
from cass.execution.verify import judge, verified
from hosts.gpu import reads_probe_copy
from store import Store

TOLERANCE = {"rtol": 1e-5, "atol": 1e-8}
RESULT = "4096 a7f24a3a3d9637cf 3619 89348480 0 4.3907402378271219e+42 0"
WRONG = "4096 bf28a78ad73663c0 3619 89349504 0 4.3909186675064078e+42 0"
"""The probe-like program of the `gpu` test: its 1024 floats, and the same with 1 added to each."""
ROUNDED = "4096 0123456789abcdef 3619 89348480.0004 0 4.3907402378271220e+42 0"
"""Other bytes, the same sums within the tolerance (an array shifted by one element keeps them)."""
FLAG = "4 daa66d2c7ddf743f 1 9.8090892502737195e-45 0 0 0"


def reads(*lines: str, pending: int = 0) -> bytes:
    return "\n".join([f"device-reads 1 copies {len(lines)} pending {pending}", *lines, ""]).encode()


@pytest.fixture
def runs(store: Store):
    """``runs(*device_reads, output=...)``: one exited run per device reads file (None: not recorded), 2 kernels."""

    def make(*files: bytes | None, output: bytes = b"PASS\n") -> list[Run]:
        return [Run("exited", 0, store.put(output), store.put(b""), 0.1, None, 2, (),
                    store.put(f) if f is not None else None) for f in files]

    return make


def status(store: Store, cuda: list[Run], hip: list[Run]) -> str:
    return judge(store, {"cuda": cuda, "hip": hip}, False, TOLERANCE).status


def test_a_program_that_prints_only_pass_is_judged_by_what_it_read_back(store, runs):
    """``PASS`` alone holds no computed value (``no_signal``, never verified). Its device reads do: the right
    translation reads the same bytes (``match_device``, verified), a wrong kernel other bytes (``device_mismatch``),
    a translation that computes on the host copies nothing back, or a flag alone (``device_mismatch``)."""
    cuda = runs(*[reads(RESULT, FLAG)] * 3)
    right = runs(reads(RESULT, FLAG))
    verdict = judge(store, {"cuda": cuda, "hip": right}, False, TOLERANCE)
    assert (verdict.status, verified(verdict, {"cuda": cuda, "hip": right})) == ("match_device", True)
    assert status(store, cuda, runs(reads(WRONG, FLAG))) == "device_mismatch"
    assert status(store, cuda, runs(reads(FLAG))) == "device_mismatch"
    assert status(store, cuda, runs(reads())) == "device_mismatch"
    assert status(store, cuda, runs(None)) == "device_mismatch"   # no reads recorded where the CUDA ones were
    assert status(store, cuda, runs(b"not the counter's\n")) == "device_mismatch"


def test_an_output_that_matches_still_fails_on_other_device_reads(store, runs):
    """A mutant that prints what the original prints (a checksum of part of the result, a tolerant self-check) but
    computes another result is no match any more."""
    cuda = runs(*[reads(RESULT)] * 3, output=b"checksum 42\n")
    assert status(store, cuda, runs(reads(RESULT), output=b"checksum 42\n")) == "match"
    assert status(store, cuda, runs(reads(WRONG), output=b"checksum 42\n")) == "device_mismatch"


def test_only_steady_copies_are_compared_and_only_non_zero_ones_tell(store, runs):
    """A copy whose bytes vary between the CUDA runs (timings, atomics in another order) is not compared; where no
    steady copy holds a non-zero byte the reads tell nothing, and ``no_signal`` stays."""
    timer = [f"8 {digest} 8 1.5 0 2.5 0" for digest in ("1111111111111111", "2222222222222222", "3333333333333333")]
    cuda = runs(*[reads(RESULT, t) for t in timer])
    assert status(store, cuda, runs(reads(RESULT, "8 ffffffffffffffff 8 9 0 9 0"))) == "match_device"
    assert status(store, cuda, runs(reads(WRONG, timer[0]))) == "device_mismatch"
    zeros = "4096 0000000000000000 0 0 0 0 0"
    assert status(store, runs(*[reads(zeros)] * 3), runs(reads(zeros))) == "no_signal"
    assert status(store, runs(*[reads(t) for t in timer]), runs(reads(timer[0]))) == "no_signal"


def test_only_a_single_floating_point_value_may_be_close(store):
    """A reduction's result whose last bits moved (its atomics in another order: HeCBench's ``aop``, ``jacobi``) is
    close: a float32 (4 bytes) or float64 (8 bytes) within ``rtol``. A small integer is no float (its bit pattern
    reads as a subnormal one, and any two such were close: a changed count or flag passed), nor is a NaN. A larger
    copy whose sums stay within the tolerance is no match: an array shifted by one element, or missing its last
    block, keeps its sums that close (the tune half's surviving mutants)."""
    def close(expected: str, got: str) -> bool:
        cuda = [DeviceReads.parse(reads(RESULT, expected))] * 3
        found = compare_reads(cuda, [DeviceReads.parse(reads(RESULT, got))], TOLERANCE)
        assert found.status in ("agree", "differ"), found
        return found.status == "agree" and found.close == 1
    double, moved_double = "8 1111111111111111 8 1.2345678 0 3.0e+10 0", "8 2222222222222222 8 1.3 0 3.0000000003e+10 0"
    assert close(double, moved_double)
    assert not close(double, "8 2222222222222222 8 1.2345678 0 3.1e+10 0")
    single = f"4 3333333333333333 4 {struct.unpack('f', struct.pack('f', 1.5))[0]!r} 0 0 0"
    assert close(single, "4 4444444444444444 4 1.5000001 0 0 0")
    assert not close(single, "4 4444444444444444 4 1.6 0 0 0")
    assert not close(single, "4 4444444444444444 4 0 1 0 0")   # NaN where 1.5 was
    thousand, other = (f"4 {n:016x} 2 {struct.unpack('f', struct.pack('i', n))[0]!r} 0 0 0" for n in (1000, 1001))
    assert not close(thousand, other)   # the integers 1000 and 1001, as the counter's float32 view reads them
    thousand, other = (f"8 {n:016x} 2 0 0 {struct.unpack('d', struct.pack('q', n))[0]!r} 0" for n in (1000, 1001))
    assert not close(thousand, other)
    assert compare_reads([DeviceReads.parse(reads(RESULT))] * 3, [DeviceReads.parse(reads(ROUNDED))],
                         TOLERANCE).status == "differ"


def test_reads_the_cuda_runs_disagree_on_or_never_made_are_not_compared(store, runs):
    """CUDA runs that copy different amounts (a convergence loop) or whose reads were not recorded (runs made
    before the counter read them) leave the output's verdict as it is."""
    varying = runs(reads(RESULT), reads(RESULT, FLAG), reads(RESULT))
    assert status(store, varying, runs(reads(WRONG))) == "no_signal"
    unrecorded = runs(None, None, None, output=b"checksum 42\n")
    assert status(store, unrecorded, runs(reads(WRONG), output=b"checksum 42\n")) == "match"


def test_a_program_that_prints_nothing_is_judged_by_its_reads_and_an_uncounted_run_by_its_output(store, runs):
    """Two programs that print nothing (``no_output``) are ``match_device`` where they read back the same bytes and
    ``device_mismatch`` where not. A translation run without the counter (no kernels counted, no reads) keeps its
    output's verdict: it is never verified, but its output is not called wrong for reads it could not have."""
    cuda = runs(*[reads(RESULT)] * 3, output=b"")
    assert status(store, cuda, runs(reads(RESULT), output=b"")) == "match_device"
    assert status(store, cuda, runs(reads(WRONG), output=b"")) == "device_mismatch"
    uncounted = [Run("exited", 0, store.put(b"checksum 42\n"), store.put(b""), 0.1, None, None)]
    counted = runs(*[reads(RESULT)] * 3, output=b"checksum 42\n")
    verdict = judge(store, {"cuda": counted, "hip": uncounted}, False, TOLERANCE)
    assert verdict.status == "match" and not verified(verdict, {"cuda": counted, "hip": uncounted})


def test_a_damaged_reads_file_names_its_line():
    with pytest.raises(DeviceReadsError, match="line 2"):
        DeviceReads.parse(reads("4096 a7f24a3a3d9637cf three 1 0 1 0"))
    with pytest.raises(DeviceReadsError, match="not a device reads file"):
        DeviceReads.parse(b"")
    with pytest.raises(DeviceReadsError, match="not a device reads file"):
        DeviceReads.parse(b"device-reads 1 copies x pending 0\n")


def test_the_probe_reads_are_its_one_four_byte_copy():
    """A GPU host refuses a batch whose counter does not digest the probe's one copy of its 4-byte result."""
    assert reads_probe_copy(reads("4 1715609f7c746c69 1 0 0 0 0"))
    assert not reads_probe_copy(None)
    assert not reads_probe_copy(reads())
    assert not reads_probe_copy(reads("4 1715609f7c746c69 0 0 0 0 0"))   # the kernel wrote nothing
    assert not reads_probe_copy(reads("4 1715609f7c746c69 1 0 0 0 0", "4 1715609f7c746c69 1 0 0 0 0"))


HARNESS = r"""#include "launch_counter.c"
/* argv: FILE WIDTH PITCH. The file's rows of WIDTH bytes, PITCH apart, digested as one copy (a 2D copy; WIDTH ==
 * PITCH: a plain one), its line printed as the reads file has it. */
int main(int argc, char **argv) {
    static unsigned char data[1 << 20];
    FILE *in = fopen(argv[1], "rb");
    size_t size = fread(data, 1, sizeof data, in), width = strtoul(argv[2], 0, 10), pitch = strtoul(argv[3], 0, 10);
    Read read;
    Digest digest;
    (void)argc;
    memset(&read, 0, sizeof read);
    for (size_t start = 0; start + width <= size; start += pitch) {
        digest_bytes(&read, data + start, width);
    }
    digest = finish(&read);
    printf("%llu %016llx %llu %.17g %llu %.17g %llu\n", digest.bytes, digest.hash, digest.nonzero, digest.f32_sum,
           digest.f32_other, digest.f64_sum, digest.f64_other);
    return 0;
}
"""


@pytest.fixture(scope="module")
def digest(tmp_path_factory):
    """``digest(data, width=None, pitch=None)``: the counter's line for ``data`` copied as rows of ``width`` bytes
    ``pitch`` apart (default: one row), by the counter's own C code built here against the CUPTI headers."""
    import shutil
    import subprocess

    from toolchains.launches import CUPTI, counter_harness_command, wheel_root
    cupti = wheel_root() / "cuda_cupti"
    assert shutil.which("cc") and (cupti / "lib" / CUPTI).is_file(), \
        "no C compiler or no CUPTI wheel: `bash scripts/setup.sh` installs both"
    folder = tmp_path_factory.mktemp("digest")
    (folder / "harness.c").write_text(HARNESS)
    subprocess.run(counter_harness_command(folder / "harness.c", folder / "harness"), check=True)

    def run(data: bytes, width: int | None = None, pitch: int | None = None) -> Copy:
        (folder / "data").write_bytes(data)
        width = width or len(data)
        line = subprocess.run([str(folder / "harness"), str(folder / "data"), str(width), str(pitch or width)],
                              capture_output=True, text=True, check=True).stdout
        return DeviceReads.parse(f"device-reads 1 copies 1 pending 0\n{line}".encode()).records[0]

    return run


def test_the_counters_digest_is_of_the_bytes_alone_and_tells_every_change(digest):
    """The counter's C digest (built here, run on the CPU): a copy's rows give the digest of their bytes however they
    are split (a 2D copy's rows, any width and pitch), its non-zero bytes and both views' sums are exact, and one
    changed byte, two swapped words or one more zero byte give another digest."""
    data = bytes(range(1, 256)) * 40 + b"\x00\x00\x80\x7f" + struct.pack("<3f", 1.5, -2.25, 1e30) + b"\x07"
    whole = digest(data)
    assert whole.size == len(data) and whole.nonzero == sum(b != 0 for b in data)
    for width in (1, 3, 8, 31, 32, 33, 100):
        rows = [data[i:i + width] for i in range(0, len(data), width)]
        if len(rows[-1]) == width:   # rows of one width: the file holds them PITCH apart, padding between
            padded = b"".join(row + b"\xee" * 5 for row in rows)
            assert digest(padded, width, width + 5) == whole, width
    floats = [struct.unpack("<f", data[i:i + 4])[0] for i in range(0, len(data) - 3, 4)]
    assert whole.f32_other == sum(not math.isfinite(f) for f in floats) > 0   # the +inf among them
    assert whole.f32_sum == pytest.approx(sum(f for f in floats if math.isfinite(f)), rel=1e-12)
    changed = [data[:100] + bytes([data[100] ^ 1]) + data[101:], data[8:16] + data[:8] + data[16:], data + b"\x00"]
    assert len({whole.digest, *(digest(d).digest for d in changed)}) == 4
    one = digest(struct.pack("<i", 1))
    assert (one.size, one.nonzero, one.f32_sum, one.f64_sum) == (4, 1, struct.unpack("<f", b"\x01\0\0\0")[0], 0)
    assert digest(bytes(4096)).nonzero == 0 and digest(bytes(4096)).digest != digest(bytes(4095) + b"\x01").digest
