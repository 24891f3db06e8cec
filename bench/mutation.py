"""Benchmark: mutation analysis of the execution oracle (issue 48; :mod:`cass.execution.mutation`).

Mutants of the programs each oracle verifies, built here, run on an NVIDIA GPU host reached by copying files, and
judged by the oracle that verified the unmutated program:

- ``--pairs DIR ...``: project copies whose ``execute`` stage ran on the recorded GPU host ``--name`` (the HeCBench
  development copy's halves, the bundled corpus): the HIP side of every verified pair (the ``execute`` stage's
  oracle);
- ``--suite DIR``: a project directory whose params.yaml names the store and the mirror of the real-program suite
  (``translation_bench/real`` of this checkout): every task's human port (the benchmark's oracle, on the visible and
  hidden arguments).

``--count`` mutants a program (default 3), drawn with ``--seed`` (:func:`cass.text.mutation.sample_mutants`), each
run once per argument set with the limits of the unmutated program. Phases::

    python bench/mutation.py export --pairs DIR ... --suite DIR --name HOST --batch BATCH
    python -m hosts.gpu run-batch BATCH --jobs N            # on the GPU host
    python bench/mutation.py score --pairs DIR ... --suite DIR --name HOST --batch BATCH ... [--before WORKTREE]
        [--out bench/RESULTS.md] [--survivors FILE]

``score`` imports the runs, judges every mutant with this checkout's oracle and, with ``--before``, with the oracle
of another checkout (a ``git worktree`` of an earlier commit: its own code judges the same runs, with as many CUDA
runs as it calibrated on and its own references), then prints the scores per suite and half (``--out``: a section
of bench/RESULTS.md) and writes every surviving mutant to ``--survivors`` (JSON) for reading.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, fields
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ORACLE_FROM = next((sys.argv[i + 1] for i, a in enumerate(sys.argv[:-1]) if a == "--oracle-from"), None)
sys.path[:0] = [ORACLE_FROM] if ORACLE_FROM else [str(REPO)]   # judging with another checkout's cass: it alone

SECTION = "## Mutation analysis of the oracle (issue 48)"
PAIR_RUNS = 1
"""Runs of a mutant per argument set (the oracle calibrates on the CUDA original's runs; one run of the candidate
is what the benchmark makes of a prediction)."""


def read_yaml(path: Path) -> dict:
    import yaml
    return yaml.safe_load(path.read_text())


def collect(projects: list[Path], suite: Path | None, count: int, seed: str, workers: int | None,
            origins: list[str] | None = None, candidates: bool = False):
    """The mutants of every verified pair of ``projects`` (with ``candidates``, of every pair the oracle could
    verify: :func:`candidate`) and every task of ``suite``, built; with what judging them needs: the pairs' execute
    rows by sample id, and the suite's tasks."""
    import polars as pl

    from bench.corpora import load_split
    from cass.benchmark.baselines import mutant_predictions
    from cass.benchmark.real_evaluate import evaluate_real
    from cass.benchmark.real_programs import load_suite
    from cass.engine.placement import Placement
    from cass.execution.mutation import pair_mutants, settle_suite, suite_mutants
    from cass.pipeline.context import open_store

    mutants, rows, originals, tasks, store = [], {}, [], {}, None
    for project in projects:
        params = read_yaml(project / "params.yaml")
        params["store"]["dir"] = str(project / params["store"]["dir"])   # a relative one is the project's
        store = store or open_store(params)
        if Path(params["store"]["dir"]).resolve() != store.root.resolve():
            raise SystemExit(f"{project}: its store {params['store']['dir']} is not the others' ({store.root})")
        executed = pl.read_parquet(project / "data" / "execute" / "manifest.parquet")
        pairs = {(r["origin"], r["path"]): r for r in pl.read_parquet(project / "data" / "pair" / "manifest.parquet")
                 .iter_rows(named=True)}
        if origins:
            executed = executed.filter(pl.col("origin").is_in(origins))
        verified = [r for r in executed.iter_rows(named=True)
                    if r["exec_verified"] or (candidates and candidate(r))]
        rows |= {r["sample_id"]: {**r, "_project": str(project)} for r in verified}
        originals += [r for r in executed.iter_rows(named=True) if cuda_ran(r) and r["hip_runs"]]
        found = pair_mutants(store, params, verified, pairs, count, seed, Placement.local(workers))
        print(f"{project}: {len(verified)} verified pairs, {len(found)} mutants, "
              f"{sum(m.binary is not None for m in found)} built", flush=True)
        mutants += found
    suite_rows: list = []
    if suite is not None:
        os.chdir(suite)
        params = read_yaml(suite / "params.yaml")
        store = store or open_store(params)
        tasks, problems, references = load_suite(store, params, REPO)
        if problems:
            raise SystemExit(f"{len(problems)} tasks do not check against the mirror: {next(iter(problems.values()))}")
        halves = {b: half for half, names in load_split()["hecbench"].items() for b in names}
        found = suite_mutants(store, tasks, halves, count, seed)
        predictions = mutant_predictions(store, tasks, found)
        suite_rows, report = evaluate_real(store, params, tasks, references, predictions, None, build_programs=True)
        settle_suite(found, suite_rows, report["programs"])
        print(f"suite: {len(tasks)} tasks, {len(found)} mutants, {sum(m.binary is not None for m in found)} built",
              flush=True)
        mutants += found
    return store, mutants, rows, originals, tasks


