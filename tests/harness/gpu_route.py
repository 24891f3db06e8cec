"""How the ``gpu``-marked tests reach a GPU: this machine's, or a GPU host reached by copying files.

``CASS_GPU_TESTS`` says which:

- unset: this machine's NVIDIA GPU (``execute.host: auto``); without one the tests skip;
- ``collect:DIR``: each test builds its programs here and writes the runs it needs as a batch ``DIR/<test>``, then
  skips. On the GPU host, ``python -m hosts.gpu run-batch DIR/<test>`` runs each batch (``--resume`` where a
  command's time is limited). Bring ``DIR`` back;
- ``recorded:NAME:DIR``: each test imports the results of ``DIR/<test>`` into its store as GPU host ``NAME``
  (``gpu_hosts/NAME.json``) and judges those runs: the same programs, keys and oracle as a live run.

docs/tests.md gives the recipe; bench/RESULTS.md ("The test suite") the outcome with its commit.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cass.engine.placement import Placement
from cass.execution.batch import import_results, write_batch
from cass.execution.hosts import ExecutionHost, resolve_host
from cass.execution.programs import ProgramRun, ProgramSource, Run, build_program_targets, run_programs
from harness.project import run_in
from hosts.gpu import local_gpu_host
from store import Store
from toolchains.sandboxed_runs import Invocation, ProgramLimits

ROUTE = "CASS_GPU_TESTS"


@dataclass(frozen=True)
class GpuRoute:
    """Where this run's ``gpu`` tests get their program runs."""

    mode: str
    """``live`` (this machine's GPU), ``collect`` or ``recorded``."""
    folder: Path | None = None
    name: str | None = None

    @classmethod
    def from_environment(cls) -> GpuRoute:
        setting = os.environ.get(ROUTE, "")
        if setting.startswith("collect:"):
            return cls("collect", Path(setting.removeprefix("collect:")).resolve())
        if setting.startswith("recorded:"):
            name, _, folder = setting.removeprefix("recorded:").partition(":")
            if not name or not folder:
                raise ValueError(f"{ROUTE}={setting!r}: write recorded:NAME:DIR")
            return cls("recorded", Path(folder).resolve(), name)
        if setting:
            raise ValueError(f"{ROUTE}={setting!r}: use collect:DIR or recorded:NAME:DIR (unset: this machine's GPU)")
        return cls("live")

    def require(self) -> None:
        """Skip at once where this route has no GPU: live, on a machine without one (before anything is built)."""
        if self.mode == "live" and local_gpu_host() is None:
            pytest.skip("no NVIDIA GPU on this machine (nvidia-smi finds none)")

    def setting(self) -> str:
        """The ``execute.host`` a project of these tests runs with."""
        return f"recorded:{self.name}" if self.mode == "recorded" else "auto"

    def host(self, store: Store, test: str, params: dict, planned: set) -> ExecutionHost:
        """The run host of ``planned`` (runs of programs in ``store``): this machine's GPU (live; skips without
        one); a batch ``DIR/<test>`` of them, then a skip (collect); or the recorded host with ``DIR/<test>``'s
        results imported (recorded)."""
        if self.mode == "collect":
            count = write_batch(store, self.folder / test, planned, params["execute"])
            pytest.skip(f"{count} runs written to {self.folder / test} for a GPU host")
        if self.mode == "recorded":
            import_results(store, params["execute"], self.folder / test, self.name)
            return resolve_host(f"recorded:{self.name}")
        host = resolve_host("auto")
        if host is None:
            pytest.skip("no NVIDIA GPU on this machine (nvidia-smi finds none)")
        return host

    def project(self, root: Path, test: str) -> None:
        """Ready a project whose stages are built up to ``pair`` to run its programs on this route: collect exports
        its batch (``cass gpu-batch export``) and skips; recorded imports ``DIR/<test>`` into its store."""
        cass = str(Path(sys.executable).parent / "cass")
        if self.mode == "collect":
            print(run_in([cass, "gpu-batch", "export", str(self.folder / test)], root))
            pytest.skip(f"the runs of {root.name} written to {self.folder / test} for a GPU host")
        if self.mode == "recorded":
            run_in([cass, "gpu-batch", "import", str(self.folder / test), "--name", self.name], root)
        self.require()

    def run_cuda(self, store: Store, test: str, params: dict, sources: dict[str, str],
                 limits: ProgramLimits) -> dict[str, Run]:
        """Each CUDA source (one file) built as the ``execute`` stage builds a program (the same bytes on every
        machine), then run once, without arguments, on this route's GPU: the runs by name. Every source must build."""
        programs = {name: ProgramSource("cuda", [f"{name}.cu"], [], {f"{name}.cu": store.put(source.encode())})
                    for name, source in sources.items()}
        builds, _ = build_program_targets(store, params["execute"], programs, Placement.local(1))
        assert all(b.binary for b in builds.values()), {name: b.detail for name, b in builds.items() if not b.binary}
        planned = {name: ProgramRun(b.binary, Invocation(), limits, 1) for name, b in builds.items()}
        host = self.host(store, test, params, set(planned.values()))
        found, _ = run_programs(store, host, set(planned.values()), 1)
        return {name: Run.of(store, found[run]) for name, run in planned.items()}
