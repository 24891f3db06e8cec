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
# # Dataset composition: domains and the pipeline funnel
#
# 1. **`domains.png`**: how many pairs (and kernels) fall in each domain. The domain is the label the `ingest`
#    stage gives each file by keyword matching (the CASS paper's appendix A.3, its Figure 3 left).
# 2. **`pipeline_funnel.png`**: for each pipeline stage in order, the items it received (`in`), split into those
#    it kept and those it dropped, per drop reason, read from the stages' `metrics/<stage>.json`. This is how the
#    paper's numbers (e.g. "files that failed conversion (approx. 43.9%) were discarded") are obtained here.
#    Stages count files, except `kernels` (kernel pairs) and `tokens` (file and kernel rows). `execute` drops
#    nothing; its bar shows the verified pairs (`exec_verified`) as kept and every other pair as a segment of its
#    execution status.
#
# Inputs: `CASS_EXPORT_DIR`, `CASS_METRICS_DIR` (default `metrics`; any fsspec URL; when it has no stage metrics,
# e.g. for published shards, the funnel figure says so). Outputs: figures, `domains.csv`, `funnel.csv`,
# `funnel_reasons.csv`; numbers under the key `composition`.

# %%
import json
import sys
from pathlib import Path

if not Path("_common.py").exists() and Path("analysis/_common.py").exists():
    sys.path.insert(0, str(Path("analysis").resolve()))

import _common as cn
import fsspec
import matplotlib.pyplot as plt
import polars as pl

# what this notebook reads: the analyze stage shows it nothing else and keeps its results under these bytes
READS = {"pairs": ["domain", "origin"], "kernels": ["domain"],
         "metrics": ["synthesize", "fetch_stack", "fetch_debian", "clone_repos", "ingest", "filter", "dedup", "hipify",
                     "repair", "compile_nvidia", "compile_amd", "pair", "execute", "normalize", "kernels", "tokens",
                     "instruct"]}
STAGES = READS["metrics"]
UNITS = {"synthesize": "drawn prompts", "kernels": "kernel pairs", "tokens": "file + kernel rows",
         "instruct": "training examples"}

# %% [markdown]
# ## Domains

# %%
pairs = cn.scan_table("pairs")
per_domain = (
    pairs.select(pl.col("domain").fill_null("unknown"), pl.col("origin"))
    .group_by("domain", "origin", maintain_order=True)
    .agg(pl.len().alias("pairs"))
    .collect()
)
kernels = cn.scan_table("kernels", required=False)
kernel_counts = (
    kernels.select(pl.col("domain").fill_null("unknown"))
    .group_by("domain", maintain_order=True)
    .agg(pl.len().alias("kernels"))
    .collect()
    if kernels is not None and "domain" in kernels.collect_schema().names()
    else pl.DataFrame(schema={"domain": pl.String, "kernels": pl.UInt32})
)
domains = (
    per_domain.group_by("domain", maintain_order=True)
    .agg(pl.col("pairs").sum())
    .join(kernel_counts, on="domain", how="left")
    .with_columns(pl.col("kernels").fill_null(0), (100 * pl.col("pairs") / pl.col("pairs").sum()).alias("share_pct"))
    .sort(["pairs", "domain"], descending=[True, False])
)
origins = sorted(per_domain["origin"].unique().to_list())
print(domains)

# %%
order = domains["domain"].to_list()
fig, ax = plt.subplots(figsize=(10, 1.5 + 0.5 * max(len(order), 4)))
palette = list(plt.get_cmap("tab10").colors)
left = [0] * len(order)
for j, origin in enumerate(origins):
    part = dict(per_domain.filter(pl.col("origin") == origin).select("domain", "pairs").iter_rows())
    widths = [part.get(d, 0) for d in order]
    ax.barh(order, widths, left=left, color=palette[j % len(palette)], alpha=0.85, label=origin)
    left = [a + b for a, b in zip(left, widths, strict=True)]
for y, row in enumerate(domains.iter_rows(named=True)):
    note = f" {row['pairs']} ({row['share_pct']:.0f}%)"
    if row["kernels"]:
        note += f", {row['kernels']} kernel{'s' if row['kernels'] != 1 else ''}"
    ax.text(row["pairs"], y, note, va="center", fontsize=9)
