"""The yield report: causes without locations, counts and ratios per corpus, and the Markdown
tables bench/RESULTS.md carries."""

from __future__ import annotations

import polars as pl
import yaml
from harness.project import REPO

from bench.corpora import HECBENCH, SPLIT_FILE, TUNE_BY_HISTORY, hecbench_benchmarks, load_split, make_split, split_of
from cass.pipeline.manifests import DROPPED_SCHEMA
from cass.pipeline.metrics import percent_of
from cass.report.yields import cause, failures, hip_nvidia_cell, hip_nvidia_counts, markdown, report, share
from toolchains.diagnostics import categorize


def test_causes_drop_targets_files_and_line_numbers():
    assert cause("host:x86_64: include/starpu.h:38:10: fatal error: starpu_config.h: No such file or directory\n"
                 "In file included from ...") == "fatal error: starpu_config.h: No such file or directory"
    assert cause('device:sm_89: src/a.cu(15): error: identifier "foo" is undefined\nmore') == \
        'error: identifier "foo" is undefined'
    assert cause("device:gfx1100: ./x.cuh:3:1: error: use of undeclared identifier 'checkCudaErrors'") == \
        "error: use of undeclared identifier 'checkCudaErrors'"


def test_a_missing_project_header_is_a_generated_header_not_a_translation_gap():
    stderr = "a.cu:2:10: fatal error: 'ATen/ops/empty.h' file not found"
    assert categorize(stderr, "amd", ["ATen/ops/empty.h"]) == "generated_header"
    assert categorize(stderr, "amd", []) == "missing_header"
    assert categorize("a.cu:2:10: fatal error: fftw3.h: No such file or directory", "nvidia", ["x.h"]) == \
        "missing_header"


