"""CUDA-to-HIP name tables derived from the toolchains: header facts, the derivation on small trees,
and the real toolchains' tables (every CUDA header hipify-perl maps is covered)."""

from __future__ import annotations

from pathlib import Path

from cass.translate.names import (
    CudaHipNames,
    HeaderIndex,
    cached_names,
    derive,
    is_version_name,
    runtime_overloads,
    toolchain_names,
)
from toolchains import load_hip_nvidia
from toolchains.amd import COOPERATIVE_GROUPS_FUNCTIONS
from toolchains.headers import device_definitions, index_headers, parameter_types, parse_header
from toolchains.hip_nvidia import platform_typedefs


def test_a_header_says_its_guard_markers_unconditional_macros_and_includes():
    facts = parse_header("""/* licence */
#if !defined(LIB_H_)   // the guard
#define LIB_H_
#include "lib_api.h"
#include <vector_types.h>
#define LIB_VERSION (LIB_MAJOR * 1000)
#ifndef LIBAPI
#ifdef _WIN32
#define LIBAPI __stdcall
#else
#define LIBAPI
#endif
#endif
#define LIB_MAX(a, b) ((a) > (b) ? (a) : (b))
#define LIB_LONG \\
    42
#endif
""")
    assert facts["guard"] == "LIB_H_"
    assert facts["objects"] == {"LIB_H_": "", "LIB_VERSION": "(LIB_MAJOR * 1000)", "LIBAPI": "__stdcall",
                                "LIB_LONG": "42"}
    assert facts["unconditional"] == ["LIB_H_", "LIB_VERSION", "LIB_LONG"]
    assert facts["empty"] == ["LIBAPI", "LIB_H_"] and facts["functions"] == ["LIB_MAX"]
    assert facts["includes"] == [["lib_api.h", True], ["vector_types.h", False]]
    assert parse_header("#pragma once\n#define X 1\n")["guard"] is None


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def guarded(guard: str, body: str = "") -> str:
    return f"#ifndef {guard}\n#define {guard}\n{body}#endif\n"


