"""Benchmark: the `evaluate` stage as a first run meets it, every other stage's actions already in the store.

A built project (a fresh clone after `bash scripts/run.sh`) is copied, its store hard-linked; the action records
that only `evaluate` used are removed from the copy (the records other stages used stay: on a first run those stages
make them before `evaluate` runs) and its store packs left out; this checkout's pipeline files go over it, and
`dvc repro --single-item --force evaluate` is timed. Printed: the stage's wall seconds and, per evaluation
(suite:name), its wall seconds and the builds it sent, from the stage's run report.

    python bench/evaluate_cold.py --project /var/tmp/first-run/main [--runs 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/

from harness.project import TOOL_ENV, run_in, run_report, update_pipeline  # noqa: E402

from store import Store  # noqa: E402

STAGE = "evaluate"


def stage_keys(project: Path) -> tuple[set[str], set[str]]:
    """The action keys ``evaluate`` used, and those every other stage used."""
    used = {path.parent.name: set(pl.read_parquet(path)["key"])
            for path in (project / "data").glob("*/actions.parquet")}
    if STAGE not in used:
        raise SystemExit(f"{project}: no data/{STAGE}/actions.parquet: build the project first (bash scripts/run.sh)")
    return used.pop(STAGE), set().union(*used.values())


def cold_copy(project: Path, dest: Path) -> int:
    """``project`` copied to ``dest`` with this checkout's code, without the records only ``evaluate`` used;
    returns how many were removed."""
    def left_out(folder: str, names: list[str]) -> set[str]:
        leave = {project: {".venv", ".cass"}, project / ".dvc": {"cache"}}.get(Path(folder), set()) | {"store_packs"}
        return leave & set(names)

    shutil.copytree(project, dest, symlinks=True, ignore=left_out)
    subprocess.run(["cp", "-al", str(project / ".cass"), str(dest / ".cass")], check=True)
    update_pipeline(dest)
    own, others = stage_keys(project)
    store = Store(dest / ".cass" / "store")
    removed = store.gc(set(store.iter_objects()), set(store.iter_actions()) - (own - others))
    return removed.actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", type=Path, required=True, help="a built project (a fresh clone after run.sh)")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    commit = run_in(["git", "rev-parse", "--short", "HEAD"], REPO).strip()
    for number in range(1, args.runs + 1):
        with tempfile.TemporaryDirectory(prefix="evaluate-cold-") as tmp:
            dest = Path(tmp) / "project"
            removed = cold_copy(args.project.resolve(), dest)
            start = time.perf_counter()
            run_in(["dvc", "repro", "--single-item", "--force", STAGE], dest, {**TOOL_ENV, "HF_HUB_OFFLINE": "1"})
            wall = time.perf_counter() - start
            report = run_report(dest, STAGE)
            print(f"run {number} at {commit}: {removed} records only {STAGE} used removed; dvc repro {wall:.1f} s, "
                  f"stage {report['stage_wall_s']} s")
            for name, evaluation in report["evaluations"].items():
                sent = {kind: counts["jobs_sent"] for kind, counts in evaluation["builds"].items()}
                print(f"  {name:24} {evaluation['wall_s']:7.1f} s  jobs sent {json.dumps(sent)}")


if __name__ == "__main__":
    main()
