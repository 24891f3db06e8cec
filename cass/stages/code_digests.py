"""Stage ``code_digests``: for every other stage, a digest of the project code it runs.

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

import os
from pathlib import Path

from cass.pipeline.code_digests import OUTPUT_DIR, stage_listings
from cass.pipeline.context import PARAMS_FILE, Stage
from cass.pipeline.wiring import CODE_STAGE


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
