"""Benchmark: real programs run as their authors run them (issue 39), on the HeCBench development copy's check half.

Builds a project copy whose corpus is the HeCBench copy's check benchmarks (bench/corpora.yaml; each benchmark's
CUDA folder) up to the ``pair`` stage with real tools and real ``dvc repro``, then writes the run batch of every pair
with a ``main`` (``cass gpu-batch export``: both programs built from their units, the run specs read from each
folder's Makefile). The batch runs on an NVIDIA GPU host (``python -m toolchains.gpu run-batch DIR --jobs N``); back
here, ``import`` records its runs, rebuilds ``execute`` from them and writes the verdict table into bench/RESULTS.md
with the commit, the GPU and the exact commands.

    python bench/real_programs.py export [--work DIR] [--store DIR] [--batch DIR]
    python bench/real_programs.py import --name HOST [--work DIR] [--batch DIR] [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from datetime import date
from pathlib import Path

import polars as pl
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/

from harness.project import copy_pipeline, run_in, update_pipeline  # noqa: E402

from bench.corpora import HECBENCH, load_split  # noqa: E402
from bench.results import replace_section  # noqa: E402

SECTION = "## Real programs run as their authors run them (issue 39)"
ORIGIN = "hecbench_check"


def project_params(store: Path, benchmarks: list[str]) -> dict:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["corpus"]["trees"] = [{"path": str(HECBENCH / "src"), "origin": ORIGIN,
                                  "paths": [f"{name}-cuda/*" for name in benchmarks]}]
    params["store"]["dir"] = str(store)
    params["execute"]["host"] = "none"
    return params


def export(work: Path, store: Path, batch: Path) -> None:
    project = work / "project"
    benchmarks = load_split()["hecbench"]["check"]
    if project.exists():
        update_pipeline(project)
    else:
        copy_pipeline(project, with_bundled_corpus=False)
        (project / "corpus").mkdir(exist_ok=True)
        (project / "corpus" / "opencl").mkdir(exist_ok=True)
    (project / "params.yaml").write_text(yaml.safe_dump(project_params(store, benchmarks), sort_keys=False))
    print(run_in(["dvc", "repro", "pair"], project)[-2000:])
    print(run_in([sys.executable, "-m", "cass.cli", "gpu-batch", "export", str(batch)], project))


def verdict_table(manifest: pl.DataFrame) -> list[str]:
    """Verdicts of the pairs with a ``main`` whose CUDA original built and ran."""
    statuses = Counter(manifest["exec_status"])
    verified = manifest.filter(pl.col("exec_verified"))
    lines = ["| exec_status | pairs | verified |", "|---|---:|---:|"]
    for status, n in sorted(statuses.items(), key=lambda kv: -kv[1]):
        lines.append(f"| `{status}` | {n} | {verified.filter(pl.col('exec_status') == status).height} |")
    return lines


def import_batch(work: Path, batch: Path, name: str, out: Path) -> None:
    project = work / "project"
    run_in([sys.executable, "-m", "cass.cli", "gpu-batch", "import", str(batch), "--name", name], project)
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["execute"]["host"] = f"recorded:{name}"
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro", "execute"], project)
    manifest = pl.read_parquet(project / "data" / "execute" / "manifest.parquet")
    host = json.loads((project / "gpu_hosts" / f"{name}.json").read_text())["host"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    ran = manifest.filter(~pl.col("exec_status").is_in(["no_main", "cuda_failed", "not_run:no_gpu_host"])
                          | pl.col("exec_status").is_null())
    mains = manifest.filter(pl.col("exec_status") != "no_main")
    text = "\n".join([
        SECTION, "",
        f"Commit {commit}, {date.today()}, GPU {host['gpu']} ({host['sm']}, driver {host['driver']}), kernels "
        f"{'counted' if host.get('launch_counter') else 'not counted'}. HeCBench development copy, check half "
        f"({len(load_split()['hecbench']['check'])} benchmarks, bench/corpora.yaml): {manifest.height} pairs, "
        f"{mains.height} with a `main`; {ran.height} whose CUDA original built and ran to a verdict other than "
        f"`cuda_failed`; verified {ran.filter(pl.col('exec_verified')).height} "
        f"({100 * ran.filter(pl.col('exec_verified')).height / max(ran.height, 1):.1f}%).", "",
        *verdict_table(mains), "",
        "Made by `python bench/real_programs.py export`, `python -m toolchains.gpu run-batch DIR --jobs 8` on the GPU "
        f"host, `python bench/real_programs.py import --name {name}`.",
    ])
    replace_section(out, SECTION, text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["export", "import"])
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/cass-bench-real-programs"))
    parser.add_argument("--store", type=Path, help="the store (default: WORK/store)")
    parser.add_argument("--batch", type=Path, help="the batch directory (default: WORK/batch)")
    parser.add_argument("--name", default="h100", help="the GPU host's name (import)")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    batch = args.batch or args.work / "batch"
    if args.phase == "export":
        export(args.work, args.store or args.work / "store", batch)
    else:
        import_batch(args.work, batch, args.name, args.out)


if __name__ == "__main__":
    main()
