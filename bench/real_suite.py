"""Benchmark: the four baselines on the real-program suite (issue 40), on an NVIDIA GPU host reached by copying files.

``export`` builds every baseline's translations of every task (hipcc for the compile rate, HIP's NVIDIA back end for
the program) and writes one batch of their runs on the hidden arguments (the runs the store lacks for ``--name``);
the GPU host runs it (``python -m toolchains.gpu run-batch DIR --jobs N``); ``import`` records the runs and scores
every baseline with the evaluator, then prints (``--out``: puts in bench/RESULTS.md) the table overall and per
domain, with the commit, the GPU and the commands. Run in a project directory whose params.yaml names the store
and the mirror (``benchmark.real.source``); the suite is ``translation_bench/real`` of this checkout.

    python bench/real_suite.py export --project DIR --batch BATCH [--name HOST]
    python bench/real_suite.py import --project DIR --batch BATCH [BATCH ...] --name HOST [--out bench/RESULTS.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from bench.corpora import load_split  # noqa: E402
from bench.results import replace_section  # noqa: E402
from cass.benchmark.baselines import BASELINES, real_baseline  # noqa: E402
from cass.benchmark.evaluate import summarize  # noqa: E402
from cass.benchmark.real_evaluate import SOURCE_ERRORS, evaluate_real  # noqa: E402
from cass.benchmark.real_programs import build_task_programs, load_suite  # noqa: E402
from cass.benchmark.real_tasks import MANIFEST, read_manifest  # noqa: E402
from cass.benchmark.tasks import Prediction  # noqa: E402
from cass.execution.batch import import_results, not_recorded, write_batch  # noqa: E402
from cass.execution.hosts import resolve_host  # noqa: E402
from cass.pipeline.context import load_params, open_store  # noqa: E402
from cass.pipeline.metrics import percent  # noqa: E402

SECTION = "## The real-program suite's baselines (issue 40)"


def suite(store, params: dict) -> tuple[dict, pl.DataFrame]:
    tasks, problems, references = load_suite(store, params, REPO)
    if problems:
        raise SystemExit(f"{len(problems)} tasks do not check against the mirror: {next(iter(problems.values()))}")
    return tasks, references


CHEATS = {"cheat: visible answer": "visible", "cheat: hidden answer": "hidden"}
"""Programs that print a recorded answer of the CUDA original (the visible one a prompt may show, or the hidden one
no prompt shows) and launch one empty kernel: in place of the main file of the pipeline's translation."""
CHEAT = """#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void token() {}
static const unsigned char answer[] = {%s};
int main() {
  hipLaunchKernelGGL(token, dim3(1), dim3(1), 0, 0);
  hipDeviceSynchronize();
  fwrite(answer, 1, sizeof answer, stdout);
  return 0;
}
"""


def predictions_of(name: str, store, params: dict, tasks: dict, references: pl.DataFrame) -> list[Prediction]:
    """A baseline's predictions, or a cheat's (:data:`CHEATS`)."""
    if name not in CHEATS:
        return real_baseline(name, store, params, tasks)
    cheats = []
    for p in real_baseline("pipeline", store, params, tasks):
        task = tasks[p.task_id]
        arg_set = "hidden" if CHEATS[name] == "hidden" and task.hidden_differs else "visible"
        answer = references.filter((pl.col("task_id") == task.id) & (pl.col("arg_set") == arg_set)
                                   & (pl.col("run") == 1))["stdout"][0]
        cheats.append(Prediction(task.id, "source", {**p.prediction, task.main: CHEAT % ",".join(map(str, answer))}))
    return cheats


def export(params: dict, batch: Path, name: str | None) -> None:
    store = open_store(params)
    tasks, references = suite(store, params)
    planned = set()
    for baseline in (*BASELINES, *CHEATS):
        _, report = evaluate_real(store, params, tasks, references,
                                  predictions_of(baseline, store, params, tasks, references), None, build_programs=True)
        planned |= {r for runs in report["planned"].values() for r in runs}
        print(f"{baseline}: {len(report['binaries'])} programs built", flush=True)
    if name:
        planned = not_recorded(store, planned, resolve_host(f"recorded:{name}"))
    runs = write_batch(store, batch, planned, params["execute"])
    print(f"{runs} runs of {len({r.binary for r in planned})} binaries in {batch}")


