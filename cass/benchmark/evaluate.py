"""Scoring predictions on the benchmark's tasks, by compiling and running them.

Source task (HIP for a task's CUDA program): the prediction is compiled with the AMD toolchain for
``amd.archs`` (host and device: the compile rate); a prediction that compiles is built through HIP's
NVIDIA back end and run ``execute.runs`` times on the run host (``execute.host``), in the program
sandbox, beside the task's reference HIP. Verdicts: ``pass`` (stdout byte-identical to the reference
stdout recorded on a GPU host), ``pass_tolerant`` (numbers within ``execute.tolerance``; reported
apart), ``wrong_output`` (with the first differing line), ``run_failed``, ``timeout``,
``nondeterministic``, ``build_failed`` (the NVIDIA back end rejects it), ``compile_failed`` (hipcc
rejects it) and ``not_run:no_gpu_host``. Runtime is the prediction's median wall time over the
reference translation's, in the same evaluation.

Assembly task (RDNA3 device assembly): assembled with the AMD toolchain's ``llvm-mc`` for
``amd.archs[0]`` (the assemble rate) and scored by chrF against the reference HIP's device assembly;
it runs only on an AMD GPU host, so its verdict is ``assembled`` or ``assemble_failed`` plus
``not_run:no_amd_host``, never a pass.

Every compile, assembly and run is a cached action of the store, so an unchanged evaluation builds and
runs nothing.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict

from sacrebleu.metrics import CHRF

from cass.benchmark.tasks import Prediction, Task
from cass.compiling.compile import TargetRun
from cass.execution.compare import first_difference, tolerant_equal
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import Build, Run, disagreement, run_plans, run_programs
from store import Store
from toolchains import Target, load_hip_nvidia, load_toolchains
from toolchains.programs import ProgramLimits

REFERENCE = "reference"


def main_file(task_id: str) -> str:
    """The file name a task's program is compiled under."""
    return f"{task_id}.cu"


def amd_compiles(store: Store, params: dict, sources: dict[str, tuple[str, str]], workers: int | None,
                 ) -> tuple[dict[str, Build], Counter]:
    """hipcc's host and device compiles of every ``key: (task id, HIP text)``; per key the build (its first
    arch's device assembly where all compiled), with the action counts."""
    amd = load_toolchains(params["amd"]["toolchain"])["amd"]
    archs, flags = params["amd"]["archs"], params["amd"]["flags"]
    plans = {key: [TargetRun(t, {main_file(task): store.put_text(text)})
                   for t in amd.targets(main_file(task), archs, flags)] for key, (task, text) in sources.items()}
    for runs in plans.values():   # the first arch's device assembly last: the build's artifact
        runs.sort(key=lambda run: run.target.kind == "device" and run.target.arch == archs[0])
    builds, counts, _ = run_plans(store, amd, plans, params["amd"]["timeout_s"], workers)
    return builds, counts


def nvidia_builds(store: Store, params: dict, sources: dict[str, tuple[str, str]], workers: int | None,
                  ) -> tuple[dict[str, Build], Counter]:
    """Every ``key: (task id, HIP text)`` built through HIP's NVIDIA back end."""
    toolchain = load_hip_nvidia()
    execute = params["execute"]
    plans = {key: [TargetRun(toolchain.program_target(main_file(task), execute["archs"], execute["flags"]),
                             {main_file(task): store.put_text(text)})] for key, (task, text) in sources.items()}
    builds, counts, _ = run_plans(store, toolchain, plans, execute["timeout_s"], workers)
    return builds, counts


def assemble(store: Store, params: dict, sources: dict[str, str], workers: int | None) -> tuple[dict[str, Build],
                                                                                                  Counter]:
    """Every ``key: assembly text`` assembled for ``amd.archs[0]``."""
    amd = load_toolchains(params["amd"]["toolchain"])["amd"]
    arch = params["amd"]["archs"][0]
    step = amd.assemble_step(arch, "prediction.s")
    plans = {key: [TargetRun(Target("device", arch, (step,), "check.o"), {"prediction.s": store.put_text(text)})]
             for key, text in sources.items()}
    builds, counts, _ = run_plans(store, amd, plans, params["amd"]["timeout_s"], workers)
    return builds, counts


def judge_source(store: Store, runs: list[Run], reference: bytes, tolerance: dict) -> tuple[str, str]:
    """(verdict, detail) of a source prediction whose program ran."""
    for n, run in enumerate(runs, 1):
        if run.verdict == "timeout":
            return "timeout", f"run {n} ran out of time"
        if not run.ok:
            return "run_failed", run.failure(store, n)
    if differs := disagreement(store, runs):
        return "nondeterministic", differs
    output = store.get(runs[0].stdout)
    if output == reference:
        return "pass", ""
    verdict = "pass_tolerant" if tolerant_equal(reference, output, **tolerance) else "wrong_output"
    return verdict, first_difference(reference, output)


