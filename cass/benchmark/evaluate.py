"""Scoring predictions on the benchmark's tasks, by compiling and running them.

Source task (HIP for a task's CUDA program): the prediction is compiled with the AMD toolchain for
``amd.archs`` (host and device: the compile rate); where there is a run host (``execute.host``), a prediction that
compiles is built through HIP's NVIDIA back end and run ``execute.hip_runs`` times on each argument set (the visible
one: no argument; the hidden one: the task's seed, never shown in a prompt) there, in the program sandbox, beside the
task's reference HIP. Each set is judged against the CUDA program's recorded output and kernel counts by the
oracle the ``execute`` stage judges pairs with (:func:`judge_sets`, :func:`cass.execution.verify.judge`): ``pass``
(the output matched, timings masked; or, where it tells nothing, what the program copied back from the GPU agreed),
``pass_tolerant`` (numbers within ``execute.tolerance``, integers exact; reported apart), ``wrong_output`` (with the
first differing line, or the first copy back from the GPU that differs), ``kernel_count_differs``, ``no_kernel``,
``run_failed``, ``timeout``, ``nondeterministic`` and ``no_signal`` (the oracle's statuses where the references
themselves cannot judge: never for a recorded task), ``build_failed`` (the NVIDIA back end rejects it),
``compile_failed`` (hipcc rejects it), ``not_run:no_gpu_host`` and ``not_run:transient`` (a compile or build that
was stopped: a timeout, a lost process or host; no verdict, and the compile rate is unknown). A passing
prediction's median wall time and peak resident memory (visible set) are divided by the reference translation's, run
in the same evaluation.

Assembly task (RDNA3 device assembly): assembled for ``amd.archs[0]``, linked into a code object and
into a program with the task's host code (the reference HIP's host side, whose launch stubs name the
kernels); the link rate counts the predictions that became such a program defining every kernel the
host code launches. Scored by chrF against the reference HIP's device assembly, normalised as the instruct export's
AMD assembly is (the task's input is normalised SASS, as in training). A prediction that did not become such a
program is ``compile_failed`` (the detail says whether it failed to assemble, to link or to define the kernels), or
``not_run:transient`` where its build or the reference's compile was stopped; one that did runs only on an AMD GPU
host, so its verdict is ``not_run:no_amd_host``, never a pass.

Every file of a task is built under the task's path (``<domain>/<id>.cu``), the name the pipeline's
stages give origin ``bench``, so the evaluation and the pipeline share their actions in the store. Every
compile, link and run is a cached action, so an unchanged evaluation builds and runs nothing.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict

from sacrebleu.metrics import CHRF

from cass.benchmark.tasks import Prediction, Task
from cass.engine.placement import Placement
from cass.engine.targets import Build, TargetRun, run_plans
from cass.execution.compare import MIN_CALIBRATION_RUNS
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import ProgramRun, Run, run_programs
from cass.execution.verify import MATCHES, judge, verified
from cass.text.amdgpu import normalize_amd, split_amd
from store import Store
from toolchains import Target
from toolchains.base import EXECUTABLE
from toolchains.sandboxed_runs import Invocation, ProgramLimits

REFERENCE = "reference"
NOT_BUILT = "no run host: programs not built (`cass eval --export-batch` builds them for a GPU host's batch)"
HOST_SOURCE = "host.hip"
"""The name the task's reference HIP has where an assembly prediction is linked with its host code."""


def amd_compiles(store: Store, params: dict, sources: dict[str, tuple[str, str]],
                 ) -> tuple[dict[str, Build], Counter]:
    """hipcc's host and device compiles of every ``key: (file name, HIP text)``; per key the build (its first
    arch's device assembly where all compiled), with the action counts."""
    return amd_program_compiles(store, params, {key: ([name], (".",), {name: store.put_text(text)})
                                                for key, (name, text) in sources.items()})


