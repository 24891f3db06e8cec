"""Untrusted programs in the sandbox (host-only programs built with the real g++; no GPU needed): each
hostile behaviour gets its verdict, nothing the program tried to read reaches its output, and the
host is left as it was."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import blake3
import pytest
from harness.project import REPO

from cass.engine.placement import Placement
from cass.execution.programs import ProgramRun, ProgramSource, Run, build_program_targets, run_programs
from cass.pipeline.context import load_params
from hosts.gpu import (
    COUNTER_DIR,
    CounterProbeError,
    RunHost,
    cpu_host,
    probe_counter,
    run_batch,
)
from toolchains.launches import CUPTI, LIBRARY, LaunchCounter
from toolchains.sandbox import Sandbox
from toolchains.sandboxed_runs import Invocation, ProgramLauncher, ProgramLimits, SandboxedRun, program_job, run_program

pytestmark = pytest.mark.usefixtures("bubblewrap")

PRELUDE = "#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <unistd.h>\n"


def build(tmp_path: Path, source: str) -> bytes:
    src, binary = tmp_path / f"{uuid.uuid4().hex}.cpp", tmp_path / "a.out"
    src.write_text(PRELUDE + source)
    subprocess.run(["g++", "-O1", "-o", str(binary), str(src)], check=True)
    return binary.read_bytes()


LIMITS = {"wall_s": 10, "cpu_s": 10, "data_bytes": 2 << 30, "file_bytes": 16 << 20, "processes": 32}


@pytest.fixture
def runs_dir():
    """Where runs get their scratch directories: world-readable parents, so that outside the sandbox a
    program (as its unprivileged user) could read another run's files there."""
    path = Path("/var/tmp") / f"cass-test-runs-{uuid.uuid4().hex}"
    path.mkdir(mode=0o755)
    yield path
    shutil.rmtree(path)


def launcher(runs: Path, sandbox: Sandbox | None = None, **limits) -> ProgramLauncher:
    return ProgramLauncher(ProgramLimits(**{**LIMITS, **limits}), sandbox=sandbox, scratch=runs)


def surviving_programs() -> list[str]:
    """Processes named ``program`` still alive a few seconds after a run ended (the kill is asynchronous)."""
    for _ in range(50):
        alive = subprocess.run(["pgrep", "-x", "program"], capture_output=True, text=True).stdout.split()
        if not alive:
            break
        time.sleep(0.1)
    return alive


def test_an_honest_program_prints_and_exits(tmp_path, runs_dir):
    run = run_program(launcher(runs_dir), build(tmp_path, 'int main(int c, char **v) { printf("hi %s\\n", v[1]); '
                                                          "return 7; }"), ("there",))
    assert (run.verdict, run.exit_code, run.stdout, run.sandbox) == ("exited", 7, b"hi there\n", "bwrap")


READER = r"""
int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "r");
        if (!f) { printf("denied %s\n", argv[i]); continue; }
        char buf[256] = {0}; fread(buf, 1, sizeof buf - 1, f); printf("read %s: %s\n", argv[i], buf); fclose(f);
    }
}
"""


@pytest.fixture
def secrets(runs_dir):
    """A token in a file under $HOME, in a store-like world-readable file and in another run's scratch
    directory (world-readable too); /etc/shadow besides."""
    token = f"SECRET_TOKEN_{uuid.uuid4().hex}"
    store = Path("/var/tmp") / f"cass-store-{uuid.uuid4().hex}"
    readable = [store / "objects" / "secret", runs_dir / "job-other" / "secret"]
    paths = [Path.home() / f".cass-secret-{uuid.uuid4().hex}", *readable]
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        path.write_text(token)
        path.chmod(0o644)
    yield token, [Path("/etc/shadow"), *paths], readable
    paths[0].unlink()
    shutil.rmtree(store)


def test_a_program_reads_no_host_file(tmp_path, runs_dir, secrets):
    token, paths, readable = secrets
    binary = build(tmp_path, READER)
    run = run_program(launcher(runs_dir), binary, tuple(map(str, paths)))
    assert run.verdict == "exited" and token.encode() not in run.stdout + run.stderr
    assert run.stdout.decode().splitlines() == [f"denied {p}" for p in paths]
    # the control: outside the sandbox the same program, as the same kind of user, reads the world-readable ones
    weak = run_program(launcher(runs_dir, sandbox=Sandbox.weak()), binary, tuple(map(str, paths)))
    assert [line.split(":")[0] for line in weak.stdout.decode().splitlines()] == [
        f"read {p}" if p in readable else f"denied {p}" for p in paths]


