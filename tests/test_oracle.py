"""The execution oracle (the ``execute`` stage's and the benchmark's: :mod:`cass.execution.compare`,
:func:`cass.execution.verify.judge`): each test shows wrong programs it rejects, beside the right ones it accepts.
The classes are those a review and the mutation analysis found (bench/RESULTS.md, "Mutation analysis of the
oracle")."""

from __future__ import annotations

import pytest

from cass.execution.compare import NUMBER, Calibration, self_check, volatile_field
from cass.execution.programs import Run
from cass.execution.verify import judge, judge_pair, kernel_problem, verified
from store import Store

EXACT = {"rtol": 0.0, "atol": 0.0}
TOLERANCE = {"rtol": 1e-5, "atol": 1e-8}


@pytest.fixture
def runs(store: Store):
    """``runs(*outputs, kernels=..., args=...)``: one exited run per output, its stdout in the store."""

    def make(*outputs: bytes, kernels: int | list[int] | None = 2, args: tuple[str, ...] = ()) -> list[Run]:
        counts = kernels if isinstance(kernels, list) else [kernels] * len(outputs)
        return [Run("exited", 0, store.put(out), store.put(b""), 0.1, None, k, args)
                for out, k in zip(outputs, counts, strict=True)]

    return make


def status(store: Store, cuda: list[Run], hip: list[Run], tolerance: dict = TOLERANCE) -> str:
    return judge(store, {"cuda": cuda, "hip": hip}, False, tolerance).status


def test_a_value_that_varies_but_is_no_timing_is_held_to_the_cuda_runs_range(store, runs):
    """A sum that varies between the CUDA original's runs (a race, a random seed) was masked, and then any value
    passed there: ``sum -999`` against ``sum 1.5`` / ``sum 1.6``. Now only timings are masked; the sum must fall
    within the runs' range widened by their spread."""
    cuda = runs(b"sum 1.5 t 3\n", b"sum 1.6 t 4\n", b"sum 1.55 t 3\n")
    assert status(store, cuda, runs(b"sum -999 t 0\n")) == "mismatch"
    assert status(store, cuda, runs(b"sum 1.9 t 3\n")) == "mismatch"          # beyond 1.6 + 0.1
    assert status(store, cuda, runs(b"sum 1.5 t 9\n")) == "mismatch"          # t: 3 to 4, so 2 to 5
    assert status(store, cuda, runs(b"sum 1.62 t 5\n")) == "no_signal"       # in range, but values this loose tell
    close = runs(b"sum 1.500 t 3\n", b"sum 1.510 t 4\n", b"sum 1.505 t 3\n")    # nothing; these agree within 1%
    assert status(store, close, runs(b"sum 1.515 t 5\n")) == "match_masked"   # within the widened range
    assert status(store, close, runs(b"sum 1.530 t 3\n")) == "mismatch"
    timed = runs(b"result 42\nkernel time 0.013 (ms)\n", b"result 42\nkernel time 0.019 (ms)\n",
                 b"result 42\nkernel time 0.011 (ms)\n")
    assert status(store, timed, runs(b"result 42\nkernel time 250.0 (ms)\n")) == "match_masked"   # a timing
    assert status(store, timed, runs(b"result 41\nkernel time 0.013 (ms)\n")) == "mismatch"


def test_a_timing_that_agreed_in_every_cuda_run_is_still_a_timing(store, runs):
    """A timing printed coarsely (``0.000008 (s)``, whole milliseconds) can agree in all the CUDA runs; the HIP run's
    other timing then failed a right translation (HeCBench's ``extrema``, ``md5hash``). Timings are masked whether
    or not they varied; a steady value beside them is still compared."""
    cuda = runs(*[b"order 2 clip 1 execution time 0.000008 (s)\ntime = 921 ms, hashes 12\n"] * 3)
    assert status(store, cuda, runs(b"order 2 clip 1 execution time 0.000059 (s)\ntime = 851 ms, hashes 12\n")) \
        == "match_masked"
    assert status(store, cuda, runs(b"order 2 clip 1 execution time 0.000059 (s)\ntime = 851 ms, hashes 13\n")) \
        == "mismatch"
    assert status(store, cuda, runs(b"order 3 clip 1 execution time 0.000008 (s)\ntime = 921 ms, hashes 12\n")) \
        == "mismatch"
    labelled = runs(*[b"Throughput test: checksum 987654\nResult after 3 cycles: 12345\nkernel time 0.5 1234\n"
                      b"sum 7\n"] * 3)   # steady values whose label or neighbour names a timing: still compared
    for wrong in (b"Throughput test: checksum 1\nResult after 3 cycles: 12345\nkernel time 0.5 1234\nsum 7\n",
                  b"Throughput test: checksum 987654\nResult after 3 cycles: 99999\nkernel time 0.5 1234\nsum 7\n",
                  b"Throughput test: checksum 987654\nResult after 4 cycles: 12345\nkernel time 0.5 1234\nsum 7\n",
                  b"Throughput test: checksum 987654\nResult after 3 cycles: 12345\nkernel time 0.5 9999\nsum 7\n"):
        assert status(store, labelled, runs(wrong)) == "mismatch", wrong


