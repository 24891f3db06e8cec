"""Tests for cass.text on real device assembly copied from the exported pairs.

Fixtures under tests/fixtures/asm/ are rows of data/export/pairs: ``tiled_matmul`` (sample
84cc55be74dceac6, a kernel template instantiated for double and float), ``chebyshev_eval_streams``
(sample aaa55112ac4ae88f, one kernel with a ``float2`` parameter) and ``init_rank_float`` (the
``Function :`` section of ``init_rank<float>`` from graph/pagerank_pull.cu, which ends in a
``RET`` subroutine). No compiler is run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cass.text.amdgpu import normalize_amd, split_amd, standalone_amd_kernel
from cass.text.kernel_names import kernel_base_name, match_kernels
from cass.text.kernel_source import kernel_source
from cass.text.sass import normalize_sass, split_sass

FIXTURES = Path(__file__).parent / "fixtures" / "asm"
CORPUS_SOURCES = {"chebyshev_eval_streams.cu": "math/chebyshev_eval_streams.cu",
                  "tiled_matmul.cu": "linear_algebra/tiled_matmul.cu"}
"""The CUDA sources of the fixtures are bundled-corpus files (their HIP translations are fixtures)."""


def _read(name: str) -> str:
    if name in CORPUS_SOURCES:
        return (Path(__file__).parents[1] / "corpus" / CORPUS_SOURCES[name]).read_text()
    return (FIXTURES / name).read_text()


GEMM_D = "_Z10gemm_tiledIdEviiiT_PKS0_S2_S0_PS0_"
GEMM_F = "_Z10gemm_tiledIfEviiiT_PKS0_S2_S0_PS0_"
CHEB_CUDA = "_Z17eval_polys_kernelPKfP6float2i"
CHEB_HIP = "_Z17eval_polys_kernelPKfP15HIP_vector_typeIfLj2EEi"  # HIP's float2 is a class template
INIT_RANK = "_Z9init_rankIfEvPT_i"

SASS_FIXTURES = ["tiled_matmul.sm_89.sass", "chebyshev_eval_streams.sm_89.sass", "init_rank_float.sm_89.sass"]
AMD_FIXTURES = ["tiled_matmul.gfx1100.s", "chebyshev_eval_streams.gfx1100.s"]

# Beginning and end of count_twin_primes (segmented_prime_sieve.cu), cut short but byte-for-byte
# as cuobjdump printed them.
SASS_SNIPPET = """
\tcode for sm_89
\t.target\tsm_89

\t\tFunction : _Z17count_twin_primesPKjiPj
\t.headerflags\t@"EF_CUDA_SM89 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM89)"
        /*0000*/                   IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;       /* 0x00000a00ff017624 */
                                                                                 /* 0x000fe400078e00ff */
        /*0080*/                   ISETP.GE.AND P0, PT, R0, c[0x0][0x168], PT ;  /* 0x00005a0000007a0c */
                                                                                 /* 0x000fda0003f06270 */
        /*0090*/               @P0 BRA 0x1c0 ;                                   /* 0x0000012000000947 */
                                                                                 /* 0x000fea0003800000 */
        /*01c0*/                   BSYNC B0 ;                                    /* 0x0000000000007941 */
                                                                                 /* 0x000fea0003800000 */
        /*0250*/                   EXIT ;                                        /* 0x000000000000794d */
                                                                                 /* 0x000fea0003800000 */
        /*0260*/                   BRA 0x260;                                    /* 0xfffffff000007947 */
                                                                                 /* 0x000fc0000383ffff */
        /*0270*/                   NOP;                                          /* 0x0000000000007918 */
                                                                                 /* 0x000fc00000000000 */
        /*0280*/                   NOP;                                          /* 0x0000000000007918 */
                                                                                 /* 0x000fc00000000000 */
\t\t..........