def test_a_program_has_no_network(tmp_path, runs_dir, listener):
    port = listener.getsockname()[1]
    source = ("#include <arpa/inet.h>\n#include <sys/socket.h>\nint main() { int s = socket(AF_INET, SOCK_STREAM, 0);"
              f" sockaddr_in a{{}}; a.sin_family = AF_INET; a.sin_port = htons({port}); "
              'inet_pton(AF_INET, "127.0.0.1", &a.sin_addr); '
              'puts(connect(s, (sockaddr *)&a, sizeof a) ? "no connection" : "connected"); }')
    run = run_program(launcher(runs_dir), build(tmp_path, source))
    assert run.stdout == b"no connection\n"
    with pytest.raises(TimeoutError):
        listener.accept()


@pytest.mark.parametrize("mode", ["bwrap", "rlimits"])
@pytest.mark.parametrize(("name", "source", "limits", "expected"), [
    ("never exits", "int main() { sleep(1000); }", {"wall_s": 2}, "timeout"),
    ("escapes its session", "int main() { if (fork() == 0) { setsid(); sleep(1000); } sleep(1000); }",
     {"wall_s": 2}, "timeout"),
    ("spins", "int main() { volatile long i = 0; for (;;) i++; }", {"cpu_s": 1, "wall_s": 20}, "cpu_limit"),
    ("spins past SIGXCPU", "#include <csignal>\nint main() { signal(SIGXCPU, SIG_IGN); volatile long i = 0; "
     "for (;;) i++; }", {"cpu_s": 1, "wall_s": 20}, "crashed:SIGKILL"),   # the hard limit, a CPU second later
    ("writes without end", 'int main() { FILE *f = fopen("out", "w"); char b[4096] = {1}; for (;;) fwrite(b, 1, '
     "sizeof b, f); }", {"file_bytes": 1 << 20}, "file_limit"),
    ("forks without end", "int main() { for (;;) fork(); }", {"wall_s": 3}, "timeout"),
    ("crashes", "int main() { volatile int *p = nullptr; return *p; }", {}, "crashed:SIGSEGV"),
])
def test_a_runaway_program_is_stopped_with_its_verdict_and_leaves_nothing(tmp_path, runs_dir, mode, name, source,
                                                                          limits, expected):
    run = run_program(launcher(runs_dir, sandbox=None if mode == "bwrap" else Sandbox.weak(), **limits),
                      build(tmp_path, source))
    assert (run.verdict, run.sandbox) == (expected, mode), (name, run)
    assert surviving_programs() == []
    assert list(runs_dir.iterdir()) == []


def test_a_program_allocating_without_end_gets_no_more_memory(tmp_path, runs_dir):
    source = ("int main() { for (long n = 0;; n++) { char *p = (char *)malloc(1 << 20); "
              'if (!p) { printf("refused after %ld MiB\\n", n); return 3; } memset(p, 1, 1 << 20); } }')
    run = run_program(launcher(runs_dir, data_bytes=256 << 20), build(tmp_path, source))
    assert run.verdict == "exited" and run.exit_code == 3
    assert int(run.stdout.split()[2]) < 256


@pytest.mark.parametrize("mode", ["bwrap", "rlimits"])
def test_a_program_sees_its_own_process_in_proc(tmp_path, runs_dir, mode):
    """/proc belongs to the program's PID namespace (the CUDA driver reads /proc/self): /proc/self names the pid
    the program has, not its pid on the host."""
    source = ('int main() { char link[32] = {0}; readlink("/proc/self", link, sizeof link - 1); '
              'printf("%d %s\\n", getpid(), link); }')
    run = run_program(launcher(runs_dir, sandbox=None if mode == "bwrap" else Sandbox.weak()),
                      build(tmp_path, source))
    fields = run.stdout.split()
    assert run.sandbox == mode and len(fields) == 2 and fields[0] == fields[1], run


