"""Benchmark: a dry run at The Stack v2's size, to see how each stage's wall time and memory grow with the corpus.

A tree of distinct programs (:func:`bench.gen_corpus.generate_tree`: projects with shared headers, a vendored 13k-line
``GL/glext.h`` in the graphics ones) is built once, cold, into a store (the tools' work, paid once). Then for each
size N a fresh project ingests N files: copies of that tree, each copy its own tree of ``corpus.trees`` (so every
copy's files have the paths the first copy's have, and every tool action is a hit in the warm store), of origin
``dryrun``, which dedup passes through (``dedup.exempt_origins``) so that the copies reach every later stage. Every
stage of ``dvc repro`` runs one at a time (``dvc repro -s``), timed: its wall seconds, the CPU seconds of every
process it ran, the stage process's peak resident memory (its run report) and the tool actions it ran or found.

How the dry run differs from a real build: the tools run for the distinct programs only (their cost per file comes
from the cold build of the distinct tree and bench/cold.py); dedup compares no copy with another (bench/dedup.py
measures MinHash at 200k files); no GPU host runs programs (execute builds nothing without one); copies share their
texts, so the store holds one object per distinct file while the manifests hold N rows; a stage looks each distinct
action up once (a real build looks up every file's own). The Hub shards are sized for a full corpus
(``hub.shard_bytes`` 500 MB).

    python bench/scale.py --sizes 1000 10000 124000 --projects 16 --files-per-project 12 --work /var/tmp/scale
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import sys
import time
from datetime import date
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness.project import copy_pipeline, run_in  # noqa: E402

from bench.cold import STACK_V2_FILES, children_cpu, commit_of  # noqa: E402
from bench.gen_corpus import generate_tree  # noqa: E402
from bench.results import replace_section  # noqa: E402

SECTION = "## A dry run at The Stack v2's size (issue 41)"
ORIGIN = "dryrun"
FULL_CORPUS_SHARD_BYTES = 500_000_000
"""``hub.shard_bytes`` for a full corpus (params.yaml's comment); the default is small for the bundled corpus."""


def stages_of(project: Path) -> list[str]:
    """Every stage of the project's dvc.yaml, each after the stages whose outputs it reads (dvc.yaml's order
    otherwise)."""
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]
    producer = {(next(iter(o)) if isinstance(o, dict) else o): name
                for name, stage in stages.items() for o in stage.get("outs", [])}
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order:
            return
        for dep in stages[name].get("deps", []):
            for out, by in producer.items():
                if by != name and (dep == out or dep.startswith(out + "/")):
                    visit(by)
        order.append(name)
    for name in stages:
        visit(name)
    return order


def make_project(work: Path, name: str, tree: Path, files: int, distinct: int, store: Path) -> Path:
    """A fresh project whose corpus is ``files`` files rounded up to whole copies of ``tree`` (``distinct``
    programs), each copy a tree of its own (its sample paths under ``copy_NNNNN/``), on the shared ``store``."""
    project = work / name
    shutil.rmtree(project, ignore_errors=True)
    copy_pipeline(project, with_bundled_corpus=False)
    copies = math.ceil(files / distinct)
    trees = []
    for i in range(copies):
        folder = project / "corpus" / f"copy_{i:05d}"
        shutil.copytree(tree, folder, copy_function=os.link)   # hard links: the bytes once on disk
        trees.append({"path": str(folder.relative_to(project)), "origin": ORIGIN, "prefix": f"{folder.name}/"})
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["store"]["dir"] = str(store)
    params["corpus"]["trees"] = trees
    params["dedup"]["exempt_origins"] = [*params["dedup"]["exempt_origins"], ORIGIN]
    params["hub"]["shard_bytes"] = FULL_CORPUS_SHARD_BYTES
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (project / ".gitignore").write_text("corpus/\n")   # 124k hard links: git need not hash them
    run_in(["git", "add", "-A"], project)
    run_in(["git", "commit", "-qm", "dry run"], project)
    return project


PEAK = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True); "
        "print(f'peak_kib={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}')")
"""Runs a command and prints the peak resident memory of the largest process it ran (dvc, the stage, a tool)."""


def build(project: Path) -> list[dict]:
    """Every stage, one ``dvc repro -s`` at a time: wall and all-process CPU seconds, and what its run report says
    (the stage process's peak memory, its tool jobs and action counts)."""
    rows = []
    for stage in stages_of(project):
        cpu, start = children_cpu(), time.perf_counter()
        output = run_in([sys.executable, "-c", PEAK, "dvc", "repro", "-s", stage], project)
        peak = re.search(r"peak_kib=(\d+)", output).group(1)
        row = {"stage": stage, "wall_s": time.perf_counter() - start, "cpu_s": children_cpu() - cpu,
               "peak_mib": int(peak) / 1024}
        report = project / "metrics" / "run" / f"{stage}.json"
        if report.exists():
            recorded = json.loads(report.read_text())
            row |= {k: recorded[k] for k in ("stage_wall_s", "stage_peak_rss_mib", "tool_cpu_s", "tool_jobs")
                    if k in recorded}
        rows.append(row)
        print(f"{project.name} {stage}: {row['wall_s']:.1f} s, {row['peak_mib']:.0f} MiB",
              file=sys.stderr, flush=True)
    return rows


