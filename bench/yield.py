"""Benchmark: how much real code survives the AMD side, per development corpus.

Builds the Debian source packages of params.yaml ``debian_sources`` (real trees nobody here
wrote) up to the ``yield_report`` stage with real tools and real `dvc repro`, in several
variants of the pipeline, one project copy each, all in the same run and sharing one store (an
action two variants share runs once):

* ``stock``: the stock tools only: no configured headers, no repair layer (hipify-perl, then
  hipcc, as a user would run them), on each AMD toolchain;
* ``pipeline``: configured headers and the repair layer, on each AMD toolchain of
  ``--pipeline-suites`` (default: ``--suites``).

Writes the per-corpus yield tables (files, NVIDIA ok, AMD ok, both, both / NVIDIA ok), the
failure categories and top causes of the default toolchain's stock and pipeline variants into
bench/RESULTS.md, with the commit and the exact command.

    python bench/yield.py [--suites trixie sid] [--pipeline-suites trixie] [--work DIR] [--store DIR]
                          [--out bench/RESULTS.md]
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
from datetime import date
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/

from harness.project import copy_pipeline, run_in, update_pipeline  # noqa: E402

from bench.results import replace_section  # noqa: E402
from cass.report.yields import SUMMARY_HEADER, markdown, summary_rows  # noqa: E402
from cass.sources.debian import package_origin  # noqa: E402

SECTION = "## Yield on real code (issue 13)"


def variant_params(base: dict, store: Path, debian_dir: Path, suite: str, pipeline: bool) -> dict:
    params = json.loads(json.dumps(base))
    params["corpus"]["trees"] = []
    params["store"]["dir"] = str(store)
    params["debian_sources"].update(enabled=True, dir=str(debian_dir))
    params["configure"]["enabled"] = pipeline
    params["repair"]["enabled"] = pipeline
    params["amd"]["toolchain"] = suite
    return params


def build(project: Path, params: dict) -> dict:
    """A project copy with these parameters, built to the yield report; its yields."""
    if project.exists():
        update_pipeline(project)
    else:
        copy_pipeline(project, with_bundled_corpus=False)
        (project / "corpus").mkdir()
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro", "yield_report"], project)
    return json.loads((project / "metrics" / "yield.json").read_text())


def tool_versions(project: Path) -> str:
    """The compilers a variant used, as the toolchain_fingerprints stage recorded them."""
    record = json.loads((project / "data" / "toolchain_fingerprints" / "toolchains.json").read_text())
    nvcc = re.search(r"release [\d.]+", record["nvidia"]["nvcc"]["version"])
    return (f"nvcc {nvcc.group(0) if nvcc else '?'}, {record['amd']['hipcc']['version'].split(' | ')[0]}, "
            f"hipify-perl reporting \"{record['amd']['hipify-perl']['version']}\"")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suites", nargs="+", default=["trixie", "sid"], help="AMD suites of the stock variants")
    parser.add_argument("--pipeline-suites", nargs="+", help="AMD suites of the pipeline variants (default: --suites)")
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/cass-bench-yield"))
    parser.add_argument("--store", type=Path, help="the store to share (default: WORK/store); the yields do not "
                        "depend on which actions it already holds, only the time to get them does")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    base = yaml.safe_load((REPO / "params.yaml").read_text())
    store, debian_dir = args.store or args.work / "store", args.work / "debian"
    pipeline_suites = args.pipeline_suites or args.suites
    variants = [(f"stock-{s}", s, False) for s in args.suites] + [(f"pipeline-{s}", s, True) for s in pipeline_suites]
    results = {}
    for name, suite, pipeline in variants:
        params = variant_params(base, store, debian_dir, suite, pipeline)
        start = time.perf_counter()
        results[name] = build(args.work / name, params)
        print(f"{name}: built in {time.perf_counter() - start:.0f} s", file=sys.stderr)

    titles = {package_origin(p["name"]): f"{p['name']} {p['version']} ({p['flavour']})"
              for p in base["debian_sources"]["packages"]}
    commit = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], cwd=REPO,
                            capture_output=True, text=True, check=False).stdout.strip()
    projects = {s: f"pipeline-{s}" for s in pipeline_suites} | {s: f"stock-{s}" for s in args.suites}
    shown = next(n for n in (f"pipeline-{base['amd']['toolchain']}", f"pipeline-{pipeline_suites[0]}") if n in results)
    d = base["debian_sources"]
    lines = [
        SECTION, "",
        f"`python bench/yield.py {shlex.join(sys.argv[1:])}` on {os.cpu_count()} cores ({platform.machine()}), "
        f"{date.today()}, commit {commit}. Debian {d['suite']} source packages (`debian_sources` in params.yaml: "
        + ", ".join(f"{p['name']} {p['version']}" + (f" (its first {p['limit']} files)" if p.get("limit") else "")
                    for p in d["packages"])
        + f"), their `{'`, `'.join(base['corpus']['extensions'])}` files, real tools, `dvc repro yield_report` per "
        "variant in one run with one shared store. Files are the samples after the filters and deduplication; "
        f"NVIDIA: host + {', '.join(base['nvidia']['archs'])}; AMD: hipify-perl then hipcc (host + "
        f"{', '.join(base['amd']['archs'])}) in the named Debian root. `stock`: no configured headers and no repair "
        "layer (the stock tools); `pipeline`: both. Tools: "
        + "; ".join(f"{s}: {tool_versions(args.work / name)}" for s, name in projects.items()) + ".", "",
        "| variant " + SUMMARY_HEADER, "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, yields in results.items():
        lines += summary_rows(yields, titles, first=name)
    for name in dict.fromkeys((f"stock-{shown.removeprefix('pipeline-')}", shown)):
        if name in results:
            lines += ["", f"Failure categories and top causes, `{name}`:", "", markdown(results[name], titles)]
    section = "\n".join(lines)
    print(section)
    replace_section(args.out, SECTION, section)


if __name__ == "__main__":
    main()
