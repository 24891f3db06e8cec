"""Projects for tests and benchmarks: this pipeline copied into a fresh DVC project directory, and
reading a built copy (stage metrics, run reports, Parquet digests)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
import pytest

from cass.engine.actions import toolchain_record
from cass.pipeline.context import load_params
from cass.pipeline.manifests import MACHINE_RECORD, write_record
from store import Store

REPO = Path(__file__).resolve().parents[2]
PIPELINE_FILES = ("dvc.yaml", "params.yaml", ".dvcignore", ".gitignore", "stages", "store", "toolchains", "hosts",
                  "cass", "analysis", "gpu_hosts", "predictions", "translation_bench/real")
BENCH_TASKS = Path("translation_bench") / "tasks"

SHARED_BUILD = pytest.mark.xdist_group("project")
"""The pytest-xdist group of the tests using the session's `project` build (tests/conftest.py gives it to those taking
it as an argument; a file asking for it otherwise is marked): one worker builds it once."""

BUILT_HERE = ("__pycache__", "executed", "figures", "plots", "metrics.json")
"""What this checkout's own runs wrote into the copied folders (the copy builds its own)."""

TOOL_ENV = {
    **os.environ,
    "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
    "GIT_AUTHOR_NAME": "cass", "GIT_AUTHOR_EMAIL": "cass@localhost",
    "GIT_COMMITTER_NAME": "cass", "GIT_COMMITTER_EMAIL": "cass@localhost",
}
"""Environment for `dvc`/`git` in a copy: this Python environment first on PATH, a git identity."""


def metrics(project: Path, stage: str) -> dict:
    """``metrics/<stage>.json`` of a project."""
    return json.loads((project / "metrics" / f"{stage}.json").read_text())


def run_report(project: Path, stage: str) -> dict:
    """``metrics/run/<stage>.json`` of a project: how the stage's last run went (actions, time)."""
    return json.loads((project / "metrics" / "run" / f"{stage}.json").read_text())


