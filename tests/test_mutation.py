"""Mutation operators (:mod:`cass.text.mutation`) and the analysis's building blocks (:mod:`cass.execution.mutation`):
every operator rewrites kernel code only, the draw is fixed by its seed, and a mutant that builds to the unmutated
program's very binary is found equivalent with the real HIP-on-NVIDIA build."""

from __future__ import annotations

from collections import Counter

import pytest
from harness.project import REPO

from cass.engine.placement import Placement
from cass.execution.mutation import MutantProgram, mutate_files, score, silent
from cass.execution.programs import ProgramSource, Run, build_program_targets
from cass.pipeline.context import load_params
from cass.text.mutation import OPERATORS, sample_mutants, sites

KERNEL = """#include <hip/hip_runtime.h>
#include <cstdio>
// a comment with a + b and x[i] that no operator touches
template <int BLOCK>
__global__ void scale(const float *x, float *y, int *count, int n) {
    __shared__ float tile[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        tile[threadIdx.x] = x[i] * 2.0f;
        __syncthreads();
        y[i] = tile[threadIdx.x] + static_cast<float>(BLOCK);
        atomicAdd(count, 1);
    }
    if (0) { y[0] = 7.0f; }
}

int main() {
    const char *label = "a - b";
    float *x, *y; int *c;
    hipMalloc(&x, 1024 * sizeof(float)); hipMalloc(&y, 1024 * sizeof(float)); hipMalloc(&c, sizeof(int));
    scale<256><<<4, 256>>>(x, y, c, 1024);
    hipLaunchKernelGGL(scale<256>, dim3(8), dim3(128), 0, 0, x, y, c, 1024);
    printf("%s\\n", label);
    return 0;
}
"""


