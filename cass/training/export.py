"""Paired samples as Parquet rows with every text materialised (stage ``export``: :mod:`cass.stages.export`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl

from cass.engine.stage_work import StageWork, shard_parts
from cass.training.prompts import COUNT_COLUMNS, TASKS
from store import Store


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def split_files(store: Store, files: list[dict]) -> tuple[str, list[dict]]:
    """(main file text, [{path, text} of each header])."""
    texts = [{"path": f["path"], "text": store.get_text(f["digest"])} for f in files]
    return texts[0]["text"], texts[1:]


EXEC_COLUMNS = {"exec_status": pl.String, "exec_detail": pl.String, "exec_host": pl.String,
                "exec_verified": pl.Boolean, "exec_masked_fields": pl.Int64, "exec_units": pl.List(pl.String),
                "run_spec_source": pl.String, "cuda_self_check": pl.String, "hip_self_check": pl.String,
                "cuda_exit_code": pl.Int64, "hip_exit_code": pl.Int64,
                "cuda_wall_s": pl.Float64, "hip_wall_s": pl.Float64,
                "cuda_kernel_launches": pl.Int64, "hip_kernel_launches": pl.Int64}
"""What the execute stage found (first run of each side; null where a side did not run)."""
RUN_COLUMNS = ("exit_code", "wall_s", "kernel_launches")


def execution_columns(row: dict) -> dict:
    """A pair's execution columns from its row of the execute stage's manifest."""
    first = {side: (row[f"{side}_runs"] or [None])[0] for side in ("cuda", "hip")}
    return {**{name: row[name] for name in EXEC_COLUMNS if name in row},
            **{f"{side}_{name}": run and run[name] for side, run in first.items() for name in RUN_COLUMNS}}


def optional_text(store: Store, digest: str | None) -> str | None:
    """A stored text, or None where there is none (an OpenCL pair has no host assembly)."""
    return store.get_text(digest) if digest else None


def export_row(store: Store, row: dict, provenance: dict) -> dict:
    """One dataset row with every text read (and verified) from the store."""
    cuda_source, cuda_headers = split_files(store, row["files"])
    hip_source, hip_headers = split_files(store, row["hip_files"])
    texts = {
        "cuda_source": cuda_source,
        "hip_source": hip_source,
        "cuda_host_asm": optional_text(store, row["nvidia_host_asm"]),
        **({"cuda_host_asm_norm": store.get_text(row["nvidia_host_norm"])} if row["nvidia_host_norm"] else {}),
        **{f"cuda_device_sass_{a['arch']}": store.get_text(a["digest"]) for a in row["nvidia_device_asm"]},
        **{f"cuda_device_sass_{a['arch']}_norm": store.get_text(a["digest"]) for a in row["nvidia_device_norm"]},
        "hip_host_asm": optional_text(store, row["amd_host_asm"]),
        **{f"hip_device_asm_{a['arch']}": store.get_text(a["digest"]) for a in row["amd_device_asm"]},
        **{f"hip_device_asm_{a['arch']}_norm": store.get_text(a["digest"]) for a in row["amd_device_norm"]},
    }
    return {
        "sample_id": row["sample_id"],
        "origin": row["origin"],
        "path": row["path"],
        "domain": row["domain"],
        **{c: row[c] for c in SOURCE_COLUMNS},
        **texts,
        "cuda_headers": cuda_headers,
        "hip_headers": hip_headers,
        "hipify_warnings": store.get_text(row["hipify_warnings"]),
        "repair_rules": row["repair_rules"],
        "hip_repaired": row["hip_repaired"],
        "hip_nvidia_build": row["hip_nvidia_build"],
        "hip_source_hipify": store.get_text(raw_main) if (raw_main := row["hip_files_hipify"][0]["digest"])
        != row["hip_files"][0]["digest"] else None,
        **{f"{name}_lines": None if text is None else line_count(text) for name, text in texts.items()},
        "cuda_source_digest": row["files"][0]["digest"],
        "hip_source_digest": row["hip_files"][0]["digest"],
        **provenance,
    }


SOURCE_COLUMNS = {
    "repository": pl.String, "revision": pl.String, "license_type": pl.String,
    "detected_licenses": pl.List(pl.String), "stars": pl.Int64, "source_encoding": pl.String,
    "include_dirs": pl.List(pl.String), "build_context": pl.String, "build_flags": pl.List(pl.String),
}
"""Provenance of the CUDA source and its compile context (null where a source has none, e.g. a local tree's
license)."""
HEADERS = pl.List(pl.Struct({"path": pl.String, "text": pl.String}))
PROVENANCE_TOOLS = (("nvidia", "nvcc"), ("nvidia", "cuobjdump"), ("amd", "hipcc"), ("amd", "hipify-perl"))


def text_columns(params: dict) -> list[str]:
    """The text columns, in order: sources, then host and device assembly per vendor and arch."""
    return ["cuda_source", "hip_source", "cuda_host_asm",
            *(["cuda_host_asm_norm"] if params["normalize"]["strip_host_registration"] else []),
            *(f"cuda_device_sass_{a}{n}" for a in params["nvidia"]["archs"] for n in ("", "_norm")), "hip_host_asm",
            *(f"hip_device_asm_{a}{n}" for a in params["amd"]["archs"] for n in ("", "_norm"))]


def schema(params: dict) -> dict:
    """The export's schema, fixed by the parameters (the same with zero rows or no headers)."""
    texts = text_columns(params)
    tools = [t.replace("-", "_") for _, t in PROVENANCE_TOOLS]
    return {
        **dict.fromkeys(("sample_id", "origin", "path", "domain"), pl.String),
        **SOURCE_COLUMNS,
        **dict.fromkeys(texts, pl.String),
        "cuda_headers": HEADERS, "hip_headers": HEADERS, "hipify_warnings": pl.String,
        "repair_rules": pl.List(pl.String), "hip_repaired": pl.Boolean, "hip_nvidia_build": pl.String,
        "hip_source_hipify": pl.String,
        **dict.fromkeys((f"{t}_lines" for t in texts), pl.Int64),
        "cuda_source_digest": pl.String, "hip_source_digest": pl.String,
        **{f"{t}_{kind}": pl.String for t in tools for kind in ("version", "fingerprint")},
        "nvidia_flags": pl.String, "amd_flags": pl.String,
        **TOKEN_COLUMNS,
        **EXEC_COLUMNS,
    }


