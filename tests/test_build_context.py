"""Files compiled as their own build compiles them: Makefile flags, CMake's compile database and generated headers,
and each program of a collection as its own include root."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO
from test_ingest import INGEST_PARAMS, KERNEL, write
from test_settle import StandIn

from cass.engine.actions import ActionRunner
from cass.engine.stage_work import LocalWork
from cass.engine.targets import TargetRun, run_targets
from cass.pipeline.context import load_params
from cass.pipeline.manifests import StageOutput
from cass.sources import build_context
from cass.sources.build_context import BuildContext, BuildContexts, tree_folders
from cass.sources.includes import TreeIndex, resolve_includes
from cass.sources.ingest import Ingest
from store import Store, tracking
from toolchains import local_executor
from toolchains.configure import CMakeConfigure
from toolchains.sandbox import Sandbox

HECBENCH_LIKE = {
    "include/common.h": "#define SHARED 1\n",
    "aes-cuda/Makefile": (
        "CC = nvcc\nDEBUG = no\nARCH = sm_60\n"
        "CFLAGS := $(EXTRA_CFLAGS) -std=c++14 -Xcompiler -Wall -arch=$(ARCH) -I../include -I/opt/x/include \\\n"
        "  -DBLOCK=256 --extended-lambda\n"
        "ifeq ($(DEBUG),yes)\n  CFLAGS += -g -DDEBUG\nelse\n  CFLAGS += -DQUIET\nendif\n"
        "program = main\n$(program): main.o\n\t$(CC) $(CFLAGS) main.o -o $@\n"
        "%.o: %.cu Makefile\n\t$(CC) $(CFLAGS) -c $< -o $@\n"),
    "aes-cuda/main.cu": '#include "common.h"\n#include "kernels.h"\n#include <helper.h>\n' + KERNEL,
    "aes-cuda/kernels.h": "\n",
    "bfs-cuda/Makefile": "main: main.cu\n\tnvcc -DOTHER main.cu -o main\n",
    "bfs-cuda/helper.h": "#define NOT_OURS 1\n",
    "bfs-cuda/main.cu": KERNEL,
}


def ingest(root: Path, store: Store, **tree) -> tuple[list[dict], Ingest]:
    ingest = Ingest(store, INGEST_PARAMS, StageOutput("ingest"))
    ingest.tree(root, "t", [".cu"], **tree)
    return ingest.rows, ingest


def test_a_makefile_gives_its_defines_switches_and_include_folders(tmp_path):
    """The recipes that run nvcc give -D, nvcc's language switches, -std and the -I folders inside the tree, with
    the Makefile's conditionals followed (DEBUG is no: -DQUIET, never -DDEBUG); arches, warnings, host flags and
    folders outside the tree are not taken."""
    rows, _ = ingest(write(tmp_path / "src", HECBENCH_LIKE), Store(tmp_path / "store"))
    aes = next(r for r in rows if r["path"] == "aes-cuda/main.cu")
    assert aes["build_context"] == "makefile:aes-cuda/Makefile"
    assert aes["build_flags"] == ["-std=c++14", "-DBLOCK=256", "--extended-lambda", "-DQUIET"]
    assert aes["include_dirs"] == ["include", "aes-cuda"]
    assert [f["path"] for f in aes["files"]] == ["aes-cuda/main.cu", "aes-cuda/kernels.h", "include/common.h"]


VARIANTS = {
    "lib/gpu/Makefile.cuda": ("NVCC = nvcc\nPRECISION = -D_SINGLE_DOUBLE\nCUDA = $(NVCC) -DUNIX $(PRECISION) -I../inc\n"
                              "%.cubin: %.cu\n\t$(CUDA) --fatbin -DNV_KERNEL -o $@ $<\n"),
    "lib/gpu/Makefile.cuda_mps": ("CUDA = nvcc -DUNIX -D_DOUBLE_DOUBLE -I../inc -DCUDA_MPS_SUPPORT\n"
                                  "%.cubin: %.cu\n\t$(CUDA) --fatbin -DNV_KERNEL -o $@ $<\n"),
    "lib/gpu/Makefile.hip": "%.o: %.cu\n\thipcc -DUSE_HIP -c $<\n",          # runs no nvcc
    "lib/gpu/Makefile.am": "k.o: k.cu\n\tnvcc -DFROM_AUTOMAKE -c $<\n",     # a template, not a variant
    "lib/gpu/Makefile.in": "k.o: k.cu\n\tnvcc -DFROM_AUTOCONF -c $<\n",     # nor this one
    "lib/gpu/Makefile.inc": "k.o: k.cu\n\tnvcc -DFRAGMENT -c $<\n",         # an included fragment
    "lib/gpu/Makefile.cuda.orig": "k.o: k.cu\n\tnvcc -DLEFTOVER -c $<\n",   # a patch's leftover
    "lib/gpu/Makefile.linux": "NVCC = nvcc\ninclude Nvidia.makefile\n",      # its recipes are in another file
    "lib/gpu/k.cu": KERNEL,
    "lib/inc/k.h": "\n",
    "tools/Makefile": "all:\n\tnvcc -DTOOLS -c sub/t.cu\n",
    "tools/sub/Makefile.inc": "FLAGS = -DNEVER_USED\n",                      # no recipe: the search goes on
    "tools/sub/t.cu": KERNEL,
    "apps/Makefile": "all:\n\tnvcc -DAPPS -c x/a.cu\n",
    "apps/x/Makefile": "all:\n\tg++ -c main.cpp\n",                           # runs no nvcc: the search stops here
    "apps/x/Makefile.cuda": "all:\n\tnvcc -DNOT_TAKEN -c a.cu\n",
    "apps/x/a.cu": KERNEL,
}


def test_makefile_variants_give_the_flags_every_cuda_variant_passes(tmp_path):
    """A folder of Makefile variants and no Makefile (a build that asks the user to pick one): the flags all the
    variants running nvcc pass, not one variant's choice (its precision, an extra switch); a variant running hipcc,
    templates, a fragment, a leftover and a variant whose recipes lie in another file say nothing; a folder whose
    variants run no nvcc is passed over for the Makefile above it; a folder's own Makefile is read as before."""
    rows, _ = ingest(write(tmp_path / "src", VARIANTS), Store(tmp_path / "store"))
    by_path = {r["path"]: r for r in rows}
    k = by_path["lib/gpu/k.cu"]
    assert k["build_context"] == "makefile:lib/gpu/Makefile.cuda,lib/gpu/Makefile.cuda_mps"
    assert k["build_flags"] == ["-DUNIX", "-DNV_KERNEL"]
    assert k["include_dirs"][0] == "lib/inc"   # -I../inc, found from the variants' folder
    t = by_path["tools/sub/t.cu"]
    assert (t["build_context"], t["build_flags"]) == ("makefile:tools/Makefile", ["-DTOOLS"])
    a = by_path["apps/x/a.cu"]   # a folder's own Makefile wins over its variants, and stops the search as before
    assert (a["build_context"], a["build_flags"]) == ("standalone", [])


