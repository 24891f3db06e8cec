"""Benchmark: real programs run as their authors run them (issue 39), on the HeCBench development copy's check half.

Builds a project copy whose corpus is the HeCBench copy's check benchmarks (bench/corpora.yaml; each benchmark's
CUDA folder) up to the ``pair`` stage with real tools and real ``dvc repro``, then writes the run batch of every pair
with a ``main`` (``cass gpu-batch export``: both programs built from their units, the run specs read from each
folder's Makefile). The batch runs on an NVIDIA GPU host (``python -m hosts.gpu run-batch DIR --jobs N``); back
here, ``import`` records its runs, rebuilds ``execute`` from them and prints the verdict table with the commit, the
GPU and the exact commands (``--out FILE`` puts it in FILE as a section of the half's own, "... (issue 39): check
half"; bench/RESULTS.md's historical section "Real programs run as their authors run them (issue 39)" holds both
halves' tables and the causes read from the tune half before issue 48).

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


def project(work: Path, store: Path, host: str, half: str) -> Path:
    """The project copy with this checkout's pipeline, its corpus one half, its programs run on ``host``."""
    root = work / "project"
    if root.exists():
        update_pipeline(root)
    else:
        copy_pipeline(root, with_bundled_corpus=False)
        (root / "corpus" / "opencl").mkdir(parents=True, exist_ok=True)
    write_params(root, store, host, half)
    return root


def write_params(root: Path, store: Path, host: str, half: str) -> None:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["corpus"]["trees"] = [{"path": str(HECBENCH / "src"), "origin": f"hecbench_{half}",
                                  "paths": [f"{name}-cuda/*" for name in load_split()["hecbench"][half]]}]
    params["store"]["dir"] = str(store)
    params["dedup"]["real_tasks"] = False   # the corpus holds the suite's own programs: measured, not trained on
    params["execute"]["host"] = host
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def export(work: Path, store: Path, batch: Path, half: str, missing_for: str | None) -> None:
    root = project(work, store, "none", half)
    print(run_in(["dvc", "repro", "pair"], root)[-2000:])
    print(run_in([sys.executable, "-m", "cass.cli", "gpu-batch", "export", str(batch),
                  *(["--missing-for", missing_for] if missing_for else [])], root))


def cuda_ran(row: dict) -> bool:
    """Whether the CUDA original built and every run of it exited 0 (the denominator of the verified share)."""
    runs = row["cuda_runs"] or []
    return bool(row["cuda_program"] and runs and all(r["verdict"] == "exited" and r["exit_code"] == 0 for r in runs))


def verdict_table(mains: pl.DataFrame) -> list[str]:
    """Verdicts of the pairs with a ``main``: all of them, those whose CUDA original ran, the verified ones."""
    ran = mains.filter(pl.Series([cuda_ran(r) for r in mains.iter_rows(named=True)], dtype=pl.Boolean))
    lines = ["| exec_status | pairs with a `main` | CUDA original ran | verified |", "|---|---:|---:|---:|"]
    for status, n in sorted(Counter(mains["exec_status"]).items(), key=lambda kv: (-kv[1], kv[0])):
        ran_n = ran.filter(pl.col("exec_status") == status)
        lines.append(f"| `{status}` | {n} | {ran_n.height} | {ran_n.filter(pl.col('exec_verified')).height} |")
    verified = ran.filter(pl.col("exec_verified")).height
    lines.append(f"| all | {mains.height} | {ran.height} | {verified} ({100 * verified / max(ran.height, 1):.1f}%) |")
    return lines


def import_batches(work: Path, store: Path, batches: list[Path], name: str, out: Path | None, half: str) -> None:
    root = project(work, store, "none", half)
    for batch in batches:
        run_in([sys.executable, "-m", "cass.cli", "gpu-batch", "import", str(batch), "--name", name], root)
    write_params(root, store, f"recorded:{name}", half)
    run_in(["dvc", "repro", "pair"], root)   # the stages before, where export has not built them in this folder
    run_in(["dvc", "repro", "--force", "--single-item", "execute"], root)   # new runs in the store: DVC cannot see them
    params = yaml.safe_load((root / "params.yaml").read_text())
    manifest = pl.read_parquet(root / "data" / "execute" / "manifest.parquet")
    host = json.loads((root / "gpu_hosts" / f"{name}.json").read_text())["host"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    title = f"{SECTION}: {half} half"   # a section per half: the historical section stays as it is
    mains = manifest.filter(pl.col("exec_status") != "no_main")
    text = "\n".join([
        title, "",
        f"Commit {commit}, {date.today()}, GPU {host['gpu']} ({host['sm']}, driver {host['driver']}), kernels "
        f"{'counted' if host.get('launch_counter') else 'not counted'}. HeCBench development copy, {half} half "
        f"({len(load_split()['hecbench'][half])} benchmarks, bench/corpora.yaml): {manifest.height} pairs, "
        f"{mains.height} with a `main`; each program built from the units its Makefile lists and run with its `run:` "
        f"arguments, {params['execute']['runs']} runs a side, limits {json.dumps(params['execute']['limits'])}. "
        "Verified: every run matched (timings masked, other values that vary between the CUDA original's own runs "
        "held to their range) and "
        "launched a kernel on both sides; the share is of the pairs whose CUDA original ran (built, every run "
        "exited 0).", "",
        *verdict_table(mains), "",
        f"Made by `python bench/real_programs.py export --half {half}`, `python -m hosts.gpu run-batch DIR "
        f"--jobs 14` on the GPU host (`--jobs 12` for the bundled batch), `python bench/real_programs.py import "
        f"--half {half} --name {name}`.",
    ])
    if out:
        replace_section(out, title, text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["export", "import"])
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/cass-bench-real-programs"))
    parser.add_argument("--store", type=Path, help="the store (default: WORK/store)")
    parser.add_argument("--batch", type=Path, nargs="+", help="the batch directory (default: WORK/batch); import "
                        "takes several (a batch split to fit a GPU host's time limit)")
    parser.add_argument("--name", default="h100", help="the GPU host's name (import)")
    parser.add_argument("--missing-for", metavar="NAME", help="export only the runs not recorded for GPU host NAME")
    parser.add_argument("--half", choices=["check", "tune"], default="check", help="the half of the split (the tune "
                        "half's failures may be read; the check half is only measured)")
    parser.add_argument("--out", type=Path, help="a Markdown file to put the table in (default: print it only)")
    args = parser.parse_args()
    batches = args.batch or [args.work / "batch"]
    if args.phase == "export":
        export(args.work, args.store or args.work / "store", batches[0], args.half, args.missing_for)
    else:
        import_batches(args.work, args.store or args.work / "store", batches, args.name, args.out, args.half)


if __name__ == "__main__":
    main()