def candidate(row: dict) -> bool:
    """Whether a pair could be verified by an oracle that observes more than its output: its outputs matched, or told
    nothing (``no_signal``)."""
    from cass.execution.verify import MATCHES
    return row["exec_status"] in (*MATCHES, "no_signal")


def cuda_ran(row: dict) -> bool:
    """Whether a pair's CUDA original built and every run of it exited 0 (the verified share's denominator)."""
    runs = row["cuda_runs"] or []
    return bool(row["cuda_program"] and runs and all(r["verdict"] == "exited" and r["exit_code"] == 0 for r in runs))


def planned_runs(mutants: list, rows: dict, tasks: dict, params: dict) -> dict[int, dict[str, list]]:
    """Per mutant to run, its runs by argument set (pairs: by their arguments, with their project's limits)."""
    from cass.benchmark.real_evaluate import arg_sets
    from cass.benchmark.real_programs import task_runs
    from cass.execution.mutation import planned_pair_runs

    execute = params["execute"]
    planned = {}
    for project in sorted({rows[m.program]["_project"] for m in mutants if m.suite == "pairs"}):
        at = [i for i, m in enumerate(mutants) if m.suite == "pairs" and rows[m.program]["_project"] == project]
        limits = read_yaml(Path(project) / "params.yaml")["execute"]
        for i, runs in planned_pair_runs(rows, [mutants[j] for j in at], limits, PAIR_RUNS).items():
            planned[at[i]] = {json.dumps(args): [r for r in runs if r.invocation.args == args]
                              for args in {run.invocation.args for run in runs}}
    for i, mutant in enumerate(mutants):
        if mutant.suite == "suite" and mutant.binary and not mutant.equivalent:
            task = tasks[mutant.program]
            planned[i] = {s: task_runs(task, mutant.binary, s, params["benchmark"]["real"]["runs"], execute)
                          for s in arg_sets(task)}
    return planned


