"""Stage ``code_digests``'s work: for every other stage, a digest of the project code it runs.

DVC reruns a stage when one of its deps changes, and after each stage it runs it rewrites the whole
dvc.lock. Listing every package a stage imports as its deps made that lock large (53 KB; each rewrite
took 0.55 s of CPU) and coarse (an edit anywhere in a package reran every stage importing any module of
it). Instead this stage depends on the project packages and writes ``data/code_digests/<stage>``, one
line per file the stage runs: its entry point and every project module it imports, transitively and
lazily too (:func:`cass.pipeline.wiring.code_modules`), and the data files beside them
(``cass/sources/*.yaml``), each with its BLAKE3. Imports are followed as written, absolute or relative; a
module loaded by name at run time (``importlib``) would not be seen: the project has none. Each stage
depends on its own file, so an edit reruns exactly the stages that run the edited code, and
``cat data/code_digests/<stage>`` says which code that is.

A stage's parameters reach DVC the same way: dvc.yaml declares them under the stage's ``meta.params`` (not
DVC's own ``params``, whose values DVC would copy into dvc.lock: 15 of its 38 KiB, rewritten after every stage),
this stage depends on params.yaml, and each listing ends with one ``<blake3>  params.yaml:<key>`` line per
declared key, the digest of its value as canonical JSON. A changed value reruns exactly the stages that declare
it.

The stages and their declared keys are read from dvc.yaml, which DVC does not let a stage depend on: a new
stage comes with its entry point, a new file of ``stages/``, which reruns this one; a stage renamed in dvc.yaml
alone, or a key added to or removed from a stage's ``meta.params`` with no other change, needs
``dvc repro -f code_digests`` (then exactly the stages whose listing changed rerun).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import blake3

from cass.pipeline.context import PARAMS_FILE, PIPELINE_FILE, Stage, declared_keys, load_params, read_yaml, restrict
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


def run(stage: Stage) -> None:
    """Write ``data/code_digests/<stage>`` for every stage; a file whose text is unchanged is left alone."""
    listings = stage_listings(Path.cwd(), stage.pipeline, stage.params_file)
    OUTPUT_DIR.mkdir(parents=True, exist_ok=True)
    for stale in set(os.listdir(OUTPUT_DIR)) - set(listings):   # a stage removed from dvc.yaml
        (OUTPUT_DIR / stale).unlink()
    changed = []
    for name, listing in listings.items():
        path = OUTPUT_DIR / name
        if not path.exists() or path.read_text() != listing:
            path.write_text(listing)
            changed.append(name)
    entries = {line.split("  ", 1)[1] for listing in listings.values() for line in listing.splitlines()}
    files = sum(not entry.startswith(f"{PARAMS_FILE}:") for entry in entries)
    print(f"{CODE_STAGE}: {len(listings)} stages over {files} files and {len(entries) - files} parameters; "
          f"changed: {', '.join(changed) or 'none'}")
