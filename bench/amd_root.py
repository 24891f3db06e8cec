"""Benchmark: the AMD root as an artifact. Times each step of sharing this machine's sealed root (params.yaml's
suite) with a collaborator, in scratch folders, with DVC and a local folder as the remote: the tree stored into an
empty store, the packs written and tracked, pushed, then in a clone pulled, imported and checked out; the seal's
listing check a stage pays per toolchain load; sizes. The root must be sealed (`bash scripts/setup.sh`). Writes the
``## The AMD root as an artifact`` section of bench/RESULTS.md.

    python bench/amd_root.py [--scratch /var/tmp/amd-root-bench]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from harness.project import TOOL_ENV, dvc_project, run_in  # noqa: E402

from bench.results import replace_section  # noqa: E402
from cass.pipeline.context import load_params  # noqa: E402
from store import Store  # noqa: E402
from store.tree import listing_digest, manifest  # noqa: E402
from toolchains import amd_root_path  # noqa: E402
from toolchains.amd_root import EXCLUDED, valid_seal  # noqa: E402

TITLE = "## The AMD root as an artifact (issue 49): `python bench/amd_root.py`"


def timed(label: str, times: dict, cmd: list[str], cwd: Path, env: dict) -> None:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    times[label] = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}: {proc.stderr[-2000:]}")


def folder_bytes(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scratch", type=Path, default=Path("/var/tmp/amd-root-bench"))
    args = parser.parse_args()
    suite = load_params(REPO / "params.yaml")["amd"]["toolchain"]
    root = amd_root_path(suite)
    sealed = valid_seal(root)
    if sealed is None:
        raise SystemExit(f"{root} is not sealed: bash scripts/setup.sh")
    shutil.rmtree(args.scratch, ignore_errors=True)
    first, second, remote = args.scratch / "first", args.scratch / "second", args.scratch / "remote"
    dvc_project(first, remote)
    times: dict[str, float] = {}
    start = time.perf_counter()
    listing_digest(root, EXCLUDED)
    times["the seal's listing check (per toolchain load)"] = time.perf_counter() - start
    env = {**TOOL_ENV, "CASS_AMD_ROOT": str(root)}
    timed("pin: the tree into an empty store, 16 packs written, `dvc add`", times, ["cass", "amd-root", "pin"], first,
          env)
    timed("`dvc push` to the remote", times, ["dvc", "push", "-q"], first, env)
    run_in(["git", "add", "-A"], first)
    run_in(["git", "commit", "-qm", "pin the AMD root"], first)
    packs = folder_bytes(first / "amd_root")
    run_in(["git", "clone", "-q", str(first), str(second)], args.scratch)
    shutil.rmtree(first)
    pulled = args.scratch / "pulled-root"
    env = {**TOOL_ENV, "CASS_AMD_ROOT": str(pulled)}
    timed("`dvc pull amd_root.dvc` in a clone", times, ["dvc", "pull", "-q", "amd_root.dvc"], second, env)
    timed("`cass amd-root pull`: packs into the store, tree checked out, sealed", times,
          ["cass", "amd-root", "pull"], second, env)
    again = valid_seal(pulled)
    if again is None or again.root != sealed.root:
        raise SystemExit(f"the pulled root is not {sealed.root}: {again}")
    entries = manifest(Store(second / ".cass" / "store"), sealed.root)
    files = [e for e in entries if e[1] == "f"]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    rows = "\n".join(f"| {label} | {seconds:.1f} |" for label, seconds in times.items())
    body = f"""{TITLE}

At {commit}, {time.strftime("%Y-%m-%d")}, root of `{suite}` ({root}), tree `{sealed.root}`, sealed
{sealed.sealed} ({sealed.origin}). The remote is a local folder (S3 is unreachable here); DVC's cache hard-links.

| step | seconds |
|---|---:|
{rows}

The tree: {len(files):,} files ({sum(e[3] for e in files) / 1e9:.2f} GB), {sum(e[1] == "d" for e in entries):,} folders,
{sum(e[1] == "l" for e in entries):,} links, {sum(len(e[4]) for e in files):,} chunks; the packs {packs / 1e9:.2f} GB
(identical files stored once). The pulled root's seal names the same tree, so its action keys are the pinned ones.
"""
    replace_section(REPO / "bench" / "RESULTS.md", TITLE, body)
    print(json.dumps({"times": times, "packs": packs, "files": len(files)}, indent=1))
    shutil.rmtree(args.scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
