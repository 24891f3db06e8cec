"""Branch parity: the branches of conditional groups, the markers, and real nvcc and hipcc preprocessing a
hipified, repaired sample whose conditionals take different branches on the two sides."""

from __future__ import annotations

from cass.compiling.branch_parity import aligned, branches, divergences, instrument, marker, taken
from cass.engine.actions import ActionRunner, plan
from cass.translate.names import toolchain_names
from cass.translate.repair import RepairTarget, repair
from toolchains import load_hip_nvidia, local_executor

NESTED = """#if A /* #if not here */
int a;
#elif defined(B) && \\
      C > 1
# ifdef D
int d;
# endif
#else
// #ifdef E in a comment
#endif
#ifndef F
#endif
"""


def test_branches_follow_groups_nesting_continuations_and_skip_comments():
    found = branches(NESTED)
    assert [(b.number, b.group, b.line, b.end, b.parent) for b in found] == [
        (0, 0, 1, 1, None), (1, 0, 3, 4, None), (2, 1, 5, 5, 1), (3, 0, 8, 8, None), (4, 2, 11, 11, None)]
    assert found[1].condition == "elif defined(B) &&        C > 1"
    marked = instrument(NESTED, 7, found)
    assert marked.count("#warning __cass_branch_h_7_") == 5 and marked.splitlines()[:2] == [
        "#if A /* #if not here */", "#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)"]
    assert aligned(found, branches(NESTED.replace("int a;", "long a;")))
    assert not aligned(found, branches(NESTED.replace("#ifndef F\n#endif\n", "")))


def test_divergences_are_reported_once_at_the_outermost_group_both_sides_entered():
    found = branches(NESTED)
    nvidia = {("h", 0, 1), ("h", 0, 2), ("h", 0, 4), ("d", 0, 0), ("d", 0, 4)}
    amd = {("h", 0, 3), ("h", 0, 4), ("d", 0, 0), ("d", 0, 4)}
    assert divergences([("k.cu", found)], nvidia, amd) == [
        {"file": "k.cu", "line": 1, "pass": "host", "nvidia_line": 3, "amd_line": 8, "macros": ["A", "B", "C"]}]
    stderr = "k.cu:3:2: warning: #warning __cass_branch_d_0_12__ [-Wcpp]\n__cass_branch_h_1_0__"
    assert taken(stderr) == {("d", 0, 12), ("h", 1, 0)}
    assert "__cass_branch_d_3_9__" in marker(3, 9)


SAMPLE = """#include <cuda_runtime.h>
#include <cstdio>
#ifndef __clang__
#define FAST 1
#else
#define FAST 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
#define LANES 32
#endif
#if CUDART_VERSION >= 9000
#define MODERN 1
#endif
#ifdef NDEBUG
#define CHECKED 0
#endif
__global__ void k(int *x) { x[threadIdx.x] = FAST; }
int main() { return 0; }
"""


def translated_sample(toolchains, store) -> tuple[ActionRunner, str, str]:
    """A runner on both toolchains, the digest of SAMPLE and its HIP text after hipify-perl and the repairs."""
    nvidia, amd = toolchains["nvidia"], toolchains["amd"]
    runner = ActionRunner(store, local_executor({"nvidia": nvidia, "amd": amd}), 300)
    cuda = store.put(SAMPLE.encode())
    hipify = plan(amd, amd.hipify_step("k.cu"), {"k.cu": cuda})
    hip_text = store.get_text(runner.run([hipify], desc="hipify")[hipify.key].record.outputs["hip"])
    hip_text, _ = repair(hip_text, RepairTarget(amd.hip_version(), toolchain_names(nvidia, amd, load_hip_nvidia())))
    return runner, cuda, hip_text


