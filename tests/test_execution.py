"""The execute stage: pairs' programs built on both sides with the real nvcc (CUDA; HIP through its NVIDIA
back end), run in the program sandbox, compared. Without a GPU the programs that launch no kernel still run
(host ``cpu``), which shows every verdict; a GPU run of the bundled corpus is marked ``gpu``."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO, TOOL_ENV, copy_pipeline, metrics, run_in, run_report

from cass.execution.compare import first_difference, tolerant_equal
from hosts.gpu import local_gpu_host
from store import Store
from store.pack import read_pack

PROGRAMS = Path(__file__).parent / "fixtures" / "programs"
EXPECTED = {
    "matches.cu": "match",
    "struct_size.cu": "mismatch",
    "nearly_equal.cu": "match_tolerant",
    "clock_reader.cu": "match_masked",        # its timestamp differs between the CUDA original's own runs
    "varying_lines.cu": "nondeterministic",   # its runs print different numbers of lines: nothing to align
    "wants_a_file.cu": "needs_input",         # fails without its argument
    "prints_usage.cu": "needs_input",         # prints its usage and exits 0
    "prints_nothing.cu": "no_output",         # two empty outputs are not a match
    "never_ends.cu": "timeout",
    "kernels_only.cu": "no_main",
    "two_units/scale.cu": "no_main",          # a unit of two_units/main.cu, a pair of its own
    "two_units/main.cu": "match",             # built from both units (its Makefile), run with its `run:` argument
    "launches_a_kernel.cu": "cuda_failed",    # no GPU here: the CUDA runtime finds no device
}
RUNNABLE = len(EXPECTED) - 2   # every file but the two without main
RUNS_A_PAIR = 3 + 1   # execute.runs of the CUDA original, execute.hip_runs of the HIP translation


def test_tolerant_comparison_accepts_close_numbers_only():
    assert tolerant_equal(b"x = 1.000000001\nn 3\n", b"x = 1.000000002\nn 3\n", rtol=1e-6, atol=0)
    assert not tolerant_equal(b"x = 1.0\n", b"x = 1.1\n", rtol=1e-6, atol=0)
    assert not tolerant_equal(b"x = 1.0\n", b"y = 1.0\n", rtol=1, atol=1)      # the text around differs
    assert not tolerant_equal(b"1 2\n", b"1 2 3\n", rtol=1, atol=1)           # a number more
    assert tolerant_equal(b"nan inf\n", b"nan inf\n", rtol=0, atol=0)
    assert not tolerant_equal(b"x inf\n", b"x 5\n", rtol=1, atol=1)        # infinity is close to nothing else
    assert not tolerant_equal(b"x inf\n", b"x -inf\n", rtol=1, atol=1)
    assert not tolerant_equal(b"a#\n", b"a7\n", rtol=1, atol=1)             # a '#' is not a number


def test_first_difference_names_the_line_and_both_texts():
    assert first_difference(b"a\nb\nc\n", b"a\nB\nc\n") == "line 2: 'b' | 'B'"
    assert first_difference(b"a\n", b"a\nextra\n") == "line 2: only the actual output has 'extra'"


def store_text(root: Path, digest: str) -> str:
    return Store(root / ".cass" / "store").get_text(digest)


def set_params(root: Path, **execute) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["trees"] = [{"path": "corpus", "origin": "programs"}]
    params["execute"].update(execute)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def statuses(root: Path) -> dict[str, str]:
    table = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
    return dict(zip(table["path"], table["exec_status"], strict=True))


@pytest.fixture(scope="module")
def programs_project(tmp_path_factory) -> Path:
    """The programs above as the corpus of a fresh project, built up to the pair stage."""
    root = copy_pipeline(tmp_path_factory.mktemp("execute") / "project", with_bundled_corpus=False,
                         hip_nvidia_check=False)
    shutil.copytree(PROGRAMS, root / "corpus")
    set_params(root, host="none", limits={"wall_s": 3, "cpu_s": 3, "data_bytes": 4 << 30, "file_bytes": 1 << 20,
                                          "processes": 64})
    run_in(["dvc", "repro", "pair"], root)
    assert metrics(root, "pair")["kept"] == len(EXPECTED), metrics(root, "dedup")
    return root


@pytest.mark.slow
def test_a_batch_run_elsewhere_comes_back_as_the_runs_this_host_would_make(programs_project):
    root = programs_project
    batch = root / "batch"
    cass = [str(Path(sys.executable).parent / "cass")]
    run_in([*cass, "gpu-batch", "export", str(batch)], root)
    listed = json.loads((batch / "batch.json").read_text())
    assert len(listed["runs"]) == RUNS_A_PAIR * RUNNABLE   # the CUDA original 3 times, the HIP translation once
    two_units = [r for r in listed["runs"] if r["workdir"] == "two_units"]
    assert len(two_units) == RUNS_A_PAIR and {tuple(r["args"]) for r in two_units} == {("3",)}
    # the GPU host's side: this package alone, the batch folder (named relative to where it runs), no store and no
    # project; a host whose commands have a time limit stops at a deadline, then resumes where it stopped
    run_batch = [sys.executable, "-m", "hosts.gpu", "run-batch", "batch", "--cpu"]
    env = {**TOOL_ENV, "PYTHONPATH": str(REPO)}
    total = RUNS_A_PAIR * RUNNABLE
    stopped = subprocess.run([*run_batch, "--deadline", "1e-9"], cwd=root, env=env, capture_output=True, text=True,
                             check=True)
    assert f"{total} of {total} runs have no result" in stopped.stdout
    # killed (kill -9) midway, a call keeps each run it finished: the resumed call runs only the others
    killed = subprocess.Popen([*run_batch, "--resume"], cwd=root, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    while not list((batch / "results").glob("*.entry.json")) and killed.poll() is None:
        time.sleep(0.02)
    killed.kill()
    assert killed.wait() == -signal.SIGKILL
    kept = len(list((batch / "results").glob("*.entry.json")))
    resumed = subprocess.run([*run_batch, "--resume"], cwd=root, env=env, capture_output=True, text=True, check=True)
    assert 1 <= kept < total and f"resuming: {kept} of {total} runs done before" in resumed.stdout
    assert resumed.stdout.count("] ") == total - kept   # only the runs the killed call had not finished
    again = subprocess.run([*run_batch, "--resume"], cwd=root, env=env, capture_output=True, text=True, check=True)
    assert f"resuming: {total} of {total} runs done before" in again.stdout
    assert "] " not in again.stdout   # nothing ran again
    assert len(json.loads((batch / "results.json").read_text())["runs"]) == total
    run_in([*cass, "gpu-batch", "import", str(batch), "--name", "ci-cpu"], root)
    assert json.loads((root / "gpu_hosts" / "ci-cpu.json").read_text())["host"]["gpu"] == "none"

    set_params(root, host="recorded:ci-cpu")
    run_in(["dvc", "repro", "hub"], root)   # up to the card (the figures, publishing and packs are not looked at)
    assert statuses(root) == EXPECTED
    report = run_report(root, "execute")
    assert report["builds"]["misses"] == 0 and report["runs"] == {"hits": RUNS_A_PAIR * RUNNABLE, "not_recorded": 0}
    # no kernel launch was counted (a host without a GPU counts none): nothing is verified, whatever matched
    assert not (root / "data" / "hub" / "data" / "verified").exists()
    table = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
    assert not table["exec_verified"].any()
    masked = table.filter(pl.col("path") == "clock_reader.cu").row(0, named=True)
    assert masked["exec_masked_fields"] == 1 and masked["cuda_kernel_launches"] is None
    two = table.filter(pl.col("path") == "two_units/main.cu").row(0, named=True)
    assert two["exec_units"] == ["two_units/scale.cu"] and two["run_spec_source"] == "two_units/Makefile:run"
    execute = pl.read_parquet(root / "data" / "execute" / "manifest.parquet")
    runs = execute.filter(pl.col("path") == "two_units/main.cu")["cuda_runs"].item()
    assert store_text(root, runs[0]["stdout"]).startswith("n=1 sum=3\nn=2 sum=9\n")   # factor 3 from `run:`
    mismatch = table.filter(pl.col("path") == "struct_size.cu").row(0, named=True)
    assert mismatch["exec_detail"] == ("line 1: 'device properties take 1008 bytes' | "
                                       "'device properties take 792 bytes'")
    assert mismatch["cuda_exit_code"] == 0 and mismatch["hip_exit_code"] == 0
    assert "| `mismatch` | 1 |" in (root / "data" / "hub" / "README.md").read_text()

    # the same runs live on this machine: the batch's keys are this host's keys, nothing runs again
    set_params(root, host="cpu")
    run_in(["dvc", "repro", "export"], root)
    assert statuses(root) == EXPECTED
    report = run_report(root, "execute")
    assert report["runs"]["misses"] == 0 and report["runs"]["hits"] == RUNS_A_PAIR * RUNNABLE


@pytest.mark.slow
def test_one_changed_source_rebuilds_and_reruns_only_its_two_programs(programs_project):
    root = programs_project
    set_params(root, host="cpu")
    run_in(["dvc", "repro", "export"], root)
    source = root / "corpus" / "matches.cu"
    source.write_text(source.read_text().replace("0.25 * step", "0.125 * step"))
    run_in(["dvc", "repro", "export"], root)
    report = run_report(root, "execute")
    assert report["builds"]["misses"] == 2
    assert report["runs"]["misses"] == RUNS_A_PAIR and report["runs"]["hits"] == RUNS_A_PAIR * (RUNNABLE - 1)
    assert statuses(root)["matches.cu"] == "match"


@pytest.mark.slow
def test_packs_leave_the_binaries_out_and_a_collaborator_rebuilds_them_to_the_recorded_runs(programs_project):
    """The store packs carry the runs, not the binaries: a store made from the packs alone rebuilds every binary
    to the digest its runs are recorded under, and runs nothing."""
    root = programs_project
    set_params(root, host="cpu")
    run_in(["dvc", "repro", "pack_store"], root)
    execute = pl.read_parquet(root / "data" / "execute" / "manifest.parquet")
    binaries = set(execute["cuda_program"].drop_nulls()) | set(execute["hip_program"].drop_nulls())
    packed = {name for pack in (root / "data" / "store_packs").glob("*.pack") for _, name, _ in read_pack(pack)}
    assert len(binaries) >= RUNNABLE and not binaries & packed
    packs = metrics(root, "pack_store")
    assert packs["executables_left_out"] >= len(binaries)
    assert packs["executable_bytes_left_out"] > 100_000 * len(binaries)   # the CUDA runtime is linked in
    before = {p: p.read_bytes() for p in (root / "data" / "execute").glob("*.parquet")}

    shutil.move(root / ".cass" / "store", root / "producer-store")   # the collaborator: the packs, no store
    try:
        run_in(["dvc", "repro", "--force", "-s", "execute"], root)
        report = run_report(root, "execute")
        assert report["builds"]["misses"] == len(binaries) and report["builds"]["hits"] == 0   # every binary rebuilt
        assert report["runs"]["misses"] == 0 and report["runs"]["hits"] == RUNS_A_PAIR * RUNNABLE   # the same keys
        assert {p: p.read_bytes() for p in before} == before
    finally:
        shutil.rmtree(root / ".cass" / "store", ignore_errors=True)
        shutil.move(root / "producer-store", root / ".cass" / "store")


@pytest.mark.slow
def test_without_a_gpu_host_every_pair_is_passed_on_as_not_run(project):
    """The default (``execute.host: auto``) on this machine, which has no GPU: nothing is built or run."""
    if local_gpu_host() is not None:
        pytest.skip("this machine has a GPU")
    found = metrics(project, "execute")
    table = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    opencl = table.filter(pl.col("origin") == "opencl")   # device-only OpenCL C: there is no program to run
    assert opencl.height and set(opencl["exec_status"]) == {"no_main"}
    assert set(table.filter(pl.col("origin") != "opencl")["exec_status"]) == {"not_run:no_gpu_host"}
    assert found["exec_status"] == {"not_run:no_gpu_host": found["in"] - opencl.height, "no_main": opencl.height}
    assert found["dropped"] == 0
    assert found["host"] is None and "builds" not in run_report(project, "execute")
    assert not (project / "data" / "hub" / "data" / "verified").exists()   # no config while nothing is verified


@pytest.mark.gpu
@pytest.mark.slow
def test_the_bundled_pairs_are_verified_on_a_gpu(tmp_path, gpu):
    """On a GPU (this machine's, or a GPU host through batches: :mod:`harness.gpu_route`): every bundled pair with a
    ``main`` matches and is verified, its kernels counted on both sides and their numbers agreeing."""
    gpu.require()
    root = copy_pipeline(tmp_path / "project")
    run_in(["dvc", "repro", "pair"], root)
    gpu.project(root, "bundled")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["execute"]["host"] = gpu.setting()
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro", "export"], root)
    table = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
    bundled = table.filter(pl.col("origin") == "bundled")
    assert bundled.height >= 44 and set(bundled["exec_status"]) <= {"match", "match_masked", "match_tolerant"}, \
        bundled.filter(~pl.col("exec_status").str.starts_with("match")).select("path", "exec_status", "exec_detail")
    assert bundled["exec_verified"].all()
    assert (bundled["hip_kernel_launches"] == bundled["cuda_kernel_launches"]).all()


@pytest.mark.gpu
@pytest.mark.slow
def test_on_a_gpu_only_programs_that_launch_kernels_are_verified(request, gpu):
    """On a GPU: the program that launches a kernel is verified with its launches counted on both sides; the ones
    that compute on the CPU alone match but launched no kernel, so none is verified."""
    gpu.require()
    root = request.getfixturevalue("programs_project")   # built only where the route has a GPU
    gpu.project(root, "programs")
    set_params(root, host=gpu.setting())
    run_in(["dvc", "repro", "export"], root)
    table = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
    verified = table.filter(pl.col("exec_verified"))
    assert verified["path"].to_list() == ["launches_a_kernel.cu"]
    row = verified.row(0, named=True)
    assert row["cuda_kernel_launches"] > 0 and row["hip_kernel_launches"] == row["cuda_kernel_launches"]
    assert statuses(root)["matches.cu"] == "no_kernel"


def test_batches_merge_into_one_with_every_run_once(tmp_path):
    """Batches of several projects merged for one GPU host: every run once, each keeping its own limits."""
    import blake3

    def batch(name: str, runs: list[tuple[bytes, int]], wall_s: int) -> Path:
        folder = tmp_path / name
        (folder / "binaries").mkdir(parents=True)
        (folder / "inputs").mkdir()
        entries = []
        for binary, run in runs:
            digest = blake3.blake3(binary).hexdigest()
            (folder / "binaries" / digest).write_bytes(binary)
            entries.append({"binary": digest, "run": run, "args": [], "workdir": "", "inputs": []})
        (folder / "batch.json").write_text(json.dumps({"limits": {"wall_s": wall_s}, "runs": entries}))
        return folder

    first = batch("a", [(b"one", 1), (b"one", 2), (b"two", 1)], 60)
    second = batch("b", [(b"two", 1), (b"three", 1)], 5)
    merged = tmp_path / "merged"
    proc = subprocess.run([sys.executable, "-m", "cass.cli", "gpu-batch", "merge", str(merged), str(first),
                           str(second)], cwd=REPO, env=TOOL_ENV, capture_output=True, text=True, check=True)
    assert "5 runs of 2 batches" in proc.stdout
    runs = json.loads((merged / "batch.json").read_text())["runs"]
    assert len(runs) == 5 and len(list((merged / "binaries").iterdir())) == 3
    two = blake3.blake3(b"two").hexdigest()
    assert sorted(r["limits"]["wall_s"] for r in runs if r["binary"] == two) == [5, 60]   # one run per batch's limits
