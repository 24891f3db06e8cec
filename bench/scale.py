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
action up once, or once per chunk where the stage's workers look them up (a real build looks up every file's own).
The Hub shards are sized for a full corpus (``hub.shard_bytes`` 500 MB).

The sized runs use ``executor.workers: 1``: each stage's own work (the items :mod:`cass.engine.stage_work` hands
out) runs in the stage process and its tally gives its seconds, so the stage's serial rest (what stays on the
driver) is its wall less those. The projection spreads the items over the hosts' cores; what sending them to stage
hosts costs (a chunk of manifest rows pickled there and its result back, a shared filesystem's latency) is not
measured.

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

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness.project import copy_pipeline, run_in  # noqa: E402

from bench.cold import STACK_V2_FILES, children_cpu, commit_of  # noqa: E402
from bench.gen_corpus import generate_tree  # noqa: E402
from bench.results import replace_section  # noqa: E402
from store import Store  # noqa: E402

SECTION = "## The driver at The Stack v2's size, the tool stages settled on the workers (issue 41)"
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


def make_project(work: Path, name: str, tree: Path, files: int, distinct: int, store: Path, workers: int = 0) -> Path:
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
    params["executor"]["workers"] = workers
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    (project / ".gitignore").write_text("corpus/\n")   # 124k hard links: git need not hash them
    run_in(["dvc", "config", "cache.type", "hardlink"], project)   # 124k files' export and Hub shards: ~13 GB, once
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
        work = project / "metrics" / "run" / "stage_work" / f"{stage}.json"
        if work.exists():   # the stage's own spreadable work (cass/engine/stage_work.py)
            tally = json.loads(work.read_text())
            row |= {"work_wall_s": tally["wall_s"], "work_cpu_s": tally["cpu_s"], "work_items": tally["items"]}
        rows.append(row)
        print(f"{project.name} {stage}: {row['wall_s']:.1f} s, {row['peak_mib']:.0f} MiB",
              file=sys.stderr, flush=True)
    return rows


WORKER_LOOKUPS = ("hipify", "compile_nvidia", "repair", "compile_amd", "branch_parity", "pair", "normalize", "tokens")
"""Stages whose workers look their actions up (:mod:`cass.engine.settle`, the repair and token
caches): the lookups a real build adds there are spread work, any other stage's stay on the driver."""


def lookup_costs(project: Path, store: Path) -> dict[str, dict]:
    """Per stage of ``project``, its action keys and the seconds it takes to look them all up in ``store`` (the
    record read, every output it names re-hashed): what a real build pays per file and the dry run pays per distinct
    action."""
    costs = {}
    for path in sorted((project / "data").glob("*/actions.parquet")):
        keys = pl.read_parquet(path)["key"].to_list()
        opened = Store(store)
        start = time.perf_counter()
        found = sum(opened.lookup(key) is not None for key in keys)
        costs[path.parent.name] = {"keys": len(keys), "found": found, "seconds": time.perf_counter() - start}
    return costs


def rows_kept(project: Path) -> dict[str, int]:
    """Rows each stage passed on (its metrics' ``kept``)."""
    kept = {}
    for path in sorted((project / "metrics").glob("*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and isinstance(data.get("kept"), int):
            kept[path.stem] = data["kept"]
    return kept


def serial_s(row: dict) -> float:
    """A stage's wall seconds less its own spreadable work's (done in the stage process at ``--workers 1``): what
    stays on the driver wherever that work runs."""
    return row["wall_s"] - row.get("work_wall_s", 0.0)


def report(runs: dict[int, list[dict]], measured: dict, args: argparse.Namespace) -> str:
    """The per-stage table at every size (wall, the driver's serial part, the spreadable work, peak memory), the
    lookups a real build adds, and the projection for The Stack v2 with the stages' own work on the hosts."""
    sizes = sorted(runs)
    distinct, cores = measured["distinct"], measured["cores"]
    by_stage = {size: {r["stage"]: r for r in rows} for size, rows in runs.items()}
    small, large = sizes[-2], sizes[-1]
    head = ["| stage", *(f"wall s at {s:,}" for s in sizes), f"serial s at {large:,}", f"work s at {large:,}",
            f"work items at {large:,}", *(f"peak MiB at {s:,}" for s in sizes), f"serial ms per file at {large:,}",
            f"growth {small:,} -> {large:,} / linear"]
    lines = [SECTION, "",
             f"`python bench/scale.py --sizes {' '.join(map(str, args.sizes))} --projects {args.projects} "
             f"--files-per-project {args.files_per_project} --workers {measured.get('workers', args.workers)}` "
             f"at commit {measured['commit']}, "
             f"{measured['date']}, on {cores} cores ({measured['machine']}). {distinct} distinct programs (16 projects "
             "with shared headers, bench/gen_corpus.py) built cold once "
             f"{'at ' + measured['cold_commit'] + ' ' if 'cold_commit' in measured else ''}"
             f"({sum(r['wall_s'] for r in measured['cold']):.0f} s), then each size ingests that many files as whole "
             "copies of them, each copy a tree of its own (every tool action a store hit, every stage's per-file work "
             "done per copy); every stage of `dvc repro` timed alone. With `executor.workers` "
             f"{args.workers}, each stage's own work (cass/engine/stage_work.py: the items a stage hands to local "
             "processes or stage hosts) runs in the stage process and is timed apart: \"work\" is its wall seconds "
             "(the stage's `metrics/run/stage_work` tally), \"serial\" the rest of the stage's wall (dvc, reading "
             "and writing manifests, merging results, running the actions the store lacks), which stays on the "
             "driver wherever the work runs. Peak: the resident memory of the largest single process a stage ran.",
             "", " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]

    def growth(a: float, b: float) -> str:
        return f"{(b / a) / (large / small):.2f}" if a > 0 else "-"
    for stage in [r["stage"] for r in runs[large]]:
        row = by_stage[large][stage]
        cells = [f"| {stage}", *(f"{by_stage[s][stage]['wall_s']:.1f}" for s in sizes), f"{serial_s(row):.1f}",
                 f"{row.get('work_wall_s', 0):.1f}", f"{row.get('work_items', 0)}",
                 *(f"{by_stage[s][stage]['peak_mib']:.0f}" for s in sizes), f"{1000 * serial_s(row) / large:.2f}",
                 growth(by_stage[small][stage]["wall_s"], row["wall_s"])]
        lines.append(" | ".join(cells) + " |")
    totals = {s: sum(r["wall_s"] for r in runs[s]) for s in sizes}
    serial = {s: sum(serial_s(r) for r in runs[s]) for s in sizes}
    work = {s: sum(r.get("work_wall_s", 0) for r in runs[s]) for s in sizes}
    lines.append(" | ".join(["| **all stages**", *(f"{totals[s]:.1f}" for s in sizes), f"{serial[large]:.1f}",
                             f"{work[large]:.1f}", f"{sum(r.get('work_items', 0) for r in runs[large])}",
                             *(f"{max(r['peak_mib'] for r in runs[s]):.0f}" for s in sizes),
                             f"{1000 * serial[large] / large:.2f}", growth(totals[small], totals[large])]) + " |")
    lookups = measured["lookups"]
    lookup_s = sum(c["seconds"] for c in lookups.values())
    keys = sum(c["keys"] for c in lookups.values())
    spread_lookup_s = sum(c["seconds"] for stage, c in lookups.items() if stage in WORKER_LOOKUPS)
    per_file = {"serial": (serial[large] - serial[small]) / (large - small),
                "lookups": (lookup_s - spread_lookup_s) / distinct, "spread_lookups": spread_lookup_s / distinct,
                # pair's HIP-NVIDIA checks are projected apart, per check (bench/projection.py --check-cpu-s)
                "tools": sum(r.get("tool_cpu_s", 0) for r in measured["cold"] if r["stage"] != "pair") / distinct}
    fixed = max(serial[large] - per_file["serial"] * large, 0.0)
    work_rows = [r for r in runs[large] if r.get("work_items")]

    def spread_work(slots: int) -> float:
        """The stages' own work at 124k files over ``slots`` workers: each stage's items, as many as the corpus
        makes (they grow with it), at most ``slots`` at once."""
        scale = STACK_V2_FILES / large
        return (sum(r["work_wall_s"] * scale / min(slots, max(1.0, r["work_items"] * scale)) for r in work_rows)
                + STACK_V2_FILES * per_file["spread_lookups"] / slots)

    lines += ["", "Growth / linear: a stage's wall at the larger size over its wall at the smaller, over the ratio of "
              "the sizes (1.00: linear; below 1 where fixed start-up, about 0.7 s of `dvc repro` per stage, weighs).",
              "", f"Lookups a real build adds: the dry run looks each distinct action up once; a real build looks up "
              f"every file's own. The cold build's {keys:,} action keys took {lookup_s:.1f} s to look up "
              f"({1000 * lookup_s / max(keys, 1):.2f} ms each, every output re-hashed), "
              f"{1000 * (per_file['lookups'] + per_file['spread_lookups']):.2f} ms per file: "
              f"{1000 * per_file['spread_lookups']:.2f} ms in the stages whose workers look their actions up "
              f"({', '.join(WORKER_LOOKUPS)}; spread work, added in full although the dry run's work already looks "
              f"each distinct action up once per chunk), {1000 * per_file['lookups']:.2f} ms on the driver.", "",
              f"Projection for {STACK_V2_FILES:,} files (the Stack v2 CUDA subset), per file: "
              f"{per_file['tools']:.2f} s of tool CPU (the cold build), {1000 * per_file['serial']:.2f} ms of the "
              f"driver's serial work (the growth of all stages' serial seconds from {small:,} to {large:,} files) and "
              f"{1000 * per_file['lookups']:.2f} ms of lookups, both on the driver; fixed: {fixed:.0f} s. The stages' "
              f"own work ({1000 * work[large] / large:.1f} ms per file at {large:,}) runs on the hosts' cores as the "
              "tools do (stage hosts: each host also runs a `stage` worker per core), each stage's items spread over "
              "them (a stage has as many items as its chunks, trees or shards), and so do the workers' lookups. "
              f"Hosts have this machine's {cores} cores; \"driver\" is the serial part plus the spread work, the "
              "time the build spends outside the "
              "tools.", "",
              "| vendor hosts | tools, h | serial, h | stage work spread, h | driver, h | total, h | driver share |",
              "|---:|---:|---:|---:|---:|---:|---:|"]
    for hosts in (1, 8, 64):
        tools = STACK_V2_FILES * per_file["tools"] / (hosts * cores)
        serial_h = fixed + STACK_V2_FILES * (per_file["serial"] + per_file["lookups"])
        spread = spread_work(hosts * cores)
        driver = serial_h + spread
        lines.append(f"| {hosts} | {tools / 3600:.2f} | {serial_h / 3600:.2f} | {spread / 3600:.2f} "
                     f"| {driver / 3600:.2f} | {(tools + driver) / 3600:.2f} | {driver / (tools + driver):.0%} |")
    heaviest = sorted(((1000 * (serial_s(r) - serial_s(by_stage[small][r["stage"]])) / (large - small), r["stage"])
                       for r in runs[large]), reverse=True)[:5]
    tools_64 = STACK_V2_FILES * per_file["tools"] / (64 * cores)
    lines += ["", f"What bounds each at 64 hosts: the tools ({tools_64 / 3600:.2f} h); the driver's serial part "
              f"({fixed:.0f} s fixed, {STACK_V2_FILES * per_file['serial']:.0f} s of "
              f"per-file work, {STACK_V2_FILES * per_file['lookups']:.0f} s of lookups), whose per-file work grows "
              "most in " + ", ".join(f"{stage} ({ms:.2f} ms per file)" for ms, stage in heaviest) +
              "; it includes DVC (start-up, hashing every output); the stages' own work spread "
              f"({spread_work(64 * cores):.0f} s, each stage's items assumed equal: a stage's largest item, such as "
              "a Hub shard of 500 MB, bounds it from below). The network is not measured: tool jobs' inputs and "
              "outputs pass through the driver, and stage hosts read texts from the shared store."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, STACK_V2_FILES])
    parser.add_argument("--projects", type=int, default=16)
    parser.add_argument("--files-per-project", type=int, default=12)
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/scale"))
    parser.add_argument("--workers", type=int, default=1,
                        help="executor.workers of the sized runs: 1 keeps the stages' own work in the stage process, "
                             "so its time and the driver's serial rest are measured apart")
    parser.add_argument("--out", type=Path, help="write the section into this results file")
    parser.add_argument("--json", type=Path, help="write the measured rows here")
    parser.add_argument("--from-json", type=Path, help="write the report from an earlier run's --json")
    parser.add_argument("--reuse-cold", type=Path,
                        help="take the cold build and lookups from an earlier run's --json (same --work, its store)")
    args = parser.parse_args()
    measured = json.loads(args.from_json.read_text()) if args.from_json else measure(args)
    section = report({int(k): v for k, v in measured["runs"].items()}, measured, args)
    print(section)
    if args.out:
        replace_section(args.out, SECTION, section)


def measure(args: argparse.Namespace) -> dict:
    """The cold build of the distinct tree, the lookups of its actions, and each size's build."""
    args.work.mkdir(parents=True, exist_ok=True)
    tree = args.work / "tree"
    shutil.rmtree(tree, ignore_errors=True)
    distinct = len(generate_tree(tree, args.projects, args.files_per_project))
    store = args.work / "store"
    measured = {"commit": commit_of("HEAD"), "date": str(date.today()), "cores": os.cpu_count(),
                "machine": platform.machine(), "distinct": distinct, "workers": args.workers, "runs": {}}
    if args.reuse_cold:   # the cold build of an earlier run of this tree, whose store is still there
        earlier = json.loads(args.reuse_cold.read_text())
        measured |= {"cold_commit": earlier.get("cold_commit", earlier["commit"]), "cold": earlier["cold"],
                     "lookups": earlier["lookups"]}
    else:
        shutil.rmtree(store, ignore_errors=True)   # the first build is cold: it measures the tools' cost per file
        warm = make_project(args.work, "warm", tree, distinct, distinct, store)
        measured |= {"cold": build(warm), "lookups": lookup_costs(warm, store)}
    for size in args.sizes:
        files = math.ceil(size / distinct) * distinct
        project = make_project(args.work, f"n{files}", tree, files, distinct, store, args.workers)
        measured["runs"][files] = build(project)
        print(json.dumps({"files": files, "kept": rows_kept(project)}), file=sys.stderr, flush=True)
        if args.json:
            args.json.write_text(json.dumps(measured, indent=1))
        shutil.rmtree(project / "corpus")
    return measured


if __name__ == "__main__":
    main()
