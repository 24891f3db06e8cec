# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Assembly lengths
#
# How long is the assembly the two vendors' compilers make of the same program? This notebook reads the exported
# file-level pairs (`pairs` table) and shows
#
# 1. **`lengths_by_backend.png`**: the length in lines of the four assemblies of every pair (CUDA host x86-64,
#    NVIDIA SASS, HIP host x86-64, AMD RDNA3 device), per subset (`origin`); the CASS paper's Figure 4 (left);
# 2. **`source_vs_asm_lines.png`**: source lines against assembly lines on log-log axes, host and device, with a
#    power-law fit per backend; the paper's Figure 7 (it reports an "exponential" relationship: the metrics below
#    give the fit quality of both a power law and an exponential so the claim can be checked on this data).
#
# Device lengths count the *normalised* device text (`<col>_norm`: one line per instruction, label or directive;
# SASS encodings and padding removed) when the table has it, else the raw text. Line counts come from the exported
# `<col>_lines` columns, so this notebook reads no text and is cheap on published (`hf://`) shards.
#
# Inputs: `CASS_EXPORT_DIR` (default `data/export`). Outputs: figures in `CASS_FIGURES_DIR`, CSV tables in
# `CASS_PLOTS_DIR`, numbers under the key `lengths` of `CASS_ANALYSIS_METRICS`.

# %%
import sys
from pathlib import Path

if not Path("_common.py").exists() and Path("analysis/_common.py").exists():
    sys.path.insert(0, str(Path("analysis").resolve()))

import _common as cn
import matplotlib.pyplot as plt
import numpy as np
import polars as pl

# what this notebook reads: the analyze stage shows it nothing else and keeps its results under these bytes
READS = {"pairs": ["sample_id", "origin", "cuda_source", "hip_source", "cuda_source_lines", "hip_source_lines",
                   "cuda_host_asm", "hip_host_asm", "cuda_host_asm_lines", "hip_host_asm_lines", "cuda_device_sass_*",
                   "hip_device_asm_*"]}

# %%
pairs = cn.scan_table("pairs")
columns = pairs.collect_schema().names()
backends = cn.backends(columns)
print("export dir:", cn.shown_path(cn.EXPORT_DIR))
print("backends:", [(b.key, b.text) for b in backends])

lines = cn.require_rows(pairs.select(
    "sample_id",
    "origin",
    *[cn.lines_expr(columns, b.text).alias(f"{b.key}__asm") for b in backends],
    *[cn.lines_expr(columns, src).alias(f"{src}__lines") for src in sorted({b.source for b in backends})],
).collect(), "pairs", "lengths")
long = pl.concat(
    [
        lines.select(
            "sample_id",
            "origin",
            pl.lit(b.key).alias("backend"),
            pl.lit(b.label).alias("backend_label"),
            pl.col(f"{b.source}__lines").alias("source_lines"),
            pl.col(f"{b.key}__asm").alias("asm_lines"),
        )
        for b in backends
    ]
).filter(pl.col("asm_lines") > 0)
origins = sorted(long["origin"].unique().to_list())
print(f"{lines.height} pairs, origins: {origins}")
long.group_by("backend", "origin", maintain_order=True).agg(
    pl.len().alias("n"), pl.col("asm_lines").median().alias("median"), pl.col("asm_lines").mean().alias("mean")
)

# %% [markdown]
# ## Assembly length per subset and backend

# %%
fig, ax = plt.subplots(figsize=(10, 5.5))
labels = [b.label for b in backends]
values = {
    (b.label, origin): long.filter((pl.col("backend") == b.key) & (pl.col("origin") == origin))["asm_lines"].to_list()
    for b in backends
    for origin in origins
}
palette = plt.get_cmap("tab10").colors
cn.grouped_boxplot(ax, labels, origins, values, colors=list(palette))
ax.set_yscale("log")
cn.plain_log_ticks(ax, "y")
ax.set_ylabel("assembly length (lines, log scale)")
ax.set_xlabel("backend (device: normalised text)")
ax.set_title("Assembly length per subset and backend")
counts = long.group_by("origin", maintain_order=True).agg(pl.col("sample_id").n_unique().alias("n"))
n_by_origin = dict(zip(counts["origin"], counts["n"], strict=True))
handles = [plt.Rectangle((0, 0), 1, 1, facecolor=palette[j % len(palette)], alpha=0.55) for j in range(len(origins))]
ax.legend(handles, [f"{o} (n={n_by_origin[o]})" for o in origins], title="subset (origin)", loc="upper right")
cn.save_figure(fig, "lengths_by_backend")

