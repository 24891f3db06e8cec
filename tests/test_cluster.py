"""Vendor hosts on Dask: a real scheduler, an NVIDIA worker and an AMD worker on 127.0.0.1.

The NVIDIA host has no AMD toolchain and the AMD host no CUDA; the AMD host's tools run inside
the Debian root of params.yaml's ``amd.toolchain`` (the worker enters it per call). See tests/harness/hosts.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

import pytest
from harness.hosts import NO_AMD, VendorHosts
from harness.project import (
    REPO,
    TOOL_ENV,
    copy_bundled_build,
    first_hex_digit_in,
    parquet_hashes,
    run_in,
    run_report,
    seed_actions,
)

from cass.benchmark.evaluate import amd_compiles
from cass.engine.actions import ActionRunner, plan
from cass.engine.placement import Placement, cluster_at
from cass.execution.hosts import resolve_host
from cass.execution.programs import ProgramSource, build_program_targets, limits_for
from cass.pipeline.context import load_params
from hosts.cluster import Cluster, DaskExecutor, NoHostError, ToolchainMismatchError
from hosts.gpu import cpu_host, local_gpu_host
from store import Store, tracking
from toolchains import LocalExecutor, load_hip_nvidia, load_toolchains

SAXPY = b"""__global__ void saxpy(int n, float a, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""

SLOW = b"""#include <cub/cub.cuh>
template <typename T> void sort(T *d, int n) {
    void *tmp = nullptr; size_t bytes = 0;
    cub::DeviceRadixSort::SortKeys(tmp, bytes, d, d, n);
    cub::DeviceRadixSort::SortPairs(tmp, bytes, d, d, d, d, n);
}
template void sort<int>(int *, int);
template void sort<float>(float *, int);
template void sort<double>(double *, int);
template void sort<long long>(long long *, int);
template void sort<unsigned>(unsigned *, int);
template void sort<short>(short *, int);
template void sort<unsigned long long>(unsigned long long *, int);
template void sort<unsigned short>(unsigned short *, int);
"""
"""A real compile that runs for several seconds (CUB's radix sort for eight key types)."""


AMD_SUITE = load_params(REPO / "params.yaml")["amd"]["toolchain"]


def amd_root_problem() -> str | None:
    amd = load_toolchains(AMD_SUITE)["amd"]
    return next((f"{t}: {p}" for t in amd.tools() if (p := amd.status(t).problem)), None)


@pytest.fixture(autouse=True, scope="module")
def amd_root() -> None:
    """The AMD host needs the AMD root: without it every test here fails, saying how to build it."""
    if (problem := amd_root_problem()) is not None:
        pytest.fail(f"the AMD host needs the {AMD_SUITE} root (bash scripts/setup.sh): {problem}")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    cluster = VendorHosts(tmp_path_factory.mktemp("hosts"))
    try:
        cluster.nvidia(hip_nvidia=True)
        cluster.amd()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def cluster(hosts):
    c = Cluster(hosts.address)
    yield c
    c.close()


@pytest.fixture
def nvidia_only(tmp_path):
    """A cluster of its own with one NVIDIA host (for tests that stop it or need AMD absent)."""
    hosts = VendorHosts(tmp_path / "hosts")
    try:
        hosts.nvidia()
        cluster = Cluster(hosts.address)
        yield hosts, cluster
        cluster.close()
    finally:
        hosts.close()


def put_sample(store: Store, name: str, text: bytes) -> dict[str, str]:
    return {name: store.put(text)}


def test_cass_toolchains_lists_every_host_with_resources_and_fingerprints(hosts, toolchains):
    proc = subprocess.run([sys.executable, "-m", "cass.cli", "toolchains", "--cluster", hosts.address],
                          capture_output=True, text=True, env=TOOL_ENV, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert re.search(r"nvidia-1 .* resources hip-nvidia=2, nvidia=2\n", out)
    assert re.search(r"amd-1 .* resources amd=2, hipify=2\n", out)
    for vendor, tc in {**toolchains, "hip-nvidia": load_hip_nvidia()}.items():   # the same installations: the same
        for tool in tc.tools():                                                   # fingerprints
            assert re.search(rf"\n    {vendor}\s+{re.escape(tool)}\s+{tc.fingerprint(tool)}\n", out), tool
        assert f"\n{vendor} (as the hosts have it):\n" in out


def test_jobs_run_only_on_their_vendors_host_and_hits_never_leave_the_driver(cluster, store):
    nvidia, amd = cluster.toolchain("nvidia"), cluster.toolchain("amd")
    inputs = put_sample(store, "saxpy.cu", SAXPY)
    actions = [plan(nvidia, nvidia.cubin_step("saxpy.cu", "sm_90", {"common": [], "host": []}), inputs),
               plan(amd, amd.hipify_step("saxpy.cu"), inputs)]
    runner = ActionRunner(store, cluster.executor(host_wait_s=30), timeout_s=300)
    outcomes = runner.run(actions, desc="cluster")
    assert all(o.ok for o in outcomes.values())
    assert runner.counts.by_host == {"nvidia-1": 1, "amd-1": 1}
    assert b"saxpy" in store.get(outcomes[actions[1].key].record.outputs["hip"])
    again = ActionRunner(store, cluster.executor(host_wait_s=30), timeout_s=300)
    again.run(actions, desc="cluster")
    assert again.counts.as_dict()["jobs_sent"] == 0 and again.counts.hits == 2


SAXPY_PROGRAM = SAXPY + b"int main() { return 0; }\n"
HIP_SAXPY_PROGRAM = b"#include <hip/hip_runtime.h>\n" + SAXPY_PROGRAM


@pytest.fixture
def placement_on(hosts):
    """params.yaml with the hosts' scheduler as ``executor.scheduler``; the placement's connection to it (one per
    process, :func:`cass.engine.placement.cluster_at`) is closed after the test, before the hosts stop."""
    params = load_params(REPO / "params.yaml")
    params["executor"] = {**params["executor"], "scheduler": hosts.address, "host_wait_s": 30}
    yield params
    cluster_at(hosts.address).close()
    cluster_at.cache_clear()


def test_the_benchmarks_compiles_and_the_programs_builds_go_to_the_hosts_serving_them(hosts, placement_on, store,
                                                                                      monkeypatch):
    """With a scheduler, the evaluator's hipcc compiles run on the AMD host, a program's CUDA build on the NVIDIA host,
    and the HIP program, built through HIP's NVIDIA back end, on the host serving ``hip-nvidia`` (here the NVIDIA
    one): none on this machine, which plans that build from the host's report (it has no HIP headers of its own)."""
    monkeypatch.setenv("CASS_HIP_HEADERS", "/nonexistent/hip")
    params = placement_on
    placement = Placement.of(params)
    def new_on(host: str, tool: str, before: set[str]) -> set[str]:
        return finished_actions(hosts.log(host), tool) - before

    amd_before, nvidia_before = finished_actions(hosts.log("amd-1"), "hipcc"), finished_actions(hosts.log("nvidia-1"),
                                                                                                "nvcc")
    with tracking() as used:
        compiled, counts = amd_compiles(store, params, {"saxpy": ("saxpy.hip", HIP_SAXPY_PROGRAM.decode())})
    assert compiled["saxpy"].binary and counts["misses"] == counts["jobs_sent"] == 2
    assert new_on("amd-1", "hipcc", amd_before) == used and len(used) == 2   # host and device: on the AMD host
    programs = {side: ProgramSource(side, [name], ["."], {name: store.put(text)})
                for side, name, text in (("cuda", "saxpy.cu", SAXPY_PROGRAM), ("hip", "saxpy.hip", HIP_SAXPY_PROGRAM))}
    with tracking() as built_keys:
        builds, counts = build_program_targets(store, params["execute"], programs, placement)
    assert builds["cuda"].binary and builds["hip"].binary and counts["misses"] == 2 and len(built_keys) == 2
    assert new_on("nvidia-1", "nvcc", nvidia_before) == built_keys   # the CUDA program's build and the HIP one's


def test_a_host_refuses_a_job_keyed_for_another_compiler(cluster, store):
    nvidia = cluster.toolchain("nvidia")
    other = dataclasses.replace(nvidia.reported, tools={
        **nvidia.reported.tools, "nvcc": {**nvidia.reported.tools["nvcc"], "fingerprint": "0" * 64}})
    stale = type(nvidia).from_report(other)
    action = plan(stale, stale.cubin_step("saxpy.cu", "sm_90", {"common": [], "host": []}),
                  put_sample(store, "saxpy.cu", SAXPY))
    runner = ActionRunner(store, cluster.executor(host_wait_s=30), timeout_s=300)
    with pytest.raises(ToolchainMismatchError, match=r"host nvidia-1 .* refuses nvcc job .* fingerprint"):
        runner.run([action], desc="stale")
    assert store.lookup(action.key) is None


def test_a_job_no_host_can_run_fails_fast_and_names_the_fix(nvidia_only, store, toolchains):
    _, cluster = nvidia_only
    with pytest.raises(NoHostError, match=r"resource 'amd'.*connected: nvidia-1 \(nvidia=2\).*dask worker"):
        cluster.toolchain("amd")
    amd = toolchains["amd"]
    action = plan(amd, amd.hipify_step("saxpy.cu"), put_sample(store, "saxpy.cu", SAXPY))
    with pytest.raises(NoHostError, match=r"1 job\(s\) \(hipify-perl\) need .*resource 'hipify'"):
        ActionRunner(store, cluster.executor(host_wait_s=600), timeout_s=300).run([action], desc="no host")


def test_without_a_host_serving_hip_nvidia_it_builds_here(nvidia_only):
    """A cluster whose hosts do not serve ``hip-nvidia`` builds HIP on NVIDIA on this machine, as before that resource
    existed; the CUDA side still goes to the NVIDIA host."""
    hosts, _ = nvidia_only
    placement = Placement(hosts.address, None, 30.0)
    try:
        hip_nvidia, nvidia = placement.toolchain("hip-nvidia"), placement.toolchain("nvidia")
        assert not placement.hosts_serve("hip-nvidia") and placement.hosts_serve("nvidia")
        assert isinstance(placement.tool_executor({"hip-nvidia": hip_nvidia}), LocalExecutor)
        assert isinstance(placement.tool_executor({"nvidia": nvidia}), DaskExecutor)
        with pytest.raises(ValueError, match="one executor cannot run both"):
            placement.tool_executor({"hip-nvidia": hip_nvidia, "nvidia": nvidia})
    finally:
        cluster_at(hosts.address).close()
        cluster_at.cache_clear()


def test_a_host_without_the_toolchain_it_advertises_does_not_start(hosts):
    proc = hosts.start_worker("false-amd", {"amd": 1}, NO_AMD, wait=False)
    assert proc.wait(timeout=120) != 0
    assert "host false-amd cannot start: amd tool hipcc: not found" in hosts.log("false-amd")
    assert "scripts/setup.sh" in hosts.log("false-amd")
    proc = hosts.start_worker("false-hip", {"hip-nvidia": 1}, {"CASS_HIP_HEADERS": "/nonexistent/hip"}, wait=False)
    assert proc.wait(timeout=120) != 0
    assert "host false-hip cannot start: hip-nvidia tool nvcc: no HIP headers for NVIDIA at /nonexistent/hip" \
        in hosts.log("false-hip")


def test_a_host_advertising_a_gpu_it_lacks_does_not_start_and_none_is_offered(hosts, cluster, placement_on):
    """A false GPU host never joins, so the placement offers no GPU host and `auto` finds none (this machine has no
    GPU either); program runs go to the scheduler's hosts under a scheduler, else to this machine's sandbox."""
    if local_gpu_host() is not None:
        pytest.skip("this machine has a GPU")
    proc = hosts.start_worker("false-gpu", {"gpu": 1}, NO_AMD, wait=False)
    assert proc.wait(timeout=120) != 0
    assert "host false-gpu cannot start: worker false-gpu advertises 'gpu' but nvidia-smi finds no NVIDIA GPU" in \
        hosts.log("false-gpu")
    assert cluster.gpu_host() is None   # the execute stage's `auto` then looks for a GPU on the driver's machine
    placement = Placement.of(placement_on)
    assert placement.gpu_host() is None and resolve_host("auto", placement) is None
    assert resolve_host("cpu", placement).placement is None   # this machine's host: run here, not on the cluster
    limits = limits_for(placement_on["execute"])
    assert isinstance(placement.program_executor(cpu_host(), limits, 1), DaskExecutor)
    assert isinstance(Placement.local().program_executor(cpu_host(), limits, 1), LocalExecutor)


def running(marker: str) -> list[int]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False).stdout
    return [int(p) for p in out.split()]


def test_stopping_a_run_kills_the_compiler_on_its_host(cluster, store):
    nvidia = cluster.toolchain("nvidia")
    marker = f"slow_{uuid.uuid4().hex[:12]}.cu"
    actions = [plan(nvidia, nvidia.cubin_step(name, "sm_90", {"common": [], "host": []}),
                    put_sample(store, name, text)) for name, text in (("saxpy.cu", SAXPY), (marker, SLOW))]
    runner = ActionRunner(store, cluster.executor(host_wait_s=30), timeout_s=300)
    jobs = [runner.job(a) for a in actions]
    results = cluster.executor(host_wait_s=30).run(jobs)
    first, result = next(results)
    assert first == 0 and result.ok and result.host == "nvidia-1"
    deadline = time.monotonic() + 60
    while not running(marker):
        assert time.monotonic() < deadline, "the slow compile never started"
        time.sleep(0.1)
    results.close()   # the driver stops (an error, Ctrl-C): its jobs are cancelled on the hosts
    deadline = time.monotonic() + 15
    while running(marker):
        assert time.monotonic() < deadline, f"nvcc still runs on the host: {running(marker)}"
        time.sleep(0.1)


def test_a_host_being_stopped_kills_its_compiler_and_the_job_is_transient_not_cached(nvidia_only, store):
    hosts, cluster = nvidia_only
    nvidia = cluster.toolchain("nvidia")
    marker = f"slow_{uuid.uuid4().hex[:12]}.cu"
    action = plan(nvidia, nvidia.cubin_step(marker, "sm_90", {"common": [], "host": []}),
                  put_sample(store, marker, SLOW))
    runner = ActionRunner(store, cluster.executor(host_wait_s=2), timeout_s=300)
    outcomes = {}
    driver = threading.Thread(target=lambda: outcomes.update(runner.run([action], desc="slow")))
    driver.start()
    deadline = time.monotonic() + 60
    while not running(marker):
        assert time.monotonic() < deadline, "the slow compile never started"
        time.sleep(0.05)
    os.killpg(hosts.procs["nvidia-1"].pid, signal.SIGTERM)   # what `systemctl stop` or Ctrl-C does
    deadline = time.monotonic() + 3   # the compile alone runs several seconds longer
    while running(marker):
        assert time.monotonic() < deadline, f"nvcc outlived its host: {running(marker)}"
        time.sleep(0.05)
    driver.join(timeout=60)
    assert "no host with the resource 'nvidia' for 2 s" in outcomes[action.key].transient
    assert runner.counts.transient == 1 and store.lookup(action.key) is None   # never cached


# ----------------------------------------------------------------------------- the pipeline


def finished_actions(log: str, tool: str) -> set[str]:
    return set(re.findall(rf"finished {re.escape(tool)} action=(\w+)", log))


def started_actions(log: str, tool: str) -> list[str]:
    return re.findall(rf"started {re.escape(tool)} action=(\w+)", log)


SEEDED_STAGES = ("branch_parity", "tokens")
"""Stages whose every action the cluster build finds in its store: their tool runs are not the test's subject."""

NVIDIA_SEEDED = first_hex_digit_in("123456789abcdef")
"""15 in 16 NVIDIA compiles seeded: the rest still runs on the NVIDIA host."""
AMD_SEEDED = first_hex_digit_in("0123456789ab")
"""3 in 4 AMD compiles seeded: the rest (some 30 of the bundled build's) run on the AMD host, which dies among
them."""


@pytest.mark.slow
def test_the_cluster_build_survives_a_dead_amd_host_and_matches_the_local_build(project, tmp_path):
    hosts = VendorHosts(tmp_path / "hosts")
    try:
        hosts.nvidia()
        hosts.amd()
        hosts.stage()   # the stages' own work goes to it (it sees this machine's files, as a mounted project)
        build = copy_bundled_build(tmp_path / "project")
        # the stages after the compilers whose tool runs are not this test's subject (the preprocessor runs, the token
        # counts) find the local build's records, as from its packs; so do most NVIDIA compiles and 3 in 4 AMD ones
        # (the rest still run, on their vendor's host)
        assert seed_actions(build, project, SEEDED_STAGES)
        assert seed_actions(build, project, ["compile_nvidia"], keep=NVIDIA_SEEDED)
        amd_seeded = seed_actions(build, project, ["compile_amd"], keep=AMD_SEEDED)
        env = {**TOOL_ENV, "CASS_SCHEDULER": hosts.address}
        log = (tmp_path / "repro.log").open("w")
        repro = subprocess.Popen(["dvc", "repro", "export"], cwd=build, env=env, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 600
        while len(finished_actions(hosts.log("amd-1"), "hipcc")) < 8:   # the AMD compile is under way
            assert repro.poll() is None, (tmp_path / "repro.log").read_text()
            assert time.monotonic() < deadline, "compile_amd never started"
            time.sleep(0.05)
        hosts.kill("amd-1")
        store = Store(build / ".cass" / "store")
        delivered = {k for k in finished_actions(hosts.log("amd-1"), "hipcc") if store.lookup(k) is not None}
        hosts.amd()   # the host comes back (a new process, a new address)
        assert repro.wait(timeout=900) == 0, (tmp_path / "repro.log").read_text()[-5000:]

        local_export = parquet_hashes(project, "data/export")
        assert parquet_hashes(build, "data/export") == local_export   # byte-identical to the local build
        for stage in ("ingest", "hipify", "compile_nvidia", "repair", "compile_amd", "branch_parity", "execute",
                      "normalize", "kernels", "tokens", "export"):   # their own work ran on the stage host
            tally = json.loads((build / "metrics" / "run" / "stage_work" / f"{stage}.json").read_text())
            assert tally["where"].startswith("stage hosts") and tally["items"] > 0, (stage, tally)
            assert {w.rsplit("-", 1)[0] for w in tally["by_worker"]} == {"stage-1"}, (stage, tally)
        rerun = started_actions(hosts.log("amd-1", 2), "hipcc")
        assert rerun, "the AMD host died with no compile left: nothing was rescheduled"
        assert delivered and not delivered & set(rerun), "a finished job was computed again"
        for stage, host in (("hipify", "amd-1"), ("compile_nvidia", "nvidia-1"), ("compile_amd", "amd-1"),
                            ("normalize", "amd-1")):
            actions = run_report(build, stage)["actions"]
            assert set(actions["jobs_by_host"]) == {host}, (stage, actions)
            assert actions["transient_failures"] == 0 and actions["jobs_sent"] == actions["misses"] > 0
        # every AMD compile the store did not hold ran on the AMD host, those it finished before dying once
        assert run_report(build, "compile_amd")["actions"]["jobs_by_host"]["amd-1"] == \
            run_report(project, "compile_amd")["actions"]["misses"] - len(amd_seeded)

        forced = ["hipify", "compile_nvidia", "compile_amd", "normalize"]
        run_in_env = subprocess.run(["dvc", "repro", "--force", "--single-item", *forced], cwd=build, env=env,
                                    capture_output=True, text=True, check=False)
        assert run_in_env.returncode == 0, run_in_env.stdout + run_in_env.stderr
        for stage in forced:   # every action is a store hit: nothing is sent to any host
            actions = run_report(build, stage)["actions"]
            assert actions["jobs_sent"] == 0 and actions["hits"] > 0 and actions["jobs_by_host"] == {}, stage
        assert parquet_hashes(build, "data/export") == local_export
        run_in(["dvc", "status"], build)
    finally:
        hosts.close()