def amd_program_compiles(store: Store, params: dict,
                         programs: dict[str, tuple[list[str], Sequence[str], dict[str, str]]],
                         ) -> tuple[dict[str, Build], Counter]:
    """hipcc's host and device compiles of every unit of each ``key: (units, include_dirs, files)`` (``files``:
    path: digest, laid out as its tree); per key the build (the first arch's device assembly of its last unit where
    all compiled, else the first failure), with the action counts; where params.yaml's ``executor`` runs them."""
    placement = Placement.of(params)
    amd = placement.toolchain("amd", params["amd"]["toolchain"])
    archs, flags = params["amd"]["archs"], params["amd"]["flags"]
    plans = {key: [TargetRun(t, files) for unit in units for t in amd.targets(unit, archs, flags, include_dirs)]
             for key, (units, include_dirs, files) in programs.items()}
    for runs in plans.values():   # the first arch's device assembly last: the build's artifact
        runs.sort(key=lambda run: run.target.kind == "device" and run.target.arch == archs[0])
    builds, counts = run_plans(store, amd, plans, params["amd"]["timeout_s"], placement)
    return builds, counts


def nvidia_builds(store: Store, params: dict, sources: dict[str, tuple[str, str]],
                  ) -> tuple[dict[str, Build], Counter]:
    """Every ``key: (file name, HIP text)`` built through HIP's NVIDIA back end."""
    placement = Placement.of(params)
    toolchain = placement.toolchain("hip-nvidia")
    execute = params["execute"]
    plans = {key: [TargetRun(toolchain.program_target(name, execute["archs"], execute["flags"]),
                             {name: store.put_text(text)})] for key, (name, text) in sources.items()}
    builds, counts = run_plans(store, toolchain, plans, execute["timeout_s"], placement)
    return builds, counts


def assembly_programs(store: Store, params: dict, sources: dict[str, tuple[str, str]],
                      ) -> tuple[dict[str, Build], Counter]:
    """Every ``key: (device assembly, host HIP text)`` made into a program for ``amd.archs[0]``
    (:meth:`toolchains.amd.AmdToolchain.assembly_program_steps`)."""
    placement = Placement.of(params)
    amd = placement.toolchain("amd", params["amd"]["toolchain"])
    arch = params["amd"]["archs"][0]
    target = Target("program", arch, amd.assembly_program_steps(arch, "prediction.s", HOST_SOURCE,
                                                                params["amd"]["flags"]), EXECUTABLE)
    plans = {key: [TargetRun(target, {"prediction.s": store.put_text(asm), HOST_SOURCE: store.put_text(host)})]
             for key, (asm, host) in sources.items()}
    builds, counts = run_plans(store, amd, plans, params["amd"]["timeout_s"], placement)
    return builds, counts


VERDICTS = {"match": "pass", "match_masked": "pass", "match_tolerant": "pass_tolerant", "match_device": "pass",
            "mismatch": "wrong_output", "device_mismatch": "wrong_output",
            "hip_failed": "run_failed", "timeout": "timeout", "no_kernel": "no_kernel",
            "kernel_count_differs": "kernel_count_differs"}
"""The oracle's statuses (:func:`cass.execution.verify.judge`) as a prediction's verdicts."""


