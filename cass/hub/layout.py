"""The dataset as the Hugging Face Hub lays datasets out: config shards and the dataset card (stage ``hub``:
:mod:`cass.stages.hub`)."""

from __future__ import annotations

import json
import math
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml

from cass.benchmark import REAL_SUITE
from cass.engine.stage_work import StageWork
from cass.pipeline.manifests import write_parquet
from store import digest_bytes

SOURCES = {"pairs": ("export/pairs", "sample_id"), "kernels": ("export/kernels", "kernel_id"),
           "instruct_source": ("instruct/source", "id"), "instruct_asm": ("instruct/asm", "id")}
CITATION = """@article{heakl2025cass,
  title={CASS: Nvidia to AMD Transpilation with Data, Models, and Benchmark},
  author={Heakl, Ahmed and Hashmi, Sarim and Stahl, Gustavo Bertolo and Han, Seung Hun Eddie and Khan, Salman
          and Mahmoud, Abdulrahman},
  journal={arXiv preprint arXiv:2505.16968},
  year={2025}
}"""


STAGING = ".staging"
"""Where :func:`write_configs` spreads a config's rows over its shards (removed when the config is written)."""


def shard_of(key: str, shards: int) -> int:
    """The shard a row belongs to: stable for its key while the shard count stays."""
    return int(digest_bytes(key.encode())[:12], 16) % shards


class Parts(ABC):
    """A config's rows, in parts that can be read one at a time, by number (it pickles: workers read the parts)."""

    count: int

    @abstractmethod
    def part(self, number: int) -> pl.DataFrame:
        """The rows of part ``number``."""


@dataclass(frozen=True)
class FileParts(Parts):
    """The rows of Parquet ``files`` that ``keep`` selects, a file a part."""

    files: tuple[Path, ...]
    keep: pl.Expr

    @property
    def count(self) -> int:
        return len(self.files)

    def part(self, number: int) -> pl.DataFrame:
        return pl.read_parquet(self.files[number]).filter(self.keep)


@dataclass(frozen=True)
class FrameParts(Parts):
    """A table already in memory, as one part."""

    frame: pl.DataFrame
    count = 1

    def part(self, number: int) -> pl.DataFrame:
        return self.frame


@dataclass
class Config:
    """A config as written: its shard files (repository paths), rows, schema and content digest (BLAKE3 over its
    shard files' digests, in name order, 16 hex digits: it changes exactly when the config's data does)."""

    paths: list[str]
    rows: int
    schema: pl.Schema
    digest: str


@dataclass(frozen=True)
class Spread:
    """One config being written: its parts, key, shard count and where its rows are staged."""

    name: str
    parts: Parts
    key: str
    shards: int
    staging: Path


def write_configs(work: StageWork, root: Path, configs: dict[str, tuple[Parts, str]], shard_bytes: int
                  ) -> dict[str, Config]:
    """Shards of every config under ``data/<name>/`` of the repository laid out at ``root``. A config's shard count
    is its size over ``shard_bytes``; a row's shard is chosen by its ``key`` (:func:`shard_of`); each shard is sorted
    by ``key``. Passes over the stage's workers, each an item per part or shard, so a worker holds one part or one
    shard: every config's parts are sized; then, a config at a time (so one config is staged at a time), its parts
    are spread over its shards through a staging folder (written fast: lz4) and each shard is gathered and written."""
    parts = [(name, config, number) for name, config in configs.items() for number in range(config[0].count)]
    sizes: dict[str, tuple[int, int, pl.Schema]] = {name: (0, 0, pl.Schema()) for name in configs}
    for (name, _, _), (size, rows, schema) in zip(parts, work.map(part_size, parts, count=len(parts)), strict=True):
        sizes[name] = (sizes[name][0] + size, sizes[name][1] + rows, schema)
    written = {}
    for name, (config_parts, key) in configs.items():
        size, rows, schema = sizes[name]
        spread = Spread(name, config_parts, key, max(1, math.ceil(size / shard_bytes)), root / STAGING / name)
        for _ in work.map(scatter_part, [(spread, n) for n in range(config_parts.count)], count=config_parts.count):
            pass
        files = list(work.map(gather_shard, [(spread, schema, n) for n in range(spread.shards)], str(root),
                              count=spread.shards))
        shutil.rmtree(spread.staging, ignore_errors=True)
        written[name] = Config([path for path, _ in files], rows, schema,
                               digest_bytes("".join(digest for _, digest in files).encode())[:16])
    return written


