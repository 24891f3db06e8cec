"""Stage ``kernels``: kernel-level pairs, next to the file-level ones.

Normalised SASS is split at its ``Function :`` headers and normalised AMD device assembly at its
kernel symbols (``.amdhsa_kernel``); kernels are matched across vendors by mangled name (which
includes template arguments, so each instantiation is its own kernel), then by unqualified name
where it is unique on both sides (vector types mangle differently: CUDA ``float2`` is
``6float2``, HIP's ``15HIP_vector_typeIfLj2EE``). Each matched kernel becomes a row with the
source of that ``__global__`` function from the CUDA file and from its HIP translation. The
row's ``kernel`` is the CUDA mangled name. An OpenCL C file's kernels (unmangled names) are cut from the
same OpenCL source on both sides. What does not match is counted with its reason: ``only_nvidia`` /
``only_amd`` (a kernel one compiler emitted and the other did not, e.g. a name hipify changed),
``source_not_found`` (the function's text could not be cut out of a source, e.g. one made by a
macro). Files are paired a chunk at a time on stage hosts or ``executor.workers`` processes
(:mod:`cass.engine.stage_work`).
"""

from __future__ import annotations

import polars as pl

from cass.pipeline.context import Stage
from cass.text.amdgpu import split_amd
from cass.text.kernel_names import kernel_base_name, match_kernels
from cass.text.kernel_source import kernel_source
from cass.text.kernels import SCHEMA, identity, split_all, stored
from cass.text.sass import split_sass
from store import Store
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    rows = stage.upstream("normalize")
    out = stage.output()
    kept = [pl.DataFrame(schema=SCHEMA)]
    for part_kept, part_dropped in stage.work.chunks(kernel_pairs, rows, str(stage.store.root)):
        kept.append(part_kept)
        for unit, reason, detail in part_dropped:
            out.rows_in += 1
            out.drop(unit, reason, detail)
        out.rows_in += part_kept.height
    out.extra_metrics["files"] = rows.height
    print(out.write(pl.concat(kept)))


def kernel_pairs(rows: pl.DataFrame, store_root: str) -> tuple[pl.DataFrame, list[tuple[dict, str, str]]]:
    """The kernel pairs of ``rows`` (files), and the kernels not paired: (identity, reason, detail)."""
    store = Store(store_root)
    kept, dropped = [], []
    for row in rows.iter_rows(named=True):
        sass = split_all(store, row["nvidia_device_norm"], split_sass)
        amd = split_all(store, row["amd_device_norm"], split_amd)
        cuda_source = store.get_text(row["files"][0]["digest"])
        hip_source = store.get_text(row["hip_files"][0]["digest"])
        opencl = is_opencl(row["files"][0]["path"])
        matched = match_kernels(sass, amd)
        hip_matched = set(matched.values())
        dropped += [(identity(row, k), "only_nvidia", k) for k in sass if k not in matched]
        dropped += [(identity(row, k), "only_amd", k) for k in amd if k not in hip_matched]
        for kernel, hip_kernel in sorted(matched.items()):
            unit = identity(row, kernel)
            name = kernel_base_name(kernel)
            cuda_text = kernel_source(cuda_source, kernel, opencl)
            hip_text = kernel_source(hip_source, hip_kernel, opencl)
            if cuda_text is None or hip_text is None:
                missing = "CUDA" if cuda_text is None else "HIP"
                dropped.append((unit, "source_not_found", f"no kernel {name} in the {missing} source"))
                continue
            kept.append({
                **unit, "file_sample_id": row["sample_id"], "kernel": kernel, "kernel_name": name,
                "cuda_kernel_source": store.put_text(cuda_text), "hip_kernel_source": store.put_text(hip_text),
                "nvidia_kernel_sass": stored(store, sass[kernel]), "amd_kernel_asm": stored(store, amd[hip_kernel]),
            })
    return pl.DataFrame(kept, schema=SCHEMA), dropped
