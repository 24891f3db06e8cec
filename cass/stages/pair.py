"""Stage ``pair``: keep the samples that compiled on both vendor stacks.

A deduplicated sample missing from a compile stage's output failed on that stack (for AMD, in
hipify or in hipcc); it is dropped here with the reason ``not_paired:<which stack failed>``
(the hipify and compile stages' own dropped manifests hold the tool's reason).
"""

from __future__ import annotations

from cass.pipeline.context import Stage


def run(stage: Stage) -> None:
    cuda = stage.upstream("dedup")
    nvidia = stage.upstream("compile_nvidia").select("sample_id", "nvidia_host_asm", "nvidia_device_asm")
    amd = stage.upstream("compile_amd").select(
        "sample_id", "hip_files", "hip_files_hipify", "repair_rules", "hip_repaired", "hipify_warnings",
        "hipify_warning_count", "amd_host_asm", "amd_device_asm")
    out = stage.output(cuda.height)
    ok_nvidia, ok_amd = set(nvidia["sample_id"]), set(amd["sample_id"])
    for row in cuda.iter_rows(named=True):
        failed = [v for v, ok in (("nvidia", ok_nvidia), ("amd", ok_amd)) if row["sample_id"] not in ok]
        if failed:
            out.drop(row, f"not_paired:{'+'.join(failed)}_failed")
    parity = stage.upstream("branch_parity").select("sample_id", "branch_parity", "branch_divergences")
    kept = cuda.join(nvidia, on="sample_id", how="inner").join(amd, on="sample_id", how="inner") \
        .join(parity, on="sample_id", how="left")
    print(out.write(kept))