def part_size(item: tuple[str, tuple[Parts, str], int]) -> tuple[int, int, pl.Schema]:
    """A part's size in memory, rows and schema."""
    _, (parts, _), number = item
    part = parts.part(number)
    return part.estimated_size(), part.height, part.schema


def scatter_part(item: tuple[Spread, int]) -> None:
    """A part's rows, each staged under the shard its key picks."""
    spread, number = item
    part = spread.parts.part(number)
    keyed = part.with_columns(pl.col(spread.key).map_elements(lambda k: shard_of(k, spread.shards),
                                                              return_dtype=pl.Int64).alias("_shard"))
    for (shard,), piece in keyed.partition_by("_shard", as_dict=True).items():
        (spread.staging / str(shard)).mkdir(parents=True, exist_ok=True)
        piece.drop("_shard").write_parquet(spread.staging / str(shard) / f"{number:06d}.parquet", compression="lz4")


def gather_shard(item: tuple[Spread, pl.Schema, int], root: str) -> tuple[str, str]:
    """A shard's staged rows, sorted by key, written; returns its repository path and the digest of its bytes."""
    spread, schema, number = item
    pieces = [pl.read_parquet(p) for p in sorted((spread.staging / str(number)).glob("*.parquet"))]
    shard = pl.concat(pieces) if pieces else pl.DataFrame(schema=schema)
    path = f"data/{spread.name}/train-{number:05d}-of-{spread.shards:05d}.parquet"
    write_parquet(shard.sort(spread.key), Path(root) / path, sort_by=None)
    return path, digest_bytes((Path(root) / path).read_bytes())


def dtype_name(dtype: pl.DataType) -> str:
    """A schema table's type name (Arrow-like)."""
    return str(dtype).replace("String", "string").replace("Int64", "int64").replace("Boolean", "bool")


def execution_section(metrics: dict | None) -> list[str]:
    """The card's account of the execute stage: where programs ran and what came of each pair."""
    if metrics is None:
        return []
    host = metrics["host"]
    where = "nowhere: no GPU host was configured or found" if host is None else (
        f"`{host['name']}`: {host['description']}, host fingerprint `{host['fingerprint'][:16]}`")
    lines = ["", "## Execution", "",
             f"Both programs of every pair with a `main` (the CUDA original built with nvcc, the HIP translation "
             f"through HIP's NVIDIA back end) ran in the program sandbox on {where}: the CUDA original "
             f"{metrics['runs']} times per argument set, the HIP translation {metrics['hip_runs']} times. "
             f"Limits per run: `{json.dumps(metrics['limits'], sort_keys=True)}`; numeric tolerance for "
             f"`match_tolerant`: `{json.dumps(metrics['tolerance'], sort_keys=True)}`. The `verified` config holds "
             f"the {metrics.get('verified', 0)} verified rows (`exec_verified`): outputs that agree (`match`, "
             "`match_masked`: timings masked, other varying numbers within the CUDA runs' range; `match_tolerant`: "
             "integers exact, other numbers within the tolerance), as many kernels launched on the GPU in every "
             "run as the CUDA original launches, and a computed value in the output (`no_signal`: none, never "
             "verified); it is left out while no pair is verified.", "",
             "| exec_status | pairs |", "|---|---:|"]
    return lines + [f"| `{status}` | {n} |" for status, n in metrics["exec_status"].items()]


def decontamination_section(params: dict, dedup_metrics: dict | None) -> list[str]:
    """The card's account of how training data is kept apart from the translation benchmark."""
    trees = ", ".join(f"`{t}`" for t in params["dedup"]["reference_trees"]) or "no tree"
    holdout = ", ".join(f"`{o}`" for o in params["export"]["holdout_origins"]) or "none"
    dropped = (dedup_metrics or {}).get("dropped_by_reason", {}).get("contaminated", 0)
    by_suite = (dedup_metrics or {}).get("contaminated_by_suite", {})
    files = (dedup_metrics or {}).get("reference_files", {})
    real = (f" and of the {files.get(REAL_SUITE, 0)} CUDA files of the real-program suite (`dedup.real_tasks`)"
            if params["dedup"]["real_tasks"] else " (the real-program suite is off: `dedup.real_tasks`)")
    return ["", "## Decontamination", "",
            "Training data is decontaminated against both suites of the translation benchmark by default. Every "
            f"item that is a near duplicate (the dedup parameters below) of a file under {trees} "
            f"(`dedup.reference_trees`){real} is dropped as `contaminated`: {dropped} in this build "
            f"({by_suite.get('own', 0)} near the own suite's tasks, {by_suite.get(REAL_SUITE, 0)} near the "
            "real-program suite's). The benchmark's own "
            f"tasks (origins {holdout}, `export.holdout_origins`) pass "
            "through the same stages for their assemblies, but are in no training config (`pairs`, `kernels`, "
            "`verified`, `instruct_*`); they are the `pairs_<origin>` config of their origin only."]


