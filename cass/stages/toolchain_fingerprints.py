"""Stage ``toolchain_fingerprints``: record which compilers build the dataset (versions and fingerprints): this
machine's, or the connected vendor hosts' when a Dask scheduler is configured; with them HIP's NVIDIA back end
(``hip-nvidia``), which builds the pairs' HIP programs and the `pair` stage's checks.

The compilers live outside the repository, so DVC cannot see them change. `cass toolchains` (which
``scripts/setup.sh`` runs after installing them) writes the same record to ``.cass/toolchains.json``, which this stage
depends on: DVC reruns it when that record changes, and a `dvc repro` with nothing to do starts no process. The stage
computes the record again itself (that file only tells DVC when to look). Its output changes only when a toolchain
does, and the stages that run tools depend on it, so DVC reruns them then (and their store lookups miss, since
fingerprints are in every action key). Paths are not recorded: they differ between machines, the fingerprints do
not.
"""

from __future__ import annotations

import json

from cass.engine.actions import toolchain_record
from cass.pipeline.context import Stage
from cass.pipeline.manifests import MACHINE_RECORD, TOOLCHAIN_FILE, write_record


def run(stage: Stage) -> None:
    record = toolchain_record(stage.params)
    path = stage.data_dir / TOOLCHAIN_FILE
    changed = write_record(record, path)
    counts = ", ".join(f"{vendor} {len(tools)}" for vendor, tools in record.items())
    print(f"toolchain_fingerprints: {counts} tools, {'changed' if changed else 'unchanged'} ({path})")
    if MACHINE_RECORD.exists() and json.loads(MACHINE_RECORD.read_text()) != record:
        print(f"toolchain_fingerprints: {MACHINE_RECORD} (the last `cass toolchains`) records other toolchains "
              "than these (an environment that differs, or a scheduler set apart from params.yaml): what this stage "
              "recorded is what the tool stages key their actions with")