"""

SASS_SNIPPET_NORMALIZED = """Function : _Z17count_twin_primesPKjiPj
/*0000*/ IMAD.MOV.U32 R1, RZ, RZ, c[0x0][0x28] ;
/*0080*/ ISETP.GE.AND P0, PT, R0, c[0x0][0x168], PT ;
/*0090*/ @P0 BRA 0x1c0 ;
/*01c0*/ BSYNC B0 ;
/*0250*/ EXIT ;
"""

_ADDRESS = re.compile(r"^/\*([0-9a-f]+)\*/ ", re.M)
_TARGET = re.compile(r"\b(?:BRA|BSSY B\d+,|CALL\.REL\.NOINC)\s+(0x[0-9a-f]+)")


# ------------------------------------------------------------------------------------ SASS


def test_normalize_sass_snippet_exact() -> None:
    assert normalize_sass(SASS_SNIPPET) == SASS_SNIPPET_NORMALIZED


@pytest.mark.parametrize("name", SASS_FIXTURES)
def test_normalize_sass_removes_encodings_headers_and_whitespace(name: str) -> None:
    raw = _read(name)
    norm = normalize_sass(raw)
    assert "/* 0x" in raw and "0x" in norm
    assert not re.search(r"/\*\s*0x", norm)
    assert ".headerflags" not in norm and "code for" not in norm and ".target" not in norm
    assert "....." not in norm
    lines = norm.splitlines()
    assert all(line and line == line.strip() and "  " not in line and "\t" not in line for line in lines)
    # every line is a Function header or an addressed instruction
    assert all(line.startswith("Function : ") or _ADDRESS.match(line) for line in lines)
    assert [line for line in lines if line.startswith("Function : ")] == [
        "Function : " + m for m in re.findall(r"Function : (\S+)", raw)
    ]


@pytest.mark.parametrize("name", SASS_FIXTURES)
def test_normalize_sass_keeps_every_instruction_but_padding(name: str) -> None:
    raw = _read(name)
    norm = normalize_sass(raw)
    raw_instructions = re.findall(r"/\*([0-9a-f]+)\*/\s+([^;]*?)\s*;", raw)
    kept = [(a, " ".join(body.split())) for a, body in raw_instructions]
    norm_instructions = [(m.group(1), m.group(2)) for m in re.finditer(r"^/\*([0-9a-f]+)\*/ (.*?) ?;$", norm, re.M)]
    # normalised instructions are the raw ones in order, minus a tail of padding in each function
    dropped = [pair for pair in kept if pair not in norm_instructions]
    assert norm_instructions == [pair for pair in kept if pair not in dropped]
    assert dropped, "the fixtures end in padding"
    for address, body in dropped:
        assert body == "NOP" or body == f"BRA 0x{int(address, 16):x}"
    assert not re.search(r"\bNOP\b", norm)


def test_normalize_sass_padding_gone_after_exit_and_ret() -> None:
    for name in SASS_FIXTURES:
        for piece in split_sass(normalize_sass(_read(name))).values():
            last = piece.splitlines()[-1]
            assert re.search(r"\b(EXIT|RET\.REL\.NODEC R\d+ 0x0) ;$", last), last
    # init_rank<float> ends with the RET of its division subroutine, then BRA-to-self and NOPs
    init = split_sass(normalize_sass(_read("init_rank_float.sm_89.sass")))[INIT_RANK]
    assert init.splitlines()[-1] == "/*04e0*/ RET.REL.NODEC R4 0x0 ;"
    assert "BRA 0x4f0" not in init


@pytest.mark.parametrize("name", SASS_FIXTURES)
def test_normalize_sass_branch_targets_are_labels(name: str) -> None:
    for fname, piece in split_sass(normalize_sass(_read(name))).items():
        labels = {int(a, 16) for a in _ADDRESS.findall(piece)}
        targets = [int(t, 16) for t in _TARGET.findall(piece)]
        assert targets, fname
        assert all(t in labels for t in targets), fname


def test_normalize_sass_snippet_branch_target_kept() -> None:
    norm = normalize_sass(SASS_SNIPPET)
    assert "@P0 BRA 0x1c0" in norm and "/*01c0*/ " in norm


@pytest.mark.parametrize("name", SASS_FIXTURES)
def test_normalize_sass_is_deterministic_and_idempotent(name: str) -> None:
    raw = _read(name)
    assert normalize_sass(raw) == normalize_sass(raw)
    assert normalize_sass(normalize_sass(raw)) == normalize_sass(raw)
    assert normalize_sass(raw.replace("\n", "\r\n")) == normalize_sass(raw)


@pytest.mark.parametrize("name", SASS_FIXTURES)
def test_normalize_sass_reduces_tokens_and_characters(name: str) -> None:
    # over the 44 exported rows: 51% fewer whitespace-separated tokens, 85% fewer characters
    raw = _read(name)
    norm = normalize_sass(raw)
    assert len(norm.split()) < 0.6 * len(raw.split())
    assert len(norm) < 0.2 * len(raw)


def test_split_sass_names_and_pieces() -> None:
    raw = _read("tiled_matmul.sm_89.sass")
    norm = normalize_sass(raw)
    assert list(split_sass(raw)) == re.findall(r"Function : (\S+)", raw) == [GEMM_D, GEMM_F]
    assert list(split_sass(norm)) == [GEMM_D, GEMM_F]
    assert "".join(split_sass(norm).values()) == norm
    for name, piece in split_sass(raw).items():
        assert piece.lstrip().startswith(f"Function : {name}\n")
        assert normalize_sass(piece) == split_sass(norm)[name]
    assert split_sass(_read("chebyshev_eval_streams.sm_89.sass")).keys() == {CHEB_CUDA}


def test_split_sass_rejects_duplicate_function() -> None:
    piece = normalize_sass(_read("init_rank_float.sm_89.sass"))
    with pytest.raises(ValueError):
        split_sass(piece + piece)


# ------------------------------------------------------------------------------------- AMD


def _metadata(text: str) -> list[str]:
    lines = text.splitlines()
    begin = next(i for i, line in enumerate(lines) if line.strip() == ".amdgpu_metadata")
    end = next(i for i, line in enumerate(lines) if line.strip() == ".end_amdgpu_metadata")
    return [line.rstrip() for line in lines[begin + 1 : end] if line.strip()]


@pytest.mark.parametrize("name", AMD_FIXTURES)
def test_normalize_amd_keeps_every_statement(name: str) -> None:
    raw = _read(name)
    norm = normalize_amd(raw)
    # no string in these files holds a ';', so the statements are the raw lines cut at ';'
    statements = [line.split(";")[0].split() for line in raw.splitlines()]
    assert [s for s in statements if s] == [line.split() for line in norm.splitlines()]
    assert ";" not in norm
    assert "\n\n" not in norm and not any(line != line.rstrip() for line in norm.splitlines())


@pytest.mark.parametrize("name", AMD_FIXTURES)
def test_normalize_amd_indentation_and_metadata(name: str) -> None:
    raw = _read(name)
    norm = normalize_amd(raw)
    yaml = _metadata(norm)
    assert yaml == _metadata(raw)  # YAML indentation is structure: kept verbatim
    assert "amdhsa.kernels:" in yaml
    outside = [line for line in norm.splitlines() if line not in yaml]
    for line in outside:
        assert not line[0].isspace() or (line[0] == "\t" and not line[1].isspace()), line
    assert '\t.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"' in outside
    assert outside[-1] == "\t.end_amdgpu_metadata"
    for kernel in split_amd(raw):
        assert f"{kernel}:" in outside  # labels stay at column 0, comment gone
        assert f"\t.amdhsa_kernel {kernel}" in outside
        assert "\t.amdhsa_next_free_vgpr" in "\n".join(outside)


def test_normalize_amd_semicolon_in_string_and_idempotent() -> None:
    text = '\t.ident\t"clang; version"   ; the ident\n\n  s_endpgm ; done\n; %bb.1:\nlabel:  ; @label\n'
    assert normalize_amd(text) == '\t.ident\t"clang; version"\n\ts_endpgm\nlabel:\n'
    escaped = '\t.ascii "a\\";b" ; c\n'
    assert normalize_amd(escaped) == '\t.ascii "a\\";b"\n'
    for name in AMD_FIXTURES:
        norm = normalize_amd(_read(name))
        assert normalize_amd(norm) == norm


def test_split_amd_templated_kernels() -> None:
    raw = _read("tiled_matmul.gfx1100.s")
    norm = normalize_amd(raw)
    names = re.findall(r"\.amdhsa_kernel (\S+)", raw)
    assert list(split_amd(raw)) == list(split_amd(norm)) == names == [GEMM_F, GEMM_D]
    pieces = split_amd(norm)
    for name, piece in pieces.items():
        lines = piece.splitlines()
        # each template instantiation sits in its own section, switched to just before it
        assert lines[0] == f"\t.section\t.text.{name},#alloc,#execinstr"
        assert lines[1] == f"\t.protected\t{name}"
        assert f"{name}:" in lines
        assert f"\t.amdhsa_kernel {name}" in lines and "\t.end_amdhsa_kernel" in lines
        assert re.fullmatch(rf"\t\.size\t{name}, \.Lfunc_end\d+-{name}", lines[-1])
        assert all(other == name or f"{other}:" not in lines for other in pieces)
        assert piece in norm
        assert normalize_amd(split_amd(raw)[name]) == piece
        # already starts with its section: only the target line is added
        assert standalone_amd_kernel(piece, norm) == '\t.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"\n' + piece


def test_split_amd_plain_kernel_and_standalone() -> None:
    norm = normalize_amd(_read("chebyshev_eval_streams.gfx1100.s"))
    pieces = split_amd(norm)
    assert list(pieces) == [CHEB_HIP]
    piece = pieces[CHEB_HIP]
    # the file's .text comes before .amdgcn_target, so the piece starts at .protected
    assert piece.startswith(f"\t.protected\t{CHEB_HIP}\n\t.globl\t{CHEB_HIP}\n")
    assert "c_taylor:" not in piece and "amdhsa.kernels" not in piece  # variables and metadata stay out
    standalone = standalone_amd_kernel(piece, norm)
    assert standalone == '\t.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"\n\t.text\n' + piece
    with pytest.raises(ValueError):
        standalone_amd_kernel("\ts_endpgm_not_there\n", norm)


def test_split_amd_only_kernels() -> None:
    # a device function that was not inlined has no .amdhsa_kernel descriptor: not a kernel
    norm = normalize_amd(_read("chebyshev_eval_streams.gfx1100.s"))
    helper = (
        "\t.text\n\t.hidden\t_Z6helperf\n\t.globl\t_Z6helperf\n\t.p2align\t2\n\t.type\t_Z6helperf,@function\n"
        "_Z6helperf:\n\ts_setpc_b64 s[30:31]\n.Lfunc_end9:\n\t.size\t_Z6helperf, .Lfunc_end9-_Z6helperf\n"
    )
    assert list(split_amd(helper + norm)) == [CHEB_HIP]


# ---------------------------------------------------------------------------- across vendors


def test_match_by_mangled_name_templates() -> None:
    sass = split_sass(normalize_sass(_read("tiled_matmul.sm_89.sass")))
    amd = split_amd(normalize_amd(_read("tiled_matmul.gfx1100.s")))
    assert set(sass) == set(amd)  # same mangled names, different order (cuobjdump lists in reverse)
    assert list(sass) != list(amd)
    assert match_kernels(sass, amd) == {GEMM_D: GEMM_D, GEMM_F: GEMM_F}


def test_match_vector_type_signature_by_base_name() -> None:
    sass = split_sass(_read("chebyshev_eval_streams.sm_89.sass"))
    amd = split_amd(_read("chebyshev_eval_streams.gfx1100.s"))
    assert set(sass).isdisjoint(amd)  # float2 mangles as 6float2 vs 15HIP_vector_typeIfLj2EE
    assert match_kernels(sass, amd) == {CHEB_CUDA: CHEB_HIP}
    # ambiguous base names are not guessed
    assert match_kernels(["_Z1kP6float2", "_Z1kP6float4"], ["_Z1kP1A", "_Z1kP1B"]) == {}


# ------------------------------------------------------------------------------- base names


@pytest.mark.parametrize(
    ("mangled", "base"),
    [
        ("_Z17count_twin_primesPKjiPj", "count_twin_primes"),
        ("_ZN3ltk4blas4gemmEPf", "gemm"),
        ("_Z6kernelIfEvPT_i", "kernel"),
        ("count_twin_primes", "count_twin_primes"),  # extern "C"
        (GEMM_D, "gemm_tiled"),
        (CHEB_HIP, "eval_polys_kernel"),
        ("_Z17dense_relu_kernelIdLi16EEvPKT_S2_S2_PS0_iii", "dense_relu_kernel"),
        ("_Z18newton_sqrt_kernelIfLi3EEvPKT_PS0_S3_Pji", "newton_sqrt_kernel"),
        ("_ZL6kernelPf", "kernel"),  # static: internal linkage
        ("_ZN12_GLOBAL__N_16kernelEPf", "kernel"),  # anonymous namespace
        ("_ZN2ns6kernelILi16ELb1EEEvPf", "kernel"),
        ("_ZN3FooIiLi3EE3barIfEEvT_", "bar"),
        ("_ZN3abc3fooB5cxx11Ev", "foo"),
        ("_ZN3FooC1Ev", "_ZN3FooC1Ev"),  # constructor: not understood, returned unchanged
    ],
)
def test_kernel_base_name(mangled: str, base: str) -> None:
    assert kernel_base_name(mangled) == base


# ------------------------------------------------------------------------------ kernel source


def test_kernel_source_plain() -> None:
    for name in ("chebyshev_eval_streams.cu", "chebyshev_eval_streams.hip.cpp"):
        source = _read(name)
        lines = source.splitlines(keepends=True)
        start = next(i for i, line in enumerate(lines) if line.startswith("__global__ void eval_polys_kernel("))
        expected = "".join(lines[start : start + 6]).rstrip("\n")
        assert expected.endswith("\n    }\n}")
        assert kernel_source(source, "eval_polys_kernel") == expected
        assert kernel_source(source, CHEB_CUDA) == expected  # mangled names are reduced first
        assert kernel_source(source, "horner_eval") is None  # a __device__ function
        assert kernel_source(source, "no_such_kernel") is None


def test_kernel_source_of_opencl_kernels() -> None:
    source = ("// comment naming block_sum(\nstatic inline float twice(float v) { return 2.0f * v; }\n\n"
              "__kernel void scale(__global float *y,\n                    float s) {\n"
              "    y[get_global_id(0)] = twice(s);\n}\n"
              "kernel void block_sum(global const float *x) { if (x[0] > 0) { } }\n")
    assert kernel_source(source, "scale", opencl=True) == (
        "__kernel void scale(__global float *y,\n                    float s) {\n"
        "    y[get_global_id(0)] = twice(s);\n}")
    assert kernel_source(source, "block_sum", opencl=True) == \
        "kernel void block_sum(global const float *x) { if (x[0] > 0) { } }"
    assert kernel_source(source, "twice", opencl=True) is None   # a helper, not a kernel
    assert kernel_source(source, "scale") is None   # no __global__ function in CUDA terms


def test_kernel_source_template() -> None:
    for name in ("tiled_matmul.cu", "tiled_matmul.hip.cpp"):
        source = _read(name)
        text = kernel_source(source, kernel_base_name(GEMM_F))
        assert text is not None
        assert text.startswith("template <typename T>\n__global__ void gemm_tiled(int M, int N, int K,")
        assert text.endswith("        C[idx] = alpha * acc + beta * C[idx];\n    }\n}")
        assert text.count("__global__") == 1 and "host_gemm" not in text
        assert text in source


LAUNCH_BOUNDS_SOURCE = """#include <cuda_runtime.h>
#define BLOCK 256