def test_integers_are_compared_exactly_and_floats_within_the_tolerance(store, runs):
    """A checksum ``140857020196936`` "matched" ``140857020000000`` under the float tolerance."""
    cuda = runs(*[b"checksum 140857020196936\nmean 0.333333333\n"] * 3)
    assert status(store, cuda, runs(b"checksum 140857020000000\nmean 0.333333333\n")) == "mismatch"
    assert status(store, cuda, runs(b"checksum 140857020196937\nmean 0.333333333\n")) == "mismatch"
    assert status(store, cuda, runs(b"checksum 140857020196936\nmean 0.333333334\n")) == "match_tolerant"
    assert status(store, cuda, runs(b"checksum 140857020196936\nmean 0.3334\n")) == "mismatch"


def test_what_is_volatile_is_recognised_by_label_unit_address_or_date():
    def volatile(line: str) -> list[str]:
        words = line.split()
        return [w for i, w in enumerate(words) if NUMBER.fullmatch(w) and volatile_field(words, i)]

    assert volatile("Average kernel execution time (3x3) 0.670615 (ms)") == ["0.670615"]
    assert "237.135" in volatile("# Average Performance : 552.221 +- 237.135")   # the spread of a rate
    assert volatile("bandwidth 6.10 GB/s") == ["6.10"]
    assert volatile_field(["done", "in", "2.08s"], 2)
    assert volatile_field(["buffer", "at", "0x7ffd5a3c2e10"], 2)
    assert volatile("energy = 1.2345") == [] and volatile("sum 1.5 t 3") == []
    assert volatile("Error rate: 1e-5") == [] and volatile("checksum 140857020196936") == []


def test_a_line_whose_words_vary_in_number_is_masked_only_where_it_is_a_timing(store, runs):
    cuda = runs(b"x 1\nsolved in 3 steps\n", b"x 1\nsolved in 3 steps and a retry\n", b"x 1\nsolved in 3 steps\n")
    assert status(store, cuda, runs(b"x 1\nsolved in 3 steps and a retry\n")) == "match"
    assert status(store, cuda, runs(b"x 1\nsolved in 9 steps\n")) == "mismatch"
    timed = runs(b"x 1\ntook 3 ms\n", b"x 1\ntook 3 ms (warm)\n", b"x 1\ntook 4 ms\n")
    assert status(store, timed, runs(b"x 1\ntook a while\n")) == "match_masked"


def test_an_output_without_a_computed_value_is_no_signal_and_never_verified(store, runs):
    """37 of the real suite's tasks printed nothing steady but PASS: the verdict rested on the candidate's own
    self-check, which a cheat prints too. Labels, self-check words, timings and echoed arguments are no signal."""
    self_check_only = runs(b"PASS\ntime 0.5 (s)\n", b"PASS\ntime 0.7 (s)\n", b"PASS\ntime 0.6 (s)\n")
    hip = runs(b"PASS\ntime 0.1 (s)\n")
    verdict = judge(store, {"cuda": self_check_only, "hip": hip}, False, TOLERANCE)
    assert verdict.status == "no_signal" and not verified(verdict, {"cuda": self_check_only, "hip": hip})
    echoed = runs(*[b"n = 1024, float3 layout\nPASS\n"] * 3, args=("-n", "1024"))
    assert judge(store, {"cuda": echoed, "hip": runs(b"n = 1024, float3 layout\nPASS\n", args=("-n", "1024"))},
                 True, TOLERANCE).status == "no_signal"
    computed = runs(*[b"n = 1024\nsum 523776\nPASS\n"] * 3, args=("-n", "1024"))
    assert judge(store, {"cuda": computed, "hip": runs(b"n = 1024\nsum 523776\nPASS\n", args=("-n", "1024"))},
                 True, TOLERANCE).status == "match"
    assert judge(store, {"cuda": computed, "hip": runs(b"n = 1024\nsum 523775\nPASS\n", args=("-n", "1024"))},
                 True, TOLERANCE).status == "mismatch"


