"""Configure-time headers: CMake's and autoconf's template rules, and ingest making the headers a
tree ships only as templates (recorded, identical for both vendors, counted per sample)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from test_ingest import INGEST_PARAMS

from cass.pipeline.manifests import StageOutput
from cass.sources.configure import configure_text, configure_tree, configured_name
from cass.sources.ingest import Ingest
from store import Store

CMAKE = """#cmakedefine HAVE_FFTW
#cmakedefine USE_CUDA @USE_CUDA@
#  cmakedefine HAVE_GONE extra
#cmakedefine01 GMX_GPU_CUDA
#cmakedefine01 GMX_GPU_OPENCL
#define VERSION "@PROJECT_VERSION@"
#define FLAGS "${CMAKE_CXX_FLAGS}"
#define EMPTY "@UNSET_VALUE@"
"""


def test_cmake_rules_with_everything_off_unless_set():
    made = configure_text(CMAKE, {"USE_CUDA": "ON", "GMX_GPU_CUDA": 1, "PROJECT_VERSION": "2022.5"}, cmake=True)
    assert made.text == """/* #undef HAVE_FFTW */
#define USE_CUDA ON
/* #undef HAVE_GONE */
#define GMX_GPU_CUDA 1
#define GMX_GPU_OPENCL 0
#define VERSION "2022.5"
#define FLAGS ""
#define EMPTY ""
"""
    assert made.style == "cmake"
    assert made.used_set == ("GMX_GPU_CUDA", "PROJECT_VERSION", "USE_CUDA")
    assert made.used_unset == ("CMAKE_CXX_FLAGS", "GMX_GPU_OPENCL", "HAVE_FFTW", "HAVE_GONE", "UNSET_VALUE")


def test_cmake_false_constants_are_off():
    for value in ("OFF", "0", "", "NO", "false", "Foo-NOTFOUND"):
        assert configure_text("#cmakedefine01 X\n", {"X": value}, cmake=True).text == "#define X 0\n"
    assert configure_text("#cmakedefine01 X\n", {"X": "CUDA"}, cmake=True).text == "#define X 1\n"


def test_autoconf_undef_lines_are_defined_only_when_set():
    template = "#undef STARPU_USE_CUDA\n#undef STARPU_NMAXBUFS\n  #  undef  STARPU_HAVE_WINDOWS\nint x;\n"
    made = configure_text(template, {"STARPU_USE_CUDA": 1, "STARPU_NMAXBUFS": 8}, cmake=False)
    assert made.text == ("#define STARPU_USE_CUDA 1\n#define STARPU_NMAXBUFS 8\n  #  undef  STARPU_HAVE_WINDOWS\n"
                         "int x;\n")
    assert made.style == "autoconf" and made.used_unset == ("STARPU_HAVE_WINDOWS",)


def test_only_header_templates_whose_header_is_missing_are_configured():
    assert configured_name("src/gmxpre-config.h.cmakein") == "src/gmxpre-config.h"
    assert configured_name("include/starpu_config.h.in") == "include/starpu_config.h"
    assert configured_name("Makefile.in") is None and configured_name("lib.pc.cmakein") is None
    files = {"a/config.h.in": b"#cmakedefine A\n", "b/shipped.h.in": b"#undef B\n", "b/shipped.h": b"// real\n",
             "c/version.hpp.cmakein": b'#define V "${V}"\n'}
    made = configure_tree(files.keys(), files.__getitem__, {"V": "1.0"})
    assert sorted(made) == ["a/config.h", "c/version.hpp"]
    assert made["a/config.h"] == ("a/config.h.in", made["a/config.h"][1])
    assert made["c/version.hpp"][1].text == '#define V "1.0"\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


TREE = {
    "include/lib.h": '#include "lib_config.h"\n#if LIB_USE_CUDA\n#define LIB_KERNEL __global__\n#endif\n',
    "include/lib_config.h.cmakein": "#cmakedefine01 LIB_USE_CUDA\n#define LIB_VERSION \"@LIB_VERSION@\"\n",
    "src/k.cu": "#include <lib.h>\nLIB_KERNEL void k(float *x) { x[0] = 1.0f; }\n",
    "src/plain.cu": "__global__ void p(int *x) { x[0] = 2; }\n",
}


def ingest_tree(tmp_path: Path, configure: dict | None) -> tuple[Ingest, Store]:
    store = Store(tmp_path / "store")
    ingest = Ingest(store, {**INGEST_PARAMS, "filter": {"max_bytes": 10000, "decode_fallbacks": []}},
                    StageOutput("ingest"))
    ingest.tree(write(tmp_path / "tree", TREE), "lib", [".cu"], configure=configure)
    return ingest, store


def test_ingest_configures_the_header_and_records_who_needed_it(tmp_path):
    ingest, store = ingest_tree(tmp_path, {"LIB_USE_CUDA": 1, "LIB_VERSION": "3.1"})
    rows = {r["path"]: r for r in ingest.rows}
    k = rows["src/k.cu"]
    assert [f["path"] for f in k["files"]] == ["src/k.cu", "include/lib.h", "include/lib_config.h"]
    assert store.get_text(k["files"][2]["digest"]) == '#define LIB_USE_CUDA 1\n#define LIB_VERSION "3.1"\n'
    assert k["configured_headers"] == ["include/lib_config.h"] and k["unresolved_includes"] == []
    assert rows["src/plain.cu"]["configured_headers"] == []
    assert ingest.configured == [{"origin": "lib", "path": "include/lib_config.h",
                                  "template": "include/lib_config.h.cmakein", "style": "cmake",
                                  "digest": k["files"][2]["digest"], "set": ["LIB_USE_CUDA", "LIB_VERSION"],
                                  "unset": []}]


def test_without_configuring_the_header_stays_missing_and_is_reported(tmp_path):
    ingest, _ = ingest_tree(tmp_path, None)
    k = next(r for r in ingest.rows if r["path"] == "src/k.cu")
    assert [f["path"] for f in k["files"]] == ["src/k.cu", "include/lib.h"]
    assert k["unresolved_includes"] == ["lib_config.h"] and ingest.configured == []   # a generated header
    assert pl.DataFrame(ingest.rows)["configured_headers"].list.len().sum() == 0
