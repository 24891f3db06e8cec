"""The post-HIPIFY repair rules: each with its before/after text for both HIP generations, the
cached action, and real hipify-perl + hipcc on code that fails without the rules."""

from __future__ import annotations

import random
import re
import subprocess
from dataclasses import replace

import pytest
from harness.project import REPO

from cass.engine.actions import ActionRunner, plan
from cass.engine.placement import Placement
from cass.engine.targets import TargetRun, run_targets
from cass.pipeline.context import load_params
from cass.translate.ctext import find_calls, rewrite_calls
from cass.translate.device_builtins import DEFINED, DP4A, GROUPS, NV_ATOMIC_ENUMS
from cass.translate.names import CudaHipNames, toolchain_names
from cass.translate.ptx import BFE, BFI
from cass.translate.repair import (
    COOPERATIVE_GROUPS_REDUCE,
    PTX_PRELUDE,
    RULES,
    SYNCWARP,
    THRUST_PRELUDE,
    WARP_PRELUDE,
    CachedRepair,
    RepairTarget,
    cooperative_groups_reduce,
    cublas_gemm_ex,
    cuda_device_builtins,
    cuda_header_guards,
    cuda_runtime_overloads,
    cuda_version_macros,
    hip_defined_functions,
    hip_elaborated_types,
    hip_vector_compound_operators,
    nvcc_compiler_macros,
    own_headers_kept,
    ptx_inline_asm,
    repair,
    ruleset_id,
    thrust_cuda_backend,
    unmapped_headers,
    warp_sync_builtins,
)
from store import tracking
from toolchains import load_hip_nvidia, local_executor
from toolchains.amd import CUDA_DEVICE_BUILTINS
from toolchains.sandboxed_runs import ProgramLimits

NAMES = CudaHipNames(
    headers={"cub/block/block_reduce.cuh": "hipcub/hipcub.hpp", "cub/warp/warp_scan.cuh": "hipcub/hipcub.hpp",
             "math_constants.h": "hip/hip_math_constants.h"},
    presence={"__CUDA_RUNTIME_H__": "HIP_INCLUDE_HIP_HIP_RUNTIME_H", "CUBLAS_API_H_": "HIPBLAS_H",
              "_CUFFT_H_": "HIPFFT_H_", "CURAND_H_": "HIPRAND_H_", "CUSPARSEAPI": "HIPSPARSE_H",
              "__DRIVER_TYPES_H__": "HIP_INCLUDE_HIP_DRIVER_TYPES_H"},
    versions={"CUDA_VERSION": "13050", "CUDART_VERSION": "13050", "__CUDACC_VER_MAJOR__": "13",
              "CUSPARSE_VERSION": "((12) * 1000 + (9) * 100 + (4))"},
    constants={"CUDART_PI_F": "HIP_PI_F", "CUDART_INF_F": "HIP_INF_F"},
    compiler={"__NVCC__": "__HIPCC__"}, hipified_macros=["__HIPCC__", "__HIPCUB_ALIGN_BYTES"],
    nvidia_typedefs=["hipChannelFormatDesc", "hipMemcpyKind", "hipStream_t"],
    overloads={
        "hipEventCreate": {"2": {"target": "hipEventCreateWithFlags", "params": ["event", "flags"], "required": 2,
                                 "defaults": [], "args": ["event", "flags"]}},
        "hipFuncSetAttribute": {"3": {"target": "hipFuncSetAttribute", "params": ["func", "attr", "value"],
                                      "required": 3, "defaults": [], "args": ["(const void*)func", "attr", "value"]}},
        "hipMallocPitch": {"4": {"target": "hipMallocPitch", "params": ["devPtr", "pitch", "width", "height"],
                                 "required": 4, "defaults": [],
                                 "args": ["(void**)(void*)devPtr", "pitch", "width", "height"]}},
        "hipStreamAttachMemAsync": {str(n): {"target": "hipStreamAttachMemAsync", "required": 2,
                                             "params": ["stream", "devPtr", "length", "flags"],
                                             "defaults": ["0", "hipMemAttachSingle"],
                                             "args": ["stream", "(void*)devPtr", "length", "flags"]}
                                    for n in (2, 3, 4)},
    })
"""Tables as :mod:`cass.translate.names` derives them (a few entries of each)."""
HIP57 = RepairTarget(hip=(5, 7), names=NAMES)
HIP64 = RepairTarget(hip=(6, 4), names=NAMES, hipblas_v2=True)
WAVE64 = RepairTarget(hip=(6, 4), names=NAMES, wave32=False, hipblas_v2=True)

GUARDED_BEFORE = """#ifdef __CUDA_RUNTIME_H__
#define checkErrors(v) check((v), #v)
#endif
#if defined(CUBLAS_API_H_) || defined _CUFFT_H_
static const char *name = "__CUDA_RUNTIME_H__";
#elif defined(CURAND_H_) && \\
      defined(CUSPARSEAPI)
#endif
#if __DRIVER_TYPES_H__ + 0
#endif
#ifndef CUSPARSEAPI
#define CUSPARSEAPI
#endif
int __CUDA_RUNTIME_H__guard_lookalike;
"""
GUARDED_AFTER = """#ifdef HIP_INCLUDE_HIP_HIP_RUNTIME_H
#define checkErrors(v) check((v), #v)
#endif
#if defined(HIPBLAS_H) || defined HIPFFT_H_
static const char *name = "__CUDA_RUNTIME_H__";
#elif defined(HIPRAND_H_) && \\
      defined(HIPSPARSE_H)
#endif
#if __DRIVER_TYPES_H__ + 0
#endif
#ifndef CUSPARSEAPI
#define CUSPARSEAPI
#endif
int __CUDA_RUNTIME_H__guard_lookalike;
"""


def test_cuda_presence_macros_map_to_the_hip_headers_guards_in_presence_tests_only():
    # a value test is no presence question, and a project's own fallback definition stays its own
    assert cuda_header_guards(GUARDED_BEFORE, HIP57) == GUARDED_AFTER
    assert cuda_header_guards(GUARDED_BEFORE, HIP64) == GUARDED_AFTER
    assert cuda_header_guards(GUARDED_BEFORE, RepairTarget(hip=(5, 7))) == GUARDED_BEFORE   # no tables, no rewrite


HEADERS_BEFORE = """#include <cub/block/block_reduce.cuh>
#include "cub/warp/warp_scan.cuh"
#include <hipcub/hipcub.hpp>
#include <math_constants.h>
__device__ float angle(float t) { return t * CUDART_PI_F + CUDART_INF_F * 0.0f; }
#if CUDART_VERSION >= 9000
#endif
"""
HEADERS_AFTER = """#include <hipcub/hipcub.hpp>
#include <hipcub/hipcub.hpp>
#include <hipcub/hipcub.hpp>
#include <hip/hip_math_constants.h>
__device__ float angle(float t) { return t * HIP_PI_F + HIP_INF_F * 0.0f; }
#if CUDART_VERSION >= 9000
#endif
"""


def test_unmapped_headers_become_their_hip_equivalents_unless_the_sample_has_them():
    assert unmapped_headers(HEADERS_BEFORE, HIP57) == HEADERS_AFTER   # CUDART_VERSION is no math constant
    assert unmapped_headers(HEADERS_AFTER, HIP64) == HEADERS_AFTER
    own = replace(HIP57, shadowed=frozenset({"math_constants.h"}))
    assert unmapped_headers(HEADERS_BEFORE, own) == HEADERS_AFTER.replace(
        "<hip/hip_math_constants.h>", "<math_constants.h>")


def test_a_projects_own_header_named_like_a_cuda_header_keeps_its_name_in_quoted_includes():
    """colmap's ``"util/cuda.h"``, which hipify-perl renames as CUDA's ``cuda.h``: restored where the sample has the
    file under a folder; the runtime header itself, an angle include and a sample without the file are left."""
    names = replace(NAMES, hipify_headers={"cuda.h": "hip/hip_runtime.h", "cuda_runtime.h": "hip/hip_runtime.h"})
    own = RepairTarget(hip=(6, 4), names=names, shadowed=names.provided_by(["src/util/cuda.h", "src/mvs/mat.h"]))
    assert own.shadowed == {"src/util/cuda.h", "util/cuda.h"}
    text = ('#include "hip/hip_runtime.h"\n#include "util/hip/hip_runtime.h"  // ours\n'
            '  #  include "src/util/hip/hip_runtime.h"\n#include <util/hip/hip_runtime.h>\n')
    assert own_headers_kept(text, own) == ('#include "hip/hip_runtime.h"\n#include "util/cuda.h"  // ours\n'
                                           '  #  include "src/util/cuda.h"\n#include <util/hip/hip_runtime.h>\n')
    assert own_headers_kept(text, replace(own, shadowed=frozenset())) == text
    assert repair(text, own)[1] == ["own_headers_kept"]
    other = '#include "other/hip/hip_runtime.h"\n'   # no own header of that folder
    assert own_headers_kept(other, own) == other
    both = replace(own, shadowed=names.provided_by(["util/cuda.h", "util/cuda_runtime.h"]))   # which one?
    ambiguous = '#include "util/hip/hip_runtime.h"\n'
    assert own_headers_kept(ambiguous, both) == ambiguous


def test_cublas_sgemmex_is_gemmex_with_fp32_compute():
    call = "cublasSgemmEx(h, ta, tb, m, n, k, &one, A, HIP_R_16F, lda, B, HIP_R_16F, ldb, &zero, C, HIP_R_32F, ldc)"
    args = call.removeprefix("cublasSgemmEx(").removesuffix(")")
    assert cublas_gemm_ex(call, HIP64) == f"hipblasGemmEx({args}, HIPBLAS_COMPUTE_32F, HIPBLAS_GEMM_DEFAULT)"
    assert cublas_gemm_ex(call, HIP57) == f"hipblasGemmEx({args}, HIPBLAS_R_32F, HIPBLAS_GEMM_DEFAULT)"
    strided = ("hipblasGemmStridedBatchedEx(h, ta, tb, m, n, k, &one, A, HIP_R_32F, lda, sa, B, HIP_R_32F, ldb, sb, "
               "&zero, C, HIP_R_32F, ldc, sc, count, {}, HIPBLAS_GEMM_DEFAULT)")
    assert cublas_gemm_ex(strided.format("HIP_R_32F"), HIP64) == strided.format("HIPBLAS_COMPUTE_32F")
    assert cublas_gemm_ex(strided.format("HIP_R_32F"), HIP57) == strided.format("HIP_R_32F")


