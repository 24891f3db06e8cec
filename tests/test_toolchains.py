"""Real vendor toolchains on small inputs: assembly for both vendors, hipify, failure categories."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from cass.engine.actions import ActionRunner, plan
from cass.engine.placement import Placement
from cass.engine.targets import TargetRun, failure_reason, run_plans, run_targets
from cass.pipeline.context import load_params
from cass.text.host_asm import strip_host_registration
from toolchains import AmdToolchain, NvidiaToolchain, Step, ToolchainMissingError, load_toolchains, local_executor
from toolchains.diagnostics import categorize
from toolchains.executor import Job, run_tool
from toolchains.system import SYSTEM_LIBRARIES, header_parity

SAXPY = b"""#include <cstdio>
#include "scale.cuh"
__global__ void saxpy(float a, const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = scale(a, x[i]) + y[i];
}
int main() {
    float *x, *y;
    cudaMalloc(&x, 1024 * sizeof(float));
    cudaMalloc(&y, 1024 * sizeof(float));
    saxpy<<<4, 256>>>(2.0f, x, y, 1024);
    cudaDeviceSynchronize();
    printf("done\\n");
    return 0;
}
"""
HEADER = b"__device__ inline float scale(float a, float v) { return a * v; }\n"
WARP = b"""__global__ void warp_sum(float *v) {
    float s = v[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffff, s, o);
    __syncwarp();
    if (threadIdx.x == 0) __stwt(v, s);
}
"""
"""Warp code with CUDA builtins no HIP declares (``__syncwarp``) and no hipify-perl maps (``__stwt``)."""
REPO = Path(__file__).resolve().parents[1]
FLAGS = {"nvidia": {"common": ["-std=c++17", "-DNDEBUG", "-w"], "host": ["-Os"],
                    "opencl": ["-cl-std=CL1.2", "-O2", "-march=sm_80"]},
         "amd": {"common": ["-std=c++17", "-DNDEBUG", "-w"], "opt": ["-Os"], "opencl": ["-cl-std=CL1.2", "-O2"]}}
OPENCL = b"""#include "axpy_math.h"
__kernel void axpy_sqrt(__global const float *x, __global float *y, float a, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] = fused(a, x[i], sqrt(y[i]));
}
__kernel void block_sum(__global const float *x, __global float *out, __local float *tile) {
    int l = get_local_id(0);
    tile[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
        if (l < s) tile[l] += tile[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[get_group_id(0)] = tile[0];
}
"""
OPENCL_HEADER = b"static inline float fused(float a, float x, float y) { return mad(a, x, y); }\n"


def build(store, toolchain, files: dict[str, bytes], archs: list[str]) -> list[TargetRun]:
    runner = ActionRunner(store, local_executor({toolchain.vendor: toolchain}), timeout_s=300)
    inputs = {name: store.put(data) for name, data in files.items()}
    main = next(iter(files))
    runs = [TargetRun(t, dict(inputs)) for t in toolchain.targets(main, archs, FLAGS[toolchain.vendor])]
    run_targets(toolchain, runner, runs)
    return runs


def artifacts(store, toolchain, runs) -> dict[str, str]:
    assert all(r.failure is None for r in runs), [failure_reason(toolchain, r, store) for r in runs if r.failure]
    return {r.target.name: toolchain.finish(r.target, store.get(r.inputs[r.target.artifact])).decode()
            for r in runs}


def test_nvidia_host_asm_and_sass_per_arch(store, toolchains, tmp_path):
    nv = toolchains["nvidia"]
    out = artifacts(store, nv, build(store, nv, {"k/saxpy.cu": SAXPY, "k/scale.cuh": HEADER}, ["sm_80", "sm_89"]))
    assert set(out) == {"host:x86_64", "device:sm_80", "device:sm_89"}
    host = out["host:x86_64"]
    assert ".section .nv_fatbin" not in host and "fatbinData:" not in host
    assert not [ln for ln in host.splitlines() if ln.startswith(".quad 0x")]
    assert "_Z5saxpyfPKfPfi" in host and "tmpxft" not in host and "/tmp" not in host
    for arch in ("sm_80", "sm_89"):
        assert f"code for {arch}" in out[f"device:{arch}"]
        assert "Function : _Z5saxpyfPKfPfi" in out[f"device:{arch}"]
    stripped = strip_host_registration(host)
    assert "__cudaRegisterFunction" in host and "__cudaRegisterFunction" not in stripped
    assert "__sti____cudaRegisterAll" not in stripped and ".init_array" not in stripped
    assert "__device_stub__Z5saxpyfPKfPfi" in stripped and "cudaLaunchKernel" in stripped
    (tmp_path / "host.s").write_text(stripped)   # still valid assembly for GNU as
    subprocess.run(["as", str(tmp_path / "host.s"), "-o", str(tmp_path / "host.o")], check=True)


def test_nvidia_outputs_are_byte_identical_across_cold_builds(tmp_path, toolchains):
    from store import Store

    nv = toolchains["nvidia"]
    builds = []
    for name in ("one", "two"):
        s = Store(tmp_path / name)
        builds.append(artifacts(s, nv, build(s, nv, {"saxpy.cu": SAXPY, "scale.cuh": HEADER}, ["sm_89"])))
    assert builds[0] == builds[1]


def test_hipify_then_amd_host_and_gfx1100_device_asm(store, toolchains):
    amd = toolchains["amd"]
    runner = ActionRunner(store, local_executor({"amd": amd}), timeout_s=300)
    hip = {}
    for name, data in (("saxpy.cu", SAXPY), ("scale.cuh", HEADER)):
        action = plan(amd, amd.hipify_step(name), {name: store.put(data)})
        outcome = runner.run([action], desc="hipify")[action.key]
        assert outcome.ok
        hip[name] = store.get(outcome.record.outputs["hip"])
    assert b"hipMalloc" in hip["saxpy.cu"] and b"cudaMalloc" not in hip["saxpy.cu"]
    assert b'#include "hip/hip_runtime.h"' in hip["saxpy.cu"]
    out = artifacts(store, amd, build(store, amd, hip, ["gfx1100"]))
    device = out["device:gfx1100"]
    assert ".amdhsa_kernel _Z5saxpyfPKfPfi" in device and "s_endpgm" in device
    assert 'amdgcn-amd-amdhsa--gfx1100' in device
    assert "hipLaunchKernel" in out["host:x86_64"] or "__hip_module_ctor" in out["host:x86_64"]


def test_hipify_keeps_its_unsupported_warnings(store, toolchains):
    amd = toolchains["amd"]
    runner = ActionRunner(store, local_executor({"amd": amd}), timeout_s=300)
    translate = plan(amd, amd.hipify_step("warp.cu"), {"warp.cu": store.put(WARP)})
    check = plan(amd, amd.hipify_warnings_step("warp.cu"), {"warp.cu": store.put(WARP)})
    outcomes = runner.run([translate, check], desc="hipify")
    assert outcomes[translate.key].ok and store.get_text(outcomes[translate.key].record.stderr) == ""
    assert "hipLaunch" not in store.get_text(outcomes[translate.key].record.outputs["hip"])
    assert 'unsupported device function "__stwt"' in store.get_text(outcomes[check.key].record.stderr)


def test_every_system_library_header_is_found_on_both_sides(store, toolchains):
    """The packages of toolchains/system.py give both compilers the same system headers."""
    source = "".join(f"#include <{lib.header}>\n" for lib in SYSTEM_LIBRARIES).encode()
    steps = {"nvidia": Step("nvcc", ("-std=c++17", "-E", "-x", "cu", "all.cu", "-o", "all.i"), ("all.i",)),
             "amd": Step("hipcc", ("-std=c++17", "-E", "-x", "hip", "--cuda-host-only", "all.cu", "-o", "all.i"),
                         ("all.i",))}
    for vendor, step in steps.items():
        tc = toolchains[vendor]
        runner = ActionRunner(store, local_executor({vendor: tc}), timeout_s=300)
        action = plan(tc, step, {"all.cu": store.put(source)})
        outcome = runner.run([action], desc=vendor)[action.key]
        assert outcome.ok, f"{vendor}: {store.get_text(outcome.record.stderr)[:2000]}"
    assert header_parity(toolchains["nvidia"].system_include_dirs(), toolchains["amd"].system_include_dirs()) \
        == {lib.name: {"nvidia": True, "amd": True} for lib in SYSTEM_LIBRARIES}


@pytest.mark.parametrize(
    ("vendor", "source", "category"),
    [
        ("nvidia", b"__global__ void k(int *p) { p[0] = 1 }\n", "syntax"),
        ("nvidia", b'#include "absent_helpers.cuh"\n__global__ void k(int *p) { p[0] = 1; }\n', "missing_header"),
        ("amd", WARP, "hipify_gap"),
        ("amd", b"#include <mma.h>\n__global__ void k(int *p) { p[0] = 1; }\n", "hipify_gap"),
    ],
)
def test_real_compile_failures_are_categorised(store, toolchains, vendor, source, category):
    tc = toolchains[vendor]
    runs = build(store, tc, {"k.cu": source}, ["sm_89" if vendor == "nvidia" else "gfx1100"])
    failed = [r for r in runs if r.failure]
    assert failed
    reason, detail = failure_reason(tc, failed[0], store)
    assert reason == f"compile_failed:{category}", detail
    assert failed[0].failure.record.status == "failed"


def test_second_build_is_all_store_hits(store, toolchains):
    nv = toolchains["nvidia"]
    build(store, nv, {"saxpy.cu": SAXPY, "scale.cuh": HEADER}, ["sm_89"])
    runner = ActionRunner(store, local_executor({"nvidia": nv}), timeout_s=300)
    inputs = {"saxpy.cu": store.put(SAXPY), "scale.cuh": store.put(HEADER)}
    runs = [TargetRun(t, dict(inputs)) for t in nv.targets("saxpy.cu", ["sm_89"], FLAGS["nvidia"])]
    run_targets(nv, runner, runs)
    # one nvcc (host assembly + the arch's kept cubin, shared by both targets) and one cuobjdump
    assert runner.counts.as_dict() == {"hits": 2, "misses": 0, "transient_failures": 0, "corrupt_recomputed": 0,
                                       "jobs_sent": 0, "jobs_by_host": {}, "jobs_by_sandbox": {}}


def test_a_programs_targets_stop_at_the_first_that_fails(store, toolchains):
    """A program's units build one target after another (the benchmark's compiles): where its first unit fails, the
    targets after it never run, and its build names that failure."""
    amd = toolchains["amd"]
    files = {"broken.hip": store.put(b"__global__ void k(float *v) { v[0] = ; }\n"),
             "saxpy.hip": store.put(SAXPY.replace(b'#include "scale.cuh"', HEADER.strip()).replace(b"cuda", b"hip"))}

    def targets(units: list[str], inputs: dict[str, str]) -> list[TargetRun]:
        return [TargetRun(t, dict(inputs)) for u in units for t in amd.targets(u, ["gfx1100"], FLAGS["amd"])]

    plans = {"broken first": targets(["broken.hip", "saxpy.hip"], files),
             "whole": targets(["saxpy.hip"], {"saxpy.hip": files["saxpy.hip"]})}
    builds, counts = run_plans(store, amd, plans, timeout_s=300, placement=Placement.local(2))
    assert builds["whole"].binary is not None and builds["broken first"].binary is None
    assert builds["broken first"].reason == "syntax" and "broken.hip" in builds["broken first"].detail
    first, *never = plans["broken first"]
    assert first.failure is not None and all(r.skipped and r.failure is None for r in never) and len(never) == 3
    assert all(store.lookup(plan(amd, r.target.steps[0], r.inputs).key) is None for r in never)
    assert counts["misses"] == counts["jobs_sent"] == 1 + 2   # the broken unit's host compile; both of the other's


@pytest.mark.parametrize("main", ["cryptography/aes128_ctr.cu", "graph/pagerank_pull.cu",
                                  "linear_algebra/tiled_matmul.cu"])
def test_host_compile_keeps_the_cubin_nvcc_cubin_makes(store, toolchains, main):
    """One nvcc process gives the host assembly and the first arch's cubin, byte-identical to the
    two separate compiles (host without --keep, then -cubin) they replace."""
    nv = toolchains["nvidia"]
    folder = REPO / "corpus" / main.split("/")[0]
    inputs = {p.name: store.put(p.read_bytes()) for p in folder.iterdir() if p.suffix in (".cu", ".cuh")}
    name = main.split("/")[1]
    [host] = [t for t in nv.targets(name, ["sm_89"], FLAGS["nvidia"]) if t.kind == "host"]
    merged = host.steps[0]
    assert "--keep" in merged.args and merged.outputs == ("host.s", "host.s.sm_89.cubin")
    separate_host = Step("nvcc", tuple(a for a in merged.args if a != "--keep"), ("host.s",))
    runner = ActionRunner(store, local_executor({"nvidia": nv}), timeout_s=300)
    steps = [merged, separate_host, nv.cubin_step(name, "sm_89", FLAGS["nvidia"])]
    actions = [plan(nv, step, inputs) for step in steps]
    out = [runner.run([a], desc="nvcc")[a.key].record.outputs for a in actions]
    assert out[0]["host.s"] == out[1]["host.s"]
    assert out[0]["host.s.sm_89.cubin"] == out[2]["device.cubin"]


def test_missing_toolchain_says_how_to_install(tmp_path):
    nv = NvidiaToolchain(tmp_path / "no-cuda")
    with pytest.raises(ToolchainMissingError, match=r"nvcc: not found.*scripts/setup\.sh"):
        nv.require("nvcc")


def test_a_missing_amd_root_stays_missing(tmp_path):
    """Probing or running a tool of an AMD root that is not there must not create a stub folder where
    scripts/setup.sh is to build the root (it once did: setup then moved the new root inside the stub)."""
    root = tmp_path / "no-root"
    amd = AmdToolchain.in_root(root)
    with pytest.raises(ToolchainMissingError, match=r"hipcc: not found.*scripts/setup\.sh"):
        amd.require("hipcc")
    amd.version("hipcc")
    job = Job(vendor="amd", tool="hipcc", args=("--version",), inputs={}, outputs=(), timeout_s=10)
    with pytest.raises(ToolchainMissingError, match=r"no OS root at .*no-root: scripts/setup\.sh builds it"):
        run_tool(amd.launcher, job)
    assert not root.exists()


def test_fingerprint_follows_the_allowlisted_environment(monkeypatch, toolchains):
    base = load_toolchains()["nvidia"].fingerprint("nvcc")
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-lineinfo")
    assert load_toolchains()["nvidia"].fingerprint("nvcc") != base
    monkeypatch.delenv("NVCC_APPEND_FLAGS")
    monkeypatch.setenv("SOME_UNRELATED_VARIABLE", "1")
    assert load_toolchains()["nvidia"].fingerprint("nvcc") == base


def test_categorize_without_a_compiler():
    assert categorize("x.cu(3): error: identifier \"foo\" is undefined", "nvidia") == "undeclared"
    assert categorize("error: use of undeclared identifier 'cudaGraphLaunch'", "amd") == "hipify_gap"
    assert categorize("error: something odd", "amd") == "compile_error"


def test_identity_digest_does_not_depend_on_install_location(tmp_path):
    from toolchains.base import digest_paths

    for number, where in enumerate(("a", "b/c")):
        (tmp_path / where / "cuda" / "bin").mkdir(parents=True)
        (tmp_path / where / "cuda" / "bin" / "nvcc").write_bytes(b"\x7fELF nvcc")
        # a wheel's include folder may be a Python package: its bytecode holds the install's times (and paths)
        (tmp_path / where / "cuda" / "include" / "__pycache__").mkdir(parents=True)
        (tmp_path / where / "cuda" / "include" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(
            f"installed at {number} in {where}".encode())
    one, two = (digest_paths([tmp_path / w / "cuda"]) for w in ("a", "b/c"))
    assert one == two
    (tmp_path / "b/c/cuda/bin/nvcc").write_bytes(b"\x7fELF nvcc 2")
    assert digest_paths([tmp_path / "b/c/cuda"]) != one


def test_identity_digests_are_read_once_per_state_of_the_files(tmp_path):
    from toolchains.base import MachineMemo, digest_paths

    tree = tmp_path / "cuda" / "bin"
    tree.mkdir(parents=True)
    nvcc = tree / "nvcc"
    nvcc.write_bytes(b"\x7fELF nvcc")
    # by default a tree with a file changed in the last 2 s is read, not kept
    fresh = MachineMemo(tmp_path / "fresh.json")
    first = digest_paths([tmp_path / "cuda"], fresh)
    assert not fresh.path.exists()
    memo = MachineMemo(tmp_path / "memo.json", settle_s=0)
    assert digest_paths([tmp_path / "cuda"], memo) == first   # = a fresh read
    # an unchanged tree is answered from the memo, not read: a planted entry is what comes back
    (key,) = json.loads(memo.path.read_text())
    memo.put(key, "planted")
    assert digest_paths([tmp_path / "cuda"], memo) == "planted"
    # new bytes of the same size with the old modification time still count (the change time moved; the
    # pause outlasts a coarse file-system clock tick)
    before = nvcc.stat()
    time.sleep(0.05)
    nvcc.write_bytes(b"\x7fELF nvcx")
    os.utime(nvcc, ns=(before.st_atime_ns, before.st_mtime_ns))
    changed = digest_paths([tmp_path / "cuda"], memo)
    assert changed not in ("planted", first)
    assert changed == digest_paths([tmp_path / "cuda"], MachineMemo(tmp_path / "third.json"))


def test_a_tools_version_is_asked_once_per_state_of_its_installation(tmp_path, monkeypatch):
    """The real nvcc and the AMD root's hipcc: the output a tool's version command printed is kept under its
    identity and read from there by a later process (planted outputs come back, cleaned as a run's would be); a
    tool whose identity differs is asked again."""
    monkeypatch.setenv("CASS_CACHE", str(tmp_path / "cache"))
    params = load_params(REPO / "params.yaml")
    first = load_toolchains(params["amd"]["toolchain"])
    asked = {(v, tool): tc.version(tool) for v, tc in first.items() for tool in ("nvcc", "hipcc") if tool in tc.tools()}
    assert len(asked) == 2 and all("(exit" not in text for text in asked.values()), asked
    assert "nvcc" in asked["nvidia", "nvcc"].lower() and "HIP version" in asked["amd", "hipcc"]
    memo = tmp_path / "cache" / "toolchains" / "versions.json"
    kept = json.loads(memo.read_text())
    assert len(kept) == 2
    memo.write_text(json.dumps({key: "planted\nlspci: a line the AMD side cleans away\n" for key in kept}))
    again = load_toolchains(params["amd"]["toolchain"])   # as a later stage's process would
    assert again["nvidia"].version("nvcc") == "planted | lspci: a line the AMD side cleans away"
    assert again["amd"].version("hipcc") == "planted"
    # the key holds the identity: the same tool under another identity (another installation) is asked again
    other = load_toolchains(params["amd"]["toolchain"])["nvidia"]
    monkeypatch.setattr(other, "identity", lambda tool: "another installation")
    assert other.version("nvcc") == asked["nvidia", "nvcc"]
    assert len(json.loads(memo.read_text())) == 3


def test_export_schema_is_fixed_by_the_params():
    from cass.training.export import schema

    params = {"nvidia": {"archs": ["sm_80", "sm_89"]}, "amd": {"archs": ["gfx1100"]},
              "normalize": {"strip_host_registration": False}}
    columns = schema(params)
    assert {"cuda_device_sass_sm_80", "cuda_device_sass_sm_89", "hip_device_asm_gfx1100",
            "hip_device_asm_gfx1100_lines", "nvcc_fingerprint", "hip_device_asm_gfx1100_norm"} <= set(columns)
    assert "cuda_host_asm_norm" not in columns
    assert "cuda_host_asm_norm" in schema({**params, "normalize": {"strip_host_registration": True}})
    import polars as pl

    assert pl.DataFrame([], schema=columns).columns == list(columns)


def test_both_toolchains_carry_the_vendor_library_headers(toolchains):
    """cuBLAS, cuRAND, cuFFT, cuSPARSE, cuSOLVER, thrust, CUB and their hip*/roc* translations."""
    for tc in toolchains.values():
        assert len(tc.library_headers) == 7 and tc.missing_libraries() == [], tc.vendor


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_opencl_kernels_compile_to_device_assembly_on_both_vendors(store, toolchains, vendor):
    """OpenCL C: no host assembly, device assembly per arch naming every kernel (unmangled), the builtins
    (get_global_id, sqrt, barrier) resolved by libclc (NVIDIA) or ROCm's device libraries (AMD)."""
    tc = toolchains[vendor]
    archs = ["sm_80", "sm_89"] if vendor == "nvidia" else ["gfx1100", "gfx90a"]
    runs = build(store, tc, {"k/axpy.cl": OPENCL, "k/axpy_math.h": OPENCL_HEADER}, archs)
    out = artifacts(store, tc, runs)
    assert set(out) == {f"device:{a}" for a in archs}
    for arch, text in out.items():
        if vendor == "nvidia":
            assert f"code for {arch.removeprefix('device:')}" in text
            assert "Function : axpy_sqrt" in text and "Function : block_sum" in text and "BAR.SYNC" in text
        else:
            assert f"amdgcn-amd-amdhsa--{arch.removeprefix('device:')}" in text
            assert ".amdhsa_kernel axpy_sqrt" in text and ".amdhsa_kernel block_sum" in text
            assert "s_barrier" in text and "s_endpgm" in text
    if vendor == "nvidia":   # one PTX (clang, libclc linked) for every arch; ptxas and cuobjdump per arch
        assert [[s.tool for s in r.target.steps] for r in runs] == [["clang-15", "ptxas", "cuobjdump"]] * 2
        assert runs[0].target.steps[0] == runs[1].target.steps[0]


@pytest.mark.parametrize("vendor", ["nvidia", "amd"])
def test_opencl_compile_failures_are_categorised_like_cuda_ones(store, toolchains, vendor):
    tc = toolchains[vendor]
    archs = ["sm_89"] if vendor == "nvidia" else ["gfx1100"]
    broken = b"__kernel void k(__global float *y) {\n    y[get_global_id(0)] = 1.0f\n}\n"
    missing = b'#include "gone.h"\n__kernel void k(__global float *y) { y[0] = 1.0f; }\n'
    [syntax] = build(store, tc, {"k/broken.cl": broken}, archs)
    [header] = build(store, tc, {"k/missing.cl": missing}, archs)
    reason, detail = failure_reason(tc, syntax, store)
    assert reason == "compile_failed:syntax" and "broken.cl:2" in detail
    assert failure_reason(tc, header, store)[0] == "compile_failed:missing_header"
    assert failure_reason(tc, header, store, unresolved=["gone.h"])[0] == "compile_failed:generated_header"


def test_the_fatbin_span_goes_from_its_section_line_through_the_next_text_line():
    from toolchains.nvidia import strip_fatbin

    host = (b"\t.text\nmain:\n\tret\n\t.section\t.nv_fatbin,\"a\"\n\t.quad 0x1\n\t.ascii \".text\"\n\t.text\n"
            b"after:\n  .section .nv_fatbin\n.byte 2\n.text  \nlast:\n")
    assert strip_fatbin(host) == b"\t.text\nmain:\n\tret\nafter:\nlast:\n"   # both sections, quoted .text kept going
    assert strip_fatbin(b"a:\n.section .nv_fatbin\n.byte 1\n") == b"a:\n"   # no .text after it: to the end
    assert strip_fatbin(b".section .nv_fatbinary\n.text\n") == b".section .nv_fatbinary\n.text\n"   # another name
    assert strip_fatbin(b"no fatbin\n") == b"no fatbin\n"


@pytest.mark.slow
def test_hip_nvidia_headers_are_installed_again_only_where_they_came_from_another_package(tmp_path):
    """setup's step for HIP on NVIDIA (from Debian's archive): every header folder from its Debian package, each with
    a record of the suite and package beside it; run again, nothing is fetched; a folder another suite's package put
    there (trixie's hipBLAS 0.54, as before hipBLAS followed the AMD root) is replaced, and so is one without a record
    (installed before records were kept), and only those."""
    from toolchains.hip_nvidia import LIBRARY_PACKAGES, install_hip_headers

    mirror = os.environ.get("CASS_DEBIAN_MIRROR", "http://deb.debian.org/debian")
    hip = tmp_path / "hip"
    first = install_hip_headers(hip, mirror)
    assert set(first) == {"libamdhip64-dev", *(package for _, package, _ in LIBRARY_PACKAGES)}
    assert (hip / "nvidia_detail").is_dir() and (tmp_path / "hipblas-common/hipblas-common.h").is_file()
    assert "#define hipblasVersionMajor 3" in (tmp_path / "hipblas/hipblas-version.h").read_text()
    assert (tmp_path / ".hipblas.source").read_text() == "experimental libhipblas-dev\n"   # beside, not inside
    assert not list(tmp_path.glob("*/.*.source"))
    assert install_hip_headers(hip, mirror) == {}
    (tmp_path / ".hipblas.source").write_text("trixie libhipblas-dev\n")
    (tmp_path / "hipblas/hipblas-version.h").write_text("#define hipblasVersionMajor 0\n")
    (tmp_path / ".hipsparse.source").unlink()
    assert sorted(install_hip_headers(hip, mirror)) == ["libhipblas-dev", "libhipsparse-dev"]
    assert "#define hipblasVersionMajor 3" in (tmp_path / "hipblas/hipblas-version.h").read_text()
    assert install_hip_headers(hip, mirror) == {}


def test_hip_include_folders_differ_where_a_library_folder_does_and_a_damaged_link_is_made_again(tmp_path, monkeypatch):
    """The folder nvcc sees HIP's headers through: one per set of folders its links point to, so two toolchains whose
    hipBLAS lies elsewhere never share (nor re-point) one; a link changed by hand points back."""
    from toolchains.hip_nvidia import hip_include_dir

    monkeypatch.setenv("CASS_CACHE", str(tmp_path / "cache"))
    hip, old, new = (tmp_path / name for name in ("hip", "old/hipblas", "new/hipblas"))
    for folder in (hip, old, new):
        folder.mkdir(parents=True)
    first, second = hip_include_dir(hip, [old]), hip_include_dir(hip, [new])
    assert first != second and hip_include_dir(hip, [old]) == first
    assert (first / "hipblas").readlink() == old and (second / "hipblas").readlink() == new
    assert (first / "hip").readlink() == hip == (second / "hip").readlink()
    (first / "hipblas").unlink()
    (first / "hipblas").symlink_to(new)
    assert hip_include_dir(hip, [old]) == first and (first / "hipblas").readlink() == old