def programs(store, params: dict, tasks: dict, predictions: list[Prediction]) -> dict[str, str | None]:
    """Each prediction's program built through HIP's NVIDIA back end (its digest, None where it does not build)."""
    files = {p.task_id: tasks[p.task_id].overlay({path: store.put(text.encode("utf-8", SOURCE_ERRORS))
                                                  for path, text in p.prediction.items()}) for p in predictions}
    built, _ = build_task_programs(store, params["execute"], {t: ("hip", tasks[t], f) for t, f in files.items()},
                                   params["executor"]["workers"] or None)
    return {t: b.binary for t, b in built.items()}


def row(name: str, summary: dict, same_text: int, same_binary: int) -> str:
    s = summary["by_domain"]["all"]["source"]
    ratio = s.get("median_runtime_ratio")
    return (f"| {name} | {s['n']} | {same_text} | {same_binary} | {percent(s['compile_rate'])} | "
            f"{percent(s['accuracy'])} | "
            f"{percent(s['accuracy_tolerant'])} | {'-' if ratio is None else f'{ratio:.2f}'} | "
            f"{s['mean_chrf'] if s['mean_chrf'] is not None else '-'} | "
            + ", ".join(f"{v} {n}" for v, n in sorted(s["verdicts"].items(), key=lambda kv: -kv[1])) + " |")


