"""Stage normalize: normalised device assembly next to the raw text, proven to still assemble.

For every pair: SASS per arch through :func:`stages.asm_text.normalize_sass` (encoding comments
and trailing padding dropped, whitespace collapsed) and AMD device assembly per arch through
:func:`stages.asm_text.normalize_amd` (only what the assembler ignores removed). Every
normalised AMD text is assembled for its arch with LLVM's assembler (a cached action of the AMD
toolchain); a text that does not assemble is a bug in the normaliser and drops the pair with the
assembler's message (``normalized_asm_rejected``). The raw texts stay in the store and in the
export. With ``normalize.strip_host_registration`` the CUDA host assembly also gets a normalised
copy without nvcc's registration boilerplate (:func:`stages.asm_text.strip_host_registration`).
"""

from __future__ import annotations

import polars as pl

from stages.actions import plan, stage_runner
from stages.asm_text import normalize_amd, normalize_sass, strip_host_registration
from stages.common import StageOutput, attach, load_params, open_store, read_manifest
from stages.compiling import ASM_LIST
from toolchains import load_toolchains

STAGE = "normalize"


def main() -> None:
    params = load_params()
    store = open_store(params)
    amd = load_toolchains()["amd"]
    rows = read_manifest("pair")
    out = StageOutput(STAGE, rows_in=rows.height)
    runner = stage_runner(store, amd, params, params["amd"]["timeout_s"])
    strip_host = params["normalize"]["strip_host_registration"]
    normalized = {}
    for row in rows.iter_rows(named=True):
        normalized[row["sample_id"]] = {
            "host": store.put_text(strip_host_registration(store.get_text(row["nvidia_host_asm"])))
            if strip_host else None,
            "nvidia": [{"arch": a["arch"], "digest": store.put_text(normalize_sass(store.get_text(a["digest"])))}
                       for a in row["nvidia_device_asm"]],
            "amd": [{"arch": a["arch"], "digest": store.put_text(normalize_amd(store.get_text(a["digest"])))}
                    for a in row["amd_device_asm"]],
        }
    checks = {(a["arch"], a["digest"]): plan(amd, amd.assemble_step(a["arch"], "device.s"), {"device.s": a["digest"]})
              for n in normalized.values() for a in n["amd"]}
    outcomes = runner.run(list(checks.values()), desc=f"{amd.assembler} (normalised AMD asm)")
    added = []
    for row in rows.iter_rows(named=True):
        norm = normalized[row["sample_id"]]
        failed = [(a["arch"], outcomes[checks[(a["arch"], a["digest"])].key]) for a in norm["amd"]]
        failed = [(arch, o) for arch, o in failed if not o.ok]
        if failed:
            arch, outcome = failed[0]
            detail = outcome.transient or store.get_text(outcome.record.stderr, "replace")
            out.drop(row, "transient" if outcome.transient else "normalized_asm_rejected", f"{arch}: {detail}")
            continue
        added.append({"sample_id": row["sample_id"], "nvidia_device_norm": norm["nvidia"],
                      "amd_device_norm": norm["amd"], "nvidia_host_norm": norm["host"]})
    out.extra_metrics["actions"] = runner.counts.as_dict()
    out.action_keys = runner.keys
    out.extra_metrics["reduction"] = token_reduction(store, rows, added)
    kept = attach(rows, added, {"nvidia_device_norm": ASM_LIST, "amd_device_norm": ASM_LIST,
                                "nvidia_host_norm": pl.String})
    print(out.write(kept))


def token_reduction(store, rows: pl.DataFrame, added: list[dict]) -> dict:
    """Mean fraction of whitespace-separated tokens the normalisation removed, per vendor."""
    raw = {r["sample_id"]: r for r in rows.iter_rows(named=True)}
    result = {}
    for vendor, raw_col, norm_col in (("sass", "nvidia_device_asm", "nvidia_device_norm"),
                                      ("amd", "amd_device_asm", "amd_device_norm")):
        fractions = []
        for a in added:
            before = sum(len(store.get_text(x["digest"]).split()) for x in raw[a["sample_id"]][raw_col])
            after = sum(len(store.get_text(x["digest"]).split()) for x in a[norm_col])
            fractions.append(1 - after / before if before else 0.0)
        result[vendor] = round(sum(fractions) / len(fractions), 4) if fractions else 0.0
    return result


if __name__ == "__main__":
    main()