@pytest.mark.parametrize("mode", ["bwrap", "rlimits"])
def test_a_runs_peak_memory_is_the_programs_own(tmp_path, runs_dir, mode):
    """The peak resident memory of a run is that of the program inside the sandbox, not of the sandbox's own
    processes: 192 MiB touched shows (the memory is sampled while it runs, so the program holds it a moment),
    a program touching nothing stays far below. Both live 100 ms: a program ending before the first sample (5 ms)
    has no peak (None) rather than a wrong one."""
    sandbox = None if mode == "bwrap" else Sandbox.weak()
    touches = ("int main(int c, char **v) { size_t n = 192u << 20; char *volatile p = (char *)malloc(n); "
               "memset(p, c, n); long s = 0; for (size_t i = 0; i < n; i += 4096) s += p[i]; "
               'printf("%ld\\n", s); usleep(100000); }')   # sampled: the peak is seen within 5 ms
    big = run_program(launcher(runs_dir, sandbox=sandbox), build(tmp_path, touches))
    small = run_program(launcher(runs_dir, sandbox=sandbox),
                        build(tmp_path, 'int main() { puts("hi"); usleep(100000); }'))
    assert big.verdict == small.verdict == "exited" and big.sandbox == small.sandbox == mode
    assert big.max_rss_kib >= 192 << 10 and 0 < small.max_rss_kib < 32 << 10


def test_a_program_runs_in_its_folder_among_its_trees_data_files_which_it_cannot_change(tmp_path, runs_dir):
    """An invocation's working directory is a folder of the program's tree, with the tree's data files around it:
    readable, not writable; the working directory itself is, and its path is the same on every run."""
    source = r"""
int main(int argc, char **argv) {
    char cwd[256], line[64];
    FILE *data = fopen(argv[1], "r"), *shared = fopen("../shared/table.txt", "r");
    if (!data || !shared || !fgets(line, sizeof line, data)) return 2;
    printf("cwd %s\nread %s", getcwd(cwd, sizeof cwd), line);
    if (!fgets(line, sizeof line, shared)) return 3;
    printf("shared %s", line);
    printf("data writable: %s\n", fopen(argv[1], "a") ? "yes" : "no");
    FILE *out = fopen("result.txt", "w");
    printf("result written: %s\n", out && fputs("ok", out) >= 0 ? "yes" : "no");
    return 0;
}"""
    invocation = Invocation(("input.txt",), "app", (("app/input.txt", "-"), ("shared/table.txt", "-")))
    inputs = {"app/input.txt": b"42\n", "shared/table.txt": b"7 8 9\n"}
    job = program_job(build(tmp_path, source), launcher(runs_dir).limits, invocation, inputs)
    old_umask = os.umask(0o077)   # as on a GPU host whose runner keeps everything private
    try:
        runs = [SandboxedRun.from_result(launcher(runs_dir).run_job(job)) for _ in range(2)]
    finally:
        os.umask(old_umask)
    assert runs[0].exit_code == 0, runs[0].stderr
    assert runs[0].stdout == (b"cwd /run/program/app\nread 42\nshared 7 8 9\n"
                              b"data writable: no\nresult written: yes\n")
    assert runs[1].stdout == runs[0].stdout
    assert runs[0].kernel_launches is None   # no kernel counter: not counted


@pytest.mark.gpu
def test_the_kernels_a_program_runs_on_the_gpu_are_counted(store, gpu):
    """On a GPU: a program that launches a kernel 3 times counts 3, one that computes on the CPU counts 0 (CUPTI,
    loaded by the driver: :mod:`toolchains.launches`)."""
    gpu.require()
    kernels = "__global__ void add(int *v) { v[threadIdx.x] += 1; }\n" \
        "int main() { int *v; cudaMalloc(&v, 64 * sizeof(int)); for (int i = 0; i < 3; ++i) add<<<1, 64>>>(v);\n" \
        "cudaDeviceSynchronize(); printf(\"done\\n\"); return 0; }\n"
    cpu = "int main() { long s = 0; for (int i = 0; i < 1000; ++i) s += i; printf(\"%ld\\n\", s); return 0; }\n"
    runs = gpu.run_cuda(store, "counter", load_params(REPO / "params.yaml"),
                        {"gpu": PRELUDE + kernels, "cpu": PRELUDE + cpu}, ProgramLimits(**LIMITS))
    assert all(r.ok for r in runs.values()), runs
    assert {name: r.kernel_launches for name, r in runs.items()} == {"gpu": 3, "cpu": 0}