def export(args: argparse.Namespace) -> None:
    from cass.execution.batch import not_recorded, write_batch
    from cass.execution.hosts import resolve_host

    if len(args.batch) != 1:
        raise SystemExit("export: name one --batch folder to write")
    os.chdir(args.suite or args.pairs[0])   # its recorded hosts (gpu_hosts/), as score reads them
    store, mutants, rows, _, tasks = collect(args.pairs, args.suite, args.count, args.seed, args.workers, args.origins,
                                             args.candidates)
    params = read_yaml((args.suite or args.pairs[0]) / "params.yaml")
    planned = {r for sets in planned_runs(mutants, rows, tasks, params).values() for rs in sets.values() for r in rs}
    missing = not_recorded(store, planned, resolve_host(f"recorded:{args.name}")) if args.name else planned
    runs = write_batch(store, args.batch[0], missing, params["execute"])
    print(f"{len(mutants)} mutants: {dict(Counter(m.outcome for m in mutants))}; {runs} runs of "
          f"{len({r.binary for r in missing})} binaries in {args.batch[0]} ({len(planned) - len(missing)} recorded "
          "before)")


def table(args: argparse.Namespace) -> list[dict]:
    """Every mutant with its runs, as plain data any checkout's oracle can judge."""
    from cass.benchmark.real_evaluate import arg_sets
    from cass.benchmark.real_programs import task_runs
    from cass.execution.batch import import_results
    from cass.execution.hosts import resolve_host
    from cass.execution.mutation import silent
    from cass.execution.programs import Run, run_programs

    first = args.suite or args.pairs[0]
    os.chdir(first)
    params = read_yaml(first / "params.yaml")
    from cass.pipeline.context import open_store
    store = open_store(params)
    for batch in args.batch:
        import_results(store, params["execute"], batch, args.name)
    store, mutants, rows, originals, tasks = collect(args.pairs, args.suite, args.count, args.seed, args.workers,
                                                     args.origins)
    host = resolve_host(f"recorded:{args.name}")
    planned = planned_runs(mutants, rows, tasks, params)
    ported = {m.program: m.original_binary for m in mutants if m.suite == "suite" and m.original_binary}
    ports = {program: [r for s in arg_sets(tasks[program])   # the human ports' own runs
                       for r in task_runs(tasks[program], binary, s, params["benchmark"]["real"]["runs"],
                                          params["execute"])]
             for program, binary in ported.items()}
    found, _ = run_programs(store, host, {r for sets in planned.values() for rs in sets.values() for r in rs}
                               | {r for rs in ports.values() for r in rs}, 1)
    unmutated = {program: [Run.of(store, found[r], r.invocation.args) for r in runs]
                 for program, runs in ports.items() if all(found[r] is not None for r in runs)}
    unmutated |= {program: [Run(**{**r, "args": tuple(r["args"])}) for r in row["hip_runs"]]
                  for program, row in rows.items() if row["hip_runs"]}
    entries = []
    for i, mutant in enumerate(mutants):
        entry = {**mutant.describe(), "runs": None, "silent": None}
        if i in planned and all(found[r] is not None for rs in planned[i].values() for r in rs):
            runs = {s: [Run.of(store, found[r], r.invocation.args) for r in rs] for s, rs in planned[i].items()}
            entry["runs"] = {s: [asdict(r) for r in rs] for s, rs in runs.items()}
            if mutant.program in unmutated:   # else unknown: a survivor counts as reached
                entry["silent"] = silent(store, [r for rs in runs.values() for r in rs], unmutated[mutant.program])
        if mutant.suite == "pairs":
            row = rows[mutant.program]
            entry |= {"cuda_runs": row["cuda_runs"], "main": row["files"][0]["digest"]}
        entries.append(entry)
    for row in originals:   # the unmutated pairs whose CUDA original ran: the verified share, by either oracle
        entries.append({"suite": "originals", "program": row["sample_id"], "group": row["origin"], "operator": "-",
                        "outcome": "original", "path": row["path"], "runs": {"": row["hip_runs"]},
                        "cuda_runs": row["cuda_runs"], "main": row["files"][0]["digest"]})
    return entries