def test_cuda_runtime_overloads_call_what_cudas_own_overload_calls():
    before = ('CHECK(hipEventCreate(&start, hipEventDisableTiming), "timer");\nhipEventCreate(&stop);\n'
              "hipFuncSetAttribute(kernel<float, 4>, attribute, bytes);\n"
              "hipStreamAttachMemAsync(s, data);\n"
              "hipMallocPitch(&p, &pitch, w, h); hipMallocPitch((void **) &q, &pitch, w, h);\n")
    after = ('CHECK(hipEventCreateWithFlags(&start, hipEventDisableTiming), "timer");\nhipEventCreate(&stop);\n'
             "hipFuncSetAttribute((const void*)(kernel<float, 4>), attribute, bytes);\n"
             "hipStreamAttachMemAsync(s, (void*)(data), 0, hipMemAttachSingle);\n"
             "hipMallocPitch((void**)(void*)(&p), &pitch, w, h); hipMallocPitch((void **) &q, &pitch, w, h);\n")
    # the second hipMallocPitch passes what the C API takes: it calls that, and stays
    assert cuda_runtime_overloads(before, HIP57) == after


OPERATORS_BEFORE = """static __forceinline__ __host__ __device__ void operator+=(float3& a, float3 b)
{
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
}
__host__ __device__ inline void operator+=(float3& a, float4 b) { a.x += b.x; a.y += b.y; a.z += b.z; }
__device__ void operator*=(int2 &p, const int2 &q) { p.x *= q.x; p.y *= q.y; }
__device__ void operator-=(float2& a, float2 b) { a.x -= b.y; a.y -= b.x; }
__device__ void operator/=(float4& a, float4 b) { a.x /= b.x; a.y /= b.y; a.z /= b.z; }
"""
OPERATORS_AFTER = """#if !defined(__HIP_PLATFORM_AMD__) /* operator+=(float3&, float3): HIP's float3 has it on AMD */
static __forceinline__ __host__ __device__ void operator+=(float3& a, float3 b)
{
    a.x += b.x;
    a.y += b.y;
    a.z += b.z;
}
#endif
__host__ __device__ inline void operator+=(float3& a, float4 b) { a.x += b.x; a.y += b.y; a.z += b.z; }
#if !defined(__HIP_PLATFORM_AMD__) /* operator*=(int2&, int2): HIP's int2 has it on AMD */
__device__ void operator*=(int2 &p, const int2 &q) { p.x *= q.x; p.y *= q.y; }
#endif
__device__ void operator-=(float2& a, float2 b) { a.x -= b.y; a.y -= b.x; }
__device__ void operator/=(float4& a, float4 b) { a.x /= b.x; a.y /= b.y; a.z /= b.z; }
"""


BINARY_BEFORE = """inline __host__ __device__ float2 operator/(float2 a, float2 b)
{
    return make_float2(a.x / b.x, a.y / b.y);
}
inline __host__ __device__ float2 operator*(float2 a, float s) { return make_float2(a.x * s, a.y * s); }
inline __host__ __device__ float2 operator-(float s, float2 a) { return make_float2(s - a.x, s - a.y); }
inline __host__ __device__ int2 operator*(int2 a, float s) { return make_int2(a.x * s, a.y * s); }
inline __host__ __device__ float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.y, a.y + b.x); }
inline __host__ __device__ uint2 operator*(uint2 a, unsigned int s) { return make_uint2(a.x * s, a.y * s); }
inline __host__ __device__ ulonglong2 operator+(unsigned long long s, ulonglong2 a)
{ return make_ulonglong2(s + a.x, s + a.y); }
inline __host__ __device__ uint2 operator*(uint2 a, unsigned long s) { return make_uint2(a.x * s, a.y * s); }
__device__ float2 smooth(float2 x, float2 a, float2 b) { return (x - a) / (b - a) * 2.0f; }
"""
BINARY_AFTER = """#if !defined(__HIP_PLATFORM_AMD__) /* operator/(float2, float2): HIP's float2 has it on AMD */
inline __host__ __device__ float2 operator/(float2 a, float2 b)
{
    return make_float2(a.x / b.x, a.y / b.y);
}
#endif
#if !defined(__HIP_PLATFORM_AMD__) /* operator*(float2, float): HIP's float2 has it on AMD */
inline __host__ __device__ float2 operator*(float2 a, float s) { return make_float2(a.x * s, a.y * s); }
#endif
#if !defined(__HIP_PLATFORM_AMD__) /* operator-(float, float2): HIP's float2 has it on AMD */
inline __host__ __device__ float2 operator-(float s, float2 a) { return make_float2(s - a.x, s - a.y); }
#endif
inline __host__ __device__ int2 operator*(int2 a, float s) { return make_int2(a.x * s, a.y * s); }
inline __host__ __device__ float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.y, a.y + b.x); }
#if !defined(__HIP_PLATFORM_AMD__) /* operator*(uint2, unsigned int): HIP's uint2 has it on AMD */
inline __host__ __device__ uint2 operator*(uint2 a, unsigned int s) { return make_uint2(a.x * s, a.y * s); }
#endif
#if !defined(__HIP_PLATFORM_AMD__) /* operator+(unsigned long long, ulonglong2): HIP's ulonglong2 has it on AMD */
inline __host__ __device__ ulonglong2 operator+(unsigned long long s, ulonglong2 a)
{ return make_ulonglong2(s + a.x, s + a.y); }
#endif
inline __host__ __device__ uint2 operator*(uint2 a, unsigned long s) { return make_uint2(a.x * s, a.y * s); }
__device__ float2 smooth(float2 x, float2 a, float2 b) { return (x - a) / (b - a) * 2.0f; }
"""


def test_component_wise_vector_binary_operators_give_way_to_hips(toolchains, store):
    # kept: a float scalar on an int2 (HIP converts the scalar first: another result), a swapped body, an
    # unsigned long scalar on a uint2 (not its element type)
    assert hip_vector_compound_operators(BINARY_BEFORE, HIP57) == BINARY_AFTER
    runner = ActionRunner(store, local_executor({"amd": toolchains["amd"]}), 300)
    for text, ok in ((BINARY_BEFORE, False), (BINARY_AFTER, True)):   # HIP's own '/' made the project's ambiguous
        outcome = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(
            ("#include <hip/hip_runtime.h>\n" + text).encode())})
        assert outcome.ok == ok, store.get_text(outcome.record.stderr)


def test_only_component_wise_vector_compound_operators_give_way_to_hips():
    # kept: a float4 right operand (no HIP member), a swapped body, a body missing the w component
    assert hip_vector_compound_operators(OPERATORS_BEFORE, HIP57) == OPERATORS_AFTER
    assert OPERATORS_AFTER.count("\n") == OPERATORS_BEFORE.count("\n") + 2 * 2   # each kept for HIP on NVIDIA


VERSIONS_BEFORE = """#if CUDA_VERSION < 8000
#error "CUDA >= 8.0 is required"
#endif
#ifdef CUDART_VERSION
#if defined(CUDA_VERSION) && CUDA_VERSION >= 11000 || defined __CUDACC_VER_MAJOR__
#elif __CUDACC_VER_MAJOR__ >= 12 && CUSPARSE_VERSION >= 11000
#endif
#endif
#ifndef CUDA_VERSION // a comment
#elifdef CUDART_VERSION
#endif
#if !defined(CUDART_VERSION)
#define CUDART_VERSION 0
#endif
int runtime = CUDART_VERSION;
"""
VERSIONS_AFTER = """#if (13050) < 8000
#error "CUDA >= 8.0 is required"
#endif
#if 1
#if 1 && (13050) >= 11000 || 1
#elif (13) >= 12 && (((12) * 1000 + (9) * 100 + (4))) >= 11000
#endif
#endif
#if 0 // a comment
#elif 1
#endif
#if !defined(CUDART_VERSION)
#define CUDART_VERSION 0
#endif
int runtime = CUDART_VERSION;
"""


def test_cuda_version_macros_take_the_nvidia_sides_values_in_conditionals():
    assert cuda_version_macros(VERSIONS_BEFORE, HIP57) == VERSIONS_AFTER


def test_cuda_version_macros_used_in_code_take_the_nvidia_sides_values():
    """A branch that tested the macro uses it: the use takes the value the test assumed, and a ``defined`` in a macro
    body holds, as in conditionals. Comments, literals, other directives, ``#``/``##`` operands, a ``#define`` of the
    macro itself (the file's own value) and the directives' own fallbacks are left."""
    before = ('#if defined(__CUDACC_VER_MAJOR__)\nint major = __CUDACC_VER_MAJOR__; // __CUDACC_VER_MAJOR__\n'
              'const char *k = "CUDA_VERSION"; char c = \'x\';\n#define VERSION_OF(x) CUDA_VERSION + x\n#endif\n'
              'int s = CUSPARSE_VERSION;\n#define NEW (defined(CUDA_VERSION) && CUDA_VERSION >= 11000)\n'
              '#define OLD !defined CUDA_VERSION || is_defined(CUDA_VERSION)\n#define LONG(x) \\\n  #x, CUDA_VERSION\n'
              '#define NAME(x) #x CUDA_VERSION\n#define NAMED #CUDA_VERSION x##CUDA_VERSION CUDA_VERSION ## y\n'
              '#error needs CUDA_VERSION 11\n#pragma message CUDA_VERSION\n')
    after = ('#if 1\nint major = 13; // __CUDACC_VER_MAJOR__\n'
             'const char *k = "CUDA_VERSION"; char c = \'x\';\n#define VERSION_OF(x) 13050 + x\n#endif\n'
             'int s = (((12) * 1000 + (9) * 100 + (4)));\n#define NEW (1 && 13050 >= 11000)\n'
             '#define OLD !1 || is_defined(13050)\n#define LONG(x) \\\n  #x, 13050\n'
             '#define NAME(x) #x 13050\n#define NAMED #CUDA_VERSION x##CUDA_VERSION CUDA_VERSION ## y\n'
             '#error needs CUDA_VERSION 11\n#pragma message CUDA_VERSION\n')
    assert cuda_version_macros(before, HIP57) == after
    assert cuda_version_macros(after, HIP57) == after
    own = "#ifndef CUDA_VERSION\n#define CUDA_VERSION 0\n#endif\nint v = CUDA_VERSION;\n"
    assert cuda_version_macros(own, HIP57) == own
    assert cuda_version_macros("int v = CUDART_VERSION;\n#undef CUDART_VERSION\n", HIP57).startswith("int v = CUDART")