def test_tables_are_derived_from_the_headers_of_both_sides_and_hipifys_map(tmp_path):
    cuda = write(tmp_path / "cuda", {
        "cuda_runtime.h": guarded("__CUDA_RUNTIME_H__", '#include "driver_types.h"\n#include "crt/host.h"\n'),
        "driver_types.h": guarded("__DRIVER_TYPES_H__"),
        "crt/host.h": guarded("__HOST_H__"),
        "cusparse.h": guarded("CUSPARSE_H_", "#define CUSPARSE_VER_MAJOR 12\n#define CUSPARSE_VERSION "
                                             "(CUSPARSE_VER_MAJOR * 1000)\n#define CUSPARSEAPI\n"),
        "math_constants.h": guarded("__MATH_CONSTANTS_H__", "#define CUDART_PI_F 3.141592654F\n"
                                                              "#define CUDART_ONE_F 1.0F\n"),
        "cub/cub.cuh": '#include "block/reduce.cuh"\n',
        "cub/block/reduce.cuh": guarded("CUB_REDUCE_CUH"),
    })
    hip = write(tmp_path / "hip", {
        "hip/hip_runtime.h": guarded("HIP_RUNTIME_H", '#include "driver_types.h"\n'),
        "hip/driver_types.h": guarded("HIP_DRIVER_TYPES_H"),
        "hipsparse/hipsparse.h": guarded("HIPSPARSE_H"),
        "hip/hip_math_constants.h": guarded("HIP_MATH_CONSTANTS_H", "#define HIP_PI_F 3.141592654F\n"
                                                                    "#define HIP_ONE_F 1.0f\n"),
        "hipcub/hipcub.hpp": guarded("HIPCUB_HPP_"),
    })
    hipify = {"cuda_runtime.h": "hip/hip_runtime.h", "driver_types.h": "hip/driver_types.h",
              "cusparse.h": "hipsparse.h", "cub/cub.cuh": "hipcub/hipcub.hpp", "cudnn.h": "hipDNN.h"}
    predefined = {"__CUDACC_VER_MAJOR__": "13", "__CUDACC__": "1", "__NVCC__": "1", "__NVCC_DIAG_PRAGMA_SUPPORT__": "1",
                  "__CUDA_ARCH__": "750"}
    names = derive({"headers": index_headers([cuda], files(cuda)), "predefined": predefined},
                   {"headers": index_headers([hip, hip / "hipsparse"], files(hip)), "hipify": hipify,
                    "hipify_names": {"__CUDACC__": "__HIPCC__", "__CUB_ALIGN_BYTES": "__HIPCUB_ALIGN_BYTES",
                                     "cudaMalloc": "hipMalloc", "__half": "__half"}})
    assert names.compiler == {"__NVCC__": "__HIPCC__"}   # which compiler; not a feature flag, not a hipify-mapped one
    assert names.hipified_macros == ["__HIPCC__", "__HIPCUB_ALIGN_BYTES"]
    assert names.presence == {
        "__CUDA_RUNTIME_H__": "HIP_RUNTIME_H", "__DRIVER_TYPES_H__": "HIP_DRIVER_TYPES_H",  # hipify-perl's map
        "CUSPARSE_H_": "HIPSPARSE_H", "CUSPARSEAPI": "HIPSPARSE_H",    # a library-named empty marker
        "__MATH_CONSTANTS_H__": "HIP_MATH_CONSTANTS_H",                # by HIP's naming
        "CUB_REDUCE_CUH": "HIPCUB_HPP_"}                               # the header of its folder
    assert "__HOST_H__" not in names.presence   # crt/ has no mapped header of its own folder
    assert names.headers == {"math_constants.h": "hip/hip_math_constants.h",
                             "cub/block/reduce.cuh": "hipcub/hipcub.hpp"}
    assert names.versions == {"CUSPARSE_VER_MAJOR": "12", "CUSPARSE_VERSION": "((12) * 1000)",
                              "__CUDACC_VER_MAJOR__": "13"}
    assert names.constants == {"CUDART_PI_F": "HIP_PI_F"}   # 1.0F and 1.0f are not the same definition
    assert names.uncovered == {"cub/cub.cuh": "cub/cub.cuh has no include guard"}
    assert names.covered == ["cuda_runtime.h", "cusparse.h", "driver_types.h"]   # cudnn.h: not on the NVIDIA side


def test_version_names_are_told_by_their_parts():
    assert all(map(is_version_name, ["CUDA_VERSION", "CUBLAS_VER_MAJOR", "__CUDACC_VER_MINOR__", "CUSPARSE_VERSION"]))
    assert not any(map(is_version_name, ["CUFFT_INVERSE", "CU_MEM_OVER_PCIE", "SERVER_PORT"]))


def test_derived_tables_are_computed_once_per_key(tmp_path, monkeypatch):
    monkeypatch.setenv("CASS_CACHE", str(tmp_path))
    calls = []

    def compute() -> CudaHipNames:
        calls.append(1)
        return CudaHipNames(presence={"A_H": "HIP_A_H"})

    first = cached_names({"nvcc": "1", "hipcc": "2"}, compute)
    assert cached_names({"nvcc": "1", "hipcc": "2"}, compute) == first and len(calls) == 1
    assert cached_names({"nvcc": "1", "hipcc": "3"}, compute).digest == first.digest and len(calls) == 2


