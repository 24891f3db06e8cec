"""The baselines every evaluation is read against, as predictions: ``reference`` (the reference HIP and its
device assembly: must score 100% where it runs, the harness's own check), ``identity`` (the input returned
unchanged: the CUDA source, the SASS) and ``hipify-perl`` (the rule-based translator as it is, without the
pipeline's repair layer; source task only)."""

from __future__ import annotations

from cass.benchmark.evaluate import amd_compiles
from cass.benchmark.tasks import Prediction, Task
from cass.engine.targets import TargetRun
from cass.execution.programs import Build, run_plans
from cass.text.amdgpu import normalize_amd
from cass.text.sass import normalize_sass
from store import Store
from toolchains import Target, load_toolchains

BASELINES = ("reference", "identity", "hipify-perl")


def artifact_texts(store: Store, builds: dict[str, Build]) -> dict[str, str]:
    """Each build's artifact as text ("" where it failed: such a prediction then fails as it should)."""
    return {key: store.get_text(b.binary) if b.binary else "" for key, b in builds.items()}


def sass(store: Store, params: dict, tasks: dict[str, Task], workers: int | None) -> dict[str, str]:
    """Each task's SASS for ``nvidia.archs[0]``, normalised as the instruct export's SASS is: the assembly task's
    input ("" where the task does not compile for NVIDIA)."""
    nvidia = load_toolchains(params["amd"]["toolchain"])["nvidia"]
    arch = params["nvidia"]["archs"][0]
    plans = {}
    for task in tasks.values():
        targets = nvidia.targets(task.path, [arch], params["nvidia"]["flags"])
        device = next(t for t in targets if t.kind == "device")
        plans[task.id] = [TargetRun(device, {task.path: store.put_text(task.cuda)})]
    texts = artifact_texts(store, run_plans(store, nvidia, plans, params["nvidia"]["timeout_s"], workers)[0])
    return {task: normalize_sass(text) if text else "" for task, text in texts.items()}


def hipify(store: Store, params: dict, tasks: dict[str, Task], workers: int | None) -> dict[str, str]:
    """hipify-perl's translation of each task's CUDA program."""
    amd = load_toolchains(params["amd"]["toolchain"])["amd"]
    plans = {t.id: [TargetRun(Target("source", "hip", (amd.hipify_step(t.path),), "hip"),   # one step: its stdout
                              {t.path: store.put_text(t.cuda)})] for t in tasks.values()}
    return artifact_texts(store, run_plans(store, amd, plans, params["hipify"]["timeout_s"], workers)[0])


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
    if name == "hipify-perl":
        return [Prediction(t, "source", text) for t, text in hipify(store, params, tasks, workers).items()]
    raise ValueError(f"unknown baseline {name!r}; choose one of {list(BASELINES)}")
