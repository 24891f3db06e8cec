"""Where pair programs run: run hosts, their fingerprints, and the batch runner of a GPU host that is
reached by copying files.

A :class:`RunHost` is a machine's facts as far as a program's output can depend on them: the GPU
model, the driver, the CUDA version the driver supports, the compute capability, the sandbox
mode programs run in and the C library. Its fingerprint enters every run's action key, because a run's output is a
result of the machine as well as of the code. :func:`local_gpu_host` asks ``nvidia-smi`` for this
machine's GPU; :func:`cpu_host` is this machine without one (host-only programs, and tests).

A GPU host that cannot reach the store (no network, a cluster node behind a queue) gets a batch
directory instead (``cass gpu-batch export``): ``binaries/<digest>`` and ``batch.json``. On the GPU
host, with only ``hosts/``, ``toolchains/``, ``store/`` and ``blake3``::

    python -m hosts.gpu run-batch DIR

runs every binary in the program sandbox (as each run's entry says: arguments, working directory, the data files
of ``DIR/inputs/<digest>`` around it, limits; kernels counted with ``DIR/launch_counter`` where the batch carries it)
and writes the outputs under ``DIR/results/`` as each run finishes (then its entry, ``<run>.entry.json``, beside
``host.json``: what ``--resume`` keeps), and at the end ``DIR/results.json`` (the host's facts, each run's verdict,
exit code, wall time); ``cass gpu-batch import`` brings them into the store as cached runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import blake3

from toolchains.executor import Job
from toolchains.launches import CounterBuildError, LaunchCounter, build_counter
from toolchains.sandbox import detect
from toolchains.sandboxed_runs import Invocation, ProgramLauncher, ProgramLimits, program_job, run_program

BATCH_FILE = "batch.json"
RESULTS_FILE = "results.json"
HOST_FILE = "host.json"
"""The facts of the host a batch's results folder holds runs of."""
ENTRY_SUFFIX = ".entry.json"
"""A finished run's entry in the results folder (``<name>.entry.json``), written once its outputs are."""
COUNTER_DIR = "launch_counter"