def by_operator(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for mutant in sites("k.hip", text):
        found.setdefault(mutant.operator, []).append(f"{mutant.original}->{mutant.replacement}")
    return found


def test_every_operator_rewrites_kernel_code_and_nothing_else():
    found = by_operator(KERNEL)
    assert set(found) == set(OPERATORS)
    assert "__syncthreads()->(void)0" in found["sync"]
    assert "atomicAdd(count, 1)->*(count) += (1)" in found["atomic"]
    assert found["launch"] == ["4, 256->256, 4", "dim3(8), dim3(128)->dim3(128), dim3(8)"]
    assert found["early_return"] == ["->if (blockIdx.x == gridDim.x - 1) return; "]
    assert "<-><=" in found["relational"] and "i->(i) + 1" in found["index"]
    assert {"*->/", "+->-"} <= set(found["arith"])
    assert "2.0f->3.0f" in found["constant"]
    assert {m.replacement for m in sites("h.hip", "__global__ void k(unsigned *m) { *m &= 0xFFu; *m |= 0x1EL; }")
            if m.operator == "constant"} == {"0x100u", "0x1fL"}   # hex digits are not suffixes
    assert "256->257" not in found["constant"]            # the shared array's size is a declaration
    assert not any("static_cast" in m for ms in found.values() for m in ms)   # template brackets are no comparison
    main = KERNEL.index("int main()")
    assert all(m.start < main for m in sites("k.hip", KERNEL) if m.operator != "launch")   # host code: launches only
    comment, literal = KERNEL.index("// a comment"), KERNEL.index('"a - b"')
    assert not any(comment <= m.start < KERNEL.index("\n", comment) or literal <= m.start < literal + 7
                   for m in sites("k.hip", KERNEL))


def test_a_mutant_applies_to_its_own_text_only():
    mutant = next(m for m in sites("k.hip", KERNEL) if m.operator == "sync")
    changed = mutant.apply(KERNEL)
    assert "__syncthreads" not in changed and changed.count("(void)0") == 1
    with pytest.raises(ValueError, match="another version"):
        mutant.apply(KERNEL.replace("__syncthreads();", "__syncthreads(); "[::-1]))


def test_the_draw_is_fixed_by_its_seed_and_takes_distinct_operators_first():
    files = {"k.hip": KERNEL}
    drawn = sample_mutants(files, 3, "seed-a", "program-1")
    assert drawn == sample_mutants(files, 3, "seed-a", "program-1")
    assert len({m.operator for m in drawn}) == 3
    assert sample_mutants(files, 6, "seed-a", "program-1")[:3] == drawn   # more draws extend the same sequence
    assert [m.describe() for m in drawn] != [m.describe() for m in sample_mutants(files, 3, "seed-b", "program-1")]
    assert len(sample_mutants(files, 100, "s", "p")) == len(sites("k.hip", KERNEL))   # no site drawn twice


def test_scores_count_only_mutants_that_built_and_differ():
    def mutant(group: str, binary: str | None, killed: bool | None) -> MutantProgram:
        m = MutantProgram("pairs", "p", group, sites("k.hip", KERNEL)[0], {}, original_binary="orig", binary=binary)
        m.killed = killed
        return m
    mutants = [mutant("tune", "a", True), mutant("tune", "b", False), mutant("tune", "orig", None),
               mutant("check", None, None), mutant("check", "c", True)]
    assert Counter(m.outcome for m in mutants) == {"killed": 2, "survived": 1, "equivalent": 1, "stillborn": 1}
    scores = score((m.group, m.outcome) for m in mutants)
    assert scores["all"]["score"] == round(2 / 3, 4) and scores["tune"]["score"] == 0.5
    assert scores["check"] == {"killed": 1, "survived": 0, "silent": 0, "equivalent": 0, "stillborn": 1,
                               "not_run": 0, "score": 1.0, "score_reached": 1.0}
    quiet = score([("tune", "killed"), ("tune", "silent"), ("tune", "survived"), ("tune", "killed")])["tune"]
    assert quiet["score"] == 0.5 and quiet["score_reached"] == round(2 / 3, 4)   # silent: a survivor, apart


def test_a_survivor_is_silent_only_where_every_run_shows_what_the_unmutated_program_shows(store):
    """Silent (the mutation reached no output): the same exit, kernel launches, device reads and output, timings
    aside. Any other difference, one the oracle let through, leaves it a plain survivor."""
    copy = b"device-reads 1 copies 1 pending 0\n4 daa66d2c7ddf743f 1 9.8090892502737195e-45 0 0 0\n"

    def run(output: bytes, kernels: int = 3, reads: bytes | None = copy, code: int = 0,
            args: tuple[str, ...] = ("64",)) -> Run:
        return Run("exited", code, store.put(output), store.put(b""), 0.1, None, kernels, args,
                   store.put(reads) if reads else None)

    unmutated = [run(b"sum 12.5\nkernel time 3.1 ms\n")]
    assert silent(store, [run(b"sum 12.5\nkernel time 9.7 ms\n")], unmutated)
    assert not silent(store, [run(b"sum 12.50001\nkernel time 3.1 ms\n")], unmutated)   # within the tolerance
    assert not silent(store, [run(b"sum 12.5\nkernel time 3.1 ms\n", reads=copy.replace(b"daa", b"dab"))], unmutated)
    assert not silent(store, [run(b"sum 12.5\nkernel time 3.1 ms\n", reads=None)], unmutated)
    assert not silent(store, [run(b"sum 12.5\nkernel time 3.1 ms\n", kernels=4)], unmutated)
    assert not silent(store, [run(b"sum 12.5\nkernel time 3.1 ms\n", code=1)], unmutated)
    assert not silent(store, [run(b"sum 12.5\nkernel time 3.1 ms\n", args=("32",))], unmutated)
    assert not silent(store, [run(b"sum 12.5\nkernel time 3.1 ms\n")], [])
    nan = b"device-reads 1 copies 1 pending 0\n8 0bad5eed0bad5eed 8 nan 2 nan 1\n"   # a copy whose sums are NaN
    assert silent(store, [run(b"sum 12.5\n", reads=nan)], [run(b"sum 12.5\n", reads=nan)])


@pytest.mark.slow
@pytest.mark.usefixtures("bubblewrap")
def test_a_mutant_that_builds_to_the_same_binary_is_equivalent(store, toolchains):
    """Built through HIP's NVIDIA back end as the execute stage builds a pair's HIP side: a constant changed in
    dead code gives the unmutated program's very binary (equivalent), an operator swapped in live code another."""
    params = load_params(REPO / "params.yaml")["execute"]
    files = {"k.hip": store.put_text(KERNEL)}
    dead = next(m for m in sites("k.hip", KERNEL) if m.operator == "constant" and m.original == "7.0f")
    live = next(m for m in sites("k.hip", KERNEL) if m.operator == "arith" and m.original == "*"
                and "2.0f" in KERNEL[m.start:m.start + 8])
    programs = {"original": files}
    for name, mutant in (("dead", dead), ("live", live)):
        programs[name] = {"k.hip": store.put_text(mutant.apply(KERNEL))}
    built, _ = build_program_targets(store, params, {k: ProgramSource("hip", ["k.hip"], ["."], f)
                                                        for k, f in programs.items()},
                                        Placement.local())
    assert all(b.binary for b in built.values()), built
    assert built["dead"].binary == built["original"].binary
    assert built["live"].binary != built["original"].binary
    drawn = mutate_files(store, files, ["k.hip"], 2, "seed", "k")
    assert len(drawn) == 2 and all(f["k.hip"] != files["k.hip"] for _, f in drawn)


def test_declarations_casts_templates_and_labels_are_no_sites():
    """Sites that could only give mutants that do not build, or no other program: a pointer declared with a user
    type, a cast, a dereference that starts a statement, a template's brackets and arguments, a case label, a
    literal the tokenizer splits, an array's declared sizes, a literal subscript (the constant operator's site)."""
    kernel = """__global__ void k(const float *x, float *out, int n) {
    Node *p = nullptr; uint *u = nullptr;
    half2 *h = (half2*)x; const float4 *v = reinterpret_cast<const float4*>(x);
    if (n > 0) *out = x[0];
    Vec<T> w;
    __shared__ float tile[16][17];
    float r = reduce<4>(x);
    switch (n) { case 1: break; }
    int bits = 0b101;
    out[1] = x[n] * 2.0f;
}
"""
    found = by_operator(kernel)
    assert found["arith"] == ["*->/"]                                   # x[n] * 2.0f alone
    assert found["relational"] == [">->>="]                             # n > 0 alone
    assert found["index"] == ["n->(n) + 1"]                             # x[n]; x[0] and out[1] are literals
    assert sorted(found["constant"]) == ["0->1", "0->1", "1->2", "2.0f->3.0f"]   # n > 0, x[0], out[1], 2.0f
