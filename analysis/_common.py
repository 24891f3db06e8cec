"""Shared helpers for the analysis notebooks in this folder (not a notebook itself: ``stages.analyze`` skips ``_*.py``).

Paths come from environment variables, relative ones resolved against the repository root (the parent of this
folder), so a notebook gives the same result whether it runs from the repository root, from ``analysis/`` (Jupyter
starts kernels in the notebook's folder) or headless through ``python -m stages.analyze``:

| variable | default | what |
|---|---|---|
| ``CASS_EXPORT_DIR`` | ``data/export`` | exported tables, local or ``hf://datasets/<repo>/...`` (``table_patterns``) |
| ``CASS_METRICS_DIR`` | ``metrics`` | the pipeline's per-stage ``<stage>.json`` (local or any fsspec URL) |
| ``CASS_FIGURES_DIR`` | ``analysis/figures`` | PNG figures written here |
| ``CASS_PLOTS_DIR`` | ``analysis/plots`` | small CSV tables (DVC ``plots``) written here |
| ``CASS_ANALYSIS_METRICS`` | ``analysis/metrics.json`` | numbers, one top-level key per notebook, merged |
| ``CASS_ANALYSIS_MAX_SAMPLES`` | ``2000`` | cap on rows for the text-heavy analyses (chrF, opcodes, t-SNE); 0 = all |
| ``CASS_CACHE`` | ``~/.cache/cass`` | per-row results kept between runs under ``analysis/`` (``memo_map``) |
| ``CASS_NOTEBOOK_READS`` | (unset) | set by ``stages.analyze``: what the notebook may read (``READS``) |
| ``CASS_METRICS_SHOWN`` | ``CASS_METRICS_DIR`` | the metrics folder as shown (the stage's copy is elsewhere) |
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import polars as pl
from blake3 import blake3

ROOT = Path(__file__).resolve().parent.parent

# --------------------------------------------------------------------------------------------------------- paths


def _is_url(value: str) -> bool:
    return "://" in value


def env_path(var: str, default: str) -> str:
    """The path in ``$var`` (or ``default``): URLs as given, relative local paths resolved against the repo root."""
    value = os.environ.get(var) or default
    if _is_url(value):
        return value.rstrip("/")
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else ROOT / path)


def shown_path(value: str) -> str:
    """A path as a notebook prints it: relative to the repository root when below it, so an executed
    notebook holds the same bytes in every checkout."""
    if _is_url(value) or not Path(value).is_relative_to(ROOT):
        return value
    return str(Path(value).relative_to(ROOT))


EXPORT_DIR = env_path("CASS_EXPORT_DIR", "data/export")
METRICS_DIR = env_path("CASS_METRICS_DIR", "metrics")
METRICS_SHOWN = shown_path(os.environ.get("CASS_METRICS_SHOWN") or METRICS_DIR)
FIGURES_DIR = Path(env_path("CASS_FIGURES_DIR", "analysis/figures"))
PLOTS_DIR = Path(env_path("CASS_PLOTS_DIR", "analysis/plots"))
ANALYSIS_METRICS = Path(env_path("CASS_ANALYSIS_METRICS", "analysis/metrics.json"))
MAX_SAMPLES = int(os.environ.get("CASS_ANALYSIS_MAX_SAMPLES") or 2000)
# as store.machine_cache("analysis"): the notebooks run without importing the cass package
CACHE_DIR = Path(os.environ.get("CASS_CACHE") or Path.home() / ".cache" / "cass").expanduser() / "analysis"


def memo_map(name: str, items: Sequence[tuple[str, ...]], compute: Callable[[tuple[str, ...]], float]) -> list[float]:
    """``compute(item)`` for every item (a tuple of texts), computed once per distinct item and kept in
    ``CACHE_DIR/<name>.parquet`` by the BLAKE3 of its texts, so a rerun on a changed export computes only
    the new rows. ``name`` must change whenever ``compute`` does."""
    path = CACHE_DIR / f"{name}.parquet"
    try:
        known = dict(pl.read_parquet(path).iter_rows())
    except (OSError, pl.exceptions.PolarsError):   # none yet, or unreadable: start afresh
        known = {}
    keys = []
    for item in items:
        digest = blake3()
        for text in item:
            digest.update(blake3(text.encode()).digest())
        keys.append(digest.hexdigest())
    todo = {key: item for key, item in zip(keys, items, strict=True) if key not in known}
    if todo:
        known.update((key, compute(item)) for key, item in todo.items())
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        pl.DataFrame({"key": list(known), "value": list(known.values())},
                     schema={"key": pl.String, "value": pl.Float64}).write_parquet(tmp)
        tmp.replace(path)
    return [known[key] for key in keys]

# ---------------------------------------------------------------------------------------------------------- tables


def table_patterns(config: str, export_dir: str | None = None) -> list[str]:
    """Glob patterns tried, in order, for a table (``pairs``, ``kernels``) under the export directory."""
    base = export_dir or EXPORT_DIR
    return [f"{base}/{config}/*.parquet", f"{base}/data/{config}/*.parquet"]


READS_VARIABLE = "CASS_NOTEBOOK_READS"
"""Set by ``stages.analyze`` to the running notebook's ``READS`` (JSON): the tables' columns and the stage metrics it
declares. The stage keeps each notebook's results under the bytes of exactly those, so the notebook sees nothing
else (:func:`scan_table`; the metrics folder it is given holds only the declared files)."""


def notebook_reads() -> dict[str, list[str]] | None:
    """The running notebook's declared reads (``$CASS_NOTEBOOK_READS``); None outside the stage (Jupyter): all."""
    value = os.environ.get(READS_VARIABLE)
    return None if value is None else json.loads(value)


