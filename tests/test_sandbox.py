"""The tool sandbox with the real compilers: a source that includes a host file by absolute or escaping
path, another job's scratch file or ``/proc/self/environ`` gets "file not found", and nothing of the
planted secret reaches the job's outputs or stderr; honest code builds to the same bytes."""

from __future__ import annotations

import copy
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from harness.project import REPO

from cass.pipeline.context import load_params
from toolchains import Job, Step, Toolchain
from toolchains.executor import JobResult, run_in_scratch
from toolchains.sandbox import Sandbox, inner_path

PARAMS = load_params(REPO / "params.yaml")
HONEST = REPO / "corpus" / "graphics_rendering" / "mandelbrot_tiles.cu"   # includes no local header

pytestmark = pytest.mark.usefixtures("bubblewrap")


@pytest.fixture(scope="module")
def secrets(toolchains) -> dict[str, Path]:
    """The same token in a host file outside /tmp, in $HOME and in a directory beside the jobs'
    scratch directories (another job's), for each vendor's scratch location."""
    token = f"SECRET_TOKEN_{uuid.uuid4().hex}"
    places = {"host": Path("/var/tmp") / f"cass-secret-{uuid.uuid4().hex}" / "secret.txt",
              "home": Path.home() / f".cass-secret-{uuid.uuid4().hex}.txt"}
    for vendor, tc in toolchains.items():
        places[f"other_job_{vendor}"] = tc.launcher.scratch_parent() / f"job-planted-{uuid.uuid4().hex}" / "secret.txt"
    for path in places.values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"int leaked = {token};\n")
    yield {"token": token, **places}
    for path in places.values():
        path.unlink()
        if path.parent.name.startswith(("cass-secret-", "job-planted-")):
            path.parent.rmdir()


def run_step(tc: Toolchain, step: Step, source: str) -> JobResult:
    """``step`` of ``tc`` on ``source`` (as main.cu), as the pipeline runs it."""
    job = Job(tc.vendor, step.tool, step.args, {"main.cu": source.encode()}, step.outputs, timeout_s=300,
              stdout_as=step.stdout_as)
    return run_in_scratch(tc.launcher, job)


def compile_source(tc: Toolchain, source: str) -> JobResult:
    """One host compile of ``source`` with ``tc``."""
    return run_step(tc, tc.targets("main.cu", PARAMS[tc.vendor]["archs"], PARAMS[tc.vendor]["flags"])[0].steps[0],
                    source)


def leaks(result: JobResult, token: str) -> bool:
    return token.encode() in result.stderr or any(token.encode() in data for data in result.outputs.values())


def seen_by(tc: Toolchain, path: Path) -> str:
    """``path`` as the toolchain's tools name it: inside the OS root for a chroot toolchain."""
    root = getattr(tc.launcher, "root", None)
    return inner_path(root, path) if root is not None and path.is_relative_to(root) else str(path)


INCLUDES = {
    "absolute": lambda s, tc: f'#include "{s["host"]}"',
    "escaping": lambda s, tc: f'#include "{"../" * 12}{str(s["host"]).lstrip("/")}"',
    "home": lambda s, tc: f'#include "{s["home"]}"',
    "other_job": lambda s, tc: f'#include "{seen_by(tc, s[f"other_job_{tc.vendor}"])}"',
}


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
@pytest.mark.parametrize("kind", sorted(INCLUDES))
def test_an_include_of_a_host_file_is_not_found_and_nothing_leaks(toolchains, secrets, vendor, kind):
    tc = toolchains[vendor]
    result = compile_source(tc, INCLUDES[kind](secrets, tc) + "\n__global__ void k() {}\nint main() {}\n")
    assert result.exit_code != 0 and result.transient is None and result.sandbox == "bwrap"
    assert b"No such file or directory" in result.stderr or b"file not found" in result.stderr
    assert not leaks(result, secrets["token"])


def test_proc_self_environ_shows_only_the_tools_clean_environment(toolchains, monkeypatch):
    """Not the sandbox's doing but the launcher's: a tool's environment is an allowlist, so a secret in
    the pipeline's environment is not in ``/proc/self/environ`` of the tool either."""
    token = f"SECRET_TOKEN_{uuid.uuid4().hex}"
    monkeypatch.setenv("CASS_PLANTED_SECRET", token)
    result = compile_source(toolchains["nvidia"], "#include </proc/self/environ>\nint main() {}\n")
    assert result.transient is None and not leaks(result, token)