def judge_sets(store: Store, references: dict[str, list[Run]], runs: dict[str, list[Run]], takes_arguments: bool,
               tolerance: dict) -> tuple[str, str]:
    """(verdict, detail) of a prediction's runs per argument set against the CUDA original's recorded runs of each
    (:func:`cass.execution.verify.judge`): the first set that does not pass (the hidden set first: what no prompt
    shows), else the weakest pass. Where the references count kernels, a pass needs a counted kernel in every run."""
    verdicts = []
    for arg_set, hip in sorted(runs.items(), key=lambda item: item[0] != "hidden"):
        cuda = references.get(arg_set)
        if not cuda:
            return "not_run:no_reference", f"no reference output of the {arg_set} arguments"
        found = judge(store, {"cuda": cuda, "hip": hip}, takes_arguments, tolerance)
        counted = all(r.kernel_launches is not None for r in cuda)
        if found.status in MATCHES and counted and not verified(found, {"cuda": cuda, "hip": hip}):
            verdict = ("no_kernel", f"kernel launches per run: {[r.kernel_launches for r in hip]} (a pass needs "
                       "counted kernels in every run)")
        else:
            verdict = (VERDICTS.get(found.status, found.status), found.detail)
        if not verdict[0].startswith("pass"):
            return verdict[0], f"{arg_set} arguments: {verdict[1]}" if len(runs) > 1 else verdict[1]
        verdicts.append(verdict)
    return max(verdicts, key=lambda v: v[0] == "pass_tolerant")


def recorded_runs(store: Store, task: Task, arg_set: str) -> list[Run]:
    """The CUDA program's recorded runs of one argument set: its recorded output once per recorded kernel count
    (:data:`~cass.execution.compare.MIN_CALIBRATION_RUNS` uncounted runs where none is recorded: the programs are
    deterministic, their output is recorded once)."""
    output, empty = store.put(task.recorded_output(arg_set)), store.put(b"")
    counts = task.kernel_launches.get(arg_set) or [None] * MIN_CALIBRATION_RUNS
    return [Run("exited", 0, output, empty, 0.0, None, k, task.arguments(arg_set)) for k in counts]


def stopped(build: Build, tool: str) -> tuple[str, str]:
    """The verdict and detail of a prediction whose ``build`` (by ``tool``) was stopped
    (:data:`~cass.engine.targets.STOPPED`): ``not_run:transient``, no verdict on the prediction. Nothing of the stop
    is recorded: ``dvc repro -f evaluate`` or ``cass eval`` builds it again."""
    return "not_run:transient", f"{tool} stopped: {build.reason}: {build.detail[:1000]}"


def unbuilt(compiled: Build, built: Build | None) -> tuple[str, str] | None:
    """The verdict and detail of a prediction that did not get to run for want of a build: hipcc's compile
    (``compiled``) or the program built through HIP's NVIDIA back end (``built``; None: not built). None where both
    built."""
    for build, failed, tool in ((compiled, "compile_failed", "hipcc"), (built, "build_failed", "the HIP-NVIDIA build")):
        if build is not None and build.stopped:
            return stopped(build, tool)
        if build is not None and build.binary is None:
            return failed, f"{build.reason}: {build.detail[:1000]}"
    return None


def compiles(compiled: Build) -> bool | None:
    """Whether hipcc compiled a prediction; None where its compile was stopped (unknown, not a failure)."""
    return None if compiled.stopped else compiled.binary is not None


def judge_assembly(prediction: str, program: Build, reference_assembly: str) -> tuple[bool, str]:
    """(whether the prediction became a program able to launch every kernel of the task, detail)."""
    if not prediction.strip():   # empty text assembles, and links into a program without kernels
        return False, "assemble_failed: empty prediction"
    if program.binary is None:
        return False, f"{program.reason}: {program.detail[:1000]}"
    missing = sorted(set(split_amd(reference_assembly)) - set(split_amd(prediction)))
    if missing:
        return False, f"kernels_missing: linked, but no kernel descriptor (.amdhsa_kernel) for {', '.join(missing)}"
    return True, "linked"