ax.invert_yaxis()
ax.set_xlim(0, max(left, default=0) * 1.35 or 1)   # an empty export draws an empty chart
ax.set_xlabel("file-level pairs (count)")
ax.set_ylabel("domain")
ax.set_title(f"Domain distribution ({sum(left)} pairs, {int(domains['kernels'].sum())} kernel pairs)")
ax.grid(axis="y", visible=False)
ax.legend(title="subset (origin)", loc="lower right")
cn.save_figure(fig, "domains")

# %% [markdown]
# ## Pipeline funnel


# %%
def read_stage_metrics(directory: str) -> dict[str, dict]:
    """``{stage: metrics}`` for every ``<stage>.json`` in ``directory`` (local path or fsspec URL)."""
    try:
        fs, root = fsspec.core.url_to_fs(directory)
        paths = fs.glob(f"{root.rstrip('/')}/*.json")
    except (FileNotFoundError, OSError, ValueError) as error:
        print(f"no stage metrics in {directory}: {error}")
        return {}
    found = {}
    for path in sorted(paths):
        with fs.open(path, "r") as handle:
            found[Path(path).stem] = json.load(handle)
    return found


STATUS = "status: "
"""Segments that are statuses, not drops (the execute stage drops nothing)."""


def verified_view(metrics: dict) -> dict:
    """The execute stage drops nothing; in the funnel its bar is the verified pairs (``exec_verified``) and every
    other pair is a segment of its execution status, labelled as a status (`status: <status>`), not as a drop."""
    verified = metrics.get("verified", 0)
    return {"in": metrics["in"], "kept": verified, "dropped": metrics["in"] - verified,
            "dropped_by_reason": {f"{STATUS}{k}": n for k, n in (metrics.get("unverified_by_status") or {}).items()}}


def segment_label(reason: str) -> str:
    return reason if reason.startswith(STATUS) else f"dropped: {reason}"


stage_metrics = read_stage_metrics(cn.METRICS_DIR)
if "in" in stage_metrics.get("execute", {}):
    stage_metrics["execute"] = verified_view(stage_metrics["execute"])
stages = [s for s in STAGES if isinstance(stage_metrics.get(s), dict) and "in" in stage_metrics[s]]
funnel = pl.DataFrame(
    [
        {
            "order": i,
            "stage": s,
            "in": int(stage_metrics[s]["in"]),
            "kept": int(stage_metrics[s].get("kept", 0)),
            "dropped": int(stage_metrics[s].get("dropped", 0)),
            "unit": UNITS.get(s, "files"),
        }
        for i, s in enumerate(stages)
    ],
    schema={
        "order": pl.Int64,
        "stage": pl.String,
        "in": pl.Int64,
        "kept": pl.Int64,
        "dropped": pl.Int64,
        "unit": pl.String,
    },
)
reasons = pl.DataFrame(
    [
        {"stage": s, "reason": reason, "count": int(n)}
        for s in stages
        for reason, n in sorted((stage_metrics[s].get("dropped_by_reason") or {}).items())
        if n
    ],
    schema={"stage": pl.String, "reason": pl.String, "count": pl.Int64},
)
print("stages with metrics:", stages)
print(funnel)

# %% [markdown]
# Stages that count files are in the upper panel; `kernels`, `tokens` and `instruct` (kernel pairs, file and kernel
# rows, training examples of both tasks) have their own scale in the lower one. Each bar is the stage's input: kept
# (blue) plus one segment per drop reason.


# %%
def reason_note(stage: str, limit: int = 3) -> str:
    """'(-3: no_kernel 1, too_short 1, ...)' for a stage's drops, largest first."""
    part = reasons.filter(pl.col("stage") == stage).sort(["count", "reason"], descending=[True, False])
    if part.is_empty():
        return ""
    items = [f"{r} {n}" for r, n in part.head(limit).select("reason", "count").iter_rows()]
    more = ", ..." if part.height > limit else ""
    lost = "" if part["reason"].str.starts_with(STATUS).all() else f"-{part['count'].sum()}: "
    return f"  ({lost}{', '.join(items)}{more})"


