"""Benchmark: the baselines and cheats on the real-program suite (issues 40 and 48), on an NVIDIA GPU host reached
by copying files.

``export`` builds every baseline's translations of every task (hipcc for the compile rate, HIP's NVIDIA back end for
the program) and writes one batch of their runs on the visible and hidden arguments (the runs the store lacks for
``--name``); the GPU host runs it (``python -m hosts.gpu run-batch DIR --jobs N``); ``import`` records the runs
and scores every baseline with the evaluator, then prints (``--out``: puts in bench/RESULTS.md) the table overall,
on the hard split (the tasks whose human port does not build to the very program hipify-perl's output builds to),
per domain and per half, with the commit, the GPU and the commands. Run in a project directory whose params.yaml
names the store and the mirror (``benchmark.real.source``); the suite is ``translation_bench/real`` of this
checkout.

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
from cass.benchmark import REAL_BASELINES  # noqa: E402
from cass.benchmark.baselines import MUTANT_DRAWS, MutantChoice, choose_mutants, real_baseline  # noqa: E402
from cass.benchmark.evaluate import summarize  # noqa: E402
from cass.benchmark.real_evaluate import SOURCE_ERRORS, evaluate_real  # noqa: E402
from cass.benchmark.real_programs import build_task_programs, load_suite  # noqa: E402
from cass.benchmark.real_tasks import MANIFEST, read_manifest  # noqa: E402
from cass.benchmark.tasks import Prediction  # noqa: E402
from cass.engine.placement import Placement  # noqa: E402
from cass.execution.batch import import_results, not_recorded, write_batch  # noqa: E402
from cass.execution.hosts import resolve_host  # noqa: E402
from cass.pipeline.context import load_params, open_store  # noqa: E402
from cass.pipeline.metrics import percent  # noqa: E402

SECTION = "## The real-program suite's baselines (issues 40 and 48)"


def suite(store, params: dict) -> tuple[dict, pl.DataFrame]:
    tasks, problems, references = load_suite(store, params, REPO)
    if problems:
        raise SystemExit(f"{len(problems)} tasks do not check against the mirror: {next(iter(problems.values()))}")
    return tasks, references


CHEATS = {"cheat: visible answer": ("visible", False), "cheat: hidden answer": ("hidden", False),
          "cheat: visible answer, as many kernels": ("visible", True)}
"""Programs that print a recorded answer of the CUDA original (the visible one a prompt may show, or the hidden one
no prompt shows) whatever their arguments, and launch one empty kernel, or as many as the CUDA original launches on
the visible arguments: in place of the main file of the pipeline's translation."""
CHEAT = """#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void token() {}
static const unsigned char answer[] = {%s};
int main() {
  for (int i = 0; i < %d; ++i) hipLaunchKernelGGL(token, dim3(1), dim3(1), 0, 0);
  hipDeviceSynchronize();
  fwrite(answer, 1, sizeof answer, stdout);
  return 0;
}
"""
BASELINES = (*REAL_BASELINES, *CHEATS)


def predictions_of(name: str, store, params: dict, tasks: dict, references: pl.DataFrame,
                   host) -> tuple[list[Prediction], MutantChoice | None]:
    """A baseline's predictions, or a cheat's (:data:`CHEATS`); for ``mutant`` also its choice, made with the
    selection runs ``host`` holds."""
    if name == "mutant":
        choice = choose_mutants(store, params, tasks, host)
        return choice.predictions, choice
    if name not in CHEATS:
        return real_baseline(name, store, params, tasks), None
    arg_set, counted = CHEATS[name]
    cheats = []
    for p in real_baseline("pipeline", store, params, tasks):
        task = tasks[p.task_id]
        printed = references.filter((pl.col("task_id") == task.id) & (pl.col("run") == 1)
                                    & (pl.col("arg_set") == (arg_set if task.hidden_differs else "visible")))
        visible = references.filter((pl.col("task_id") == task.id) & (pl.col("run") == 1)
                                    & (pl.col("arg_set") == "visible"))
        kernels = visible["kernel_launches"][0] if counted else 1
        cheats.append(Prediction(task.id, "source", {**p.prediction, task.main: CHEAT % (
            ",".join(map(str, printed["stdout"][0])), kernels)}))
    return cheats, None


def export(params: dict, batch: Path, name: str | None) -> None:
    store = open_store(params)
    tasks, references = suite(store, params)
    planned, host = set(), name and resolve_host(f"recorded:{name}")
    for baseline in BASELINES:
        predictions, choice = predictions_of(baseline, store, params, tasks, references, host)
        _, report = evaluate_real(store, params, tasks, references, predictions, None, build_programs=True)
        planned |= {r for runs in report["planned"].values() for r in runs} | (choice.planned if choice else set())
        print(f"{baseline}: {len(report['binaries'])} programs built", flush=True)
        if choice:
            print(choice.said(), flush=True)
    if host:
        planned = not_recorded(store, planned, host)
    runs = write_batch(store, batch, planned, params["execute"])
    print(f"{runs} runs of {len({r.binary for r in planned})} binaries in {batch}")