def rows_kept(project: Path) -> dict[str, int]:
    """Rows each stage passed on (its metrics' ``kept``)."""
    kept = {}
    for path in sorted((project / "metrics").glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("kept"), int):
            kept[path.stem] = data["kept"]
    return kept


def report(runs: dict[int, list[dict]], cold: list[dict], distinct: int, args: argparse.Namespace) -> str:
    sizes = sorted(runs)
    by_stage = {size: {r["stage"]: r for r in rows} for size, rows in runs.items()}
    head = ["| stage", *(f"wall s at {s:,}" for s in sizes), *(f"peak MiB at {s:,}" for s in sizes),
            *(f"ms per file at {s:,}" for s in sizes)]
    growth = len(sizes) >= 2
    if growth:
        head.append(f"growth {sizes[-2]:,} -> {sizes[-1]:,} / linear")
    lines = [SECTION, "",
             f"`python bench/scale.py --sizes {' '.join(map(str, sizes))} --projects {args.projects} "
             f"--files-per-project {args.files_per_project}` at commit {commit_of('HEAD')}, {date.today()}, on "
             f"{os.cpu_count()} cores ({platform.machine()}). {distinct} distinct programs built cold once "
             f"({sum(r['wall_s'] for r in cold):.0f} s), then each size ingests that many files as copies of them "
             "(every tool action a store hit); every stage of `dvc repro` timed alone. Peak: the stage process's "
             "resident memory (its tools and workers apart).", "",
             " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for stage in [r["stage"] for r in runs[sizes[-1]]]:
        cells = [f"| {stage}"]
        cells += [f"{by_stage[s][stage]['wall_s']:.1f}" for s in sizes]
        cells += [f"{by_stage[s][stage]['peak_mib']:.0f}" for s in sizes]
        cells += [f"{1000 * by_stage[s][stage]['wall_s'] / s:.2f}" for s in sizes]
        if growth:
            small, large = by_stage[sizes[-2]][stage]["wall_s"], by_stage[sizes[-1]][stage]["wall_s"]
            cells.append(f"{(large / small) / (sizes[-1] / sizes[-2]):.2f}")
        lines.append(" | ".join(cells) + " |")
    totals = [sum(r["wall_s"] for r in runs[s]) for s in sizes]
    lines.append("| **all stages** | " + " | ".join(f"{t:.1f}" for t in totals) + " | "
                 + " | ".join(f"{max(r['peak_mib'] for r in runs[s]):.0f}" for s in sizes) + " | "
                 + " | ".join(f"{1000 * t / s:.2f}" for t, s in zip(totals, sizes, strict=True))
                 + (f" | {(totals[-1] / totals[-2]) / (sizes[-1] / sizes[-2]):.2f}" if growth else "") + " |")
    lines += ["", "Growth / linear: how much more than in proportion to the files a stage's wall grew (1.00: linear; "
              "the fixed start-up of `dvc repro` and the interpreter makes small stages read below 1).",
              f"Projection basis: {STACK_V2_FILES:,} files."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, STACK_V2_FILES])
    parser.add_argument("--projects", type=int, default=16)
    parser.add_argument("--files-per-project", type=int, default=12)
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/scale"))
    parser.add_argument("--out", type=Path, help="write the section into this results file")
    parser.add_argument("--json", type=Path, help="write the measured rows here")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    tree = args.work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    distinct = len(generate_tree(tree, args.projects, args.files_per_project))
    store = args.work / "store"
    warm = make_project(args.work, "warm", tree, distinct, distinct, store)
    cold = build(warm)
    runs = {}
    for size in args.sizes:
        files = math.ceil(size / distinct) * distinct
        project = make_project(args.work, f"n{files}", tree, files, distinct, store)
        runs[files] = build(project)
        print(json.dumps({"files": files, "kept": rows_kept(project)}), file=sys.stderr, flush=True)
        if args.json:
            args.json.write_text(json.dumps({"cold": cold, "runs": runs}, indent=1))
        shutil.rmtree(project / "corpus")
    section = report(runs, cold, distinct, args)
    print(section)
    if args.out:
        replace_section(args.out, SECTION, section)


if __name__ == "__main__":
    main()
