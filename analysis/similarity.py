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
# # CUDA vs HIP similarity (chrF)
#
# How much of the CUDA side survives, character for character, on the HIP side? For every pair this notebook
# scores the HIP text against the CUDA text with chrF (sacrebleu's `CHRF`, default settings: character n-grams up
# to 6, β = 2, no word n-grams; 0 = nothing shared, 100 = identical), for three kinds of text:
#
# - **source**: the CUDA file vs its hipify-perl translation;
# - **host asm**: the x86-64 host assembly of nvcc vs that of hipcc;
# - **device asm**: NVIDIA SASS vs AMD RDNA3 assembly (the normalised `<col>_norm` texts when exported, so the SASS
#   instruction encodings do not count);
#
# and, when the `kernels` table is there, for each kernel pair: **kernel source** and **kernel device asm**.
#
# **`chrf_cuda_vs_hip.png`** shows the distribution per kind (the CASS paper's Figure 4, right: high similarity
# for source, medium for host and low for device assembly).
#
# chrF is quadratic in nothing but linear in the text length; with large tables set `CASS_ANALYSIS_MAX_SAMPLES`
# (default 2000; the rows with the smallest ids are used, a stable pseudo-random sample). Scores are kept per pair
# of texts (`memo_map`, keyed by the texts and chrF's signature): a rerun scores only pairs it has not seen.
#
# Inputs: `CASS_EXPORT_DIR`. Outputs: a figure, `chrf_by_kind.csv` and `chrf_per_sample.csv` in `CASS_PLOTS_DIR`,
# numbers under the key `similarity` of `CASS_ANALYSIS_METRICS`.

# %%
import sys
from pathlib import Path

if not Path("_common.py").exists() and Path("analysis/_common.py").exists():
    sys.path.insert(0, str(Path("analysis").resolve()))

import _common as cn
import matplotlib.pyplot as plt
import polars as pl
from blake3 import blake3
from sacrebleu.metrics import CHRF

# what this notebook reads: the analyze stage shows it nothing else and keeps its results under these bytes
READS = {"pairs": ["sample_id", "origin", "cuda_source", "hip_source", "cuda_host_asm", "hip_host_asm",
                   "cuda_device_sass_*", "hip_device_asm_*"],
         "kernels": ["kernel_id", "origin", "cuda_kernel_source", "hip_kernel_source", "cuda_kernel_sass_*",
                     "hip_kernel_asm_*"]}

# %%
chrf = CHRF()
chrf.sentence_score("a", ["a"])   # sets the number of references, which the signature in the metrics names
CHRF_MEMO = "chrf-" + blake3(chrf.get_signature().format().encode()).hexdigest()[:16]   # every setting, the version


def score(texts: tuple[str, str]) -> float:
    """chrF of the HIP text (hypothesis) against the CUDA text (reference)."""
    hyp, ref = texts
    return chrf.sentence_score(hyp, [ref]).score


pairs = cn.scan_table("pairs")
pair_columns = pairs.collect_schema().names()
pair_device = cn.device_columns(pair_columns)
kinds: list[tuple[str, str, str, str]] = [("source", "pairs", "cuda_source", "hip_source")]
kinds.append(("host asm", "pairs", "cuda_host_asm", "hip_host_asm"))
if {"nvidia", "amd"} <= pair_device.keys():
    kinds.append(("device asm", "pairs", pair_device["nvidia"].text, pair_device["amd"].text))

kernels = cn.scan_table("kernels", required=False)
if kernels is not None:
    kernel_columns = kernels.collect_schema().names()
    kernel_device = cn.device_columns(kernel_columns)
    if {"cuda_kernel_source", "hip_kernel_source"} <= set(kernel_columns):
        kinds.append(("kernel source", "kernels", "cuda_kernel_source", "hip_kernel_source"))
    if {"nvidia", "amd"} <= kernel_device.keys():
        kinds.append(("kernel device asm", "kernels", kernel_device["nvidia"].text, kernel_device["amd"].text))
print("kinds:", [(k, t, c, h) for k, t, c, h in kinds])

