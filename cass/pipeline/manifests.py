"""Manifests: the Parquet tables stages pass between them, and the drops they record.

A stage reads the manifest of the stage before it, writes its own manifest of the rows it passes
on (``data/<stage>/manifest.parquet``), a manifest of every row it did not pass on with the reason
(``data/<stage>/dropped.parquet``), the action keys it used (``data/<stage>/actions.parquet``) and
its metrics (:mod:`cass.pipeline.metrics`). Tables are written deterministically: sorted rows,
fixed compression, no timestamps.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from cass.files import write_parquet
from cass.pipeline.metrics import write_metrics, write_run_report
from store import ActionRecord, Store, digest_bytes

DATA_DIR = Path("data")
PACK_DIR = DATA_DIR / "store_packs"
_DIGEST = re.compile(r"[0-9a-f]{64}")
TOOLCHAIN_FILE = "toolchains.json"
"""What stage ``toolchain_fingerprints`` writes in its folder: every tool's version and fingerprint."""
MACHINE_RECORD = Path(".cass") / TOOLCHAIN_FILE
"""Where `cass toolchains` records, in a pipeline project, the toolchains this machine builds with: the same record,
which stage ``toolchain_fingerprints`` depends on (DVC does not see the compilers, which are outside the project)."""

SAMPLE_COLUMNS = ("sample_id", "origin", "path", "domain")
"""Identity columns every manifest carries, so later stages never need to join back."""

FILES_DTYPE = pl.List(pl.Struct({"path": pl.String, "digest": pl.String}))
"""A sample's files: the main file first, then the local headers it includes."""

ASM_LIST = pl.List(pl.Struct({"arch": pl.String, "digest": pl.String}))
"""A sample's assembly per arch."""

DROPPED_SCHEMA = {
    "sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
    "stage": pl.String, "reason": pl.String, "detail": pl.String,
}


def sample_id(origin: str, path: str) -> str:
    """Stable id of a sample: BLAKE3 of its origin and path, 16 hex digits."""
    return digest_bytes(f"{origin}\0{path}".encode())[:16]


def manifest_digests(df: pl.DataFrame) -> set[str]:
    """Every store digest a manifest names (digest columns and lists of {path, digest})."""
    found: set[str] = set()
    for name, dtype in df.schema.items():
        if dtype == pl.String:
            values = df[name]
        elif isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct) and \
                "digest" in [f.name for f in dtype.inner.fields]:
            values = df[name].explode().struct.field("digest")
        else:
            continue
        found.update(v for v in values.drop_nulls().unique() if _DIGEST.fullmatch(v))
    return found


@dataclass
class LiveSet:
    """What the current manifests need of the store: objects, and the live actions' records by key."""

    objects: set[str]
    records: dict[str, ActionRecord]

    @property
    def actions(self) -> set[str]:
        return set(self.records)


def live_set(store: Store) -> LiveSet:
    """What the current manifests need: what they name, the actions the stages used, and every blob those actions
    recorded. Everything else is garbage."""
    objects: set[str] = set()
    actions: set[str] = set()
    for path in sorted(DATA_DIR.glob("*/manifest.parquet")):
        objects |= manifest_digests(pl.read_parquet(path))
    for path in sorted(DATA_DIR.glob("*/actions.parquet")):
        actions |= set(pl.read_parquet(path)["key"])
    records = {key: record for key in sorted(actions) if (record := store.lookup(key)) is not None}
    for record in records.values():
        objects.update(record.digests())
    return LiveSet(objects, records)


def write_action_keys(stage: str, keys: set[str]) -> None:
    """``data/<stage>/actions.parquet``: the action keys the stage used, which the packs carry."""
    write_parquet(pl.DataFrame({"key": sorted(keys)}, schema={"key": pl.String}), manifest_path(stage, "actions"),
                  sort_by=None)


def manifest_path(stage: str, name: str = "manifest") -> Path:
    return DATA_DIR / stage / f"{name}.parquet"


def read_manifest(stage: str) -> pl.DataFrame:
    """The rows a stage passed on."""
    path = manifest_path(stage)
    if not path.exists():
        raise FileNotFoundError(f"manifest of stage {stage!r} not found at {path}; run that stage first")
    return pl.read_parquet(path)




@contextmanager
def replacing(folder: Path) -> Iterator[Path]:
    """A fresh folder to write ``folder``'s new contents into, which takes ``folder``'s place only when the block
    ends without an error: a stage that fails half way leaves its earlier outputs whole."""
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        yield partial
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)


def attach(rows: pl.DataFrame, added: list[dict], schema: dict) -> pl.DataFrame:
    """The rows that have an entry in ``added``, with its columns (``schema``) appended."""
    extra = pl.DataFrame(added, schema={"sample_id": pl.String, **schema})
    return rows.join(extra, on="sample_id", how="inner")


@dataclass
class StageOutput:
    """Collects what a stage passes on and what it drops, with per-reason counts, and its run report
    (``run``, written to ``metrics/run/<stage>.json`` with the stage process's wall and CPU seconds)."""

    stage: str
    rows_in: int = 0
    dropped: list[dict] = field(default_factory=list)
    extra_metrics: dict = field(default_factory=dict)
    run: dict = field(default_factory=dict)

    def drop(self, row: dict, reason: str, detail: str = "") -> None:
        """Record that ``row`` (a manifest row) is not passed on, and why."""
        self.dropped.append({
            **{c: row.get(c) for c in SAMPLE_COLUMNS},
            "stage": self.stage, "reason": reason, "detail": detail[:4000],
        })

    def write(self, kept: pl.DataFrame) -> dict:
        """Write the manifest, the dropped rows and the metrics; return the metrics."""
        write_parquet(kept, manifest_path(self.stage))
        dropped = pl.DataFrame(self.dropped, schema=DROPPED_SCHEMA)
        write_parquet(dropped, manifest_path(self.stage, "dropped"))
        reasons = Counter(d["reason"] for d in self.dropped)
        metrics = {
            "in": self.rows_in,
            "kept": kept.height,
            "dropped": len(self.dropped),
            "dropped_by_reason": dict(sorted(reasons.items())),
            **self.extra_metrics,
        }
        if self.rows_in != kept.height + len(self.dropped):
            raise AssertionError(
                f"stage {self.stage}: {self.rows_in} rows in but {kept.height} kept + "
                f"{len(self.dropped)} dropped; a row was lost"
            )
        write_metrics(self.stage, metrics)
        write_run_report(self.stage, self.run)
        return metrics


def write_record(record: dict, path: Path) -> bool:
    """Write a toolchain record to ``path`` unless it holds it already (its time then stays); whether it changed."""
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    changed = not path.exists() or path.read_text() != text
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return changed
