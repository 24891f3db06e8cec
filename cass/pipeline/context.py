"""The stage context: what every DVC stage starts from.

``Stage(name)`` gives a stage

* its parameters (:attr:`Stage.params`): only the keys dvc.yaml lists under the stage's ``meta.params``
  (their values enter the stage's code digest, so DVC reruns the stage whenever a value it reads
  changes: :mod:`cass.pipeline.code_digests`) plus the ambient keys below; reading any other key
  raises :class:`UndeclaredParamError` naming the stage and the key. params.yaml is the one place
  parameters and their values live: the code repeats no defaults.
* the artifact store (:attr:`Stage.store`, with any packs `dvc pull` brought imported),
* the upstream manifests (:meth:`Stage.upstream`) and its own output (:meth:`Stage.output`),
* the record of the actions it used: :meth:`Stage.run` writes ``data/<stage>/actions.parquet`` after the stage's
  work (also after a failure): every key a store found or recorded in the stage's process and every key its work's
  items did on its workers (:func:`store.tracking` around each item). The packs carry those records and ``cass store
  gc`` keeps them, so no stage lists its keys itself and none can forget one.

Ambient keys say where things run or are kept, not what is computed: ``store.dir``, ``executor``
(local workers or a Dask scheduler), ``tokens.cache_dir`` (built tokenizers) and ``amd.toolchain``
(which AMD root; the toolchains it selects reach every tool stage as fingerprints through
``data/toolchain_fingerprints``). Stages that run tools get their toolchains and action runner from
:mod:`cass.engine.actions` (``pipeline_toolchains(stage.params)``, ``stage_runner``): only they
import the toolchains.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import polars as pl
import yaml

from cass.engine.placement import Placement
from cass.engine.stage_work import StageWork
from cass.pipeline.manifests import (
    DATA_DIR,
    PACK_DIR,
    TOOLCHAIN_FILE,
    StageOutput,
    manifest_path,
    read_manifest,
    write_action_keys,
)
from cass.pipeline.metrics import METRICS_DIR, RUN_DIR
from store import Store, tracking

PARAMS_FILE = Path("params.yaml")
PIPELINE_FILE = Path("dvc.yaml")
AMBIENT = ("store.dir", "executor", "amd.toolchain", "tokens.cache_dir")


class UndeclaredParamError(KeyError):
    """A stage read a parameter that dvc.yaml does not list under its ``meta.params``."""

    def __str__(self) -> str:
        return str(self.args[0])


class UndeclaredUpstreamError(RuntimeError):
    """A stage read another stage's output that dvc.yaml does not list among its deps."""


class DeclaredParams(dict):
    """A section of parameters restricted to the declared keys; a missing key names what to declare.

    ``get`` of a missing key raises too: a default belongs in params.yaml, not in the code."""

    def __init__(self, values: dict, stage: str, prefix: str = ""):
        super().__init__({key: DeclaredParams(value, stage, f"{prefix}{key}.") if isinstance(value, dict) else value
                          for key, value in values.items()})
        self.stage, self.prefix = stage, prefix

    def __missing__(self, key: str):
        raise UndeclaredParamError(
            f"stage {self.stage!r} reads parameter '{self.prefix}{key}', which dvc.yaml does not list under the "
            f"stage's meta.params (or params.yaml lacks it): add it there, so DVC reruns the stage when it changes")

    def get(self, key: str, default=None):
        return self[key]


yaml.add_representer(DeclaredParams, yaml.representer.SafeRepresenter.represent_dict, Dumper=yaml.SafeDumper)


def read_yaml(path: Path):
    """A YAML file's data, parsed by libyaml's C parser where PyYAML has it (every stage reads params.yaml and
    dvc.yaml: 0.006 s of CPU against the pure-Python parser's 0.053 s)."""
    return yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_params(path: Path = PARAMS_FILE) -> dict:
    """All pipeline parameters (params.yaml)."""
    return read_yaml(path)


def declared_keys(stage: str, pipeline: Path | dict = PIPELINE_FILE) -> list[str]:
    """The params.yaml keys dvc.yaml (a path, or its parsed text) lists under ``stage``'s ``meta.params``
    (``section`` or ``section.key``)."""
    stages = (pipeline if isinstance(pipeline, dict) else read_yaml(pipeline))["stages"]
    if stage not in stages:
        raise KeyError(f"{pipeline if isinstance(pipeline, Path) else 'dvc.yaml'} has no stage {stage!r}")
    return list((stages[stage].get("meta") or {}).get("params", []))


def restrict(params: dict, keys: list[str], stage: str) -> DeclaredParams:
    """``params`` with only ``keys`` (dotted paths; a whole section or one of its values) reachable."""
    view = DeclaredParams({}, stage)
    for key in sorted(keys, key=lambda k: k.count(".")):   # whole sections first: they cover their keys
        *sections, last = key.split(".")
        values, target = params, view
        for depth, part in enumerate([*sections, last]):
            if not isinstance(values, dict) or part not in values:
                raise UndeclaredParamError(f"stage {stage!r} declares parameter {key!r}, which params.yaml lacks")
            values = values[part]
            if depth == len(sections):
                target[part] = DeclaredParams(values, stage, f"{key}.") if isinstance(values, dict) else values
            else:
                target = target.setdefault(part, DeclaredParams({}, stage, ".".join(sections[:depth + 1]) + "."))
    return view