def test_each_program_of_a_collection_is_its_own_include_root(tmp_path):
    """A benchmark never takes another benchmark's header (bfs-cuda/helper.h for aes-cuda's <helper.h>); a tree whose
    root has a build file is one project, where the same include is found."""
    root = write(tmp_path / "src", HECBENCH_LIKE)
    aes = resolve_includes(TreeIndex.scan(root), "aes-cuda/main.cu")
    assert aes.headers == ["aes-cuda/kernels.h"] and aes.unresolved == ["common.h"]   # <helper.h>: a system one
    assert resolve_includes(TreeIndex.scan(root), "aes-cuda/main.cu", ["include"]).headers == [
        "aes-cuda/kernels.h", "include/common.h"]   # the folder the build names (-I../include)
    assert resolve_includes(TreeIndex.scan(root, projects=False), "aes-cuda/main.cu").headers == [
        "aes-cuda/kernels.h", "bfs-cuda/helper.h", "include/common.h"]   # one project: the other's header taken
    write(root, {"CMakeLists.txt": "project(all)\n"})
    assert "bfs-cuda/helper.h" in resolve_includes(TreeIndex.scan(root), "aes-cuda/main.cu").headers


def test_the_pipelines_flags_keep_their_standard_unless_the_build_asks_for_a_newer_one(toolchains):
    nvidia, amd = toolchains["nvidia"], toolchains["amd"]
    common = ["-std=c++17", "-DNDEBUG", "-w"]
    assert nvidia.build_flags(common, ["-std=c++14", "-DB=1", "--extended-lambda"]) == [*common, "-DB=1",
                                                                                       "--extended-lambda"]
    assert amd.build_flags(common, ["-DB=1", "--expt-relaxed-constexpr"]) == [*common, "-DB=1"]
    assert amd.build_flags(common, ["-std=c++20"]) == ["-DNDEBUG", "-w", "-std=c++20"]


