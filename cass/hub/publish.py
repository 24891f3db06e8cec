"""Uploading ``data/hub/`` to a Hugging Face dataset repository, only what changed (stage ``publish``:
:mod:`cass.stages.publish`)."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError
from huggingface_hub.hf_api import RepoFile

from cass.hub.layout import hub_files
from cass.pipeline.remote import backoff_s, git_blob_id

T = TypeVar("T")
RETRY_STATUS = {408, 429, 500, 502, 503, 504}


def with_retries(call: Callable[[], T], attempts: int, what: str) -> T:
    """``call()``, retried on the Hub's transient errors with exponential backoff and jitter."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            if status not in RETRY_STATUS or attempt == attempts:
                raise
        except OSError:
            if attempt == attempts:
                raise
        time.sleep(backoff_s(attempt))
    raise AssertionError(f"{what}: unreachable")


@dataclass
class Plan:
    """What a publish sends: files to add (changed or new), files to delete, files unchanged."""

    upload: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"upload": self.upload, "delete": self.delete, "unchanged": len(self.unchanged)}


def remote_state(api: HfApi, repo_id: str, revision: str, attempts: int) -> dict[str, str]:
    """Repository path -> content id (LFS SHA-256 or git blob id) at ``revision`` ({} if none)."""
    try:
        entries = with_retries(lambda: list(api.list_repo_tree(repo_id, repo_type="dataset", revision=revision,
                                                               recursive=True, expand=True)), attempts, "list")
    except (RepositoryNotFoundError, RevisionNotFoundError):
        return {}
    return {e.path: (e.lfs.sha256 if e.lfs else e.blob_id) for e in entries if isinstance(e, RepoFile)}


def make_plan(root: Path, remote: dict[str, str]) -> Plan:
    """Compare the local layout with the remote content ids."""
    plan = Plan()
    local = hub_files(root)
    for path in local:
        data = (root / path).read_bytes()
        ids = {hashlib.sha256(data).hexdigest(), git_blob_id(data)}
        (plan.unchanged if remote.get(path) in ids else plan.upload).append(path)
    kept = set(local)
    plan.delete = sorted(p for p in remote if p.startswith("data/") and p not in kept)
    return plan


def publish(api: HfApi, root: Path, pparams: dict) -> dict:
    """Create the repository if needed and commit what differs; returns the metrics."""
    repo_id, revision, attempts = pparams["repo_id"], pparams["revision"], pparams["retries"]
    if not pparams["dry_run"]:
        with_retries(lambda: api.create_repo(repo_id, repo_type="dataset", private=pparams["private"],
                                             exist_ok=True), attempts, "create_repo")
    plan = make_plan(root, remote_state(api, repo_id, revision, attempts))
    result = {"repo_id": repo_id, "revision": revision, "dry_run": pparams["dry_run"], **plan.as_dict()}
    if pparams["dry_run"] or not (plan.upload or plan.delete):
        return {**result, "commit": None}
    operations = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(root / p)) for p in plan.upload]
    operations += [CommitOperationDelete(path_in_repo=p) for p in plan.delete]
    info = with_retries(lambda: api.create_commit(
        repo_id, operations, repo_type="dataset", revision=revision,
        commit_message=f"Update dataset: {len(plan.upload)} file(s) changed, {len(plan.delete)} removed"),
        attempts, "create_commit")
    return {**result, "commit": info.oid}
