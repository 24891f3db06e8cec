"""What DVC itself costs per stage, as a function of the size of dvc.lock, and what starting a stage costs.

A chain of ``--stages`` trivial stages (each one ``python -c`` writing one small file into its output
folder, depending on the one before) is reproduced with ``dvc repro --force`` at several dvc.lock sizes.
The ``--pads`` rows grow the lock the way the pipeline's grew while its stages listed their parameters under
DVC's ``params`` (they are under ``meta.params`` now, outside the lock): every stage declares a section of
params.yaml, whose values DVC copies into the lock; params.yaml itself is the same file at every size (it
holds the sections of all sizes), so only the lock differs. The ``--file-deps`` rows grow it as the pipeline's
lock is grown today: each stage depends on that many small files more (an entry each) and declares no params.
DVC rewrites the whole lock (a round-trip YAML parse and dump) after each stage it runs. Per stage run: the
forced reproduction less a no-op ``dvc repro`` of the same project (DVC starting and checking every stage),
divided by the stages; less that, the same stage command run alone: what DVC adds to each stage it runs. Also
prints the pipeline's own dvc.lock size, to read its per-stage cost off the table, and times DVC's round trip
on that lock. Last, what starting each stage process of a changed source's path costs before it does any work:
Python and the stage's imports (``python -c "import stages.<name>"`` in the repository, the fastest of
``--runs``), for ``--path``: the stages a rebuild ran (default: ``ingest`` and every stage that depends on it,
directly or not, an upper bound: a changed source need not reach all of them).

Usage: ``python bench/dvc_floor.py [--stages 20] [--pads 0 8 17 34] [--file-deps 10] [--runs 3]
[--path STAGE ...]``
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


def chain(project: Path, stages: int, pad_entries: int, params: dict, by_files: bool = False) -> int:
    """Write a git + DVC project with a chain of ``stages`` stages, each declaring its params section of
    ``pad_entries`` entries (none for 0) from ``params``, or with ``by_files`` as many small files as further
    dependencies (each a dvc.lock entry, as the pipeline's are); build it once; return its dvc.lock size in bytes."""
    project.mkdir(parents=True)
    run(["git", "init", "-q"], project)
    run(["dvc", "init", "-q"], project)
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    (project / "pad").mkdir()
    pipeline = {}
    for i in range(stages):
        name = f"s{i}"
        pads = [project / "pad" / f"{name}_{k}" for k in range(pad_entries if by_files else 0)]
        for pad in pads:
            pad.write_text(pad.name)
        deps = [f"out/s{i - 1}"] * bool(i) + [str(pad.relative_to(project)) for pad in pads]
        pipeline[name] = {"cmd": STAGE_CMD.format(name=name), "outs": [f"out/{name}"],
                          **({"params": [f"pad{pad_entries}_{name}"]} if pad_entries and not by_files else {}),
                          **({"deps": deps} if deps else {})}
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


def dependants(first: str = "ingest") -> list[str]:
    """``first`` and every stage of this repository's dvc.yaml that depends on it, directly or not."""
    import networkx as nx
    from dvc.repo import Repo
    from dvc.stage import PipelineStage

    with Repo(str(REPO)) as repo:
        graph = repo.index.graph   # an edge from each stage to the stages it depends on
        stages = [stage for stage in graph if isinstance(stage, PipelineStage)]
        start = next(stage for stage in stages if stage.name == first)
        return sorted([first, *(stage.name for stage in nx.ancestors(graph, start) if stage in stages)])


def stage_start(name: str, runs: int) -> float:
    """The fastest of ``runs`` wall times of a Python process that imports stage ``name``'s entry point."""
    return min(run([sys.executable, "-c", f"import stages.{name}"], REPO) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", type=int, default=20)
    parser.add_argument("--pads", type=int, nargs="+", default=[0, 8, 17, 34],
                        help="params entries per stage (each adds about 90 bytes per stage to dvc.lock)")
    parser.add_argument("--file-deps", type=int, nargs="*", default=[10],
                        help="further rows: each stage depends on this many small files instead (about 95 bytes of "
                             "lock each)")
    parser.add_argument("--runs", type=int, default=3,
                        help="forced reproductions per lock size (median), and starts per stage process (fastest)")
    parser.add_argument("--path", nargs="+", metavar="STAGE",
                        help="the stages whose process start to time: those a rebuild ran (default: ingest and its "
                             "dependants, an upper bound)")
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
    print("| lock grown by | dvc.lock KiB | dvc repro --force s | no-op dvc repro s | per stage run s | "
          "DVC per stage run s |")
    print("|---|---:|---:|---:|---:|---:|")
    per_process = process / args.stages
    params = {f"pad{pad}_s{i}": {f"key{k}": {"value": k, "flags": ["-O2", "-g"]} for k in range(pad)}
              for pad in args.pads for i in range(args.stages)}
    for count, by_files in [*((pad, False) for pad in args.pads), *((files, True) for files in args.file_deps)]:
        project = work / f"{'deps' if by_files else 'pad'}{count}"
        size = chain(project, args.stages, count, params, by_files)
        forced = statistics.median(run(["dvc", "repro", "--force", "-q"], project) for _ in range(args.runs))
        noop = statistics.median(run(["dvc", "repro", "-q"], project) for _ in range(args.runs))
        per_stage = (forced - noop) / args.stages
        grown = f"{count} file deps" if by_files else f"{count} params" if count else "-"
        print(f"| {grown} | {size / 1024:.1f} | {forced:.2f} | {noop:.2f} | {per_stage:.3f} | "
              f"{per_stage - per_process:.3f} |")
    print(f"\nThe stage command alone, {args.stages} times: {process:.2f} s ({per_process:.3f} s each).")
    starts = {name: stage_start(name, args.runs) for name in args.path or dependants()}
    print(f"\nStarting a stage process (Python and `import stages.<name>`, fastest of {args.runs}), for {len(starts)} "
          f"stages: {sum(starts.values()):.2f} s in all\n\n| stage | s |\n|---|---:|")
    for name, seconds in sorted(starts.items(), key=lambda item: -item[1]):
        print(f"| {name} | {seconds:.3f} |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