class UndeclaredRead(Exception):
    """A notebook read a table its ``READS`` does not name."""


def readable_columns(config: str, names: Sequence[str], reads: dict[str, list[str]] | None) -> list[str]:
    """The columns of table ``config`` (``names``, in table order) that a notebook declaring ``reads`` sees: all
    where ``reads`` is None, else those its glob patterns for the table match."""
    if reads is None:
        return list(names)
    if config not in reads:
        raise UndeclaredRead(f"the notebook reads table {config!r}, which its READS does not name: add it there "
                             "(stages.analyze keeps a notebook's results under what READS names)")
    return [name for name in names if any(fnmatch.fnmatchcase(name, p) for p in reads[config])]


def table_files(config: str, export_dir: str) -> list[str]:
    """The Parquet files of the first local layout that has any for ``config`` (sorted), or none."""
    for pattern in table_patterns(config, export_dir):
        directory, glob = pattern.rsplit("/", 1)
        if found := sorted(str(p) for p in Path(directory).glob(glob)):
            return found
    return []


def scan_table(config: str, export_dir: str | None = None, required: bool = True) -> pl.LazyFrame | None:
    """A lazy scan of the first layout that has Parquet files for ``config``; ``None`` when none has and not required.
    Under ``stages.analyze`` only the columns the notebook's ``READS`` names (:func:`readable_columns`).

    Local layouts are found by :func:`table_files`; remote ones (``hf://...``) by asking Polars for the schema.
    """
    reads = notebook_reads()
    readable_columns(config, [], reads)   # a table the notebook does not declare is an error, found or not
    tried = table_patterns(config, export_dir)
    sources: list[str | list[str]] = list(tried)
    if not _is_url(tried[0]):   # local: the very files stages.analyze keyed the notebook's results by
        found = table_files(config, export_dir or EXPORT_DIR)
        sources = [found] if found else []
    for source in sources:
        try:
            frame = pl.scan_parquet(source)
            names = frame.collect_schema().names()
        except (pl.exceptions.ComputeError, FileNotFoundError, OSError):
            continue
        visible = readable_columns(config, names, reads)
        return frame if visible == names else frame.select(visible)
    if required:
        raise FileNotFoundError(f"no Parquet files for table {config!r}; tried: {', '.join(tried)}")
    return None


