"""The yield report: per corpus (origin), how many files compile for NVIDIA, for AMD, for both,
and why the others failed.

``both / nvidia_ok`` is the share of NVIDIA-compilable files that survive the AMD side (HIPIFY,
repairs, hipcc): a failure there is a translation or environment gap, while a file that fails
NVIDIA too never was a candidate pair. Failures are counted by category and by cause, the first
error line without file names, line numbers and target prefixes, so the same gap in many files
counts as one cause.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Set as AbstractSet

import polars as pl

from cass.pipeline.metrics import percent_of
from toolchains.diagnostics import first_error_line

TOP_CAUSES = 10

_TARGET_PREFIX = re.compile(r"^(?:host|device):[\w.-]+: ")
_LOCATION = re.compile(r"^(?:[^\s:()]+(?::\d+)+: |[^\s:()]+\(\d+\): )")
_IN_FILE = re.compile(r"(?:In file included from|in file) \S+", re.I)


def cause(detail: str) -> str:
    """A failure's cause: its first error line without the target, file and line prefix."""
    line = first_error_line(detail.split("\n", 1)[0] if detail else "")
    line = _TARGET_PREFIX.sub("", line.strip())
    line = _LOCATION.sub("", line)
    line = _IN_FILE.sub("", line)
    return re.sub(r"\s+", " ", line).strip()[:200]


FAILURES_SCHEMA = {"sample_id": pl.String, "origin": pl.String, "path": pl.String, "vendor": pl.String,
                   "stage": pl.String, "category": pl.String, "cause": pl.String, "nvidia_ok": pl.Boolean}


def failures(candidates: pl.DataFrame, dropped: dict[str, pl.DataFrame], nvidia_ok: set[str]) -> pl.DataFrame:
    """One row per failed (sample, vendor): ``dropped`` maps a vendor to the dropped rows of its
    tool stages (reason ``compile_failed:<category>``, ``hipify_failed``, ``timeout``, ...)."""
    wanted = set(candidates["sample_id"])
    rows = []
    for vendor, table in dropped.items():
        for r in table.filter(pl.col("sample_id").is_in(wanted)).iter_rows(named=True):
            category = r["reason"].removeprefix("compile_failed:")
            rows.append({"sample_id": r["sample_id"], "origin": r["origin"], "path": r["path"], "vendor": vendor,
                         "stage": r["stage"], "category": category, "cause": cause(r["detail"] or "") or category,
                         "nvidia_ok": r["sample_id"] in nvidia_ok})
    return pl.DataFrame(rows, schema=FAILURES_SCHEMA).sort("origin", "vendor", "sample_id")


def _top(counter: Counter, n: int = TOP_CAUSES) -> list[dict]:
    return [{"cause": c, "files": k} for c, k in sorted(counter.items(), key=lambda x: (-x[1], x[0]))[:n]]


def share(part: int, whole: int) -> float | None:
    """``part / whole`` to 4 decimals for the metrics (None when ``whole`` is 0); tables print
    :func:`~cass.pipeline.metrics.percent_of` the counts."""
    return round(part / whole, 4) if whole else None