CMAKE_PROJECT = {
    "CMakeLists.txt": (
        "cmake_minimum_required(VERSION 3.18)\nproject(demo LANGUAGES CXX CUDA)\nset(SCALE 3)\n"
        "configure_file(src/config.h.in ${CMAKE_BINARY_DIR}/generated/demo/config.h)\n"
        "configure_file(include/demo/version.h.in ${CMAKE_SOURCE_DIR}/include/demo/version.h)\n"
        "add_executable(demo src/scale.cu)\n"
        "target_compile_definitions(demo PRIVATE BLOCK=128)\n"
        "target_include_directories(demo PRIVATE ${CMAKE_BINARY_DIR}/generated include)\n"),
    "src/config.h.in": "#define DEMO_SCALE @SCALE@\n",
    "include/demo/util.h": "#define UTIL 1\n", "include/demo/version.h.in": "#define VERSION @SCALE@\n",
    "src/scale.cu": ('#include <demo/config.h>\n#include <demo/util.h>\n#include <demo/version.h>\n'
                     "__global__ void scale(float *x) { x[threadIdx.x] *= DEMO_SCALE * BLOCK * UTIL * VERSION; }\n"),
    "tools/loose.cu": '#include <demo/config.h>\n__global__ void loose(int *x) { x[0] = DEMO_SCALE; }\n',
}


@pytest.mark.slow
def test_a_cmake_project_compiles_on_both_sides_with_its_generated_header_and_define(tmp_path, toolchains, store,
                                                                                     monkeypatch):
    """CMake configures the tree in the sandbox: the file it compiles gets BLOCK=128 and the header configure_file
    wrote (which exists nowhere in the tree); nvcc and hipcc, real ones, compile it; without the context it does not
    compile. A file CMake compiles nowhere gets the written headers; the configure is a cached action."""
    root = write(tmp_path / "demo", CMAKE_PROJECT)
    rows, made = ingest(root, store)
    by_path = {r["path"]: r for r in rows}
    scale = by_path["src/scale.cu"]
    assert scale["build_context"] == "cmake:."
    assert scale["build_flags"] == ["-DBLOCK=128", "-std=c++17"]   # CMake's -std for CUDA 17
    assert scale["include_dirs"] == ["_cass_build/generated", "include", "."]

    laid = {f["path"]: store.get_text(f["digest"]) for f in scale["files"]}
    assert laid["_cass_build/generated/demo/config.h"] == "#define DEMO_SCALE 3\n"
    assert laid["include/demo/version.h"] == "#define VERSION 3\n"   # written beside its template, in the copy
    assert not (root / "include/demo/version.h").exists()   # the tree itself is never written
    assert by_path["tools/loose.cu"]["build_context"] == "cmake-headers:."
    assert "_cass_build/generated/demo/config.h" in [f["path"] for f in by_path["tools/loose.cu"]["files"]]
    assert [(s["status"], s["files"], s["headers"]) for s in made.build_statuses] == [("ok", 1, 2)]

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    inputs = {f["path"]: f["digest"] for f in scale["files"]}
    for vendor in ("nvidia", "amd"):
        tc = toolchains[vendor]
        vflags = {**params[vendor]["flags"], "archs": None}
        arch = params[vendor]["archs"][:1]
        runs = []
        for build_flags, dirs in ((scale["build_flags"], scale["include_dirs"]), ([], ["."])):
            flags = {**vflags, "common": tc.build_flags(params[vendor]["flags"]["common"], build_flags)}
            host = next(t for t in tc.targets("src/scale.cu", arch, flags, dirs) if t.kind == "host")
            runs.append(TargetRun(host, inputs))
        run_targets(tc, ActionRunner(store, local_executor({vendor: tc}), 300), runs)
        assert runs[0].failure is None, (vendor, runs[0].failure)
        assert runs[1].failure is not None   # stand-alone: demo/config.h is nowhere, BLOCK undefined

    def refuse(*_):
        raise AssertionError("configured again: the step's record was not taken from the store")

    monkeypatch.setattr(CMakeConfigure, "configure", refuse)
    again = BuildContexts(TreeIndex.scan(root), store, INGEST_PARAMS["build_context"], {}, "again")
    again.prepare(["src/scale.cu"])
    assert again.of("src/scale.cu") == BuildContext("cmake:.", tuple(scale["build_flags"]),
                                                    ("_cass_build/generated", "include"))


