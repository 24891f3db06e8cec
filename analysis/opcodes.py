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
# # Device opcodes: frequency, categories, t-SNE
#
# Which instructions make up the device assembly of each vendor? From the device assembly of every pair (the
# normalised `<col>_norm` texts when exported) this notebook extracts one mnemonic per instruction:
#
# - **NVIDIA SASS**: the *base* mnemonic, the text before the first `.` (`IMAD.MOV.U32` → `IMAD`,
#   `LDG.E.CONSTANT` → `LDG`), after the `/*0090*/` address and an optional predicate (`@P0`, `@!P1`);
# - **AMD RDNA3**: the mnemonic as written (`s_load_b32`, `v_add_nc_u32_e32`): the first word of every indented
#   line that is an ISA mnemonic (`s_`, `v_`, `ds_`, `global_`, `buffer_`, `flat_`, `scratch_`, `image_`, `exp_`
#   prefixes; directives, labels and the metadata YAML are not instructions); a VOPD dual-issue line
#   (`v_dual_mov_b32 ... :: v_dual_add_f32 ...`) gives both halves.
#
# Figures:
#
# 1. **`opcode_frequency.png`**: the top 20 opcodes per vendor, as a share of all its device instructions (the
#    CASS paper's word clouds, Figure 9);
# 2. **`opcode_categories.png`**: the share of each instruction category per vendor and subset, by the rules below
#    (the paper's Figure 8);
# 3. **`opcode_tsne.png`**: 2-D t-SNE of one opcode vector per sample per vendor, coloured by vendor (the paper's
#    Figure 6 uses BERTCoder embeddings; here (left) TF-IDF over the joint opcode vocabulary, where the two ISAs
#    share no mnemonic so the vendors separate by construction and the structure *within* a vendor is what to look
#    at, and (right) the category shares, a feature space both vendors have in common).
#
# Inputs: `CASS_EXPORT_DIR`; at most `CASS_ANALYSIS_MAX_SAMPLES` pairs (default 2000). Outputs: figures,
# `opcode_frequency.csv`, `opcode_categories.csv`, `opcode_tsne.csv`; numbers under the key `opcodes`.

# %%
import functools
import re
import sys
from collections import Counter
from pathlib import Path

if not Path("_common.py").exists() and Path("analysis/_common.py").exists():
    sys.path.insert(0, str(Path("analysis").resolve()))

import _common as cn
import matplotlib.pyplot as plt
import numpy as np
import polars as pl
from sklearn.feature_extraction import DictVectorizer
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.manifold import TSNE
from sklearn.metrics import silhouette_score

# what this notebook reads: the analyze stage shows it nothing else and keeps its results under these bytes
READS = {"pairs": ["sample_id", "origin", "cuda_device_sass_*", "hip_device_asm_*"]}

TOP_N = 20

# %% [markdown]
# ## Opcode categories
#
# Rules are tried in order per vendor; the first whose regular expression matches the **whole** mnemonic decides,
# and a mnemonic no rule matches is `other`. SASS rules see the base mnemonic with an optional leading `U`
# (uniform datapath: `ULDC`, `UIADD3`, `UMOV`); AMD rules see the mnemonic with a VOPD `v_dual_` prefix turned
# into `v_` (`v_dual_mov_b32` → `v_mov_b32`).
#
# | category | NVIDIA SASS (base mnemonic) | AMD RDNA3 |
# |---|---|---|
# | control | `BRA` `EXIT` `BSSY` `BSYNC` `CALL` `RET` `NOP` | `s_branch` `s_cbranch_*` `s_endpgm` `s_*saveexec*` |
# | synchronisation | `BAR` `MEMBAR` `WARPSYNC` `VOTE(U)` `SHFL` `REDUX` | `s_waitcnt*` `s_barrier` `s_delay_alu` |
# | | | `s_clause` `v_readfirstlane*` `v_mbcnt*` `ds_(b)permute*` |
# | memory | `LDG` `STG` `LDS` `STS` `LDL` `LDC` `ULDC` `ATOM*` `RED` | `s_load_*` `global_*` `buffer_*` `ds_*` |
# | conversion/move | `MOV` `SEL` `PRMT` `S2R` `F2I` `I2F` | `v_mov*` `s_mov*` `v_cndmask*` `s_cselect*` `v_cvt*` |
# | arithmetic | `IMAD` `IADD3` `ISETP` `FFMA` `LOP3` `SHF` `LEA` `MUFU` | every other `v_*` (incl. `v_cmp*`), |
# | | other `I*` `F*` `D*` `H*` ALU ops, `POPC` `*MMA` | `s_add*` `s_and*` `s_lshl*` `s_cmp*`... |
# | other | no rule matches | no rule matches |
#
# The cell below is the exact rule table; the notebook prints the mnemonics that fall into `other`.

