"""Stage ``toolchain_fingerprints``: record which compilers build the dataset (versions and fingerprints): this
machine's, or the connected vendor hosts' when a Dask scheduler is configured; with them HIP's NVIDIA back end
(``hip-nvidia``), which builds the pairs' HIP programs and the `pair` stage's checks.

The compilers live outside the repository, so DVC cannot see them change. `cass toolchains` (which
``scripts/setup.sh`` runs after installing them) writes the same record to :data:`MACHINE_RECORD`, which this stage
depends on: DVC reruns it when that record changes, and a `dvc repro` with nothing to do starts no process. The stage
computes the record again itself (that file only tells DVC when to look). Its output changes only when a toolchain
does, and the stages that run tools depend on it, so DVC reruns them then (and their store lookups miss, since
fingerprints are in every action key). Paths are not recorded: they differ between machines, the fingerprints do
not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cass.engine.actions import pipeline_toolchains
from cass.engine.placement import Placement
from cass.pipeline.context import Stage
from cass.pipeline.manifests import TOOLCHAIN_FILE
from toolchains import HipNvidiaToolchain

MACHINE_RECORD = Path(".cass") / TOOLCHAIN_FILE
"""Where `cass toolchains` records, in a pipeline project, the toolchains this machine builds with (dvc.yaml lists it
among this stage's deps)."""


def toolchain_record(params: Mapping) -> dict:
    """{vendor: {tool: {version, fingerprint}}} of the toolchains ``params`` (``executor``, ``amd.toolchain``)
    place: the nvidia and amd ones, and HIP's NVIDIA back end."""
    hip_nvidia = Placement.of(params).toolchain(HipNvidiaToolchain.vendor)
    toolchains = {**pipeline_toolchains(params), hip_nvidia.vendor: hip_nvidia}
    with ThreadPoolExecutor(max_workers=8) as pool:   # version commands wait on processes: start them together
        for tc in toolchains.values():
            for tool in tc.tools():
                pool.submit(tc.version, tool)   # cached on tc; a failure is raised again below, where it was
    return {vendor: {tool: {"version": tc.version(tool), "fingerprint": tc.fingerprint(tool)} for tool in tc.tools()}
            for vendor, tc in toolchains.items()}


def write_record(record: dict, path: Path) -> bool:
    """Write ``record`` to ``path`` unless it holds it already (its time then stays); whether it changed."""
    text = json.dumps(record, indent=2, sort_keys=True) + "\n"
    changed = not path.exists() or path.read_text() != text
    if changed:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return changed


def run(stage: Stage) -> None:
    record = toolchain_record(stage.params)
    path = stage.data_dir / TOOLCHAIN_FILE
    changed = write_record(record, path)
    counts = ", ".join(f"{vendor} {len(tools)}" for vendor, tools in record.items())
    print(f"toolchain_fingerprints: {counts} tools, {'changed' if changed else 'unchanged'} ({path})")
    if MACHINE_RECORD.exists() and json.loads(MACHINE_RECORD.read_text()) != record:
        print(f"toolchain_fingerprints: {MACHINE_RECORD} (the last `cass toolchains`) records other toolchains "
              "than these: run `cass toolchains` to record them there")