def test_a_program_of_a_cmake_project_gets_its_run_spec_and_a_subfolder_stays_in_the_project(tmp_path, store):
    """A CMake project in a collection (no build file at the tree's root), with a subfolder of its own CMakeLists:
    the project is the outermost folder (its headers are found from the subfolder), it is configured there, and a
    file with a main gets its run spec beside the headers the configure wrote."""
    root = write(tmp_path / "collection", {
        "proj/CMakeLists.txt": "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES CXX CUDA)\n"
                               "configure_file(gen.h.in ${CMAKE_BINARY_DIR}/gen.h)\nadd_subdirectory(src)\n",
        "proj/gen.h.in": "#define GEN 1\n", "proj/include/util.h": "#define UTIL 1\n",
        "proj/src/CMakeLists.txt": "add_executable(app app.cu)\n",
        "proj/src/app.cu": "#include <util.h>\n#include <gen.h>\n" + KERNEL + "int main() { return GEN - UTIL; }\n",
        "other/Makefile": "all:\n\tnvcc -DOTHER k.cu\n", "other/k.cu": KERNEL})
    rows, made = ingest(root, store)
    app = next(r for r in rows if r["path"] == "proj/src/app.cu")
    assert TreeIndex.scan(root).project_of("proj/src/app.cu") == "proj"
    assert app["build_context"] == "cmake:proj"   # add_subdirectory's target, configured from the project's root
    assert [f["path"] for f in app["files"]] == ["proj/src/app.cu", "proj/_cass_build/gen.h", "proj/include/util.h"]
    assert app["include_dirs"] == ["proj/include", "proj/_cass_build", "proj"]   # found from src/, in the project
    assert app["run_spec"] is not None and [s["status"] for s in made.build_statuses] == ["ok"]


def test_a_configure_that_fails_leaves_its_files_stand_alone_with_its_log(tmp_path, store, monkeypatch):
    root = write(tmp_path / "broken", {"CMakeLists.txt": "project(x LANGUAGES CXX)\nmessage(FATAL_ERROR \"nope\")\n",
                                       "k.cu": KERNEL})
    rows, made = ingest(root, store)
    assert [r["build_context"] for r in rows] == ["standalone"]
    [status] = made.build_statuses
    assert status["status"] == "failed" and status["exit_code"] != 0
    assert "nope" in store.get_text(status["log"])

    monkeypatch.setattr(build_context, "detect", Sandbox.weak)   # without bubblewrap the tree's CMake never runs
    monkeypatch.setattr(CMakeConfigure, "configure", lambda *_: pytest.fail("CMake ran outside the sandbox"))
    rows, made = ingest(write(tmp_path / "other", CMAKE_PROJECT), store)
    assert {r["build_context"] for r in rows} == {"standalone"}
    assert [s["status"] for s in made.build_statuses] == ["no sandbox"]


def test_a_file_no_compile_command_lists_gets_the_nvcc_switches_its_cmake_files_name(tmp_path, store):
    """Where the project's configure fails, its CUDA files still get the nvcc language switches its CMake files name
    (a module's generator expression, a list), and nothing that only looks like one; outside a CMake project, a
    switch named in another file gives nothing."""
    rows, _ = ingest(write(tmp_path / "broken", {
        "CMakeLists.txt": "project(x LANGUAGES CXX)\ninclude(cmake/Utils.cmake)\nmessage(FATAL_ERROR \"nope\")\n",
        "cmake/Utils.cmake": "target_compile_options(x PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-extended-lambda>)\n"
                             "set(NOT_ONE \"--extended-lambda-off\")\n"
                             "list(APPEND F \"--expt-relaxed-constexpr\")\n",
        "src/k.cu": KERNEL}), store)
    assert [(r["build_context"], r["build_flags"]) for r in rows] == [
        ("standalone", ["--expt-extended-lambda", "--expt-relaxed-constexpr"])]
    rows, _ = ingest(write(tmp_path / "plain", {"cmake/flags.cmake": "set(F --extended-lambda)\n", "k.cu": KERNEL}),
                     store)   # a CMake module, but no CMakeLists.txt: no CMake project
    assert [(r["build_context"], r["build_flags"]) for r in rows] == [("standalone", [])]


def test_tree_folders_holds_every_parent():
    assert tree_folders(["a/b/c.h", "d.h"]) == {".", "a", "a/b"}


