"""Stage ``clone_repos``: check out whole repositories at pinned commits, so files keep their headers.

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

from pathlib import Path

import polars as pl
from tqdm import tqdm

from cass.pipeline.context import Stage
from cass.sources.repositories import _COMMIT, _UNSAFE, CloneError, checkout, wanted_repositories


def run(stage: Stage) -> None:
    params = stage.params
    rparams = params["repositories"]
    clone_dir = Path(rparams["clone_dir"])
    wanted = wanted_repositories(params, stage.upstream_path("fetch_stack", "repos"))
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
