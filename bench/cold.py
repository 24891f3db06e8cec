"""Benchmark: cold builds against the compilers' floor, before and after, on a realistic tree.

Every variant (this checkout, and each ``--before`` commit's pipeline, taken with ``git archive``)
gets a fresh project with its own empty store and the same generated tree
(:func:`bench.gen_corpus.generate_tree`: projects with shared headers, a vendored 13k-line
``GL/glext.h`` in the graphics ones). The stages up to ``export`` run one ``dvc repro -s`` at a
time in dvc.yaml's order, each timed: its wall seconds and the CPU seconds of every process it
ran (dvc, the stage, its tools). This checkout's stages also report their tools' CPU seconds
(``metrics/run/<stage>.json``); the floor is that sum divided by the cores. From the measured
per-file costs (this checkout also builds a tree a quarter the size, so that fixed costs and costs
per file come apart) the report projects a full Stack v2 CUDA build on 1, 8 and 64 vendor hosts.
The Hub is unreachable here, so the tokens stage runs with ``HF_HUB_OFFLINE=1``. It also checks
that the variants' export Parquet files are identical and compares the hipify warnings with those
of a variant that ran hipify-perl's default mode.

    python bench/cold.py --projects 16 --files-per-project 12 --before 0303f5b de948ab
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from collections import Counter
from datetime import date
from pathlib import Path

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/
os.environ.setdefault("HF_HUB_OFFLINE", "1")   # before harness.project takes its copy of the environment

from harness.project import copy_pipeline, parquet_hashes, run_in  # noqa: E402

from bench.gen_corpus import generate_tree  # noqa: E402
from bench.results import replace_section  # noqa: E402
from store import Store  # noqa: E402

SECTION = "## Cold builds (issue 14)"
STACK_V2_FILES = 124_000
"""CUDA files in The Stack v2 (shared/ANCHORS.md), the size of a full cold build."""
TOOL_STAGES = ("hipify", "compile_nvidia", "compile_amd", "normalize")
EXPORT = "data/export"


def commit_of(ref: str) -> str:
    return subprocess.run(["git", "rev-parse", "--short=7", ref], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


def make_project(dest: Path, commit: str | None) -> Path:
    """A fresh git + DVC project with this checkout's pipeline, or ``commit``'s."""
    if commit is None:
        return copy_pipeline(dest, with_bundled_corpus=False)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    for leftover in ("corpus", "data", "metrics", "dvc.lock", "tests", "bench", ".dvc"):
        subprocess.run(["rm", "-rf", str(dest / leftover)], check=True)
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "config", "core.analytics", "false"]):
        run_in(cmd, dest)
    return dest


def export_ancestors(project: Path) -> list[str]:
    """The stages ``dvc repro export`` runs, in dvc.yaml's order."""
    stages = yaml.safe_load((project / "dvc.yaml").read_text())["stages"]

    def outs(stage: dict) -> list[str]:
        return [next(iter(o)) if isinstance(o, dict) else o for o in stage.get("outs", [])]

    producer = {out: name for name, stage in stages.items() for out in outs(stage)}
    needed, todo = set(), ["export"]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        for dep in stages[name].get("deps", []):
            todo += [producer[o] for o in producer if dep == o or dep.startswith(o + "/")]
    return [name for name in stages if name in needed]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(project: Path) -> list[dict]:
    """Run the stages up to export one by one; per stage its wall and all-process CPU seconds,
    and its tools' CPU seconds where the pipeline records them."""
    rows = []
    for stage in export_ancestors(project):
        cpu, start = children_cpu(), time.perf_counter()
        run_in(["dvc", "repro", "-s", stage], project)
        row = {"stage": stage, "wall_s": time.perf_counter() - start, "cpu_s": children_cpu() - cpu}
        reports = project / "metrics"   # run reports; before 62fed0a a pipeline wrote them to metrics/time/
        timing = next((p for p in (reports / "run" / f"{stage}.json", reports / "time" / f"{stage}.json")
                       if p.exists()), reports / "run" / f"{stage}.json")
        if timing.exists():
            recorded = json.loads(timing.read_text())
            row["tool_cpu_s"] = recorded.get("tool_cpu_s", 0.0)
            row["tool_jobs"] = recorded.get("tool_jobs", 0)
        rows.append(row)
        print(f"{project.name} {stage}: {row['wall_s']:.1f} s", file=sys.stderr)
    return rows


