"""The baselines every evaluation is read against, as predictions: ``reference`` (the reference HIP and its
device assembly: must score 100% where it runs, the harness's own check; on the real-program suite the human
port, the suite's ceiling), ``identity`` (the input returned unchanged: the CUDA source, the SASS), ``hipify-perl``
(the rule-based translator as it is; source task only), ``pipeline`` (hipify-perl and the pipeline's repair
layer, as the pipeline translates a file; source task only), ``rocm-scribe`` (a peer translator from PyPI, its
``hipify`` for RDNA3's wave32, every file as it is; source task only) and, on the real-program suite, ``mutant`` (one
mutant of each human port that builds on both platforms to another program than the port and is shown to behave
otherwise on arguments no verdict uses: the oracle must fail it, :mod:`cass.execution.mutation`,
:func:`choose_mutants`)."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from cass.benchmark import BASELINES, REAL_BASELINES
from cass.benchmark.assembly import sass
from cass.benchmark.evaluate import amd_compiles
from cass.benchmark.real_evaluate import SOURCE_ERRORS
from cass.benchmark.real_programs import task_runs
from cass.benchmark.real_tasks import RealTask
from cass.benchmark.tasks import Prediction, Task
from cass.engine.placement import Placement
from cass.engine.targets import TargetRun, finished, run_plans, stop_error
from cass.execution.compare import MIN_CALIBRATION_RUNS
from cass.execution.hosts import ExecutionHost
from cass.execution.programs import ProgramRun, Run, run_programs
from cass.execution.verify import MATCHES, judge
from cass.text.amdgpu import normalize_amd
from cass.translate.repair import pipeline_repairer
from store import Store
from toolchains import Target

MUTANT_DRAWS = 6
"""Mutants drawn per human port for the ``mutant`` baseline; the first shown to behave otherwise is taken."""
SELECTION = "selection"
"""The argument set (:meth:`RealTask.arguments`) on which a mutant is shown to differ from the human port."""
EXACT = {"rtol": 0.0, "atol": 0.0}
"""How a mutant's selection run is held to the port's: no number may move (volatile fields aside)."""
UNDECIDED = ("no_signal", "no_output", "nondeterministic", "needs_input")
"""Verdicts of a mutant's selection run that show no difference: the port's output tells nothing there."""


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


@dataclass
class MutantChoice:
    """The ``mutant`` baseline's choice: per task the first candidate (a mutant of the human port that compiles for
    AMD and builds through HIP's NVIDIA back end to another binary than the port's, in the order drawn) whose run on
    the :data:`SELECTION` arguments, judged against the port's :data:`~cass.execution.compare.MIN_CALIBRATION_RUNS`
    runs of them with no tolerance (:data:`EXACT`), does not match: another output, other device reads, another
    kernel count, a failure. The judged sets (visible, hidden) never choose."""

    predictions: list[Prediction] = field(default_factory=list)
    planned: set[ProgramRun] = field(default_factory=set)
    """The selection runs: the port's and each candidate's."""
    left: dict[str, str] = field(default_factory=dict)
    """Per task without a mutant, why."""

    def summary(self) -> str:
        """How many tasks have no mutant, per reason (a failing port's own detail aside)."""
        counts = Counter(reason.split(":")[0] for reason in self.left.values())
        return ", ".join(f"{n} {reason}" for reason, n in counts.most_common()) or "none"

    def said(self) -> str:
        """The choice in a line: how many tasks have a mutant, and why the others have none."""
        return (f"mutant: {len(self.predictions)} of {len(self.predictions) + len(self.left)} tasks have a mutant; "
                f"the others: {self.summary()}")


def first_differing(store: Store, port: list[Run], candidates: list[Run | None],
                    takes_arguments: bool) -> int | str:
    """The index of the first candidate run that does not match the port's runs (:class:`MutantChoice`), or why
    there is none: a candidate before it not run yet, or none differs. A number that varies between the port's runs
    is held to their range widened by their spread, so a candidate whose value of it merely falls outside counts as
    differing: the choice errs towards taking a mutant."""
    for i, run in enumerate(candidates):
        if run is None:
            return f"a candidate's selection run is not recorded: candidate {i + 1}"
        verdict = judge(store, {"cuda": port, "hip": [run]}, takes_arguments, EXACT)
        if verdict.status not in (*MATCHES, *UNDECIDED):
            return i
    return ("no candidate behaves otherwise than the human port on the selection arguments: "
            f"{len(candidates)} candidates")


def choose_for(store: Store, task: RealTask, port: list[Run | None] | None, candidates: list[Run | None]) -> int | str:
    """The index of ``task``'s chosen candidate, from the port's selection runs (None: the port does not build;
    None in it: a run not recorded) and each candidate's (:class:`MutantChoice`), or why there is none."""
    if not candidates:
        return "no mutant of the human port builds to another program"
    if port is None:
        return "the human port does not build"
    if task.arguments(SELECTION) in (task.visible_args, task.hidden_args):
        return "no selection arguments apart from the judged ones"
    if None in port:
        return "the human port's selection runs are not recorded"
    if failed := next((n for n, r in enumerate(port, 1) if not r.ok), None):
        return f"the human port fails on the selection arguments: {port[failed - 1].failure(store, failed)}"
    if any(r.kernel_launches == 0 for r in port):   # every candidate would "differ" by its kernel count
        return "the human port launches no kernel on the selection arguments"
    return first_differing(store, port, candidates, bool(task.visible_args))


def choose_mutants(store: Store, params: dict, tasks: dict[str, RealTask], host: ExecutionHost | None) -> MutantChoice:
    """The ``mutant`` baseline (:class:`MutantChoice`) from :data:`MUTANT_DRAWS` mutants of each human port (the
    default seed), with the selection runs ``host`` gives (on a recorded host, those recorded; none without a host:
    then ``planned`` says what to run)."""
    from cass.benchmark.real_evaluate import evaluate_real
    from cass.execution.mutation import DEFAULT_SEED, suite_mutants

    execute = params["execute"]
    mutants = suite_mutants(store, tasks, {}, MUTANT_DRAWS, DEFAULT_SEED)
    predictions = mutant_predictions(store, tasks, mutants)
    rows, report = evaluate_real(store, params, tasks, None, predictions, None, build_programs=True)
    if stopped := [r for r in rows if r["verdict"] == "not_run:transient"]:   # would change which mutant is chosen
        raise stop_error("the mutant baseline's build", len(stopped), len(rows), stopped[0]["detail"])
    programs, choice = report["programs"], MutantChoice()
    candidates: dict[str, list[tuple[Prediction, ProgramRun]]] = {t: [] for t in tasks}
    for i, (mutant, row) in enumerate(zip(mutants, [r for r in rows if not r["baseline_reference"]], strict=True)):
        binary, task = programs.get(str(i)), tasks[mutant.program]
        if row["amd_compiles"] and binary and binary != programs.get(f"reference:{mutant.program}"):
            candidates[task.id].append((predictions[i], task_runs(task, binary, SELECTION, 1, execute)[0]))
    ports = {t: task_runs(tasks[t], programs[f"reference:{t}"], SELECTION, MIN_CALIBRATION_RUNS, execute)
             for t, found in candidates.items() if found and programs.get(f"reference:{t}")}
    choice.planned = {r for runs in ports.values() for r in runs} | {r for c in candidates.values() for _, r in c}
    found = run_programs(store, host, choice.planned, execute["workers"])[0] \
        if host else {}

    def recorded(run: ProgramRun) -> Run | None:
        return Run.of(store, found[run], run.invocation.args) if found.get(run) else None

    for task_id, task in tasks.items():
        port = [recorded(r) for r in ports[task_id]] if task_id in ports else None
        chosen = choose_for(store, task, port, [recorded(r) for _, r in candidates[task_id]])
        if isinstance(chosen, int):
            choice.predictions.append(candidates[task_id][chosen][0])
        else:
            choice.left[task_id] = chosen
    return choice


def hipify_files(store: Store, params: dict, files: dict[Hashable, tuple[str, str]], repair: bool,
                 programs: dict[Hashable, list[str]] | None = None) -> dict[Hashable, str]:
    """hipify-perl's translation of every ``key: (path, digest)`` (with the pipeline's repair layer where
    ``repair``, which, as the repair stage does, leaves alone the derived header names that the file's program
    provides: the paths ``programs`` gives the key, else the file's own), as the digest of the HIP text ("" where
    hipify-perl failed); a run that was stopped (a timeout, a lost process) fails the evaluation, saying so."""
    placement = Placement.of(params)
    amd = placement.toolchain("amd", params["amd"]["toolchain"])
    plans = {key: [TargetRun(Target("source", "hip", (amd.hipify_step(path),), "hip"), {path: digest})]
             for key, (path, digest) in files.items()}   # one step: its stdout
    builds = finished(run_plans(store, amd, plans, params["hipify"]["timeout_s"], placement)[0], "hipify-perl")
    hip = {key: b.binary or store.put(b"") for key, b in builds.items()}
    if repair:
        repairer = pipeline_repairer(store, params)
        paths = programs or {key: [path] for key, (path, _) in files.items()}
        hip = {key: repairer(digest, repairer.target.names.provided_by(paths[key]))[0] for key, digest in hip.items()}
    return hip


def hipify(store: Store, params: dict, tasks: dict[str, Task], repair: bool) -> dict[str, str]:
    """hipify-perl's translation of each task's CUDA program (repaired where ``repair``)."""
    hip = hipify_files(store, params, {t.id: (t.path, store.put_text(t.cuda)) for t in tasks.values()}, repair)
    return {t: store.get_text(d) for t, d in hip.items()}


def real_baseline(name: str, store: Store, params: dict, tasks: dict[str, RealTask],
                  host: ExecutionHost | None = None) -> list[Prediction]:
    """The predictions of baseline ``name`` for every real-program task: its files by path (a file that is not
    UTF-8 keeps its bytes: :data:`cass.benchmark.real_evaluate.SOURCE_ERRORS`); ``mutant`` chooses with the runs
    ``host`` gives (:func:`choose_mutants`)."""
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
        choice = choose_mutants(store, params, tasks, host)
        if choice.left:   # said, never dropped silently: the evaluation goes on with the tasks that have one
            print(choice.said(), file=sys.stderr)
        return choice.predictions
    if name in ("hipify-perl", "pipeline"):
        files = {(t, p): (p, d) for t, task in tasks.items() for p, d in task.files.items()}
        hip = hipify_files(store, params, files, name == "pipeline", {(t, p): list(tasks[t].files) for t, p in files})
        return [Prediction(t, "source", {p: store.get_text(hip[t, p], SOURCE_ERRORS) for p in task.files})
                for t, task in tasks.items()]
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(REAL_BASELINES)}")


def baseline(name: str, store: Store, params: dict, tasks: dict[str, Task]) -> list[Prediction]:
    """The predictions of baseline ``name`` for every task (both tasks where the baseline has both)."""
    if name == "reference":
        compiled = finished(amd_compiles(store, params, {t: (task.path, task.reference_hip)
                                                         for t, task in tasks.items()})[0], "the references' hipcc")
        return [*(Prediction(t, "source", task.reference_hip) for t, task in tasks.items()),
                *(Prediction(t, "asm", normalize_amd(store.get_text(b.binary)))
                  for t, b in compiled.items() if b.binary)]
    if name == "identity":
        return [*(Prediction(t, "source", task.cuda) for t, task in tasks.items()),
                *(Prediction(t, "asm", text) for t, text in sass(store, params, tasks).items())]
    if name in ("hipify-perl", "pipeline"):
        return [Prediction(t, "source", text)
                for t, text in hipify(store, params, tasks, name == "pipeline").items()]
    if name == "rocm-scribe":
        return [Prediction(t, "source", rocm_scribe(task.cuda)) for t, task in tasks.items()]
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(BASELINES)}")