DRIVER_COPY = """typedef int (*DtoH)(void *, unsigned long long, size_t);
  ((DtoH)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuMemcpyDtoH_v2"))(out, (unsigned long long)copy, n * 4);"""
"""A copy through the driver's own ``cuMemcpyDtoH`` (HIP's ``hipMemcpyDtoH`` on NVIDIA; HIP's NVIDIA builds do not
link the driver library, so it is reached as any program reaches it without linking)."""
DEVICE_READS_CUDA = """#include <dlfcn.h>
__global__ void square(float *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * v[i] + OFFSET;
}
__device__ int flag;
__global__ void mark() { flag = 7; }
int main() {
  const int n = 1024;
  static float in[n], out[n], tile[4 * 8];
  for (int i = 0; i < n; ++i) in[i] = i * 0.5f;
  float *d, *pinned, *copy;
  int f = 0;
  cudaStream_t s;
  cudaMalloc(&d, n * 4); cudaMalloc(&copy, n * 4); cudaMallocHost(&pinned, n * 4); cudaStreamCreate(&s);
  cudaMemcpy(d, in, n * 4, cudaMemcpyHostToDevice);
  square<<<4, 256>>>(d, n); mark<<<1, 1>>>();
  cudaMemcpy(copy, d, n * 4, cudaMemcpyDeviceToDevice);
  cudaMemcpy(out, d, n * 4, cudaMemcpyDeviceToHost);
  cudaMemcpyAsync(pinned, copy, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s);
  cudaMemcpy2D(tile, 8 * 4, d, 32 * 4, 8 * 4, 4, cudaMemcpyDeviceToHost);
  cudaMemcpyFromSymbol(&f, flag, sizeof f);
  DRIVER_COPY
  printf("PASS\\n");
  return 0;
}
"""
DEVICE_READS_HIP = """#include <hip/hip_runtime.h>
#include <dlfcn.h>
__global__ void square(float *v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * v[i] + OFFSET;
}
__device__ int flag;
__global__ void mark() { flag = 7; }
int main() {
  const int n = 1024;
  static float in[n], out[n], tile[4 * 8];
  for (int i = 0; i < n; ++i) in[i] = i * 0.5f;
  float *d, *pinned, *copy;
  int f = 0;
  hipStream_t s;
  hipMalloc(&d, n * 4); hipMalloc(&copy, n * 4); hipHostMalloc(&pinned, n * 4); hipStreamCreate(&s);
  hipMemcpy(d, in, n * 4, hipMemcpyHostToDevice);
  square<<<4, 256>>>(d, n); mark<<<1, 1>>>();
  hipMemcpy(copy, d, n * 4, hipMemcpyDeviceToDevice);
  hipMemcpy(out, d, n * 4, hipMemcpyDefault);
  hipMemcpyAsync(pinned, copy, n * 4, hipMemcpyDeviceToHost, s); hipStreamSynchronize(s);
  hipMemcpy2D(tile, 8 * 4, d, 32 * 4, 8 * 4, 4, hipMemcpyDeviceToHost);
  hipMemcpyFromSymbol(&f, HIP_SYMBOL(flag), sizeof f);
  DRIVER_COPY
  printf("PASS\\n");
  return 0;
}
"""