def test_the_real_toolchains_cover_every_cuda_header_hipify_perl_maps(toolchains):
    nvidia, amd = toolchains["nvidia"], toolchains["amd"]
    names = toolchain_names(nvidia, amd, load_hip_nvidia())
    # hipify-perl's names HIP's NVIDIA platform declares as typedefs; a tag only AMD has is none of them
    assert {"hipMemcpyKind", "hipChannelFormatDesc", "hipExtent"} <= set(names.nvidia_typedefs)
    assert "ihipStream_t" not in names.nvidia_typedefs
    assert names.cooperative_groups == ["reduce"]   # no HIP up to 7.2 has cooperative_groups::reduce
    cuda = nvidia.header_index()["headers"]
    hip_index = HeaderIndex(amd.header_index()["headers"])
    hip = {alias for facts in amd.header_index()["headers"].values() for alias in facts["names"]}
    for cuda_name, hip_name in names.hipify_headers.items():
        if cuda_name not in cuda:
            continue   # a library the NVIDIA side does not install (cuDNN, NVRTC)
        if hip_name not in hip or cuda[cuda_name]["guard"] is None or hip_index.presence_macro(hip_name) is None:
            assert cuda_name in names.uncovered, cuda_name
        else:   # its guard stands for the guard of the HIP header hipify-perl puts in its place
            assert names.presence.get(cuda[cuda_name]["guard"]) == hip_index.presence_macro(hip_name), cuda_name
            assert cuda_name in names.covered
    assert len(names.covered) >= 20
    if amd.hip_version()[:2] == (5, 7):   # the trixie root: what it cannot cover, and why
        assert names.uncovered == {"cub/cub.cuh": "cub/cub.cuh has no include guard",
                                   "device_functions.h": "device_functions.h has no include guard",
                                   "nvrtc.h": "hipify-perl maps it to hiprtc.h, not on the AMD include path"}
    # guards the former hand-written table of 16 entries lacked
    assert names.presence["__DRIVER_TYPES_H__"] == "HIP_INCLUDE_HIP_DRIVER_TYPES_H"
    assert names.presence["__VECTOR_TYPES_H__"] == "HIP_INCLUDE_HIP_HIP_VECTOR_TYPES_H"
    assert names.presence["CUSPARSEAPI"] == "HIPSPARSE_H"
    major, minor = nvidia.cuda_version()
    assert names.versions["CUDA_VERSION"] == names.versions["CUDART_VERSION"] == str(major * 1000 + minor * 10)
    assert names.versions["__CUDACC_VER_MAJOR__"] == str(major)
    assert names.constants.get("CUDART_PI_F") == "HIP_PI_F" or "math_constants.h" in names.hipify_headers
    # CUDA's C++ runtime overloads HIP has no overload for; hipMalloc has HIP's own template
    assert names.overloads["hipEventCreate"]["2"]["target"] == "hipEventCreateWithFlags"
    assert names.overloads["hipFuncSetAttribute"]["3"]["args"][0] == "(const void*)func"
    assert "hipMalloc" not in names.overloads
    # a typed pointer's hipMallocAsync: a template on AMD, not on HIP's NVIDIA platform
    assert names.overloads["hipMallocAsync"]["3"]["args"] == ["(void**)(void*)ptr", "size", "stream"]


def test_a_header_hipify_perl_leaves_maps_to_the_one_declaring_what_hipify_perl_maps_its_names_to(tmp_path):
    # hipify-perl 6.0 maps __nv_bfloat16 to hip_bfloat16, which hip/hip_bfloat16.h declares, not hip/hip_bf16.h
    cuda = write(tmp_path / "cuda", {"cuda_bf16.h": guarded("__CUDA_BF16_H__", "struct __nv_bfloat16 {};\n")})
    hip = write(tmp_path / "hip", {
        "hip/hip_bf16.h": guarded("HIP_BF16_H", "struct __hip_bfloat16 {};\n"),
        "hip/hip_bfloat16.h": guarded("HIP_BFLOAT16_H", '#include "amd_detail/bf16.h"\n'),
        "hip/amd_detail/bf16.h": "struct hip_bfloat16 {};\n",
    })
    names = {"__nv_bfloat16": "hip_bfloat16", "__CUDACC__": "__HIPCC__"}
    index = {"headers": index_headers([hip], files(hip), lambda _, n: n in names.values()), "hipify": {},
             "hipify_names": names}
    derived = derive({"headers": index_headers([cuda], files(cuda), lambda h, n: "/" not in h)}, index)
    assert derived.headers == {"cuda_bf16.h": "hip/hip_bfloat16.h"}
    assert derived.presence == {"__CUDA_BF16_H__": "HIP_BFLOAT16_H"}
    assert derived.nvidia_typedefs == []   # no HIP-on-NVIDIA headers given
    index["hipify_names"] = {"__nv_bfloat16": "__hip_bfloat16"}   # hipify-perl 7.0's name: HIP's naming holds
    assert derive({"headers": index_headers([cuda], files(cuda), lambda h, n: "/" not in h)},
                  index | {"headers": index_headers([hip], files(hip), lambda _, n: n == "__hip_bfloat16")}
                  ).headers == {"cuda_bf16.h": "hip/hip_bf16.h"}