def limit_rows(frame: pl.LazyFrame, key: str, limit: int | None = None) -> pl.LazyFrame:
    """At most ``limit`` rows (default ``MAX_SAMPLES``; 0 = all), chosen deterministically, sorted by ``key``.

    The rows with the smallest ``key`` are kept: keys are content digests, so that is a stable pseudo-random
    sample. Only the key column is read to choose them, so text columns of rows not chosen are never held.
    """
    limit = MAX_SAMPLES if limit is None else limit
    if limit > 0:
        keys = frame.select(key).collect()[key]
        if keys.len() > limit:
            frame = frame.filter(pl.col(key).is_in(keys.sort().head(limit).implode()))
    return frame.sort(key)


@dataclass(frozen=True)
class DeviceColumns:
    """One vendor's device assembly columns found in a table's schema."""

    vendor: str  # "nvidia" | "amd"
    arch: str  # e.g. sm_89, gfx1100
    raw: str  # raw text column
    norm: str | None  # normalised text column, when exported

    @property
    def text(self) -> str:
        """The column the analyses read: the normalised text when there is one."""
        return self.norm or self.raw


_DEVICE_PATTERNS = {
    "nvidia": re.compile(r"^cuda_(?:device|kernel)_sass_(sm_\w+?)$"),
    "amd": re.compile(r"^hip_(?:device|kernel)_asm_(gfx\w+?)$"),
}


def device_columns(columns: Iterable[str]) -> dict[str, DeviceColumns]:
    """Device assembly columns per vendor, discovered from the column names (first arch in sorted order).

    Matches ``cuda_device_sass_<sm>`` / ``hip_device_asm_<gfx>`` (pairs) and ``cuda_kernel_sass_<sm>`` /
    ``hip_kernel_asm_<gfx>`` (kernels); ``<col>_norm`` is the normalised text, ``<col>_lines`` is skipped.
    """
    names = set(columns)
    found: dict[str, DeviceColumns] = {}
    for vendor, pattern in _DEVICE_PATTERNS.items():
        raws = sorted(name for name in names if pattern.match(name) and not name.endswith(("_norm", "_lines")))
        if raws:
            raw = raws[0]
            arch = pattern.match(raw).group(1)  # type: ignore[union-attr]
            found[vendor] = DeviceColumns(vendor, arch, raw, f"{raw}_norm" if f"{raw}_norm" in names else None)
    return found


@dataclass(frozen=True)
class Backend:
    """One of the four assembly outputs of a pair, with the source it was compiled from."""

    key: str  # cuda_host | cuda_device | hip_host | hip_device
    label: str  # for figures
    vendor: str  # nvidia | amd
    side: str  # host | device
    text: str  # assembly text column
    source: str  # source text column


def backends(columns: Iterable[str]) -> list[Backend]:
    """The backends present in a pairs table, in a fixed order (CUDA host, SASS, HIP host, AMD device)."""
    names = set(columns)
    dev = device_columns(names)
    out: list[Backend] = []
    if "cuda_host_asm" in names:
        out.append(Backend("cuda_host", "CUDA host (x86-64)", "nvidia", "host", "cuda_host_asm", "cuda_source"))
    if "nvidia" in dev:
        d = dev["nvidia"]
        out.append(Backend("cuda_device", f"NVIDIA SASS ({d.arch})", "nvidia", "device", d.text, "cuda_source"))
    if "hip_host_asm" in names:
        out.append(Backend("hip_host", "HIP host (x86-64)", "amd", "host", "hip_host_asm", "hip_source"))
    if "amd" in dev:
        d = dev["amd"]
        out.append(Backend("hip_device", f"AMD device ({d.arch})", "amd", "device", d.text, "hip_source"))
    return out


