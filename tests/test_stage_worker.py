"""Warm stage workers (:mod:`cass.pipeline.stage_worker`): a stage started as ``python -m stages.<name>`` runs on the
idle worker the stage before it started, with its streams, arguments, environment and exit status as if alone; a
stale worker (other code, another environment) is never used; a client killed mid-stage takes the stage with it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from harness.project import REPO

from cass.pipeline.stage_worker import SWITCH, start_time, worker_key

PROBE = '''"""A stage that reports where it ran and does what its arguments say."""
import os, sys, time
from cass.pipeline import stage_worker

if __name__ == "__main__":
    mode = sys.argv[1]
    print(f"warm={stage_worker.request_start is not None} pid={os.getpid()} args={','.join(sys.argv[2:])} "
          f"cwd={os.getcwd()} tag={os.environ.get('PROBE_TAG')} stage={os.environ.get('DVC_STAGE')}")
    print("to stderr", file=sys.stderr)
    if mode == "echo":
        print("stdin:", sys.stdin.readline().strip())
    elif mode == "exit":
        sys.exit(int(sys.argv[2]))
    elif mode == "message":
        sys.exit("stopped: a message")
    elif mode == "raise":
        raise ValueError("a bad row")
    elif mode == "linger":   # work left to Python's exit: a thread still running, an atexit handler
        import atexit, threading
        record = open(sys.argv[2], "a")
        atexit.register(lambda: (record.write("atexit\\n"), record.close(), print("atexit ran")))
        threading.Thread(target=lambda: (time.sleep(0.5), record.write("thread\\n"))).start()
    elif mode in ("sleep", "forked"):
        if mode == "forked" and os.fork() == 0:   # a child the stage forked, alive after its worker dies
            time.sleep(30)
            os._exit(0)
        child = __import__("subprocess").Popen(["sleep", "300"])
        __import__("signal").signal(15, lambda *_: (os.write(1, b"got SIGTERM\\n"), sys.exit(143)))   # no buffer
        print(f"child={child.pid}", flush=True)
        time.sleep(300)
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with the library and a ``stages`` package whose one stage is :data:`PROBE`."""
    root = tmp_path / "project"
    for package in ("cass", "store", "toolchains", "hosts"):
        shutil.copytree(REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "stages").mkdir()
    shutil.copy(REPO / "stages" / "__init__.py", root / "stages" / "__init__.py")
    (root / "stages" / "probe.py").write_text(PROBE)
    return root


def environment(**extra: str) -> dict[str, str]:
    """The tests' environment with the workers on (whatever the tests run with), and ``extra``."""
    return {**{name: value for name, value in os.environ.items() if name != SWITCH}, "PROBE_TAG": "a", **extra}


def stage(project: Path, *args: str, env: dict[str, str] | None = None, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stages.probe", *args], cwd=project, env=env or environment(),
                          input=stdin, capture_output=True, text=True, timeout=120)


def key_of(project: Path, env: dict[str, str]) -> str:
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        return worker_key(project, [])
    finally:
        os.environ.clear()
        os.environ.update(saved)


def listening(key: str) -> bool:
    return f"@cass-stage-worker-{key}" in Path("/proc/net/unix").read_text()