NVCC_BEFORE = """#ifdef __NVCC__
#define HD __host__ __device__
#elifndef __NVCC__
#endif
#if (defined(__NVCC__) || defined(__HIPCC__)) || X /* hipify-perl's text for one with __CUDACC__ */
#endif
#if X // __HIP_PLATFORM_AMD__ in a comment
#elif __HIPCUB_ALIGN_BYTES
#endif
#if defined(__CUDA__) || defined __NVCC__ /* nvcc */
#elif __NVCC__ && X
#endif
#ifndef __NVCC__
const char *compiler = "__NVCC__";
#endif
"""
NVCC_AFTER = """#if (defined(__NVCC__) || defined(__HIPCC__))
#define HD __host__ __device__
#elif !(defined(__NVCC__) || defined(__HIPCC__))
#endif
#if (defined(__NVCC__) || defined(__HIPCC__)) || X /* hipify-perl's text for one with __CUDACC__ */
#endif
#if X // __HIP_PLATFORM_AMD__ in a comment
#elif __HIPCUB_ALIGN_BYTES
#endif
#if defined(__CUDA__) || (defined(__NVCC__) || defined(__HIPCC__)) /* nvcc */
#elif (defined(__NVCC__) || defined(__HIPCC__)) && X
#endif
#if !(defined(__NVCC__) || defined(__HIPCC__))
const char *compiler = "__NVCC__";
#endif
"""


def test_nvcc_compiler_macros_also_test_for_hips_compiler_unless_the_file_decides_for_hip():
    assert nvcc_compiler_macros(NVCC_BEFORE, HIP57) == NVCC_AFTER
    assert nvcc_compiler_macros(NVCC_AFTER, HIP57) == NVCC_AFTER   # repaired before: left alone
    for own in ("// a comment before\n#if defined(__HIP_PLATFORM_AMD__)\n#endif\n", "#ifdef __HIP__\n#endif\n",
                "#elif defined(__HIP_DEVICE_COMPILE__)\n"):
        assert nvcc_compiler_macros(own + NVCC_BEFORE, HIP57) == own + NVCC_BEFORE
    for comment in ("#if X /* not __HIP_PLATFORM_AMD__\n */\n#endif\n",
                    "/*\n#ifdef __HIP_PLATFORM_AMD__\n#endif\n*/\n"):
        assert nvcc_compiler_macros(comment + NVCC_BEFORE, HIP57) == comment + NVCC_AFTER
    hipified = "#if defined(__HIPCC__) && !defined(__NVCC__)\n#endif\n"   # __HIPCC__ is hipify-perl's __CUDACC__
    assert nvcc_compiler_macros(hipified, HIP57) == (
        "#if defined(__HIPCC__) && !(defined(__NVCC__) || defined(__HIPCC__))\n#endif\n")
    fallback = "#ifndef __NVCC__\n#define __NVCC__ 0\n#endif\n"   # the file's own definition
    assert nvcc_compiler_macros(fallback, HIP57) == fallback
    valued = "#if __HIPCC__ && defined(__HIPCC__)\n#elif !__HIPCC__\n#endif\n#ifdef __HIP__\n#endif\n"
    assert nvcc_compiler_macros(valued, HIP57) == (   # in a file that decides for HIP itself too
        "#if defined(__HIPCC__) && defined(__HIPCC__)\n#elif !defined(__HIPCC__)\n#endif\n#ifdef __HIP__\n#endif\n")


def test_thrust_cuda_backend_is_rocthrusts_hip_backend_on_amd_and_stays_on_nvidia():
    before = ("#include <thrust/system/cuda/execution_policy.h> // the policy\n#include <thrust/system/cuda/x.h> /* a\n"
              "b */\nthrust::sort(thrust::cuda::par.on(stream), a, b); thrust::cuda_cub::tag t; "
              "thrust::system::cuda::x y;\nthrust::system_error e(c, thrust::cuda_category()); "
              "thrust::system::cuda_category_x z; thrust::system::cuda_category();\n")
    after = (THRUST_PRELUDE + "#if defined(__HIP_PLATFORM_NVIDIA__)\n"
             "#include <thrust/system/cuda/execution_policy.h> // the policy\n"
             "#else\n#include <thrust/system/hip/execution_policy.h> // the policy\n#endif\n"
             "#include <thrust/system/cuda/x.h> /* a\nb */\n"   # a block comment would swallow the #else: left
             "thrust::sort(CASS_THRUST(thrust::cuda, thrust::hip)::par.on(stream), a, b); "
             "CASS_THRUST(thrust::cuda_cub, thrust::hip_rocprim)::tag t; "
             "CASS_THRUST(thrust::system::cuda, thrust::system::hip)::x y;\n"
             "thrust::system_error e(c, CASS_THRUST(thrust::cuda_category, thrust::hip_category)()); "
             "thrust::system::cuda_category_x z; "
             "CASS_THRUST(thrust::system::cuda_category, thrust::system::hip_category)();\n")
    assert thrust_cuda_backend(before, HIP57) == after
    assert thrust_cuda_backend(after, HIP57) == after   # repaired before: left alone
    crlf = "#include <thrust/system/cuda/x.h> /* closed */\r\n"   # a Windows line, a comment that ends on it
    assert thrust_cuda_backend(crlf, HIP57) == (
        THRUST_PRELUDE + "#if defined(__HIP_PLATFORM_NVIDIA__)\r\n#include <thrust/system/cuda/x.h> /* closed */\r\n"
        "#else\r\n#include <thrust/system/hip/x.h> /* closed */\r\n#endif\r\n")


def test_elaborated_hip_types_lose_the_keyword_and_tag_declarations_stay():
    """Only before the names HIP's NVIDIA platform declares as typedefs; never where the tag is declared."""
    before = ("cudaError_t copy(void *d, const void *s, size_t n, enum hipMemcpyKind kind);\n"
              "struct hipChannelFormatDesc desc; enum hipMemcpyKind;\nstruct hipMemcpyKind { int x; };\n"
              "enum hipMemcpyKind /* kinds */\n: int { A };\nstruct hipChannelFormatDesc // its fields\n{};\n"
              "struct hipChannelFormatDesc final {};\ntypedef struct ihipStream_t *hipStream_t;\n"
              "struct own_t o; enum hipMemcpyKindx k; /* enum hipMemcpyKind */\n")
    after = ("cudaError_t copy(void *d, const void *s, size_t n, hipMemcpyKind kind);\n"
             "hipChannelFormatDesc desc; enum hipMemcpyKind;\nstruct hipMemcpyKind { int x; };\n"
             "enum hipMemcpyKind /* kinds */\n: int { A };\nstruct hipChannelFormatDesc // its fields\n{};\n"
             "struct hipChannelFormatDesc final {};\ntypedef struct ihipStream_t *hipStream_t;\n"
             "struct own_t o; enum hipMemcpyKindx k; /* hipMemcpyKind */\n")
    assert hip_elaborated_types(before, HIP57) == after
    assert hip_elaborated_types(before, replace(HIP57, names=CudaHipNames())) == before   # no table: no rewrite


PTX_BEFORE = """#define LD_NC_V1 "ld.global.cs.nc.u32"
__device__ unsigned lane() { unsigned id; asm("mov.u32 %0, %%laneid;" : "=r"(id)); return id; }
__device__ unsigned ge() { unsigned m; asm volatile("mov.u32 %0, %%lanemask_ge;" : "=r"(m)); return m; }
__device__ unsigned sm() { unsigned s; asm("mov.u32 %0, %smid;" : "=r"(s)); return s; }
__device__ unsigned field(unsigned v, int p, int l) {
  unsigned r; asm("bfe.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(v), "r"(p), "r"(l)); return r;
}
__device__ void load(unsigned c[2], const void *p) {
  asm("ld.global.cs.v2.u32 {%0, %1}, [%2];" : "=r"(c[0]), "=r"(c[1]) : "l"(p));
  asm(LD_NC_V1 " {%0}, [%1 + 8];" : "=r"(c[0]) : "l"(p));
}
__device__ void store(void *p, unsigned a) { asm("st.u32 [%0], {%1};" : : "l"(p), "r"(a)); }
__device__ void wait() { asm volatile("bar.sync %0, %1;" : : "r"(1), "r"(64) : "memory"); }
"""
LOAD = "((const unsigned int *)((const char *)(p) + {}))[{}]"
PTX_AFTER = PTX_PRELUDE + f"""#define LD_NC_V1 "ld.global.cs.nc.u32"
__device__ unsigned lane() {{ unsigned id; CASS_PTX(asm("mov.u32 %0, %%laneid;" : "=r"(id)), (id = __lane_id())); \
return id; }}
__device__ unsigned ge() {{ unsigned m; CASS_PTX(asm volatile("mov.u32 %0, %%lanemask_ge;" : "=r"(m)), \
(m = (unsigned)~__lanemask_lt())); return m; }}
__device__ unsigned sm() {{ unsigned s; CASS_PTX(asm("mov.u32 %0, %smid;" : "=r"(s)), (s = __smid())); return s; }}
__device__ unsigned field(unsigned v, int p, int l) {{
  unsigned r; (r = {BFE[32].format("(v)", "(p)", "(l)")}); return r;
}}
__device__ void load(unsigned c[2], const void *p) {{
  (c[0] = {LOAD.format(0, 0)}, c[1] = {LOAD.format(0, 1)});
  (c[0] = {LOAD.format(8, 0)});
}}
__device__ void store(void *p, unsigned a) {{ (((unsigned int *)((char *)(p) + 0))[0] = (unsigned int)(a)); }}
__device__ void wait() {{ asm volatile("bar.sync %0, %1;" : : "r"(1), "r"(64) : "memory"); }}
"""


def test_ptx_inline_asm_idioms_become_the_cpp_they_compute():
    """The special registers' device functions are AMD's alone: HIP's NVIDIA platform keeps their PTX."""
    assert ptx_inline_asm(PTX_BEFORE, HIP57) == PTX_AFTER   # named barriers have no equivalent: kept
    assert ptx_inline_asm(PTX_AFTER, HIP57) == PTX_AFTER   # repaired before: left alone


def test_ptx_accesses_keep_volatility_and_unknown_forms_stay():
    spin = 'do { asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory"); } while (!v);'
    assert ptx_inline_asm(spin, HIP57) == \
        "do { (v = ((const volatile unsigned int *)((const char *)(flag) + 0))[0]); } while (!v);"
    store = 'asm("st.global.u32 [%0], %1;" :: "l"(p), "r"(x));'
    assert ptx_inline_asm(store, HIP57) == "(((unsigned int *)((char *)(p) + 0))[0] = (unsigned int)(x));"
    kept = ['asm("ld.global.nc.b32 %0, [%1];" : "=f"(x) : "l"(p));',       # a float register
            'asm("ld.relaxed.gpu.u32 %0, [%1];" : "=r"(x) : "l"(p));',     # memory-model semantics
            'asm("bfe.u32 %0, %1, %2, %3;" : "=r"(x) : "r"(v), "r"(p));',  # names an operand it lacks
            'asm("mov.u32 %0, %%laneid;" : "=r"(x));']                     # lanes of a 64-wide wavefront
    for text, target in zip(kept, [HIP57, HIP57, HIP57, WAVE64], strict=True):
        assert ptx_inline_asm(text, target) == text


