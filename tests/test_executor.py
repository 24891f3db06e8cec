"""The local executor: hermetic scratch directories, outputs, and killing on timeout."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from toolchains.executor import Job, LocalExecutor
from toolchains.launchers import HostLauncher


@pytest.fixture
def executor(tmp_path) -> LocalExecutor:
    return LocalExecutor({"shell": HostLauncher([Path("/bin")], scratch=tmp_path / "scratch")}, workers=2)


def sh(script: str, inputs=None, outputs=(), timeout=30.0, stdout_as=None) -> Job:
    return Job("shell", "sh", ("-c", script), inputs or {}, tuple(outputs), timeout, stdout_as)


def test_inputs_are_laid_out_and_outputs_collected(executor, tmp_path):
    job = sh("cat dir/a.txt b.txt > out.txt; echo to-stdout; echo to-stderr >&2",
             inputs={"dir/a.txt": b"A", "b.txt": b"B"}, outputs=("out.txt", "stdout"), stdout_as="stdout")
    [(index, result)] = list(executor.run([job]))
    assert index == 0 and result.ok
    assert result.outputs == {"out.txt": b"AB", "stdout": b"to-stdout\n"}
    assert result.stderr == b"to-stderr\n"
    assert list((tmp_path / "scratch").iterdir()) == []


def test_failure_is_deterministic_not_transient(executor):
    [(_, result)] = list(executor.run([sh("echo 'error: boom' >&2; exit 1", outputs=("x",))]))
    assert result.exit_code == 1 and result.transient is None and result.outputs == {}


def assert_gone(pid: int, what: str) -> None:
    for _ in range(50):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"{what} {pid} survived")


def test_timeout_kills_the_whole_process_group(executor, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    job = sh(f"sleep 60 & echo $! > {pidfile}; wait", timeout=1.0)
    start = time.monotonic()
    [(_, result)] = list(executor.run([job]))
    assert time.monotonic() - start < 20
    assert result.transient == "timeout after 1 s"
    assert_gone(int(pidfile.read_text()), "the grandchild of a timed-out job")


def test_a_caller_that_stops_early_kills_the_jobs_still_running(executor, tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    results = executor.run([sh("true"), sh(f"sleep 60 & echo $! > {pidfile}; wait", timeout=120)])
    index, result = next(results)
    assert index == 0 and result.ok and result.host == "local"
    while not pidfile.exists() or not pidfile.read_text().strip():
        time.sleep(0.05)
    results.close()   # an error or Ctrl-C in the caller
    assert_gone(int(pidfile.read_text()), "the grandchild of a job whose caller stopped")


def test_killed_by_signal_is_transient(executor):
    [(_, result)] = list(executor.run([sh("kill -9 $$")]))
    assert result.transient == "killed by signal SIGKILL"


def test_input_paths_cannot_escape_the_scratch_directory(executor):
    with pytest.raises(ValueError, match="escapes"):
        list(executor.run([sh("true", inputs={"../evil": b""})]))


def test_jobs_run_concurrently(executor, tmp_path):
    # Each job waits for the other's flag file: only concurrent execution lets both finish.
    a, b = tmp_path / "a", tmp_path / "b"
    jobs = [sh(f"touch {mine}; while [ ! -e {other} ]; do sleep 0.05; done", timeout=15)
            for mine, other in ((a, b), (b, a))]
    results = list(executor.run(jobs))
    assert sorted(i for i, _ in results) == [0, 1]
    assert all(r.ok for _, r in results)


def test_a_compiler_subprocess_killed_is_transient(executor):
    job = sh("echo \"nvcc error   : 'cicc' died due to signal 9 (Kill signal)\" >&2; exit 1")
    [(_, result)] = list(executor.run([job]))
    assert result.transient and "died due to signal 9" in result.transient
