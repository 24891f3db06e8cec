"""Source filters and exact dedup rules, on small texts."""

from __future__ import annotations

from stages.cuda_text import strip_comments_and_strings
from stages.filter import drop_reason
from stages.ingest import local_headers

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
    assert drop_reason(text, PARAMS) == ("no_kernel", "no __global__ function")
    assert "__global__" not in strip_comments_and_strings(text)


def test_hello_world_and_empty_kernels_are_trivial():
    hello = KERNEL.replace("int i", 'printf("Hello, World\\n"); int i')
    assert drop_reason(hello, PARAMS)[0] == "trivial"
    empty = "__global__ void k() { }\n" + "int x;\n" * 12
    assert drop_reason(empty, PARAMS) == ("trivial", "every kernel has an empty body")


def test_local_headers_prefer_the_including_folder(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "common.h").write_text("// root copy\n")
    (tmp_path / "a" / "common.h").write_text('#include "deep.h"\n')
    (tmp_path / "a" / "deep.h").write_text("// deep\n")
    src = b'#include "common.h"\n#include "absent.h"\n#include <cstdio>\n'
    from pathlib import PurePosixPath

    found, unresolved = local_headers(tmp_path, PurePosixPath("a/k.cu"), src)
    assert [str(p) for p in found] == ["a/common.h", "a/deep.h"]
    assert unresolved == ["absent.h"]


def test_a_real_program_that_says_hello_is_not_trivial():
    body = "\n".join(f"    y[i] += {k}.0f * x[i];" for k in range(40))
    program = f'__global__ void k(float *x, float *y) {{\n    int i = threadIdx.x;\n{body}\n}}\n' \
              'int main() { printf("Hello from the saxpy test\\n"); return 0; }\n'
    assert drop_reason(program, PARAMS) is None


def test_a_header_that_is_not_utf8_drops_its_sample(tmp_path):
    from stages.common import StageOutput
    from stages.ingest import ingest_tree
    from store import Store

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "k.cu").write_text('#include "h.cuh"\n' + KERNEL)
    (tmp_path / "d" / "h.cuh").write_bytes(b"// auteur: Fran\xe7ois\n")
    (tmp_path / "d" / "ok.cu").write_text(KERNEL)
    out = StageOutput("ingest")
    rows = ingest_tree(Store(tmp_path / "store"), tmp_path / "d", "t", [".cu"], out)
    assert [r["path"] for r in rows] == ["ok.cu"]
    assert out.dropped[0]["reason"] == "undecodable" and "h.cuh" in out.dropped[0]["detail"]