def judge(entries: list[dict], store_root: Path) -> list[dict]:
    """Each entry's verdict by the oracle of the ``cass`` on ``sys.path`` (this checkout's, or ``--oracle-from``'s):
    ``status`` and ``killed`` (None where it was not run, or where that oracle's suite has no such task)."""
    import polars as pl

    from cass.benchmark.real_evaluate import verdict_of
    from cass.benchmark.real_tasks import RealTask
    from cass.execution.programs import Run, takes_arguments
    from cass.execution.verify import judge_pair, verified
    from cass.text.cuda import main_signature
    from store import Store

    root = Path(sys.modules["cass"].__file__).resolve().parents[1]
    params = read_yaml(root / "params.yaml")
    tolerance, calibration_runs = params["execute"]["tolerance"], params["execute"]["runs"]
    manifest = json.loads((root / "translation_bench" / "real" / "tasks.json").read_text())
    tasks = {t["id"]: RealTask(**t) for t in manifest["tasks"]}
    references = pl.read_parquet(root / "translation_bench" / "real" / "references.parquet")
    per_set = "dict" in str(inspect.signature(verdict_of).parameters["references"].annotation)
    store = Store(store_root)
    empty = store.put(b"")

    known = {f.name for f in fields(Run)}

    def run_of(row: dict) -> Run:
        """A run as this oracle's ``Run`` holds it (an older one records no device reads)."""
        return Run(**{**{k: v for k, v in row.items() if k in known}, "args": tuple(row["args"])})

    def recorded(task_id: str, arg_set: str) -> list:
        rows = references.filter((pl.col("task_id") == task_id) & (pl.col("arg_set") == arg_set)).sort("run")
        return [run_of({**r, "stdout": store.put(r["stdout"]), "stderr": empty,
                        "device_reads": store.put(r["device_reads"]) if r.get("device_reads") else None})
                for r in rows.iter_rows(named=True)]

    judged = []
    for entry in entries:
        verdict = {"status": None, "killed": None}
        runs = {s: [run_of(r) for r in rs] for s, rs in (entry["runs"] or {}).items()}
        if runs and entry["suite"] in ("pairs", "originals"):
            cuda = [run_of(r) for r in entry["cuda_runs"]]
            by_args: dict = {}
            for run in cuda:   # the runs of each argument set this oracle calibrated on
                by_args.setdefault(run.args, []).append(run)
            cuda = [r for rs in by_args.values() for r in rs[:calibration_runs]]
            both = {"cuda": cuda, "hip": [r for rs in runs.values() for r in rs]}
            found = judge_pair(store, both, takes_arguments(main_signature(store.get_text(entry["main"], "replace"))
                                                            or ""), tolerance)
            verdict = {"status": found.status, "killed": not verified(found, both)}
        elif runs and entry["program"] in tasks:
            task = tasks[entry["program"]]
            if per_set:
                status, _ = verdict_of(store, task, {s: recorded(task.id, s) for s in runs}, runs, tolerance)
            else:   # an oracle that judged the hidden set alone
                status, _ = verdict_of(store, task, recorded(task.id, task.verified_set), runs[task.verified_set],
                                       tolerance)
            verdict = {"status": status, "killed": not status.startswith("pass")}
        judged.append({**entry, **verdict})
    return judged


def scores(judged: list[dict]) -> dict:
    """Per suite and group: outcomes and the mutation score (:func:`cass.execution.mutation.score`) as an oracle
    judged them (not run, or not judged by that oracle: ``not_run``)."""
    from cass.execution.mutation import score

    def outcome(entry: dict) -> str:
        if entry["outcome"] in ("stillborn", "equivalent"):
            return entry["outcome"]
        if entry["killed"] is None:
            return "not_run"
        return "killed" if entry["killed"] else "silent" if entry.get("silent") else "survived"

    return {suite: score((e["group"], outcome(e)) for e in judged if e["suite"] == suite)
            for suite in sorted({e["suite"] for e in judged} - {"originals"})}


