"""Warm stage processes: a DVC stage that starts with the library already imported.

Every stage's command is ``python -m stages.<name>``. Started that way, ``stages/__init__.py`` calls
:func:`delegate` before anything else is imported. It looks for an idle *stage worker* of this project: a process
started on the same interpreter, in the same folder, with the same environment and the same code, that has already
imported the stage context (Polars, the store, the placement of work: about 0.3 s of every stage's start on 2 cores).

* If one is listening, the stage runs there. The worker takes this process's standard streams, arguments, environment
  and working directory, runs ``stages.<name>`` as ``__main__``, and reports its exit status; this process waits until
  the worker has exited, then exits with that status. It passes SIGINT, SIGTERM and SIGHUP on to the worker's process
  group; if it dies first (kill -9), the worker kills its own process group, tools included.
* If none is, the stage runs in this process, as it would without workers.

Either way one new idle worker is started (by this process, or by the worker as it takes the stage), so that the
stages of one ``dvc repro`` find a warm process waiting. A worker serves one stage and exits; an idle one exits after
:data:`IDLE_S` seconds. Workers start new processes and never fork one that has imported Polars (a fork can
deadlock on its threads' locks).

A worker is found by a key: the folder, the interpreter and its options, the environment (but ``DVC_STAGE``, which
DVC sets per stage), and the size and modification time of every ``.py`` file of the folder's packages and of the
site-packages folders. An edited module, another environment or an installed package gives another key, so a stale
worker is never used: it idles out. ``CASS_STAGE_WORKERS=0`` turns workers off.

This module imports the standard library alone: it runs before every stage's imports.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import json
import os
import runpy
import select
import signal
import site
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

SWITCH = "CASS_STAGE_WORKERS"
"""Set to ``0`` to run every stage in a process of its own, with no workers."""
IDLE_S = 20.0
"""Seconds an idle worker waits for a stage before it exits."""
PER_STAGE_ENV = frozenset({"DVC_STAGE"})
"""Environment variables that differ between the stages of one run and are not part of a worker's key."""
PRELOAD = ("cass.pipeline.context",)
"""What a worker imports before it takes a stage: what every stage's entry point imports first."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals a client passes on to the worker running its stage."""
REQUEST_LIMIT = 1 << 24

request_start: tuple[float, float] | None = None
"""In a worker that took a stage: the system uptime and this process's CPU seconds when it did (the stage's run
report counts its wall and CPU time from there, not from the worker's start)."""


def python_options() -> list[str]:
    """The interpreter options this process was started with (``-X ...``, ``-u``), before ``-m``."""
    args = sys.orig_argv[1:]
    return args[:args.index("-m")] if "-m" in args else []


def code_state(root: Path) -> list:
    """Size and modification time of every ``.py`` file in ``root``'s packages (folders with an ``__init__.py``),
    and the modification times of the site-packages folders (a package installed or removed)."""
    state: list = []
    for package in sorted(entry.name for entry in os.scandir(root)
                          if entry.is_dir() and (Path(entry.path) / "__init__.py").is_file()):
        for folder, dirs, files in os.walk(root / package):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                info = os.stat(os.path.join(folder, name))
                state.append((os.path.join(folder, name), info.st_size, info.st_mtime_ns))
    for folder in site.getsitepackages():
        if os.path.isdir(folder):
            state.append((folder, os.stat(folder).st_mtime_ns))
    return state


def worker_key(root: Path, options: list[str]) -> str:
    """The key of the workers that may run this process's stage (see the module's docstring)."""
    env = sorted((name, value) for name, value in os.environ.items() if name not in PER_STAGE_ENV)
    state = [str(root), sys.executable, sys.version, options, env, code_state(root)]
    return hashlib.blake2b(json.dumps(state).encode(), digest_size=16).hexdigest()


def address(key: str) -> str:
    """The abstract Unix socket a worker of ``key`` listens on (no file to clean up; gone with the process)."""
    return f"\0cass-stage-worker-{key}"