def corpus_yield(candidates: pl.DataFrame, nvidia_ok: set[str], amd_ok: set[str], failed: pl.DataFrame,
                 repaired: set[str], included_units: int = 0, parity: pl.DataFrame | None = None,
                 needs_api: set[str] = frozenset(), hip_nvidia: pl.DataFrame | None = None,
                 nvidia_fallback: set[str] = frozenset(), amd_fallback: set[str] = frozenset()) -> dict:
    """The report of one corpus (or all): counts, ratios, failure categories and top causes. A sample out of
    scope (one of ``needs_api``, the samples that need an API the dataset leaves out, whether they compiled or
    not, or one whose failure was counted ``out_of_scope:<why>``) counts in neither NVIDIA ok nor pairs, so the
    shares are those of the samples in scope. ``hip_nvidia``: the pair stage's ``hip_nvidia_build`` per sample
    (the pairs whose HIP side was also compiled through HIP's NVIDIA back end, and how it went);
    ``nvidia_fallback``: the samples NVIDIA ok only through a fallback toolchain (``nvidia.debian_cuda``), and
    ``amd_fallback`` those AMD ok only through one (``amd.build_root_headers``), counted apart too."""
    ids = set(candidates["sample_id"])
    failed = failed.filter(pl.col("sample_id").is_in(ids))
    out_of_scope = (ids & needs_api) | set(failed.filter(pl.col("category").str.starts_with("out_of_scope"))
                                           ["sample_id"])
    nv, amd = (ids & nvidia_ok) - out_of_scope, ids & amd_ok
    both = nv & amd
    configured = set(candidates.filter(pl.col("configured_headers").list.len() > 0)["sample_id"])
    amd_gaps = failed.filter((pl.col("vendor") == "amd") & pl.col("nvidia_ok")
                             & ~pl.col("sample_id").is_in(list(out_of_scope)))
    nvidia_failed = failed.filter(pl.col("vendor") == "nvidia")
    return {
        "files": len(ids),
        "included_units": included_units,
        "out_of_scope": len(out_of_scope),
        "nvidia_ok": len(nv),
        "amd_ok": len(amd),
        "both": len(both),
        "both_over_nvidia_ok": share(len(both), len(nv)),
        "both_over_files": share(len(both), len(ids)),
        "nvidia_ok_with_configured_headers": len(nv & configured),
        "nvidia_ok_debian_cuda": len(nv & nvidia_fallback),
        "pairs_debian_cuda": len(both & nvidia_fallback),
        "amd_ok_build_root": len(amd & amd_fallback),
        "pairs_build_root": len(both & amd_fallback),
        "pairs_repaired": len(both & repaired),
        "files_by_build_context": dict(Counter(c.split(":")[0] for c in candidates["build_context"]).most_common()),
        **hip_nvidia_counts(hip_nvidia, both, amd_fallback, nvidia_fallback),
        "nvidia_failures": dict(Counter(nvidia_failed["category"]).most_common()),
        "amd_failures": dict(Counter(failed.filter(pl.col("vendor") == "amd")["category"]).most_common()),
        "amd_failures_of_nvidia_ok": dict(Counter(amd_gaps["category"]).most_common()),
        "top_amd_causes_of_nvidia_ok": _top(Counter(amd_gaps["cause"])),
        "top_nvidia_causes": _top(Counter(nvidia_failed["cause"])),
        **divergence_counts(parity, ids),
    }


def hip_nvidia_counts(hip_nvidia: pl.DataFrame | None, pairs: AbstractSet[str],
                      build_root: AbstractSet[str] = frozenset(), debian_cuda: AbstractSet[str] = frozenset()) -> dict:
    """Of ``pairs``: how many had their HIP side compiled through HIP's NVIDIA back end, how many built (of them, how
    many with the build root's headers, as their AMD side: those of ``build_root``; and how many on Debian's CUDA, as
    their CUDA side: those of ``debian_cuda``), and the failure categories of those that build for AMD only."""
    rows = pl.DataFrame(schema={"sample_id": pl.String, "hip_nvidia_build": pl.String}) if hip_nvidia is None else \
        hip_nvidia.filter(pl.col("sample_id").is_in(list(pairs)))
    verdicts = Counter(rows["hip_nvidia_build"].drop_nulls())
    built = set(rows.filter(pl.col("hip_nvidia_build") == "ok")["sample_id"])
    return {"pairs_hip_nvidia_checked": verdicts.total(), "pairs_hip_nvidia_ok": verdicts.pop("ok", 0),
            "pairs_hip_nvidia_ok_build_root": len(built & build_root),
            "pairs_hip_nvidia_ok_debian_cuda": len(built & debian_cuda), "pairs_amd_only": dict(verdicts.most_common())}


def divergence_counts(parity: pl.DataFrame | None, ids: set[str]) -> dict:
    """Of the branch_parity stage's rows for ``ids``: samples whose conditionals diverge, and the macros named."""
    if parity is None:
        return {}
    rows = parity.filter(pl.col("sample_id").is_in(list(ids)))
    macros = Counter(m for ds in rows["branch_divergences"] for d in ds for m in d["macros"])
    return {"diverged": rows.filter(pl.col("branch_parity") == "diverged").height,
            "divergences": sum(len(ds) for ds in rows["branch_divergences"]),
            "top_divergent_macros": [{"macro": m, "divergences": n} for m, n in macros.most_common(TOP_CAUSES)]}


