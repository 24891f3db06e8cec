"""The assembly task's input: each own task's SASS, normalised as the instruct export's SASS is (the generate stage
prompts with it; the identity baseline returns it)."""

from __future__ import annotations

from cass.benchmark.tasks import Task
from cass.engine.placement import Placement
from cass.engine.targets import Build, TargetRun, finished, run_plans
from cass.text.sass import normalize_sass
from store import Store


def artifact_texts(store: Store, builds: dict[str, Build]) -> dict[str, str]:
    """Each build's artifact as text ("" where it failed: such a prediction then fails as it should)."""
    return {key: store.get_text(b.binary) if b.binary else "" for key, b in builds.items()}


def sass(store: Store, params: dict, tasks: dict[str, Task]) -> dict[str, str]:
    """Each task's SASS for ``nvidia.archs[0]``, normalised as the instruct export's SASS is: the assembly task's
    input ("" where the task does not compile for NVIDIA)."""
    placement = Placement.of(params)
    nvidia = placement.toolchain("nvidia", params["amd"]["toolchain"])
    arch = params["nvidia"]["archs"][0]
    plans = {}
    for task in tasks.values():
        targets = nvidia.targets(task.path, [arch], params["nvidia"]["flags"])
        device = next(t for t in targets if t.kind == "device")
        plans[task.id] = [TargetRun(device, {task.path: store.put_text(task.cuda)})]
    builds = run_plans(store, nvidia, plans, params["nvidia"]["timeout_s"], placement)[0]
    texts = artifact_texts(store, finished(builds, "nvcc's SASS of the tasks"))
    return {task: normalize_sass(text) if text else "" for task, text in texts.items()}
