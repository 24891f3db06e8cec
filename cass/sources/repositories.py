"""Stage ``clone_repos``'s work: check out whole repositories at pinned commits, so files keep their headers.

The repositories are the ``repositories.top_n`` with the most CUDA files in The Stack v2's
metadata (``data/fetch_stack/repos.parquet``, each at the revision the metadata names), plus the
``repositories.list`` of git URLs or local repositories, each with a 40-hex commit. A moving
HEAD or a branch name is refused: provenance must name the exact commit.

Each checkout lives at ``<clone_dir>/<name>/<commit>`` and is made once: a shallow fetch of the
commit alone (``git fetch --depth 1 <url> <commit>``; GitHub and servers with
``uploadpack.allowReachableSHA1InWant`` allow it), else a full fetch, then a detached checkout.
A finished checkout is marked complete; an interrupted one is redone. A repository that cannot
be cloned, or lacks the commit, is dropped with git's message and the run goes on.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
from tqdm import tqdm

from cass.pipeline.context import Stage
from cass.pipeline.manifests import manifest_path

COMPLETE_MARK = ".cass-checkout-complete"
_COMMIT = re.compile(r"[0-9a-f]{40}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "GIT_CONFIG_NOSYSTEM": "1"}


class CloneError(Exception):
    """A repository could not be checked out at its commit."""


def _git(args: list[str], cwd: Path, timeout_s: float) -> str:
    env = {**os.environ, **GIT_ENV}
    try:
        proc = subprocess.run(["git", "-c", "advice.detachedHead=false", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise CloneError(f"git {args[0]} timed out after {timeout_s:.0f} s") from exc
    if proc.returncode:
        raise CloneError(f"git {' '.join(args[:2])}: {(proc.stderr or proc.stdout).strip()[-2000:]}")
    return proc.stdout.strip()


def checkout(url: str, commit: str, dest: Path, timeout_s: float) -> str:
    """Check ``url`` out at ``commit`` into ``dest`` (reused when complete); returns 'shallow',
    'full' or 'cached' (how it was obtained)."""
    if (dest / COMPLETE_MARK).is_file():
        return "cached"
    partial = dest.with_name(dest.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    _git(["init", "-q"], partial, timeout_s)
    try:
        _git(["fetch", "-q", "--depth", "1", url, commit], partial, timeout_s)
        how = "shallow"
    except CloneError:
        _git(["fetch", "-q", url, "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"],
             partial, timeout_s)
        how = "full"
    try:
        _git(["checkout", "-q", "--detach", commit], partial, timeout_s)
    except CloneError as exc:
        raise CloneError(f"commit {commit} is not in {url}: {exc}") from exc
    head = _git(["rev-parse", "HEAD"], partial, timeout_s)
    if head != commit:
        raise CloneError(f"checked out {head}, expected {commit}")
    (partial / COMPLETE_MARK).write_text(f"{url}\n{commit}\n")
    shutil.rmtree(dest, ignore_errors=True)
    partial.rename(dest)
    return how


def wanted_repositories(params: dict) -> list[dict]:
    """(name, url, revision) of every repository to check out, in a stable order."""
    rparams = params["repositories"]
    wanted = []
    repos_file = manifest_path("fetch_stack", "repos")
    if rparams["top_n"] and repos_file.exists():
        top = pl.read_parquet(repos_file).head(rparams["top_n"])
        for repo in top.iter_rows(named=True):
            wanted.append({"name": repo["repo_name"], "revision": repo["revision_id"],
                           "url": rparams["url_template"].format(repo_name=repo["repo_name"])})
    for item in rparams["list"]:
        url = str(item["url"])
        name = item.get("name") or Path(url.rstrip("/")).name.removesuffix(".git")
        wanted.append({"name": name, "url": url, "revision": str(item.get("revision") or "")})
    return wanted


def run(stage: Stage) -> None:
    params = stage.params
    rparams = params["repositories"]
    clone_dir = Path(rparams["clone_dir"])
    wanted = wanted_repositories(params)
    out = stage.output(len(wanted))
    kept, how_counts = [], {"shallow": 0, "full": 0, "cached": 0}
    for repo in tqdm(wanted, desc="clone", unit="repo", disable=not wanted):
        row = {"sample_id": None, "origin": "repos", "path": repo["name"], "domain": None}
        if not _COMMIT.fullmatch(repo["revision"]):
            out.drop(row, "bad_revision", f"{repo['url']}: revision {repo['revision']!r} is not a 40-hex "
                     "commit id; name the exact commit (a branch or HEAD moves)")
            continue
        dest = clone_dir / _UNSAFE.sub("_", repo["name"]) / repo["revision"]
        try:
            how = checkout(repo["url"], repo["revision"], dest, rparams["timeout_s"])
        except (CloneError, OSError) as exc:
            out.drop(row, "clone_failed", f"{repo['url']}@{repo['revision']}: {exc}")
            continue
        how_counts[how] += 1
        kept.append({**repo, "checkout": str(dest)})
    out.run["checkouts"] = how_counts
    schema = {"name": pl.String, "url": pl.String, "revision": pl.String, "checkout": pl.String}
    names = pl.DataFrame(kept, schema=schema)
    duplicates = names.filter(pl.col("name").is_duplicated())["name"].unique().to_list()
    if duplicates:
        raise SystemExit(f"clone_repos: two repositories share the name(s) {duplicates}; set 'name' in "
                         "params.yaml repositories.list")
    print(out.write(names.sort("name")))