# %%
tables = {"pairs": (pairs, "sample_id")} | ({"kernels": (kernels, "kernel_id")} if kernels is not None else {})
rows: list[dict] = []
for table, (frame, key) in tables.items():
    wanted = [k for k in kinds if k[1] == table]
    cols = sorted({c for _, _, cuda, hip in wanted for c in (cuda, hip)})
    data = cn.limit_rows(frame.select(key, "origin", *cols), key).collect()
    for row in data.iter_rows(named=True):
        for kind, _, cuda, hip in wanted:
            if row[hip] and row[cuda]:   # both texts there: chrF of an empty text means nothing
                rows.append({"kind": kind, "id": row[key], "origin": row["origin"], "texts": (row[hip], row[cuda])})
values = cn.memo_map(CHRF_MEMO, [r.pop("texts") for r in rows], score)
scores = pl.DataFrame([r | {"chrf": v} for r, v in zip(rows, values, strict=True)],
                      schema={"kind": pl.String, "id": pl.String, "origin": pl.String, "chrf": pl.Float64})
kind_order = [k for k, *_ in kinds if k in set(scores["kind"])]
origins = sorted(scores["origin"].unique().to_list())
summary = (
    scores.group_by("kind", "origin", maintain_order=True)
    .agg(
        pl.len().alias("n"),
        pl.col("chrf").mean().alias("mean_chrf"),
        pl.col("chrf").median().alias("median_chrf"),
        pl.col("chrf").std().alias("std_chrf"),
        pl.col("chrf").min().alias("min_chrf"),
        pl.col("chrf").max().alias("max_chrf"),
    )
    .sort(pl.col("kind").replace_strict(kind_order, list(range(len(kind_order)))), "origin")
)
print(summary)

# %% [markdown]
# ## chrF distribution per kind

# %%
fig, ax = plt.subplots(figsize=(11, 5.5))
palette = list(plt.get_cmap("tab10").colors)
values = {
    (kind, origin): scores.filter((pl.col("kind") == kind) & (pl.col("origin") == origin))["chrf"].to_list()
    for kind in kind_order
    for origin in origins
}
stats = {
    row[0]: row[1:]
    for row in scores.group_by("kind", maintain_order=True).agg(pl.len(), pl.col("chrf").mean()).iter_rows()
}
cn.grouped_boxplot(ax, kind_order, origins, values, colors=palette)
ax.set_xticklabels([f"{k}\nn={stats[k][0]}, mean {stats[k][1]:.1f}" for k in kind_order])
ax.set_ylim(-2, 102)
ax.set_yticks(range(0, 101, 20))
ax.set_ylabel("chrF, HIP vs CUDA (0-100, higher = more similar)")
ax.set_xlabel("text compared (file level; kernel level from the kernels table)")
ax.set_title("Character-level similarity (chrF) of CUDA and HIP: source, host and device assembly")
handles = [plt.Rectangle((0, 0), 1, 1, facecolor=palette[j % len(palette)], alpha=0.55) for j in range(len(origins))]
ax.legend(handles, origins, title="subset (origin)", loc="upper right")
cn.save_figure(fig, "chrf_cuda_vs_hip")

# %% [markdown]
# ## Tables and metrics

# %%
cn.write_plot_csv(summary.with_columns(pl.format("{} / {}", "kind", "origin").alias("label")), "chrf_by_kind")
cn.write_plot_csv(scores.sort("kind", "id"), "chrf_per_sample")
overall = scores.group_by("kind", maintain_order=True).agg(
    pl.len().alias("n"), pl.col("chrf").mean().alias("mean"), pl.col("chrf").median().alias("median")
)
metrics = {
    "chrf_signature": str(chrf.get_signature()),
    "columns": {kind: {"cuda": cuda, "hip": hip, "table": table} for kind, table, cuda, hip in kinds},
    "max_samples": cn.MAX_SAMPLES,
    "mean_chrf": {row["kind"]: row["mean"] for row in overall.iter_rows(named=True)},
    "median_chrf": {row["kind"]: row["median"] for row in overall.iter_rows(named=True)},
    "n": {row["kind"]: row["n"] for row in overall.iter_rows(named=True)},
    "by_origin": {
        origin: {
            row["kind"]: {"mean": row["mean_chrf"], "median": row["median_chrf"], "n": row["n"]}
            for row in summary.filter(pl.col("origin") == origin).iter_rows(named=True)
        }
        for origin in origins
    },
}
cn.merge_metrics("similarity", metrics)
metrics["mean_chrf"]
