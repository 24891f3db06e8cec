"""Stage ``normalize``: normalised device assembly next to the raw text, proven to still assemble.

For every pair: SASS per arch through :func:`cass.text.sass.normalize_sass` (encoding comments
and trailing padding dropped, whitespace collapsed) and AMD device assembly per arch through
:func:`cass.text.amdgpu.normalize_amd` (only what the assembler ignores removed). Every
normalised AMD text is assembled for its arch with LLVM's assembler (a cached action of the AMD
toolchain); a text that does not assemble is a bug in the normaliser and drops the pair with the
assembler's message (``normalized_asm_rejected``). The raw texts stay in the store and in the
export. With ``normalize.strip_host_registration`` the CUDA host assembly also gets a normalised
copy without nvcc's registration boilerplate (:func:`cass.text.host_asm.strip_host_registration`). Texts are
normalised, and their checks looked up, a chunk at a time on stage hosts or ``executor.workers`` processes; the
driver runs only the checks the store lacks (:mod:`cass.engine.settle`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from cass.engine.actions import Action, pipeline_toolchains, plan
from cass.engine.settle import Lookups, Settled, settle
from cass.pipeline.context import Stage
from cass.pipeline.manifests import ASM_LIST, SAMPLE_COLUMNS, attach
from cass.pipeline.metrics import mean_reduction
from cass.text.amdgpu import normalize_amd
from cass.text.host_asm import strip_host_registration
from cass.text.normalize import normalize_all
from cass.text.sass import normalize_sass
from store import Store
from toolchains import Toolchain


def run(stage: Stage) -> None:
    params = stage.params
    amd = pipeline_toolchains(params, ("amd",))["amd"]
    rows = stage.upstream("pair")
    out = stage.output(rows.height)
    # the workers normalise a chunk and settle every sample whose assembler checks the store has; the driver runs the
    # other checks, then the workers settle the samples that waited for them (their normalised texts sent back)
    normalized = settle(stage, out, rows, {"amd": amd}, params["amd"]["timeout_s"], normalized_chunk,
                        params["normalize"]["strip_host_registration"], amd)
    added = normalized.added
    words = {sample: counts for c in normalized.chunks for sample, counts in c.words.items()}
    kept_in_order = [sample for sample in rows["sample_id"] if sample in words]   # the mean sums in row order
    out.extra_metrics["reduction"] = {vendor: mean_reduction([words[s][vendor] for s in kept_in_order])
                                      for vendor in ("sass", "amd")}
    kept = attach(rows, added, {"nvidia_device_norm": ASM_LIST, "amd_device_norm": ASM_LIST,
                                "nvidia_host_norm": pl.String})
    print(out.write(kept))


@dataclass
class Normalized(Settled):
    """A chunk's samples normalised, settled as far as the store's assembler checks go (a sample waiting for checks
    carries its normalised texts), with the (raw, normalised) token counts per vendor of each sample
    that passed."""

    words: dict[str, dict[str, tuple[int, int]]] = field(default_factory=dict)


def normalized_chunk(rows: pl.DataFrame, carried: dict[str, dict] | None, lookups: Lookups, strip_host: bool,
                     amd: Toolchain) -> Normalized:
    """The samples of a chunk normalised (or, given their normalised texts, not again) and their normalised AMD
    assembly checked as far as the store goes (:mod:`cass.engine.settle`)."""
    store = lookups.store
    texts = normalized_texts(store, rows, strip_host) if carried is None else carried
    checks: dict[str, list[tuple[str, Action]]] = {
        sample: [(a["arch"], plan(amd, amd.assemble_step(a["arch"], "device.s"), {"device.s": a["digest"]}))
                 for a in norm["amd"][0]] for sample, norm in texts.items()}
    outcomes = lookups.outcomes("amd", [a for arch_actions in checks.values() for _, a in arch_actions])
    chunk = Normalized()
    for row in rows.iter_rows(named=True):
        norm = texts[row["sample_id"]]
        results = [(arch, outcomes.get(a.key)) for arch, a in checks[row["sample_id"]]]
        if missing := [a for _, a in checks[row["sample_id"]] if outcomes.get(a.key) is None]:
            chunk.wait(row["sample_id"], {"amd": missing}, carry=norm)
            continue
        if failed := [(arch, o) for arch, o in results if not o.ok]:
            arch, outcome = failed[0]
            detail = outcome.transient or store.get_text(outcome.record.stderr, "replace")
            chunk.dropped.append(({c: row[c] for c in SAMPLE_COLUMNS}, "transient" if outcome.transient else
                                  "normalized_asm_rejected", f"{arch}: {detail}"))
            continue
        chunk.added.append({"sample_id": row["sample_id"], "nvidia_device_norm": norm["nvidia"][0],
                            "amd_device_norm": norm["amd"][0], "nvidia_host_norm": norm["host"]})
        chunk.words[row["sample_id"]] = {"sass": norm["nvidia"][1], "amd": norm["amd"][1]}
    return chunk


def normalized_texts(store: Store, rows: pl.DataFrame, strip_host: bool) -> dict[str, dict]:
    """Per sample of ``rows``: its normalised assembly per vendor (stored, with the token counts before and after)
    and its CUDA host assembly without the registration boilerplate (``strip_host``)."""
    return {row["sample_id"]: {
        "host": store.put_text(strip_host_registration(store.get_text(row["nvidia_host_asm"])))
        if strip_host and row["nvidia_host_asm"] else None,
        "nvidia": normalize_all(store, row["nvidia_device_asm"], normalize_sass),
        "amd": normalize_all(store, row["amd_device_asm"], normalize_amd),
    } for row in rows.iter_rows(named=True)}