def programs(store, params: dict, tasks: dict, predictions: list[Prediction]) -> dict[str, str | None]:
    """Each prediction's program built through HIP's NVIDIA back end (its digest, None where it does not build)."""
    files = {p.task_id: tasks[p.task_id].overlay({path: store.put(text.encode("utf-8", SOURCE_ERRORS))
                                                  for path, text in p.prediction.items()}) for p in predictions}
    built, _ = build_task_programs(store, params["execute"], {t: ("hip", tasks[t], f) for t, f in files.items()},
                                   Placement.of(params))
    return {t: b.binary for t, b in built.items()}


def row(name: str, summary: dict, same_text: int, same_binary: int, hard: tuple[int, int]) -> str:
    s = summary["by_domain"]["all"]["source"]
    ratio = s.get("median_runtime_ratio")
    return (f"| {name} | {s['n']} | {same_text} | {same_binary} | {percent(s['compile_rate'])} | "
            f"{percent(s['accuracy'])} | {percent(s['accuracy_tolerant'])} | "
            f"{f'{100 * hard[0] / hard[1]:.1f}% ({hard[0]}/{hard[1]})' if hard[1] else '-'} | "
            f"{'-' if ratio is None else f'{ratio:.2f}'} | {s['mean_chrf'] if s['mean_chrf'] is not None else '-'} | "
            + ", ".join(f"{v} {n}" for v, n in sorted(s["verdicts"].items(), key=lambda kv: -kv[1])) + " |")