@pytest.mark.gpu
def test_what_a_program_reads_back_from_the_gpu_tells_a_wrong_translation(store, gpu):
    """On a GPU: the counter digests each copy from device to host (a synchronous copy, an asynchronous one settled
    by a stream synchronisation, a 2D copy, a symbol, the driver's own copy), not the copies to or within the device,
    through the CUDA runtime and through HIP's NVIDIA back end (``hipMemcpyDefault`` to a host buffer too). A program
    that prints only ``PASS`` is then judged by its reads: the right translation is ``match_device`` and verified,
    one whose kernel adds 2 instead of 1 is ``device_mismatch``."""
    from cass.execution.device_reads import DeviceReads
    from cass.execution.verify import judge, verified
    gpu.require()
    params = load_params(REPO / "params.yaml")
    programs = {"cuda": ("cuda", DEVICE_READS_CUDA, "1.0f"), "right": ("hip", DEVICE_READS_HIP, "1.0f"),
                "wrong": ("hip", DEVICE_READS_HIP, "2.0f")}
    targets = {}
    for name, (side, source, offset) in programs.items():
        path = f"{name}.{'cu' if side == 'cuda' else 'hip.cu'}"
        text = PRELUDE + source.replace("OFFSET", offset).replace("DRIVER_COPY", DRIVER_COPY)
        targets[name] = ProgramSource(side, [path], [], {path: store.put(text.encode())})
    builds, _ = build_program_targets(store, params["execute"], targets, Placement.local(1))
    assert all(b.binary for b in builds.values()), builds
    limits = ProgramLimits(**LIMITS)
    planned = {(name, n): ProgramRun(b.binary, Invocation(), limits, n)
               for name, b in builds.items() for n in range(1, 4 if name == "cuda" else 2)}
    host = gpu.host(store, "device-reads", params, set(planned.values()))
    found, _ = run_programs(store, host, set(planned.values()), 1)
    runs = {key: Run.of(store, found[run]) for key, run in planned.items()}
    assert all(r.ok and r.kernel_launches == 2 for r in runs.values()), runs
    reads = {key: DeviceReads.parse(store.get(r.device_reads)) for key, r in runs.items()}
    assert {key: [c.size for c in r.records] for key, r in reads.items()} == \
        {key: [4096, 4096, 128, 4, 4096] for key in planned}   # nothing of the copies to or within the device
    assert reads["cuda", 1].records == reads["right", 1].records
    cuda = [runs["cuda", n] for n in (1, 2, 3)]
    for name, status in (("right", "match_device"), ("wrong", "device_mismatch")):
        both = {"cuda": cuda, "hip": [runs[name, 1]]}
        verdict = judge(store, both, False, params["execute"]["tolerance"])
        assert (verdict.status, verified(verdict, both)) == (status, name == "right"), verdict


def test_a_batch_counter_is_found_by_an_absolute_path_whatever_folder_names_it(tmp_path, monkeypatch):
    """``run-batch batch`` (a relative folder) counted 0 kernels in every run: the driver looked the counter up from
    each run's own working directory. The counter's path, and so the program's ``CUDA_INJECTION64_PATH``, is now
    absolute whatever path the batch was given by."""
    folder = tmp_path / "batch" / COUNTER_DIR
    folder.mkdir(parents=True)
    for name in (LIBRARY, CUPTI):
        (folder / name).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    counter = LaunchCounter.found_in(Path("batch") / COUNTER_DIR)
    assert counter.folder.is_absolute() and Path(counter.env()["CUDA_INJECTION64_PATH"]).is_absolute()


def test_a_batch_whose_counter_cannot_count_the_probe_is_refused(tmp_path):
    """A GPU host refuses a batch without a kernel counter, or without the probe that proves the counter counts, and
    names the cause (``run-batch`` exits 3 with it); a host without a GPU counts nothing and needs no probe."""
    gpu = RunHost("NVIDIA H100 80GB HBM3", "580.159.04", "13.0", "sm_90", "bwrap", "glibc 2.36")
    with pytest.raises(CounterProbeError, match="carries no kernel counter"):
        probe_counter(gpu, None, [None])
    folder = tmp_path / COUNTER_DIR
    folder.mkdir()
    for name in (LIBRARY, CUPTI):
        (folder / name).write_bytes(b"")
    with pytest.raises(CounterProbeError, match="no probe program"):
        probe_counter(gpu, LaunchCounter(folder), [None])
    probe_counter(cpu_host(), None, [None])   # nothing to count on a host without a GPU


def write_run_batch(folder: Path, binary: bytes) -> None:
    """A run batch of one run of ``binary``, as ``cass gpu-batch export`` writes one."""
    digest = blake3.blake3(binary).hexdigest()
    (folder / "binaries").mkdir(parents=True, exist_ok=True)
    (folder / "binaries" / digest).write_bytes(binary)
    (folder / "batch.json").write_text(json.dumps({"limits": LIMITS, "runs": [{"binary": digest, "run": 1}]}))