# %%
CATEGORIES = ["memory", "arithmetic", "control", "synchronisation", "conversion/move", "other"]
CATEGORY_COLORS = dict(zip(CATEGORIES, ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#bab0ac"], strict=True))

# (vendor, category, regular expression over the whole mnemonic); first match wins.
# fmt: off
CATEGORY_RULES: list[tuple[str, str, str]] = [
    ("nvidia", "control", r"U?(BRA|BRX|BRXU|JMP|JMX|CALL|RET|EXIT|BSSY|BSYNC|BREAK|BMOV|BPT|KILL|NOP|YIELD|RTT)"),
    ("nvidia", "synchronisation", r"U?(BAR|MEMBAR|WARPSYNC|DEPBAR|ERRBAR|CGAERRBAR|FENCE|ARRIVES|SYNCS|VOTE|VOTEU|"
     r"SHFL|REDUX|MATCH|NANOSLEEP|ELECT)"),
    ("nvidia", "memory", r"U?(LD\w*|ST|STG|STS|STL|ATOM\w*|RED|CCTL\w*|SU\w+|TEX\w*|TLD\w*|TXQ|TMA\w*)"),
    ("nvidia", "conversion/move", r"U?(MOV|MOV32I|SEL|FSEL|PRMT|S2R|S2UR|CS2R|R2UR|P2R|R2P|F2I|I2F|F2F|I2I|F2FP|"
     r"FRND|I2FP|F2IP)"),
    ("nvidia", "arithmetic", r"U?(I[A-Z0-9]+|F[A-Z0-9]+|D[A-Z0-9]+|H[A-Z0-9]+|LOP|LOP3|SHF|SHL|SHR|LEA|POPC|FLO|"
     r"BREV|BMSK|SGXT|MUFU|PLOP3|BFE|BFI|VABSDIFF\w*|VIADD\w*|VIMNMX\w*|[A-Z]*MMA)"),
    ("amd", "synchronisation", r"s_(waitcnt\w*|barrier\w*|sleep|delay_alu|clause|sendmsg\w*|wait_\w+|wakeup|"
     r"icache_inv)|v_(mbcnt\w*|readlane\w*|readfirstlane\w*|writelane\w*|permlane\w*)|ds_(bpermute|permute|"
     r"swizzle)\w*"),
    ("amd", "control", r"s_(branch|cbranch\w*|setpc\w*|swappc\w*|getpc\w*|endpgm\w*|call\w*|trap|rfe\w*|setprio|"
     r"nop|code_end|\w*saveexec\w*|\w*_wrexec\w*)"),
    ("amd", "memory", r"s_(load|buffer_load|store|buffer_store|dcache|gl1_inv|scratch)\w*|global_\w+|buffer_\w+|"
     r"flat_\w+|scratch_\w+|ds_\w+|image_\w+"),
    ("amd", "conversion/move", r"v_cvt\w*|v_mov\w*|s_mov\w*|s_cmov\w*|v_cndmask\w*|s_cselect\w*|v_pack\w*|s_pack\w*|"
     r"v_perm\w*|v_swap\w*|s_sext\w*|v_bfrev\w*|s_brev\w*"),
    ("amd", "arithmetic", r"v_\w+|s_(add|addc|sub|subb|mul|and|or|xor|not|nand|nor|xnor|andn2|orn2|and_not1|"
     r"or_not1|lshl|lshr|ashr|bfe|bfm|cmp|cmpk|min|max|abs|absdiff|ff0|ff1|flbit|bcnt|bitcmp|bitset|addk|mulk|"
     r"lshl\d_add|ctz|clz)\w*"),
]
# fmt: on
_RULES = [(vendor, category, re.compile(regex)) for vendor, category, regex in CATEGORY_RULES]


@functools.cache
def opcode_category(vendor: str, opcode: str) -> str:
    """Category of one mnemonic under ``CATEGORY_RULES``; ``other`` when no rule matches (cached:
    a corpus has a few hundred distinct mnemonics and millions of occurrences)."""
    name = "v_" + opcode[len("v_dual_") :] if vendor == "amd" and opcode.startswith("v_dual_") else opcode
    for rule_vendor, category, regex in _RULES:
        if rule_vendor == vendor and regex.fullmatch(name):
            return category
    return "other"


pl.DataFrame(CATEGORY_RULES, schema=["vendor", "category", "regex"], orient="row")

# %% [markdown]
# ## Opcodes per sample

# %%
pairs = cn.scan_table("pairs")
device = cn.device_columns(pairs.collect_schema().names())
vendors = [v for v in ("nvidia", "amd") if v in device]
data = cn.require_rows(
    cn.limit_rows(pairs.select("sample_id", "origin", *[device[v].text for v in vendors]), "sample_id").collect(),
    "pairs", "opcodes")
origins = sorted(data["origin"].unique().to_list())
labels = {v: f"{'NVIDIA SASS' if v == 'nvidia' else 'AMD device'} ({device[v].arch})" for v in vendors}

per_sample: list[dict] = []  # vendor, sample_id, origin, counts
for vendor in vendors:
    for sample_id, origin, counts in zip(
        data["sample_id"], data["origin"], cn.count_opcodes(vendor, data[device[vendor].text].to_list()), strict=True
    ):
        if counts:
            per_sample.append({"vendor": vendor, "sample_id": sample_id, "origin": origin, "counts": counts})

totals = {v: sum((p["counts"] for p in per_sample if p["vendor"] == v), Counter()) for v in vendors}
frequency = pl.DataFrame(
    [
        {"vendor": v, "opcode": op, "count": n, "category": opcode_category(v, op)}
        for v in vendors
        for op, n in totals[v].items()
    ],
    schema={"vendor": pl.String, "opcode": pl.String, "count": pl.Int64, "category": pl.String},
)
frequency = frequency.with_columns(
    (100 * pl.col("count") / pl.col("count").sum().over("vendor")).alias("share_pct")
).sort(["vendor", "count", "opcode"], descending=[False, True, False])
frequency = frequency.with_columns(pl.int_range(1, pl.len() + 1).over("vendor").alias("rank"))
print({v: f"{sum(totals[v].values())} instructions, {len(totals[v])} distinct opcodes" for v in vendors})
print("uncategorised:", frequency.filter(pl.col("category") == "other").select("vendor", "opcode", "count").rows())

# %% [markdown]
# ## Most frequent opcodes per vendor

# %%
fig, axes = plt.subplots(1, len(vendors), figsize=(6.5 * len(vendors), 7), squeeze=False)
for ax, vendor in zip(axes[0], vendors, strict=True):
    top = frequency.filter(pl.col("vendor") == vendor).head(TOP_N).reverse()
    colors = [CATEGORY_COLORS[c] for c in top["category"]]
    ax.barh(top["opcode"], top["share_pct"], color=colors)
    for y, (share, count) in enumerate(zip(top["share_pct"], top["count"], strict=True)):
        ax.text(share, y, f" {count:,}", va="center", fontsize=8)
    ax.set_xlim(0, top["share_pct"].max() * 1.2)
    ax.set_xlabel("share of the vendor's device instructions (%)")
    ax.set_ylabel("opcode" + (" (base mnemonic)" if vendor == "nvidia" else ""))
    ax.set_title(f"{labels[vendor]}: top {min(TOP_N, len(totals[vendor]))} of {len(totals[vendor])} opcodes")
    ax.grid(axis="y", visible=False)
    ax.tick_params(axis="y", labelsize=9)
used = [c for c in CATEGORIES if c in set(frequency.group_by("vendor", maintain_order=True).head(TOP_N)["category"])]
fig.legend(
    [plt.Rectangle((0, 0), 1, 1, color=CATEGORY_COLORS[c]) for c in used],
    used,
    title="category (bar colour; number = instruction count)",
    loc="lower center",
    ncol=len(used),
    bbox_to_anchor=(0.5, -0.06),
)
fig.suptitle(f"Most frequent device opcodes per vendor ({data.height} pairs)", fontsize=13)
fig.tight_layout()
cn.save_figure(fig, "opcode_frequency")

# %% [markdown]
# ## Opcode categories per vendor and subset

# %%
cat_rows = [
    {"vendor": p["vendor"], "origin": p["origin"], "category": opcode_category(p["vendor"], op), "count": n}
    for p in per_sample
    for op, n in p["counts"].items()
]
categories = (
    pl.DataFrame(cat_rows, schema={"vendor": pl.String, "origin": pl.String, "category": pl.String, "count": pl.Int64})
    .group_by("vendor", "origin", "category", maintain_order=True)
    .agg(pl.col("count").sum())
    .with_columns((100 * pl.col("count") / pl.col("count").sum().over("vendor", "origin")).alias("share_pct"))
    .sort("vendor", "origin", pl.col("category").replace_strict(CATEGORIES, list(range(len(CATEGORIES)))))
)
present = set(categories.select("vendor", "origin").iter_rows())
bars = [(v, o) for v in vendors for o in origins if (v, o) in present]
fig, ax = plt.subplots(figsize=(11, 1.6 + 0.9 * len(bars)))
for y, (vendor, origin) in enumerate(bars):
    part = categories.filter((pl.col("vendor") == vendor) & (pl.col("origin") == origin))
    share = dict(zip(part["category"], part["share_pct"], strict=True))
    left = 0.0
    for category in CATEGORIES:
        width = share.get(category, 0.0)
        if width <= 0:
            continue
        ax.barh(y, width, left=left, color=CATEGORY_COLORS[category], edgecolor="white", height=0.7)
        if width >= 4:
            ax.text(left + width / 2, y, f"{width:.0f}%", ha="center", va="center", fontsize=9, color="white")
        left += width
ax.set_yticks(range(len(bars)))
ax.set_yticklabels([f"{labels[v]}\n{o}" for v, o in bars])
ax.invert_yaxis()
ax.set_xlim(0, 100)
ax.set_xlabel("share of device instructions (%)")
ax.set_ylabel("vendor / subset")
ax.set_title("Device instruction categories per vendor and subset")
ax.grid(axis="y", visible=False)
ax.legend(
    [plt.Rectangle((0, 0), 1, 1, color=CATEGORY_COLORS[c]) for c in CATEGORIES],
    CATEGORIES,
    title="category",
    loc="upper center",
    bbox_to_anchor=(0.5, -0.22 if len(bars) <= 2 else -0.12),
    ncol=len(CATEGORIES),
)
cn.save_figure(fig, "opcode_categories")

# %% [markdown]
# ## t-SNE of per-sample opcode vectors
#
# One point per sample and vendor. Left: TF-IDF (sublinear term frequency, L2-normalised) of the opcode counts
# over the joint vocabulary of both vendors. Right: the sample's category shares (6 dimensions, shared by both
# vendors). Perplexity adapts to small n: `min(30, (n - 1) / 3)`, at least 2. The silhouette score (by vendor,
# cosine / euclidean) in the metrics says how separated the vendors are in each feature space (1 = fully).

# %%
points = pl.DataFrame(
    [{"vendor": p["vendor"], "sample_id": p["sample_id"], "origin": p["origin"]} for p in per_sample],
    schema={"vendor": pl.String, "sample_id": pl.String, "origin": pl.String},
)
n_points = points.height
tsne_metrics: dict = {"points": n_points}
if n_points >= 5:
    perplexity = float(max(2.0, min(30.0, (n_points - 1) / 3)))
    counts_matrix = DictVectorizer(sparse=True).fit_transform([dict(p["counts"]) for p in per_sample])
    tfidf = TfidfTransformer(sublinear_tf=True).fit_transform(counts_matrix).toarray()
    shares = np.array(
        [
            [sum(n for op, n in p["counts"].items() if opcode_category(p["vendor"], op) == c) for c in CATEGORIES]
            for p in per_sample
        ],
        dtype=float,
    )
    shares /= shares.sum(axis=1, keepdims=True)
    spaces = {
        "tfidf": ("opcode TF-IDF, joint vocabulary", tfidf, "cosine"),
        "categories": ("opcode category shares", shares, "euclidean"),
    }
    embedded = {}
    for key, (_, features, metric) in spaces.items():
        tsne = TSNE(n_components=2, perplexity=perplexity, metric=metric, init="random", random_state=0)
        embedded[key] = tsne.fit_transform(features)
        vendor_labels = points["vendor"].to_numpy()
        silhouette = (
            float(silhouette_score(features, vendor_labels, metric=metric)) if len(set(vendor_labels)) > 1 else None
        )
        tsne_metrics[key] = {"silhouette_by_vendor": silhouette, "dimensions": int(features.shape[1])}
    tsne_metrics["perplexity"] = perplexity

    markers = ["o", "^", "s", "D", "v", "P", "X"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 6))
    for ax, (key, (title, _, metric)) in zip(axes, spaces.items(), strict=True):
        xy = embedded[key]
        for vendor in vendors:
            for k, origin in enumerate(origins):
                mask = ((points["vendor"] == vendor) & (points["origin"] == origin)).to_numpy()
                if mask.any():
                    ax.scatter(
                        xy[mask, 0],
                        xy[mask, 1],
                        s=28,
                        alpha=0.75,
                        marker=markers[k % len(markers)],
                        color=cn.VENDOR_COLORS[vendor],
                        edgecolors="none",
                        label=f"{labels[vendor]}" + (f", {origin}" if len(origins) > 1 else "") + f" (n={mask.sum()})",
                    )
        silhouette = tsne_metrics[key]["silhouette_by_vendor"]
        note = f"\n(silhouette by vendor: {silhouette:.2f}, {metric})" if silhouette is not None else ""
        ax.set_title(title + note)
        ax.set_xlabel("t-SNE dimension 1 (arbitrary units)")
        ax.set_ylabel("t-SNE dimension 2 (arbitrary units)")
        ax.legend(fontsize=8, loc="best")
    fig.suptitle(
        f"t-SNE of per-sample device opcode vectors ({n_points} points, perplexity {perplexity:.0f})", fontsize=13
    )
    fig.tight_layout()
    cn.save_figure(fig, "opcode_tsne")
    cn.write_plot_csv(
        points.with_columns(
            pl.Series("tfidf_x", embedded["tfidf"][:, 0]),
            pl.Series("tfidf_y", embedded["tfidf"][:, 1]),
            pl.Series("category_x", embedded["categories"][:, 0]),
            pl.Series("category_y", embedded["categories"][:, 1]),
        ),
        "opcode_tsne",
    )
else:
    print(f"only {n_points} opcode vectors: no t-SNE")

# %% [markdown]
# ## Tables and metrics

# %%
# the top TOP_N per vendor (the full counts are in the executed notebook); `label` is unique per row for DVC
cn.write_plot_csv(
    frequency.filter(pl.col("rank") <= TOP_N)
    .select("vendor", "rank", "opcode", "count", "share_pct", "category")
    .with_columns(pl.format("{}: {}", "vendor", "opcode").alias("label")),
    "opcode_frequency",
)
cn.write_plot_csv(
    categories.with_columns(pl.format("{} / {}: {}", "vendor", "origin", "category").alias("label")),
    "opcode_categories",
)
metrics = {
    "columns": {v: device[v].text for v in vendors},
    "archs": {v: device[v].arch for v in vendors},
    "samples": data.height,
    "instructions": {v: sum(totals[v].values()) for v in vendors},
    "distinct_opcodes": {v: len(totals[v]) for v in vendors},
    "top_opcodes": {  # [opcode, count], most frequent first
        v: frequency.filter(pl.col("vendor") == v).head(10).select("opcode", "count").rows() for v in vendors
    },
    "category_share_pct": {
        v: {
            row["category"]: row["share_pct"]
            for row in categories.filter(pl.col("vendor") == v)
            .group_by("category", maintain_order=True)
            .agg(pl.col("count").sum())
            .with_columns((100 * pl.col("count") / pl.col("count").sum()).alias("share_pct"))
            .iter_rows(named=True)
        }
        for v in vendors
    },
    "uncategorised": {
        v: frequency.filter((pl.col("vendor") == v) & (pl.col("category") == "other"))["opcode"].to_list()
        for v in vendors
    },
    "tsne": tsne_metrics,
}
cn.merge_metrics("opcodes", metrics)
metrics["category_share_pct"]
