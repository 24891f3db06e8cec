"""Benchmark: compile throughput on Dask vendor hosts against the number of worker processes, and
the cluster path's per-job overhead against the local path, on cache misses and cache hits.

Throughput: real ``nvcc -cubin`` jobs (every one a miss, fresh store per row) for generated
programs (bench/gen_corpus.py), run by the local executor with N threads (the baseline) and by a
scheduler on 127.0.0.1 with N NVIDIA worker processes of one thread each (tests/harness/hosts.py).
Overhead on misses: the same small real job (``cuobjdump -elf`` of a small cubin) run M times
by one local thread and by one single-thread worker, in one batch (pipelined) and one job at a
time (latency). Overhead on hits: ActionRunner.run over K actions that are all store hits, with
the local executor and with the cluster executor (nothing may be sent).

    python bench/cluster.py [--files 48] [--workers 1 2 4] [--jobs 200] [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/

from harness.hosts import VendorHosts  # noqa: E402

from bench.gen_corpus import generate  # noqa: E402
from bench.results import replace_section  # noqa: E402
from cass.engine.actions import ActionRunner, plan  # noqa: E402
from hosts.cluster import Cluster  # noqa: E402
from store import Store  # noqa: E402
from toolchains import load_toolchains, local_executor  # noqa: E402
from toolchains.executor import Executor, Job, run_in_scratch  # noqa: E402

SECTION = "## Vendor hosts on Dask (issue 8)"
ARCH = "sm_90"


def cubin_actions(store: Store, nvidia, sources: list[Path]) -> list:
    """One ``nvcc -cubin`` action per source (the device target's first step)."""
    flags = {"common": ["-std=c++17", "-DNDEBUG", "-w"], "host": ["-Os"]}
    actions = []
    for src in sources:
        step = nvidia.cubin_step(src.name, ARCH, flags)
        actions.append(plan(nvidia, step, {src.name: store.put(src.read_bytes())}))
    return actions


def throughput(executor: Executor, sources: list[Path], work: Path, nvidia) -> tuple[float, dict]:
    """Seconds to compile every source as a miss through ``executor``; jobs per host."""
    store = Store(work / f"store-{time.monotonic_ns()}")
    runner = ActionRunner(store, executor, timeout_s=600)
    actions = cubin_actions(store, nvidia, sources)
    start = time.perf_counter()
    outcomes = runner.run(actions, desc="nvcc -cubin")
    seconds = time.perf_counter() - start
    failed = [k for k, o in outcomes.items() if not o.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} compiles failed")
    return seconds, dict(runner.counts.by_host)


def small_job(nvidia) -> Job:
    """``cuobjdump -elf`` of the cubin of a one-kernel program: a real job of about a millisecond."""
    axpy = b"__global__ void axpy(float a, float *x) { x[threadIdx.x] *= a; }\n"
    nvcc = Job("nvidia", "nvcc", (f"-arch={ARCH}", "-cubin", "axpy.cu", "-o", "axpy.cubin"), {"axpy.cu": axpy},
               ("axpy.cubin",), 120)
    cubin = run_in_scratch(nvidia.launcher, nvcc)
    return Job(vendor="nvidia", tool="cuobjdump", args=("-elf", "axpy.cubin"),
               inputs={"axpy.cubin": cubin.outputs["axpy.cubin"]}, outputs=("elf",), timeout_s=60,
               stdout_as="elf", fingerprint=nvidia.fingerprint("cuobjdump"), action="bench")


def per_job(executor: Executor, job: Job, count: int) -> tuple[float, float]:
    """(batch, one-at-a-time) seconds per job for ``count`` runs of ``job``."""
    start = time.perf_counter()
    results = [r for _, r in executor.run([job] * count)]
    batch = (time.perf_counter() - start) / count
    start = time.perf_counter()
    for _ in range(count):
        results += [r for _, r in executor.run([job])]
    single = (time.perf_counter() - start) / count
    if not all(r.ok for r in results):
        raise RuntimeError("a small job failed")
    return batch, single


def per_hit(executor: Executor, work: Path, nvidia, sources: list[Path]) -> tuple[float, int]:
    """Seconds per action of a run where every action is a hit; jobs sent (must be 0)."""
    store = Store(work / "store-hits")
    actions = cubin_actions(store, nvidia, sources)
    ActionRunner(store, local_executor({"nvidia": nvidia}), timeout_s=600).run(actions, desc="warm")
    repeats = 200
    runner = ActionRunner(store, executor, timeout_s=600)
    start = time.perf_counter()
    for _ in range(repeats):
        runner.run(actions, desc="hits")
    return (time.perf_counter() - start) / (repeats * len(actions)), runner.counts.sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=48)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--jobs", type=int, default=200, help="small jobs for the per-job overhead")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    nvidia = load_toolchains()["nvidia"]
    work = Path(tempfile.mkdtemp(prefix="cass-bench-cluster-"))
    generate(work / "corpus", args.files)
    sources = sorted((work / "corpus").rglob("*.cu"))

    rows = []
    for n in args.workers:
        local_s, _ = throughput(local_executor({"nvidia": nvidia}, n), sources, work, nvidia)
        hosts = VendorHosts(work / f"hosts-{n}")
        try:
            for i in range(n):
                hosts.nvidia(f"nvidia-{i + 1}", nthreads=1)
            cluster = Cluster(hosts.address)
            cluster_s, by_host = throughput(cluster.executor(60), sources, work, cluster.toolchain("nvidia"))
            cluster.close()
        finally:
            hosts.close()
        rows.append((n, local_s, cluster_s, by_host))
        print(f"{n} worker(s): local {len(sources) / local_s:.2f} files/s, cluster {len(sources) / cluster_s:.2f} "
              f"files/s, jobs by host {by_host}", flush=True)

    hosts = VendorHosts(work / "hosts-overhead")
    try:
        hosts.nvidia("nvidia-1", nthreads=1)
        cluster = Cluster(hosts.address)
        job = small_job(nvidia)
        local_batch, local_single = per_job(local_executor({"nvidia": nvidia}, 1), job, args.jobs)
        cluster_batch, cluster_single = per_job(cluster.executor(60), job, args.jobs)
        hit_sources = sources[:8]
        local_hit, _ = per_hit(local_executor({"nvidia": nvidia}), work, nvidia, hit_sources)
        cluster_hit, sent = per_hit(cluster.executor(60), work, cluster.toolchain("nvidia"), hit_sources)
        cluster.close()
    finally:
        hosts.close()

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=False).stdout.strip()
    base = len(sources) / rows[0][2]
    lines = [
        SECTION, "",
        f"`python bench/cluster.py --files {args.files} --workers {' '.join(map(str, args.workers))} "
        f"--jobs {args.jobs}` on {os.cpu_count()} cores ({platform.machine()}), {date.today()}, commit {commit}. "
        f"A Dask scheduler and NVIDIA worker processes (one thread each) on 127.0.0.1; real `nvcc -arch={ARCH} "
        f"-cubin` of {len(sources)} generated programs, all cache misses (fresh store per row); the baseline is "
        "the local executor with as many threads, in the same run.", "",
        "| worker processes | local files/s | cluster files/s | cluster / local | cluster vs 1 worker | "
        "jobs per host |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    for n, local_s, cluster_s, by_host in rows:
        hosts_text = " ".join(f"{h}={c}" for h, c in sorted(by_host.items()))
        lines.append(f"| {n} | {len(sources) / local_s:.2f} | {len(sources) / cluster_s:.2f} | "
                     f"{local_s / cluster_s:.2f} | {len(sources) / cluster_s / base:.2f} | {hosts_text} |")
    lines += [
        "", f"Per-job overhead of the cluster path against the local path ({args.jobs} runs of `cuobjdump -elf` "
        "of a one-kernel cubin, about 1 ms of work, one thread on each side; hits: 200 passes over 8 actions "
        "that are all store hits):", "",
        "| path | local ms/job | cluster ms/job | cluster overhead ms/job |", "|---|---:|---:|---:|",
        f"| miss, batch (pipelined) | {local_batch * 1e3:.2f} | {cluster_batch * 1e3:.2f} | "
        f"{(cluster_batch - local_batch) * 1e3:.2f} |",
        f"| miss, one job at a time | {local_single * 1e3:.2f} | {cluster_single * 1e3:.2f} | "
        f"{(cluster_single - local_single) * 1e3:.2f} |",
        f"| hit | {local_hit * 1e3:.3f} | {cluster_hit * 1e3:.3f} | {(cluster_hit - local_hit) * 1e3:.3f} "
        f"(jobs sent: {sent}) |", "",
    ]
    section = "\n".join(lines)
    print(section)
    replace_section(args.out, SECTION, section)


if __name__ == "__main__":
    main()
