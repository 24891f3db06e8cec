"""The baselines every evaluation is read against, as predictions: ``reference`` (the reference HIP and its
device assembly: must score 100% where it runs, the harness's own check), ``identity`` (the input returned
unchanged: the CUDA source, the SASS) and ``hipify-perl`` (the rule-based translator as it is, without the
pipeline's repair layer; source task only)."""

from __future__ import annotations

from cass.benchmark.evaluate import amd_compiles
from cass.benchmark.tasks import Prediction, Task
from cass.compiling.compile import TargetRun
from cass.execution.programs import run_plans
from store import Store
from toolchains import Target, load_toolchains

BASELINES = ("reference", "identity", "hipify-perl")


def _main(task_id: str) -> str:
    return f"{task_id}.cu"


def sass(store: Store, params: dict, tasks: dict[str, Task], workers: int | None) -> dict[str, str]:
    """Each task's SASS for ``nvidia.archs[0]`` (the assembly task's input)."""
    nvidia = load_toolchains(params["amd"]["toolchain"])["nvidia"]
    arch = params["nvidia"]["archs"][0]
    plans = {}
    for task in tasks.values():
        targets = nvidia.targets(_main(task.id), [arch], params["nvidia"]["flags"])
        device = next(t for t in targets if t.kind == "device")
        plans[task.id] = [TargetRun(device, {_main(task.id): store.put_text(task.cuda)})]
    builds, _, _ = run_plans(store, nvidia, plans, params["nvidia"]["timeout_s"], workers)
    return {t: store.get_text(b.binary) if b.binary else "" for t, b in builds.items()}


def hipify(store: Store, params: dict, tasks: dict[str, Task], workers: int | None) -> dict[str, str]:
    """hipify-perl's translation of each task's CUDA program."""
    amd = load_toolchains(params["amd"]["toolchain"])["amd"]
    step = amd.hipify_step(_main("task"))   # a one-step target: hipify-perl's stdout is the artifact
    plans = {t.id: [TargetRun(Target("source", "hip", (step,), "hip"), {_main("task"): store.put_text(t.cuda)})]
             for t in tasks.values()}
    builds, _, _ = run_plans(store, amd, plans, params["hipify"]["timeout_s"], workers)
    return {t: store.get_text(b.binary) if b.binary else "" for t, b in builds.items()}


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