def test_a_resumed_batch_takes_only_its_own_finished_runs_of_the_same_host(tmp_path):
    """``run-batch --resume`` keeps the runs an earlier call finished; a batch written again into the same folder
    (its runs numbered afresh) runs again, another host's runs are refused, and a fresh call leaves nothing of an
    earlier call's outputs (a device reads file it did not write would be imported as its own)."""
    folder = tmp_path / "batch"
    write_run_batch(folder, build(tmp_path, 'int main() { puts("first"); return 0; }'))
    run_batch(folder, cpu_host())
    write_run_batch(folder, build(tmp_path, 'int main() { puts("second"); return 0; }'))
    (folder / "results" / "000001.device_reads").write_bytes(b"another call's")
    resumed = run_batch(folder, cpu_host(), resume=True)
    assert (folder / "results" / "000001.stdout").read_bytes() == b"second\n"
    assert resumed["runs"][0]["binary"] == json.loads((folder / "batch.json").read_text())["runs"][0]["binary"]
    assert not (folder / "results" / "000001.device_reads").exists()
    other = RunHost("NVIDIA H100 80GB HBM3", "580.159.04", "13.0", "sm_90", "bwrap", "glibc 2.36")
    with pytest.raises(ValueError, match="runs of another host"):
        run_batch(folder, other, resume=True, uncounted=True)
    again = run_batch(folder, cpu_host(), resume=True)
    assert again["runs"] == resumed["runs"] and (folder / "results" / "000001.stdout").read_bytes() == b"second\n"


PATH_PROGRAMS = {
    "cuda": "#include <cstdio>\n",
    "hip": "#include <hip/hip_runtime.h>\n#include <cstdio>\n#define cudaMalloc hipMalloc\n",
}
"""The same program on both sides (the HIP one through HIP's names)."""

PATH_PROGRAM = """__global__ void fill(float *out) { out[threadIdx.x] = threadIdx.x; }
int main() { float *d; cudaMalloc(&d, 32 * sizeof(float)); fill<<<1, 32>>>(d); printf("filled\\n"); return 0; }
"""


@pytest.mark.parametrize("side", sorted(PATH_PROGRAMS))
def test_a_program_builds_to_the_same_bytes_wherever_the_cuda_wheels_are_installed(tmp_path, side):
    """nvlink writes its library folders into the executable: the builds show nvcc the wheels at fixed paths, so a
    collaborator's clone elsewhere rebuilds the binaries the GPU host's runs are recorded under."""
    from cass.engine.targets import TargetRun, run_plans
    from cass.execution.programs import build_toolchains
    from store import Store
    from toolchains import HipNvidiaToolchain, NvidiaToolchain

    here = build_toolchains(Placement.local())[side]
    installed = [here.cuda_home, *(here.cuda12 if side == "hip" else ())]
    copy = tmp_path / "elsewhere" / "site-packages" / "nvidia"   # the same files at other paths
    for folder in installed:
        shutil.copytree(folder, copy / folder.name, copy_function=link_or_copy, symlinks=True)
    cuda_home = copy / here.cuda_home.name
    elsewhere = NvidiaToolchain(cuda_home) if side == "cuda" else HipNvidiaToolchain(cuda_home, here.hip_headers, copy)
    assert elsewhere.fingerprint("nvcc") == here.fingerprint("nvcc")
    binaries = {}
    for name, toolchain in (("here", here), ("elsewhere", elsewhere)):
        store = Store(tmp_path / f"store-{name}")   # its own store: both really build
        target = toolchain.program_target(["main.cu"], ["sm_90"], ["-std=c++17"])
        files = {"main.cu": store.put((PATH_PROGRAMS[side] + PATH_PROGRAM).encode())}
        builds, _ = run_plans(store, toolchain, {name: [TargetRun(target, files)]}, 300, Placement.local())
        assert builds[name].binary, builds[name].detail
        binaries[name] = store.get(builds[name].binary)
    assert binaries["here"] == binaries["elsewhere"]
    assert not [str(f) for f in (*installed, copy) if str(f).encode() in binaries["here"]]


def link_or_copy(source: str, dest: str) -> None:
    """A hard link, else (another file system, a file this user may not link) a copy."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copy2(source, dest)
