"""An evaluation: predictions scored by the evaluator and written as a report (the evaluate stage and `cass eval`)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cass.benchmark.baselines import baseline, real_baseline
from cass.benchmark.evaluate import evaluate, summarize
from cass.benchmark.real_evaluate import evaluate_real
from cass.benchmark.real_tasks import RealTask
from cass.benchmark.report import write_report
from cass.benchmark.tasks import Prediction, Task
from cass.engine.placement import Placement
from cass.execution.hosts import ExecutionHost, resolve_host
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


def run_host(params: dict, override: str | None = None) -> ExecutionHost | None:
    """Where the benchmark's programs run: ``override`` (``cass eval --host``), else ``benchmark.host``, else
    ``execute.host`` (the stage and the CLI alike)."""
    return resolve_host(override or params["benchmark"]["host"] or params["execute"]["host"],
                        Placement.of(params))


def baseline_predictions(name: str, store: Store, params: dict, tasks: dict[str, Task] | dict[str, RealTask],
                         references: pl.DataFrame | None, host: ExecutionHost | None) -> list[Prediction]:
    """The predictions of baseline ``name`` for a suite's ``tasks``: the own suite's, or the real-program suite's
    (``references`` given; ``host``'s runs choose the mutants)."""
    if references is None:
        return baseline(name, store, params, tasks)
    return real_baseline(name, store, params, tasks, host)