__global__ void scale(float* x, int n);   // declaration only, no body

/* a comment with a brace { that is not code */
template <typename T, int N>
__global__ void __launch_bounds__(BLOCK, 2)
scale_t(T* __restrict__ x,
        int n)  // } another brace in a comment
{
    const char* s = "}{";   // braces in a string
    char c = '}';
    int big = 1'000'000;
    if (n > 0) { x[0] = T(N) + s[0] + c + big; }
}

__device__ float scale_helper(float v) { return 2.0f * v; }

static __global__
void __launch_bounds__(BLOCK) scale(float* x, int n)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x) { x[i] = scale_helper(x[i]); }
}

int main() { scale<<<1, BLOCK>>>(nullptr, 0); scale_t<float, 2><<<1, 1>>>(nullptr, 0); }
"""


def test_kernel_source_launch_bounds_comments_and_strings() -> None:
    scale_t = kernel_source(LAUNCH_BOUNDS_SOURCE, "scale_t")
    assert scale_t is not None
    assert scale_t.startswith("template <typename T, int N>\n__global__ void __launch_bounds__(BLOCK, 2)\nscale_t(")
    assert scale_t.endswith("if (n > 0) { x[0] = T(N) + s[0] + c + big; }\n}")
    scale = kernel_source(LAUNCH_BOUNDS_SOURCE, "scale")
    # the declaration without a body is skipped; the definition starts at its first line
    assert scale == (
        "static __global__\nvoid __launch_bounds__(BLOCK) scale(float* x, int n)\n{\n"
        "    for (int i = threadIdx.x; i < n; i += blockDim.x) { x[i] = scale_helper(x[i]); }\n}"
    )
    assert kernel_source(LAUNCH_BOUNDS_SOURCE, "scale_helper") is None
    assert kernel_source(LAUNCH_BOUNDS_SOURCE, "_ZL5scalePfi") == scale


def test_kernel_source_extern_c_block() -> None:
    source = 'extern "C" { __global__ void fill(int* p) { *p = 1; } }\n'
    assert kernel_source(source, "fill") == "__global__ void fill(int* p) { *p = 1; }"
    source = '#define KERNEL_OPEN {\nextern "C"\n__global__ void fill(int* p)\n{ *p = 1; }\n'
    assert kernel_source(source, "fill") == 'extern "C"\n__global__ void fill(int* p)\n{ *p = 1; }'