# %% [markdown]
# ## Source lines vs assembly lines
#
# Each point is one pair; lines are least-squares fits of `log10(asm) = a + b·log10(src)` (a power law
# `asm ≈ 10^a · src^b`). The metrics also hold the R² of an exponential fit `log10(asm) = a + b·src`.


# %%
def fit(x: np.ndarray, y: np.ndarray, log_x: bool) -> dict:
    """Least-squares line through (log10 x or x, log10 y): intercept, slope, R²."""
    xs = np.log10(x) if log_x else x.astype(float)
    ys = np.log10(y)
    if len(xs) < 3 or np.ptp(xs) == 0:
        return {"intercept": float("nan"), "slope": float("nan"), "r2": float("nan"), "n": len(xs)}
    slope, intercept = np.polyfit(xs, ys, 1)
    residual = ys - (intercept + slope * xs)
    r2 = 1 - float(residual @ residual) / float(((ys - ys.mean()) ** 2).sum())
    return {"intercept": float(intercept), "slope": float(slope), "r2": r2, "n": len(xs)}


scatter = long.filter(pl.col("source_lines") > 0)
fits: dict[str, dict] = {}
fig, axes = plt.subplots(1, 2, figsize=(12, 5.5), sharey=False)
for ax, side in zip(axes, ["host", "device"], strict=True):
    for b in [b for b in backends if b.side == side]:
        part = scatter.filter(pl.col("backend") == b.key)
        x = part["source_lines"].to_numpy()
        y = part["asm_lines"].to_numpy()
        power = fit(x, y, log_x=True)
        fits[b.key] = {"power_law": power, "exponential": fit(x, y, log_x=False)}
        color = cn.BACKEND_COLORS[b.key]
        ax.scatter(x, y, s=18, alpha=0.7, color=color, edgecolors="none", label=f"{b.label} (n={len(x)})")
        if not np.isnan(power["slope"]):
            grid = np.geomspace(x.min(), x.max(), 50)
            ax.plot(
                grid,
                10 ** power["intercept"] * grid ** power["slope"],
                color=color,
                linewidth=1.5,
                label=f"fit: asm ∝ src^{power['slope']:.2f} (R²={power['r2']:.2f})",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    cn.plain_log_ticks(ax)
    ax.set_xlabel("source length (lines of the .cu / HIP file, log scale)")
    ax.set_ylabel(f"{side} assembly length (lines, log scale)")
    ax.set_title(f"{side.capitalize()} assembly vs source length")
    ax.legend(fontsize=8, loc="upper left")
fig.suptitle("Source lines vs assembly lines per backend", fontsize=13)
fig.tight_layout()
cn.save_figure(fig, "source_vs_asm_lines")

# %% [markdown]
# ## Tables and metrics

# %%
summary = (
    long.group_by("backend", "backend_label", "origin", maintain_order=True)
    .agg(
        pl.len().alias("n"),
        pl.col("asm_lines").mean().alias("mean_lines"),
        pl.col("asm_lines").median().cast(pl.Float64).alias("median_lines"),
        pl.col("asm_lines").quantile(0.9).alias("p90_lines"),
        pl.col("asm_lines").max().alias("max_lines"),
    )
    .sort("origin", "backend")
)
cn.write_plot_csv(summary.with_columns(pl.format("{} / {}", "backend", "origin").alias("label")), "lengths_by_backend")
cn.write_plot_csv(
    lines.select(
        "sample_id",
        "origin",
        *[pl.col(c).alias(c.replace("__lines", "_lines")) for c in lines.columns if c.endswith("__lines")],
        *[pl.col(f"{b.key}__asm").alias(f"{b.key}_asm_lines") for b in backends],
    ).sort("sample_id"),
    "source_vs_asm",
)

medians = {b.key: long.filter(pl.col("backend") == b.key)["asm_lines"].median() for b in backends}
metrics = {
    "pairs": lines.height,
    "origins": origins,
    "columns": {b.key: b.text for b in backends},
    "lines": {
        b.key: {
            row["origin"]: {k: row[f"{k}_lines"] for k in ("mean", "median", "p90", "max")} | {"n": row["n"]}
            for row in summary.filter(pl.col("backend") == b.key).iter_rows(named=True)
        }
        for b in backends
    },
    "median_lines": medians,
    "fits": fits,
}
if medians.get("cuda_device") and medians.get("hip_device"):
    metrics["amd_over_sass_median_ratio"] = medians["hip_device"] / medians["cuda_device"]
cn.merge_metrics("lengths", metrics)
metrics["median_lines"], metrics.get("amd_over_sass_median_ratio")