def evaluate(store: Store, params: dict, tasks: dict[str, Task], predictions: list[Prediction],
             host: ExecutionHost | None, build_programs: bool = False) -> tuple[list[dict], dict]:
    """Per-prediction verdicts and the evaluation's run report (builds, runs, the host). Programs are built through
    HIP's NVIDIA back end where there is a run host, or where ``build_programs`` says so (a batch for a GPU host);
    without either only the compile and link rates are measured."""
    execute = params["execute"]
    source = {f"{i}": (p.task_id, p.prediction) for i, p in enumerate(predictions) if p.task == "source"}
    samples = {f"{i}": p.sample for i, p in enumerate(predictions)}
    asm = {f"{i}": p for i, p in enumerate(predictions) if p.task == "asm"}
    wanted = {p.task_id for p in predictions}
    references = {f"{REFERENCE}:{t}": (t, tasks[t].reference_hip) for t in sorted(wanted)}
    named = {key: (tasks[t].path, text) for key, (t, text) in {**source, **references}.items()}
    compiled, amd_counts = amd_compiles(store, params, named)
    runnable = host is not None or build_programs
    built, nvidia_counts = nvidia_builds(store, params, {k: v for k, v in named.items()
                                                         if compiled[k].binary and runnable})
    binaries = {b.binary for b in built.values() if b.binary}
    report = {"host": host and {"name": host.name, **asdict(host.host)}, "binaries": sorted(binaries),
              "builds": {"amd": dict(amd_counts), "hip_nvidia": dict(nvidia_counts)}}
    limits = ProgramLimits(**execute["limits"])
    task_of = {**{k: t for k, (t, _) in source.items()}, **{k: t for k, (t, _) in references.items()}}
    planned = {key: {s: [ProgramRun(b.binary, Invocation(tasks[task_of[key]].arguments(s)), limits, n)
                         for n in range(1, execute["hip_runs"] + 1)] for s in tasks[task_of[key]].arg_sets}
               for key, b in built.items() if b.binary}
    report["planned"] = {key: [r for rs in sets.values() for r in rs] for key, sets in planned.items()}
    found: dict = {}
    if host is not None:
        host.require_arch(execute["archs"])
        found, report["runs"] = run_programs(store, host, {r for rs in report["planned"].values() for r in rs},
                                                execute["workers"])

    chrf = CHRF()
    rows = []
    for key, (task_id, text) in {**source, **references}.items():
        is_reference = key.startswith(REFERENCE)
        score = None if is_reference else chrf.sentence_score(text, [tasks[task_id].reference_hip]).score
        row = {"task_id": task_id, "task": "source", "sample": samples.get(key, 0), "baseline_reference": is_reference,
               "amd_compiles": compiles(compiled[key]), "runtime_ratio": None, "peak_rss_mib": None,
               "memory_ratio": None, "chrf": None if score is None else round(score, 2)}
        if failed := unbuilt(compiled[key], built.get(key)):
            row.update(verdict=failed[0], detail=failed[1])
        elif key not in built:
            row.update(verdict="not_run:no_gpu_host", detail=NOT_BUILT)
        elif host is None or any(found.get(r) is None for r in report["planned"][key]):
            row.update(verdict="not_run:no_gpu_host", detail="no run host (execute.host), or no run recorded there")
        else:
            task = tasks[task_id]
            done = {s: [Run.of(store, found[r], r.invocation.args) for r in rs] for s, rs in planned[key].items()}
            verdict, detail = judge_sets(store, {s: recorded_runs(store, task, s) for s in done}, done, False,
                                         execute["tolerance"])
            peaks = [r.max_rss_kib for r in done["visible"] if r.max_rss_kib is not None]   # None: before a sample
            row.update(verdict=verdict, detail=detail, _wall=statistics.median(r.wall_s for r in done["visible"]),
                       peak_rss_mib=round(max(peaks) / 1024, 1) if peaks else None)
        rows.append(row)
    reference_runs = {r["task_id"]: (r["_wall"], r["peak_rss_mib"]) for r in rows
                      if r["baseline_reference"] and r["verdict"] == "pass"}
    for row in rows:   # against the reference's runs in this evaluation, where the reference itself passed
        wall, ref = row.pop("_wall", None), reference_runs.get(row["task_id"])
        if wall is not None and ref and row["verdict"].startswith("pass"):
            row["runtime_ratio"] = round(wall / ref[0], 4)
            row["memory_ratio"] = round(row["peak_rss_mib"] / ref[1], 4) if ref[1] and row["peak_rss_mib"] else None
    if asm:
        reference_asm = {t: normalize_amd(store.get_text(compiled[f"{REFERENCE}:{t}"].binary))
                         for t in {p.task_id for p in asm.values()} if compiled[f"{REFERENCE}:{t}"].binary}
        programs, asm_counts = assembly_programs(
            store, params, {k: (p.prediction, tasks[p.task_id].reference_hip) for k, p in asm.items()})
        report["builds"]["assembly_programs"] = dict(asm_counts)
        for key, p in asm.items():
            reference = reference_asm.get(p.task_id, "")
            program, reference_build = programs[key], compiled[f"{REFERENCE}:{p.task_id}"]
            # a stop is no verdict where it decides one: the program's build, or (for a program that was built) the
            # reference's compile, whose kernels it must define; an empty prediction fails whatever the builds did
            stop = ((program, "the assembly program's build") if program.stopped else
                    (reference_build, "the reference's hipcc") if program.binary and reference_build.stopped else None)
            linked: bool | None
            if stop and p.prediction.strip():
                linked, (verdict, detail) = None, stopped(*stop)
            else:
                linked, detail = judge_assembly(p.prediction, programs[key], reference)
                verdict = "not_run:no_amd_host" if linked else "compile_failed"
            rows.append({"task_id": p.task_id, "task": "asm", "sample": p.sample, "baseline_reference": False,
                         "amd_compiles": linked,
                         "runtime_ratio": None, "peak_rss_mib": None, "memory_ratio": None,
                         "verdict": verdict, "detail": detail,
                         "chrf": round(chrf.sentence_score(p.prediction, [reference]).score, 2) if reference else None})
    return rows, report


