"""Warm stage processes: a DVC stage that starts with the library already imported.

Every stage's command is ``python -m stages.<name>``. Started that way, ``stages/__init__.py`` calls
:func:`delegate` before anything else is imported. It looks for an idle *stage worker* of this project: a process
started on the same interpreter, in the same folder, with the same environment and the same code, that has already
imported the stage context (Polars, the store, the placement of work: about 0.2 s of every stage's start on 2 cores).

* If one is listening (and runs as this user), the stage runs there. The worker takes this process's standard
  streams, arguments, environment and working directory, runs ``stages.<name>`` as ``__main__``, and reports its exit
  status; this process waits until the worker has exited, then exits with that status (or dies of the signal the
  stage died of). It passes SIGINT, SIGTERM, SIGHUP, SIGTSTP and SIGCONT on to the worker's process group. If it dies
  first (kill -9), the worker kills the tools it runs (:func:`toolchains.executor.kill_running`) and its own process
  group.
* If none is, or the hand-over does not finish within :data:`HANDSHAKE_S`, the stage runs in this process, as it would
  without workers. A worker runs a stage only after the client's go-ahead, so a stage never runs twice.

Either way one new idle worker is started (by this process, or by the worker as it takes the stage), so that the
stages of one ``dvc repro`` find a warm process waiting. It is started through a shell that exits at once, so it is
no process's child. A worker serves one stage and exits; one that no stage took exits :data:`IDLE_S` seconds after
it started. Workers are new processes, never forks of one that has imported Polars (a fork can deadlock on its
threads' locks). Warnings raised by the worker's own imports are shown on the stage's stderr, as a fresh process
would show them.

A worker is found by a key: the folder, the interpreter and its options, the environment (but ``DVC_STAGE``, which
DVC sets per stage), and the size and modification time of every ``.py`` file of the folder's packages and of the
site-packages folders. An edited module of the project, another environment, or a package installed or removed gives
another key, so such a stale worker is not used: it idles out. (An edit inside an installed package's folder is not
seen.) ``CASS_STAGE_WORKERS=0`` turns workers off.

This module imports the standard library alone: it runs before every stage's imports.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import importlib
import io
import json
import os
import resource
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
import warnings
from pathlib import Path
from typing import NoReturn

SWITCH = "CASS_STAGE_WORKERS"
"""Set to ``0`` to run every stage in a process of its own, with no workers."""
IDLE_S = 20.0
"""Seconds after its start that a worker no stage took exits."""
HANDSHAKE_S = 10.0
"""Seconds a client and a worker wait for each other's next message while handing a stage over."""
POLL_S = 0.005
"""How often a client checks whether its worker has exited where it cannot be told (no ``pidfd_open``)."""
PER_STAGE_ENV = frozenset({"DVC_STAGE"})
"""Environment variables that differ between the stages of one run and are not part of a worker's key."""
PRELOAD = ("cass.pipeline.context",)
"""What a worker imports before it takes a stage: what every stage's entry point imports first."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGTSTP, signal.SIGCONT)
"""Signals a client passes on to the worker running its stage."""
REQUEST_LIMIT = 1 << 24
"""The largest stage request (arguments and environment, as JSON) a worker reads, in bytes."""

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
    """Start an idle worker of ``key`` in this folder, its streams on /dev/null, as no child of this process: a shell
    starts it in the background and exits (the worker then starts a session of its own)."""
    subprocess.run(["/bin/sh", "-c", '"$@" &', "sh", sys.executable, *options, "-m", "cass.pipeline.stage_worker", key],
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


def peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end of ``conn``."""
    return struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))[1]


def read_line(conn: socket.socket) -> str:
    """One line from ``conn`` (without its newline), or "" if it closed first."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(1)
        if not chunk:
            return ""
        data += chunk
    return data[:-1].decode()


def start_time(pid: int) -> str | None:
    """When the process ``pid`` started (clock ticks since boot, from /proc), or None if it has exited (a zombie
    has)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    return None if fields[0] == "Z" else fields[19]


