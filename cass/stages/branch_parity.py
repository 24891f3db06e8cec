"""Stage ``branch_parity``: the conditionals of a sample's own files whose taken branch differs
between the NVIDIA and the AMD side.

A pair is one program only if both compilers see the same code. Each CUDA file of a sample and its
HIP translation (after the repairs) get a marker after every branch of every ``#if``/``#ifdef``/
``#ifndef`` group (``#if``, each ``#elif``, ``#else``): a ``#warning`` naming the branch and the
compiler pass (host or device). Each side's compiler preprocesses the marked sample once, both
passes (``nvcc -M``, ``hipcc -E``), as a cached action; the markers on its stderr are the branches
it took. Groups whose taken branch differs, in a branch both sides entered, are divergences:
file, line, pass, the branch each side took and the macros the group's conditions name, kept on
the sample's row (``branch_divergences``) and counted in the metrics. System headers are not
marked. Files whose HIP text has a different conditional structure than the CUDA text are not
compared (``branch_parity`` ``unaligned``); a sample whose preprocessing failed on a side is
``unknown``. OpenCL C samples (the same text on both sides) are not checked. Nothing is dropped. Samples are
marked a chunk at a time on stage hosts or ``executor.workers`` processes (:mod:`cass.engine.stage_work`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import polars as pl

from cass.compiling.branch_parity import DIVERGENCE, aligned, branches, divergences, instrument, taken
from cass.engine.actions import ActionCounts, ActionRunner, Outcome, pipeline_toolchains, plan, stage_runner
from cass.pipeline.context import Stage
from cass.pipeline.manifests import attach
from store import Store
from toolchains import Toolchain
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    rows = stage.upstream("repair")
    out = stage.output(rows.height)
    toolchains = pipeline_toolchains(params, ("nvidia", "amd"))
    timeout_s = params["branch_parity"]["timeout_s"]
    runners = {v: stage_runner(store, tc, params, timeout_s) for v, tc in toolchains.items()}
    settings = {v: (params[v]["archs"][0], params[v]["flags"]) for v in toolchains}
    args = (str(store.root), toolchains, settings, timeout_s)
    # the workers mark a chunk's files and settle every sample whose preprocessing the store has; the driver runs the
    # rest, then the workers settle the samples that waited for it (their marked files sent back to them)

    def run_misses(chunks: list[Checked]) -> dict[str, str]:
        for vendor, runner in runners.items():
            runner.run([s[vendor] for c in chunks for s in c.unsettled.values()], desc=f"{vendor} preprocess")
            runner.counts.hits += sum(c.hits[vendor] for c in chunks)
        return {k: v for r in runners.values() for k, v in r.transients.items()}

    checked = stage.work.settle(checked_chunk, rows, run_misses, *args)
    added = [a for c in checked for a in c.added]
    status = sum((c.status for c in checked), Counter())
    by_macro = Counter()
    for c in checked:
        by_macro.update(c.by_macro)
    kept = attach(rows, added, {"branch_parity": pl.String, "branch_divergences": pl.List(DIVERGENCE)})
    out.extra_metrics.update({
        "samples": dict(sorted(status.items())),
        "divergences": sum(len(a["branch_divergences"]) for a in added),
        "divergences_by_macro": dict(by_macro.most_common(20)),
    })
    times = {v: r.time_metrics() for v, r in runners.items()}
    totals = {k: round(sum(t[k] for t in times.values()), 3) for k in ("tool_jobs", "tool_cpu_s", "tool_wall_s")}
    out.run.update(actions=sum((r.counts for r in runners.values()), ActionCounts()).as_dict(), **totals,
                   actions_by_vendor={v: r.counts.as_dict() for v, r in runners.items()}, by_vendor=times)
    out.action_keys = set().union(*(r.keys for r in runners.values()), *(c.keys for c in checked))
    print(out.write(kept))


@dataclass
class Checked:
    """A chunk's samples checked as far as the store's records go: their manifest columns, verdicts and the macros of
    their divergences; the samples that need a preprocessing run (marked, with their actions by vendor); the action
    keys looked up and the hits by vendor."""

    added: list[dict]
    status: Counter
    by_macro: Counter
    unsettled: dict[str, dict]
    keys: set[str]
    hits: dict[str, int]


def checked_chunk(part: tuple[pl.DataFrame, dict[str, dict] | None], store_root: str,
                  toolchains: dict[str, Toolchain], settings: dict[str, tuple[str, dict]], timeout_s: float,
                  transients: dict[str, str]) -> Checked:
    """The samples of a chunk (and their marked files, or None to mark them here) checked from the store alone (on a
    worker; nothing runs a tool): each side's preprocessing planned (``settings``: its arch and flags by vendor)
    and looked up; a sample whose both runs are known gets its verdict. ``transients``: the actions that failed
    transiently in this stage run."""
    rows, marked = part
    store = Store(store_root)
    marked = mark(store, rows) if marked is None else marked
    runners = {v: ActionRunner(store, None, timeout_s) for v in toolchains}
    for runner in runners.values():
        runner.transients.update(transients)
    for row in rows.iter_rows(named=True):
        if (sample := marked.get(row["sample_id"])) is not None:
            for vendor, tc in toolchains.items():
                arch, flags = settings[vendor]
                step = tc.preprocess_step(row["files"][0]["path"], arch, flags, row["include_dirs"])
                sample[vendor] = plan(tc, step, sample["inputs"][vendor])
    outcomes: dict[str, Outcome] = {}
    for vendor, runner in runners.items():
        outcomes.update(runner.run([m[vendor] for m in marked.values()], desc=f"{vendor} preprocess (store)"))
    checked = Checked([], Counter(), Counter(), {}, set().union(*(r.keys for r in runners.values())),
                      {v: r.counts.hits for v, r in runners.items()})
    for row in rows.iter_rows(named=True):
        sample = marked.get(row["sample_id"])
        if sample is None:
            checked.added.append({"sample_id": row["sample_id"], "branch_parity": "opencl", "branch_divergences": []})
            checked.status["opencl"] += 1
            continue
        results = {v: outcomes.get(sample[v].key) for v in toolchains}
        if None in results.values():
            checked.unsettled[row["sample_id"]] = sample
            continue
        if not all(o.ok for o in results.values()):
            failed = [v for v, o in results.items() if not o.ok]
            checked.added.append({"sample_id": row["sample_id"], "branch_parity": f"unknown:{'+'.join(failed)}",
                                  "branch_divergences": []})
            checked.status["unknown"] += 1
            continue
        seen = {v: taken(store.get_text(o.record.stderr, "replace")) for v, o in results.items()}
        found = divergences(sample["files"], seen["nvidia"], seen["amd"])
        checked.by_macro.update(m for d in found for m in d["macros"])
        verdict = "diverged" if found else "unaligned" if sample["unaligned"] else "same"
        checked.status[verdict] += 1
        checked.added.append({"sample_id": row["sample_id"], "branch_parity": verdict, "branch_divergences": found})
    return checked


def mark(store: Store, rows: pl.DataFrame) -> dict[str, dict]:
    """Per sample of ``rows`` (OpenCL C apart, in row order) its files with a marker after every branch (``inputs``:
    both sides' marked files, by vendor), the branches of each file and the files whose two sides' conditionals do
    not align."""
    marked = {}
    for row in rows.iter_rows(named=True):
        if is_opencl(row["files"][0]["path"]):
            continue
        sample: dict = {"files": [], "unaligned": [], "inputs": {"nvidia": {}, "amd": {}}}
        for number, (cuda, hip) in enumerate(zip(row["files"], row["hip_files"], strict=True)):
            cuda_text, hip_text = store.get_text(cuda["digest"], "replace"), store.get_text(hip["digest"], "replace")
            cuda_branches, hip_branches = branches(cuda_text), branches(hip_text)
            if not aligned(cuda_branches, hip_branches):
                sample["unaligned"].append(cuda["path"])
                cuda_branches = hip_branches = []
            sample["files"].append((cuda["path"], cuda_branches))
            sample["inputs"]["nvidia"][cuda["path"]] = store.put_text(instrument(cuda_text, number, cuda_branches))
            sample["inputs"]["amd"][hip["path"]] = store.put_text(instrument(hip_text, number, hip_branches))
        marked[row["sample_id"]] = sample
    return marked
