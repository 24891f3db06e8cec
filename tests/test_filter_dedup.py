"""Source filters and exact dedup rules, on small texts."""

from __future__ import annotations

from cass.text.cuda import strip_comments_and_strings
from cass.text.filters import defines_kernel, drop_reason

PARAMS = {"min_lines": 10, "max_lines": 7000, "require_kernel": True, "drop_trivial": True}
BODY = "\n".join(f"    y[i] += {k}.0f * x[i];" for k in range(12))
KERNEL = f"__global__ void k(float *x, float *y) {{\n    int i = threadIdx.x;\n{BODY}\n}}\n"


def test_a_real_kernel_passes():
    assert drop_reason(KERNEL, PARAMS) is None


def test_line_bounds():
    assert drop_reason("__global__ void k() { int a; }\n", PARAMS)[0] == "too_short"
    assert drop_reason(KERNEL * 700, PARAMS)[0] == "too_long"


def test_kernel_in_a_comment_or_string_does_not_count():
    text = "// __global__ void k()\nconst char *s = \"__global__\";\n" + "int x;\n" * 12
    assert drop_reason(text, PARAMS) == ("no_kernel", "no __global__ function in the file or its local headers")
    assert "__global__" not in strip_comments_and_strings(text)


def test_a_file_that_instantiates_kernels_of_its_headers_is_kept():
    instantiation = "#include \"scan.cuh\"\ntemplate void scan<float>(float *, int);\n" + "int x;\n" * 12
    assert not defines_kernel("// __global__ in a comment\n") and defines_kernel("__global__ void k() {}")
    assert drop_reason(instantiation, PARAMS, kernel_in_headers=True) is None
    assert drop_reason(instantiation, PARAMS)[0] == "no_kernel"


def test_hello_world_and_empty_kernels_are_trivial():
    hello = KERNEL.replace("int i", 'printf("Hello, World\\n"); int i')
    assert drop_reason(hello, PARAMS)[0] == "trivial"
    empty = "__global__ void k() { }\n" + "int x;\n" * 12
    assert drop_reason(empty, PARAMS) == ("trivial", "every kernel has an empty body")


def test_a_real_program_that_says_hello_is_not_trivial():
    body = "\n".join(f"    y[i] += {k}.0f * x[i];" for k in range(40))
    program = f'__global__ void k(float *x, float *y) {{\n    int i = threadIdx.x;\n{body}\n}}\n' \
              'int main() { printf("Hello from the saxpy test\\n"); return 0; }\n'
    assert drop_reason(program, PARAMS) is None


def test_opencl_files_are_filtered_by_their_own_kernel_keyword():
    opencl = KERNEL.replace("__global__ void k(float *x, float *y)",
                            "__kernel void k(__global float *x, __global float *y)")
    assert drop_reason(opencl, PARAMS, path="k/saxpy.cl") is None
    assert drop_reason(opencl, PARAMS, path="k/saxpy.cu")[0] == "no_kernel"   # __global is an OpenCL address space
    helper_only = "static inline float f(__global float *x) { return x[0]; }\n" + "int x;\n" * 12
    assert drop_reason(helper_only, PARAMS, path="h.cl") == (
        "no_kernel", "no __kernel function in the file or its local headers")
    assert defines_kernel("kernel void k(global int *a) { a[0] = 1; }", "h.cl") and not defines_kernel(
        "/* __kernel void k() */ void f() {}", "h.cl")
    for qualified in ("__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(global int *a) { a[0] = 1; }",
                      "void __kernel k(global int *a) { a[0] = 1; }"):
        assert defines_kernel(qualified, "q.cl")
    assert not defines_kernel("__constant float kernel[9] = {0};\nvoid blur(float *p) { p[0] = kernel[4]; }", "b.cl")
    empty = "__kernel void k(__global int *a) { }\n" + "int x;\n" * 12
    assert drop_reason(empty, PARAMS, path="e.cl") == ("trivial", "every kernel has an empty body")