def report(candidates: pl.DataFrame, nvidia_ok: set[str], amd_ok: set[str], failed: pl.DataFrame,
           repaired: set[str], included_units: dict[str, int] | None = None,
           parity: pl.DataFrame | None = None, needs_api: set[str] = frozenset(),
           hip_nvidia: pl.DataFrame | None = None, nvidia_fallback: set[str] = frozenset(),
           amd_fallback: set[str] = frozenset()) -> dict:
    """Per corpus (origin) and over all of them; ``included_units``: per origin, the units ingest left to the
    files that include them; ``parity``: the branch_parity stage's rows; ``needs_api``: the samples out of scope
    for the APIs they include; ``hip_nvidia``: the pair stage's verdicts of the HIP side on HIP's NVIDIA back end;
    ``nvidia_fallback``, ``amd_fallback``: the samples only a fallback NVIDIA, AMD toolchain compiled."""
    included_units = included_units or {}
    by_origin = {origin: corpus_yield(candidates.filter(pl.col("origin") == origin), nvidia_ok, amd_ok,
                                      failed, repaired, included_units.get(origin, 0), parity, needs_api, hip_nvidia,
                                      nvidia_fallback, amd_fallback)
                 for origin in sorted(set(candidates["origin"]))}
    return {"corpora": by_origin, "all": corpus_yield(candidates, nvidia_ok, amd_ok, failed, repaired,
                                                      sum(included_units.get(o, 0) for o in by_origin), parity,
                                                      needs_api, hip_nvidia, nvidia_fallback, amd_fallback)}


def template_yield(requests: pl.DataFrame, candidates: pl.DataFrame, nvidia_ok: set[str],
                   amd_ok: set[str]) -> dict[str, dict]:
    """Per synthesis template (``requests``: ``data/synthesize/requests.parquet``): draws, answers, programs kept,
    candidates after filter and dedup, compiled for NVIDIA, paired; ``both_over_answered`` is the paper's "kept
    after compiling" share of its generations (49%)."""
    candidate = pl.col("sample_id").is_in(candidates["sample_id"].implode())
    table = requests.with_columns(candidate.alias("candidate")).group_by("template_id").agg(
        pl.len().alias("drawn"), pl.col("completion").is_not_null().sum().alias("answered"),
        (pl.col("status") == "kept").sum().alias("programs"), pl.col("candidate").sum().alias("candidates"),
        (pl.col("candidate") & pl.col("sample_id").is_in(list(nvidia_ok))).sum().alias("nvidia_ok"),
        (pl.col("candidate") & pl.col("sample_id").is_in(list(nvidia_ok & amd_ok))).sum().alias("both"),
    ).sort("template_id")
    found = {}
    for row in table.iter_rows(named=True):
        template = row.pop("template_id")
        found[template] = {**row, "both_over_answered": share(row["both"], row["answered"])}
    return found


def template_markdown(templates: dict[str, dict]) -> list[str]:
    """The per-template yield as a Markdown table, with a total row."""
    columns = ("drawn", "answered", "programs", "candidates", "nvidia_ok", "both")
    total = {c: sum(t[c] for t in templates.values()) for c in columns}
    lines = ["", "**synthetic**, per template: draws, answers, programs kept (kernel and main, no duplicate), "
             "candidates after filter and dedup, NVIDIA ok, both vendors, both / answered.", "",
             "| template | " + " | ".join(columns) + " | both / answered |", "|---|" + "---:|" * (len(columns) + 1)]
    for name, t in [*templates.items(), ("all", total)]:
        lines.append(f"| {name} | " + " | ".join(str(t[c]) for c in columns)
                     + f" | {percent_of(t['both'], t['answered'])} |")
    return lines


