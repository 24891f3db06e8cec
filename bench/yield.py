"""Benchmark: how much real code survives the AMD side, on development corpora split into a tune and a
check half (bench/corpora.yaml: rules are written from tune failures only; the check half is only measured).

Builds the corpora (the Debian source packages of params.yaml ``debian_sources``, real trees nobody
here wrote, and the HeCBench development copy beside the repository) up to the ``yield_report``
stage with real tools and real `dvc repro`, in several variants of the pipeline, one project copy
each, all in the same run and sharing one store (an action two variants share runs once):

* ``stock``: hipify-perl, then hipcc, as a user would run them: no repair layer (configured headers
  stay, so both variants compile the same files for NVIDIA), on each AMD toolchain of ``--suites``;
* ``pipeline``: the repair layer too, on each AMD toolchain of ``--pipeline-suites`` (default: ``--suites``).

Writes the per-corpus yield tables (files, included units, out of scope, NVIDIA ok, AMD ok, pairs, pairs /
NVIDIA ok, pairs / files) of each half, the NVIDIA-side causes of both halves and the AMD-side failure
categories and causes of the tune half into bench/RESULTS.md, with the commit and the exact command.

    python bench/yield.py [--suites trixie] [--pipeline-suites trixie sid] [--halves tune check]
                          [--work DIR] [--store DIR] [--out bench/RESULTS.md] [--section "## ..."]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
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

from harness.project import copy_pipeline, record_toolchains, run_in, update_pipeline  # noqa: E402

from bench.corpora import HECBENCH, load_split  # noqa: E402
from bench.results import replace_section  # noqa: E402
from cass.report.yields import SUMMARY_ALIGN, SUMMARY_HEADER, markdown, summary_rows  # noqa: E402
from cass.sources.debian import package_origin  # noqa: E402

SECTION = "## Yield on real code (issue 37)"


HALVES = ("tune", "check")


def hecbench_trees(root: Path, split: dict, halves: tuple[str, ...]) -> list[dict]:
    """The HeCBench copy as one tree per half of the split: each benchmark's CUDA folder."""
    return [{"path": str(root / "src"), "origin": f"hecbench_{half}",
             "paths": [f"{name}-cuda/*" for name in split["hecbench"][half]]} for half in halves]


def half_of(origin: str, split: dict) -> str:
    """The half of the split a corpus (origin) belongs to."""
    if origin.startswith("hecbench_"):
        return origin.removeprefix("hecbench_")
    return next(h for p, h in split["packages"].items() if package_origin(p) == origin)


def variant_params(base: dict, store: Path, debian_dir: Path, suite: str, pipeline: bool, trees: list[dict],
                   packages: list[dict]) -> dict:
    params = json.loads(json.dumps(base))
    params["corpus"]["trees"] = trees
    params["store"]["dir"] = str(store)
    params["dedup"]["real_tasks"] = False   # the corpus holds the suite's own programs: measured, not trained on
    params["debian_sources"].update(enabled=True, dir=str(debian_dir), packages=packages)
    params["repair"]["enabled"] = pipeline
    params["amd"]["toolchain"] = suite
    return params


COUNTS = ("files", "included_units", "out_of_scope", "nvidia_ok", "amd_ok", "both",
          "nvidia_ok_with_configured_headers", "nvidia_ok_debian_cuda", "pairs_debian_cuda", "amd_ok_build_root",
          "pairs_build_root", "pairs_repaired", "pairs_hip_nvidia_checked", "pairs_hip_nvidia_ok",
          "pairs_hip_nvidia_ok_build_root", "pairs_hip_nvidia_ok_debian_cuda")
TALLIES = ("files_by_build_context", "pairs_amd_only")


def combined(corpora: list[dict]) -> dict:
    """The yield of several corpora together (their files are disjoint): counts and tallies summed (the tables print
    shares from the counts)."""
    total = {key: sum(c[key] for c in corpora) for key in COUNTS}
    return total | {key: dict(sum((Counter(c[key]) for c in corpora), Counter()).most_common()) for key in TALLIES}


def half_yields(yields: dict, split: dict, half: str) -> dict:
    """A variant's yields restricted to one half, with the half's total as ``all``."""
    corpora = {o: y for o, y in yields["corpora"].items() if half_of(o, split) == half}
    return {"corpora": corpora, "all": combined(list(corpora.values()))}