def test_a_folder_belongs_to_the_mapped_header_named_like_it_that_includes_from_it(tmp_path):
    cuda = write(tmp_path / "cuda", {
        "cooperative_groups.h": guarded("_CG_H_", '#include "cooperative_groups/details/sync.h"\n'),
        "cooperative_groups/details/sync.h": guarded("_CG_SYNC_H_"),
        "cooperative_groups/reduce.h": guarded("_CG_REDUCE_H_"),   # not included by the umbrella header
        "cuda.h": guarded("__cuda_cuda_h__"), "cuda/barrier": "// libcu++: no part of cuda.h\n",
    })
    hip = write(tmp_path / "hip", {"hip/hip_cooperative_groups.h": guarded("HIP_CG_H"),
                                   "hip/hip_runtime.h": guarded("HIP_RUNTIME_H")})
    derived = derive({"headers": index_headers([cuda], files(cuda))},
                     {"headers": index_headers([hip], files(hip)), "hipify": {
                         "cooperative_groups.h": "hip/hip_cooperative_groups.h", "cuda.h": "hip/hip_runtime.h"}})
    assert derived.headers == {"cooperative_groups/details/sync.h": "hip/hip_cooperative_groups.h",
                               "cooperative_groups/reduce.h": "hip/hip_cooperative_groups.h"}
    assert derived.presence["_CG_REDUCE_H_"] == "HIP_CG_H"


def test_a_header_name_is_provided_by_a_path_that_is_it_or_ends_in_it_after_a_slash():
    names = CudaHipNames(headers={"cub/cub.cuh": "hipcub/hipcub.hpp", "math_constants.h": "hip/hip_math_constants.h",
                                  "cub.cuh": "hipcub/hipcub.hpp"})
    assert names.provided_by(["third_party/cub/cub.cuh"]) == {"cub/cub.cuh", "cub.cuh"}
    assert names.provided_by(["math_constants.h", "src/xcub/cub.cuh"]) == {"math_constants.h", "cub.cuh"}
    assert names.provided_by(["my_math_constants.h", "cub/cub.cuh.in"]) == frozenset()   # a name's tail is no match
    assert names.provided_by([]) == frozenset()
    renames = CudaHipNames(hipify_headers={"cuda.h": "hip/hip_runtime.h"})   # a path under a folder ending in one
    assert renames.provided_by(["src/util/cuda.h"]) == {"src/util/cuda.h", "util/cuda.h"}
    assert renames.provided_by(["cuda.h", "src/mycuda.h"]) == frozenset()


def test_nvidia_typedefs_are_hipify_perls_names_that_hips_nvidia_headers_declare_by_typedef(tmp_path):
    write(tmp_path / "hip", {"nvidia_detail/nvidia_hip_runtime_api.h": (
        "typedef enum cudaMemcpyKind hipMemcpyKind;\ntypedef struct cudaExtent\n  hipExtent;\n"
        "typedef struct hipOwn { int x; } hipOwn;\ntypedef void (*hipHostFn_t)(void *);\n"
        "typedef cudaStream_t hipStream_t;\n"), "hip_runtime_api.h": "typedef int hipNotNvidia;\n"})
    typedefs = platform_typedefs(tmp_path / "hip")
    assert typedefs == ["hipExtent", "hipMemcpyKind", "hipStream_t"]   # no body, no function type; nvidia_detail only
    hip = {"headers": {}, "hipify": {}, "hipify_names": {"cudaMemcpyKind": "hipMemcpyKind", "cudaExtent": "hipExtent",
                                                          "CUstream_st": "ihipStream_t"}}
    assert derive({"headers": {}}, hip, {"typedefs": typedefs}).nvidia_typedefs == ["hipExtent", "hipMemcpyKind"]


