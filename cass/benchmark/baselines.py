"""The baselines every evaluation is read against, as predictions: ``reference`` (the reference HIP and its
device assembly: must score 100% where it runs, the harness's own check; on the real-program suite the human
port, the suite's ceiling), ``identity`` (the input returned unchanged: the CUDA source, the SASS), ``hipify-perl``
(the rule-based translator as it is; source task only), ``pipeline`` (hipify-perl and the pipeline's repair
layer, as the pipeline translates a file; source task only), ``rocm-scribe`` (a peer translator from PyPI, its
``hipify`` for RDNA3's wave32, every file as it is; source task only) and, on the real-program suite, ``mutant`` (one
mutant of each human port that builds on both platforms to another program than the port: the oracle must fail
it, :mod:`cass.execution.mutation`)."""

from __future__ import annotations

from collections.abc import Hashable

from cass.benchmark import BASELINES, REAL_BASELINES
from cass.benchmark.assembly import sass
from cass.benchmark.evaluate import amd_compiles
from cass.benchmark.real_evaluate import SOURCE_ERRORS
from cass.benchmark.real_tasks import RealTask
from cass.benchmark.tasks import Prediction, Task
from cass.engine.targets import TargetRun
from cass.execution.programs import run_plans
from cass.text.amdgpu import normalize_amd
from cass.translate.repair import pipeline_repairer
from store import Store
from toolchains import Target, load_toolchains

MUTANT_DRAWS = 6
"""Mutants drawn per human port for the ``mutant`` baseline; the first that builds to another program is taken."""


def rocm_scribe(text: str) -> str:
    """rocm-scribe's HIP for a CUDA text, for RDNA3 (``gfx1100``, wave32) as the benchmark compiles it."""
    from cuda_scribe import HipifyConfig
    from cuda_scribe import hipify as scribe

    return scribe(text, HipifyConfig(target_arch="gfx1100", wavefront_size=32)).source


def mutant_predictions(store: Store, tasks: dict[str, RealTask], mutants: list) -> list[Prediction]:
    """Mutants of human ports (:func:`cass.execution.mutation.suite_mutants`) as predictions: the port's files, one of
    them mutated."""
    return [Prediction(m.program, "source", {p: store.get_text(m.files[p], SOURCE_ERRORS)
                                             for p in tasks[m.program].human}) for m in mutants]


def mutant_baseline(store: Store, params: dict, tasks: dict[str, RealTask]) -> list[Prediction]:
    """Per task the first of :data:`MUTANT_DRAWS` mutants of its human port (the default seed) that compiles for
    AMD and builds through HIP's NVIDIA back end to another binary than the port's; a task with none has no
    prediction."""
    from cass.benchmark.real_evaluate import evaluate_real
    from cass.execution.mutation import DEFAULT_SEED, suite_mutants

    mutants = suite_mutants(store, tasks, {}, MUTANT_DRAWS, DEFAULT_SEED)
    predictions = mutant_predictions(store, tasks, mutants)
    rows, report = evaluate_real(store, params, tasks, None, predictions, None, build_programs=True)
    programs, chosen = report["programs"], {}
    for i, (mutant, row) in enumerate(zip(mutants, [r for r in rows if not r["baseline_reference"]], strict=True)):
        binary = programs.get(str(i))
        if row["amd_compiles"] and binary and binary != programs.get(f"reference:{mutant.program}"):
            chosen.setdefault(mutant.program, predictions[i])
    return list(chosen.values())