panels = [p for p in (funnel.filter(pl.col("unit") == "files"), funnel.filter(pl.col("unit") != "files")) if p.height]
if stages:
    totals = reasons.group_by("reason", maintain_order=True).agg(pl.col("count").sum())
    shown = totals.sort(["count", "reason"], descending=[True, False])["reason"].head(11).to_list()
    colors = dict(zip(shown, plt.get_cmap("tab20").colors[2:], strict=False)) | {"other reasons": "#bab0ac"}
    grouped = (
        reasons.with_columns(
            pl.when(pl.col("reason").is_in(shown)).then(pl.col("reason")).otherwise(pl.lit("other reasons"))
        )
        .group_by("stage", "reason", maintain_order=True)
        .agg(pl.col("count").sum())
    )
    fig, axes = plt.subplots(
        len(panels),
        1,
        figsize=(12, 2.2 + 0.5 * len(stages)),
        squeeze=False,
        gridspec_kw={"height_ratios": [max(p.height, 1.5) for p in panels]},
    )
    handles: dict[str, object] = {}
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        names = panel["stage"].to_list()
        handles["kept"] = ax.barh(names, panel["kept"], color="#4e79a7", height=0.7)
        left = dict(zip(names, panel["kept"], strict=True))
        for reason in [*shown, "other reasons"]:
            for stage, count in grouped.filter(pl.col("reason") == reason).select("stage", "count").iter_rows():
                if stage in left:
                    handles[segment_label(reason)] = ax.barh(
                        stage, count, left=left[stage], color=colors[reason], height=0.7
                    )
                    left[stage] += count
        for y, row in enumerate(panel.iter_rows(named=True)):
            if row["in"]:
                kept = "verified" if row["stage"] == "execute" else "kept"
                text = f" {kept} {row['kept']:,} of {row['in']:,}{reason_note(row['stage'])}"
            else:
                text = " no input (stage disabled or nothing to do)"
            ax.text(max(row["in"], row["kept"] + row["dropped"]), y, text, va="center", fontsize=9)
        ax.invert_yaxis()
        ax.set_xlim(0, max(int(panel["in"].max() or 0), 1) * 1.9)
        units = sorted(set(panel["unit"]))
        ax.set_xlabel(f"items entering the stage (count of {' / '.join(units)})")
        ax.set_ylabel("stage")
        ax.grid(axis="y", visible=False)
    axes[0, 0].set_title("Pipeline funnel: items kept and dropped (by reason) per stage, in pipeline order; "
                         "execute's statuses")
    fig.legend(
        list(handles.values()),
        list(handles.keys()),
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        ncol=3,
        fontsize=9,
        title="bar segments",
    )
    fig.tight_layout()
else:
    fig, ax = plt.subplots(figsize=(10, 4))
    ax.text(
        0.5,
        0.5,
        f"no stage metrics found in\n{cn.METRICS_SHOWN}",
        ha="center",
        va="center",
        fontsize=12,
        transform=ax.transAxes,
    )
    ax.set_axis_off()
    ax.set_title("Pipeline funnel: no stage metrics")
cn.save_figure(fig, "pipeline_funnel")

# %% [markdown]
# ## Tables and metrics

# %%
# `label`: one unique, order-preserving category per row for DVC's bar templates
cn.write_plot_csv(domains, "domains")
cn.write_plot_csv(
    funnel.with_columns(pl.format("{} {}", pl.col("order").cast(pl.String).str.zfill(2), "stage").alias("label")),
    "funnel",
)
cn.write_plot_csv(reasons.with_columns(pl.format("{}: {}", "stage", "reason").alias("label")), "funnel_reasons")
first_in = next((row["in"] for row in funnel.iter_rows(named=True) if row["in"] and row["unit"] == "files"), None)
paired = stage_metrics.get("pair", {}).get("kept")
metrics = {
    "domains": dict(domains.select("domain", "pairs").iter_rows()),
    "kernels_by_domain": dict(domains.select("domain", "kernels").iter_rows()),
    "pairs": int(domains["pairs"].sum()),
    "origins": origins,
    "funnel": {
        row["stage"]: {"in": row["in"], "kept": row["kept"], "dropped": row["dropped"]}
        for row in funnel.iter_rows(named=True)
    },
    "dropped_by_reason": {
        s: dict(reasons.filter(pl.col("stage") == s).select("reason", "count").iter_rows())
        for s in stages
        if reasons.filter(pl.col("stage") == s).height
    },
    "pair_yield": (paired / first_in) if first_in and paired is not None else None,
}
cn.merge_metrics("composition", metrics)
metrics["pair_yield"]
