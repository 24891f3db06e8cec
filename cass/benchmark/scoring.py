"""An evaluation: predictions scored by the evaluator and written as a report (the evaluate stage and `cass eval`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cass.benchmark.evaluate import evaluate, summarize
from cass.benchmark.real_evaluate import evaluate_real
from cass.benchmark.real_tasks import RealTask
from cass.benchmark.report import write_report
from cass.benchmark.tasks import Prediction, Task
from cass.execution.hosts import ExecutionHost
from store import Store


def score(store: Store, params: dict, tasks: dict[str, Task] | dict[str, RealTask], name: str,
          predictions: list[Prediction], host: ExecutionHost | None, out: Path,
          references: pl.DataFrame | None = None) -> tuple[dict, dict]:
    """Evaluate ``predictions`` (of the own suite's tasks, or of the real-program suite's with its ``references``)
    and write the report to ``out`` (report.md holds its table); the summary and the run report."""
    if not any(isinstance(task, RealTask) for task in tasks.values()):
        rows, report = evaluate(store, params, tasks, predictions, host)
    elif references is None:
        raise ValueError("the real-program suite has no reference outputs: `cass bench-tasks record` writes them")
    else:
        rows, report = evaluate_real(store, params, tasks, references, predictions, host)
    summary = summarize(rows, tasks)
    write_report(out, name, rows, summary, report)
    return summary, report
