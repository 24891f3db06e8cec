"""Benchmark: what rebuilds cost, measured on synthetic corpora of several sizes.

For each size N it makes a fresh copy of the pipeline with a generated corpus and times, with
real tools and real `dvc repro` of every stage (`HF_HUB_OFFLINE=1`): the cold build, a no-op rerun,
one changed source, that change undone (every stage it ran finds its earlier run in DVC's run cache but `analyze` and
`pack_store`, which DVC keeps out of it: close to what DVC itself costs for those stages), another change to the same
source with the warm stage workers off (``CASS_STAGE_WORKERS=0``: every stage in a fresh process, the baseline the
workers are measured against; then undone, unmeasured), one changed filter parameter, and one added sm arch, with the
stages that ran (and those DVC restored from its run cache),
the store's action hits/misses of the five file-level tool stages (TOOL_STAGES, from the run reports), the token
counts computed (not memoised), and ratios against the cold build of the same run. It also times
store lookups (action-key computation plus hit) and checks that two cold builds in two directories
give identical bytes, and prints where the first corpus's one-change rebuild spends its time, stage by
stage. Every scenario, and every stage of that breakdown, also gets the whole machine's busy CPU seconds
(``/proc/stat``: every process, the warm stage workers and the tools they start included; run it on an otherwise idle
machine), and the breakdown says the least wall time that CPU allows on the usable cores, so a wall time can be set
against what the cores allow. With ``--runs N`` every corpus's scenarios run N times, each run in fresh copies (min,
median, max).
Per-machine caches (``$CASS_CACHE``: the built Qwen2.5 tokenizer, the notebooks' chrF scores, the toolchains' file
digests and version outputs) start empty in the benchmark's work folder, one for all its runs, as on one machine
(the first cold build fills the toolchain memos, later runs find them); the tokenizer is built there before any
timing.

    python bench/rebuild.py --sizes 100 500 [--noop-size 10000] [--bundled] [--runs 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]   # the pipeline, and the harness in tests/

from harness.project import TOOL_ENV, copy_pipeline, parquet_hashes, run_in, run_report  # noqa: E402

from bench.gen_corpus import generate  # noqa: E402
from cass.pipeline.stage_worker import SWITCH  # noqa: E402
from cass.training import qwen  # noqa: E402

TOOL_STAGES = ("hipify", "repair", "compile_nvidia", "compile_amd", "normalize")
ENV = {**TOOL_ENV, "HF_HUB_OFFLINE": "1"}


def sh(cmd: list[str], cwd: Path) -> tuple[float, str]:
    """Run a command; return its wall time in seconds and its output (raise with it on failure)."""
    start = time.perf_counter()
    output = run_in(cmd, cwd, ENV)
    return time.perf_counter() - start, output


def busy_cpu_s() -> float:
    """The machine's busy CPU seconds since boot, over all cores (``/proc/stat``: user, nice, system, irq and softirq;
    not idle, iowait, or steal, the time a VM's host gave to other guests)."""
    user, nice, system, _idle, _iowait, irq, softirq, _steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


@dataclass
class Repro:
    """One ``dvc repro``: wall and busy CPU seconds, each stage's, and the stages DVC restored from its run cache."""

    seconds: float
    cpu_s: float
    by_stage: dict[str, float]
    cpu_by_stage: dict[str, float]
    restored: int


