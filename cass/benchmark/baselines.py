"""The baselines every evaluation is read against, as predictions: ``reference`` (the reference HIP and its
device assembly: must score 100% where it runs, the harness's own check), ``identity`` (the input returned
unchanged: the CUDA source, the SASS) and ``hipify-perl`` (the rule-based translator as it is, without the
pipeline's repair layer; source task only)."""

from __future__ import annotations

from cass.benchmark.evaluate import amd_compiles, main_file
from cass.benchmark.tasks import Prediction, Task
from cass.compiling.compile import TargetRun
from cass.execution.programs import Build, run_plans
from store import Store
from toolchains import Target, load_toolchains

BASELINES = ("reference", "identity", "hipify-perl")


def artifact_texts(store: Store, builds: dict[str, Build]) -> dict[str, str]:
    """Each build's artifact as text ("" where it failed: such a prediction then fails as it should)."""
    return {key: store.get_text(b.binary) if b.binary else "" for key, b in builds.items()}


def sass(store: Store, params: dict, tasks: dict[str, Task], workers: int | None) -> dict[str, str]:
    """Each task's SASS for ``nvidia.archs[0]`` (the assembly task's input)."""
    nvidia = load_toolchains(params["amd"]["toolchain"])["nvidia"]
    arch = params["nvidia"]["archs"][0]
    plans = {}
    for task in tasks.values():
        targets = nvidia.targets(main_file(task.id), [arch], params["nvidia"]["flags"])
        device = next(t for t in targets if t.kind == "device")
        plans[task.id] = [TargetRun(device, {main_file(task.id): store.put_text(task.cuda)})]
    return artifact_texts(store, run_plans(store, nvidia, plans, params["nvidia"]["timeout_s"], workers)[0])


def hipify(store: Store, params: dict, tasks: dict[str, Task], workers: int | None) -> dict[str, str]:
    """hipify-perl's translation of each task's CUDA program."""
    amd = load_toolchains(params["amd"]["toolchain"])["amd"]
    step = amd.hipify_step(main_file("task"))   # a one-step target: hipify-perl's stdout is the artifact
    plans = {t.id: [TargetRun(Target("source", "hip", (step,), "hip"), {main_file("task"): store.put_text(t.cuda)})]
             for t in tasks.values()}
    return artifact_texts(store, run_plans(store, amd, plans, params["hipify"]["timeout_s"], workers)[0])


def baseline(name: str, store: Store, params: dict, tasks: dict[str, Task]) -> list[Prediction]:
    """The predictions of baseline ``name`` for every task (both tasks where the baseline has both)."""
    workers = params["executor"]["workers"] or None
    if name == "reference":
        compiled, _ = amd_compiles(store, params, {t: (t, task.reference_hip) for t, task in tasks.items()}, workers)
        return [*(Prediction(t, "source", task.reference_hip) for t, task in tasks.items()),
                *(Prediction(t, "asm", store.get_text(b.binary)) for t, b in compiled.items() if b.binary)]
    if name == "identity":
        return [*(Prediction(t, "source", task.cuda) for t, task in tasks.items()),
                *(Prediction(t, "asm", text) for t, text in sass(store, params, tasks, workers).items())]
    if name == "hipify-perl":
        return [Prediction(t, "source", text) for t, text in hipify(store, params, tasks, workers).items()]
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(BASELINES)}")
