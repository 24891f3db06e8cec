"""What DVC itself costs per stage, as a function of the size of dvc.lock.

A chain of ``--stages`` trivial stages (each one ``python -c`` writing one small file into its output
folder, depending on the one before) is reproduced with ``dvc repro --force`` at several dvc.lock sizes.
The lock is grown the way the pipeline's grew while its stages listed their parameters under DVC's
``params`` (they are under ``meta.params`` now, outside the lock): every stage declares a section of
params.yaml, whose values DVC copies into the lock; params.yaml itself is the same file at every size (it
holds the sections of all sizes), so only the lock differs. DVC rewrites the whole lock (a round-trip YAML
parse and dump) after each stage it runs. Per stage run: the forced reproduction less a no-op ``dvc repro`` of the same
project (DVC starting and checking every stage), divided by the stages; less that, the same stage command
run alone: what DVC adds to each stage it runs. Also prints the pipeline's own dvc.lock size, to read its
per-stage cost off the table, and times DVC's round trip on that lock.

Usage: ``python bench/dvc_floor.py [--stages 20] [--pads 0 8 17 34] [--runs 3]``
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))   # the harness the tests and bench/rebuild.py use

from harness.project import TOOL_ENV, run_in  # noqa: E402

STAGE_CMD = "python -c \"import pathlib, sys; p = pathlib.Path(sys.argv[1]); p.mkdir(exist_ok=True); " \
            "(p / 'v').write_text(sys.argv[1])\" out/{name}"


def run(cmd: list[str], cwd: Path) -> float:
    """Wall seconds of ``cmd`` (raises with its output on failure)."""
    start = time.perf_counter()
    run_in(cmd, cwd, TOOL_ENV)
    return time.perf_counter() - start


def chain(project: Path, stages: int, pad_entries: int, params: dict) -> int:
    """Write a git + DVC project with a chain of ``stages`` stages, each declaring its params section of
    ``pad_entries`` entries (none for 0) from ``params``; build it once; return its dvc.lock size in bytes."""
    project.mkdir(parents=True)
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    pipeline = {}
    for i in range(stages):
        name = f"s{i}"
        pipeline[name] = {"cmd": STAGE_CMD.format(name=name), "outs": [f"out/{name}"],
                          **({"params": [f"pad{pad_entries}_{name}"]} if pad_entries else {}),
                          **({"deps": [f"out/s{i - 1}"]} if i else {})}
    (project / "dvc.yaml").write_text(yaml.safe_dump({"stages": pipeline}, sort_keys=False))
    (project / "out").mkdir()
    run(["dvc", "repro", "-q"], project)
    return (project / "dvc.lock").stat().st_size


def lock_round_trip(lock: Path, runs: int = 5) -> float:
    """Median seconds of the round trip DVC makes on ``lock`` after every stage it runs: its ``modify_yaml``
    parse (ruamel, round-trip mode) and dump, in memory."""
    from dvc.utils.serialize._yaml import dumps_yaml, parse_yaml_for_update

    text = lock.read_text()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        dumps_yaml(parse_yaml_for_update(text, str(lock)))
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=20)
    parser.add_argument("--pads", type=int, nargs="+", default=[0, 8, 17, 34],
                        help="params entries per stage (each adds about 90 bytes per stage to dvc.lock)")
    parser.add_argument("--runs", type=int, default=3, help="forced reproductions per lock size (median)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="cass-dvc-floor-"))
    (work / "out").mkdir()
    commands = "; ".join(STAGE_CMD.format(name=f"s{i}") for i in range(args.stages))
    process = statistics.median(run(["sh", "-c", commands], work) for _ in range(args.runs))
    version = subprocess.run(["dvc", "--version"], env=TOOL_ENV, capture_output=True, text=True).stdout.strip()
    own = (REPO / "dvc.lock").stat().st_size
    print(f"Machine: {platform.node()}, {os.cpu_count()} cores; DVC {version}; date {date.today()}; "
          f"{args.stages} stages, median of {args.runs} `dvc repro --force`; this pipeline's dvc.lock: "
          f"{own / 1024:.1f} KiB, DVC's round-trip parse and dump of it {lock_round_trip(REPO / 'dvc.lock'):.3f} s "
          f"(median of 5)\n")
    print("| dvc.lock KiB | dvc repro --force s | no-op dvc repro s | per stage run s | DVC per stage run s |")
    print("|---:|---:|---:|---:|---:|")
    per_process = process / args.stages
    params = {f"pad{pad}_s{i}": {f"key{k}": {"value": k, "flags": ["-O2", "-g"]} for k in range(pad)}
              for pad in args.pads for i in range(args.stages)}
    for pad in args.pads:
        project = work / f"pad{pad}"
        size = chain(project, args.stages, pad, params)
        forced = statistics.median(run(["dvc", "repro", "--force", "-q"], project) for _ in range(args.runs))
        noop = statistics.median(run(["dvc", "repro", "-q"], project) for _ in range(args.runs))
        per_stage = (forced - noop) / args.stages
        print(f"| {size / 1024:.1f} | {forced:.2f} | {noop:.2f} | {per_stage:.3f} | {per_stage - per_process:.3f} |")
    print(f"\nThe stage command alone, {args.stages} times: {process:.2f} s ({per_process:.3f} s each).")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