def repro_by_stage(cwd: Path, env: dict[str, str] = ENV) -> Repro:
    """``dvc repro`` with its output read as it comes. Each stage's seconds run from its "Running stage" line to the
    next one (to the end for the last): its command, DVC's own work on it (hashing, the run cache, rewriting
    dvc.lock) and DVC's check of any stages it skips before the next. The machine's busy CPU seconds are taken at
    the same marks (:func:`busy_cpu_s`)."""
    start, start_cpu = time.perf_counter(), busy_cpu_s()
    proc = subprocess.Popen(["dvc", "repro"], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines, marks, restored = [], [], 0
    for line in proc.stdout:
        lines.append(line)
        if started := re.match(r"Running stage '(\w+)'", line):
            marks.append((started.group(1), time.perf_counter(), busy_cpu_s()))
        restored += bool(re.match(r"Stage '\w+' is cached - skipping run", line))
    end, end_cpu = time.perf_counter(), busy_cpu_s()
    if proc.wait():
        raise RuntimeError(f"dvc repro in {cwd} failed ({proc.returncode}):\n{''.join(lines)}")
    ends = [(at, cpu) for _, at, cpu in marks[1:]]   # each stage ends where the next starts, the last at the end
    if marks:
        ends.append((end, end_cpu))
    return Repro(end - start, end_cpu - start_cpu,
                 {name: stop - at for (name, at, _), (stop, _) in zip(marks, ends, strict=True)},
                 {name: stop_cpu - cpu for (name, _, cpu), (_, stop_cpu) in zip(marks, ends, strict=True)}, restored)


def make_project(dest: Path, count: int | None, params_edits: dict[str, str] | None = None) -> Path:
    """A pipeline copy with ``count`` generated programs, or the bundled corpus (``count`` None)."""
    copy_pipeline(dest, with_bundled_corpus=count is None)
    if count is not None:
        generate(dest / "corpus", count)
    for old, new in (params_edits or {}).items():
        edit_params(dest, old, new)
    return dest


def edit_params(project: Path, old: str, new: str) -> None:
    path = project / "params.yaml"
    text = path.read_text()
    if old not in text:
        raise ValueError(f"params.yaml has no {old!r}")
    path.write_text(text.replace(old, new, 1))


def actions(project: Path, ran: list[str]) -> dict[str, int]:
    total = {"hits": 0, "misses": 0}
    for stage in (s for s in TOOL_STAGES if s in ran):
        m = run_report(project, stage)["actions"]
        total["hits"] += m["hits"]
        total["misses"] += m["misses"]
    return total


def stage_misses(project: Path, ran: list[str]) -> str:
    return " ".join(f"{s}={run_report(project, s)['actions']['misses']}" for s in TOOL_STAGES if s in ran)


def longest_source_lines(project: Path) -> int:
    return max(p.read_text().count("\n") for p in (project / "corpus").rglob("*.cu"))


def scenarios(work: Path, n: int | None) -> tuple[list[dict], dict[str, str]]:
    """Cold, no-op, one file, that file undone, one param, new arch at corpus size ``n`` (None: the bundled corpus,
    whose changed file is the one the issue tried: one constant); also the cold build's Parquet hashes."""
    project = make_project(work / f"n{n or 'bundled'}", n)
    rows = []
    cold_hashes = {}

    def measure(name: str, env: dict[str, str] = ENV) -> None:
        repro = repro_by_stage(project, env)
        ran = list(repro.by_stage)
        stages = f"{len(ran)} + {repro.restored} restored" if repro.restored else len(ran)
        row = {"N": n or "bundled", "scenario": name, "seconds": repro.seconds, "cpu_s": repro.cpu_s,
               "stages": stages, "hits": "-", "misses": "-", "misses by stage": "no tool stage ran",
               "tokens counted": "-", "by stage": repro.by_stage, "cpu by stage": repro.cpu_by_stage}
        if set(ran) & set(TOOL_STAGES):
            row.update(actions(project, ran), **{"misses by stage": stage_misses(project, ran)})
        if "tokens" in ran:
            row["tokens counted"] = run_report(project, "tokens")["memo"]["misses"]
        rows.append(row)

    measure("cold build")
    cold_hashes.update(parquet_hashes(project))
    measure("no-op dvc repro")
    victim = (project / "corpus" / "cryptography" / "aes128_ctr.cu" if n is None
              else sorted((project / "corpus").rglob("*.cu"))[n // 2])
    original = victim.read_text()

    def change(step: int) -> None:
        if n is None:
            victim.write_text(original.replace("#define AES_ROUNDS 10", f"#define AES_ROUNDS {10 + 2 * step}", 1))
        else:
            victim.write_text(re.sub(r"(\d+\.\d+)f", lambda m: f"{float(m.group(1)) + 0.5 * step:.4f}f", original,
                                     count=1))

    change(1)
    measure("one source changed")
    victim.write_text(original)
    measure("that change undone (run cache)")
    change(2)   # another value: nothing in the run cache
    measure("one source changed, stage workers off", {**ENV, SWITCH: "0"})
    victim.write_text(original)
    repro_by_stage(project)   # back to the built state (from the run cache); not a scenario
    longest = longest_source_lines(project)
    edit_params(project, "max_lines: 7000", f"max_lines: {longest - 1}")
    measure("filter param changed")
    edit_params(project, "archs: [sm_89]", "archs: [sm_89, sm_80]")
    measure("sm_80 arch added")
    return rows, cold_hashes


def lookup_throughput(project: Path, seconds: float = 3.0) -> tuple[int, float]:
    """Action-key computation plus store hit, for every hipify and host-compile action."""
    os.chdir(project)
    from cass.engine.actions import plan
    from cass.pipeline.context import load_params, open_store
    from cass.pipeline.manifests import read_manifest
    from toolchains import load_toolchains

    params = load_params()
    store = open_store(params)
    tcs = load_toolchains(params["amd"]["toolchain"])
    nv, amd = tcs["nvidia"], tcs["amd"]
    rows = read_manifest("dedup").to_dicts()
    items = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for row in rows:
            files = {f["path"]: f["digest"] for f in row["files"]}
            main = row["files"][0]["path"]
            for action in (plan(amd, amd.hipify_step(main), {main: files[main]}),
                           plan(nv, nv.targets(main, params["nvidia"]["archs"], params["nvidia"]["flags"])[0].steps[0],
                                files)):
                if store.lookup(action.key) is None:
                    raise AssertionError(f"expected a hit for {main}")
                items += 1
    return items, items / (time.perf_counter() - start)


def noop_at(work: Path, n: int) -> dict:
    """No-op `dvc repro` over an ingested corpus of ``n`` files (a line filter passes only the
    shortest few percent to the compilers, so the cold build fits the machine)."""
    project = make_project(work / f"noop{n}", n, {"max_lines: 7000": "max_lines: 72"})
    cold, _ = sh(["dvc", "repro"], project)
    noop, _ = sh(["dvc", "repro"], project)
    ingested = json.loads((project / "metrics" / "ingest.json").read_text())["in"]
    compiled = json.loads((project / "metrics" / "compile_nvidia.json").read_text())["in"]
    return {"N": n, "ingested": ingested, "compiled": compiled, "cold": cold, "noop": noop}


def table(runs: list[list[dict]]) -> list[str]:
    """Each scenario's seconds over the runs (min / median / max), the median's ratio to the median cold build of
    its corpus, the median busy CPU seconds and their ratio to the median seconds, and the last run's stages and store
    counts (the same in every run unless a column says otherwise)."""
    lines = ["| N | scenario | min s | median s | max s | ratio to cold | busy CPU s | CPU / wall | stages run "
             "| action hits | action misses | misses by stage | texts tokenised |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    medians = {(r["N"], r["scenario"]): statistics.median(run[i]["seconds"] for run in runs)
               for i, r in enumerate(runs[-1])}
    for i, r in enumerate(runs[-1]):
        seconds = [run[i]["seconds"] for run in runs]
        cpu = statistics.median(run[i]["cpu_s"] for run in runs)
        counts = {c: sorted({str(run[i][c]) for run in runs}) for c in ("stages", "hits", "misses", "tokens counted")}
        shown = {c: " / ".join(v) for c, v in counts.items()}   # differing runs show every value
        lines.append(f"| {r['N']} | {r['scenario']} | {min(seconds):.2f} | {statistics.median(seconds):.2f} | "
                     f"{max(seconds):.2f} | {medians[r['N'], r['scenario']] / medians[r['N'], 'cold build']:.3f} | "
                     f"{cpu:.2f} | {cpu / statistics.median(seconds):.2f} | {shown['stages']} | {shown['hits']} | "
                     f"{shown['misses']} | {r['misses by stage']} | "
                     f"{shown['tokens counted']} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[100, 500],
                        help="generated corpus sizes (none: the bundled corpus alone, no twin or no-op-at-scale runs)")
    parser.add_argument("--noop-size", type=int, default=10000)
    parser.add_argument("--bundled", action="store_true", help="also the bundled corpus (first)")
    parser.add_argument("--runs", type=int, default=1, help="every corpus's scenarios this many times, each run in "
                                                             "a fresh copy (default 1)")
    parser.add_argument("--out", type=Path, default=None, help="also write the tables (markdown) here")
    args = parser.parse_args()
    if not args.bundled and not args.sizes:
        parser.error("nothing to measure: give --bundled or --sizes")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    work = Path(tempfile.mkdtemp(prefix="cass-bench-"))
    ENV["CASS_CACHE"] = str(work / "cache")
    qwen.build(work / "cache" / "tokenizers")   # once per machine in real use: not part of any timing
    lines = [f"Machine: {platform.node()}, {os.cpu_count()} cores, {platform.platform()}; date {date.today()}; "
             f"{args.runs} run(s)", ""]

    runs, hashes = [], {}
    for index in range(args.runs):
        rows, run_dir = [], work / f"run{index + 1}"
        if args.bundled:
            rows += scenarios(run_dir, None)[0]
        for n in args.sizes:
            size_rows, hashes[n] = scenarios(run_dir, n)
            rows += size_rows
        runs.append(rows)
    lines += table(runs)

    changed = [next(r for r in rows if r["scenario"] == "one source changed") for rows in runs]
    stages = {stage: [statistics.median(c[column].get(stage, 0.0) for c in changed)
                      for column in ("by stage", "cpu by stage")] for stage in changed[-1]["by stage"]}
    before_first = [statistics.median(c[total] - sum(c[column].values()) for c in changed)
                    for total, column in (("seconds", "by stage"), ("cpu_s", "cpu by stage"))]
    cpu = statistics.median(c["cpu_s"] for c in changed)
    cores = len(os.sched_getaffinity(0))
    lines += ["", f"Where N={changed[-1]['N']}'s one changed source goes (median over the runs): each stage from its "
              "\"Running stage\" line to the next (its command and DVC's work on it) and the machine's busy CPU "
              f"seconds over that time, longest first; before the first: {before_first[0]:.2f} s, "
              f"{before_first[1]:.2f} CPU s (DVC starting, checking the stages it skips). In all {cpu:.2f} busy CPU "
              f"s: on {cores} cores no schedule of this work, as it is done now, takes less than {cpu / cores:.2f} s "
              "(busy CPU / cores).", "",
              "| stage | seconds | busy CPU s |", "|---|---:|---:|",
              *(f"| {stage} | {sec:.2f} | {cpu_s:.2f} |"
                for stage, (sec, cpu_s) in sorted(stages.items(), key=lambda x: -x[1][0]))]

    if args.sizes:
        n0 = args.sizes[0]
        twin = make_project(work / "twin" / "elsewhere", n0)
        sh(["dvc", "repro"], twin)
        same = parquet_hashes(twin) == hashes[n0]
        lines += ["", f"Two cold builds of N={n0} in two directories: {len(hashes[n0])} Parquet files, "
                      f"sha256 {'identical' if same else 'DIFFERENT'}."]

        noop = noop_at(work, args.noop_size)
        small = next(r for r in runs[-1] if r["N"] == n0 and r["scenario"] == "no-op dvc repro")
        cold = next(r for r in runs[-1] if r["N"] == n0 and r["scenario"] == "cold build")
        lines += ["", "| N ingested | compiled | cold build s | no-op dvc repro s | no-op per 1k files vs N="
                  f"{n0} |", "|---:|---:|---:|---:|---:|",
                  f"| {n0} | {n0} | {cold['seconds']:.1f} | {small['seconds']:.2f} | 1.00 |",
                  f"| {noop['ingested']} | {noop['compiled']} | {noop['cold']:.1f} | {noop['noop']:.2f} | "
                  f"{(noop['noop'] / noop['ingested']) / (small['seconds'] / n0):.2f} |"]

        items, rate = lookup_throughput(work / f"run{args.runs}" / f"n{args.sizes[-1]}")
        lines += ["", f"Store lookups (action-key computation + verified hit), {items} lookups: {rate:,.0f} items/s"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
