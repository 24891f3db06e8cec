"""An evaluation's report: per-prediction verdicts and rates as JSON, a Markdown table and a figure."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from cass.pipeline.metrics import percent


def markdown(name: str, summary: dict, report: dict) -> str:
    host = report["host"]
    lines = [f"# Evaluation: {name}", "",
             f"Run host: {host['name'] + ' (' + host['gpu'] + ')' if host else 'none (nothing ran)'}; "
             f"the references' own check: {summary['reference_check']}.", "",
             "| domain | source n | compile rate (gfx) | accuracy | accuracy (tolerant) | median runtime / reference "
             "| median peak memory / reference | asm n | link rate | asm chrF |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for domain, kinds in summary["by_domain"].items():
        s, a = kinds.get("source", {}), kinds.get("asm", {})
        ratios = [s.get(f"median_{what}_ratio") for what in ("runtime", "memory")]
        lines.append(f"| {domain} | {s.get('n', '-')} | {percent(s.get('compile_rate'))} | "
                     f"{percent(s.get('accuracy'))} | "
                     f"{percent(s.get('accuracy_tolerant'))} | "
                     + " | ".join("-" if r is None else f"{r:.2f}" for r in ratios) + " | "
                     f"{a.get('n', '-')} | {percent(a.get('compile_rate'))} | {a.get('mean_chrf') or '-'} |")
    verdicts = summary["by_domain"].get("all", {})
    lines += ["", "Verdicts: " + "; ".join(f"{kind}: {v['verdicts']}" for kind, v in verdicts.items())]
    return "\n".join(lines) + "\n"


def write_report(out: Path, name: str, rows: list[dict], summary: dict, report: dict) -> None:
    """``out``/report.json, report.md and accuracy.png: what the evaluation found and on which host, not how this
    run got there (its builds and runs taken from the store or made: the stage's run report has them)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps({"name": name, "summary": summary, "host": report["host"],
                                                 "predictions": rows}, indent=1, sort_keys=True) + "\n")
    (out / "report.md").write_text(markdown(name, summary, report))
    domains = [d for d, k in summary["by_domain"].items() if d != "all" and "source" in k]
    fig, ax = plt.subplots(figsize=(8, 0.35 * len(domains) + 1.5))
    for offset, (field, label) in enumerate((("compile_rate", "compiles (gfx)"), ("accuracy", "exact output"))):
        rates = [summary["by_domain"][d]["source"].get(field) for d in domains]
        values = [float("nan") if rate is None else 100 * rate for rate in rates]   # unknown: no bar, not 0%
        ax.barh([y + 0.4 * offset for y in range(len(domains))], values, height=0.4, label=label)
    ax.set_yticks([y + 0.2 for y in range(len(domains))], domains)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of the domain's source-task predictions")
    ax.set_title(f"{name}: compile rate and accuracy per domain")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "accuracy.png", dpi=120)
    plt.close(fig)