def lines_expr(columns: Iterable[str], text_column: str) -> pl.Expr:
    """Line count of a text column: the exported ``<col>_lines`` when present, else counted (non-empty text)."""
    if f"{text_column}_lines" in set(columns):
        return pl.col(f"{text_column}_lines")
    text = pl.col(text_column).fill_null("")
    return (text.str.strip_chars_end("\n").str.count_matches("\n") + (text.str.len_bytes() > 0).cast(pl.Int64)).cast(
        pl.Int64
    )


# --------------------------------------------------------------------------------------------------------- opcodes

# SASS instruction line: optional "/*0090*/" address, optional predicate (@P0, @!P1, @!UPT), then the mnemonic.
_SASS_INSN = re.compile(r"^\s*(?:/\*[0-9a-fA-F]+\*/\s*)?(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\b")
# AMD instruction: an ISA mnemonic (every RDNA3 one starts with one of these prefixes), at the start of an
# indented line or after the "::" of a VOPD dual-issue pair.
_AMD_MNEMONIC = re.compile(r"^(?:s|v|ds|global|buffer|flat|scratch|image|exp|lds)_[a-z0-9_]+$")


def sass_opcodes(text: str | None) -> list[str]:
    """SASS base mnemonics (text before the first ``.``: ``IMAD.MOV.U32`` -> ``IMAD``), one per instruction."""
    out: list[str] = []
    for line in (text or "").splitlines():
        stripped = line.strip()
        if not stripped.startswith("/*") or stripped.startswith("/* 0x"):
            continue  # headers, "Function :" lines, encoding-only continuation lines
        match = _SASS_INSN.match(stripped)
        if match:
            out.append(match.group(1).split(".", 1)[0])
    return out


def amd_opcodes(text: str | None) -> list[str]:
    """AMD (RDNA) mnemonics as written (``s_load_b32``, ``v_add_nc_u32_e32``); both halves of a ``v_dual_*`` pair."""
    out: list[str] = []
    for line in (text or "").splitlines():
        if not line[:1].isspace():
            continue  # labels, metadata YAML at column 0
        code = line.split(";", 1)[0]
        for part in code.split("::"):
            token = part.strip().split(None, 1)[0] if part.strip() else ""
            if _AMD_MNEMONIC.match(token):
                out.append(token)
    return out


OPCODE_PARSERS = {"nvidia": sass_opcodes, "amd": amd_opcodes}


def count_opcodes(vendor: str, texts: Sequence[str | None]) -> list[Counter[str]]:
    """One opcode ``Counter`` per text."""
    parse = OPCODE_PARSERS[vendor]
    return [Counter(parse(text)) for text in texts]


# --------------------------------------------------------------------------------------------------------- metrics