def test_counts_ratios_and_top_causes_per_corpus():
    ids = [f"s{i}" for i in range(7)]
    candidates = pl.DataFrame({"sample_id": ids, "origin": ["a"] * 4 + ["b"] * 3, "path": ids,
                               "configured_headers": [["c.h"], [], ["c.h"], [], [], [], []],
                               "build_context": ["makefile:a/Makefile"] * 3 + ["standalone"] * 2 + ["cmake:."] * 2})
    nvidia_ok, amd_ok = {"s0", "s1", "s2", "s4", "s6"}, {"s0", "s1", "s5"}

    def drop(sample, stage, reason, detail):
        return {"sample_id": sample, "origin": "a" if sample < "s4" else "b", "path": sample, "domain": None,
                "stage": stage, "reason": reason, "detail": detail}

    dropped = {
        "nvidia": pl.DataFrame([drop("s3", "compile_nvidia", "compile_failed:generated_header",
                                     "host:x86_64: k.cu:1:10: fatal error: gen.h: No such file or directory"),
                                drop("s5", "compile_nvidia", "compile_failed:syntax", "host:x86_64: e.cu(2): error: "
                                     "expected a \";\"")], schema=DROPPED_SCHEMA),
        "amd": pl.DataFrame([drop("s2", "compile_amd", "compile_failed:hipify_gap",
                                  "device:gfx1100: k.cu:4:3: error: use of undeclared identifier '__ldg_x'"),
                             drop("s3", "hipify", "hipify_failed", "k.cu: perl died"),
                             drop("s4", "compile_amd", "compile_failed:hipify_gap",
                                  "device:gfx1100: z.cu:9:3: error: use of undeclared identifier '__ldg_x'"),
                             drop("s6", "compile_amd", "out_of_scope:graphics",
                                  "undeclared: device:gfx1100: g.cu:2:1: error: unknown type name 'GLuint'")],
                            schema=DROPPED_SCHEMA),
    }
    failed = failures(candidates, dropped, nvidia_ok)
    assert failed.height == 6 and failed.filter(pl.col("nvidia_ok")).height == 3
    # s0 includes a graphics API's header: out of scope though it paired (neither NVIDIA ok nor a pair), as s6 is
    # for its failure counted out_of_scope: the shares are those of the samples in scope
    hip_nvidia = pl.DataFrame({"sample_id": ["s0", "s1"], "hip_nvidia_build": ["ok", "undeclared"]})
    # s1 and s4 compiled for NVIDIA only through a fallback toolchain (Debian's CUDA), s1 and s5 for AMD only through
    # one (the build root's headers); s1 is a pair
    yields = report(candidates, nvidia_ok, amd_ok, failed, repaired={"s1"}, included_units={"a": 2}, needs_api={"s0"},
                    hip_nvidia=hip_nvidia, nvidia_fallback={"s1", "s4"}, amd_fallback={"s1", "s5"})
    a = yields["corpora"]["a"]
    assert (a["files"], a["included_units"], a["out_of_scope"], a["nvidia_ok"], a["amd_ok"], a["both"],
            a["both_over_nvidia_ok"], a["both_over_files"]) == (4, 2, 1, 2, 2, 1, 0.5, 0.25)
    b = yields["corpora"]["b"]
    assert (b["out_of_scope"], b["nvidia_ok"], b["amd_failures_of_nvidia_ok"]) == (1, 1, {"hipify_gap": 1})
    assert a["nvidia_ok_with_configured_headers"] == 1 and a["pairs_repaired"] == 1
    assert (a["nvidia_ok_debian_cuda"], a["pairs_debian_cuda"], b["nvidia_ok_debian_cuda"], b["pairs_debian_cuda"]) == \
        (1, 1, 1, 0)
    assert (a["amd_ok_build_root"], a["pairs_build_root"], b["amd_ok_build_root"], b["pairs_build_root"]) == \
        (1, 1, 1, 0)
    assert a["amd_failures_of_nvidia_ok"] == {"hipify_gap": 1}
    assert a["amd_failures"] == {"hipify_gap": 1, "hipify_failed": 1}
    assert a["top_nvidia_causes"] == [{"cause": "fatal error: gen.h: No such file or directory", "files": 1}]
    assert yields["all"]["top_amd_causes_of_nvidia_ok"] == [
        {"cause": "error: use of undeclared identifier '__ldg_x'", "files": 2}]
    assert yields["corpora"]["b"]["both_over_nvidia_ok"] == 0.0
    table = markdown(yields, {"a": "corpus A"})
    # s1, the one pair in scope, builds for AMD only; s0 built on both platforms but is out of scope
    assert (a["pairs_hip_nvidia_checked"], a["pairs_hip_nvidia_ok"], a["pairs_amd_only"]) == (1, 0, {"undeclared": 1})
    assert a["files_by_build_context"] == {"makefile": 3, "standalone": 1}
    assert ("| corpus A | 4 | 2 | 1 | 2 | 2 | 1 | 50.0% | 25.0% | 1 | 1 / 1 | 1 / 1 | 1 | 0 / 1 (0.0%) | makefile 3, "
            "standalone 1 |" in table)
    assert ("| all | 7 | 2 | 2 | 3 | 3 | 1 | 33.3% | 14.3% | 1 | 2 / 1 | 2 / 1 | 1 | 0 / 1 (0.0%) | makefile 3, "
            "standalone 2, cmake 2 |" in table)
    assert "pairs that build for AMD only (not through HIP's NVIDIA back end): undeclared 1." in table
    # of the pairs built on HIP-NVIDIA, those whose AMD side took the build root's headers (and so did the check)
    assert a["pairs_hip_nvidia_ok_build_root"] == 0   # s1, the pair through the build root's headers, failed there
    built = pl.DataFrame({"sample_id": ["s1", "s4", "s5"], "hip_nvidia_build": ["ok"] * 3})   # s4, s5: no pairs
    again = report(candidates, nvidia_ok, amd_ok, failed, repaired={"s1"}, included_units={"a": 2},
                   needs_api={"s0"}, hip_nvidia=built, nvidia_fallback={"s1", "s4"}, amd_fallback={"s1", "s5"})
    assert (again["all"]["pairs_hip_nvidia_ok"], again["all"]["pairs_hip_nvidia_ok_build_root"],
            again["all"]["pairs_hip_nvidia_ok_debian_cuda"]) == (1, 1, 1)   # s1: Debian's CUDA on its NVIDIA side
    counts = hip_nvidia_counts(hip_nvidia, {"s0", "s1"}, build_root={"s0", "s1", "s5"})
    assert (counts["pairs_hip_nvidia_ok"], counts["pairs_hip_nvidia_ok_build_root"]) == (1, 1)
    assert hip_nvidia_cell(counts) == \
        "1 / 2 (50.0%; 1 with the build root's headers)"
    on_debian = hip_nvidia_counts(hip_nvidia, {"s0", "s1"}, build_root={"s0"}, debian_cuda={"s0", "s1"})
    assert hip_nvidia_cell(on_debian) == "1 / 2 (50.0%; 1 with the build root's headers; 1 on Debian's CUDA)"
    assert hip_nvidia_counts(hip_nvidia, {"s0", "s1"}, debian_cuda={"s1"})["pairs_hip_nvidia_ok_debian_cuda"] == 0
    assert hip_nvidia_counts(hip_nvidia, {"s0", "s1"}, build_root={"s1"})["pairs_hip_nvidia_ok_build_root"] == 0
    assert "| `error: use of undeclared identifier '__ldg_x'` | 1 |" in table


def test_percentages_are_printed_from_the_counts_not_from_the_rounded_share():
    """191 of 196 is 97.449%: its 4-decimal share (kept in the metrics) is 0.9745, which printed again would be 97.5%
    and pass a 97.5% bar the counts miss."""
    assert share(191, 196) == 0.9745 and percent_of(191, 196) == "97.4%"
    counts = {"pairs_hip_nvidia_checked": 196, "pairs_hip_nvidia_ok": 191, "pairs_hip_nvidia_ok_build_root": 0,
              "pairs_hip_nvidia_ok_debian_cuda": 9}
    assert hip_nvidia_cell(counts) == "191 / 196 (97.4%; 9 on Debian's CUDA)"
    assert percent_of(0, 0) == "-" and share(0, 0) is None


def test_the_committed_split_is_the_seeded_hash_of_every_development_corpus():
    committed = load_split()
    packages = [p["name"] for p in yaml.safe_load((REPO / "params.yaml").read_text())["debian_sources"]["packages"]]
    benchmarks = sorted(committed["hecbench"]["tune"] + committed["hecbench"]["check"])
    if HECBENCH.is_dir():   # the development copy beside the checkout: every benchmark of it has its half
        assert benchmarks == hecbench_benchmarks(HECBENCH)
    assert committed == make_split(packages, benchmarks), f"{SPLIT_FILE} is stale: run python bench/corpora.py"
    assert all(committed["packages"][p] == "tune" for p in TUNE_BY_HISTORY)
    assert {split_of(p) for p in committed["packages"]} == {"tune", "check"}
    assert len(benchmarks) == 409 and min(len(committed["hecbench"][h]) for h in ("tune", "check")) > 150