def ptx_bfe(value: int, pos: int, length: int, bits: int = 32) -> int:
    """bfe.u32 / bfe.u64 as the PTX ISA defines them."""
    pos, length = pos & 0xFF, length & 0xFF
    return 0 if pos >= bits or length == 0 else (value >> pos) & ((1 << min(length, bits)) - 1)


def ptx_bfi(a: int, b: int, pos: int, length: int) -> int:
    """bfi.b32 as the PTX ISA defines it."""
    pos, length = pos & 0xFF, length & 0xFF
    if pos >= 32 or length == 0:
        return b
    mask = (((1 << min(length, 32)) - 1) << pos) & 0xFFFFFFFF
    return (b & ~mask & 0xFFFFFFFF) | ((a << pos) & mask)


def test_bit_field_expressions_compute_what_ptx_defines(tmp_path):
    """The rule's expressions, compiled by a real C++ compiler and run, against the PTX ISA."""
    cases = [(0xDEADBEEF, 0xCAFE, p, n) for p in (0, 3, 4, 28, 31, 32, 40, 63, 64, 260)
             for n in (0, 1, 4, 8, 31, 32, 40, 64)]
    lines = [f'printf("%u %u %llu\\n", {BFE[32].format(f"{v}u", p, n)}, {BFI.format(f"{a}u", f"{v}u", p, n)}, '
             f'{BFE[64].format(f"{v << 29}ull", p, n)});' for v, a, p, n in cases]
    (tmp_path / "t.cpp").write_text("#include <cstdio>\nint main() {\n" + "\n".join(lines) + "\n}\n")
    subprocess.run(["g++", "-w", "-o", str(tmp_path / "t"), str(tmp_path / "t.cpp")], check=True)
    got = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True).stdout.splitlines()
    assert got == [f"{ptx_bfe(v, p, n)} {ptx_bfi(a, v, p, n)} {ptx_bfe(v << 29, p, n, 64)}" for v, a, p, n in cases]


WARP_BEFORE = """__device__ float reduce(float v, unsigned mask) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  unsigned lanes = __ballot_sync(__activemask(), v > 0.f);   // __shfl_sync(m, v, 0) in a comment
  bool any = __any_sync(mask, v > 1.f), all = __all_sync(mask, v < 2.f);
  __syncwarp();
  return __shfl_sync(0xffffffff, __shfl_xor_sync(mask, v, 1, 16), 0) + __shfl_up_sync(mask, v, 1) + lanes;
}
"""
WARP_AFTER_HIP57 = WARP_PRELUDE + """__device__ float reduce(float v, unsigned mask) {
  for (int o = 16; o > 0; o >>= 1) v += CASS_WARP(__shfl_down_sync(0xffffffff, v, o), __shfl_down(v, o));
  unsigned lanes = CASS_WARP(__ballot_sync(CASS_WARP(__activemask(), ((unsigned int)__ballot(1))), v > 0.f),\
 ((unsigned int)(__ballot(v > 0.f) & (CASS_WARP(__activemask(), ((unsigned int)__ballot(1)))))));   //\
 __shfl_sync(m, v, 0) in a comment
  bool any = CASS_WARP(__any_sync(mask, v > 1.f), (int)((__ballot(v > 1.f) & (mask)) != 0)), all =\
 CASS_WARP(__all_sync(mask, v < 2.f), ({ unsigned long long __m = (mask); (int)((__ballot(v < 2.f) & __m) ==\
 (__ballot(1) & __m)); }));
  CASS_WARP(__syncwarp(), (__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"),\
 __builtin_amdgcn_wave_barrier(), __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront")));
  return CASS_WARP(__shfl_sync(0xffffffff, CASS_WARP(__shfl_xor_sync(mask, v, 1, 16), __shfl_xor(v, 1, 16)),\
 0), __shfl(CASS_WARP(__shfl_xor_sync(mask, v, 1, 16), __shfl_xor(v, 1, 16)), 0)) +\
 CASS_WARP(__shfl_up_sync(mask, v, 1), __shfl_up(v, 1)) + lanes;
}
"""
WARP_AFTER_HIP64 = WARP_PRELUDE + """__device__ float reduce(float v, unsigned mask) {
  for (int o = 16; o > 0; o >>= 1) v += CASS_WARP(__shfl_down_sync(0xffffffff, v, o),\
 __shfl_down_sync((unsigned long long)(0xffffffff), v, o));
  unsigned lanes = CASS_WARP(__ballot_sync(CASS_WARP(__activemask(), ((unsigned int)__ballot(1))), v > 0.f),\
 ((unsigned int)__ballot_sync((unsigned long long)(CASS_WARP(__activemask(), ((unsigned int)__ballot(1)))), v >\
 0.f)));   // __shfl_sync(m, v, 0) in a comment
  bool any = CASS_WARP(__any_sync(mask, v > 1.f), __any_sync((unsigned long long)(mask), v > 1.f)), all =\
 CASS_WARP(__all_sync(mask, v < 2.f), __all_sync((unsigned long long)(mask), v < 2.f));
  CASS_WARP(__syncwarp(), (__builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront"),\
 __builtin_amdgcn_wave_barrier(), __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront")));
  return CASS_WARP(__shfl_sync(0xffffffff, CASS_WARP(__shfl_xor_sync(mask, v, 1, 16), __shfl_xor_sync((unsigned\
 long long)(mask), v, 1, 16)), 0), __shfl_sync((unsigned long long)(0xffffffff),\
 CASS_WARP(__shfl_xor_sync(mask, v, 1, 16), __shfl_xor_sync((unsigned long long)(mask), v, 1, 16)), 0)) +\
 CASS_WARP(__shfl_up_sync(mask, v, 1), __shfl_up_sync((unsigned long long)(mask), v, 1)) + lanes;
}
"""


def test_warp_sync_builtins_drop_the_mask_before_hip_6_2():
    assert warp_sync_builtins(WARP_BEFORE, HIP57) == WARP_AFTER_HIP57


def test_warp_sync_builtins_leave_declarations_and_wave64_targets_alone():
    own = "__device__ void __syncwarp(unsigned mask) {}\nreturn __shfl_sync(m, v, 0);\n"
    assert warp_sync_builtins(own, HIP57) == (WARP_PRELUDE + "__device__ void __syncwarp(unsigned mask) {}\n"
                                              "return CASS_WARP(__shfl_sync(m, v, 0), __shfl(v, 0));\n")
    assert warp_sync_builtins(WARP_BEFORE, WAVE64) == WARP_BEFORE


def test_calls_after_comments_are_calls():
    """A comment's last word before a call is no type that would make it a declaration (GROMACS'
    ``// ... between loop iterations`` then ``__syncwarp(c_fullWarpMask);``)."""
    calls = ["{\n  // avoid WAR hazards between loop iterations\n  __syncwarp(full);\n",
             "  /* shared */ __syncwarp(); /* a */ /* b */\n  __syncwarp(m);\n",
             "  unsigned x; // \"quoted // text\" */\n  __syncwarp();\n",
             "  /* was /* old */ __syncwarp();\n#endif // WARP\n  __syncwarp();\n#define SYNC __syncwarp()\n"]
    declarations = "void /* own */ __syncwarp(unsigned m) {}\n#define __syncwarp(m) sync(m)\n"
    repaired = warp_sync_builtins("".join(calls) + declarations, HIP57)
    assert repaired.count(SYNCWARP) == 7 and repaired.endswith(declarations)


def test_warp_sync_builtins_widen_the_mask_from_hip_6_2():
    assert warp_sync_builtins(WARP_BEFORE, HIP64) == WARP_AFTER_HIP64
    assert warp_sync_builtins(WARP_AFTER_HIP64, HIP64) == WARP_AFTER_HIP64   # idempotent


def test_calls_are_found_with_balanced_arguments_outside_comments_and_literals():
    text = 'f(a, g(b, c), "x,)", \')\', 1\'000) /* f(z) */ obj.f(q) h->f(r) ns::f(s) xf(t)'
    [call] = find_calls(text, "f")
    assert [text[s:e].strip() for s, e in call.args] == ["a", "g(b, c)", '"x,)"', "')'", "1'000"]
    assert rewrite_calls(text, "f", lambda args, original: "F()") == \
        "F() /* f(z) */ obj.f(q) h->f(r) ns::f(s) xf(t)"
    assert find_calls("f(unbalanced, ", "f") == []


def test_repair_reports_the_rules_that_fired_and_leaves_other_text_alone():
    text, fired = repair(GUARDED_BEFORE + WARP_BEFORE, HIP57)
    assert fired == ["cuda_header_guards", "warp_sync_builtins"]
    assert text == WARP_PRELUDE + GUARDED_AFTER + WARP_AFTER_HIP57.removeprefix(WARP_PRELUDE)
    assert repair("__global__ void k(int *x) { x[0] = 1; }\n", HIP57) == \
        ("__global__ void k(int *x) { x[0] = 1; }\n", [])
    assert ruleset_id() == ",".join(f"{r.name}@{r.version}" for r in RULES)


def test_repairs_are_cached_actions_keyed_by_rule_set_and_hip_version(store):
    digest = store.put(WARP_BEFORE.encode())
    first = CachedRepair(store, HIP57)
    with tracking() as first_keys:
        out, fired = first(digest)
    assert store.get_text(out) == WARP_AFTER_HIP57 and fired == ["warp_sync_builtins"]
    again = CachedRepair(store, HIP57)
    assert again(digest) == (out, fired) and again.cache.counts() == {"hits": 1, "misses": 0}
    newer = CachedRepair(store, HIP64)
    with tracking() as newer_keys:
        assert store.get_text(newer(digest)[0]) == WARP_AFTER_HIP64 and newer.cache.misses == 1
    assert first_keys and newer_keys and newer_keys.isdisjoint(first_keys)
    other_tables = CachedRepair(store, replace(HIP57, names=CudaHipNames(presence={"CUDA_H": "HIP_H"})))
    with tracking() as other_keys:
        assert other_tables(digest) == (out, fired)
    assert other_keys and other_keys.isdisjoint(first_keys)   # a new key, same text


