"""Stage ``repair``: the post-HIPIFY repair layer (:mod:`cass.translate.repair`) on every HIP file.

Each distinct hipified file is one cached action keyed by the rule set's id, the repair target
(the AMD toolchain's HIP version and hipBLAS API, the digest of the CUDA-to-HIP names derived from both
toolchains, whether the archs run wave32, the derived headers the sample's own files provide) and the
file's digest. The manifest keeps hipify-perl's own files
(``hip_files_hipify``) next to the repaired ones (``hip_files``, what compile_amd builds), the
rules that fired per sample (``repair_rules``) and whether any file changed (``hip_repaired``).
``repair.enabled: false`` passes hipify-perl's files on unchanged, as OpenCL C samples always are.
Nothing is dropped here. The files are repaired a chunk of samples at a time on the stage's workers
(:mod:`cass.engine.stage_work`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import FILES_DTYPE, attach
from cass.translate.repair import CachedRepair, RepairTarget, pipeline_repair_target, ruleset_id
from store import Store
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    rows = stage.upstream("hipify").rename({"hip_files": "hip_files_hipify"})
    out = stage.output(rows.height)
    target = pipeline_repair_target(params) if params["repair"]["enabled"] else None
    chunks = list(stage.work.chunks(repaired_chunk, rows, str(store.root), target))
    added = [a for c in chunks for a in c.added]
    files_by_rule: dict[str, set[str]] = {}
    for chunk in chunks:
        for rule, digests in chunk.files_by_rule.items():
            files_by_rule.setdefault(rule, set()).update(digests)
    kept = attach(rows, added, {"hip_files": FILES_DTYPE, "repair_rules": pl.List(pl.String),
                                "hip_repaired": pl.Boolean})
    out.extra_metrics.update({
        "enabled": target is not None,
        "ruleset": ruleset_id() if target else None,
        "target": target.key() if target else None,
        "derived_names": {table: len(names) for table, names in target.names.tables().items()} if target else None,
        "samples_repaired": sum(a["hip_repaired"] for a in added),
        "samples_by_rule": dict(sorted(sum((c.samples_by_rule for c in chunks), Counter()).items())),
        "files_by_rule": {rule: len(files) for rule, files in sorted(files_by_rule.items())},
    })
    out.run["actions"] = {k: sum(c.counts[k] for c in chunks) for k in ("hits", "misses")}
    print(out.write(kept))


@dataclass
class Repaired:
    """A chunk's samples repaired: the columns this stage adds, the samples each rule changed, the files (digests)
    each rule changed and the cache's hits and misses."""

    added: list[dict] = field(default_factory=list)
    samples_by_rule: Counter = field(default_factory=Counter)
    files_by_rule: dict[str, set[str]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=lambda: {"hits": 0, "misses": 0})


def repaired_chunk(rows: pl.DataFrame, store_root: str, target: RepairTarget | None) -> Repaired:
    """Every HIP file of a chunk's samples repaired for ``target`` (None: repairs off; on a worker)."""
    repairer = CachedRepair(Store(store_root), target) if target else None
    chunk = Repaired()
    for row in rows.iter_rows(named=True):
        files, fired = [], set()
        repairs = repairer and not is_opencl(row["hip_files_hipify"][0]["path"])
        paths = [f["path"] for f in row["hip_files_hipify"]]
        shadowed = repairer.target.names.provided_by(paths) if repairs else frozenset()
        for f in row["hip_files_hipify"]:
            digest, rules = repairer(f["digest"], shadowed) if repairs else (f["digest"], [])
            files.append({"path": f["path"], "digest": digest})
            fired.update(rules)
            for rule in rules:
                chunk.files_by_rule.setdefault(rule, set()).add(f["digest"])
        chunk.samples_by_rule.update(fired)
        chunk.added.append({"sample_id": row["sample_id"], "hip_files": files, "repair_rules": sorted(fired),
                            "hip_repaired": files != row["hip_files_hipify"]})
    if repairer:
        chunk.counts = repairer.cache.counts()
    return chunk
