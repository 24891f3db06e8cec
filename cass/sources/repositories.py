"""Whole repositories checked out at pinned commits, so files keep their headers (stage ``clone_repos``:
:mod:`cass.stages.clone_repos`)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl

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


def wanted_repositories(params: dict, repos_file: Path) -> list[dict]:
    """(name, url, revision) of every repository to check out, in a stable order (``repos_file``: the
    repositories ``fetch_stack`` listed, most files first)."""
    rparams = params["repositories"]
    wanted = []
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