HELPER = """#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#ifdef __DRIVER_TYPES_H__
#define CHECK(call) \\
  do { cudaError_t e = (call); if (e != cudaSuccess) printf("%s\\n", cudaGetErrorString(e)); } while (0)
#endif
"""
KERNEL = """#include "helper.cuh"
#include <cub/block/block_reduce.cuh>
#include <math_constants.h>
__global__ void warp_sum(const float *in, float *out) {
  float v = in[threadIdx.x] * CUDART_PI_F;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
  unsigned positive = __ballot_sync(0xffffffff, v > 0.f);
  int all = __all_sync(0xffffffff, v > 0.f), any = __any_sync(0x0000ffff, v < 0.f);
  if (threadIdx.x == 0) out[blockIdx.x] = v + __popc(positive) + all + any + __ffs(__activemask());
}
__global__ void block_sum(const float *in, float *out) {
  using Reduce = cub::BlockReduce<float, 64>;
  __shared__ typename Reduce::TempStorage scratch;
  float total = Reduce(scratch).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}
__host__ __device__ void operator+=(float3 &a, const float3 &b) { a.x += b.x; a.y += b.y; a.z += b.z; }
__global__ void shift(float3 *p, float3 by) { p[threadIdx.x] += by; }
int main() {
  float *d; cudaEvent_t ev;
  CHECK(cudaEventCreate(&ev, cudaEventDisableTiming));
  CHECK(cudaFuncSetAttribute(warp_sum, cudaFuncAttributeMaxDynamicSharedMemorySize, 0));
  float *pinned; CHECK(cudaHostAlloc(&pinned, 16, cudaHostAllocDefault));
  CHECK(cudaMalloc(&d, 4)); warp_sum<<<1, 32>>>(d, d); CHECK(cudaFree(d));
  return 0;
}
"""


@pytest.fixture(scope="module")
def hipified(toolchains, tmp_path_factory):
    """The helper header and kernel through the real hipify-perl (cached actions)."""
    from store import Store

    amd = toolchains["amd"]
    store = Store(tmp_path_factory.mktemp("repair") / "store")
    runner = ActionRunner(store, local_executor({"amd": amd}), 120)
    sources = {"helper.cuh": store.put(HELPER.encode()), "kernel.cu": store.put(KERNEL.encode())}
    actions = {p: plan(amd, amd.hipify_step(p), {p: d}) for p, d in sources.items()}
    outcomes = runner.run(list(actions.values()), desc="hipify")
    return store, runner, {p: outcomes[a.key].record.outputs["hip"] for p, a in actions.items()}


def compile_amd(toolchains, store, runner, files: dict[str, str], flags: tuple[str, ...] = ()):
    """kernel.cu's device compile for gfx1100 (``flags`` added: ``-emit-llvm`` gives LLVM's IR as its output)."""
    amd = toolchains["amd"]
    [device] = [t for t in amd.targets("kernel.cu", ["gfx1100"], {"common": ["-std=c++17", *flags], "opt": ["-O1"]})
                if t.kind == "device"]
    step = device.steps[0]
    action = plan(amd, step, files)
    return runner.run([action], desc="hipcc")[action.key]


def test_real_code_that_hipify_leaves_broken_compiles_after_the_repairs(toolchains, hipified):
    store, runner, hip = hipified
    raw = compile_amd(toolchains, store, runner, hip)
    assert not raw.ok   # hipify-perl keeps the guard (CHECK undeclared) and the warp-sync call
    stderr = store.get_text(raw.record.stderr)
    assert "cub/block/block_reduce.cuh" in stderr or "math_constants.h" in stderr
    amd = toolchains["amd"]
    names = toolchain_names(toolchains["nvidia"], amd, load_hip_nvidia())
    repairer = CachedRepair(store, RepairTarget(amd.hip_version(), names))
    repaired = {p: repairer(d) for p, d in hip.items()}
    assert repaired["helper.cuh"][1] == ["cuda_header_guards"]
    assert repaired["kernel.cu"][1] == ["unmapped_headers", "cuda_runtime_overloads", "hip_vector_compound_operators",
                                        "warp_sync_builtins"]
    unguarded = compile_amd(toolchains, store, runner, {"helper.cuh": hip["helper.cuh"],   # all but the guard
                                                        "kernel.cu": repaired["kernel.cu"][0]})
    assert not unguarded.ok and "'CHECK'" in store.get_text(unguarded.record.stderr)
    fixed = compile_amd(toolchains, store, runner, {p: d for p, (d, _) in repaired.items()})
    assert fixed.ok, store.get_text(fixed.record.stderr)
    assert "v_add_f32" in store.get_text(fixed.record.outputs["device.s"])
    nvidia = toolchains["nvidia"]   # the CUDA side compiles as it is, host and SASS: the sample pairs
    cuda = {"helper.cuh": store.put(HELPER.encode()), "kernel.cu": store.put(KERNEL.encode())}
    runs = [TargetRun(t, cuda) for t in nvidia.targets("kernel.cu", ["sm_89"], {"common": ["-std=c++17"],
                                                                                "host": ["-O1"]})]
    run_targets(nvidia, ActionRunner(store, local_executor({"nvidia": nvidia}), 300), runs)
    assert {r.target.kind for r in runs} == {"host", "device"} and all(r.failure is None for r in runs)


HIP_DEFINED = replace(HIP57, names=CudaHipNames(hip_definitions={
    "amd": {"atomicMin": [["float*", "float"], ["int*", "int"]], "atomicMax": [["float*", "float"]]},
    "nvidia": {"atomicMin": [["float*", "float"]]}}))
OWN_MIN = """__device__ float atomicMin(float *addr, float value)
{
#if CUDA_VERSION >= 12080
  int *bits = (int *)addr, old = __nv_atomic_load_n(bits, __NV_ATOMIC_RELAXED);
#else
  int *bits = (int *)addr, old = *bits;   /* { */
#endif
  while (value < __int_as_float(old)) {
    int seen = atomicCAS(bits, old, __float_as_int(value));
    if (seen == old) break;
    old = seen;
  }
  return __int_as_float(old);
}"""
LEFT_ALONE = """
__device__ float atomicMax(float *addr, float value, int stride) { return value; }
namespace own { __device__ float atomicMax(float *addr, float value) { return value; } }
template <class T> __device__ T atomicMax(T *addr, T value) { return value; }
template <int N> __device__ float atomicMax(float *addr, float value) { return value; }
float atomicMax(float *addr, float value) { return value; }
__device__ float atomicMax(float *, float);
#define OWN_MAX __device__ float atomicMax(float *addr, float value) { return value; }
__host__ __device__ float atomicMax(float *addr, float value) { return value; }
NS_BEGIN
__device__ float atomicMax(float *addr, float value) { return value; }
NS_END
__global__ void kernel(float *m) { atomicMin(m, 1.0f); }"""
OWN_MAX = """static __device__ __forceinline__ float atomicMax(
    float *const addr, const float /* the value */ value) { return value; }"""
AFTER_ALL = """ __global__ void after(float *m) {}
__device__ float atomicMax(float *addr, float value) {
#if LOWER
  if (value < 0) {
#endif
  return value; }
  return value;
}
__device__ float atomicMax(float *addr, float value) {
#if NEGATE
  return -value; }
#else
  return value; }
#endif
__device__ float atomicMax(float *addr, float value) {
#if LOWER
  if (value < 0) {
#else
  if (value > 0) {
#endif
    return value;
  }
  return value;
}
__device__ float atomicMin(float *addr, float value) { return value; }
"""
OWN_ATOMICS_BEFORE = f"// the project's float minimum\n{OWN_MIN}{LEFT_ALONE}{OWN_MAX}{AFTER_ALL}"
OWN_ATOMICS_AFTER = (
    "// the project's float minimum\n#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__) "
    f"/* HIP defines atomicMin(float*, float) */\n{OWN_MIN}\n#endif{LEFT_ALONE}\n"
    f"#if !defined(__HIP_PLATFORM_AMD__) /* HIP defines atomicMax(float*, float) */\n{OWN_MAX}\n#endif\n{AFTER_ALL}")


def test_a_projects_own_overload_that_hip_defines_is_left_out_where_hip_defines_it():
    """A file-scope, non-template device definition with a name and parameter types of a platform's table is left
    out on that platform (both for ``atomicMin(float*, float)``, AMD only for ``atomicMax``; parameter names,
    comments and a parameter's own ``const`` do not count; code after its body on the same line stays out of the
    ``#if``; a CRLF file keeps its line ends); one with other parameters, one in a namespace, templates, a host
    function, a host and device one, one after a macro (``NS_BEGIN``: perhaps a namespace), a declaration, one in a
    ``#define``, three whose braces balance only per preprocessor branch (and all after the one left open: no file
    scope is known there), and a call stay; a second pass changes nothing."""
    assert hip_defined_functions(OWN_ATOMICS_BEFORE, HIP_DEFINED) == OWN_ATOMICS_AFTER
    assert hip_defined_functions(OWN_ATOMICS_AFTER, HIP_DEFINED) == OWN_ATOMICS_AFTER
    crlf = OWN_ATOMICS_BEFORE.replace("\n", "\r\n")   # a file's own line ends
    assert hip_defined_functions(crlf, HIP_DEFINED) == OWN_ATOMICS_AFTER.replace("\n", "\r\n")
    assert hip_defined_functions(OWN_ATOMICS_BEFORE, HIP57) == OWN_ATOMICS_BEFORE   # nothing derived


OWN_ATOMIC_PROGRAM = """#include <cstdio>
__device__ float atomicMin(float *addr, float value) {
  int *bits = (int *)addr, old = *bits;
  while (value < __int_as_float(old)) {
    int seen = atomicCAS(bits, old, __float_as_int(value));
    if (seen == old) break;
    old = seen;
  }
  return __int_as_float(old);
}
__global__ void kernel(const float *in, float *minimum) { atomicMin(minimum, in[threadIdx.x]); }
int main() {
  float *in, *minimum;
  cudaMalloc(&in, 32 * sizeof(float));
  cudaMalloc(&minimum, sizeof(float));
  kernel<<<1, 32>>>(in, minimum);
  return cudaDeviceSynchronize() != cudaSuccess;
}
"""


def test_an_own_float_atomic_min_builds_for_amd_and_hips_nvidia_platform_and_fails_without_the_rule(toolchains,
                                                                                                  store):
    """Real hipify-perl and the tables each platform's compiler gives: HIP defines ``atomicMin(float*, float)`` on
    both of its platforms (CUDA has no such overload), so the project's own is a redefinition on each; repaired,
    the file builds for AMD and through HIP's NVIDIA back end, both calling HIP's. Without the rule neither builds,
    and with the AMD table alone, HIP's NVIDIA platform still fails."""
    runner, hipified, target = hipified_with_target(toolchains, store, OWN_ATOMIC_PROGRAM)
    for platform in ("amd", "nvidia"):
        assert ["float*", "float"] in target.names.hip_definitions[platform]["atomicMin"]
        assert ["int*", "int"] in target.names.hip_definitions[platform]["atomicMin"]
    text, fired = repair(hipified, target)
    assert "hip_defined_functions" in fired
    amd_only, _ = repair(hipified, replace(target, names=replace(target.names, hip_definitions={
        "amd": target.names.hip_definitions["amd"]})))
    without, _ = repair(hipified, target, tuple(r for r in RULES if r.name != "hip_defined_functions"))
    for source, ok in ((text, True), (amd_only, True), (without, False)):
        built = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(source.encode())})
        assert built.ok == ok, store.get_text(built.record.stderr)
    assert "redefinition of 'atomicMin'" in store.get_text(built.record.stderr)
    builds = hip_nvidia_builds(store, {"repaired": text, "amd only": amd_only, "without": without})
    assert builds["repaired"].binary, builds["repaired"].detail
    for failing in ("amd only", "without"):
        assert builds[failing].binary is None and 'function "atomicMin(float *, float)"' in builds[failing].detail