def hand_over(key: str, module: str, argv: list[str]) -> tuple[socket.socket, int, str] | None:
    """Hand the stage to the idle worker of ``key``: the connection, the worker's pid and start time once it has the
    go-ahead; None (the worker never runs it) if none of this user listens or the hand-over fails."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.settimeout(HANDSHAKE_S)
        conn.connect(address(key))
        if peer_uid(conn) != os.getuid():   # a name anyone may bind once a worker is gone
            raise ConnectionRefusedError("a stage worker's address bound by another user")
        request = json.dumps({"module": module, "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        socket.send_fds(conn, [struct.pack("!I", len(request)) + request], [0, 1, 2])
        started = read_line(conn).split()
        if len(started) != 3 or started[0] != "started":
            raise ConnectionError("the worker went away before it took the stage")
        conn.sendall(b"go\n")
        conn.settimeout(None)
    except OSError:
        conn.close()
        return None
    return conn, int(started[1]), started[2]


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
    signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)   # held until it is known who gets them
    handed = hand_over(key, module, argv)
    if handed is None:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)   # before the next worker inherits the mask
        start_worker(key, options)
        return
    sys.exit(await_worker(*handed, module))


def pass_on(pid: int, number: int) -> None:
    """Send signal ``number`` to the process group of the worker ``pid``, if it is still there; on SIGTSTP stop this
    process too, as the stage it stands for stops."""
    with contextlib.suppress(ProcessLookupError):   # an orphaned group, as a worker's is, ignores SIGTSTP: stop it
        os.killpg(pid, signal.SIGSTOP if number == signal.SIGTSTP else number)
    if number == signal.SIGTSTP:
        os.kill(os.getpid(), signal.SIGSTOP)


def die_of(number: int) -> int:
    """End this process by signal ``number``, as the stage it stands for ended (128 + ``number`` if it survives)."""
    sys.stdout.flush()
    signal.signal(number, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [number])
    os.kill(os.getpid(), number)
    return 128 + number


def await_worker(conn: socket.socket, pid: int, started: str, module: str) -> int:
    """Wait until the worker ``pid`` (started at ``started``) running ``module`` has exited, passing signals on; its
    status. Its report is read as it comes, and what is left of it once the worker is gone (children the stage
    forked may hold the connection open)."""
    try:
        ended: int | None = os.pidfd_open(pid)
    except ProcessLookupError:
        ended = None
    except OSError:   # a kernel before 5.3, or a seccomp filter that refuses it: poll instead
        ended = -1
    forwarded: list[int] = []

    def forward(number: int, _frame: object) -> None:
        forwarded.append(number)
        pass_on(pid, number)

    for number in FORWARDED:
        signal.signal(number, forward)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
    report, listening = b"", True
    while ended is not None:
        watch = [conn] if listening else []
        ready = select.select(watch + ([ended] if ended >= 0 else []), [], [], None if ended >= 0 else POLL_S)[0]
        if conn in ready:
            chunk = conn.recv(4096)
            report += chunk
            listening = bool(chunk)
        if ended in ready or (ended < 0 and start_time(pid) != started):
            break
    conn.setblocking(False)
    with contextlib.suppress(OSError):
        while chunk := conn.recv(4096):
            report += chunk
    status = report.decode().split()
    if status[:1] == ["exit"]:
        return int(status[1])
    if status[:1] == ["signal"]:
        return die_of(int(status[1]))
    if lethal := [number for number in forwarded if number not in (signal.SIGTSTP, signal.SIGCONT)]:
        return die_of(lethal[-1])   # the stage died of a signal this process passed on, as it would have here
    print(f"{module}: its stage worker (pid {pid}) ended without an exit status (killed?)", file=sys.stderr)
    return 1


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


def wait_for_stage(listener: socket.socket) -> tuple[bool, list[tuple]]:
    """Import :data:`PRELOAD` while listening; (True once a stage connects, False :data:`IDLE_S` after the start),
    and the warnings those imports raised (the arguments of ``warnings.showwarning``), to be shown to the stage."""
    pending = list(PRELOAD)
    deadline = time.monotonic() + IDLE_S
    raised: list[tuple] = []
    shown, warnings.showwarning = warnings.showwarning, lambda *args, **_: raised.append(args[:4])
    try:
        while True:
            wait = 0 if pending else max(0.0, deadline - time.monotonic())
            if select.select([listener], [], [], wait)[0]:
                return True, raised
            if pending:
                with contextlib.suppress(Exception):   # the stage imports it again and reports the error itself
                    importlib.import_module(pending.pop(0))
            elif time.monotonic() >= deadline:
                return False, raised
    finally:
        warnings.showwarning = shown


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


def run_stage(request: dict, conn: socket.socket) -> str:
    """Run the requested stage module as ``__main__`` in the client's folder and environment; its report to the
    client: ``exit <status>``, or ``signal 2`` for an uncaught KeyboardInterrupt (of which Python dies by SIGINT)."""
    global request_start
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    request_start = (float(Path("/proc/uptime").read_text().split()[0]), usage.ru_utime + usage.ru_stime)
    finished = threading.Event()

    def kill_if_orphaned() -> None:   # the client never writes again: a read returns when it is gone
        with contextlib.suppress(OSError):
            conn.recv(1)
        if not finished.is_set():
            if executor := sys.modules.get("toolchains.executor"):
                executor.kill_running()   # the tools, each in a session of its own
            os.killpg(os.getpgid(0), signal.SIGKILL)

    os.register_at_fork(after_in_child=conn.close)   # a process the stage forks holds no end of the connection
    threading.Thread(target=kill_if_orphaned, daemon=True).start()
    sys.argv = [request["module"], *request["argv"]]
    try:
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        report = "exit 0"
    except SystemExit as error:
        report = f"exit {exit_status(error)}"
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        report = f"signal {signal.SIGINT.value}"
    except BaseException:   # reported as Python reports an uncaught exception
        sys.excepthook(*sys.exc_info())
        report = "exit 1"
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    finished.set()
    conn.sendall(f"{report}\n".encode())
    return report


def serve(key: str) -> int:
    """An idle worker of ``key``: wait for one stage, start the next idle worker, run the stage once the client says
    go; 0, or 1 if the stage failed."""
    os.setsid()   # its own process group, which its client signals and which it kills if its client dies
    signal.signal(signal.SIGINT, signal.default_int_handler)   # the shell that started it in the background
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)               # left both ignored; a stage process has neither so
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(address(key))
    except OSError:   # another idle worker of this key is listening
        return 0
    listener.listen(1)
    connected, raised = wait_for_stage(listener)
    if not connected:
        return 0
    conn, _ = listener.accept()
    listener.close()
    try:
        if peer_uid(conn) != os.getuid():
            return 0
        conn.settimeout(HANDSHAKE_S)
        request, fds = receive(conn)
        start_worker(key, python_options())
        attach_streams(fds)
        conn.sendall(f"started {os.getpid()} {start_time(os.getpid())}\n".encode())
        if read_line(conn) != "go":   # the client gave up: it runs the stage itself
            return 0
        conn.settimeout(None)
    except (OSError, ValueError):
        return 0
    for args in raised:
        warnings.showwarning(*args)
    return 0 if run_stage(request, conn) == "exit 0" else 1


def serve_and_exit(key: str) -> NoReturn:
    """:func:`serve`, then exit with its status as Python exits, but for the interpreter's teardown: the stage's
    non-daemon threads are joined and its ``atexit`` handlers run (streams flushed, temporary folders removed), but
    the modules are not torn down, which takes a worker that imported Polars about 50 ms that its client (and DVC)
    would wait for. (Handlers registered before this one, at the interpreter's start, are not run: none is here.)"""
    status = 1   # an uncaught error in serve

    def leave() -> None:   # registered first, so called after every handler the stage registers
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(status)

    atexit.register(leave)
    status = serve(key)
    sys.exit(status)


if __name__ == "__main__":
    from cass.pipeline.stage_worker import serve_and_exit as serve_here  # the instance the stage's run report reads

    serve_here(sys.argv[1])
