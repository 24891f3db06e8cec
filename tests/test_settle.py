"""The engine runs a tool stage's two passes (:mod:`cass.engine.settle`) with the real tools: a stage gives only its
chunk's work; the engine looks the actions up, runs the misses of each vendor (target runs and single actions) on
the executor, hands the second pass what the first made, records the drops and writes the run report."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl
import pytest
from harness.project import REPO

from cass.engine.actions import plan
from cass.engine.settle import Lookups, Settled, settle, settle_ladder
from cass.engine.stage_work import LocalWork, StageWork
from cass.engine.targets import TargetRun, failure_reason
from cass.pipeline.context import load_params
from cass.pipeline.manifests import StageOutput
from store import SCHEMA_VERSION, Store, canonical_json, digest_bytes
from toolchains import Step, Toolchain, load_hip_nvidia

KERNEL = "__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }\n"
DEVICE_ASM = '\t.amdgcn_target "amdgcn-amd-amdhsa--gfx1100"\n\t.text\n\ts_endpgm\n'


@dataclass
class StandIn:
    """The part of a pipeline stage the engine uses (:class:`cass.engine.settle.StageRun`)."""

    name: str
    params: dict
    store: Store
    work: StageWork


def both_vendors(rows: pl.DataFrame, carried: dict | None, lookups: Lookups, nvidia: Toolchain, amd: Toolchain,
                 flags: dict) -> Settled:
    """Per row: its CUDA file compiled (NVIDIA target runs) and its AMD assembly assembled (one AMD action); a row
    the store cannot settle waits for what it misses, carrying its id in capitals, which the second pass checks."""
    chunk = Settled()
    for row in rows.iter_rows(named=True):
        sample = row["sample_id"]
        if carried is not None:
            assert carried[sample] == sample.upper(), "the second pass got what the first made"
        runs = [TargetRun(t, {"k.cu": row["cuda"]}) for t in nvidia.targets("k.cu", ["sm_89"], flags, ["."])]
        lookups.advance(nvidia, runs)
        check = plan(amd, amd.assemble_step("gfx1100", "device.s"), {"device.s": row["asm"]})
        assembled = lookups.outcomes("amd", [check]).get(check.key)
        missing = {"nvidia": [r for r in runs if r.pending]} if any(r.pending for r in runs) else {}
        if assembled is None:
            missing["amd"] = [check]
        if missing:
            chunk.wait(sample, missing, carry=sample.upper())
        elif failed := [r for r in runs if r.failure is not None]:
            chunk.dropped.append(({"sample_id": sample}, *failure_reason(nvidia, failed[0], lookups.store)))
        elif not assembled.ok:
            chunk.dropped.append(({"sample_id": sample}, "rejected", "llvm-mc"))
        else:
            chunk.added.append({"sample_id": sample})
    return chunk


def broken(rows: pl.DataFrame, carried: dict | None, lookups: Lookups) -> Settled:
    raise ValueError("no such column")


@pytest.fixture
def stage(store) -> StandIn:
    params = load_params(REPO / "params.yaml")
    return StandIn("stand_in", {**params, "executor": {**params["executor"], "workers": 1}}, store, LocalWork(1))


def test_the_engine_runs_each_vendor_s_misses_then_settles_the_rows_that_waited(stage, toolchains):
    nvidia, amd = toolchains["nvidia"], toolchains["amd"]
    params = load_params(REPO / "params.yaml")["nvidia"]
    flags = {**params["flags"], "common": nvidia.build_flags(params["flags"]["common"], [])}
    put = stage.store.put_text
    rows = pl.DataFrame([
        {"sample_id": "good", "cuda": put(KERNEL), "asm": put(DEVICE_ASM)},
        {"sample_id": "typo", "cuda": put(KERNEL.replace(";", "", 1)), "asm": put(DEVICE_ASM)},
        {"sample_id": "bad_asm", "cuda": put(KERNEL), "asm": put(DEVICE_ASM.replace("s_endpgm", "s_nonsense"))},
    ])
    cold = StageOutput("stand_in", rows_in=rows.height)
    settled = settle(stage, cold, rows, {"nvidia": nvidia, "amd": amd}, 300, both_vendors, nvidia, amd, flags)
    assert [row["sample_id"] for row in settled.added] == ["good"]
    assert {d["sample_id"]: d["reason"] for d in cold.dropped} == {"typo": "compile_failed:syntax",
                                                                     "bad_asm": "rejected"}
    by_vendor = cold.run["actions_by_vendor"]
    # every first NVIDIA step and its follow-ups ran on the driver (good and bad_asm share theirs), two assembler runs
    assert by_vendor["amd"]["misses"] == by_vendor["amd"]["jobs_sent"] == 2 and by_vendor["amd"]["hits"] == 0
    assert by_vendor["nvidia"]["misses"] >= 2 and by_vendor["nvidia"]["hits"] == 0
    assert cold.run["actions"]["misses"] == by_vendor["nvidia"]["misses"] + 2
    assert cold.run["tool_jobs"] == sum(v["tool_jobs"] for v in cold.run["by_vendor"].values()) == \
        cold.run["actions"]["misses"]

    warm = StageOutput("stand_in", rows_in=rows.height)   # every action from the store: no run, no second pass
    again = settle(stage, warm, rows, {"nvidia": nvidia, "amd": amd}, 300, both_vendors, nvidia, amd, flags)
    assert (again.added, warm.dropped) == (settled.added, cold.dropped) and len(again.chunks) == 1
    assert warm.run["actions"]["misses"] == warm.run["actions"]["jobs_sent"] == 0
    assert warm.run["actions"]["hits"] == cold.run["actions"]["misses"]   # each key counted once


def test_toolchains_are_given_by_their_vendor_and_a_failing_chunk_names_the_stage_and_its_work(stage, toolchains):
    rows = pl.DataFrame({"sample_id": ["s"]})
    out = StageOutput("stand_in", rows_in=1)
    with pytest.raises(ValueError, match="stage stand_in: toolchains must be given by their vendor"):
        settle(stage, out, rows, {"amd": toolchains["nvidia"]}, 300, broken)
    with pytest.raises(RuntimeError, match=r"stand_in \(broken\) failed on item 0 of its map .*no such column"):
        settle(stage, out, rows, {"amd": toolchains["amd"]}, 300, broken)


OUTCOMES = {
    "first": {"nvidia": None},
    "second": {"nvidia": "compile_failed:syntax", "amd": None},
    "third": {"nvidia": "compile_failed:syntax", "amd": "compile_failed:missing_header", "hip-nvidia": None},
    "stopped": {"nvidia": "compile_failed:syntax", "amd": "timeout"},
    "never": {"nvidia": "compile_failed:syntax", "amd": "compile_failed:syntax", "hip-nvidia": "compile_failed:x"},
    "scoped": {"nvidia": "out_of_scope:mpi"},
}
"""Per row, what each rung's toolchain makes of it: kept (None) or dropped for a reason; a rung it never reaches
has no entry (a KeyError would fail the test)."""


def by_rung(rows: pl.DataFrame, carried: dict | None, lookups: Lookups, toolchain: Toolchain) -> Settled:
    chunk = Settled()
    for row in rows.iter_rows(named=True):
        if (reason := OUTCOMES[row["sample_id"]][toolchain.vendor]) is None:
            chunk.added.append({"sample_id": row["sample_id"], "by": toolchain.vendor})
        else:
            chunk.dropped.append(({"sample_id": row["sample_id"]}, reason, f"{toolchain.vendor} says no"))
    return chunk


def test_a_ladder_tries_each_dropped_row_on_the_next_toolchain_and_keeps_the_first_reason(stage, toolchains):
    """Rows a rung drops for a reason ``retried`` accepts go to the next rung, the others stop there; a row no rung
    keeps is dropped once, with the first rung's reason and every later rung's in its detail. One rung settles as
    :func:`settle` does; two rungs of one vendor are refused."""
    rungs = [toolchains["nvidia"], toolchains["amd"], load_hip_nvidia()]
    rows = pl.DataFrame({"sample_id": list(OUTCOMES)})
    out = StageOutput("stand_in", rows_in=rows.height)
    added = settle_ladder(stage, out, rows, rungs, lambda _, reason: reason.startswith("compile_failed:"), 300,
                          by_rung).added
    assert {row["sample_id"]: row["by"] for row in added} == {"first": "nvidia", "second": "amd",
                                                                "third": "hip-nvidia"}
    assert [(d["sample_id"], d["reason"], d["detail"]) for d in sorted(out.dropped, key=lambda d: d["sample_id"])] == [
        ("never", "compile_failed:syntax", "nvidia says no | amd: compile_failed:syntax: amd says no | "
                                           "hip-nvidia: compile_failed:x: hip-nvidia says no"),
        ("scoped", "out_of_scope:mpi", "nvidia says no"),
        ("stopped", "compile_failed:syntax", "nvidia says no | amd: timeout: amd says no")]
    assert sorted(out.run["actions_by_vendor"]) == ["amd", "hip-nvidia", "nvidia"]

    one, alone = StageOutput("stand_in", rows_in=rows.height), StageOutput("stand_in", rows_in=rows.height)
    laddered = settle_ladder(stage, one, rows, rungs[:1], lambda *_: True, 300, by_rung)
    settled = settle(stage, alone, rows, {"nvidia": rungs[0]}, 300, by_rung, rungs[0])
    assert (laddered.added, one.dropped, one.run) == (settled.added, alone.dropped, alone.run)
    with pytest.raises(ValueError, match="a ladder's toolchains must be of distinct vendors"):
        settle_ladder(stage, out, rows, rungs[:1] * 2, lambda *_: True, 300, by_rung)


def test_a_tool_run_keeps_the_key_it_had_before_the_one_action_schema(toolchains):
    """``plan`` describes a tool run as :class:`store.ActionSpec` without settings: its key is the one 5ed59bf's
    ``plan`` gave (the description written out here), so no compile in any store is done again for the schema."""
    nvidia = toolchains["nvidia"]
    step = Step("nvcc", ("-c", "k.cu", "-o", "k.o"), ("k.o",), stdout_as="k.log")
    before = {"vendor": "nvidia", "tool": "nvcc", "args": ["-c", "k.cu", "-o", "k.o"], "outputs": ["k.o"],
              "stdout_as": "k.log", "toolchain": nvidia.fingerprint("nvcc"), "inputs": [["h.h", "01"], ["k.cu", "00"]]}
    assert plan(nvidia, step, {"k.cu": "00", "h.h": "01"}).key == \
        digest_bytes(canonical_json({"schema": SCHEMA_VERSION, "action": before}))