def weakened(tc: Toolchain) -> Toolchain:
    """``tc`` with its tools in the rlimits mode (no bubblewrap)."""
    weak = copy.copy(tc)
    weak.launcher = copy.copy(tc.launcher)
    weak.launcher.sandbox = Sandbox.weak()
    return weak


@pytest.mark.parametrize(("vendor", "kind"), [("nvidia", "absolute"), ("nvidia", "home"), ("amd", "other_job")])
def test_without_the_sandbox_the_same_include_leaks(toolchains, secrets, vendor, kind):
    """The control: in the rlimits mode nvcc reads the host's files and hipcc (in the chroot) another
    job's scratch file, so the tests above would see a leak if the sandbox let one through."""
    tc = weakened(toolchains[vendor])
    result = compile_source(tc, INCLUDES[kind](secrets, tc) + "\nint main() {}\n")
    assert leaks(result, secrets["token"])


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_honest_code_translates_and_builds_to_the_same_bytes_in_and_out_of_the_sandbox(toolchains, vendor):
    tc = toolchains[vendor]
    weak = weakened(tc)
    source = HONEST.read_text()
    if vendor == "amd":
        hipified, plain_hipified = (run_step(t, tc.hipify_step("main.cu"), source) for t in (tc, weak))
        assert hipified.outputs == plain_hipified.outputs and hipified.exit_code == 0
        source = hipified.outputs["hip"].decode()
    sandboxed, plain = compile_source(tc, source), compile_source(weak, source)
    assert sandboxed.exit_code == plain.exit_code == 0, sandboxed.stderr.decode(errors="replace")[-2000:]
    assert sandboxed.outputs == plain.outputs and sandboxed.outputs


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_a_tool_sees_no_network_no_home_no_project_and_writes_only_its_scratch(toolchains, vendor):
    script = (f"ls -d /root/.cache {REPO / 'params.yaml'} 2>&1; grep -c : /proc/net/dev; "
              "touch /usr/cass-planted 2>/dev/null || echo usr-readonly; touch here && echo scratch-writable")
    job = Job(vendor, "sh", ("-c", script), {}, ("log",), timeout_s=60, stdout_as="log")
    result = run_in_scratch(toolchains[vendor].launcher, job)
    log = result.outputs["log"].decode().splitlines()
    assert result.exit_code == 0
    assert all("No such file or directory" in line for line in log[:2])   # no home, no project
    assert log[2:] == ["1", "usr-readonly", "scratch-writable"]          # loopback only; /usr read-only


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_a_sandboxed_job_past_its_timeout_dies_with_everything_it_started(toolchains, vendor):
    marker = str(6000 + uuid.uuid4().int % 1000)
    # the first sleep leaves the process group (setsid): only the PID namespace's end can take it down
    job = Job(vendor, "sh", ("-c", f"setsid sleep {marker} & sleep {marker}; wait"), {}, (), timeout_s=1)
    result = run_in_scratch(toolchains[vendor].launcher, job)
    assert result.transient == "timeout after 1 s"
    for _ in range(50):
        alive = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
        if not alive:
            break
        time.sleep(0.1)
    assert not alive, f"sleep {marker} survived its job's timeout: pids {alive}"


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_a_sandboxed_tools_cpu_seconds_reach_its_result(toolchains, vendor):
    """The run reports' tool CPU seconds come from wait4: the sandbox must not hide the tool's."""
    job = Job(vendor, "sh", ("-c", "i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done"), {}, (), timeout_s=60)
    result = run_in_scratch(toolchains[vendor].launcher, job)
    # the loop costs some 0.7 CPU-s here; bubblewrap's own are some 0.005 (its share of the wall time depends on the
    # load: another test worker sharing the cores took it below half)
    assert result.ok and result.cpu_s > 0.1