def open_store(params: dict) -> Store:
    """The artifact store named by the parameters, with any packs fetched by `dvc pull` imported."""
    store = Store(Path(params["store"]["dir"]))
    added = store.import_packs(PACK_DIR)
    if added:
        print(f"store: imported {added} entries from {PACK_DIR}", file=sys.stderr)
    return store


@dataclass
class Stage:
    """One stage's run: its name, its declared parameters, the store, its inputs and its output."""

    name: str
    pipeline: Path = PIPELINE_FILE
    params_file: Path = PARAMS_FILE

    @classmethod
    def of(cls, entry_point: str) -> Stage:
        """The stage an entry point ``stages/<stage>.py`` runs: named by its file (the name is written once)."""
        return cls(Path(entry_point).stem)

    @cached_property
    def params(self) -> DeclaredParams:
        """The parameters dvc.yaml declares for this stage, and the ambient ones."""
        return restrict(load_params(self.params_file), [*declared_keys(self.name, self.pipeline), *AMBIENT],
                        self.name)

    @cached_property
    def store(self) -> Store:
        return open_store(self.params)

    def run(self, work: Callable[[Stage], object]) -> None:
        """Run the stage's ``work``; then, also when it stops on an error (a model server gone: what came back is
        kept), write ``data/<stage>/actions.parquet`` if dvc.yaml gives the stage that folder: the keys any store of
        this process found or recorded meanwhile and those its work's items did, wherever they ran (none used, no
        file)."""
        with tracking() as used:
            try:
                work(self)
            finally:
                if "work" in self.__dict__:
                    used |= self.work.keys
                if used and str(self.data_dir) in self.declared_outputs:
                    write_action_keys(self.name, used)

    @cached_property
    def entry(self) -> dict:
        """This stage's entry in dvc.yaml (read once)."""
        return read_yaml(self.pipeline)["stages"][self.name]

    @cached_property
    def declared_outputs(self) -> frozenset[str]:
        """The paths dvc.yaml lists under this stage's ``outs``."""
        outs = self.entry.get("outs", [])
        return frozenset(next(iter(o)) if isinstance(o, dict) else o for o in outs)

    @property
    def workers(self) -> int:
        """Processes the stage's own per-row work may use: ``executor.workers``, 0 for every core."""
        return Placement.of(self.params).processes

    @cached_property
    def work(self) -> StageWork:
        """Where the stage's own per-item work runs: stage hosts, or ``workers`` local processes
        (:mod:`cass.engine.stage_work`)."""
        return Placement.of(self.params).stage_work(RUN_DIR / "stage_work" / f"{self.name}.json")

    @cached_property
    def upstreams(self) -> frozenset[str]:
        """The stages whose outputs dvc.yaml lists among this stage's deps (``data/<stage>``)."""
        deps = self.entry.get("deps", [])
        return frozenset(d.split("/")[1] for d in deps if d.startswith("data/") and d.count("/") == 1)

    @property
    def data_dir(self) -> Path:
        """Where this stage writes its data (``data/<stage>``)."""
        return DATA_DIR / self.name

    def upstream_dir(self, stage: str) -> Path:
        """Where ``stage`` wrote its data; it must be among this stage's deps in dvc.yaml (else DVC would not rerun
        this stage when they change)."""
        if stage not in self.upstreams:
            raise UndeclaredUpstreamError(f"stage {self.name!r} reads the output of stage {stage!r}, which dvc.yaml "
                                          f"does not list among its deps: add data/{stage} there")
        return DATA_DIR / stage

    def upstream_path(self, stage: str, name: str = "manifest") -> Path:
        """The Parquet file ``name`` that ``stage`` writes (``data/<stage>/<name>.parquet``; see
        :meth:`upstream_dir`)."""
        self.upstream_dir(stage)
        return manifest_path(stage, name)

    def upstream(self, stage: str) -> pl.DataFrame:
        """The rows ``stage`` passed on (see :meth:`upstream_dir`)."""
        self.upstream_dir(stage)
        return read_manifest(stage)

    def toolchain_record(self) -> dict:
        """What stage ``toolchain_fingerprints`` recorded: {vendor: {tool: {version, fingerprint}}}."""
        return json.loads((self.upstream_dir("toolchain_fingerprints") / TOOLCHAIN_FILE).read_text())

    def upstream_metrics(self) -> list[tuple[str, dict]]:
        """(stage, its metrics) of every ``metrics/<stage>.json`` among this stage's deps that a run wrote, in
        dvc.yaml's order."""
        deps = self.entry.get("deps", [])
        names = [d.removeprefix("metrics/").removesuffix(".json") for d in deps
                 if d.startswith("metrics/") and d.endswith(".json") and d.count("/") == 1]
        return [(name, json.loads((METRICS_DIR / f"{name}.json").read_text())) for name in names
                if (METRICS_DIR / f"{name}.json").exists()]

    def output(self, rows_in: int = 0, **fields) -> StageOutput:
        """What this stage passes on and drops (``rows_in`` rows came in; ``fields``: more of StageOutput's)."""
        return StageOutput(self.name, rows_in=rows_in, **fields)
