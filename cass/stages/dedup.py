"""Stage ``dedup``: exact and near duplicates removed before anything is compiled.

1. Exact: BLAKE3 of the source's token sequence (comments and whitespace ignored; see
   ``cass.dedup.minhash.token_hashes``) plus the digests of its local headers.
2. Near: MinHash LSH (``cass.dedup.minhash``) with the ``dedup`` parameters; signatures are cached in
   the store per source content, so a rerun computes signatures only for new contents.
3. Decontamination: every item that is a near duplicate of a file under ``dedup.reference_trees``
   (by default the translation benchmark's own tasks) or, with ``dedup.real_tasks``, of a CUDA file of the
   real-program suite (stage ``real_tasks``) is dropped as ``contaminated``; the metrics count them per suite.
   With ``dedup.real_tasks`` on and no task of the suite read (no mirror at ``benchmark.real.source``), the stage
   stops (:class:`NoSuiteMirrorError`) rather than decontaminate against nothing.

Items of ``dedup.exempt_origins`` (by default ``bench``, the benchmark's tasks themselves, which are the
reference files) pass through untouched: no other item can make them drop, and they are never
decontaminated against themselves.

The representative kept for a group is the first by the documented rule: a permissive license
first (when a ``license_type`` column exists), then the most files (a repository checkout with
its headers beats the same file alone), then the longest source, then the smallest
``sample_id``. Removed items go to ``data/dedup/removed.parquet`` with their cluster, the kept
representative and the estimated similarity; the metrics count drops per origin and record the
exact parameters.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl

from cass.benchmark import REAL_SUITE
from cass.dedup.corpus import REMOVED_SCHEMA, cached_signatures, rank, reference_texts
from cass.dedup.minhash import MinHashParams, candidate_links, components, content_key, similarity
from cass.pipeline.context import Stage
from cass.pipeline.manifests import manifest_path, write_parquet
from store import digest_bytes


class NoSuiteMirrorError(RuntimeError):
    """``dedup.real_tasks`` asks for decontamination against the real-program suite, and stage ``real_tasks`` read
    none of its tasks."""


def suite_texts(stage: Stage) -> dict[str, str]:
    """The real-program suite's CUDA files (``origin:path``: text), as stage ``real_tasks`` read them from the
    mirror; :class:`NoSuiteMirrorError` where it read none."""
    suite = stage.upstream("real_tasks")
    if suite.is_empty():
        dropped = pl.read_parquet(stage.upstream_path("real_tasks", "dropped"))
        why = f"{dropped.height} tasks dropped, the first: {dropped['reason'][0]}: {dropped['detail'][0]}" \
            if dropped.height else "the suite's manifest lists no task"
        raise NoSuiteMirrorError(f"dedup.real_tasks is on, but stage real_tasks read no task of the real-program "
                                 f"suite ({why}), so decontamination against it would remove nothing. Put the "
                                 "suite's mirror at params.yaml benchmark.real.source and read it (`dvc repro "
                                 "--force --single-item real_tasks`: DVC does not see changes outside the project), "
                                 "or turn this off: params.yaml dedup.real_tasks: false")
    return {f"{row['origin']}:{f['path']}": stage.store.get_text(f["digest"], "replace")
            for row in suite.iter_rows(named=True) for f in row["files"]}


def run(stage: Stage) -> None:
    params = stage.params
    dp = params["dedup"]
    mh = MinHashParams(dp["ngram"], dp["num_perm"], dp["seed"], dp["threshold"])
    store = stage.store
    rows = rank(stage.upstream("filter"))
    out = stage.output(rows.height)
    exempt = rows.filter(pl.col("origin").is_in(dp["exempt_origins"]))
    rows = rows.filter(~pl.col("origin").is_in(dp["exempt_origins"]))
    removed: list[dict] = []

    def remove(row: dict, reason: str, cluster: int, kept: dict | None, sim: float, kept_label: str) -> None:
        out.drop(row, reason, f"{kept_label} (estimated Jaccard {sim:.3f})")
        removed.append({"sample_id": row["sample_id"], "origin": row["origin"], "path": row["path"],
                        "reason": reason, "cluster": cluster, "kept_sample_id": kept and kept["sample_id"],
                        "kept": kept_label, "similarity": sim})

    texts = {f[0]["digest"]: store.get_text(f[0]["digest"]) for f in rows["files"]}
    exact_first: dict[str, dict] = {}
    survivors = []
    for row in rows.iter_rows(named=True):
        key = digest_bytes(content_key(texts[row["files"][0]["digest"]])
                           + "".join(f["digest"] for f in row["files"][1:]).encode())
        if key in exact_first:
            kept = exact_first[key]
            remove(row, "exact_duplicate", -1, kept, 1.0, f"same normalised content as {kept['origin']}:{kept['path']}")
        else:
            exact_first[key] = row
            survivors.append(row)

    workers = stage.workers
    survivor_texts = {r["files"][0]["digest"]: texts[r["files"][0]["digest"]] for r in survivors}
    sigs, computed = cached_signatures(store, survivor_texts, mh, workers)
    matrix = np.array([sigs[r["files"][0]["digest"]] for r in survivors], dtype=np.uint32).reshape(-1, mh.num_perm)
    labels = components(len(survivors), candidate_links(matrix, mh))
    kept = [i for i in range(len(survivors)) if labels[i] == i]
    for i, row in enumerate(survivors):
        rep = int(labels[i])  # survivors are in rule order: a cluster's smallest index is its representative
        if rep != i:
            sim = float(similarity(matrix, np.array([i]), np.array([rep]))[0])
            rep_row = survivors[rep]
            remove(row, "near_duplicate", rep, rep_row, sim, f"{rep_row['origin']}:{rep_row['path']}")

    refs = reference_texts(dp["reference_trees"], params["corpus"]["extensions"])
    if dp["real_tasks"]:   # the real-program suite's CUDA programs
        refs |= suite_texts(stage)
    if refs:
        ref_digests = {path: digest_bytes(text.encode()) for path, text in refs.items()}
        ref_sigs, _ = cached_signatures(store, {ref_digests[p]: t for p, t in refs.items()}, mh)
        ref_paths = sorted(refs)
        both = np.concatenate([matrix[kept], np.array([ref_sigs[ref_digests[p]] for p in ref_paths],
                                                      dtype=np.uint32).reshape(-1, mh.num_perm)])
        n = len(kept)
        contaminated: dict[int, tuple[str, float]] = {}
        for doc, first, sim in candidate_links(both, mh).iter_rows():
            if (doc < n) == (first < n):
                continue
            item, ref = (doc, first) if doc < n else (first, doc)
            if item not in contaminated or sim > contaminated[item][1]:
                contaminated[item] = (ref_paths[ref - n], sim)
        for item, (ref_path, sim) in sorted(contaminated.items()):
            remove(survivors[kept[item]], "contaminated", -1, None, sim, f"reference {ref_path}")
        suites = Counter(REAL_SUITE if p.startswith(f"{REAL_SUITE}:") else "own" for p, _ in contaminated.values())
        out.extra_metrics["contaminated_by_suite"] = {"own": suites["own"], REAL_SUITE: suites[REAL_SUITE]}
        kept = [k for i, k in enumerate(kept) if i not in contaminated]

    out.extra_metrics.setdefault("contaminated_by_suite", {"own": 0, REAL_SUITE: 0})
    real_files = sum(p.startswith(f"{REAL_SUITE}:") for p in refs)
    out.extra_metrics["reference_files"] = {"own": len(refs) - real_files, REAL_SUITE: real_files}
    kept_rows = [survivors[i] for i in kept]
    kept_ids = {r["sample_id"] for r in kept_rows} | set(exempt["sample_id"])
    write_parquet(pl.DataFrame(removed, schema=REMOVED_SCHEMA), manifest_path(stage.name, "removed"))
    per_origin = Counter((r["origin"], r["reason"]) for r in removed)
    out.extra_metrics["dropped_by_origin"] = {f"{o}:{r}": c for (o, r), c in sorted(per_origin.items())}
    out.run["signatures"] = {"computed": computed, "cached": len(sigs) - computed}
    out.extra_metrics["parameters"] = mh.describe()
    print(out.write(stage.upstream("filter").filter(pl.col("sample_id").is_in(kept_ids))))