def score(params: dict, batches: list[Path], name: str, out: Path | None) -> None:
    store = open_store(params)
    for batch in batches:
        import_results(store, params["execute"], batch, name)
    tasks, references = suite(store, params)
    host = resolve_host(f"recorded:{name}")
    summaries, same_text, same_binary, passed, hard_pass, mutants = {}, {}, {}, {}, {}, None
    halves = {half: set(names) for half, names in load_split()["hecbench"].items()}
    by_half: dict[str, dict[str, tuple[int, int]]] = {half: {} for half in halves}
    human = {p.task_id: p.prediction for p in real_baseline("reference", store, params, tasks)}
    human_binaries = programs(store, params, tasks, real_baseline("reference", store, params, tasks))
    hipified = programs(store, params, tasks, real_baseline("hipify-perl", store, params, tasks))
    hard = {t for t, b in human_binaries.items() if b is None or hipified.get(t) != b}
    for baseline in BASELINES:
        predictions, choice = predictions_of(baseline, store, params, tasks, references, host)
        mutants = choice or mutants
        same_text[baseline] = sum(all(p.prediction.get(path) == text for path, text in human[p.task_id].items())
                                  for p in predictions)
        binaries = programs(store, params, tasks, predictions)
        same_binary[baseline] = sum(b is not None and b == human_binaries[t] for t, b in binaries.items())
        rows, _ = evaluate_real(store, params, tasks, references, predictions, host)
        scored = [r for r in rows if r["baseline_reference"] == (baseline == "reference")]
        for half, names in halves.items():
            mine = [r for r in scored if tasks[r["task_id"]].benchmark in names]
            by_half[half][baseline] = (sum(r["verdict"] == "pass" for r in mine), len(mine))
        hard_pass[baseline] = (sum(r["verdict"] == "pass" for r in scored if r["task_id"] in hard),
                               sum(r["task_id"] in hard for r in scored))
        if baseline in (*CHEATS, "mutant"):
            passed[baseline] = sorted(r["task_id"] for r in scored if r["verdict"].startswith("pass"))
        summaries[baseline] = summarize([{**r, "baseline_reference": False} for r in scored], tasks)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    manifest = read_manifest(REPO / MANIFEST)[0]
    full = json.loads((REPO / MANIFEST).read_text())
    left = full["left_out_by_reason"]
    domains: dict[str, dict] = defaultdict(dict)
    for baseline, summary in summaries.items():
        for domain, kinds in summary["by_domain"].items():
            domains[domain][baseline] = kinds["source"]
    shown = REAL_BASELINES
    text = "\n".join([
        SECTION, "",
        f"Commit {commit}, {date.today()}, GPU {host.host.gpu} ({host.host.sm}, driver {host.host.driver}; kernels "
        f"{'counted' if host.host.launch_counter else 'not counted'}). The real-program suite: {len(tasks)} tasks of "
        f"{manifest['repository']} at the commit params.yaml pins (translation_bench/real/README.md). Each translation "
        f"compiled by hipcc for {params['amd']['archs']} (the compile rate), built through HIP's NVIDIA back end and "
        f"run {params['benchmark']['real']['runs']} time(s) on the visible and on the hidden arguments (limit "
        f"{params['execute']['limits']['wall_s']} s); a pass needs both sets to pass against the CUDA original's "
        f"{params['execute']['runs']} recorded runs of each (timings masked, other numbers that vary between them "
        "held to their range, integers exact, the rest within the tolerance) and as many kernel launches as the CUDA "
        "original makes. `reference` is the human port, the suite's ceiling; `pipeline` is hipify-perl with the "
        "repair layer; `rocm-scribe` is the PyPI translator (1.0.3, gfx1100, wave32), measured as it is, not tuned "
        "against; `identity` is the CUDA files unchanged; `mutant` is per task the first of "
        f"{MUTANT_DRAWS} mutants of the human port (bench/mutation.py's operators, the default seed) that builds to "
        "another program and is shown to behave otherwise than the port on the selection arguments (the hidden set "
        "halved, never judged), its one run there held to the port's runs with no tolerance; tasks without one: "
        f"{mutants.summary() if mutants else '-'}. Same text: tasks "
        "whose every file the human port gives is byte-identical in the baseline's translation; same program: tasks "
        "whose translation builds, through HIP's NVIDIA back end, to the very binary the human port builds to. "
        f"**Hard split**: the {len(hard)} tasks whose human port does not build to the very program hipify-perl's "
        "output builds to (on the others, the runs cannot tell the human port from hipify-perl). chrF: the whole "
        "program's text against the human port's. Runtime: the median over the tasks both passed of the "
        "translation's wall time over the human port's, on the hidden arguments. The cheats are the pipeline's "
        "translation with its main file replaced by a program that prints the CUDA original's recorded output for "
        "the visible arguments (what a prompt may show) or for the hidden ones (what none shows) whatever its "
        "arguments, and launches one empty kernel or, for the third, as many as the CUDA original launches on the "
        "visible arguments. Tasks a cheat or the mutant passed: "
        + "; ".join(f"{c}: {', '.join(ids) or 'none'}" for c, ids in passed.items()) + ".", "",
        "| baseline | tasks | same text | same program | compiles (gfx) | accuracy | accuracy (tolerant) "
        "| hard split | runtime / human | chrF | verdicts |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(row(b, s, same_text[b], same_binary[b], hard_pass[b]) for b, s in summaries.items()), "",
        "Accuracy per domain:", "",
        "| domain | tasks | " + " | ".join(shown) + " |", "|---|---:|" + "---:|" * len(shown),
        *(f"| {d} | {by['reference']['n']} | " + " | ".join(percent(by[b].get("accuracy")) if b in by else "-"
                                                          for b in shown) + " |"
          for d, by in sorted(domains.items(), key=lambda kv: (kv[0] != "all", -kv[1]["reference"]["n"]))), "",
        "Accuracy per half of the development split (bench/corpora.yaml). The repair rules were written from the "
        "tune half only (issues 37, 39), and so were the output comparison's rules (issue 48); the suite's own rules "
        "(`foreign_header`, `no_output_signal`, `no_hidden_input`, the kernel count) were written after a review "
        "that read both halves, so for those the check half is not untouched:", "",
        "| half | tasks | " + " | ".join(shown) + " |", "|---|---:|" + "---:|" * len(shown),
        *(f"| {half} | {by_half[half]['reference'][1]} | "
          + " | ".join(f"{100 * p / n:.1f}% ({p})" if n else "-" for p, n in (by_half[half][b] for b in shown))
          + " |" for half in ("check", "tune")), "",
        f"The suite: {len(tasks) + sum(left.values())} benchmarks of the copy have a CUDA and a HIP folder; "
        f"{len(tasks)} are tasks, each with hidden arguments that change the CUDA original's output "
        f"({sum(bool(t.hidden_output_differs) for t in tasks.values())} tasks) or its kernel count "
        f"({sum(bool(t.hidden_kernels_differ) for t in tasks.values())}); left out: "
        + ", ".join(f"`{r}` {n}" for r, n in left.items()) + ". References recorded on "
        f"{full['references_host']['gpu']} (`cass bench-tasks record`).", "",
        "Made by `python bench/real_suite.py export`, `python -m hosts.gpu run-batch DIR` on the GPU host, "
        f"`python bench/real_suite.py import --name {name}`.",
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
    args.batch = [b.resolve() for b in args.batch]   # named from where the command runs
    os.chdir(args.project)
    params = load_params()
    if args.phase == "export":
        export(params, args.batch[0], args.name)
    else:
        score(params, args.batch, args.name, args.out and (REPO / args.out).resolve())


if __name__ == "__main__":
    main()
