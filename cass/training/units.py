"""Training units: the file-level pairs (``normalize``) and the kernel-level pairs (``kernels``), each
with the four texts the tasks need (CUDA source, HIP source, normalised SASS, normalised AMD assembly;
first arch of each vendor)."""

from __future__ import annotations

from collections.abc import Iterator

import polars as pl

from cass.engine.stage_work import CHUNK_ROWS
from store import Store


def units(store: Store, files: pl.DataFrame, kernels: pl.DataFrame) -> list[dict]:
    """Every unit with the four texts its tasks need (first arch of each vendor)."""
    out = []
    for row in files.iter_rows(named=True):
        out.append({"unit_id": row["sample_id"], "level": "file", "sample_id": row["sample_id"],
                    "origin": row["origin"], "path": row["path"], "domain": row["domain"], "kernel": None,
                    "texts": (store.get_text(row["files"][0]["digest"]), store.get_text(row["hip_files"][0]["digest"]),
                              store.get_text(row["nvidia_device_norm"][0]["digest"]),
                              store.get_text(row["amd_device_norm"][0]["digest"]))})
    for row in kernels.iter_rows(named=True):
        out.append({"unit_id": row["sample_id"], "level": "kernel", "sample_id": row["file_sample_id"],
                    "origin": row["origin"], "path": row["path"], "domain": row["domain"], "kernel": row["kernel"],
                    "texts": tuple(store.get_text(d) for d in (
                        row["cuda_kernel_source"], row["hip_kernel_source"],
                        row["nvidia_kernel_sass"][0]["digest"], row["amd_kernel_asm"][0]["digest"]))})
    return out


def unit_parts(files: pl.DataFrame, kernels: pl.DataFrame, keep: pl.Series | None = None
               ) -> Iterator[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]:
    """(file rows, the rows of their units: files, kernels), :data:`CHUNK_ROWS` files at a time; ``keep``: only the
    units with these ids (the file rows given are all)."""
    for part in files.iter_slices(CHUNK_ROWS):
        its_kernels = kernels.filter(pl.col("file_sample_id").is_in(part["sample_id"].implode()))
        if keep is None:
            yield part, part, its_kernels
        else:
            yield (part, part.filter(pl.col("sample_id").is_in(keep.implode())),
                   its_kernels.filter(pl.col("sample_id").is_in(keep.implode())))


def unit_chunks(store: Store, files: pl.DataFrame, kernels: pl.DataFrame,
                keep: pl.Series | None = None) -> Iterator[tuple[pl.DataFrame, list[dict]]]:
    """(file rows, their units: the files' and their kernels', in that order) a chunk at a time (:func:`unit_parts`),
    so one chunk's texts are in memory."""
    for part, unit_files, unit_kernels in unit_parts(files, kernels, keep):
        yield part, units(store, unit_files, unit_kernels)