WARP_PROGRAM = """
__global__ void kernel(float *out) { out[threadIdx.x] = reduce(out[threadIdx.x], 0xffffffffu); }
int main() { return 0; }
"""


def hip_nvidia_builds(store, texts: dict[str, str]) -> dict:
    """Each text as a program of one file through HIP's NVIDIA back end (sm_90): its :class:`Build`."""
    from cass.engine.targets import run_plans

    hip_nvidia = load_hip_nvidia()
    target = hip_nvidia.program_target(["kernel.cu"], ["sm_90"], ["-std=c++17", "-w"])
    plans = {name: [TargetRun(target, {"kernel.cu": store.put(text.encode())})] for name, text in texts.items()}
    return run_plans(store, hip_nvidia, plans, 600, Placement.local())[0]


def test_warp_rule_output_builds_for_amd_and_for_hips_nvidia_platform(toolchains, store):
    """The warp rule's output keeps CUDA's ``*_sync`` calls for HIP's NVIDIA platform (where HIP 5.7's votes are
    ones ptxas refuses and AMD's builtins are unknown) and the AMD forms for AMD: both build."""
    text = "#include <hip/hip_runtime.h>\n" + WARP_AFTER_HIP57 + WARP_PROGRAM
    runner = ActionRunner(store, local_executor({"amd": toolchains["amd"]}), 300)
    amd = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(text.encode())})
    assert amd.ok, store.get_text(amd.record.stderr)
    build = hip_nvidia_builds(store, {"k": text})["k"]
    assert build.binary, build.detail


def hipified_with_target(toolchains, store, cuda: str) -> tuple[ActionRunner, str, RepairTarget]:
    """``cuda`` (as kernel.cu) through the real hipify-perl: the AMD runner, the HIP text, and the repair target of
    the real toolchains (their derived tables)."""
    amd = toolchains["amd"]
    runner = ActionRunner(store, local_executor({"amd": amd}), 300)
    action = plan(amd, amd.hipify_step("kernel.cu"), {"kernel.cu": store.put(cuda.encode())})
    hipified = store.get_text(runner.run([action], desc="hipify")[action.key].record.outputs["hip"])
    return runner, hipified, RepairTarget(amd.hip_version(), toolchain_names(toolchains["nvidia"], amd,
                                                                             load_hip_nvidia()),
                                          hipblas_v2=amd.hipblas_v2())


PLATFORM_PROGRAM = """#include <thrust/fill.h>
#include <thrust/system/cuda/execution_policy.h>
__device__ unsigned lane_id() { unsigned id; asm("mov.u32 %0, %%laneid;" : "=r"(id)); return id; }
__global__ void kernel(unsigned *out) { out[threadIdx.x] += lane_id(); }
static cudaError_t copy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  return cudaMemcpy(dst, src, n, kind);
}
int main() {
  unsigned *d, h[32];
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  cudaMallocAsync(&d, sizeof h, stream);
  thrust::fill(thrust::cuda::par.on(stream), d, d + 32, 1u);
  kernel<<<1, 32, 0, stream>>>(d);
  copy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  return h[31] != 32;
}
"""
AMD_FORMS = "#define CASS_PTX(cuda, amd) amd\n#define CASS_THRUST(cuda, amd) amd\n"
"""Put before a repaired text, the platform-selecting rules' AMD forms on HIP's NVIDIA platform too."""


def test_the_rules_that_name_amd_only_things_keep_cudas_on_hips_nvidia_platform(toolchains, store):
    """Real hipify-perl, then the repairs: lane ids from PTX, thrust's CUDA policy, an ``enum cudaMemcpyKind`` and a
    typed pointer's ``cudaMallocAsync`` build for AMD and through HIP's NVIDIA back end. The AMD forms alone
    (``__lane_id``, ``thrust::hip``, the elaborated typedef, the overload only AMD has) do not build there: each is
    one of the errors."""
    runner, hipified, target = hipified_with_target(toolchains, store, PLATFORM_PROGRAM)
    text, fired = repair(hipified, target)
    assert {"cuda_runtime_overloads", "thrust_cuda_backend", "ptx_inline_asm", "hip_elaborated_types"} <= set(fired)
    built = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(text.encode())})
    assert built.ok, store.get_text(built.record.stderr)
    amd_overloads = {n: o for n, o in target.names.overloads.items() if n != "hipMallocAsync"}   # AMD's template
    amd_only, _ = repair(hipified, replace(target, names=replace(target.names, overloads=amd_overloads)),
                         tuple(r for r in RULES if r.name != "hip_elaborated_types"))
    builds = hip_nvidia_builds(store, {"repaired": text, "amd forms": AMD_FORMS + amd_only})
    assert builds["repaired"].binary, builds["repaired"].detail
    assert builds["amd forms"].binary is None
    for error in ('"__lane_id" is undefined', 'name followed by "::"', 'typedef "hipMemcpyKind" may not be used',
                  'argument of type "unsigned int **" is incompatible with parameter of type "void **"'):
        assert error in builds["amd forms"].detail


COMPILER_PROGRAM = """#include <cstdio>
#ifdef __NVCC__
#define HD __host__ __device__
#else
#define HD
#endif
#if __CUDACC__
HD inline int twice(int x) { return 2 * x; }
#endif
__global__ void kernel(int *out) { out[threadIdx.x] = twice(threadIdx.x); }
static int major() {
#if defined(__CUDACC_VER_MAJOR__)
  return __CUDACC_VER_MAJOR__;
#else
  return 0;
#endif
}
int main() { int *d; cudaMalloc(&d, 128); kernel<<<1, 32>>>(d); std::printf("%d\\n", major()); return 0; }
"""


def test_nvcc_and_version_macros_build_for_amd_and_hips_nvidia_platform_and_fail_without_the_rules(toolchains,
                                                                                                     store):
    """Real hipify-perl, the real tables: the ``__NVCC__`` test keeps ``twice`` a device function on AMD, the
    version a branch used is a value, and ``#if __CUDACC__`` (hipify-perl's ``#if __HIPCC__``) a presence test, which
    HIP's NVIDIA headers need (they define ``__HIPCC__`` empty); both builds pass. Without ``nvcc_compiler_macros``
    the kernel calls a host function, and with version macros valued in directives only the branch names an
    undefined macro."""
    runner, hipified, target = hipified_with_target(toolchains, store, COMPILER_PROGRAM)
    assert target.names.compiler["__NVCC__"] == "__HIPCC__"
    text, fired = repair(hipified, target)
    assert {"cuda_version_macros", "nvcc_compiler_macros"} <= set(fired)
    built = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(text.encode())})
    assert built.ok, store.get_text(built.record.stderr)
    assert "#if defined(__HIPCC__)\n" in text
    builds = hip_nvidia_builds(store, {"repaired": text, "value test": text.replace("#if defined(__HIPCC__)\n",
                                                                                    "#if __HIPCC__\n")})
    assert builds["repaired"].binary is not None, builds["repaired"].detail
    assert builds["value test"].binary is None and "#if with no expression" in builds["value test"].detail
    without, _ = repair(hipified, target, tuple(r for r in RULES if r.name != "nvcc_compiler_macros"))
    failed = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(without.encode())})
    assert not failed.ok and "twice" in store.get_text(failed.record.stderr)
    directives_only = replace(target, names=replace(target.names, versions={}))
    valued, _ = repair(hipified.replace("#if defined(__CUDACC_VER_MAJOR__)", "#if 1"), directives_only)
    failed = compile_amd(toolchains, store, runner, {"kernel.cu": store.put(valued.encode())})
    assert not failed.ok and "__CUDACC_VER_MAJOR__" in store.get_text(failed.record.stderr)


def test_reduce_through_cooperative_groups_or_an_alias_gets_the_functions_once():
    target = replace(HIP57, names=CudaHipNames(cooperative_groups=["reduce"]))
    aliased = ("namespace cg = cooperative_groups;\n"
               "__device__ float f(T w, float x) { return cg::reduce(w, x, cg::plus<float>()); }\n")
    repaired = cooperative_groups_reduce(aliased, target)
    assert repaired == COOPERATIVE_GROUPS_REDUCE + aliased
    assert cooperative_groups_reduce(repaired, target) == repaired   # once
    spelled = "int g(T w, int x) { return ::cooperative_groups :: reduce (w, x, op); }"
    assert cooperative_groups_reduce(spelled, target).startswith(COOPERATIVE_GROUPS_REDUCE)
    for untouched in ("int g(T w, int x) { return cg::reduce(w, x, op); }",          # cg is no alias here
                      "namespace cg = cooperative_groups;\nint r = thrust::reduce(v.begin(), v.end());",
                      "namespace cg = cooperative_groups;\nauto op = cg::plus<int>();"):   # no reduce call
        assert cooperative_groups_reduce(untouched, target) == untouched
    assert cooperative_groups_reduce(aliased, HIP57) == aliased   # the tables say HIP has reduce


