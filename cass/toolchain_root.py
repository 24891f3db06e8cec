"""The AMD root shared through DVC: sealed into the store, pinned in params.yaml, pulled by a collaborator's setup.

* ``seal`` (setup, after building a root from Debian, or finding one unsealed): :func:`toolchains.amd_root.seal`
  into the project's store;
* ``pin`` (whoever chooses the root everyone builds with): the root's tree as packs in ``amd_root/`` (tracked
  by ``amd_root.dvc``; `dvc push` shares them) and its digest as ``amd.root`` in params.yaml;
* ``pull`` (setup, where the pinned root is not here yet): `dvc pull amd_root.dvc`, the packs into the store,
  the tree checked out where the root belongs, sealed as ``pulled``. Its digest is the pinned one, so the action
  keys are those of the machine that pinned it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tqdm import tqdm

from store.cas import Store
from store.tree import check_out, tree_blobs, tree_bytes
from toolchains import amd_root_path
from toolchains.amd_root import RootSeal, make_devices, read_seal, seal, store_sealed, stored, valid_seal, write_seal

ROOT_PACKS = Path("amd_root")
"""The pinned root's packs (``amd_root.dvc`` tracks them)."""
ROOT_PACK_PREFIX = 1
"""Pack files bucketed by one hex digit: 16 packs."""
INFO_NAME = "root.json"


class RootPullError(RuntimeError):
    """The pinned root could not be pulled (the reason says why; setup then builds the root from Debian)."""


def seal_root(store: Store, suite: str) -> RootSeal:
    """Seal this machine's root of ``suite`` (see :mod:`toolchains.amd_root`)."""
    root = amd_root_path(suite)
    if not root.is_dir():
        raise FileNotFoundError(f"no AMD root at {root}: scripts/setup.sh builds it")
    return seal(store, root, suite, origin="built")


def pin_root(store: Store, suite: str, params_file: Path) -> RootSeal:
    """Write the packs of this machine's root of ``suite``, track them with DVC and pin the digest in
    ``params_file``."""
    seal_root(store, suite)
    sealed = store_sealed(store, amd_root_path(suite))
    result = store.write_packs(ROOT_PACKS, tree_blobs(store, sealed.root), set(), ROOT_PACK_PREFIX)
    (ROOT_PACKS / INFO_NAME).write_text(json.dumps({"suite": suite, "root": sealed.root}, indent=1) + "\n")
    run_dvc(["add", str(ROOT_PACKS)], "dvc add of the root's packs")
    set_root_pin(params_file, suite, sealed.root)
    print(f"pinned AMD root {suite} {sealed.root}: {result.written} pack(s) written, {result.unchanged} unchanged "
          f"in {ROOT_PACKS}; `dvc push` shares it, commit params.yaml and {ROOT_PACKS}.dvc")
    return sealed


def pull_root(store: Store, suite: str, pin: str | None) -> RootSeal:
    """Check out the pinned root of ``suite`` from the DVC remote where it belongs; RootPullError says why not."""
    if not pin:
        raise RootPullError("params.yaml pins no AMD root (amd.root)")
    root = amd_root_path(suite)
    if (current := valid_seal(root)) and current.root == pin:
        return current
    if root.exists() and any(root.iterdir()):
        raise RootPullError(f"{root} exists and is not the pinned root; move it away to pull")
    if root.exists():
        root.rmdir()   # an empty folder: the check-out puts the whole tree in its place
    if not stored(store, pin):
        run_dvc(["pull", f"{ROOT_PACKS}.dvc"], "dvc pull of the pinned AMD root", RootPullError)
        try:
            info = json.loads((ROOT_PACKS / INFO_NAME).read_text())
        except (OSError, ValueError) as exc:
            raise RootPullError(f"the pulled {ROOT_PACKS} has no readable {INFO_NAME}: {exc}") from None
        if (info.get("suite"), info.get("root")) != (suite, pin):
            raise RootPullError(f"{ROOT_PACKS} holds root {info.get('root')} of {info.get('suite')}, "
                                f"params.yaml pins {pin} of {suite}")
        store.import_packs(ROOT_PACKS)
        if not stored(store, pin):
            raise RootPullError(f"the packs in {ROOT_PACKS} lack parts of root {pin}")
    with tqdm(total=tree_bytes(store, pin), unit="B", unit_scale=True, desc=f"AMD root {suite}") as bar:
        check_out(store, pin, root, bar.update)
    make_devices(root)
    return write_seal(root, pin, suite, "pulled")


def run_dvc(args: list[str], what: str, error: type[Exception] = RuntimeError) -> None:
    """Run this environment's DVC (``python -m dvc``: setup calls it before the venv is on PATH)."""
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise error(f"{what} failed (dvc {' '.join(args)}, exit {proc.returncode}): "
                    f"{(proc.stderr or proc.stdout).strip()[-600:]}")


def set_root_pin(params_file: Path, suite: str, digest: str) -> None:
    """Set ``amd.toolchain`` and ``amd.root`` in params.yaml, leaving every other line as it is."""
    text = params_file.read_text()
    block = re.search(r"^amd:\n(?:[ #].*\n|\n)*", text, re.M)
    if block is None:
        raise ValueError(f"{params_file}: no amd: section")
    section = block.group(0)
    for key, value in (("toolchain", suite), ("root", digest)):
        section, found = re.subn(rf"^(  {key}:)[ \t]*[^\s#]*", lambda m, v=value: f"{m.group(1)} {v}", section,
                                 count=1, flags=re.M)
        if not found:
            raise ValueError(f"{params_file}: amd.{key} is missing; add it under amd:")
    params_file.write_text(text[:block.start()] + section + text[block.end():])


def root_state(suite: str, pin: str | None) -> str:
    """One line on this machine's root of ``suite``: where it came from, its digest, and whether it is the pin."""
    root = amd_root_path(suite)
    sealed = read_seal(root)
    if sealed is None:
        return f"AMD root {root}: not sealed (action keys use per-tool fingerprints; scripts/setup.sh seals it)"
    if valid_seal(root) is None:
        return (f"AMD root {root}: changed since it was sealed {sealed.sealed} (action keys use per-tool "
                "fingerprints; scripts/setup.sh seals it again)")
    how = "pulled from the DVC remote" if sealed.origin == "pulled" else "built from Debian on this machine"
    line = f"AMD root {root}: {sealed.suite}, {how}, sealed {sealed.sealed}, tree {sealed.root[:16]}"
    if not pin:
        return line + "; params.yaml pins no root (amd.root)"
    if sealed.root == pin:
        return line + ", the pinned root"
    return (line + f"; params.yaml pins {pin[:16]}, a different root: action keys differ from the pinned root's "
            "(move this root away and run scripts/setup.sh to pull the pinned one)")
