"""Stage ``toolchain_fingerprints``: record which compilers build the dataset (versions and fingerprints): this
machine's, or the connected vendor hosts' when a Dask scheduler is configured; with them HIP's NVIDIA back end
(``hip-nvidia``), which builds the pairs' HIP programs and the `pair` stage's checks.

It runs on every `dvc repro` (``always_changed``) because a compiler can change outside the
repository; its output changes only when a toolchain does, and the stages that run tools depend
on it, so DVC reruns them then (and their store lookups miss, since fingerprints are in every
action key). Paths are not recorded: they differ between machines, the fingerprints do not.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from cass.engine.actions import pipeline_toolchains
from cass.engine.placement import Placement
from cass.pipeline.context import Stage
from cass.pipeline.manifests import TOOLCHAIN_FILE
from toolchains import HipNvidiaToolchain


def run(stage: Stage) -> None:
    hip_nvidia = Placement.of(stage.params).toolchain(HipNvidiaToolchain.vendor)
    toolchains = {**pipeline_toolchains(stage.params), hip_nvidia.vendor: hip_nvidia}
    with ThreadPoolExecutor(max_workers=8) as pool:   # version commands wait on processes: start them together
        for tc in toolchains.values():
            for tool in tc.tools():
                pool.submit(tc.version, tool)   # cached on tc; a failure is raised again below, where it was
    record = {
        vendor: {tool: {"version": tc.version(tool), "fingerprint": tc.fingerprint(tool)} for tool in tc.tools()}
        for vendor, tc in toolchains.items()
    }
    path = stage.data_dir / TOOLCHAIN_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    changed = not path.exists() or path.read_text() != text
    if changed:
        path.write_text(text)
    counts = ", ".join(f"{vendor} {len(tools)}" for vendor, tools in record.items())
    print(f"toolchain_fingerprints: {counts} tools, {'changed' if changed else 'unchanged'} ({path})")
