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
marked, their preprocessing looked up and judged a chunk at a time on stage hosts or ``executor.workers`` processes;
the driver runs only the preprocessing the store lacks (:mod:`cass.engine.settle`).
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from cass.compiling.branch_parity import DIVERGENCE, aligned, branches, divergences, instrument, taken
from cass.engine.actions import Outcome, pipeline_toolchains, plan
from cass.engine.settle import Lookups, Settled, settle
from cass.pipeline.context import Stage
from cass.pipeline.manifests import attach
from store import Store
from toolchains import Toolchain
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    params = stage.params
    rows = stage.upstream("repair")
    out = stage.output(rows.height)
    toolchains = pipeline_toolchains(params, ("nvidia", "amd"))
    settings = {v: (params[v]["archs"][0], params[v]["flags"]) for v in toolchains}
    # the workers mark a chunk's files and settle every sample whose preprocessing the store has; the driver runs the
    # rest, then the workers settle the samples that waited for it (their marked files sent back to them)
    checked = settle(stage, out, rows, toolchains, params["branch_parity"]["timeout_s"], checked_chunk, toolchains,
                     settings)
    by_sample = {a["sample_id"]: a for a in checked.added}
    added = [by_sample[s] for s in rows["sample_id"]]   # in row order: the macros' ties stay in first-seen order
    by_macro = Counter(m for a in added for d in a["branch_divergences"] for m in d["macros"])
    kept = attach(rows, added, {"branch_parity": pl.String, "branch_divergences": pl.List(DIVERGENCE)})
    out.extra_metrics.update({
        "samples": dict(sorted(Counter(a["branch_parity"].split(":")[0] for a in added).items())),
        "divergences": sum(len(a["branch_divergences"]) for a in added),
        "divergences_by_macro": dict(by_macro.most_common(20)),
    })
    print(out.write(kept))


def checked_chunk(rows: pl.DataFrame, carried: dict[str, dict] | None, lookups: Lookups,
                  toolchains: dict[str, Toolchain], settings: dict[str, tuple[str, dict]]) -> Settled:
    """The samples of a chunk (and their marked files, or None to mark them here) checked as far as the store goes
    (:mod:`cass.engine.settle`): each side's preprocessing planned (``settings``: its arch and flags by vendor)
    and looked up; a sample whose both runs are known gets its verdict, the others wait for the missing runs."""
    store = lookups.store
    marked = mark(store, rows) if carried is None else carried
    for row in rows.iter_rows(named=True):
        if (sample := marked.get(row["sample_id"])) is not None:
            for vendor, tc in toolchains.items():
                arch, flags = settings[vendor]
                own = {**flags, "common": tc.build_flags(flags["common"], row["build_flags"])}
                step = tc.preprocess_step(row["files"][0]["path"], arch, own, row["include_dirs"])
                sample[vendor] = plan(tc, step, sample["inputs"][vendor])
    outcomes: dict[str, Outcome] = {}
    for vendor in toolchains:
        outcomes.update(lookups.outcomes(vendor, [m[vendor] for m in marked.values()]))
    checked = Settled()
    for row in rows.iter_rows(named=True):
        sample = marked.get(row["sample_id"])
        if sample is None:
            checked.added.append({"sample_id": row["sample_id"], "branch_parity": "opencl", "branch_divergences": []})
            continue
        results = {v: outcomes.get(sample[v].key) for v in toolchains}
        if missing := {v: [sample[v]] for v, o in results.items() if o is None}:
            checked.wait(row["sample_id"], missing, carry=sample)
            continue
        if not all(o.ok for o in results.values()):
            failed = [v for v, o in results.items() if not o.ok]
            checked.added.append({"sample_id": row["sample_id"], "branch_parity": f"unknown:{'+'.join(failed)}",
                                  "branch_divergences": []})
            continue
        seen = {v: taken(store.get_text(o.record.stderr, "replace")) for v, o in results.items()}
        found = divergences(sample["files"], seen["nvidia"], seen["amd"])
        verdict = "diverged" if found else "unaligned" if sample["unaligned"] else "same"
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