def nvidia_causes(yields: dict, titles: dict[str, str]) -> list[str]:
    """Per corpus: its NVIDIA failure categories and top causes."""
    lines = []
    for origin, y in yields["corpora"].items():
        if y["nvidia_failures"]:
            lines += ["", f"**{titles.get(origin, origin)}**, NVIDIA failures: "
                      + ", ".join(f"{c} {n}" for c, n in y["nvidia_failures"].items()) + "; top causes: "
                      + "; ".join(f"`{c['cause'].replace('|', '/')}` {c['files']}" for c in y["top_nvidia_causes"][:5])
                      + "."]
    return lines


def build(project: Path, params: dict) -> dict:
    """A project copy with these parameters, built to the yield report; its yields."""
    if project.exists():
        update_pipeline(project)
    else:
        copy_pipeline(project, with_bundled_corpus=False)
        (project / "corpus").mkdir()
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    record_toolchains(project)   # the variant's AMD root, as `cass toolchains` would record it there
    run_in(["dvc", "repro", "yield_report"], project)
    return json.loads((project / "metrics" / "yield.json").read_text())


def tool_versions(project: Path) -> str:
    """The compilers a variant used, as the toolchain_fingerprints stage recorded them."""
    record = json.loads((project / "data" / "toolchain_fingerprints" / "toolchains.json").read_text())
    nvcc = re.search(r"release [\d.]+", record["nvidia"]["nvcc"]["version"])
    return (f"nvcc {nvcc.group(0) if nvcc else '?'}, {record['amd']['hipcc']['version'].split(' | ')[0]}, "
            f"hipify-perl reporting \"{record['amd']['hipify-perl']['version']}\"")


def amd_cost_row(project: Path, name: str, built_s: float) -> str:
    """A variant's compile_amd run report as a Markdown row."""
    run = json.loads((project / "metrics" / "run" / "compile_amd.json").read_text())
    misses, cpu = run["actions"]["misses"], run.get("tool_cpu_s", 0.0)
    per_miss = f"{cpu / misses:.2f}" if misses else "-"
    return f"| {name} | {built_s:.0f} s | {misses} | {run['actions']['hits']} | {cpu:.0f} | {per_miss} |"


