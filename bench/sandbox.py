"""Benchmark: what the tool sandbox costs. Cold builds of the bundled corpus through every tool stage
(`dvc repro normalize`), alternately in bubblewrap and in the rlimits mode (``CASS_SANDBOX=rlimits``),
each in a fresh project with an empty store; the tools' summed wall and CPU seconds per stage come
from the run reports. Writes the ``## Tool sandbox`` section of bench/RESULTS.md.

    python bench/sandbox.py [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from harness.project import TOOL_ENV, copy_pipeline, run_in, run_report  # noqa: E402

from bench.results import replace_section  # noqa: E402

TOOL_STAGES = ("hipify", "compile_nvidia", "compile_amd", "normalize")   # the stages that run tools
TITLE = "## Tool sandbox (issue 17): `python bench/sandbox.py`"


def build(dest: Path, mode: str) -> dict:
    """One cold build up to normalize in ``mode``; its wall seconds and the tools' seconds per stage."""
    copy_pipeline(dest)
    env = {k: v for k, v in TOOL_ENV.items() if k != "CASS_SANDBOX"}
    if mode == "rlimits":
        env["CASS_SANDBOX"] = "rlimits"
    start = time.perf_counter()
    run_in(["dvc", "repro", "normalize"], dest, env)
    wall = time.perf_counter() - start
    reports = {s: run_report(dest, s) for s in TOOL_STAGES}
    modes = {m for r in reports.values() for m in r["actions"]["jobs_by_sandbox"]}
    if modes != {mode}:
        raise RuntimeError(f"{dest}: asked for {mode}, the run reports say {sorted(modes)}")
    return {"wall_s": wall, **{key: sum(r[key] for r in reports.values())
                               for key in ("tool_jobs", "tool_wall_s", "tool_cpu_s")}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--work", type=Path, default=Path("/var/tmp/cass-bench-sandbox"))
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "RESULTS.md")
    args = parser.parse_args()
    subprocess.run(["rm", "-rf", str(args.work)], check=True)
    runs: dict[str, list[dict]] = {"bwrap": [], "rlimits": []}
    order = [m for r in range(args.rounds) for m in (("bwrap", "rlimits") if r % 2 == 0 else ("rlimits", "bwrap"))]
    for i, mode in enumerate(order):
        runs[mode].append(build(args.work / f"{i}-{mode}", mode))
        print(mode, runs[mode][-1], file=sys.stderr)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    med = {m: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for m, rs in runs.items()}
    rows = [f"| {m} | {med[m]['tool_jobs']:.0f} | {med[m]['wall_s']:.1f} | {med[m]['tool_wall_s']:.1f} | "
            f"{med[m]['tool_cpu_s']:.1f} | {med[m]['tool_wall_s'] / med[m]['tool_jobs'] * 1000:.1f} |" for m in runs]
    ratio = med["bwrap"]["wall_s"] / med["rlimits"]["wall_s"]
    section = "\n".join([
        TITLE, "",
        f"At commit {commit}, this project's machine kind (2 cores). Cold builds of the bundled corpus through "
        "every tool stage (`dvc repro normalize`; hipify, compile_nvidia, compile_amd and normalize run tools), "
        f"{args.rounds} per mode, alternating "
        "(bwrap first in odd rounds, rlimits first in even ones), each in a fresh project with an empty store; "
        "medians. `tool wall/CPU` sum the tools' jobs over those four stages (run reports).", "",
        "| mode | tool jobs | build wall s | tool wall s | tool CPU s | tool wall ms per job |",
        "|---|---:|---:|---:|---:|---:|", *rows, "",
        f"Build wall time in bubblewrap / in the rlimits mode: **{ratio:.3f}**.", ""])
    replace_section(args.out, TITLE, section)
    print(section)


if __name__ == "__main__":
    main()