def test_real_preprocessors_find_the_branches_that_differ_after_hipify_and_repair(toolchains, store):
    nvidia, amd = toolchains["nvidia"], toolchains["amd"]
    runner, _, hip_text = translated_sample(toolchains, store)
    found = branches(SAMPLE)
    assert aligned(found, branches(hip_text))
    flags = {"common": ["-std=c++17", "-DNDEBUG", "-w"], "host": ["-Os"], "opt": ["-Os"]}
    actions = {
        "nvidia": plan(nvidia, nvidia.preprocess_step("k.cu", "sm_89", flags), {"k.cu": store.put_text(
            instrument(SAMPLE, 0, found))}),
        "amd": plan(amd, amd.preprocess_step("k.cu", "gfx1100", flags), {"k.cu": store.put_text(
            instrument(hip_text, 0, branches(hip_text)))}),
    }
    outcomes = runner.run(list(actions.values()), desc="preprocess")
    seen = {v: taken(store.get_text(outcomes[a.key].record.stderr)) for v, a in actions.items()}
    assert all(outcomes[a.key].ok for a in actions.values())
    assert {b for p, _, b in seen["nvidia"] if p == "h"} == {0, 3, 4}   # no clang, CUDART_VERSION, NDEBUG
    found_divergences = divergences([("k.cu", found)], seen["nvidia"], seen["amd"])
    assert found_divergences == [   # CUDART_VERSION and NDEBUG agree (the repairs carried the version)
        {"file": "k.cu", "line": 3, "pass": "host", "nvidia_line": 3, "amd_line": 5, "macros": ["__clang__"]},
        {"file": "k.cu", "line": 3, "pass": "device", "nvidia_line": 3, "amd_line": 5, "macros": ["__clang__"]},
        {"file": "k.cu", "line": 8, "pass": "device", "nvidia_line": 8, "amd_line": None,
         "macros": ["__CUDA_ARCH__"]},
    ]


def test_what_a_has_include_query_asks_about_is_no_macro():
    text = "#if __has_include(<cuda_fp16.h>) && USE_HALF\n#else\n#endif\n"
    found = branches(text)
    assert divergences([("k.cu", found)], {("h", 0, 0)}, {("h", 0, 1)}) == [
        {"file": "k.cu", "line": 1, "pass": "host", "nvidia_line": 1, "amd_line": 2, "macros": ["USE_HALF"]}]


def test_a_chunk_is_checked_from_the_store_alone_on_a_worker(toolchains, store):
    """A worker marks a chunk and settles the samples the store has both preprocessing runs of; the others come
    back marked, with their actions, for the driver to run; then a worker settles them from the store (an action
    the driver saw fail transiently makes the verdict ``unknown``)."""
    import polars as pl

    from cass.engine.settle import settle_chunk
    from cass.stages.branch_parity import checked_chunk

    nvidia, amd = toolchains["nvidia"], toolchains["amd"]
    runner, cuda, hip_text = translated_sample(toolchains, store)
    rows = pl.DataFrame([{"sample_id": "s", "files": [{"path": "k.cu", "digest": cuda}],
                          "hip_files": [{"path": "k.cu", "digest": store.put_text(hip_text)}], "include_dirs": ["."],
                          "build_flags": []}])
    flags = {"common": ["-std=c++17", "-DNDEBUG", "-w"], "host": ["-Os"], "opt": ["-Os"]}
    args = (checked_chunk, str(store.root), ("nvidia", "amd"),
            ({"nvidia": nvidia, "amd": amd}, {"nvidia": ("sm_89", flags), "amd": ("gfx1100", flags)}))

    first = settle_chunk((rows, None), *args, {})
    assert first.added == [] and list(first.unsettled) == ["s"] and first.found == {"nvidia": set(), "amd": set()}
    missing = first.missing["s"]
    assert {vendor: [a.vendor for a in actions] for vendor, actions in missing.items()} == {
        "nvidia": ["nvidia"], "amd": ["amd"]}   # one preprocessing run a side, each under its own vendor
    waiting = {vendor: actions[0] for vendor, actions in missing.items()}
    runner.run([waiting["amd"]], desc="preprocess")
    assert list(settle_chunk((rows, first.unsettled), *args, {}).unsettled) == ["s"]   # still one side to run
    told = settle_chunk((rows, first.unsettled), *args, {waiting["nvidia"].key: "killed by signal 9"})
    assert [a["branch_parity"] for a in told.added] == ["unknown:nvidia"] and not told.unsettled

    runner.run([waiting["nvidia"]], desc="preprocess")
    second = settle_chunk((rows, first.unsettled), *args, {})
    assert not second.unsettled and second.added[0]["branch_parity"] == "diverged"
    assert [(d["line"], d["pass"], d["macros"]) for d in second.added[0]["branch_divergences"]] == [
        (3, "host", ["__clang__"]), (3, "device", ["__clang__"]), (8, "device", ["__CUDA_ARCH__"])]
    again = settle_chunk((rows, None), *args, {})   # marked afresh: the same verdict, every lookup found
    assert again.added == second.added and {v: len(k) for v, k in again.found.items()} == {"nvidia": 1, "amd": 1}