def score(args: argparse.Namespace) -> None:
    entries = table(args)
    store_root = Path(read_yaml((args.suite or args.pairs[0]) / "params.yaml")["store"]["dir"]).resolve()
    after = judge(entries, store_root)
    before = None
    if args.before:
        with tempfile.TemporaryDirectory() as scratch:
            path, judged = Path(scratch) / "table.json", Path(scratch) / "judged.json"
            path.write_text(json.dumps(entries))
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "judge", str(path), "--oracle-from",
                                   str(args.before.resolve()), "--store", str(store_root), "--out", str(judged)],
                                  capture_output=True, text=True, check=False)
            if proc.returncode:
                raise SystemExit(f"the oracle of {args.before} failed:\n{proc.stderr[-4000:]}")
            before = json.loads(judged.read_text())
    text = report(after, before, args)
    if args.survivors:
        survivors = [{k: v for k, v in e.items() if k not in ("runs", "cuda_runs", "main")} for e in after
                     if e["killed"] is False and e["suite"] != "originals"]
        args.survivors.write_text(json.dumps(survivors, indent=1) + "\n")
    if args.out:
        from bench.results import replace_section
        replace_section(args.out, SECTION, text)
    print(text)


def git(*argv: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *argv], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.1f}%"


def verified_share(after: list[dict], before: list[dict] | None) -> list[str]:
    """The unmutated pairs whose CUDA original ran: how many each oracle verifies, and the pairs whose verdict the
    change moved."""
    now = [e for e in after if e["suite"] == "originals"]
    then = {e["program"]: e for e in before or [] if e["suite"] == "originals"}
    lines = ["Verified share of the unmutated pairs whose CUDA original ran (the same runs; `no_signal`: output with "
             "no computed value, counted apart):", "",
             "| programs of | pairs | verified | share | `no_signal` | share of the others |"
             + (" verified before | share before |" if before else ""),
             "|---|---:|---:|---:|---:|---:|" + ("---:|---:|" if before else "")]
    for group in sorted({e["group"] for e in now}):
        mine = [e for e in now if e["group"] == group]
        ok = sum(e["killed"] is False for e in mine)
        quiet = sum(e["status"] == "no_signal" for e in mine)
        row = (f"| {group} | {len(mine)} | {ok} | {percent(ok / len(mine))} | {quiet} | "
               f"{percent(ok / (len(mine) - quiet)) if len(mine) > quiet else '-'} |")
        if before:
            old = sum(then[e["program"]]["killed"] is False for e in mine if e["program"] in then)
            row += f" {old} | {percent(old / len(mine))} |"
        lines.append(row)
    moved = [(e, then[e["program"]]) for e in now
             if e["program"] in then and e["killed"] != then[e["program"]]["killed"]]
    if moved:
        lines += ["", "Pairs whose verdict the change moved: " + "; ".join(
            f"{e['group']} `{e['path']}`: {o['status']} -> {e['status']}" for e, o in sorted(
                moved, key=lambda m: (m[0]["group"], m[0]["path"]))) + "."]
    return lines


