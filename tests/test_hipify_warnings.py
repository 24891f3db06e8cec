"""hipify-perl's warnings rebuilt from its fast mode: equal to its default mode's on real files
(the real tool both ways), and the pieces on their own."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness.project import REPO

from cass.engine.actions import ActionRunner, plan
from cass.translate.hipify_warnings import (
    WarningTables,
    candidate_lines,
    map_line_numbers,
    translated_text_warnings,
    warning_check,
)
from store import Store
from toolchains import Step, local_executor

SCRIPT_6 = """
my %deprecated_funcs = (
    "cudaThreadExit" => "10.0",
    "texture" => "12.0",
);
sub warnUnsupportedFunctions {
    foreach $func (
        "nvrtcGetSupportedArchs",
        "CUB_CAT"
    )
    { my $mt = m/($func)/g; print STDERR "  warning: $fileName:$line_num: unsupported identifier \\"$func\\"\\n"; }
}
sub warnUnsupportedDeviceFunctions {
    foreach $func ("umin") { my $mt = m/\\b($func)\\b\\s*\\(\\s*.*\\s*\\)/g; print STDERR "$func: $_\\n"; }
}
sub warnDeprecatedFunctions { while (my($func, $val) = each %deprecated_funcs) { my $mt = m/($func)/g; } }
@whitelist = (
      "cudaDevice"
    , "cudaInput"
);
"""
SCRIPT_7 = """
@HipOnlyUnsupportedFunctions = (
    "cudaGraphInstantiateWithParams",
);
sub warnHipOnlyUnsupportedFunctions { foreach $func (@HipOnlyUnsupportedFunctions) { my $mt = m/\\b($func)\\b/g; } }
@whitelist = ("cudaDevice");
@statNames = ("error", "init");
"""


def test_tables_come_from_the_scripts_warn_subs_and_the_tables_they_loop_over():
    six = WarningTables.from_script(SCRIPT_6)
    assert six.names == ("CUB_CAT", "cudaThreadExit", "nvrtcGetSupportedArchs", "texture", "umin")
    assert six.whitelist == ("cudaDevice", "cudaInput")
    # names matched as plain substrings, the line not printed; umin's check looks at the line
    assert six.substring_names == ("CUB_CAT", "cudaThreadExit", "nvrtcGetSupportedArchs", "texture")
    seven = WarningTables.from_script(SCRIPT_7)
    assert seven.names == ("cudaGraphInstantiateWithParams",)   # not @statNames, which no warn sub reads
    assert seven.word_names == ("cudaGraphInstantiateWithParams",) and seven.substring_names == ()


def test_lines_checked_only_by_plain_matches_are_checked_once_per_sequence_of_their_words():
    six = WarningTables.from_script(SCRIPT_6)
    text = ("GLuint texture;\nint x;\nvoid bind(GLuint texture, int t);\ncudaThreadExit(); // texture\n"
            "y = umin(texture, 1);\nGLuint texture;\n")
    check = warning_check(text, six)
    assert check.lines == ("texture", "cudaThreadExit texture", "y = umin(texture, 1);")
    assert check.origins == ((1, 3, 6), (4,), (5,)) and check.candidates == 5
    stderr = ("  warning: k.cu:1: removed identifier \"texture\" since CUDA 12.0\n"
              "  warning: k.cu:2: deprecated identifier \"cudaThreadExit\" since CUDA 10.0\n"
              "  warning: k.cu:2: removed identifier \"texture\" since CUDA 12.0\n"
              "  warning: k.cu:#3 : translated-text warning, made on the whole file instead\n"
              "  warning: k.cu:3: unsupported device function \"umin\": y = umin(texture, 1);\n")
    assert map_line_numbers(stderr, "k.cu", check.origins) == (
        "  warning: k.cu:1: removed identifier \"texture\" since CUDA 12.0\n"
        "  warning: k.cu:3: removed identifier \"texture\" since CUDA 12.0\n"
        "  warning: k.cu:4: deprecated identifier \"cudaThreadExit\" since CUDA 10.0\n"
        "  warning: k.cu:4: removed identifier \"texture\" since CUDA 12.0\n"
        "  warning: k.cu:5: unsupported device function \"umin\": y = umin(texture, 1);\n"
        "  warning: k.cu:6: removed identifier \"texture\" since CUDA 12.0\n")
    # a scalar m//g match starts where the previous one ended: the words keep their order; a
    # substring match sees a word from its first name to its last
    assert warning_check("a = cudaThreadExit(CUB_CAT);\nb = CUB_CAT(cudaThreadExit);\nxCUB_CATx(3);\n"
                         "GLuint texture;\n", six).lines == ("cudaThreadExit CUB_CAT", "CUB_CAT cudaThreadExit",
                                                              "CUB_CAT", "texture")
    seven = WarningTables(("texture",), (), (), ("texture",))
    # whole-word checks: a name inside a longer word finds nothing, so the line needs no check
    assert warning_check("GLuint textures;\nGLuint texture;\n", seven).origins == ((2,),)


def test_lines_numbers_and_translated_text_checks():
    tables = WarningTables.from_script(SCRIPT_6)
    text = "int a;\nx = CUB_CATX(1);\n\ncudaThreadExit();\n\n"
    assert candidate_lines(text, tables) == [2, 4]
    check = warning_check(text, tables)
    assert check.text == b"CUB_CAT\ncudaThreadExit\n" and check.origins == ((2,), (4,))
    stderr = ("  warning: k.cu:2: deprecated identifier \"cudaThreadExit\" since CUDA 10.0\n"
              "  k.cu:1: warning: unsupported HIP identifier: CUB_CAT\n  warning: other.cu:1: x\n")
    # a line without a number of this file stays behind the warning it followed
    assert map_line_numbers(stderr, "k.cu", check.origins) == (
        "  k.cu:2: warning: unsupported HIP identifier: CUB_CAT\n  warning: other.cu:1: x\n"
        "  warning: k.cu:4: deprecated identifier \"cudaThreadExit\" since CUDA 10.0\n")
    cuda = "cudaDevice d;\nint cudaFooBar(void);\nint x;\n"
    hip = '#include "hip/hip_runtime.h"\ncudaDevice d;\nint cudaFooBar(void);\nint x;\n'
    assert translated_text_warnings("k.cu", cuda, hip, tables) == "  warning: k.cu:#2 : int cudaFooBar(void);\n"


SUBSTRINGS = """// names inside other names, in both orders, twice on a line, in comments
int a = CUB_CAT_(x) + CUB_CAT(y);
int b = CUB_CAT(y) + CUB_CAT_(x);
CUB_CAT_(z);
GLuint texture, textures; // texture
cudaThreadExit(); cudaThreadExit();
\tGLuint texture;\r
"""
LEFTOVERS = """// no include: hipify-perl adds one on top
__global__ void scale(float *x) { x[threadIdx.x] *= 2.0f; }
int cudaDeviceCount;                        // whitelisted names are never flagged
void run(float *d) {
  cudaThreadSynchronize();
  cudaMemcpyToArray(0, 0, 0, d, 4, cudaMemcpyHostToDevice);
  int lanes = cudaMyOwnHelper(d);           // a cuda[A-Z] name hipify-perl does not know
  cudaGraphInstantiateWithParams(0, 0, 0);  // unsupported in 6.0 (left as it is), mapped in 7.0
  cudaStreamGetCaptureInfo_v3(0, 0);        // unsupported in 7.0
  float v = __shfl_down_sync(0xffffffff, 1.0f, 1) + __umul24(2, 3);
  scale<<<1, 32>>>(d);
}
"""
def glext_part() -> str:
    """The first 150 lines of Khronos' GL/glext.h that name ``texture`` (a CUDA identifier removed in
    CUDA 12), with the 100 lines before the first of them."""
    lines = Path("/usr/include/GL/glext.h").read_text().splitlines()
    naming = [n for n, line in enumerate(lines) if "texture" in line][:150]
    return "\n".join([*lines[max(naming[0] - 100, 0):naming[0]], *(lines[n] for n in naming)]) + "\n"


REAL_FILES = ["corpus/reduction_scan/warp_shuffle_reduce.cu", "tests/fixtures/library_tree/src/sparse/spmv_csr.cu",
              "tests/fixtures/library_tree/src/primitives/warp_reduce.cu",
              "tests/fixtures/library_tree/include/ltk/check.cuh"]


@pytest.mark.slow
def test_rebuilt_warnings_equal_the_default_modes(toolchains, tmp_path):
    amd = toolchains["amd"]
    tables = WarningTables(*amd.hipify_warning_tables())
    store = Store(tmp_path / "store")
    runner = ActionRunner(store, local_executor({"amd": amd}), 600)
    files = {p.rsplit("/", 1)[-1]: (REPO / p).read_text() for p in REAL_FILES} | {"glext_part.h": glext_part(),
                                                                                 "substrings.cu": SUBSTRINGS,
                                                                                 "leftovers.cu": LEFTOVERS}
    plans, silent = {}, set()
    for name, text in files.items():
        digest = store.put(text.encode())
        check = warning_check(text, tables)
        plans[name] = (plan(amd, Step("hipify-perl", (name,), ("hip",), stdout_as="hip"), {name: digest}),
                       plan(amd, amd.hipify_step(name), {name: digest}), check.origins,
                       plan(amd, amd.hipify_warnings_step(name), {name: store.put(check.text)}))
    outcomes = runner.run([a for full, quiet, _, check in plans.values() for a in (full, quiet, check)], desc="hipify")
    for name, (full, quiet, origins, check) in plans.items():
        default = outcomes[full.key].record
        assert outcomes[quiet.key].record.outputs["hip"] == default.outputs["hip"]   # the same HIP text
        rebuilt = map_line_numbers(store.get_text(outcomes[check.key].record.stderr), name, origins) + \
            translated_text_warnings(name, files[name], store.get_text(default.outputs["hip"]), tables)
        assert rebuilt == store.get_text(default.stderr), name
        silent |= {name} if not rebuilt else set()
        if name == "glext_part.h":
            assert len(origins) < 10 and rebuilt.count("texture") > 100   # a few lines checked for 150
    # the files written to warn do; of the real ones only check.cuh has nothing to warn of with hipify-perl 6.0
    # (their warp-sync calls and cuSPARSE generic API names warn there), and none does with hipify-perl 7.2
    assert not silent & {"glext_part.h", "substrings.cu", "leftovers.cu"}, silent
    assert "cudaMyOwnHelper" in rebuilt and "cudaThreadSynchronize" in rebuilt
    if amd.hip_version() < (6, 0):   # hipify-perl 6.0 does not translate __umul24; 7.2 does
        assert silent == {"check.cuh"} and "__umul24" in rebuilt
