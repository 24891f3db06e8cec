"""A Dask scheduler and vendor-host workers on this machine (127.0.0.1), for the cluster tests,
the cluster benchmark and trying the cluster path on one machine.

Every process is the real `dask` command line of this Python environment, in its own process
group, its own working directory (no project files: hosts share no filesystem with the driver)
and with its log in a file. An NVIDIA host sees no AMD toolchain and an AMD host no CUDA
(``CASS_AMD_ROOT`` / ``CASS_CUDA_HOME`` point nowhere), so a job that reached the wrong host
could not run there. The AMD host's tools run inside the Debian root of params.yaml's suite (ChrootLauncher):
the worker stays outside and enters the root per call.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cass.pipeline.context import load_params
from harness.project import REPO

DASK = str(Path(sys.executable).parent / "dask")
NO_AMD = {"CASS_AMD_ROOT": "/nonexistent/amd-root", "CASS_ROCM_PATH": ""}
NO_CUDA = {"CASS_CUDA_HOME": "/nonexistent/cuda"}


class VendorHosts:
    """Start, kill and restart a scheduler and named workers; :meth:`close` stops them all."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.procs: dict[str, subprocess.Popen] = {}
        self.starts: dict[str, int] = {}
        scheduler_file = workdir / "scheduler.json"
        self._spawn("scheduler", [DASK, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--scheduler-file", str(scheduler_file)], {})
        deadline = time.monotonic() + 60
        while not scheduler_file.exists():
            if time.monotonic() > deadline or self.procs["scheduler"].poll() is not None:
                raise RuntimeError(f"the scheduler did not start:\n{self.log('scheduler')}")
            time.sleep(0.2)
        time.sleep(0.2)
        self.address = json.loads(scheduler_file.read_text())["address"]

    def _spawn(self, name: str, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        self.starts[name] = self.starts.get(name, 0) + 1
        home = self.workdir / name
        home.mkdir(exist_ok=True)
        log = (home / f"log-{self.starts[name]}.txt").open("wb")
        full_env = {**os.environ, **env}
        for key in [k for k, v in env.items() if v == ""]:
            full_env.pop(key)
        proc = subprocess.Popen(argv, cwd=home, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[name] = proc
        return proc

    def log(self, name: str, start: int | None = None) -> str:
        """The log of ``name``'s ``start``-th run (default: the latest)."""
        return (self.workdir / name / f"log-{start or self.starts[name]}.txt").read_text(errors="replace")

    def start_worker(self, name: str, resources: dict[str, int], env: dict[str, str], nthreads: int = 2,
                     wait: bool = True, extra: tuple[str, ...] = ()) -> subprocess.Popen:
        res = ",".join(f"{k}={v}" for k, v in resources.items())
        proc = self._spawn(name, [DASK, "worker", self.address, "--name", name, "--nthreads", str(nthreads),
                                  "--resources", res, "--preload", "hosts.cluster", "--no-dashboard",
                                  "--local-directory", str(self.workdir / name / "dask"), *extra], env)
        if wait:
            self.wait_for(name)
        return proc

    def nvidia(self, name: str = "nvidia-1", nthreads: int = 2, hip_nvidia: bool = False) -> subprocess.Popen:
        """An NVIDIA host; with ``hip_nvidia``, it also builds HIP through HIP's NVIDIA back end."""
        resources = {"nvidia": nthreads, **({"hip-nvidia": nthreads} if hip_nvidia else {})}
        return self.start_worker(name, resources, NO_AMD, nthreads)

    def amd(self, name: str = "amd-1", nthreads: int = 2, suite: str | None = None) -> subprocess.Popen:
        """An AMD host on the root of ``suite`` (default: this checkout's params.yaml amd.toolchain)."""
        suite = suite or load_params(REPO / "params.yaml")["amd"]["toolchain"]
        return self.start_worker(name, {"amd": nthreads, "hipify": nthreads},
                                 {**NO_CUDA, "CASS_AMD_SUITE": suite}, nthreads)

    def stage(self, name: str = "stage-1", processes: int = 2) -> subprocess.Popen:
        """A stage host: ``processes`` worker processes of one thread, for the stages' own work. It sees this
        machine's files, as a stage host mounts the driver's project and store."""
        return self.start_worker(name, {"stage": 1}, {}, 1, extra=("--nworkers", str(processes)))

    def wait_for(self, name: str, timeout_s: float = 120) -> None:
        """Wait until worker ``name`` has registered (its preload fingerprinted its toolchain)."""
        deadline = time.monotonic() + timeout_s
        while "Registered to:" not in self.log(name):
            if self.procs[name].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"worker {name} did not start:\n{self.log(name)[-4000:]}")
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        """SIGKILL ``name``'s whole process group (a host that dies, not one shutting down)."""
        proc = self.procs[name]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    def close(self) -> None:
        for name in reversed(list(self.procs)):
            proc = self.procs[name]
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    self.kill(name)