def card(params: dict, configs: dict[str, Config], counts: list[tuple[str, dict]], tools: dict) -> str:
    """The dataset card: YAML header the Hub reads, then the documentation (``counts``: (stage, metrics) in pipeline
    order; ``tools``: the toolchain record)."""
    header = {
        "license": "other",
        "license_name": "per-sample",
        "license_details": "Each sample keeps its source's license fields (license_type, detected_licenses); "
                           "the bundled corpus is original code of this project.",
        "pretty_name": "CUDA/HIP source and SASS/RDNA3 assembly pairs",
        "task_categories": ["translation", "text-generation"],
        "tags": ["cuda", "hip", "rocm", "sass", "rdna3", "gpu", "assembly", "code"],
        "configs": [{"config_name": name, "data_files": [{"split": "train", "path": f"data/{name}/train-*"}],
                     **({"default": True} if name == "pairs" else {})} for name in configs],
    }
    lines = ["---", yaml.safe_dump(header, sort_keys=False).rstrip(), "---", "",
             "# CUDA/HIP source and SASS/RDNA3 assembly pairs", "",
             "Aligned CUDA sources, their HIPIFY translations and the assemblies both vendors' compilers make of "
             "them (NVIDIA host x86 + SASS, AMD host x86 + RDNA3), built by an open, reproducible pipeline in the "
             "manner of the CASS paper. Every text comes from real tools; versions and flags are below.", "",
             "## Configs", "", "The content digest is BLAKE3 over the config's shard files, in name order: it changes "
             "exactly when the config's data does.", "",
             "| config | rows | shards | content digest |", "|---|---:|---:|---|"]
    lines += [f"| `{name}` | {config.rows} | {len(config.paths)} | `{config.digest}` |"
              for name, config in configs.items()]
    for name, config in configs.items():
        lines += ["", f"### `{name}` schema", "", "| column | type |", "|---|---|"]
        lines += [f"| `{col}` | {dtype_name(dtype)} |" for col, dtype in config.schema.items()]
    lines += ["", "## Pipeline counts", "", "| stage | in | kept | dropped by reason |", "|---|---:|---:|---|"]
    for stage, m in counts:
        reasons = ", ".join(f"{r}: {n}" for r, n in m.get("dropped_by_reason", {}).items()) or "-"
        lines.append(f"| {stage} | {m.get('in', '-')} | {m.get('kept', '-')} | {reasons} |")
    lines += execution_section(dict(counts).get("execute"))
    lines += decontamination_section(params, dict(counts).get("dedup"))
    lines += ["", "## Toolchains", "", "| vendor | tool | version | fingerprint |", "|---|---|---|---|"]
    for vendor, by_tool in sorted(tools.items()):
        for tool, info in sorted(by_tool.items()):
            lines.append(f"| {vendor} | {tool} | {info['version'].split(' | ')[0]} | `{info['fingerprint'][:16]}` |")
    dedup = dict(counts).get("dedup", {}).get("parameters", {})
    tokens = dict(counts).get("tokens", {})
    lines += ["", "## Parameters", "", "```yaml", yaml.safe_dump({
        "nvidia": params["nvidia"], "amd": params["amd"], "filter": params["filter"], "dedup": dedup,
        "tokens": {"tokenizer": tokens.get("tokenizer", params["tokens"]["tokenizer"]),
                   "max_tokens": params["tokens"]["max_tokens"]},
    }, sort_keys=True).rstrip(), "```", "", "## Citation", "",
        "This dataset follows the CASS paper's method; please cite it:", "", "```bibtex", CITATION, "```", ""]
    return "\n".join(lines)


def hub_files(root: Path) -> list[str]:
    """Every file of the laid-out repository, as repository paths."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