SUMMARY_HEADER = ("| corpus | files | included units | out of scope | NVIDIA ok | AMD ok | pairs | pairs / NVIDIA ok "
                  "| pairs / files | NVIDIA ok with configured headers | NVIDIA ok / pairs on Debian's CUDA "
                  "| AMD ok / pairs with the build root's headers | pairs repaired | pairs built on HIP-NVIDIA "
                  "| files by build context |")
SUMMARY_ALIGN = "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"


def summary_rows(yields: dict, title_of: dict[str, str], first: str = "") -> list[str]:
    """One Markdown row per corpus and one for all of them (``first``: a leading cell)."""
    rows = []
    for origin, y in [*yields["corpora"].items(), ("all", yields["all"])]:
        rows.append(f"|{f' {first} |' if first else ''} {title_of.get(origin, origin)} | {y['files']} | "
                    f"{y['included_units']} | {y['out_of_scope']} | {y['nvidia_ok']} | {y['amd_ok']} | {y['both']} | "
                    f"{percent_of(y['both'], y['nvidia_ok'])} | {percent_of(y['both'], y['files'])} | "
                    f"{y['nvidia_ok_with_configured_headers']} | "
                    f"{y['nvidia_ok_debian_cuda']} / {y['pairs_debian_cuda']} | "
                    f"{y['amd_ok_build_root']} / {y['pairs_build_root']} | {y['pairs_repaired']} | "
                    f"{hip_nvidia_cell(y)} | "
                    + (", ".join(f"{c} {n}" for c, n in y["files_by_build_context"].items()) or "-") + " |")
    return rows


def hip_nvidia_cell(y: dict) -> str:
    """``built / checked (share)`` of the pairs compiled through HIP's NVIDIA back end (and how many of those built
    with the build root's headers, and on Debian's CUDA), or ``-`` where none was."""
    checked, built = y["pairs_hip_nvidia_checked"], y["pairs_hip_nvidia_ok"]
    apart = [f"{n} {how}" for n, how in ((y["pairs_hip_nvidia_ok_build_root"], "with the build root's headers"),
                                         (y["pairs_hip_nvidia_ok_debian_cuda"], "on Debian's CUDA")) if n]
    return f"{built} / {checked} ({'; '.join([percent_of(built, checked), *apart])})" if checked else "-"


def markdown(yields: dict, title_of: dict[str, str] | None = None) -> str:
    """The report as Markdown tables: one summary row per corpus, then each corpus's categories
    and top causes of AMD failures among NVIDIA-compilable files."""
    title_of = title_of or {}
    lines = [SUMMARY_HEADER, SUMMARY_ALIGN, *summary_rows(yields, title_of)]
    for origin, y in yields["corpora"].items():
        lines += ["", f"**{title_of.get(origin, origin)}**: AMD failures of NVIDIA-compilable files by category: "
                  + (", ".join(f"{c} {n}" for c, n in y["amd_failures_of_nvidia_ok"].items()) or "none")
                  + "; NVIDIA failures by category: "
                  + (", ".join(f"{c} {n}" for c, n in y["nvidia_failures"].items()) or "none")
                  + "; pairs that build for AMD only (not through HIP's NVIDIA back end): "
                  + (", ".join(f"{c} {n}" for c, n in y["pairs_amd_only"].items()) or "none") + "."]
        if y.get("top_divergent_macros"):
            lines += ["", f"Conditionals that take another branch on AMD: {y['divergences']} in {y['diverged']} "
                      "files; macros: " + ", ".join(f"`{d['macro']}` {d['divergences']}"
                                                    for d in y["top_divergent_macros"]) + "."]
        if y["top_amd_causes_of_nvidia_ok"]:
            lines += ["", "| AMD cause (NVIDIA ok) | files |", "|---|---:|"]
            lines += [f"| `{t['cause'].replace('|', '/')}` | {t['files']} |" for t in y["top_amd_causes_of_nvidia_ok"]]
        if y["top_nvidia_causes"]:
            lines += ["", "| NVIDIA cause | files |", "|---|---:|"]
            lines += [f"| `{t['cause'].replace('|', '/')}` | {t['files']} |" for t in y["top_nvidia_causes"]]
    if yields.get("synthetic_templates"):
        lines += template_markdown(yields["synthetic_templates"])
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------- the yield_report stage's work

