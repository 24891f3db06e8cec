"""Stage ``pack_store``: the store entries the current dataset needs, as pack files DVC can share.

`dvc push` sends ``data/store_packs`` with the rest; a collaborator's `dvc pull` brings it back
and the next stage that opens the store imports it, so their next `dvc repro` is incremental
too. Entries are bucketed by the first ``store.pack_prefix`` hex digits of their names (2: at
most 256 files whatever the corpus size); only packs whose content changed are rewritten.

The packs carry what a collaborator cannot make without the producer's hosts: the dataset's texts and
assemblies, every action record (tool runs, and the program runs a GPU host made), and the blobs those records name,
except the executables the builds made and the builds' records. Builds are byte-reproducible and a program run is
keyed by its binary's digest, so a collaborator's build (``dvc repro``, or ``cass gpu-batch export``) re-makes each
binary with the digest its runs are recorded under: their lookups hit, and no GPU is needed. An executable is most
of a program's bytes (the CUDA runtime is linked in statically), so leaving them out keeps the packs the size of
the dataset, not of its binaries.
"""

from __future__ import annotations

from cass.pipeline.context import Stage
from cass.pipeline.manifests import PACK_DIR, live_set
from cass.pipeline.metrics import write_metrics, write_run_report
from toolchains.base import EXECUTABLE


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    live = live_set(store)
    builds = {key for key, record in live.records.items() if EXECUTABLE in record.outputs}
    executables = {live.records[key].outputs[EXECUTABLE] for key in builds}
    packed, records = live.objects - executables, live.actions - builds
    result = store.write_packs(PACK_DIR, packed, records, params["store"]["pack_prefix"])
    metrics = {
        "objects": len(packed),
        "actions": len(records),
        "executables_left_out": len(executables),
        "executable_bytes_left_out": sum(store.size(d) for d in executables),
        "packs": len(list(PACK_DIR.glob("*.pack"))),
        "bytes": sum(p.stat().st_size for p in PACK_DIR.glob("*.pack")),
    }
    write_metrics(stage.name, metrics)
    run = {"packs_written": result.written, "packs_unchanged": result.unchanged, "packs_removed": result.removed}
    write_run_report(stage.name, run)
    print(metrics | run)