def test_an_overload_hips_nvidia_platform_lacks_is_rewritten_though_amd_has_it():
    cuda_fn = {"name": "cudaMallocAsync", "params": ["ptr", "size", "stream"], "required": 3, "defaults": [],
               "template": True, "target": "cudaMallocAsync", "args": ["(void**)(void*)ptr", "size", "stream"]}
    c_api = {**cuda_fn, "params": ["devPtr", "size", "hStream"], "template": False, "target": None, "args": None}
    cuda = HeaderIndex({"cuda_runtime.h": {"runtime": [cuda_fn]}, "cuda_runtime_api.h": {"runtime": [c_api]}})
    hip = HeaderIndex({"hip/hip_runtime_api.h": {"runtime": [{**c_api, "name": "hipMallocAsync"},
                                                             {**cuda_fn, "name": "hipMallocAsync"}]}})
    names = {"cudaMallocAsync": "hipMallocAsync"}
    assert runtime_overloads(cuda, hip, names) == {}   # AMD has its own template
    assert runtime_overloads(cuda, hip, names, [{**c_api, "name": "hipMallocAsync"}])["hipMallocAsync"]["3"] == {
        "target": "hipMallocAsync", "params": ["ptr", "size", "stream"], "required": 3, "defaults": [],
        "args": ["(void**)(void*)ptr", "size", "stream"]}
    both = [{**c_api, "name": "hipMallocAsync"}, {**cuda_fn, "name": "hipMallocAsync"}]
    assert runtime_overloads(cuda, hip, names, both) == {}   # both platforms have it


def test_reduce_is_lacking_where_hips_cooperative_groups_header_and_its_includes_never_name_it(tmp_path):
    detail = "namespace cooperative_groups { template <class T> T shfl(T v); }\n"
    lacking = {}
    for case, extra in (("without", "// a reduce in a comment is no declaration\n"),
                        ("with", "namespace cooperative_groups { template <class G, class T> T reduce(G, T); }\n")):
        hip = write(tmp_path / case, {"hip/hip_cooperative_groups.h": '#include "amd_detail/groups.h"\n',
                                      "hip/amd_detail/groups.h": detail + extra})
        headers = index_headers([hip], files(hip), lambda _, name: name in COOPERATIVE_GROUPS_FUNCTIONS)
        index = {"headers": headers, "hipify": {"cooperative_groups.h": "hip/hip_cooperative_groups.h"}}
        lacking[case] = derive({"headers": {}}, index).cooperative_groups
    assert lacking == {"without": ["reduce"], "with": []}
    assert derive({"headers": {}}, {"headers": headers}).cooperative_groups == []   # no HIP header for it: not asked


def test_parameter_types_are_a_functions_type_whatever_the_spelling():
    """Names, defaults, a parameter's own ``const`` and ``restrict`` do not count; qualifiers go first and builtin
    integer types take one spelling; an unnamed parameter of a typedef keeps its type; nothing fails on odd text."""
    assert parameter_types("float *addr, const float value = 0") == ("float*", "float")
    assert parameter_types("float* const __restrict__ p, float const *q, volatile float* v") == (
        "float*", "const float*", "volatile float*")
    assert parameter_types("unsigned *a, unsigned long long int b, long int c, signed short d, signed char e") == (
        "unsigned int*", "unsigned long long", "long", "short", "signed char")
    assert parameter_types("float x[], const uint32_t, std::size_t n") == ("float*", "uint32_t", "std::size_t")
    assert parameter_types("void") == () and parameter_types("") == ()
    assert parameter_types("1, ") == ("",)   # a call's arguments, not parameters: no failure


def test_device_definitions_are_the_file_scope_device_functions_with_bodies():
    """Of a preprocessed unit: device functions defined at file scope, by name and parameter types; host functions,
    declarations, templates, operators, members and line markers left out."""
    preprocessed = """# 1 "hip_runtime.h"
__attribute__((device)) inline float atomicMin(float* addr, float val) { return val; }
__attribute__((device)) inline int atomicMin(int* address, int val) {
  return val;
}
__attribute__((host)) __attribute__((device)) inline float max(float a, float b) { return a; }
inline float host_only(float a) { return a; }
__attribute__((device)) float declared(float a);
template <class T> __attribute__((device)) T generic(T a) { return a; }
__attribute__((device)) float2 operator*(float2 a, float2 b) { return a; }
struct S { __attribute__((device)) float member(float a) { return a; } };
namespace ns { __attribute__((device)) float inner(float a) { return a; } }
"""
    assert device_definitions(preprocessed) == {"atomicMin": [["float*", "float"], ["int*", "int"]],
                                                "max": [["float", "float"]]}