def pass_at_k(rows: list[dict]) -> dict:
    """pass@k (the unbiased estimator over each task's n samples, k = the fewest samples of a task) where some task
    has more than one sample; else nothing (accuracy is pass@1)."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for row in rows:
        by_task[row["task_id"]].append(row["verdict"] == "pass")
    k = min(map(len, by_task.values()))
    if max(map(len, by_task.values())) == 1:
        return {}
    estimates = [1 - math.comb(len(v) - sum(v), k) / math.comb(len(v), k) for v in by_task.values()]
    return {"pass_at_k": {"k": k, "value": round(sum(estimates) / len(estimates), 4)}}


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
        memory = [r["memory_ratio"] for r in rows_of if r["memory_ratio"] is not None]
        chrf = [r["chrf"] for r in rows_of if r["chrf"] is not None]
        known = not any(r["amd_compiles"] is None for r in rows_of)   # a compile stopped: unknown, not 0
        out = {"n": n, "compile_rate": round(sum(r["amd_compiles"] for r in rows_of) / n, 6) if known else None,
               "mean_chrf": round(sum(chrf) / len(chrf), 2) if chrf else None,
               "verdicts": dict(sorted(Counter(r["verdict"] for r in rows_of).items()))}
        if kind == "source":
            out |= pass_at_k(rows_of)
            judged = not any(r["verdict"].startswith("not_run") for r in rows_of)   # else unknown, not 0
            out |= {"accuracy": round(sum(r["verdict"] == "pass" for r in rows_of) / n, 6) if judged else None,
                    "accuracy_tolerant": round(sum(r["verdict"].startswith("pass") for r in rows_of) / n, 6)
                    if judged else None,
                    "median_runtime_ratio": statistics.median(ratios) if ratios else None,
                    "median_memory_ratio": statistics.median(memory) if memory else None}
        return out

    references = [r for r in rows if r["baseline_reference"]]
    return {"by_domain": {d: {k: rates(part, k) for k in ("source", "asm") if rates(part, k)}
                          for d, part in sorted(groups.items())},
            "reference_check": dict(sorted(Counter(r["verdict"] for r in references).items()))}