TOKEN_COLUMNS = {**dict.fromkeys(COUNT_COLUMNS, pl.Int64), **{f"fits_{t.name}": pl.Boolean for t in TASKS}}


def kernel_schema(params: dict) -> dict:
    """The kernels table's schema."""
    return {
        "kernel_id": pl.String, "sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
        "kernel": pl.String, "kernel_name": pl.String, "cuda_kernel_source": pl.String, "hip_kernel_source": pl.String,
        **{f"cuda_kernel_sass_{a}": pl.String for a in params["nvidia"]["archs"]},
        **{f"hip_kernel_asm_{a}": pl.String for a in params["amd"]["archs"]},
        **TOKEN_COLUMNS,
    }


def kernel_row(store: Store, row: dict) -> dict:
    """One kernel row with its texts read from the store."""
    return {
        "kernel_id": row["sample_id"], "sample_id": row["file_sample_id"], "origin": row["origin"],
        "path": row["path"].rsplit("::", 1)[0], "domain": row["domain"], "kernel": row["kernel"],
        "kernel_name": row["kernel_name"], "cuda_kernel_source": store.get_text(row["cuda_kernel_source"]),
        "hip_kernel_source": store.get_text(row["hip_kernel_source"]),
        **{f"cuda_kernel_sass_{a['arch']}": store.get_text(a["digest"]) for a in row["nvidia_kernel_sass"]},
        **{f"hip_kernel_asm_{a['arch']}": store.get_text(a["digest"]) for a in row["amd_kernel_asm"]},
        **{c: row[c] for c in TOKEN_COLUMNS},
    }


def provenance(params: dict, tools: dict) -> dict:
    """Toolchain versions, fingerprints and flags recorded with every row (``tools``: the toolchain record)."""
    record = {}
    for vendor, tool in PROVENANCE_TOOLS:
        name = tool.replace("-", "_")
        record[f"{name}_version"] = tools[vendor][tool]["version"]
        record[f"{name}_fingerprint"] = tools[vendor][tool]["fingerprint"]
    for vendor in ("nvidia", "amd"):
        record[f"{vendor}_flags"] = json.dumps(params[vendor]["flags"], sort_keys=True)
    return record


def pair_rows(rows: pl.DataFrame, store_root: str, provenance: dict, schema: dict) -> pl.DataFrame:
    """Pair rows of the dataset from manifest ``rows`` that carry their token counts and execution columns."""
    store = Store(store_root)
    carried = [*TOKEN_COLUMNS, *EXEC_COLUMNS]
    return pl.DataFrame([{**export_row(store, r, provenance), **{c: r[c] for c in carried}}
                         for r in rows.iter_rows(named=True)], schema=schema)


def kernel_rows(rows: pl.DataFrame, store_root: str, schema: dict) -> pl.DataFrame:
    """Kernel rows of the dataset from manifest ``rows`` that carry their token counts."""
    store = Store(store_root)
    return pl.DataFrame([kernel_row(store, r) for r in rows.iter_rows(named=True)], schema=schema)


def write_table(work: StageWork, root: Path, rows: pl.DataFrame, make: Callable[..., pl.DataFrame], name: str,
                per_shard: int, *args: object) -> dict:
    """Shards of one table under ``root/<name>/``: the manifest ``rows``, in their order, made into dataset rows
    by ``make(part, *args)`` a shard at a time on the stage's workers, so a worker holds one shard's texts. Returns
    its rows, shards and bytes."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    parts, count = shard_parts(rows, per_shard)
    shards = work.write_shards(make, parts, count, folder, *args)
    return {"rows": rows.height, "shards": shards, "bytes": sum(p.stat().st_size for p in folder.iterdir())}