def start_worker(key: str, options: list[str]) -> None:
    """Start an idle worker of ``key`` in this folder, in a session of its own, its streams on /dev/null."""
    subprocess.Popen([sys.executable, *options, "-m", "cass.pipeline.stage_worker", key], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def read_line(conn: socket.socket) -> str:
    """One line from ``conn`` (without its newline), or "" if it closed first."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            return ""
        data += chunk
    return data[:-1].decode()


def delegate() -> None:
    """In a process started as ``python -m stages.<name>``: run the stage on an idle worker and exit with its
    status, or return (the stage runs here) after starting a worker for the next stage."""
    args = sys.orig_argv[1:]
    if sys.argv[:1] != ["-m"] or os.environ.get(SWITCH) == "0" or "-m" not in args \
            or not sys.platform.startswith("linux"):
        return
    options = python_options()
    module, argv = args[len(options) + 1], args[len(options) + 2:]
    key = worker_key(Path.cwd(), options)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)   # held until it is known who gets them
    try:
        conn.connect(address(key))
        request = json.dumps({"module": module, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
        started = read_line(conn)
    except OSError:
        started = ""
    if not started.startswith("started "):   # none listening, or it went away before it took the stage
        conn.close()
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)   # before the worker inherits the mask
        start_worker(key, options)
        return
    sys.exit(await_worker(conn, int(started.split()[1]), module))


def pass_on(pid: int, number: int) -> None:
    """Send signal ``number`` to the process group of the worker ``pid``, if it is still there."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, number)


def gone(pid: int) -> bool:
    """Whether the process ``pid`` has exited (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def await_worker(conn: socket.socket, pid: int, module: str) -> int:
    """Wait for the worker ``pid`` running ``module`` to report its status and exit, passing signals on; its
    status."""
    try:
        ended: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        ended = None
    except OSError:   # a kernel before 5.3, or a seccomp filter that refuses it: poll instead
        ended = -1
    for number in FORWARDED:
        signal.signal(number, lambda received, _frame: pass_on(pid, received))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    reported = read_line(conn)
    if ended is not None and ended >= 0:
        select.select([ended], [], [])
    elif ended == -1:
        while not gone(pid):
            time.sleep(0.005)
    if not reported.startswith("exit "):
        print(f"{module}: its stage worker (pid {pid}) ended without an exit status (killed?)", file=sys.stderr)
        return 1
    return int(reported.split()[1])


def receive(conn: socket.socket) -> tuple[dict, list[int]]:
    """A client's request and its standard streams' descriptors."""
    data, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    if len(fds) != 3 or len(data) < 4:
        raise ConnectionError("a stage request without its three streams")
    size = struct.unpack("!I", data[:4])[0]
    if size > REQUEST_LIMIT:
        raise ConnectionError(f"a stage request of {size} bytes")
    while len(data) < 4 + size:
        chunk = conn.recv(4 + size - len(data))
        if not chunk:
            raise ConnectionError("a stage request cut short")
        data += chunk
    return json.loads(data[4:]), fds


def wait_for_stage(listener: socket.socket) -> bool:
    """Import :data:`PRELOAD` while listening; True once a stage connects, False after :data:`IDLE_S` idle."""
    pending = list(PRELOAD)
    deadline = time.monotonic() + IDLE_S
    while True:
        wait = 0 if pending else max(0.0, deadline - time.monotonic())
        if select.select([listener], [], [], wait)[0]:
            return True
        if pending:
            with contextlib.suppress(Exception):   # the stage imports it again and reports the error itself
                importlib.import_module(pending.pop(0))
        elif time.monotonic() >= deadline:
            return False


def attach_streams(fds: list[int]) -> None:
    """Make the client's stdin, stdout and stderr this process's, buffered as Python would buffer them."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    like = sys.__stdout__
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                                 encoding=like.encoding)
    for number, name, errors in ((1, "stdout", like.errors), (2, "stderr", "backslashreplace")):
        stream = io.TextIOWrapper(io.BufferedWriter(io.FileIO(number, "w", closefd=False)), encoding=like.encoding,
                                  errors=errors,
                                  line_buffering=number == 2 or os.isatty(number),
                                  write_through=like.write_through)
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def exit_status(error: SystemExit) -> int:
    """The status a process exits with on ``error``, printing a message code as Python does."""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code & 0xFF
    print(error.code, file=sys.stderr)
    return 1


def run_stage(request: dict, conn: socket.socket) -> int:
    """Run the requested stage module as ``__main__`` in the client's folder and environment; its exit status."""
    global request_start
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    usage = os.times()
    request_start = (float(Path("/proc/uptime").read_text().split()[0]), usage.user + usage.system)
    finished = threading.Event()

    def kill_if_orphaned() -> None:   # the client never writes again: a read returns when it is gone
        with contextlib.suppress(OSError):
            conn.recv(1)
        if not finished.is_set():
            os.killpg(os.getpgid(0), signal.SIGKILL)

    conn.sendall(f"started {os.getpid()}\n".encode())
    threading.Thread(target=kill_if_orphaned, daemon=True).start()
    sys.argv = [request["module"], *request["argv"]]
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        status = 0
    except SystemExit as error:
        status = exit_status(error)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        status = 128 + signal.SIGINT
    except BaseException:   # reported as Python reports an uncaught exception
        sys.excepthook(*sys.exc_info())
        status = 1
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    finished.set()
    conn.sendall(f"exit {status}\n".encode())
    return status


def serve(key: str) -> int:
    """An idle worker of ``key``: wait for one stage, start the next idle worker, run the stage; its status."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(key))
    except OSError:   # another idle worker of this key is listening
        return 0
    listener.listen(1)
    if not wait_for_stage(listener):
        return 0
    conn, _ = listener.accept()
    listener.close()
    uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]
    if uid != os.getuid():
        return 0
    try:
        request, fds = receive(conn)
    except (OSError, ValueError):
        return 0
    start_worker(key, python_options())
    try:
        attach_streams(fds)
    except (OSError, ValueError):   # the client runs the stage itself: it never heard "started"
        return 0
    return run_stage(request, conn)


if __name__ == "__main__":
    from cass.pipeline.stage_worker import serve as serve_here  # the instance the stage's run report reads

    sys.exit(serve_here(sys.argv[1]))
