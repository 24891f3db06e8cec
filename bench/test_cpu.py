"""Where the test suite's time and CPU go, from a ``pytest --cpu-times FILE`` run (tests/harness/cpu_times.py).

Sums each test phase's wall time and CPU time (the pytest worker's own and its reaped children's: compilers, `dvc`,
stage processes, Dask hosts stopped in a teardown) by test file and by worker, and lists the costliest phases, as
Markdown tables. The per-worker sums show whether the two workers of ``bash scripts/test.sh`` were kept equally busy;
the CPU total over the machine's cores is the least wall time any order of the same tests can take.

    bash scripts/test.sh --cpu-times /tmp/cpu.jsonl
    python bench/test_cpu.py /tmp/cpu.jsonl --top 15
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path


def read(path: Path) -> list[dict]:
    """The phases of one run (a file holding several runs' lines gives their sum: give each run its own file)."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def cpu(row: dict) -> float:
    return row["cpu_s"] + row["children_cpu_s"]


def sums(rows: list[dict], key) -> list[tuple[str, float, float, int]]:
    """(group, wall seconds, CPU seconds, tests) by ``key(row)``, costliest CPU first."""
    wall: dict[str, float] = defaultdict(float)
    spent: dict[str, float] = defaultdict(float)
    tests: dict[str, set] = defaultdict(set)
    for row in rows:
        wall[key(row)] += row["wall_s"]
        spent[key(row)] += cpu(row)
        tests[key(row)].add(row["test"])
    return sorted(((k, wall[k], spent[k], len(tests[k])) for k in wall), key=lambda r: -r[2])


def report(rows: list[dict], top: int, cores: int) -> str:
    total_cpu = sum(cpu(r) for r in rows)
    lines = [f"{len({r['test'] for r in rows})} tests, {len(rows)} phases: {sum(r['wall_s'] for r in rows):,.0f} s "
             f"of wall time summed over the workers, {total_cpu:,.0f} s of CPU time (at least "
             f"{total_cpu / cores / 60:.1f} min on {cores} cores, whatever the order)", "",
             "| worker | wall s | CPU s | tests |", "|---|---:|---:|---:|"]
    lines += [f"| {w} | {wall:,.0f} | {c:,.0f} | {n} |" for w, wall, c, n in sorted(sums(rows, lambda r: r["worker"]))]
    lines += ["", "| test file | wall s | CPU s | tests |", "|---|---:|---:|---:|"]
    lines += [f"| {f} | {wall:,.0f} | {c:,.0f} | {n} |"
              for f, wall, c, n in sums(rows, lambda r: r["test"].split("::")[0])[:top]]
    lines += ["", "| phase | test | wall s | CPU s |", "|---|---|---:|---:|"]
    lines += [f"| {r['phase']} | `{r['test'].split('::', 1)[1].split('@')[0]}` ({r['test'].split('::')[0]}) | "
              f"{r['wall_s']:,.0f} | {cpu(r):,.0f} |" for r in sorted(rows, key=lambda r: -cpu(r))[:top]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", type=Path, help="the --cpu-times file of one pytest run")
    parser.add_argument("--top", type=int, default=15, help="test files and phases listed")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="cores the run had")
    args = parser.parse_args()
    print(report(read(args.file), args.top, args.cores))


if __name__ == "__main__":
    main()