def evaluate(store: Store, params: dict, tasks: dict[str, Task], predictions: list[Prediction],
             host: ExecutionHost | None) -> tuple[list[dict], dict]:
    """Per-prediction verdicts and the evaluation's run report (builds, runs, the host)."""
    workers = params["executor"]["workers"] or None
    execute = params["execute"]
    source = {f"{i}": (p.task_id, p.prediction) for i, p in enumerate(predictions) if p.task == "source"}
    asm = {f"{i}": p for i, p in enumerate(predictions) if p.task == "asm"}
    wanted = {p.task_id for p in predictions}
    references = {f"{REFERENCE}:{t}": (t, tasks[t].reference_hip) for t in sorted(wanted)}
    compiled, amd_counts = amd_compiles(store, params, {**source, **references}, workers)
    runnable = {k: v for k, v in {**source, **references}.items() if compiled[k].binary}
    built, nvidia_counts = nvidia_builds(store, params, runnable, workers)
    binaries = {b.binary for b in built.values() if b.binary}
    report = {"host": host and {"name": host.name, **asdict(host.host)}, "binaries": sorted(binaries),
              "builds": {"amd": dict(amd_counts), "hip_nvidia": dict(nvidia_counts)}}
    runs: dict[str, list] = {}
    if host is not None:
        host.require_arch(execute["archs"])
        limits = ProgramLimits(**execute["limits"])
        runs, report["runs"], _ = run_programs(store, host, limits, binaries, execute["runs"], execute["workers"],
                                               params["executor"]["host_wait_s"])

    chrf = CHRF()
    rows = []
    for key, (task_id, text) in {**source, **references}.items():
        is_reference = key.startswith(REFERENCE)
        score = None if is_reference else chrf.sentence_score(text, [tasks[task_id].reference_hip]).score
        row = {"task_id": task_id, "task": "source", "baseline_reference": is_reference,
               "amd_compiles": compiled[key].binary is not None, "runtime_ratio": None,
               "chrf": None if score is None else round(score, 2)}
        if not row["amd_compiles"]:
            row.update(verdict="compile_failed", detail=f"{compiled[key].reason}: {compiled[key].detail[:1000]}")
        elif built[key].binary is None:
            row.update(verdict="build_failed", detail=f"{built[key].reason}: {built[key].detail[:1000]}")
        elif host is None or None in runs[built[key].binary]:
            row.update(verdict="not_run:no_gpu_host", detail="no run host (execute.host), or no run recorded there")
        else:
            done = [Run.of(store, o) for o in runs[built[key].binary]]
            verdict, detail = judge_source(store, done, tasks[task_id].reference_stdout, execute["tolerance"])
            row.update(verdict=verdict, detail=detail, _wall=statistics.median(r.wall_s for r in done))
        rows.append(row)
    reference_wall = {r["task_id"]: r.get("_wall") for r in rows if r["baseline_reference"] and r["verdict"] == "pass"}
    for row in rows:   # against the reference's median wall time, where the reference itself passed
        wall, ref = row.pop("_wall", None), reference_wall.get(row["task_id"])
        if wall is not None and ref and row["verdict"].startswith("pass"):
            row["runtime_ratio"] = round(wall / ref, 4)
    if asm:
        assembled, asm_counts = assemble(store, params, {k: p.prediction for k, p in asm.items()}, workers)
        report["builds"]["assembler"] = dict(asm_counts)
        for key, p in asm.items():
            reference = compiled[f"{REFERENCE}:{p.task_id}"]
            text = store.get_text(reference.binary) if reference.binary else ""
            ok = assembled[key].binary is not None and bool(p.prediction.strip())   # empty text assembles
            rows.append({"task_id": p.task_id, "task": "asm", "baseline_reference": False, "amd_compiles": ok,
                         "runtime_ratio": None, "verdict": "not_run:no_amd_host",
                         "detail": "assembled" if ok else
                         f"assemble_failed: {assembled[key].detail[:1000] or 'empty prediction'}",
                         "chrf": round(chrf.sentence_score(p.prediction, [text]).score, 2) if text else None})
    return rows, report


def summarize(rows: list[dict], tasks: dict[str, Task]) -> dict:
    """Overall and per-domain rates of the predictions (the references' own check apart)."""
    scored = [r for r in rows if not r["baseline_reference"]]
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in scored:
        groups["all"].append(row)
        groups[tasks[row["task_id"]].domain].append(row)

    def rates(part: list[dict], kind: str) -> dict:
        rows_of = [r for r in part if r["task"] == kind]
        if not rows_of:
            return {}
        n = len(rows_of)
        ratios = [r["runtime_ratio"] for r in rows_of if r["runtime_ratio"] is not None]
        chrf = [r["chrf"] for r in rows_of if r["chrf"] is not None]
        out = {"n": n, "compile_rate": round(sum(r["amd_compiles"] for r in rows_of) / n, 4),
               "mean_chrf": round(sum(chrf) / len(chrf), 2) if chrf else None,
               "verdicts": dict(sorted(Counter(r["verdict"] for r in rows_of).items()))}
        if kind == "source":
            out |= {"accuracy": round(sum(r["verdict"] == "pass" for r in rows_of) / n, 4),
                    "accuracy_tolerant": round(sum(r["verdict"].startswith("pass") for r in rows_of) / n, 4),
                    "median_runtime_ratio": statistics.median(ratios) if ratios else None}
        return out

    references = [r for r in rows if r["baseline_reference"]]
    return {"by_domain": {d: {k: rates(part, k) for k in ("source", "asm") if rates(part, k)}
                          for d, part in sorted(groups.items())},
            "reference_check": dict(sorted(Counter(r["verdict"] for r in references).items()))}
