"""What stage ``kernels`` (:mod:`cass.stages.kernels`) builds on: kernel-level pairs, next to the file-level ones."""

from __future__ import annotations

import polars as pl

from cass.pipeline.manifests import ASM_LIST

SCHEMA = {
    "sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
    "file_sample_id": pl.String, "kernel": pl.String, "kernel_name": pl.String,
    "cuda_kernel_source": pl.String, "hip_kernel_source": pl.String,
    "nvidia_kernel_sass": ASM_LIST, "amd_kernel_asm": ASM_LIST,
}


def kernel_id(file_sample_id: str, kernel: str) -> str:
    """A kernel row's id: its file's id and its mangled name."""
    return f"{file_sample_id}:{kernel}"


def split_all(store, pieces: list[dict], split) -> dict[str, dict[str, str]]:
    """kernel -> {arch: text} over every arch's assembly."""
    found: dict[str, dict[str, str]] = {}
    for asm in pieces:
        for name, text in split(store.get_text(asm["digest"])).items():
            found.setdefault(name, {})[asm["arch"]] = text
    return found


def identity(row: dict, kernel: str) -> dict:
    """The identity columns of one kernel of a file-level row."""
    return {"sample_id": kernel_id(row["sample_id"], kernel), "origin": row["origin"],
            "path": f"{row['path']}::{kernel}", "domain": row["domain"]}


def stored(store, by_arch: dict[str, str]) -> list[dict]:
    """Texts per arch put in the store, as an ASM_LIST value, in the file's arch order (the configured
    one: the first arch is the one the training tasks use, as for file-level pairs)."""
    return [{"arch": arch, "digest": store.put_text(text)} for arch, text in by_arch.items()]