def test_kernel_counts_agree_where_the_cuda_original_launches_a_steady_number(store, runs):
    """``execute`` asked only for more than zero kernels: a HIP program that launched one empty kernel and computed
    on the host was verified. The stage and the benchmark now share one rule."""
    out = b"sum 523776\n"
    cuda = runs(out, out, out, kernels=3)
    assert status(store, cuda, runs(out, kernels=1)) == "kernel_count_differs"
    assert status(store, cuda, runs(out, kernels=0)) == "no_kernel"
    assert status(store, cuda, runs(out, kernels=3)) == "match"
    varying = runs(out, out, out, kernels=[100, 120, 110])
    assert kernel_problem(varying, runs(out, kernels=1))[0] == "kernel_count_differs"   # a token kernel
    assert kernel_problem(varying, runs(out, kernels=135)) is None                    # within 80 to 140
    assert kernel_problem(varying, runs(out, kernels=141)) is not None
    uncounted = runs(out, out, out, kernels=None)
    verdict = judge(store, {"cuda": uncounted, "hip": runs(out, kernels=None)}, False, TOLERANCE)
    assert verdict.status == "match" and not verified(verdict, {"cuda": uncounted, "hip": runs(out, kernels=None)})


def test_self_checks_are_read_whatever_their_case_and_a_zero_count_of_failures_is_none():
    assert self_check(b"Test Failed\n") == "fail" and self_check(b"test failed!\n") == "fail"
    assert self_check(b"ERROR: results mismatch!\n") == "fail" and self_check(b"Result incorrect\n") == "fail"
    assert self_check(b"Number of failures: 3 out of 100\n") == "fail"
    assert self_check(b"Number of failures: 0 out of 100\n") is None
    assert self_check(b"Found 0 errors in 3 locations (PASS).\n") == "pass"
    assert self_check(b"Test passed\n") == "pass" and self_check(b"VERIFICATION: PASS\n") == "pass"
    assert self_check(b"Checking forward pass\n") is None    # a word, not a verdict


def test_a_failing_hip_self_check_is_a_mismatch_and_a_failing_cuda_one_is_never_verified(store, runs):
    cuda = runs(*[b"sum 7\nPASS: yes\n"] * 3)
    assert status(store, cuda, runs(b"sum 7\nPASS: yes\nTest failed\n")) == "mismatch"
    failing = runs(*[b"sum 7\ntest failed\n"] * 3)
    hip = runs(b"sum 7\ntest failed\n")
    verdict = judge(store, {"cuda": failing, "hip": hip}, False, TOLERANCE)
    assert verdict.status == "match" and not verified(verdict, {"cuda": failing, "hip": hip})


def test_line_endings_and_undecodable_bytes_are_judged_without_a_crash(store, runs):
    """``judge`` raised StopIteration when the CUDA runs differed only in line endings, and the stage stopped."""
    cuda = runs(b"sum 3\n", b"sum 3\r\n", b"sum 3\n")
    assert status(store, cuda, runs(b"sum 3\n"), EXACT) == "match"
    assert status(store, cuda, runs(b"sum 3\r\n"), EXACT) == "match"
    assert status(store, cuda, runs(b"sum 4\r\n"), EXACT) == "mismatch"
    raw = runs(b"\xff\xfe sum 3\n", b"\xff\xfe sum 3\n", b"\xff\xfd sum 3\n")
    assert status(store, raw, runs(b"\xff\xfd sum 3\n"), EXACT) == "match_masked"   # the bytes of a CUDA run
    assert status(store, raw, runs(b"\xff\xfc sum 3\n"), EXACT) == "mismatch"   # other bytes are other bytes
    assert status(store, raw, runs(b"\xff\xfe sum 9\n"), EXACT) == "mismatch"


def test_fewer_than_three_cuda_runs_cannot_calibrate(store, runs):
    with pytest.raises(ValueError, match="at least 3"):
        judge(store, {"cuda": runs(b"a 1\n", b"a 1\n"), "hip": runs(b"a 1\n")}, False, TOLERANCE)
    assert Calibration.of([b"a\n", b"a\nb\n", b"a\n"]) is None   # lines that do not align


def test_a_pair_is_judged_per_argument_set_and_fails_on_its_first_failing_set(store, runs):
    ok = runs(*[b"sum 3\n"] * 3, args=("1",))
    bad = runs(*[b"sum 6\n"] * 3, args=("2",))
    verdict = judge_pair(store, {"cuda": ok + bad, "hip": runs(b"sum 3\n", args=("1",)) + runs(b"sum 3\n",
                                                                                                args=("2",))},
                         True, TOLERANCE)
    assert verdict.status == "mismatch" and verdict.detail.startswith("arguments 2:")


