"""For every stage, a digest of the project code it runs and the parameters it declares (stage ``code_digests``:
:mod:`cass.stages.code_digests`)."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import blake3

from cass.pipeline.context import PARAMS_FILE, PIPELINE_FILE, declared_keys, load_params, read_yaml, restrict
from cass.pipeline.wiring import CODE_STAGE, modules_by_entry, stage_entries
from store import canonical_json

OUTPUT_DIR = Path("data") / CODE_STAGE


DATA_SUFFIXES = (".yaml", ".yml", ".json", ".toml", ".txt", ".csv")
"""Files beside the modules that the code reads; other files there (editor swap files, ``.orig``) are not
code and would make the listings differ between checkouts."""


def data_files(folder: Path) -> list[Path]:
    """The data files in ``folder`` (keyword lists, templates): :data:`DATA_SUFFIXES`, dotfiles left out."""
    return [folder / entry.name for entry in os.scandir(folder)
            if entry.is_file() and entry.name.endswith(DATA_SUFFIXES) and not entry.name.startswith(".")]


def param_lines(params: dict, keys: list[str], stage: str) -> str:
    """``<blake3>  params.yaml:<key>`` for each of ``keys`` (sorted): the digest of its value in ``params``
    as canonical JSON. A key params.yaml lacks raises, naming the stage and the key."""
    view = restrict(params, keys, stage)
    lines = []
    for key in sorted(set(keys)):
        value = view
        for part in key.split("."):
            value = value[part]
        lines.append(f"{blake3.blake3(canonical_json(value)).hexdigest()}  {PARAMS_FILE}:{key}\n")
    return "".join(lines)


def stage_listings(root: Path, pipeline_file: Path = PIPELINE_FILE,
                   params_file: Path = PARAMS_FILE) -> dict[str, str]:
    """Stage name -> ``<blake3>  <path>`` for every file its entry point runs or reads beside its modules
    (paths relative to ``root``, sorted), then ``<blake3>  params.yaml:<key>`` for every parameter it
    declares, for every stage but this one."""
    pipeline = read_yaml(root / pipeline_file)
    entries = {name: entry for name, entry in stage_entries(pipeline).items() if name != CODE_STAGE}
    params = load_params(root / params_file)
    modules = modules_by_entry(root, list(entries.values()))

    @functools.cache   # stages share most files and folders: hash and list each once
    def line(path: Path) -> str:
        return f"{blake3.blake3((root / path).read_bytes()).hexdigest()}  {path}\n"

    @functools.cache
    def beside(folder: Path) -> list[Path]:
        return [p.relative_to(root) for p in data_files(root / folder)]

    listings = {}
    for name, entry in entries.items():
        files = set(modules[entry]).union(*(beside(m.parent) for m in modules[entry]))
        listings[name] = "".join(line(p) for p in sorted(files)) + param_lines(
            params, declared_keys(name, pipeline), name)
    return listings