def _rounded(value: object, digits: int = 4) -> object:
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else round(value, digits)
    if isinstance(value, dict):
        return {str(k): _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_rounded(v, digits) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return _rounded(value.item(), digits)
    return value


def merge_metrics(section: str, values: dict, path: Path | None = None) -> dict:
    """Set ``section`` in the shared metrics JSON (other sections kept), floats rounded, keys sorted; returns it."""
    path = path or ANALYSIS_METRICS
    data = json.loads(path.read_text()) if path.exists() else {}
    data[section] = _rounded(values)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return data[section]


class NothingToPlot(Exception):
    """A notebook's table has no rows (nothing was exported): the analyze stage records the notebook as skipped."""


def require_rows(frame: pl.DataFrame, table: str, section: str) -> pl.DataFrame:
    """``frame``, read from ``table``; where it has no rows, the notebook's metrics ``section`` says it was skipped
    and :class:`NothingToPlot` stops the notebook."""
    if frame.is_empty():
        reason = f"the {table!r} table under {shown_path(EXPORT_DIR)} has no rows"
        merge_metrics(section, {"skipped": reason})
        raise NothingToPlot(reason)
    return frame


def write_plot_csv(frame: pl.DataFrame, name: str) -> Path:
    """Write a small table to ``PLOTS_DIR/<name>.csv`` (floats rounded to 4 digits)."""
    PLOTS_DIR.mkdir(parents=True, exist_ok=True)
    path = PLOTS_DIR / f"{name}.csv"
    frame.with_columns(pl.col(pl.Float32, pl.Float64).round(4)).write_csv(path)
    return path


# --------------------------------------------------------------------------------------------------------- figures

VENDOR_COLORS = {"nvidia": "#5a8f00", "amd": "#c8102e"}
BACKEND_COLORS = {"cuda_host": "#a6d65a", "cuda_device": "#5a8f00", "hip_host": "#f08a8a", "hip_device": "#c8102e"}

plt.rcParams.update(
    {
        "figure.dpi": 100,
        "savefig.dpi": 150,
        "font.size": 10,
        "axes.titlesize": 12,
        "axes.labelsize": 10,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
    }
)


def save_figure(fig: plt.Figure, name: str) -> None:
    """Save ``fig`` as ``FIGURES_DIR/<name>.png`` (150 dpi), show it when running in a notebook, close it."""
    FIGURES_DIR.mkdir(parents=True, exist_ok=True)
    path = FIGURES_DIR / f"{name}.png"
    fig.savefig(path, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:  # plain python without IPython
        return
    if get_ipython() is not None:
        display(Image(filename=str(path)))


def plain_log_ticks(ax: plt.Axes, axis: str = "both") -> None:
    """Label log axes with plain numbers (``200``, not ``2x10^2``): every decade, plus 2x and 5x within <= 2 decades.

    Call after the data is plotted (the span decides which minor ticks get a label).
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    axes = [ax.xaxis, ax.yaxis] if axis == "both" else [ax.xaxis if axis == "x" else ax.yaxis]
    for target in axes:
        if target.get_scale() != "log":
            continue
        low, high = sorted(target.get_view_interval())
        span = math.log10(high / low) if low > 0 else float("inf")
        target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        if span > 2:
            target.set_minor_formatter(NullFormatter())
            continue
        keep = {2, 3, 4, 5, 6, 7, 8, 9} if span < 0.7 else {2, 5}

        def minor(v: float, _: int, keep: set[int] = keep) -> str:
            mantissa = round(v / 10 ** math.floor(math.log10(v) + 1e-9))
            return f"{v:g}" if mantissa in keep else ""

        target.set_minor_formatter(FuncFormatter(minor))


def grouped_boxplot(
    ax: plt.Axes,
    groups: Sequence[str],
    hues: Sequence[str],
    values: dict[tuple[str, str], Sequence[float]],
    colors: dict[str, str] | Sequence[str],
    points: bool = True,
) -> None:
    """Box plots of ``values[(group, hue)]``: one slot per group on the x axis, side by side per hue, with points."""
    width = 0.8 / max(len(hues), 1)
    for j, hue in enumerate(hues):
        color = colors[hue] if isinstance(colors, dict) else colors[j % len(colors)]
        for i, group in enumerate(groups):
            data = [v for v in values.get((group, hue), []) if v is not None and not math.isnan(v)]
            if not data:
                continue
            pos = i - 0.4 + width * (j + 0.5)
            ax.boxplot(
                [data],
                positions=[pos],
                widths=width * 0.8,
                patch_artist=True,
                showfliers=not points,
                medianprops={"color": "black"},
                boxprops={"facecolor": color, "alpha": 0.55},
            )
            if points:
                spread = width * 0.25
                offsets = [spread * (((k * 0.6180339887) % 1.0) * 2 - 1) for k in range(len(data))]
                ax.scatter([pos + o for o in offsets], data, s=8, color="black", alpha=0.45, zorder=3, linewidths=0)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    ax.set_xlim(-0.6, len(groups) - 0.4)
