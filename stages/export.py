"""Stage export: paired samples -> Parquet shards (zstd) with every text materialised.

One row per pair (schema in README.md). Rows are sorted by ``sample_id`` and cut into shards of
``export.rows_per_shard`` rows, named as ``datasets.push_to_hub`` names them. Toolchain versions
and flags are recorded in every row, next to the artifacts they produced.
"""

from __future__ import annotations

import json
import math
import shutil

import polars as pl

from stages.common import DATA_DIR, load_params, open_store, read_manifest, write_metrics, write_parquet
from stages.toolchains import read_record
from store import Store

STAGE = "export"
EXPORT_DIR = DATA_DIR / "export" / "pairs"


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def split_files(store: Store, files: list[dict]) -> tuple[str, list[dict]]:
    """(main file text, [{path, text} of each header])."""
    texts = [{"path": f["path"], "text": store.get_text(f["digest"])} for f in files]
    return texts[0]["text"], texts[1:]


def export_row(store: Store, row: dict, provenance: dict) -> dict:
    """One dataset row with every text read (and verified) from the store."""
    cuda_source, cuda_headers = split_files(store, row["files"])
    hip_source, hip_headers = split_files(store, row["hip_files"])
    texts = {
        "cuda_source": cuda_source,
        "hip_source": hip_source,
        "cuda_host_asm": store.get_text(row["nvidia_host_asm"]),
        **{f"cuda_device_sass_{a['arch']}": store.get_text(a["digest"]) for a in row["nvidia_device_asm"]},
        "hip_host_asm": store.get_text(row["amd_host_asm"]),
        **{f"hip_device_asm_{a['arch']}": store.get_text(a["digest"]) for a in row["amd_device_asm"]},
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
        **{f"{name}_lines": line_count(text) for name, text in texts.items()},
        "cuda_source_digest": row["files"][0]["digest"],
        "hip_source_digest": row["hip_files"][0]["digest"],
        **provenance,
    }


SOURCE_COLUMNS = {
    "repository": pl.String, "revision": pl.String, "license_type": pl.String,
    "detected_licenses": pl.List(pl.String), "stars": pl.Int64, "source_encoding": pl.String,
    "include_dirs": pl.List(pl.String),
}
"""Provenance of the CUDA source (null where a source has none, e.g. a local tree's license)."""
HEADERS = pl.List(pl.Struct({"path": pl.String, "text": pl.String}))
PROVENANCE_TOOLS = (("nvidia", "nvcc"), ("nvidia", "cuobjdump"), ("amd", "hipcc"), ("amd", "hipify-perl"))


def text_columns(params: dict) -> list[str]:
    """The text columns, in order: sources, then host and device assembly per vendor and arch."""
    return ["cuda_source", "hip_source", "cuda_host_asm",
            *(f"cuda_device_sass_{a}" for a in params["nvidia"]["archs"]), "hip_host_asm",
            *(f"hip_device_asm_{a}" for a in params["amd"]["archs"])]


def schema(params: dict) -> dict:
    """The export's schema, fixed by the parameters (the same with zero rows or no headers)."""
    texts = text_columns(params)
    tools = [t.replace("-", "_") for _, t in PROVENANCE_TOOLS]
    return {
        **dict.fromkeys(("sample_id", "origin", "path", "domain"), pl.String),
        **SOURCE_COLUMNS,
        **dict.fromkeys(texts, pl.String),
        "cuda_headers": HEADERS, "hip_headers": HEADERS, "hipify_warnings": pl.String,
        **dict.fromkeys((f"{t}_lines" for t in texts), pl.Int64),
        "cuda_source_digest": pl.String, "hip_source_digest": pl.String,
        **{f"{t}_{kind}": pl.String for t in tools for kind in ("version", "fingerprint")},
        "nvidia_flags": pl.String, "amd_flags": pl.String,
    }


def provenance(params: dict) -> dict:
    """Toolchain versions, fingerprints and flags recorded with every row."""
    tools = read_record()
    record = {}
    for vendor, tool in PROVENANCE_TOOLS:
        name = tool.replace("-", "_")
        record[f"{name}_version"] = tools[vendor][tool]["version"]
        record[f"{name}_fingerprint"] = tools[vendor][tool]["fingerprint"]
    for vendor in ("nvidia", "amd"):
        record[f"{vendor}_flags"] = json.dumps(params[vendor]["flags"], sort_keys=True)
    return record


def main() -> None:
    params = load_params()
    store = open_store(params)
    pairs = read_manifest("pair")
    prov = provenance(params)
    rows = [export_row(store, r, prov) for r in pairs.sort("sample_id").iter_rows(named=True)]
    table = pl.DataFrame(rows, schema=schema(params))
    per_shard = params["export"]["rows_per_shard"]
    shards = max(1, math.ceil(table.height / per_shard))
    if EXPORT_DIR.exists():
        shutil.rmtree(EXPORT_DIR)
    for i in range(shards):
        write_parquet(table.slice(i * per_shard, per_shard), EXPORT_DIR / f"train-{i:05d}-of-{shards:05d}.parquet")
    metrics = {"rows": table.height, "shards": shards,
               "bytes": sum(p.stat().st_size for p in EXPORT_DIR.iterdir())}
    write_metrics(STAGE, metrics)
    print(metrics)


if __name__ == "__main__":
    main()
