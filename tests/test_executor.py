"""The local executor and the action runner over it: hermetic scratch directories, outputs, killing
on timeout, tool time, largest jobs first, follow-up jobs without batch barriers."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cass.engine.actions import Action, ActionRunner
from store import ActionSpec
from toolchains import Step
from toolchains.executor import Job, LocalExecutor
from toolchains.launchers import HostLauncher
from toolchains.sandbox import Sandbox


def shell(tmp_path: Path) -> HostLauncher:
    """The shell, outside bubblewrap: these tests watch the job's processes from the host (their pids,
    files they write beside the scratch directory); tests/test_sandbox.py tests the sandbox."""
    return HostLauncher([Path("/bin")], scratch=tmp_path / "scratch", sandbox=Sandbox.weak())


@pytest.fixture
def executor(tmp_path) -> LocalExecutor:
    return LocalExecutor({"shell": shell(tmp_path)}, workers=2)


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


def test_cpu_time_counts_the_tool_and_the_subprocesses_it_waits_for(executor):
    busy = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"
    [(_, result)] = list(executor.run([sh(f"sh -c '{busy}'")]))
    assert result.ok and result.cpu_s > 0.2            # the loop ran in a grandchild of the executor
    assert result.wall_s >= result.cpu_s * 0.5
    [(_, idle)] = list(executor.run([sh("sleep 0.5")]))
    assert idle.wall_s >= 0.5 and idle.cpu_s < 0.2


def test_follow_up_jobs_start_while_earlier_jobs_still_run(executor, tmp_path):
    # Job 1 waits for a file that only the follow-up of job 0 writes: it can finish only if the
    # follow-up starts before job 1 ends (no batch barrier).
    flag = tmp_path / "flag"
    jobs = [sh("true"), sh(f"while [ ! -e {flag} ]; do sleep 0.05; done", timeout=15)]
    seen = []

    def follow(index, result):
        seen.append(index)
        return [sh(f"touch {flag}")] if index == 0 else []

    results = dict(executor.run(jobs, follow))
    assert sorted(results) == [0, 1, 2] and all(r.ok for r in results.values())
    assert seen[0] == 0 and set(seen) == {0, 1, 2}


def shell_action(store, script: str, inputs: dict[str, bytes]) -> Action:
    step = Step("sh", ("-c", script), ())
    return Action(step, ActionSpec("shell", "sh", "sh", step.args, {name: store.put(data) for name, data in
                                                                     inputs.items()}))


def test_runner_starts_the_largest_inputs_first_and_runs_follow_ups(tmp_path, store):
    log = tmp_path / "order.log"
    one_worker = LocalExecutor({"shell": shell(tmp_path)}, workers=1)
    runner = ActionRunner(store, one_worker, timeout_s=30)
    sizes = {"small": 10, "large": 5000, "medium": 300}
    first = {shell_action(store, f"echo {name} >> {log}", {"in": b"x" * size}): name for name, size in sizes.items()}
    then = {a.key: shell_action(store, f"echo after-{name} >> {log}", {}) for a, name in first.items()}

    def follow(action, outcome):
        return [then[action.key]] if action.key in then else []

    outcomes = runner.run(list(first), desc="shell", follow=follow)
    order = log.read_text().split()   # largest first, each follow-up before the next first step
    assert order == ["large", "after-large", "medium", "after-medium", "small", "after-small"]
    assert len(outcomes) == 6 and all(o.ok for o in outcomes.values())
    timing = runner.time_metrics()
    assert timing["tool_jobs"] == 6 and timing["by_tool"]["sh"]["jobs"] == 6 and timing["workers"] == 1
    again = ActionRunner(store, one_worker, timeout_s=30)
    again.run(list(first), desc="shell", follow=follow)
    assert again.counts.hits == 6 and again.counts.sent == 0 and log.read_text().split() == order


def test_runner_follows_an_action_again_when_asked_for_after_it_finished(tmp_path, store, executor):
    # Two targets share a second step: the fast target's copy finishes before the slow target
    # asks for it; the slow one must still be told (a step two NVIDIA targets share).
    log = tmp_path / "shared.log"
    fast, slow = shell_action(store, "true", {"in": b"a" * 10}), shell_action(store, "sleep 1", {"in": b"b"})
    shared = shell_action(store, f"echo shared >> {log}", {})
    told = []

    def follow(action, outcome):
        told.append(action.key)
        return [shared] if action.key in (fast.key, slow.key) else []

    outcomes = ActionRunner(store, executor, timeout_s=30).run([fast, slow], desc="shell", follow=follow)
    assert told.count(shared.key) == 2 and outcomes[shared.key].ok
    assert log.read_text() == "shared\n"   # it ran once