def hipify_files(store: Store, params: dict, files: dict[Hashable, tuple[str, str]], repair: bool,
                 workers: int | None, programs: dict[Hashable, list[str]] | None = None) -> dict[Hashable, str]:
    """hipify-perl's translation of every ``key: (path, digest)`` (with the pipeline's repair layer where
    ``repair``, which, as the repair stage does, leaves alone the derived header names that the file's program
    provides: the paths ``programs`` gives the key, else the file's own), as the digest of the HIP text ("" where
    hipify-perl failed)."""
    amd = load_toolchains(params["amd"]["toolchain"])["amd"]
    plans = {key: [TargetRun(Target("source", "hip", (amd.hipify_step(path),), "hip"), {path: digest})]
             for key, (path, digest) in files.items()}   # one step: its stdout
    builds = run_plans(store, amd, plans, params["hipify"]["timeout_s"], workers)[0]
    hip = {key: b.binary or store.put(b"") for key, b in builds.items()}
    if repair:
        repairer = pipeline_repairer(store, params)
        paths = programs or {key: [path] for key, (path, _) in files.items()}
        hip = {key: repairer(digest, repairer.target.names.provided_by(paths[key]))[0] for key, digest in hip.items()}
    return hip


def hipify(store: Store, params: dict, tasks: dict[str, Task], repair: bool, workers: int | None) -> dict[str, str]:
    """hipify-perl's translation of each task's CUDA program (repaired where ``repair``)."""
    hip = hipify_files(store, params, {t.id: (t.path, store.put_text(t.cuda)) for t in tasks.values()}, repair,
                       workers)
    return {t: store.get_text(d) for t, d in hip.items()}


def real_baseline(name: str, store: Store, params: dict, tasks: dict[str, RealTask]) -> list[Prediction]:
    """The predictions of baseline ``name`` for every real-program task: its files by path (a file that is not
    UTF-8 keeps its bytes: :data:`cass.benchmark.real_evaluate.SOURCE_ERRORS`)."""
    if name == "reference":
        return [Prediction(t, "source", {p: store.get_text(d, SOURCE_ERRORS) for p, d in task.human.items()})
                for t, task in tasks.items()]
    if name == "identity":
        return [Prediction(t, "source", {p: store.get_text(d, SOURCE_ERRORS) for p, d in task.files.items()})
                for t, task in tasks.items()]
    if name == "rocm-scribe":
        return [Prediction(t, "source", {p: rocm_scribe(store.get_text(d, SOURCE_ERRORS))
                                         for p, d in task.files.items()}) for t, task in tasks.items()]
    if name == "mutant":
        return mutant_baseline(store, params, tasks)
    if name in ("hipify-perl", "pipeline"):
        files = {(t, p): (p, d) for t, task in tasks.items() for p, d in task.files.items()}
        hip = hipify_files(store, params, files, name == "pipeline", params["executor"]["workers"] or None,
                           {(t, p): list(tasks[t].files) for t, p in files})
        return [Prediction(t, "source", {p: store.get_text(hip[t, p], SOURCE_ERRORS) for p in task.files})
                for t, task in tasks.items()]
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(REAL_BASELINES)}")


def baseline(name: str, store: Store, params: dict, tasks: dict[str, Task]) -> list[Prediction]:
    """The predictions of baseline ``name`` for every task (both tasks where the baseline has both)."""
    workers = params["executor"]["workers"] or None
    if name == "reference":
        compiled, _ = amd_compiles(store, params, {t: (task.path, task.reference_hip) for t, task in tasks.items()},
                                   workers)
        return [*(Prediction(t, "source", task.reference_hip) for t, task in tasks.items()),
                *(Prediction(t, "asm", normalize_amd(store.get_text(b.binary)))
                  for t, b in compiled.items() if b.binary)]
    if name == "identity":
        return [*(Prediction(t, "source", task.cuda) for t, task in tasks.items()),
                *(Prediction(t, "asm", text) for t, text in sass(store, params, tasks, workers).items())]
    if name in ("hipify-perl", "pipeline"):
        return [Prediction(t, "source", text)
                for t, text in hipify(store, params, tasks, name == "pipeline", workers).items()]
    if name == "rocm-scribe":
        return [Prediction(t, "source", rocm_scribe(task.cuda)) for t, task in tasks.items()]
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(BASELINES)}")