REDUCE_PROGRAM = """#include <cstdio>
#include <cstring>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
struct Range { float low, high; int count; };
struct Widen {
  __device__ Range operator()(Range a, Range b) const {
    return {fminf(a.low, b.low), fmaxf(a.high, b.high), a.count + b.count};
  }
};
__global__ void kernel(const int *in, int *out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  cg::thread_block_tile<8> eight = cg::tiled_partition<8>(block);
  int t = threadIdx.x, v = in[t], *o = out + 9 * t;
  o[0] = cg::reduce(warp, v, cg::plus<int>());
  o[1] = cg::reduce(warp, v, cg::less<int>());
  o[2] = cg::reduce(warp, v, cg::greater<int>());
  o[3] = cg::reduce(eight, v, cg::bit_xor<int>());
  o[4] = cg::reduce(eight, v, cg::bit_and<int>()) ^ cg::reduce(eight, v, cg::bit_or<int>());
  if (v % 3) o[5] = cg::reduce(cg::coalesced_threads(), v, cg::plus<int>());   // groups of any size
  else o[5] = -1;
  Range r = cg::reduce(warp, Range{(float)v, (float)v, 1}, Widen());   // three words through the shuffles
  o[6] = (int)r.low * 7 + (int)r.high * 3 + r.count;
  float warp_sum = cg::reduce(warp, v / 7.0f, cg::plus<float>());
  float eight_sum = cg::reduce(eight, v / 7.0f, cg::plus<float>());
  memcpy(o + 7, &warp_sum, 4);   // rounded as the order of the additions says: checked against CUDA's, bit for bit
  memcpy(o + 8, &eight_sum, 4);
}
int main() {
  const int n = 64;
  int in[n], out[9 * n], want[7 * n], *d_in, *d_out;
  for (int i = 0; i < n; ++i) in[i] = (i * 7919 + 13) % 1000 - 300;
  for (int t = 0; t < n; ++t) {
    int w = t / 32 * 32, e = t / 8 * 8, sum = 0, low = in[w], high = in[w], x = 0, a = -1, b = 0, odd = 0;
    for (int i = w; i < w + 32; ++i) {
      sum += in[i]; low = in[i] < low ? in[i] : low; high = in[i] > high ? in[i] : high;
      if (in[i] % 3) odd += in[i];
    }
    for (int i = e; i < e + 8; ++i) { x ^= in[i]; a &= in[i]; b |= in[i]; }
    int *o = want + 7 * t;
    o[0] = sum; o[1] = low; o[2] = high; o[3] = x; o[4] = a ^ b; o[5] = in[t] % 3 ? odd : -1;
    o[6] = low * 7 + high * 3 + 32;
  }
  cudaMalloc(&d_in, sizeof in); cudaMalloc(&d_out, sizeof out);
  cudaMemcpy(d_in, in, sizeof in, cudaMemcpyHostToDevice);
  kernel<<<1, n>>>(d_in, d_out);
  cudaMemcpy(out, d_out, sizeof out, cudaMemcpyDeviceToHost);
  int wrong = 0, check = 0;
  for (int i = 0; i < 9 * n; ++i) {
    wrong += i % 9 < 7 && out[i] != want[i / 9 * 7 + i % 9];
    check = check * 31 + out[i];
  }
  printf("%d values, %d wrong, checksum %d\\n", 7 * n, wrong, check);
  return wrong != 0;
}
"""
"""CUDA's reduce over warps, tiles of 8, coalesced groups of uneven size and a struct, checked against the CPU."""


def test_a_reduce_through_cooperative_groups_builds_for_amd_and_hips_nvidia_platform(toolchains, store):
    """Real hipify-perl, then the repairs: the program builds for AMD and through HIP's NVIDIA back end. Without the
    rule it builds on neither (no ``reduce`` in HIP; hipify-perl's header leaves CUDA's ``reduce.h`` out)."""
    runner, hipified, target = hipified_with_target(toolchains, store, REDUCE_PROGRAM)
    assert target.names.cooperative_groups == ["reduce"]
    texts = {"repaired": repair(hipified, target), "unrepaired": repair(hipified, target, tuple(
        r for r in RULES if r.name != "cooperative_groups_reduce"))}
    assert "cooperative_groups_reduce" in texts["repaired"][1]
    amd_builds = {name: compile_amd(toolchains, store, runner, {"kernel.cu": store.put(text.encode())})
                  for name, (text, _) in texts.items()}
    assert amd_builds["repaired"].ok, store.get_text(amd_builds["repaired"].record.stderr)
    assert "no member named 'reduce' in namespace 'cooperative_groups'" in store.get_text(
        amd_builds["unrepaired"].record.stderr)
    builds = hip_nvidia_builds(store, {name: text for name, (text, _) in texts.items()})
    assert builds["repaired"].binary, builds["repaired"].detail
    assert builds["unrepaired"].binary is None and 'namespace "cooperative_groups" has no member' in \
        builds["unrepaired"].detail


SHIM_MUTANTS = {
    "unbounded": ("    if (group.thread_rank() + offset < size) value = op(value, other);\n",
                  "    value = op(value, other);\n"),
    "unbroadcast": ("  return cass_words(value, [&](unsigned int word) { return group.shfl(word, 0); });\n",
                    "  return value;\n"),
    "ascending": ("for (unsigned int mask = group.size() / 2; mask > 0; mask /= 2)",
                  "for (unsigned int mask = 1; mask < group.size(); mask *= 2)"),
}
"""The AMD functions with a step left out (the bound on a coalesced group's size, the broadcast of lane 0's result) or
the tile's butterfly in the other order (the same integers, other float sums): each prints other results."""


@pytest.mark.gpu
def test_the_amd_reduce_computes_what_cudas_does_and_its_mutants_do_not(store, gpu):
    """On an NVIDIA GPU, whose cooperative groups have the shuffles HIP's do: the functions the rule writes for AMD
    (compiled without ``__HIP_PLATFORM_NVIDIA__``, CUDA's ``reduce.h`` left out) print what CUDA's own ``reduce``
    prints, every value checked against the CPU and a tile's float sums bit for bit; with the bound or the broadcast
    left out, or the butterfly in the other order, they do not."""
    gpu.require()
    amd_program = REDUCE_PROGRAM.replace("#include <cooperative_groups/reduce.h>\n", "")
    sources = {"cuda": REDUCE_PROGRAM, "amd": COOPERATIVE_GROUPS_REDUCE + amd_program}
    for name, (step, mutant) in SHIM_MUTANTS.items():
        assert step in COOPERATIVE_GROUPS_REDUCE
        sources[name] = COOPERATIVE_GROUPS_REDUCE.replace(step, mutant) + amd_program
    limits = ProgramLimits(wall_s=60, cpu_s=60, data_bytes=8 << 30, file_bytes=1 << 20, processes=64)
    runs = gpu.run_cuda(store, "cooperative_groups_reduce", load_params(REPO / "params.yaml"), sources, limits)
    printed = {name: store.get_text(run.stdout) for name, run in runs.items()}
    assert runs["cuda"].ok and printed["cuda"].startswith("448 values, 0 wrong, checksum "), printed
    assert runs["amd"].ok and printed["amd"] == printed["cuda"]
    for name in ("unbounded", "unbroadcast"):
        assert not runs[name].ok and " 0 wrong" not in printed[name], printed
    assert runs["ascending"].ok and printed["ascending"] != printed["cuda"]   # the float sums' last bits


ALL_LACKING = replace(HIP57, names=CudaHipNames(device_builtins=sorted(CUDA_DEVICE_BUILTINS)))


def test_a_file_calling_builtins_hip_lacks_gets_their_groups_definitions_once():
    text = "__global__ void k(float *p, int *q) { p[0] = __ldcs (p + 1); q[0] = __nv_atomic_load_n(q, 0); }\n"
    repaired = cuda_device_builtins(text, ALL_LACKING)
    assert repaired.endswith(text) and cuda_device_builtins(repaired, ALL_LACKING) == repaired   # once
    blocks = repaired.removesuffix(text)
    assert "#define CASS_NV_ATOMIC\n" in blocks and "#define CASS_CACHE_HINTS\n" in blocks
    assert "CASS_DP4A" not in blocks and "__dp4a" not in blocks   # not called: not defined
    assert blocks.count("#if !defined(__HIP_PLATFORM_NVIDIA__)") == 2   # CUDA's own on HIP's NVIDIA platform
    assert "__stcs(T* p, U value)" in blocks and "__nv_atomic_fetch_max(" in blocks   # the whole group: a header
    only_ldcs = replace(HIP57, names=CudaHipNames(device_builtins=["__ldcs"]))            # may share its guard
    block = cuda_device_builtins(text, only_ldcs).removesuffix(text)
    assert "__ldcs(const T* p)" in block and "__ldcg" not in block and "__nv_atomic" not in block
    for untouched in ("int __nv_atomic_count = 0;\n", "float x = ldcs(p) + my__ldcs(p) + __ldcs;\n",
                      "#define __ldcs(p) (*(p))\nfloat x = __ldcs(p);\n"):   # the file's own macro stays alone
        assert cuda_device_builtins(untouched, ALL_LACKING) == untouched
    assert cuda_device_builtins(text, HIP57) == text   # the tables say HIP has them all


def test_every_user_facing_nv_atomic_builtin_of_nvcc_is_defined(toolchains):
    """The definitions are of exactly the builtins asked about, and cover every ``__nv_atomic_*`` name nvcc's front
    end knows (its width-suffixed internal forms apart)."""
    assert DEFINED == CUDA_DEVICE_BUILTINS
    front_end = toolchains["nvidia"].tool_path("nvcc").parent / "cudafe++"
    known = {m.decode() for m in re.findall(rb"__nv_atomic_[a-z_]*[a-z](?!\w)", front_end.read_bytes())}
    assert len(known) >= 20 and known == {n for n in CUDA_DEVICE_BUILTINS if n.startswith("__nv_atomic_")}, known


