"""The end-of-run summary of `dvc repro`: what was built, what was dropped and why, where it is.

Read from the metrics (``metrics/<stage>.json``, in ``dvc.yaml``'s stage order; a stage without one
is left out, and so is a source that is switched off) and the run reports (``metrics/run/<stage>.json``).
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from cass.benchmark import REAL_SUITE
from cass.pipeline.metrics import percent

OUTPUTS = (
    ("pairs and kernels (Parquet)", "data/export"),
    ("instruction data (chat messages)", "data/instruct"),
    ("Hub layout", "data/hub/data"),
    ("dataset card", "data/hub/README.md"),
    ("figures", "analysis/figures"),
    ("benchmark reports", "data/evaluate/[hecbench/]<name>/report.md"),
    ("every dropped row, with its reason", "data/<stage>/dropped.parquet"),
)


def _read(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.is_file() else None


def stage_order(project: Path) -> list[str]:
    """The stages as ``dvc.yaml`` lists them (the order `dvc repro` runs them in)."""
    return list(yaml.safe_load((project / "dvc.yaml").read_text())["stages"])


def summary(project: Path, width: int = 100) -> str:
    """A short report of the build in ``project``, lines under ``width`` characters."""
    metrics = {s: m for s in stage_order(project) if (m := _read(project / "metrics" / f"{s}.json")) is not None}
    lines = []
    export, instruct = metrics.get("export", {}), metrics.get("instruct", {})
    if export:
        lines.append(f"Built: {export.get('pairs', {}).get('rows', 0)} file-level pairs, "
                     f"{export.get('kernels', {}).get('rows', 0)} kernel pairs.")
    if instruct:
        tasks = ", ".join(f"{task} {v['rows']}" for task, v in instruct.items() if isinstance(v, dict) and "rows" in v)
        lines.append(f"Training examples: {tasks}.")
    lines.append("Rows in -> kept per stage, drops by reason:")
    name_width = max((len(s) for s in metrics), default=0)
    for stage, m in metrics.items():
        if "in" not in m or m["in"] == 0:   # a source that is switched off
            continue
        reasons = ", ".join(f"{reason} {n}" for reason, n in m.get("dropped_by_reason", {}).items())
        line = f"  {stage:<{name_width}} {m['in']:>6} -> {m['kept']:<6} {'dropped: ' + reasons if reasons else ''}"
        line = line.rstrip()
        if stage == "execute":
            line = (f"{line} verified {m.get('verified', 0)}; executed: "
                    f"{', '.join(f'{k} {n}' for k, n in m['exec_status'].items())}")
        lines.append(line if len(line) <= width else line[:width - 3] + "...")
    evaluation = metrics.get("evaluate", {})
    host = evaluation.get("host")
    for suite, title in (("own", "own suite"), (REAL_SUITE, "real programs")):
        if not (results := evaluation.get(suite, {}).get("results")):
            continue
        lines.append(f"Translation benchmark, {title} ({evaluation[suite]['tasks']} tasks; run host "
                     f"{host or 'none: compile and link rates only'}):")
        for name, r in results.items():
            source, asm = r.get("source", {}), r.get("asm", {})
            line = f"  {name:<{name_width}} source: compiles {percent(source.get('compile_rate'))}"
            if host:
                accuracy = source.get("accuracy")
                line += ", passes " + ("-" if accuracy is None else f"{100 * accuracy:.1f}%")
            lines.append(line + (f"; asm: links {percent(asm['compile_rate'])}" if asm else ""))
    runs = {s: r for s in metrics if (r := _read(project / "metrics" / "run" / f"{s}.json")) is not None}
    actions = [r["actions"] for r in runs.values() if "actions" in r]
    if actions:
        hits, misses = sum(a["hits"] for a in actions), sum(a["misses"] for a in actions)
        lines.append(f"Tool actions in the last run of each tool stage: {misses} run, {hits} from the store.")
    lines.append("Outputs:")
    lines.extend(f"  {what:<36} {where}" for what, where in OUTPUTS)
    lines.append("Details: `dvc metrics show`, metrics/<stage>.json; run reports in metrics/run/.")
    return "\n".join(lines)
