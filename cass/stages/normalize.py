"""Stage ``normalize``: normalised device assembly next to the raw text, proven to still assemble.

For every pair: SASS per arch through :func:`cass.text.sass.normalize_sass` (encoding comments
and trailing padding dropped, whitespace collapsed) and AMD device assembly per arch through
:func:`cass.text.amdgpu.normalize_amd` (only what the assembler ignores removed). Every
normalised AMD text is assembled for its arch with LLVM's assembler (a cached action of the AMD
toolchain); a text that does not assemble is a bug in the normaliser and drops the pair with the
assembler's message (``normalized_asm_rejected``). The raw texts stay in the store and in the
export. With ``normalize.strip_host_registration`` the CUDA host assembly also gets a normalised
copy without nvcc's registration boilerplate (:func:`cass.text.host_asm.strip_host_registration`). Texts are
normalised a chunk at a time on stage hosts or ``executor.workers`` processes (:mod:`cass.engine.stage_work`).
"""

from __future__ import annotations

import polars as pl

from cass.engine.actions import pipeline_toolchains, plan, stage_runner
from cass.pipeline.context import Stage
from cass.pipeline.manifests import ASM_LIST, attach
from cass.pipeline.metrics import mean_reduction
from cass.text.amdgpu import normalize_amd
from cass.text.host_asm import strip_host_registration
from cass.text.normalize import normalize_all
from cass.text.sass import normalize_sass
from store import Store


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    amd = pipeline_toolchains(stage.params, ("amd",))["amd"]
    rows = stage.upstream("pair")
    out = stage.output(rows.height)
    runner = stage_runner(stage.store, amd, stage.params, params["amd"]["timeout_s"])
    strip_host = params["normalize"]["strip_host_registration"]
    normalized = {}
    for part in stage.work.chunks(normalized_chunk, rows, str(store.root), strip_host):
        normalized |= part
    checks = {(a["arch"], a["digest"]): plan(amd, amd.assemble_step(a["arch"], "device.s"), {"device.s": a["digest"]})
              for n in normalized.values() for a in n["amd"][0]}
    outcomes = runner.run(list(checks.values()), desc=f"{amd.assembler} (normalised AMD asm)")
    added = []
    words: dict[str, list[tuple[int, int]]] = {"sass": [], "amd": []}
    for row in rows.iter_rows(named=True):
        norm = normalized[row["sample_id"]]
        failed = [(a["arch"], outcomes[checks[(a["arch"], a["digest"])].key]) for a in norm["amd"][0]]
        failed = [(arch, o) for arch, o in failed if not o.ok]
        if failed:
            arch, outcome = failed[0]
            detail = outcome.transient or store.get_text(outcome.record.stderr, "replace")
            out.drop(row, "transient" if outcome.transient else "normalized_asm_rejected", f"{arch}: {detail}")
            continue
        added.append({"sample_id": row["sample_id"], "nvidia_device_norm": norm["nvidia"][0],
                      "amd_device_norm": norm["amd"][0], "nvidia_host_norm": norm["host"]})
        words["sass"].append(norm["nvidia"][1])
        words["amd"].append(norm["amd"][1])
    out.run["actions"] = runner.counts.as_dict()
    out.run.update(runner.time_metrics())
    out.action_keys = runner.keys
    out.extra_metrics["reduction"] = {vendor: mean_reduction(counts) for vendor, counts in words.items()}
    kept = attach(rows, added, {"nvidia_device_norm": ASM_LIST, "amd_device_norm": ASM_LIST,
                                "nvidia_host_norm": pl.String})
    print(out.write(kept))


def normalized_chunk(rows: pl.DataFrame, store_root: str, strip_host: bool) -> dict[str, dict]:
    """Per sample of ``rows``: its normalised assembly per vendor (stored, with the token counts before and after)
    and its CUDA host assembly without the registration boilerplate (``strip_host``)."""
    store = Store(store_root)
    return {row["sample_id"]: {
        "host": store.put_text(strip_host_registration(store.get_text(row["nvidia_host_asm"])))
        if strip_host and row["nvidia_host_asm"] else None,
        "nvidia": normalize_all(store, row["nvidia_device_asm"], normalize_sass),
        "amd": normalize_all(store, row["amd_device_asm"], normalize_amd),
    } for row in rows.iter_rows(named=True)}