def score(params: dict, batches: list[Path], name: str, out: Path | None) -> None:
    store = open_store(params)
    for batch in batches:
        import_results(store, params["execute"], batch, name)
    tasks, references = suite(store, params)
    host = resolve_host(f"recorded:{name}")
    summaries, same_text, same_binary, passed = {}, {}, {}, {}
    halves = {half: set(names) for half, names in load_split()["hecbench"].items()}
    by_half: dict[str, dict[str, tuple[int, int]]] = {half: {} for half in halves}
    human = {p.task_id: p.prediction for p in real_baseline("reference", store, params, tasks)}
    human_binaries = programs(store, params, tasks, real_baseline("reference", store, params, tasks))
    for baseline in (*BASELINES, *CHEATS):
        predictions = predictions_of(baseline, store, params, tasks, references)
        same_text[baseline] = sum(all(p.prediction.get(path) == text for path, text in human[p.task_id].items())
                                  for p in predictions)
        binaries = programs(store, params, tasks, predictions)
        same_binary[baseline] = sum(b is not None and b == human_binaries[t] for t, b in binaries.items())
        rows, _ = evaluate_real(store, params, tasks, references, predictions, host)
        for half, names in halves.items():
            scored = [r for r in rows if r["baseline_reference"] == (baseline == "reference")
                      and tasks[r["task_id"]].benchmark in names]
            by_half[half][baseline] = (sum(r["verdict"] == "pass" for r in scored), len(scored))
        if baseline in CHEATS:
            passed[baseline] = sorted(r["task_id"] for r in rows if r["verdict"].startswith("pass")
                                      and not r["baseline_reference"])
        summaries[baseline] = summarize([{**r, "baseline_reference": False} for r in rows
                                         if r["baseline_reference"] == (baseline == "reference")], tasks)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    manifest = read_manifest(REPO / MANIFEST)[0]
    full = json.loads((REPO / MANIFEST).read_text())
    left = full["left_out_by_reason"]
    domains: dict[str, dict] = defaultdict(dict)
    for baseline, summary in summaries.items():
        for domain, kinds in summary["by_domain"].items():
            domains[domain][baseline] = kinds["source"]
    text = "\n".join([
        SECTION, "",
        f"Commit {commit}, {date.today()}, GPU {host.host.gpu} ({host.host.sm}, driver {host.host.driver}; kernels "
        f"{'counted' if host.host.launch_counter else 'not counted'}). The real-program suite: {len(tasks)} tasks of "
        f"{manifest['repository']} at the commit params.yaml pins (translation_bench/real/README.md). Each translation "
        f"compiled by hipcc for {params['amd']['archs']} (the compile rate), built through HIP's NVIDIA back end and "
        f"run {params['benchmark']['real']['runs']} time(s) on the hidden arguments (limit "
        f"{params['execute']['limits']['wall_s']} s); a pass needs the output of the CUDA original's recorded runs "
        "(fields that vary between them masked) and its kernel count in every run. `reference` is the human port, "
        "the suite's ceiling; `pipeline` is hipify-perl with the repair layer; `identity` is the CUDA files "
        "unchanged. Same text: tasks whose every file the human port gives is byte-identical in the baseline's "
        "translation; same program: tasks whose translation builds, through HIP's NVIDIA back end, to the very "
        "binary the human port builds to (what differs is comments, spelling of includes, or code that the NVIDIA "
        "platform compiles alike: the runs on NVIDIA cannot tell such translations apart). chrF: the whole "
        "program's text against the human port's. Runtime: the median over the tasks "
        "both passed of the translation's wall time over the human port's (one run each; a translation that builds "
        "to the human port's very binary shares its run, ratio 1). The cheats are the pipeline's translation with "
        "its main file replaced by a program that launches one empty kernel and prints the CUDA original's recorded "
        "output for the visible arguments (what a prompt may show) or for the hidden ones (what none shows); the "
        "tasks a cheat passed: " + "; ".join(f"{c}: {', '.join(ids) or 'none'}" for c, ids in passed.items())
        + " (a kernel count that varies between the CUDA original's own runs is masked).", "",
        "| baseline | tasks | same text | same program | compiles (gfx) | accuracy | accuracy (tolerant) "
        "| runtime / human | chrF | verdicts |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(row(b, s, same_text[b], same_binary[b]) for b, s in summaries.items()), "",
        "Accuracy per domain:", "",
        "| domain | tasks | " + " | ".join(BASELINES) + " |", "|---|---:|" + "---:|" * len(BASELINES),
        *(f"| {d} | {by['reference']['n']} | " + " | ".join(percent(by[b].get("accuracy")) for b in BASELINES) + " |"
          for d, by in sorted(domains.items(), key=lambda kv: (kv[0] != "all", -kv[1]["reference"]["n"]))), "",
        "Accuracy per half of the development split (bench/corpora.yaml). The repair rules and the output "
        "comparison were written from the tune half only (issues 37, 39); the suite's own rules (`foreign_header`, "
        "`no_output_signal`, the kernel count) were written after a review that read both halves, so for those the "
        "check half is not untouched:", "",
        "| half | tasks | " + " | ".join(BASELINES) + " |", "|---|---:|" + "---:|" * len(BASELINES),
        *(f"| {half} | {by_half[half]['reference'][1]} | "
          + " | ".join(f"{100 * p / n:.1f}% ({p})" if n else "-" for p, n in (by_half[half][b] for b in BASELINES))
          + " |" for half in ("check", "tune")), "",
        f"The suite: {len(tasks) + sum(left.values())} benchmarks of the copy have a CUDA and a HIP folder; "
        f"{len(tasks)} are tasks, {sum(t.hidden_differs for t in tasks.values())} with hidden arguments that differ "
        f"from the visible ones and {sum(bool(t.hidden_output_differs) for t in tasks.values())} whose hidden "
        "arguments print another answer (masked); left out: "
        + ", ".join(f"`{r}` {n}" for r, n in left.items()) + ". References recorded on "
        f"{full['references_host']['gpu']} (`cass bench-tasks record`).", "",
        f"Made by `python bench/real_suite.py export`, `python -m toolchains.gpu run-batch DIR --jobs 15` on the GPU "
        f"host, `python bench/real_suite.py import --name {name}`.",
    ])
    if out:
        replace_section(out, SECTION, text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["export", "import"])
    parser.add_argument("--project", type=Path, required=True, help="the project directory (its params.yaml)")
    parser.add_argument("--batch", type=Path, nargs="+", required=True)
    parser.add_argument("--name", help="the GPU host (export: leave out what it ran before; import: record as)")
    parser.add_argument("--out", type=Path, help="a Markdown file to put the table in")
    args = parser.parse_args()
    os.chdir(args.project)
    params = load_params()
    if args.phase == "export":
        export(params, args.batch[0], args.name)
    else:
        score(params, args.batch, args.name, args.out and (REPO / args.out).resolve())


if __name__ == "__main__":
    main()