HIP_PAIRS = {
    "portable.cu": ("#include <hip/hip_runtime.h>\n__global__ void k(float *x) { x[threadIdx.x] *= BLOCK; }\n"
                    "int launch(float *x) { hipLaunchKernelGGL(k, dim3(1), dim3(32), 0, 0, x); "
                    "return hipDeviceSynchronize(); }\n"),
    "amd_only.cu": ("#include <hip/hip_runtime.h>\n"   # a macro only the AMD platform defines
                    "__global__ void k(int *x) { x[threadIdx.x] = __AMDGCN_WAVEFRONT_SIZE; }\n"),
    "kernel.cl": "__kernel void k(__global float *x) { x[get_global_id(0)] = 1.0f; }\n",
    "libraries.cu": ("#include <hip/hip_runtime.h>\n#include <hipblas.h>\n#include <hipsparse.h>\n"   # hipify's names
                     "#include <hipfft/hipfft.h>\n#include <hipcub/hipcub.hpp>\n#include <hiprand/hiprand_kernel.h>\n"
                     "__global__ void k(float *x) { typedef hipcub::BlockReduce<float, 32> R;\n"
                     "  __shared__ typename R::TempStorage t; float s = R(t).Sum(x[threadIdx.x]);\n"
                     "  hiprandState_t r; hiprand_init(7, threadIdx.x, 0, &r); s += hiprand_uniform(&r);\n"
                     "  if (threadIdx.x == 0) x[0] = s; }\n"
                     "int use(float *x) { hipblasHandle_t b; hipsparseHandle_t s; hipfftHandle f;\n"
                     "  return hipblasCreate(&b) + hipsparseCreate(&s) + hipfftPlan1d(&f, 8, HIPFFT_C2C, 1)"
                     " + hipblasSscal(b, 4, x, 1)"   # one argument short: wrong
                     " + hipblasDotEx(b, 4, x, HIP_R_32F, 1, x, HIP_R_32F, 1, x, HIP_R_32F, HIP_R_32F)"   # v2 API
                     " + hipblasGemmEx(b, HIPBLAS_OP_N, HIPBLAS_OP_N, 2, 2, 2, x, x, HIP_R_32F, 2, x, HIP_R_32F, 2, x,"
                     " x, HIP_R_32F, 2, HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT); }\n"),
}


@pytest.mark.slow
def test_a_pair_that_builds_for_amd_only_is_told_apart(store):
    """The HIP side compiled through HIP's NVIDIA back end as the execute stage builds it, with the pair's own build
    flags (BLOCK comes from its Makefile), settled by the engine's two passes: a translation using an AMD-only macro
    fails there with its error; one using hipBLAS, hipSPARSE, hipFFT, hipCUB and hipRAND's device API finds their
    headers there (hipRAND's include cuRAND's, hipBLAS's cuBLAS's), with the v2 API hipify-perl 7 writes for cuBLAS
    (``hipDataType``, ``hipblasComputeType_t``; hipBLAS 3, as on the AMD side), and fails only on a wrong call; an
    OpenCL pair has no HIP side and is not checked."""
    from cass.execution.programs import hip_nvidia_checks

    params = load_params(REPO / "params.yaml")
    stage = StandIn("pair", {**params, "executor": {**params["executor"], "workers": 1}}, store, LocalWork(1))
    rows = [{"sample_id": name, "hip_files": [{"path": name, "digest": store.put_text(text)}], "include_dirs": ["."],
             "build_flags": ["-DBLOCK=4"] if name == "portable.cu" else [], "nvidia_toolchain": "nvidia",
             "amd_toolchain": "amd"}
            for name, text in HIP_PAIRS.items()]

    def check(rows: list[dict]) -> tuple[dict[str, tuple[str, str]], dict]:
        out = StageOutput("pair", rows_in=len(rows))
        return hip_nvidia_checks(stage, out, pl.DataFrame(rows)), out.run["actions"]

    with tracking() as used:
        verdicts, counts = check(rows)
    assert set(verdicts) == {"portable.cu", "amd_only.cu", "libraries.cu"} and len(used) == 3
    assert counts["misses"] == counts["jobs_sent"] == 3
    assert verdicts["portable.cu"] == ("ok", "")
    category, error = verdicts["libraries.cu"]   # the libraries' headers are there: only the one wrong call fails
    assert "hipblasSscal" in error and "No such file" not in error, error
    category, error = verdicts["amd_only.cu"]
    assert category == "undeclared" and "__AMDGCN_WAVEFRONT_SIZE" in error
    without = [{**row, "build_flags": []} for row in rows[:1]]   # the build's define is what makes it compile
    assert check(without)[0]["portable.cu"][0] != "ok"
    again, counts = check(rows)
    assert again == verdicts and counts["hits"] == 3 and counts["jobs_sent"] == 0   # cached: nothing ran again
    fixed = [{**row, "hip_files": [{"path": "libraries.cu", "digest": store.put_text(
        HIP_PAIRS["libraries.cu"].replace("hipblasSscal(b, 4, x, 1)", "hipblasSscal(b, 4, x, x, 1)"))}]}
        for row in rows if row["sample_id"] == "libraries.cu"]
    assert check(fixed)[0]["libraries.cu"] == ("ok", "")
