"""Stage ``pack_store``: the store entries the current dataset needs, as pack files DVC can share.

`dvc push` sends ``data/store_packs`` with the rest; a collaborator's `dvc pull` brings it back
and the next stage that opens the store imports it, so their next `dvc repro` is incremental
too. Entries are bucketed by the first ``store.pack_prefix`` hex digits of their names (2: at
most 256 files whatever the corpus size); only packs whose content changed are rewritten.
"""

from __future__ import annotations

from cass.pipeline.context import Stage
from cass.pipeline.manifests import PACK_DIR, live_set
from cass.pipeline.metrics import write_metrics, write_run_report


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    objects, actions = live_set(store)
    result = store.write_packs(PACK_DIR, objects, actions, params["store"]["pack_prefix"])
    metrics = {
        "objects": len(objects),
        "actions": len(actions),
        "packs": len(list(PACK_DIR.glob("*.pack"))),
        "bytes": sum(p.stat().st_size for p in PACK_DIR.glob("*.pack")),
    }
    write_metrics(stage.name, metrics)
    run = {"packs_written": result.written, "packs_unchanged": result.unchanged, "packs_removed": result.removed}
    write_run_report(stage.name, run)
    print(metrics | run)