def test_columns_rates_and_hashes_read_off_the_tune_half(store, runs):
    """Read on the tune half's outputs: a table's timing column named only by its header (``Avg(ms)``), a rate in
    ``GHash/sec``, an efficiency; a hash printed in hex is a computed value; ``failed as expected`` is no failure."""
    table = [b"Kernel  Avg(ms)  BW(GB/s)\nbase  %s  %s\nsum 42\n" % pair
             for pair in ((b"2.483", b"324.3"), (b"3.267", b"246.5"), (b"3.067", b"262.6"))]
    assert status(store, runs(*table), runs(b"Kernel  Avg(ms)  BW(GB/s)\nbase  0.449  900.1\nsum 42\n")) == \
        "match_masked"
    assert status(store, runs(*table), runs(b"Kernel  Avg(ms)  BW(GB/s)\nbase  0.449  900.1\nsum 41\n")) == "mismatch"
    rates = runs(b"time = 44 ms, rate = 0.227 GHash/sec\nefficiency = 0.0069\nhits 7\n",
                 b"time = 57 ms, rate = 0.175 GHash/sec\nefficiency = 0.0071\nhits 7\n",
                 b"time = 48 ms, rate = 0.208 GHash/sec\nefficiency = 0.0078\nhits 7\n")
    assert status(store, rates, runs(b"time = 20 ms, rate = 0.5 GHash/sec\nefficiency = 0.0105\nhits 7\n")) == \
        "match_masked"
    hashed = runs(*[b"time 0.03 s\nresult = bbde464b6355ee6de6deba5ae860f8a6\nPASS\n"] * 3)
    assert status(store, hashed, runs(b"time 0.03 s\nresult = bbde464b6355ee6de6deba5ae860f8a6\nPASS\n")) == "match"
    assert status(store, hashed, runs(b"time 0.03 s\nresult = 0000464b6355ee6de6deba5ae860f8a6\nPASS\n")) == \
        "mismatch"
    assert self_check(b"Device assert failed as expected\n") is None


def test_what_a_review_found_a_wrong_program_could_still_pass_is_rejected(store, runs):
    """Classes a reviewer found after the first rewrite: a word mistaken for a unit or a timing label, a whole line
    masked for one timing in it, a fraction where an integer was printed, steady timings and a self-check's own
    counts taken as computed values, a failure at index 0 read as a zero count."""
    means = runs(b"mean 3.2101 min 1.0 max 5.0\n", b"mean 3.2102 min 1.0 max 5.0\n", b"mean 3.2103 min 1.0 max 5.0\n")
    assert status(store, means, runs(b"mean -77 min 1.0 max 5.0\n")) == "mismatch"        # min is no minute
    energy = [b"Energy at time step 5: %s\n" % e for e in (b"1.00001", b"1.00002", b"1.00003")]
    assert status(store, runs(*energy), runs(b"Energy at time step 5: 9.5\n")) == "mismatch"   # a step, no timing
    lines = runs(b"result 42 time 3ms\n", b"result 42 time 3ms (warm)\n", b"result 42 time 4ms\n")
    assert status(store, lines, runs(b"result 41 time 3ms\n")) == "mismatch"
    counts = runs(*[b"count 1000000\nsum 77\n"] * 3)
    assert status(store, counts, runs(b"count 1000000.5\nsum 77\n")) == "mismatch"
    steady_timing = runs(*[b"Kernel time 0.5 ms\nErrors: 0\nTest 1 of 3 PASSED\n"] * 3)
    assert status(store, steady_timing, runs(b"Kernel time 0.5 ms\nErrors: 0\nTest 1 of 3 PASSED\n")) == "no_signal"
    assert self_check(b"Test failed at index 0\n") == "fail" and self_check(b"FAILED at i=0\n") == "fail"
    assert NUMBER.findall("Adnan scored inf") == ["inf"]


def test_a_line_of_thousands_of_varying_numbers_is_judged_without_recursion(store, runs):
    outputs = [(" ".join(f"{v + k * 1e-9:.9f}" for v in range(5000)) + "\nsum 12497500\n").encode() for k in range(3)]
    assert status(store, runs(*outputs), runs(outputs[1])) == "match_masked"


def test_a_pair_fails_on_a_mismatch_even_where_another_set_has_no_signal(store, runs):
    quiet = runs(*[b"PASS\n"] * 3, args=("1",))
    loud = runs(*[b"sum 6\n"] * 3, args=("2",))
    verdict = judge_pair(store, {"cuda": quiet + loud, "hip": runs(b"PASS\n", args=("1",)) + runs(b"sum 7\n",
                                                                                               args=("2",))},
                         True, TOLERANCE)
    assert verdict.status == "mismatch"


def test_a_cuda_self_check_that_fails_in_one_argument_set_keeps_the_pair_unverified(store, runs):
    cuda = runs(*[b"ok PASS\nsum 3\n"] * 3, args=("1",)) + runs(*[b"bad FAIL\nsum 4\n"] * 3, args=("2",))
    hip = runs(b"ok PASS\nsum 3\n", args=("1",)) + runs(b"bad FAIL\nsum 4\n", args=("2",))
    verdict = judge_pair(store, {"cuda": cuda, "hip": hip}, True, TOLERANCE)
    assert verdict.status == "match" and verdict.self_checks == ("fail", "fail")
    assert not verified(verdict, {"cuda": cuda, "hip": hip})