def configure_steps(project: Path) -> list[str]:
    """A variant's configure steps (``data/ingest/build_contexts.parquet``), with each Debian package's build
    dependencies (``data/fetch_debian/manifest.parquet``), as a Markdown table."""
    steps = pl.read_parquet(project / "data" / "ingest" / "build_contexts.parquet")
    fetched = pl.read_parquet(project / "data" / "fetch_debian" / "manifest.parquet")
    deps = {f"{r['origin']}:{r['name']}/": r["build_deps"].split(":")[0] for r in fetched.iter_rows(named=True)}
    lines = ["| tree | project | step | build dependencies | system | status | files listed | headers written |",
             "|---|---|---|---|---|---|---:|---:|"]
    for r in steps.sort("tree", "project", "source").iter_rows(named=True):
        system = r["system"].split("@")[0]
        lines.append(f"| {r['tree']} | {r['project']} | {r['source']} | {deps.get(r['tree'], '-')} | {system} | "
                     f"{r['status']} | {r['files']} | {r['headers']} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", nargs="+", default=["trixie", "sid"], help="AMD suites of the stock variants")
    parser.add_argument("--pipeline-suites", nargs="+", help="AMD suites of the pipeline variants (default: --suites)")
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/cass-bench-yield"))
    parser.add_argument("--store", type=Path, help="the store to share (default: WORK/store); the yields do not "
                        "depend on which actions it already holds, only the time to get them does")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    parser.add_argument("--hecbench", type=Path, default=HECBENCH, help="the HeCBench development copy (skipped "
                        "when missing)")
    parser.add_argument("--stock", action=argparse.BooleanOptionalAction, default=True,
                        help="build the stock variants")
    parser.add_argument("--halves", nargs="+", choices=HALVES, default=list(HALVES), help="halves of the split to "
                        "build (bench/corpora.yaml)")
    parser.add_argument("--debian-cuda", action=argparse.BooleanOptionalAction, default=None,
                        help="compile what nvcc 13.5 fails with the Debian suite's CUDA (default: params.yaml's "
                        "nvidia.debian_cuda)")
    parser.add_argument("--build-root-headers", action=argparse.BooleanOptionalAction, default=None,
                        help="compile what hipcc fails for a missing header again with the build root's headers "
                        "(default: params.yaml's amd.build_root_headers)")
    parser.add_argument("--section", default=SECTION, help="the heading of the RESULTS section to write")
    args = parser.parse_args()
    commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=REPO,   # what is built
                            capture_output=True, text=True, check=False).stdout.strip()
    base = yaml.safe_load((REPO / "params.yaml").read_text())
    if args.debian_cuda is not None:
        base["nvidia"]["debian_cuda"] = args.debian_cuda
    if args.build_root_headers is not None:
        base["amd"]["build_root_headers"] = args.build_root_headers
    split = load_split()
    halves = tuple(args.halves)
    store, debian_dir = args.store or args.work / "store", args.work / "debian"
    pipeline_suites = args.pipeline_suites or args.suites
    variants = [(f"stock-{s}", s, False) for s in args.suites if args.stock]
    variants += [(f"pipeline-{s}", s, True) for s in pipeline_suites]
    trees = hecbench_trees(args.hecbench, split, halves) if (args.hecbench / "src").is_dir() else []
    packages = [p for p in base["debian_sources"]["packages"] if split["packages"][p["name"]] in halves]
    results, built = {}, {}
    for name, suite, pipeline in variants:
        params = variant_params(base, store, debian_dir, suite, pipeline, trees, packages)
        start = time.perf_counter()
        results[name] = build(args.work / name, params)
        built[name] = time.perf_counter() - start
        print(f"{name}: built in {built[name]:.0f} s", file=sys.stderr)

    titles = {package_origin(p["name"]): f"{p['name']} {p['version']} ({p['flavour']})" for p in packages}
    titles |= {f"hecbench_{h}": f"HeCBench, {h} half ({len(split['hecbench'][h])} benchmarks)" for h in halves}
    projects = {s: f"pipeline-{s}" for s in pipeline_suites} | {s: f"stock-{s}" for s in args.suites if args.stock}
    shown = next(n for n in (f"pipeline-{base['amd']['toolchain']}", f"pipeline-{pipeline_suites[0]}") if n in results)
    lines = [
        args.section, "",
        f"`python bench/yield.py {shlex.join(sys.argv[1:])}` on {os.cpu_count()} cores ({platform.machine()}), "
        f"{date.today()}, commit {commit}. Debian {base['debian_sources']['suite']} source packages "
        "(`debian_sources` in params.yaml: " + ", ".join(f"{p['name']} {p['version']}" + (
            f" (its first {p['limit']} files)" if p.get("limit") else "") for p in packages)
        + ") and the HeCBench development copy (each benchmark's CUDA folder), split into tune and check by "
        f"bench/corpora.yaml (seed `{split['seed']}`); their `{'`, `'.join(base['corpus']['extensions'])}` files, "
        "real tools, `dvc repro yield_report` per variant in one run with one shared store. Files are the samples "
        "after the filters and deduplication; included units (files another file `#include`s) and out-of-scope "
        "files (graphics APIs, MPI, libraries neither side has) are counted apart and are not NVIDIA ok; NVIDIA: "
        f"host + {', '.join(base['nvidia']['archs'])}; AMD: hipify-perl then hipcc (host + "
        f"{', '.join(base['amd']['archs'])}) in the named Debian root. `stock`: no repair layer (hipify-perl and "
        "hipcc as they are); `pipeline`: the repair layer. Tools: "
        + "; ".join(f"{s}: {tool_versions(args.work / name)}" for s, name in projects.items()) + ".",
    ]
    lines += ["", "What each variant's AMD side cost (`metrics/run/compile_amd.json`: hipcc jobs run, not taken from "
              "the store, and their CPU seconds; a variant after the first shares its NVIDIA side and every AMD "
              "action another variant ran):", "",
              "| variant | built in | compile_amd misses | hits | hipcc CPU s | CPU s per miss |",
              "|---|---:|---:|---:|---:|---:|"]
    for name in results:
        lines.append(amd_cost_row(args.work / name, name, built[name]))
    for half in halves:
        lines += ["", f"**{half.capitalize()} set**" + (" (only measured: no rule was written from it)"
                                                        if half == "check" else " (rules were written from it)")
                  + ":", "", "| variant " + SUMMARY_HEADER, "|---" + SUMMARY_ALIGN]
        for name, yields in results.items():
            lines += summary_rows(half_yields(yields, split, half), titles, first=name)
        lines += ["", f"NVIDIA-side failures of the {half} set (`{shown}`):"]
        lines += nvidia_causes(half_yields(results[shown], split, half), titles)
    lines += ["", f"Configure steps (`{shown}`; build dependencies: `data/fetch_debian/manifest.parquet`, system: "
              "what the step saw as its system):", "", *configure_steps(args.work / shown)]
    if "tune" in halves:
        for name in dict.fromkeys((f"stock-{shown.removeprefix('pipeline-')}", shown)):
            if name in results:
                lines += ["", f"Failure categories and top causes of the tune set, `{name}`:", "",
                          markdown(half_yields(results[name], split, "tune"), titles)]
    section = "\n".join(lines)
    print(section)
    replace_section(args.out, args.section, section)


if __name__ == "__main__":
    main()