BUILTINS_PROGRAM = """#include <cstdio>
__global__ void atomics(int *p, unsigned long long *q, float *f, int *out) {
  int a = __nv_atomic_load_n(p, __NV_ATOMIC_RELAXED);
  int b = __nv_atomic_load_n(p + 1, __NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_BLOCK);
  int r; __nv_atomic_load(p + 2, &r, __NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_THREAD);
  __nv_atomic_store_n(p + 3, a + b, __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE);
  __nv_atomic_store(p + 4, &r, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_CLUSTER);
  int c = __nv_atomic_fetch_add(p + 5, 1, __NV_ATOMIC_RELAXED);
  float g = __nv_atomic_fetch_add(f, 1.0f, __NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_SYSTEM);
  int d = __nv_atomic_fetch_max(p + 6, 3, __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_BLOCK);
  __nv_atomic_sub(p + 7, 1, __NV_ATOMIC_RELAXED);
  int e = __nv_atomic_exchange_n(p + 8, 3, __NV_ATOMIC_ACQ_REL);
  int x; __nv_atomic_exchange(p + 9, &e, &x, __NV_ATOMIC_ACQ_REL);
  int expected = 1;
  bool swapped = __nv_atomic_compare_exchange_n(p + 10, &expected, 5, false, __NV_ATOMIC_ACQ_REL, __NV_ATOMIC_RELAXED);
  int desired = 4;
  bool weak = __nv_atomic_compare_exchange(p + 11, &expected, &desired, true, __NV_ATOMIC_SEQ_CST, __NV_ATOMIC_ACQUIRE,
                                           __NV_THREAD_SCOPE_BLOCK);
  unsigned long long u = __nv_atomic_fetch_or(q, 1ull, __NV_ATOMIC_RELAXED);
  int h = __nv_atomic_fetch_sub(p + 12, 2, __NV_ATOMIC_RELAXED);
  int i = __nv_atomic_fetch_and(p + 13, 6, __NV_ATOMIC_RELAXED);
  int j = __nv_atomic_fetch_xor(p + 14, 5, __NV_ATOMIC_RELAXED);
  int k = __nv_atomic_fetch_min(p + 15, 1, __NV_ATOMIC_RELAXED);
  __nv_atomic_add(p + 16, 1, __NV_ATOMIC_RELAXED);
  __nv_atomic_and(p + 17, 1, __NV_ATOMIC_RELAXED);
  __nv_atomic_or(p + 18, 1, __NV_ATOMIC_RELAXED);
  __nv_atomic_xor(p + 19, 1, __NV_ATOMIC_RELAXED);
  __nv_atomic_min(p + 20, 1, __NV_ATOMIC_RELAXED);
  __nv_atomic_max(p + 21, 1, __NV_ATOMIC_RELAXED);
  int n = __nv_atomic_load_n(p + 22, 2, 1);   // CUDA's numbers: acquire, at the block
  __nv_atomic_thread_fence(__NV_ATOMIC_SEQ_CST, __NV_THREAD_SCOPE_DEVICE);
  out[0] = a + b + r + c + d + e + x + swapped + weak + (int)u + (int)g + h + i + j + k + n;
}
__global__ void hinted(const float4 *in, float4 *out, float *s) {
  float4 v = __ldcs(in + threadIdx.x);
  float w = __ldcg(s) + __ldca(s + 1) + __ldlu(s + 2);
  __stcs(out + threadIdx.x, v);
  __stwt(s + 3, w);
  __stcg(s + 4, 2.0);
  __stwb(s + 5, w);
}
__global__ void dot(const int *a, const int *b, const char4 *c, const uchar4 *d, int *out, unsigned *uout) {
  int i = threadIdx.x;
  out[i] = __dp4a(a[i], b[i], out[i]) + __dp4a(c[i], c[i + 1], 7);
  uout[i] = __dp4a((unsigned)a[i], (unsigned)b[i], uout[i]) + __dp4a(d[i], d[i + 1], 7u);
}
int main() { printf("built\\n"); return 0; }
"""
"""Every ``__nv_atomic_*`` builtin (orders and scopes given, by name and by number, and omitted), the cache-hinted
loads and stores on vectors and scalars, and ``__dp4a``'s four overloads."""

ATOMICS_IR = [("load", "", "monotonic"), ("load", "workgroup", "acquire"), ("load", "singlethread", "seq_cst"),
              ("store", "agent", "release"), ("store", "agent", "monotonic"), ("atomicrmw add", "", "monotonic"),
              ("atomicrmw fadd", "", "monotonic"), ("atomicrmw max", "workgroup", "acq_rel"),
              ("atomicrmw sub", "", "monotonic"), ("atomicrmw xchg", "", "acq_rel"), ("atomicrmw xchg", "", "acq_rel"),
              ("cmpxchg", "", "acq_rel monotonic"), ("cmpxchg", "workgroup", "seq_cst acquire"),
              ("atomicrmw or", "", "monotonic"),
              *((f"atomicrmw {op}", "", "monotonic") for op in ("sub", "and", "xor", "min", "add", "and", "or", "xor",
                                                                 "min", "max")),
              ("load", "workgroup", "acquire"), ("fence", "", "seq_cst")]
"""The atomic operations of the ``atomics`` kernel as LLVM's IR says them, in order: (operation, sync scope, orders).
No scope is the system (CUDA's default); cluster and device are the agent; a fence of any scope is the system's."""
_IR_ATOMIC = re.compile(r'\b(load atomic|store atomic|atomicrmw \w+|cmpxchg|fence)\b.*?(?:syncscope\("(\w+)"\) )?'
                        r'((?:monotonic|acquire|release|acq_rel|seq_cst)(?: (?:monotonic|acquire|seq_cst))?)')


def atomics_in_ir(ir: str) -> list[tuple[str, str, str]]:
    kernel = ir[ir.index("@_Z7atomics"):]
    kernel = kernel[:kernel.index("\n}\n")]
    return [(op.removesuffix(" atomic"), scope or "", orders) for op, scope, orders in _IR_ATOMIC.findall(kernel)]


def test_the_builtins_build_for_amd_with_cudas_orders_and_scopes_and_stay_cudas_on_nvidia(toolchains, store):
    """Real hipify-perl, then the repairs: the program builds for gfx1100, each atomic with CUDA's order and its scope
    as HIP's, and through HIP's NVIDIA back end (CUDA's own builtins). Without the rule it does not build for AMD
    (``__NV_ATOMIC_RELAXED`` undeclared); a block scope mapped to the agent, or an acquire order numbered as relaxed,
    shows in the IR. A project's own AMD fallback of ``__dp4a`` (not a template) is taken over the block's, with no
    redefinition; the block's overloads written as plain functions would clash with it."""
    runner, hipified, target = hipified_with_target(toolchains, store, BUILTINS_PROGRAM)
    assert set(target.names.device_builtins) == CUDA_DEVICE_BUILTINS   # HIP 7.2 (the default root) has none
    text, fired = repair(hipified, target)
    assert "cuda_device_builtins" in fired
    unrepaired, _ = repair(hipified, target, tuple(r for r in RULES if r.name != "cuda_device_builtins"))
    shared, _ = GROUPS["CASS_NV_ATOMIC"]
    mutants = {"block as agent": shared.replace("scope == __NV_THREAD_SCOPE_BLOCK ? __HIP_MEMORY_SCOPE_WORKGROUP",
                                                "scope == __NV_THREAD_SCOPE_BLOCK ? __HIP_MEMORY_SCOPE_AGENT"),
               "acquire as relaxed": shared.replace("__NV_ATOMIC_ACQUIRE, __NV_ATOMIC_RELEASE",
                                                    "__NV_ATOMIC_ACQUIRE = 0, __NV_ATOMIC_RELEASE = 3")}
    own = ("#ifdef __HIP_PLATFORM_AMD__\n__device__ int __dp4a(int a, int b, int c) { return a + b + c; }\n#endif\n"
           "__global__ void k(int *o) { o[0] = __dp4a(o[1], o[2], o[3]); }\n")
    own_repaired, _ = repair(own, target)
    texts = {"repaired": text, "unrepaired": unrepaired,
             **{name: text.replace(NV_ATOMIC_ENUMS, mutant) for name, mutant in mutants.items()},
             "own dp4a": own_repaired,
             "own dp4a, plain overloads": own_repaired.replace("template <class = void> ", "")}
    assert all(texts[name] != text for name in mutants) and "CASS_DP4A" in own_repaired
    built = {name: compile_amd(toolchains, store, runner, {"kernel.cu": store.put(t.encode())}, ("-emit-llvm",))
             for name, t in texts.items()}
    assert built["repaired"].ok, store.get_text(built["repaired"].record.stderr)
    assert atomics_in_ir(store.get_text(built["repaired"].record.outputs["device.s"])) == ATOMICS_IR
    assert not built["unrepaired"].ok
    assert "use of undeclared identifier '__NV_ATOMIC_RELAXED'" in store.get_text(built["unrepaired"].record.stderr)
    for name in mutants:
        assert built[name].ok and atomics_in_ir(store.get_text(built[name].record.outputs["device.s"])) != ATOMICS_IR
    assert built["own dp4a"].ok, store.get_text(built["own dp4a"].record.stderr)
    assert "redefinition of '__dp4a'" in store.get_text(built["own dp4a, plain overloads"].record.stderr)
    build = hip_nvidia_builds(store, {"repaired": text})["repaired"]
    assert build.binary, build.detail


def _dp4a_reference(a: int, b: int, c: int, signed: bool) -> int:
    def byte(v: int, i: int) -> int:
        x = (v >> (8 * i)) & 0xFF
        return x - 256 if signed and x > 127 else x
    total = c + sum(byte(a, i) * byte(b, i) for i in range(4))
    return (total + 2**31) % 2**32 - 2**31 if signed else total % 2**32


DP4A_MUTANTS = {"unsigned bytes": ("(int)(signed char)(a >> i) * (int)(signed char)(b >> i)",
                                   "(int)(unsigned char)(a >> i) * (int)(unsigned char)(b >> i)"),
                "three bytes": ("for (int i = 0; i < 32; i += 8) c +=", "for (int i = 0; i < 24; i += 8) c +=")}


def test_dp4a_computes_cudas_byte_dot_products_and_its_mutants_do_not(tmp_path):
    """The AMD ``__dp4a`` overloads, compiled by a real C++ compiler and run on this machine, against the definition
    (bytes signed for ``int`` and ``char4``, unsigned for ``unsigned`` and ``uchar4``, wrapping), on extremes and
    random words; with bytes of the wrong sign, or one byte left out, other sums."""
    rng = random.Random(0)
    words = [0, 1, -1, 0x7F7F7F7F, -0x80808080, 0x01FF80FF, 2**31 - 1, -2**31] + \
        [rng.randrange(-2**31, 2**31) for _ in range(40)]
    cases = [(a, b, c) for a, b in zip(words, reversed(words), strict=True) for c in (0, -5, 2**31 - 1, -2**31)]
    harness = ("#include <cstdio>\n#define __device__\nstruct char4 {{ signed char x, y, z, w; }};\n"
               "struct uchar4 {{ unsigned char x, y, z, w; }};\n{dp4a}int main() {{\n  char4 p, q; uchar4 r, s;\n"
               "{lines}}}\n")
    lines = "".join(
        f"  {{ int a = {a}, b = {b}, c = {c}; __builtin_memcpy(&p, &a, 4); __builtin_memcpy(&q, &b, 4);\n"
        f"    __builtin_memcpy(&r, &a, 4); __builtin_memcpy(&s, &b, 4);\n"
        f'    printf("%d %u %d %u\\n", __dp4a(a, b, c), __dp4a((unsigned)a, (unsigned)b, (unsigned)c), '
        f"__dp4a(p, q, c), __dp4a(r, s, (unsigned)c)); }}\n" for a, b, c in cases)
    want = [f"{_dp4a_reference(a, b, c, True)} {_dp4a_reference(a, b, c, False)} "
            f"{_dp4a_reference(a, b, c, True)} {_dp4a_reference(a, b, c, False)}" for a, b, c in cases]
    printed = {}
    for name, code in {"dp4a": DP4A, **{n: DP4A.replace(*m) for n, m in DP4A_MUTANTS.items()}}.items():
        assert name == "dp4a" or code != DP4A
        (tmp_path / f"{name}.cpp").write_text(harness.format(dp4a=code, lines=lines))
        exe = tmp_path / name.replace(" ", "_")
        subprocess.run(["g++", "-O1", "-w", "-o", str(exe), str(tmp_path / f"{name}.cpp")], check=True)
        printed[name] = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert printed["dp4a"] == want
    assert all(printed[name] != want for name in DP4A_MUTANTS)