def parquet_hashes(project: Path, under: str = "data") -> dict[str, str]:
    """sha256 of every Parquet file below ``under``, by path relative to the project."""
    return {str(p.relative_to(project)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((project / under).rglob("*.parquet"))}


def run_in(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command in a project (with ``env``, default ``TOOL_ENV``); return its output, raise with it
    on failure."""
    proc = subprocess.run(cmd, cwd=cwd, env=env or TOOL_ENV, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} in {cwd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout + proc.stderr


def dvc_project(path: Path, remote: Path) -> Path:
    """A git + DVC project at ``path`` with this checkout's params.yaml and .gitignore, ``remote`` (a folder) as its
    default remote and a cache that hard-links."""
    path.mkdir(parents=True)
    for name in ("params.yaml", ".gitignore"):
        shutil.copy(REPO / name, path / name)
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "remote", "add", "-d", "shared", str(remote)],
                ["dvc", "config", "cache.type", "hardlink,copy"]):
        run_in(cmd, path)
    return path


def _copy(name: str, dest: Path) -> None:
    src, target = REPO / name, dest / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        shutil.rmtree(target)
    if src.is_dir():
        shutil.copytree(src, target, ignore=shutil.ignore_patterns(*BUILT_HERE))
    else:
        shutil.copy2(src, target)


def turn_off(params: Path, section: str, name: str) -> None:
    """``section.name: true`` set to false in ``params`` (edited as text: the file keeps its layout and comments)."""
    text = params.read_text()
    match = re.search(rf"^{re.escape(section)}:.*(?:\n[ #].*|\n)*?\n  {re.escape(name)}: true ", text,
                      flags=re.MULTILINE)
    if match is None:
        raise ValueError(f"{params}: no {section}.{name}: true (followed by its comment) to turn off")
    params.write_text(text[:match.end() - 5] + "false" + text[match.end():])   # "true " -> "false": the same columns


def copy_pipeline(dest: Path, with_bundled_corpus: bool = True, bench_tasks: Sequence[str] = (),
                  hip_nvidia_check: bool = True) -> Path:
    """A new git + DVC project at ``dest`` holding this pipeline (and the bundled corpus, its OpenCL tree included),
    with only the translation benchmark's tasks ``bench_tasks`` (ids); without any, the copy's corpus has no
    ``bench`` origin and its ``evaluate`` stage no baseline (the benchmark's 60 tasks would more than double a
    copy's build). Without ``hip_nvidia_check``, the copy's `pair` stage does not compile the pairs' HIP side through
    HIP's NVIDIA back end (``pair.hip_nvidia``: some 4 CPU seconds a pair), for tests whose subject that is not."""
    dest.mkdir(parents=True)
    for name in (*PIPELINE_FILES, *(("corpus",) if with_bundled_corpus else ())):
        _copy(name, dest)
    tasks = dest / BENCH_TASKS
    tasks.mkdir(parents=True)   # a file in it: git keeps no empty folder, and the copy's clones need the stage dep
    (tasks / "README.md").write_text(f"This copy holds {len(bench_tasks)} of the benchmark's tasks.\n")
    for task in bench_tasks:
        for path in (REPO / BENCH_TASKS).glob(f"*/{task}.*"):
            (tasks / path.parent.name).mkdir(exist_ok=True)
            shutil.copy2(path, tasks / path.parent.name / path.name)
    params = dest / "params.yaml"
    # the real-program suite's mirror is not beside a copy: decontamination against it is tested where one is given
    turn_off(params, "dedup", "real_tasks")
    if not hip_nvidia_check:
        turn_off(params, "pair", "hip_nvidia")
    if not with_bundled_corpus:   # the bundled corpus's OpenCL tree goes with it
        params.write_text(re.sub(r"\n    - path: corpus/opencl\b.*(?:\n      .*)*", "", params.read_text()))
    if not bench_tasks:   # edited as text: the copy's params.yaml keeps its layout for the tests' own edits
        text = params.read_text()
        tree = re.search(rf"\n    - path: {BENCH_TASKS}\b.*\n.*origin: bench.*", text)
        baselines = re.search(r"\n  baselines: \[.*?\]", text)
        if tree is None or baselines is None:
            raise ValueError(f"{params}: no corpus tree {BENCH_TASKS} (origin bench) or no benchmark.baselines")
        text = text.replace(baselines.group(0), "\n  baselines: []").replace(tree.group(0), "")
        params.write_text(text)
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "config", "core.analytics", "false"]):
        run_in(cmd, dest)
    record_toolchains(dest)
    return dest


@functools.cache
def _toolchain_record(placed: str, environment: str) -> dict:
    return toolchain_record(json.loads(placed))


def record_toolchains(project: Path) -> None:
    """Record this machine's toolchains in ``project`` as `cass toolchains` does after setup (stage
    toolchain_fingerprints depends on that record; computed once per placement and ``CASS_*`` environment in this
    process)."""
    params = load_params(project / "params.yaml")
    placed = json.dumps({"executor": params["executor"], "amd": {"toolchain": params["amd"]["toolchain"]}},
                        sort_keys=True)
    environment = json.dumps(sorted((k, v) for k, v in os.environ.items() if k.startswith("CASS_")))
    write_record(_toolchain_record(placed, environment), project / MACHINE_RECORD)


def copy_bundled_build(dest: Path) -> Path:
    """A copy of the pipeline with the bundled corpus, configured as the tests' session build (``project``,
    tests/conftest.py), so that what it builds compares with that build's: the HIP-NVIDIA check off, and every
    stage's own work on spawned workers from its first item (``executor.in_process_s: 0``: the stages' work and
    arguments must pickle, which a build this small would otherwise not try; the stage process's part is
    tests/test_engine.py's)."""
    copy_pipeline(dest, hip_nvidia_check=False)
    params = dest / "params.yaml"
    text = params.read_text()
    if "\n  in_process_s: 0.5 " not in text:
        raise ValueError(f"{params}: no executor.in_process_s: 0.5 to set to 0")
    params.write_text(text.replace("\n  in_process_s: 0.5 ", "\n  in_process_s: 0   ", 1))
    return dest


def seed_actions(dest: Path, source: Path, stages: Sequence[str],
                 keep: Callable[[str], bool] = lambda key: True) -> set[str]:
    """Copy into ``dest``'s store the action records (and the blobs they name) that ``source``'s ``stages`` used
    (``data/<stage>/actions.parquet``) and ``keep`` accepts (by key), as a `dvc pull` of ``source``'s packs would: in
    ``dest`` those actions are store hits. For a test whose subject is not those stages' tool runs (or only some of
    them); returns the keys of the records copied."""
    built, seeded = Store(source / ".cass" / "store"), Store(dest / ".cass" / "store")
    copied: set[str] = set()
    for stage in stages:
        keys = pl.read_parquet(source / "data" / stage / "actions.parquet")["key"]
        if keys.is_empty():
            raise ValueError(f"{source}: stage {stage} used no action: nothing to seed")
        for key in filter(keep, keys):
            record = built.lookup(key)
            if record is None:
                raise ValueError(f"{source}: stage {stage} used action {key}, which its store does not hold")
            for digest in record.digests():
                seeded.put(built.get(digest))
            seeded.record(key, record)
            copied.add(key)
    return copied


def first_hex_digit_in(digits: str) -> Callable[[str], bool]:
    """A :func:`seed_actions` filter: the keys whose first hex digit is in ``digits`` (each digit about 1 in 16)."""
    return lambda key: key[0] in digits


def update_pipeline(dest: Path) -> Path:
    """A project made by :func:`copy_pipeline` with this checkout's pipeline files again (its data,
    metrics and ``dvc.lock`` stay, so ``dvc repro`` reruns what the new code changes), this machine's toolchains
    recorded there."""
    for name in PIPELINE_FILES:
        _copy(name, dest)
    record_toolchains(dest)
    return dest