@dataclass(frozen=True)
class RunHost:
    """A machine programs run on: ``gpu`` is the GPU's model (``none`` for a host without one), ``sm`` its
    compute capability as an arch name (``sm_90``)."""

    gpu: str
    driver: str | None
    cuda: str | None
    sm: str | None
    sandbox: str
    libc: str
    """The C library the binaries load (they link the CUDA runtime statically, the C and C++ libraries not)."""
    launch_counter: str | None = None
    """The digest of the kernel counter runs are made with (:mod:`toolchains.launches`); None: kernels not counted."""

    def fingerprint(self) -> str:
        """BLAKE3 over the host's facts."""
        return blake3.blake3(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()

    @property
    def has_gpu(self) -> bool:
        return self.gpu != "none"

    def describe(self) -> str:
        if not self.has_gpu:
            return f"no GPU (sandbox {self.sandbox})"
        counted = "kernels counted" if self.launch_counter else "kernels not counted"
        return f"{self.gpu} ({self.sm}, driver {self.driver}, CUDA {self.cuda}; sandbox {self.sandbox}; {counted})"


class GpuQueryError(RuntimeError):
    """nvidia-smi ran but its answer could not be read, or the GPUs of one host differ."""


def local_gpu_host(counted: bool = True) -> RunHost | None:
    """This machine's GPU host (all its GPUs must be one model), or None without ``nvidia-smi`` or a GPU; with this
    machine's kernel counter where ``counted`` (a batch brings its own)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    query = subprocess.run([smi, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=60, check=False)
    gpus = {tuple(f.strip() for f in line.split(",")) for line in query.stdout.splitlines() if line.strip()}
    if query.returncode or not gpus:
        return None
    if len(gpus) > 1:
        raise GpuQueryError(f"this host has GPUs of different kinds {sorted(gpus)}; run one kind per host "
                            "(CUDA_VISIBLE_DEVICES)")
    ((name, driver, cap),) = gpus
    banner = subprocess.run([smi], capture_output=True, text=True, timeout=60, check=False).stdout
    cuda = re.search(r"CUDA Version:\s*([\d.]+)", banner)
    if not re.fullmatch(r"\d+\.\d+", cap):
        raise GpuQueryError(f"nvidia-smi gave the compute capability {cap!r}")
    host = RunHost(name, driver, cuda.group(1) if cuda else None, "sm_" + cap.replace(".", ""), detect().mode, libc())
    return with_counter(host, local_counter()) if counted else host


@functools.cache
def local_counter() -> LaunchCounter | None:
    """This machine's kernel counter, built once (None, with the reason on stderr, where it cannot be built)."""
    try:
        return build_counter()
    except CounterBuildError as error:
        print(f"kernel launches will not be counted: {error}", file=sys.stderr)
        return None


def cpu_host() -> RunHost:
    """This machine without a GPU: programs that launch no kernel run; the others fail to find a device."""
    return RunHost("none", None, None, None, detect().mode, libc())


def libc() -> str:
    """This host's C library and version (``glibc 2.36``)."""
    name, version = platform.libc_ver()
    return f"{name} {version}".strip() or "unknown"


def with_counter(host: RunHost, counter: LaunchCounter | None) -> RunHost:
    """``host`` running programs with ``counter`` (a host without a GPU counts nothing)."""
    return replace(host, launch_counter=counter.digest() if counter and host.has_gpu else None)


def launcher_for(host: RunHost, limits: ProgramLimits, counter: LaunchCounter | None = None,
                 device: int | None = None) -> ProgramLauncher:
    """The program launcher of ``host``: the GPU's device nodes where it has a GPU (``device``: the one GPU a
    program sees), and the kernel counter its fingerprint names (``counter``, else this machine's)."""
    if host.launch_counter:
        counter = counter or local_counter()
        if counter is None or counter.digest() != host.launch_counter:
            raise ValueError(f"{host.describe()} counts kernels with counter {host.launch_counter[:16]}, which this "
                             "machine does not have")
    return ProgramLauncher(limits, gpu=host.has_gpu, counter=counter if host.launch_counter else None, device=device)


def _read_checked(path: Path) -> bytes:
    data = path.read_bytes()
    if blake3.blake3(data).hexdigest() != path.name:
        raise ValueError(f"{path}: the file's BLAKE3 is not its name")
    return data


class CounterProbeError(RuntimeError):
    """The batch's kernel counter did not count the probe's one kernel, or did not digest the one 4-byte copy it
    reads back: every run would read a wrong count or wrong device reads."""


def reads_probe_copy(reads: bytes | None) -> bool:
    """Whether device reads hold exactly the probe's copy: one copy of 4 bytes, one of them non-zero (``1``)."""
    lines = [line.split() for line in (reads or b"").decode(errors="replace").splitlines()]
    return (len(lines) == 2 and lines[0][2:4] == ["copies", "1"] and len(lines[1]) == 7
            and lines[1][0] == "4" and lines[1][2] == "1")


def probe_counter(host: RunHost, counter: LaunchCounter | None, devices: list[int | None]) -> None:
    """Run the batch's probe on every GPU of ``devices`` and raise :class:`CounterProbeError` unless each run exited 0
    with the one kernel it launches counted (a host without a GPU counts nothing: no probe)."""
    if not host.has_gpu:
        return
    if counter is None:
        raise CounterProbeError("the batch carries no kernel counter (launch_counter/): its runs would count no "
                                "kernel, so nothing they run could be verified; export it again where the counter "
                                "builds, or pass --uncounted")
    if not counter.probe.is_file():
        raise CounterProbeError(f"the batch carries no probe program ({counter.probe}): export it again with this "
                                "checkout, or pass --uncounted")
    limits = ProgramLimits(wall_s=60, cpu_s=60, data_bytes=1 << 30, file_bytes=1 << 20, processes=64)
    counted = with_counter(host, counter)
    for device in devices:
        run = run_program(launcher_for(counted, limits, counter, device), counter.probe.read_bytes())
        where = f"GPU {device}" if device is not None else "the GPU"
        if run.verdict != "exited" or run.exit_code != 0:
            raise CounterProbeError(f"the probe did not run on {where}: {run.verdict}, exit {run.exit_code}: "
                                    f"{run.stderr.decode(errors='replace').strip()[:500]}")
        if run.kernel_launches != 1:
            raise CounterProbeError(f"the kernel counter counted {run.kernel_launches} kernels of the probe on "
                                    f"{where}, which launches 1 (counter {counter.folder}): every count would be wrong")
        if not reads_probe_copy(run.device_reads):
            raise CounterProbeError(f"the counter's device reads of the probe on {where} are not its one 4-byte copy "
                                    f"(counter {counter.folder}): {(run.device_reads or b'none')[:300]!r}")


def batch_job(folder: Path, batch: dict, entry: dict) -> tuple[ProgramLimits, Invocation, Job]:
    """One entry of the batch in ``folder`` (its ``batch.json``: ``batch``) as a program job: its limits, its
    invocation, and the job with its binary and data files read and checked against their digests."""
    limits = ProgramLimits(**entry.get("limits", batch["limits"]))
    invocation = Invocation(tuple(entry.get("args", ())), entry.get("workdir", ""),
                            tuple(map(tuple, entry.get("inputs", ()))))
    inputs = {path: _read_checked(folder / "inputs" / digest) for path, digest in invocation.inputs}
    return limits, invocation, program_job(_read_checked(folder / "binaries" / entry["binary"]), limits, invocation,
                                           inputs)


def write_atomic(path: Path, text: str) -> None:
    """``text`` in ``path``, whole or not at all (a process killed while writing leaves no half file)."""
    part = path.with_name(path.name + ".part")
    part.write_text(text)
    os.replace(part, path)


def start_results(folder: Path, host: RunHost) -> dict[str, dict]:
    """The batch in ``folder`` ready for a fresh run on ``host``: its results folder emptied and its results file
    removed (nothing of an earlier call can be taken for this one's), the host's facts written; no run finished."""
    out = folder / "results"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir()
    (folder / RESULTS_FILE).unlink(missing_ok=True)
    write_atomic(out / HOST_FILE, json.dumps(asdict(host), sort_keys=True))
    return {}


def finished_runs(folder: Path, host: RunHost) -> dict[str, dict]:
    """The runs an earlier call on ``host`` finished in the batch in ``folder``, by name: each run's entry is written
    after its outputs, so a call stopped by its deadline or killed (even ``kill -9``) keeps every run it finished
    (a folder of a ``run-batch`` before entries were kept: the runs of its results file). Raises ValueError where
    they were made on another host."""
    out = folder / "results"
    if (out / HOST_FILE).is_file():
        before = json.loads((out / HOST_FILE).read_text())
        entries = [json.loads(path.read_text()) for path in out.glob(f"*{ENTRY_SUFFIX}")]
    elif (folder / RESULTS_FILE).is_file():
        results = json.loads((folder / RESULTS_FILE).read_text())
        before, entries = results["host"], results["runs"]
    else:
        return start_results(folder, host)
    if before != asdict(host):
        raise ValueError(f"{folder} holds runs of another host ({before['gpu']}, {before['driver']}): resume it "
                         "there, or start afresh")
    if not (out / HOST_FILE).is_file():   # an older run-batch's folder: its runs kept as this one keeps them
        for entry in entries:
            write_atomic(out / f"{entry['name']}{ENTRY_SUFFIX}", json.dumps(entry, sort_keys=True))
        write_atomic(out / HOST_FILE, json.dumps(asdict(host), sort_keys=True))
    return {entry["name"]: entry for entry in entries}


def run_batch(folder: Path, host: RunHost, jobs: int = 1, deadline_s: float | None = None,
              gpus: int = 1, uncounted: bool = False, resume: bool = False) -> dict:
    """Run every entry of a batch directory on ``host`` (this machine), ``jobs`` at a time, spread over its first
    ``gpus`` GPUs (each run sees one); write and return the results. ``host`` gets the batch's kernel counter, where
    it carries one, once the counter has counted the batch's probe on every GPU (:func:`probe_counter`; a batch
    without a counter runs only with ``uncounted``). With ``deadline_s`` no run starts after that many seconds: the
    results hold the runs that finished; ``resume`` then runs only the rest, keeping every run an earlier call on
    the same host finished (:func:`finished_runs`: one stopped by its deadline, or killed), for hosts whose commands
    have a time limit."""
    folder = folder.resolve()   # the counter is loaded by path from inside each run's own working directory
    stop_at = time.monotonic() + deadline_s if deadline_s else None
    batch = json.loads((folder / BATCH_FILE).read_text())
    counter = LaunchCounter.found_in(folder / COUNTER_DIR)
    devices: list[int | None] = list(range(gpus)) if host.has_gpu and gpus > 1 else [None]
    if not uncounted or counter is not None:
        probe_counter(host, counter, devices)
    host = with_counter(host, counter)
    print(f"running on {host.describe()}, {len(devices)} GPU(s)"
          + (": the batch's counter counted the probe's kernel on each" if host.launch_counter else ""), flush=True)
    out = folder / "results"
    total = len(batch["runs"])
    done = finished_runs(folder, host) if resume else start_results(folder, host)
    if resume:
        print(f"resuming: {len(done)} of {total} runs done before", flush=True)

    def run(numbered: tuple[int, dict]) -> dict | None:
        n, entry = numbered
        name = f"{n:06d}"
        before = done.get(name)
        if before is not None and all(before.get(key) == value for key, value in entry.items()):
            return before   # this very run (a batch written again into the folder numbers its runs afresh)
        if stop_at is not None and time.monotonic() > stop_at:
            return None
        limits, invocation, job = batch_job(folder, batch, entry)
        result = launcher_for(host, limits, counter, devices[n % len(devices)]).run_job(job)
        label = f"[{n}/{total}] {entry['binary'][:16]} {' '.join(invocation.args)[:60]} run {entry['run']}"
        if result.transient:   # not a result of the program: left out (the import then has no run for it)
            print(f"{label}: not run: {result.transient}: {result.stderr.decode(errors='replace')[:500]}", flush=True)
            return None
        for stale in out.glob(f"{name}.*"):   # what an unfinished earlier attempt left
            stale.unlink()
        for output, data in (*result.outputs.items(), ("stderr", result.stderr)):
            (out / f"{name}.{output}").write_bytes(data)
        facts = json.loads(result.outputs["run.json"])
        print(f"{label}: {facts['verdict']} exit {result.exit_code} in {facts['wall_s']:.2f} s, "
              f"{facts['kernel_launches']} kernels", flush=True)
        finished = {**entry, "exit_code": result.exit_code, "name": name}
        write_atomic(out / f"{name}{ENTRY_SUFFIX}", json.dumps(finished, sort_keys=True))   # after its outputs
        return finished

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        runs = [r for r in pool.map(run, enumerate(batch["runs"], 1)) if r is not None]
    if len(runs) < total:
        print(f"{total - len(runs)} of {total} runs have no result (not started before the deadline, or not run)",
              flush=True)
    results = {"host": asdict(host), "limits": batch["limits"], "runs": runs}
    write_atomic(folder / RESULTS_FILE, json.dumps(results, indent=1, sort_keys=True) + "\n")
    return results


def gpu_count() -> int:
    """How many GPUs ``nvidia-smi`` lists on this machine (0 without it)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    query = subprocess.run([smi, "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True,
                           timeout=60, check=False)
    return sum(bool(line.strip()) for line in query.stdout.splitlines()) if query.returncode == 0 else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hosts.gpu", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run-batch", help="run a batch directory's binaries on this machine's GPU")
    run.add_argument("folder", type=Path)
    run.add_argument("--cpu", action="store_true", help="run without a GPU (programs that launch no kernel)")
    run.add_argument("--jobs", type=int, default=1, help="programs run at once (default 1; more share the GPU, "
                     "so wall times are not comparable with a run of one at a time)")
    run.add_argument("--deadline", type=float, metavar="SECONDS", help="start no run after this many seconds "
                     "(the results keep what finished)")
    run.add_argument("--gpus", type=int, help="spread the runs over this many of the host's GPUs, each run on one "
                     "(default: all that nvidia-smi lists)")
    run.add_argument("--uncounted", action="store_true", help="run a batch that carries no kernel counter (nothing "
                     "it runs can be verified)")
    run.add_argument("--resume", action="store_true", help="keep the runs an earlier call on this host "
                     "finished (one stopped by --deadline, or killed) and run the rest")
    args = parser.parse_args(argv)
    host = cpu_host() if args.cpu else local_gpu_host(counted=False)
    if host is None:
        print("no NVIDIA GPU found (nvidia-smi is missing or lists none); --cpu runs without one", file=sys.stderr)
        return 2
    if not (args.folder / BATCH_FILE).is_file():
        print(f"{args.folder.resolve()} holds no {BATCH_FILE}: not a run batch (`cass gpu-batch export` writes one)",
              file=sys.stderr)
        return 2
    gpus = (args.gpus or max(1, gpu_count())) if host.has_gpu else 1
    try:
        results = run_batch(args.folder, host, args.jobs, args.deadline, gpus, args.uncounted, args.resume)
    except (CounterProbeError, ValueError) as error:
        print(f"run-batch: refusing to run {args.folder.resolve()}: {error}", file=sys.stderr)
        return 3
    print(f"{len(results['runs'])} runs; results in {args.folder / RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