def test_two_jobs_compile_a_file_with_internal_symbols_to_the_same_bytes(toolchains):
    """nvcc names a translation unit's internal symbols after its source's absolute path (``_INTERNAL_<hash>``): each
    job's scratch directory is seen at one path, so every job gives the same host assembly; out of the sandbox, the
    scratch directories' own paths give two."""
    source = "namespace { __device__ int hits; }\n__global__ void count() { atomicAdd(&hits, 1); }\nint main() {}\n"
    modes = {"bwrap": toolchains["nvidia"], "rlimits": weakened(toolchains["nvidia"])}
    runs = {mode: [compile_source(tc, source) for _ in range(2)] for mode, tc in modes.items()}
    assert all(r.exit_code == 0 for pair in runs.values() for r in pair)
    assert b"_INTERNAL_" in runs["bwrap"][0].outputs["host.s"]
    assert runs["bwrap"][0].outputs == runs["bwrap"][1].outputs
    assert runs["rlimits"][0].outputs["host.s"] != runs["rlimits"][1].outputs["host.s"]


def test_a_folder_mounted_into_an_os_root_is_read_only_and_needs_bubblewrap(toolchains, tmp_path):
    """A chroot toolchain's mount (the AMD fallback's build-root headers): the tool reads the folder at its inner
    path, cannot write there, and sees nothing of its parent; the rlimits mode, which cannot mount, refuses it."""
    from toolchains.launchers import ChrootLauncher

    shared = tmp_path / "headers"
    shared.mkdir()
    (shared / "dep.h").write_text("#define FROM_THE_BUILD_ROOT 1\n")
    (tmp_path / "beside.h").write_text("beside\n")
    launcher = ChrootLauncher(toolchains["amd"].launcher.root, mounts={"/tmp/cass-mounted": shared})
    script = ("cat /tmp/cass-mounted/dep.h; echo x > /tmp/cass-mounted/new.h || echo refused; "
              f"ls /tmp/cass-mounted; ls -A /tmp; test -e {tmp_path / 'beside.h'} || echo unseen")
    proc = subprocess.run(launcher.argv("sh", ("-c", script), Path("/")), env=launcher.env(), capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.stdout.split("\n") == ["#define FROM_THE_BUILD_ROOT 1", "refused", "dep.h", "cass-mounted", "unseen",
                                      ""]
    assert sorted(p.name for p in shared.iterdir()) == ["dep.h"]
    launcher.sandbox = Sandbox.weak()
    with pytest.raises(ValueError, match="need the bwrap sandbox"):
        launcher.argv("sh", ("-c", "true"), Path("/"))


def test_a_file_bound_into_a_host_tools_view_is_read_only_at_each_of_its_paths(bubblewrap, tmp_path):
    """A host toolchain's binds (HIP's NVIDIA platform with the build root's headers): the tool reads one file of
    this machine at each inner path it is bound to and cannot write there; the binds enter the path view (so the
    fingerprint), which without them is the mounts' alone, as before binds existed; the rlimits mode refuses them."""
    from toolchains.launchers import HostLauncher

    header = tmp_path / "dep.h"
    header.write_text("#define FROM_THE_BUILD_ROOT 1\n")
    (tmp_path / "mounted").mkdir()
    (tmp_path / "scratch").mkdir()
    inner = "/tmp/cass-build-root/usr/include"
    launcher = HostLauncher([Path("/usr/bin")], mounts={tmp_path / "mounted": "/opt/cass-mounted"},
                            binds={f"{inner}/dep.h": header, f"{inner}/alias.h": header})
    script = f"cat {inner}/dep.h {inner}/alias.h; echo x > {inner}/dep.h || echo refused"
    proc = subprocess.run(launcher.argv("sh", ("-c", script), tmp_path / "scratch"), env=launcher.env(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.stdout.split("\n") == ["#define FROM_THE_BUILD_ROOT 1"] * 2 + ["refused", ""], proc.stderr
    assert header.read_text() == "#define FROM_THE_BUILD_ROOT 1\n"
    assert launcher.path_view() == f"mounts=['/opt/cass-mounted'] binds=['{inner}/alias.h', '{inner}/dep.h']"
    assert HostLauncher([Path("/usr/bin")], mounts={tmp_path / "mounted": "/opt/cass-mounted"}).path_view() == \
        "mounts=['/opt/cass-mounted']"
    launcher.sandbox = Sandbox.weak()
    with pytest.raises(ValueError, match="need the bwrap sandbox"):
        launcher.argv("sh", ("-c", "true"), tmp_path / "scratch")
