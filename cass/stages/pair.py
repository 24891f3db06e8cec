"""Stage ``pair``: keep the samples that compiled on both vendor stacks.

A deduplicated sample missing from a compile stage's output failed on that stack (for AMD, in
hipify or in hipcc); it is dropped here with the reason ``not_paired:<which stack failed>``
(the hipify and compile stages' own dropped manifests hold the tool's reason).

Where ``pair.hip_nvidia`` is on, the HIP side of every pair is also compiled through HIP's NVIDIA back end, as the
``execute`` stage builds it (:func:`cass.execution.programs.hip_nvidia_checks`, cached actions that keep no object,
settled by the engine in its two passes like every tool stage's; the actions and tool time in the run report):
a pair that builds for AMD only stays a pair, but is counted apart (``hip_nvidia_build``: ``ok`` or the failure's
category, with its error in ``hip_nvidia_error``; null for OpenCL pairs, which have no HIP side, where the check is
off, and for a check that was stopped, a timeout or a killed compiler, which the next run tries again). A pair whose
CUDA side only the Debian suite's CUDA compiled (``nvidia_toolchain`` of ``compile_nvidia``, with
``nvidia.debian_cuda``) is checked on that CUDA; one whose AMD side compiled with the Debian build root's headers
(``amd_toolchain`` of ``compile_amd``, with ``amd.build_root_headers``) with those headers. Both columns stay in the
manifest: the ``execute`` stage builds such a pair's programs the same way.
"""

from __future__ import annotations

from collections import Counter

import polars as pl

from cass.execution.programs import hip_nvidia_checks
from cass.pipeline.context import Stage


def run(stage: Stage) -> None:
    cuda = stage.upstream("dedup")
    nvidia = stage.upstream("compile_nvidia").select("sample_id", "nvidia_host_asm", "nvidia_device_asm",
                                                      "nvidia_toolchain")
    amd = stage.upstream("compile_amd").select(
        "sample_id", "hip_files", "hip_files_hipify", "repair_rules", "hip_repaired", "hipify_warnings",
        "hipify_warning_count", "amd_host_asm", "amd_device_asm", "amd_toolchain")
    out = stage.output(cuda.height)
    ok_nvidia, ok_amd = set(nvidia["sample_id"]), set(amd["sample_id"])
    for row in cuda.iter_rows(named=True):
        failed = [v for v, ok in (("nvidia", ok_nvidia), ("amd", ok_amd)) if row["sample_id"] not in ok]
        if failed:
            out.drop(row, f"not_paired:{'+'.join(failed)}_failed")
    parity = stage.upstream("branch_parity").select("sample_id", "branch_parity", "branch_divergences")
    kept = cuda.join(nvidia, on="sample_id", how="inner").join(amd, on="sample_id", how="inner") \
        .join(parity, on="sample_id", how="left")
    verdicts = hip_nvidia_checks(stage, out, kept) if stage.params["pair"]["hip_nvidia"] and kept.height else {}
    found = [verdicts.get(s, (None, None)) for s in kept["sample_id"]]
    kept = kept.with_columns(
        pl.Series("hip_nvidia_build", [v for v, _ in found], dtype=pl.String),
        pl.Series("hip_nvidia_error", [e or None for _, e in found], dtype=pl.String))
    built = Counter(kept["hip_nvidia_build"].drop_nulls())
    out.extra_metrics["hip_nvidia"] = {"checked": sum(built.values()), "ok": built.pop("ok", 0),
                                       "amd_only": dict(sorted(built.items()))}
    print(out.write(kept))