def export_difference(project: Path, reference: Path) -> str:
    """How ``project``'s export differs from ``reference``'s: per Parquet file, identical bytes, or
    the columns only one has and the shared columns whose values differ."""
    ours, theirs = parquet_hashes(project, EXPORT), parquet_hashes(reference, EXPORT)
    if ours == theirs:
        return f"identical ({len(ours)} files)"
    parts = []
    for name in sorted(ours.keys() | theirs.keys()):
        if ours.get(name) == theirs.get(name):
            parts.append(f"{name} identical")
        elif name not in ours or name not in theirs:
            parts.append(f"{name} only in {'the reference' if name in theirs else 'this variant'}")
        else:
            a, b = (pl.read_parquet(x / name) for x in (project, reference))
            shared = [c for c in a.columns if c in b.columns]
            differ = [c for c in shared if a.height != b.height or not a[c].equals(b[c])]
            parts.append(f"{name}: {len(shared)} shared columns, differing: {differ or 'none'}; only in the "
                         f"reference: {sorted(set(b.columns) - set(a.columns)) or 'none'}; only here: "
                         f"{sorted(set(a.columns) - set(b.columns)) or 'none'}")
    return "; ".join(parts)


def warning_lines(project: Path) -> dict[str, Counter]:
    """Per sample, its hipify warnings as a multiset of lines (hipify-perl's order of some
    warnings follows Perl's hash order in older variants)."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    store = Store(project / params["store"]["dir"])
    rows = pl.read_parquet(project / "data" / "hipify" / "manifest.parquet").select("path", "hipify_warnings")
    return {path: Counter(ln for ln in store.get_text(digest, "replace").splitlines() if ln.strip())
            for path, digest in rows.iter_rows()}


def table(name: str, rows: list[dict], cores: int) -> list[str]:
    total_wall = sum(r["wall_s"] for r in rows)
    has_tools = any("tool_cpu_s" in r for r in rows)
    lines = [f"`{name}`:", "",
             "| stage | wall s | share of wall | CPU s, all processes | wall / (CPU / cores) | tool jobs | tool CPU s "
             "| wall / floor |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    shown = [r for r in rows if r["stage"] in TOOL_STAGES or r["wall_s"] >= 0.05 * total_wall]
    rest = [r for r in rows if r not in shown]
    if rest:
        shown.append({"stage": f"{len(rest)} other stages", "wall_s": sum(r["wall_s"] for r in rest),
                      "cpu_s": sum(r["cpu_s"] for r in rest),
                      **({"tool_cpu_s": sum(r.get("tool_cpu_s", 0) for r in rest),
                          "tool_jobs": sum(r.get("tool_jobs", 0) for r in rest)} if has_tools else {})})
    total = {"stage": "**cold build**", "wall_s": total_wall, "cpu_s": sum(r["cpu_s"] for r in rows),
             **({"tool_cpu_s": sum(r.get("tool_cpu_s", 0) for r in rows),
                 "tool_jobs": sum(r.get("tool_jobs", 0) for r in rows)} if has_tools else {})}
    for r in [*shown, total]:
        tool = r.get("tool_cpu_s")
        floor = f"{r['wall_s'] / (tool / cores):.2f}" if tool else "-"
        lines.append(f"| {r['stage']} | {r['wall_s']:.1f} | {r['wall_s'] / total_wall:.1%} | {r['cpu_s']:.1f} "
                     f"| {r['wall_s'] / (r['cpu_s'] / cores):.2f} | {r.get('tool_jobs', '-')} "
                     f"| {f'{tool:.1f}' if tool is not None else '-'} | {floor} |")
    return lines


def driver_s(rows: list[dict], cores: int) -> float:
    """A build's wall seconds beyond its floor: dvc and the stages' own work on the driver."""
    return max(sum(r["wall_s"] for r in rows) - sum(r.get("tool_cpu_s", 0) for r in rows) / cores, 0.0)


def projection(rows: list[dict], files: int, small: list[dict], small_files: int, cores: int) -> list[str]:
    """Hours for a full Stack v2 CUDA build from this run's costs: the tools' CPU per file spread
    over the hosts' cores; the driver's work per file (from the two tree sizes) and its fixed
    part, which do not shrink with hosts."""
    tool_per_file = sum(r.get("tool_cpu_s", 0) for r in rows) / files
    driver_per_file = max(driver_s(rows, cores) - driver_s(small, cores), 0.0) / (files - small_files)
    fixed = max(driver_s(rows, cores) - driver_per_file * files, 0.0)
    lines = ["| vendor hosts (each with this machine's cores) | projected hours for "
             f"{STACK_V2_FILES:,} files |", "|---:|---:|"]
    for hosts in (1, 8, 64):
        seconds = fixed + STACK_V2_FILES * (driver_per_file + tool_per_file / (hosts * cores))
        lines.append(f"| {hosts} | {seconds / 3600:.1f} |")
    lines += ["", f"Per file: {tool_per_file:.2f} s of tool CPU and {driver_per_file:.3f} s on the driver (from the "
              f"{small_files}- and {files}-file builds); fixed: {fixed:.0f} s. Assumes the stages run one after "
              "another as `dvc repro` runs them, each stage's tools spread over its vendor's hosts at this run's "
              "per-file CPU (shared headers' translations included, so a little high), no transfer costs (inputs and "
              "outputs are a few hundred KB per file), and every file a program reaching the compilers (filters and "
              "deduplication only make it shorter)."]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--projects", type=int, default=16)
    parser.add_argument("--files-per-project", type=int, default=12)
    parser.add_argument("--before", nargs="*", default=[], help="commits whose pipelines to build for comparison")
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/cass-bench-cold"))
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    if args.projects < 2:
        raise SystemExit("--projects must be at least 2 (a smaller tree is built too, for costs per file)")
    if args.work.exists():
        raise SystemExit(f"{args.work} exists; remove it or pass another --work")
    cores = os.cpu_count() or 1
    head = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=REPO,
                          capture_output=True, text=True, check=False).stdout.strip()
    variants = {f"before {commit_of(c)}": commit_of(c) for c in args.before} | {f"after {head}": None}
    results, projects, failed = {}, {}, {}
    for name, commit in variants.items():
        project = make_project(args.work / name.replace(" ", "-"), commit)
        files = len(generate_tree(project / "corpus", args.projects, args.files_per_project))
        projects[name] = project
        try:
            results[name] = build(project)
        except RuntimeError as exc:
            if commit is None:
                raise
            failed[name] = str(exc).splitlines()[0]
    small_project = make_project(args.work / "after-small", None)
    small_files = len(generate_tree(small_project / "corpus", max(args.projects // 4, 1), args.files_per_project))
    if small_files >= files:
        raise SystemExit("the smaller tree is not smaller; pass more --projects")
    small = build(small_project)

    after = f"after {head}"
    lines = [
        SECTION, "",
        f"`python bench/cold.py {shlex.join(sys.argv[1:])}` on {cores} cores ({platform.machine()}), {date.today()}, "
        f"commit {head}. Tree: {args.projects} projects x {args.files_per_project} programs = {files} files, each "
        "including its project's header and common/helper_cuda.cuh; every 4th project's programs also include the "
        "vendored 13k-line GL/glext.h. Each variant builds it cold (fresh project, empty store) with `dvc repro -s` "
        "per stage up to export; NVIDIA host + sm_89, AMD hipify-perl + host + gfx1100 (trixie root), "
        "`HF_HUB_OFFLINE=1`. Variants ran in the order shown, one after another, with the toolchains already in the "
        "page cache from earlier work. Floor = the tools' CPU seconds / cores (the stages run as many tools at once "
        "as there are cores); `wall / (CPU / cores)` uses every process's CPU (dvc and the stages too).", "",
    ]
    for name, rows in results.items():
        lines += [*table(name, rows, cores), ""]
    for name, why in failed.items():
        lines.append(f"- `{name}` failed: {why}")
    for name in results:
        if name != after:
            lines.append(f"- export of `{name}` against `{after}`'s: "
                         f"{export_difference(projects[name], projects[after])}.")
    default_mode = [n for n in results if n != after and not (projects[n] / "cass" / "translate" /
                                                                "hipify_warnings.py").exists()]
    if default_mode:
        theirs, ours = warning_lines(projects[default_mode[0]]), warning_lines(projects[after])
        equal = sum(theirs.get(p) == w for p, w in ours.items())
        lines.append(f"- hipify warnings: {equal} of {len(ours)} samples equal to `{default_mode[0]}`'s "
                     "(hipify-perl's default mode), as line multisets (that commit ran hipify-perl without a fixed "
                     "Perl hash seed, so the order of a line's warnings may differ).")
    else:
        lines.append("- hipify warnings not compared: no variant ran hipify-perl's default mode.")
    hip = next(r for r in results[after] if r["stage"] == "hipify")
    lines += ["", f"hipify stage: {hip['wall_s'] / sum(r['wall_s'] for r in results[after]):.1%} of `{after}`'s "
              "cold-build wall.", "", f"Projection from `{after}`:", "",
              *projection(results[after], files, small, small_files, cores)]
    section = "\n".join(lines)
    print(section)
    replace_section(args.out, SECTION, section)


if __name__ == "__main__":
    main()