def report(after: list[dict], before: list[dict] | None, args: argparse.Namespace) -> str:
    from cass.execution.hosts import resolve_host
    host = resolve_host(f"recorded:{args.name}").host
    now, then = scores(after), scores(before) if before else {}
    lines = [SECTION, "",
             f"Commit {git('rev-parse', '--short', 'HEAD')}, {date.today()}, GPU {host.gpu} ({host.sm}, driver "
             f"{host.driver}; kernels {'counted' if host.launch_counter else 'not counted'}). Sampling: "
             f"{args.count} mutants a program (seed `{args.seed}`: distinct operators in a random order, a site "
             "drawn uniformly within each), every mutant built as its program is and run once per argument set "
             "with its program's limits. Score = killed / (killed + survived + silent); equivalent (binary "
             "byte-identical to the unmutated program's) and stillborn (does not build) mutants are not counted. "
             "Silent: a survivor whose every run shows what the unmutated program's run of the same arguments shows "
             "(exit, kernel launches, device reads byte for byte, output with its timings and other volatile fields "
             "blanked): the mutation reached no output on these inputs, so no oracle judging outputs could reject "
             "it without rejecting the unmutated program; score (reached) = killed / (killed + survived), the oracle "
             "apart from the reach of its inputs."
             + (f" Before: the oracle of commit {git('rev-parse', '--short', 'HEAD', cwd=args.before)} judging the "
                "same runs (its first CUDA runs, as many as it calibrated on, and its own references)."
                if before else ""), "",
             "| oracle | programs of | mutants | equivalent | stillborn | killed | survived | silent | not judged "
             "| score | score (reached) |" + (" score before | score (reached) before |" if before else ""),
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if before else "")]
    names = {"pairs": "stage (`execute`)", "suite": "benchmark (real suite)"}
    for suite, groups in now.items():
        if suite not in names:
            continue
        for group, c in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
            total = sum(v for k, v in c.items() if not k.startswith("score"))
            old = then.get(suite, {}).get(group, {})
            lines.append(f"| {names[suite]} | {group} | {total} | {c['equivalent']} | {c['stillborn']} | "
                         f"{c['killed']} | {c['survived']} | {c['silent']} | {c['not_run']} | {percent(c['score'])} | "
                         f"{percent(c['score_reached'])} |"
                         + (f" {percent(old.get('score'))} | {percent(old.get('score_reached'))} |" if before else ""))
    operators = Counter((e["operator"], "killed" if e["killed"] else "survived") for e in after
                        if e["killed"] is not None and e["suite"] != "originals")
    lines += ["", "By operator (both oracles): " + ", ".join(
        f"`{op}` {operators[op, 'killed']}/{operators[op, 'killed'] + operators[op, 'survived']}"
        for op in sorted({op for op, _ in operators})) + " killed.", "",
        *((*verified_share(after, before), "") if any(e["suite"] == "originals" for e in after) else ()),
        f"Made by `python bench/mutation.py export ...`, `python -m hosts.gpu run-batch BATCH` on the GPU host, "
        f"`python bench/mutation.py score --name {args.name} ...`."]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phase", choices=["export", "score", "judge"])
    parser.add_argument("table", nargs="?", type=Path, help="judge: a table written by score")
    parser.add_argument("--pairs", type=Path, nargs="*", default=[])
    parser.add_argument("--suite", type=Path)
    parser.add_argument("--name", help="the recorded GPU host of the unmutated programs' runs (export: leave out "
                        "the runs recorded for it; without it every run)")
    parser.add_argument("--batch", type=Path, nargs="*", default=[])
    parser.add_argument("--count", type=int, default=3)
    parser.add_argument("--seed", help="default: cass.execution.mutation.DEFAULT_SEED")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--origins", nargs="*", help="only the pairs of these origins (default: all)")
    parser.add_argument("--candidates", action="store_true", help="export: the mutants of every pair the oracle "
                        "could verify (outputs that matched or told nothing), for a batch run before the pairs' own "
                        "runs are judged")
    parser.add_argument("--before", type=Path, help="score: a checkout of an earlier commit whose oracle also judges")
    parser.add_argument("--oracle-from", type=Path, help="judge: the checkout whose cass judges (set on sys.path)")
    parser.add_argument("--out", type=Path, help="score: a Markdown file to put the section in; judge: the JSON")
    parser.add_argument("--store", type=Path, help="judge: the store the table's runs are in")
    parser.add_argument("--survivors", type=Path)
    args = parser.parse_args()
    args.pairs = [p.resolve() for p in args.pairs]
    args.suite = args.suite and args.suite.resolve()
    args.batch = [b.resolve() for b in args.batch]
    args.out = args.out and args.out.resolve()
    args.survivors = args.survivors and args.survivors.resolve()
    if args.phase != "judge" and not args.seed:
        from cass.execution.mutation import DEFAULT_SEED
        args.seed = DEFAULT_SEED
    if args.phase == "judge":
        args.out.write_text(json.dumps(judge(json.loads(args.table.read_text()), args.store)))
    elif args.phase == "export":
        export(args)
    else:
        score(args)


if __name__ == "__main__":
    main()
