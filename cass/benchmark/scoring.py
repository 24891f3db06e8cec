"""An evaluation: predictions scored by the evaluator and written as a report (the evaluate stage and `cass eval`)."""

from __future__ import annotations

from pathlib import Path

from cass.benchmark.evaluate import evaluate, summarize
from cass.benchmark.report import write_report
from cass.benchmark.tasks import Prediction, Task
from cass.execution.hosts import ExecutionHost
from store import Store


def score(store: Store, params: dict, tasks: dict[str, Task], name: str, predictions: list[Prediction],
          host: ExecutionHost | None, out: Path) -> tuple[dict, dict]:
    """Evaluate ``predictions`` and write the report to ``out`` (report.md holds its table); the summary and the
    run report."""
    rows, report = evaluate(store, params, tasks, predictions, host)
    summary = summarize(rows, tasks)
    write_report(out, name, rows, summary, report)
    return summary, report