def wait_for(condition, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def warmed(project: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """A cold run of the probe, then the wait for the worker it started."""
    env = env or environment()
    cold = stage(project, "exit", "0", env=env)
    assert cold.stdout.startswith("warm=False"), cold.stdout + cold.stderr
    wait_for(lambda: listening(key_of(project, env)), "the worker the cold run started")
    return cold


def alive(pid: int) -> bool:
    return start_time(pid) is not None


def test_a_stage_runs_on_the_worker_with_its_arguments_streams_and_status(project):
    warmed(project)
    warm = stage(project, "exit", "7", "more", env=environment(DVC_STAGE="probe"))   # DVC's per-stage variable
    assert warm.returncode == 7
    fields = dict(part.split("=", 1) for part in warm.stdout.split())
    assert fields["warm"] == "True" and fields["args"] == "7,more" and fields["cwd"] == str(project)
    assert fields["tag"] == "a" and fields["stage"] == "probe"   # the client's environment, not the worker's
    assert warm.stderr == "to stderr\n"
    # each stage started the next worker: this one runs warm too, reading the client's stdin
    wait_for(lambda: listening(key_of(project, environment())), "the worker the warm run started")
    echoed = stage(project, "echo", stdin="a line\n")
    assert echoed.returncode == 0 and echoed.stdout.startswith("warm=True") and "stdin: a line" in echoed.stdout


@pytest.mark.parametrize(("mode", "error"), [("message", "stopped: a message\n"),
                                             ("raise", "ValueError: a bad row\n")])
def test_a_failing_stage_fails_on_the_worker_as_it_fails_alone(project, mode, error):
    alone = stage(project, mode, env=environment(**{SWITCH: "0"}))
    warmed(project)
    warm = stage(project, mode)
    assert warm.stdout.startswith("warm=True")
    assert warm.returncode == alone.returncode == 1
    assert warm.stderr.endswith(error) and alone.stderr.endswith(error)
    assert ("Traceback" in warm.stderr) == ("Traceback" in alone.stderr) == (mode == "raise")


def test_a_stage_on_the_worker_ends_as_it_ends_alone_its_threads_joined_and_exit_handlers_run(project, tmp_path):
    records = {}
    for how, env in (("alone", environment(**{SWITCH: "0"})), ("warm", None)):
        if how == "warm":
            warmed(project)
        records[how] = tmp_path / f"{how}.txt"
        run = stage(project, "linger", str(records[how]), env=env)
        assert run.returncode == 0 and run.stdout.startswith(f"warm={how == 'warm'}")
        assert run.stdout.endswith("atexit ran\n")
        # the client returned after the thread and the handler: both had written before it did
        assert records[how].read_text() == "thread\natexit\n"


def test_other_code_or_another_environment_never_uses_a_worker(project):
    warmed(project)
    before = key_of(project, environment())
    other_env = stage(project, "exit", "0", env=environment(PROBE_TAG="b"))
    assert other_env.stdout.startswith("warm=False") and "tag=b" in other_env.stdout
    module = project / "cass" / "files.py"
    module.write_text(module.read_text() + "\n# an edit\n")
    assert listening(before) and key_of(project, environment()) != before   # a worker, of the code before the edit
    edited = stage(project, "exit", "0")
    assert edited.stdout.startswith("warm=False")


def test_workers_off_run_every_stage_alone_and_start_none(project):
    env = environment(**{SWITCH: "0"})
    for _ in range(2):
        assert stage(project, "exit", "0", env=env).stdout.startswith("warm=False")
    time.sleep(1)
    key = key_of(project, env)
    started = [path for path in Path("/proc").glob("[0-9]*/cmdline")
               if key in path.read_bytes().decode(errors="replace")]
    assert not listening(key) and not started


def test_a_client_killed_mid_stage_takes_the_stage_and_its_tools_with_it(project):
    warmed(project)
    client = subprocess.Popen([sys.executable, "-m", "stages.probe", "sleep"], cwd=project, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = dict(part.split("=", 1) for part in client.stdout.readline().split())
    tool = int(client.stdout.readline().split("=")[1])
    worker = int(first["pid"])
    assert first["warm"] == "True" and worker != client.pid and alive(worker) and alive(tool)
    client.kill()
    client.wait()
    wait_for(lambda: not alive(worker) and not alive(tool), "the worker and its tool to die")


def test_a_signal_to_the_client_reaches_the_stage(project):
    warmed(project)
    client = subprocess.Popen([sys.executable, "-m", "stages.probe", "sleep"], cwd=project, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert client.stdout.readline().startswith("warm=True")
    tool = int(client.stdout.readline().split("=")[1])
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=60) == 143
    assert client.stdout.read() == "got SIGTERM\n"
    wait_for(lambda: not alive(tool), "the tool, in the worker's process group, to get it too")


def test_a_worker_killed_mid_stage_fails_the_client_saying_so(project):
    """Killed alone (as the OOM killer kills), while a process the stage forked lives on: the client does not wait
    for that process."""
    warmed(project)
    client = subprocess.Popen([sys.executable, "-m", "stages.probe", "forked"], cwd=project, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = int(dict(part.split("=", 1) for part in client.stdout.readline().split())["pid"])
    tool = int(client.stdout.readline().split("=")[1])
    os.kill(worker, signal.SIGKILL)
    try:
        status = client.wait(timeout=15)
    finally:   # the tool and the forked child, left in the dead worker's group, hold the client's pipes
        os.killpg(worker, signal.SIGKILL)
    assert status == 1
    assert client.stderr.read().endswith(f"stages.probe: its stage worker (pid {worker}) ended without an exit "
                                         "status (killed?)\n")
    wait_for(lambda: not alive(tool), "the tool to die")


def test_an_interrupted_stage_ends_its_client_as_an_interrupt_ends_it_alone(project):
    """Ctrl-C: SIGINT to the foreground process group, the stage's tool included."""
    off = environment(**{SWITCH: "0"})
    alone = subprocess.Popen([sys.executable, "-m", "stages.probe", "sleep"], cwd=project, env=off,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    warmed(project)
    client = subprocess.Popen([sys.executable, "-m", "stages.probe", "sleep"], cwd=project, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    for process in (alone, client):
        process.stdout.readline()
        process.stdout.readline()
        os.killpg(process.pid, signal.SIGINT)
    assert alone.wait(timeout=60) == client.wait(timeout=60) == -signal.SIGINT
    assert alone.stderr.read().endswith("KeyboardInterrupt\n") and client.stderr.read().endswith("KeyboardInterrupt\n")


def test_a_stopped_client_stops_its_stage_and_a_continued_one_continues_it(project):
    warmed(project)
    client = subprocess.Popen([sys.executable, "-m", "stages.probe", "sleep"], cwd=project, env=environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    worker = int(dict(part.split("=", 1) for part in client.stdout.readline().split())["pid"])
    tool = int(client.stdout.readline().split("=")[1])

    def state(pid: int) -> str:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]

    client.send_signal(signal.SIGTSTP)   # Ctrl-Z
    wait_for(lambda: state(client.pid) == state(worker) == state(tool) == "T", "all three to stop")
    client.send_signal(signal.SIGCONT)   # fg
    wait_for(lambda: "T" not in (state(client.pid), state(worker), state(tool)), "all three to continue")
    client.send_signal(signal.SIGTERM)
    assert client.wait(timeout=60) == 143


def test_where_pidfd_open_is_refused_the_client_still_waits_for_the_worker_to_exit(project, tmp_path):
    """As under a seccomp filter without pidfd_open: the client polls for the worker's end instead."""
    (tmp_path / "site").mkdir()
    marker = tmp_path / "refused"
    (tmp_path / "site" / "sitecustomize.py").write_text(
        f"import os, pathlib\n\ndef refused(pid, flags=0):\n    pathlib.Path({str(marker)!r}).touch()\n"
        "    raise PermissionError(1, 'refused by a filter')\n\nos.pidfd_open = refused\n")
    env = environment(PYTHONPATH=str(tmp_path / "site"))
    warmed(project, env)
    client = subprocess.Popen([sys.executable, "-m", "stages.probe", "exit", "5"], cwd=project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = int(dict(part.split("=", 1) for part in client.stdout.readline().split())["pid"])
    assert client.wait(timeout=60) == 5 and client.stderr.read() == "to stderr\n"
    assert marker.exists() and not alive(worker)
