"""Stage ``repair``: the post-HIPIFY repair layer (:mod:`cass.translate.repair`) on every HIP file.

Each distinct hipified file is one cached action keyed by the rule set's id, the repair target
(the AMD toolchain's HIP version and hipBLAS API, the digest of the CUDA-to-HIP names derived from both
toolchains, whether the archs run wave32, the derived headers the sample's own files provide) and the
file's digest. The manifest keeps hipify-perl's own files
(``hip_files_hipify``) next to the repaired ones (``hip_files``, what compile_amd builds), the
rules that fired per sample (``repair_rules``) and whether any file changed (``hip_repaired``).
``repair.enabled: false`` passes hipify-perl's files on unchanged, as OpenCL C samples always are.
Nothing is dropped here.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import FILES_DTYPE, attach
from cass.translate.repair import pipeline_repairer, ruleset_id
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    rows = stage.upstream("hipify").rename({"hip_files": "hip_files_hipify"})
    out = stage.output(rows.height)
    repairer = None
    if params["repair"]["enabled"]:
        repairer = pipeline_repairer(store, params)
    samples_by_rule: Counter = Counter()
    files_by_rule: dict[str, set[str]] = {}
    added = []
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
                files_by_rule.setdefault(rule, set()).add(f["digest"])
        samples_by_rule.update(fired)
        added.append({"sample_id": row["sample_id"], "hip_files": files, "repair_rules": sorted(fired),
                      "hip_repaired": files != row["hip_files_hipify"]})
    kept = attach(rows, added, {"hip_files": FILES_DTYPE, "repair_rules": pl.List(pl.String),
                                "hip_repaired": pl.Boolean})
    out.extra_metrics.update({
        "enabled": bool(repairer),
        "ruleset": ruleset_id() if repairer else None,
        "target": repairer.target.key() if repairer else None,
        "derived_names": {table: len(names) for table, names in repairer.target.names.tables().items()}
        if repairer else None,
        "samples_repaired": sum(a["hip_repaired"] for a in added),
        "samples_by_rule": dict(sorted(samples_by_rule.items())),
        "files_by_rule": {rule: len(files) for rule, files in sorted(files_by_rule.items())},
    })
    out.run["actions"] = repairer.cache.counts() if repairer else {"hits": 0, "misses": 0}
    if repairer:
        out.action_keys = repairer.keys
    print(out.write(kept))
