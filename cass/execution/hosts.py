"""Which run host the ``execute`` stage uses (params.yaml ``execute.host``), and recorded GPU hosts.

``auto``: the ``gpu`` workers of the Dask scheduler when one is configured (``executor.scheduler``,
``CASS_SCHEDULER``), else this machine's NVIDIA GPU when ``nvidia-smi`` finds one, else none. ``cpu``: this machine
without a GPU (programs that launch no kernel; the runner's tests). ``recorded:<name>``: a GPU host
this machine cannot reach, whose runs came back from a batch (``cass gpu-batch``); its facts are in
``gpu_hosts/<name>.json`` (in git, so a collaborator keys runs the same way) and its runs in the
store (shared by ``dvc push``/``pull``). ``none``: build and run nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from cass.engine.placement import Placement
from hosts.gpu import RunHost, cpu_host, local_gpu_host

RECORDED_DIR = Path("gpu_hosts")


@dataclass(frozen=True)
class ExecutionHost:
    """A run host under a name; ``live``: runs that are not in the store can be run on it now."""

    name: str
    host: RunHost
    live: bool
    placement: Placement | None = None
    """The placement whose scheduler's ``gpu`` workers run the programs (None: this machine)."""

    def require_arch(self, archs: list[str]) -> None:
        """Refuse a GPU the programs carry no SASS for (``execute.archs``), naming the fix."""
        if self.host.has_gpu and self.host.sm not in archs:
            raise ValueError(f"run host {self.name} is a {self.host.gpu} ({self.host.sm}), but the programs are "
                             f"built for {archs}: add {self.host.sm} to params.yaml execute.archs")


def recorded_path(name: str) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ValueError(f"GPU host name {name!r}: use letters, digits, '.', '_' and '-'")
    return RECORDED_DIR / f"{name}.json"


def record_host(name: str, host: RunHost) -> Path:
    """Write ``gpu_hosts/<name>.json`` (refusing to change the facts of a host recorded before)."""
    path = recorded_path(name)
    text = json.dumps({"name": name, "host": asdict(host), "fingerprint": host.fingerprint()}, indent=2,
                      sort_keys=True) + "\n"
    if path.exists() and path.read_text() != text:
        raise ValueError(f"{path} records other facts ({json.loads(path.read_text())['host']}) than this batch's "
                         f"host ({asdict(host)}); import it under another name")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def resolve_host(setting: str, placement: Placement | None = None) -> ExecutionHost | None:
    """The run host ``execute.host`` names, or None where there is none (``auto``: the GPU host of ``placement``'s
    scheduler first)."""
    if setting == "none":
        return None
    if setting == "cpu":
        return ExecutionHost("cpu", cpu_host(), live=True)
    if setting == "auto":
        if placement is not None and (host := placement.gpu_host()):
            return ExecutionHost("cluster", host, live=True, placement=placement)
        host = local_gpu_host()
        return ExecutionHost("local", host, live=True) if host else None
    if setting.startswith("recorded:"):
        name = setting.removeprefix("recorded:")
        path = recorded_path(name)
        if not path.is_file():
            known = sorted(p.stem for p in RECORDED_DIR.glob("*.json"))
            raise FileNotFoundError(f"params.yaml execute.host is {setting!r} but {path} does not exist "
                                    f"(recorded hosts: {known or 'none'}); `cass gpu-batch import` records one")
        return ExecutionHost(name, RunHost(**json.loads(path.read_text())["host"]), live=False)
    raise ValueError(f"params.yaml execute.host is {setting!r}; use auto, cpu, none or recorded:<name>")
