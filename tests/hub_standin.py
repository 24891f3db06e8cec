"""An in-process stand-in for the Hugging Face Hub's dataset endpoints that ``HfApi`` calls to
create a repository, list its files and commit (preupload, LFS batch + upload, commit), plugged
into huggingface_hub through its own HTTP client hook (``set_client_factory``).

Xet uploads run in hf_xet's Rust client, outside Python's HTTP stack, so the tests set
``HF_HUB_DISABLE_XET`` and the client takes the Hub's LFS protocol (which the Hub still serves).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field

import httpx2
import yaml
from stack_v2_standin import git_sha1

ENDPOINT = "https://hub.test"


@dataclass
class FakeHub:
    """Repositories (id -> {path: bytes}), the commits made (each: paths added, paths deleted), and
    the LFS objects received; ``fail_next`` queues error statuses for the next requests."""

    repos: dict[str, dict[str, bytes]] = field(default_factory=dict)
    commits: list[dict] = field(default_factory=list)
    lfs: dict[str, bytes] = field(default_factory=dict)
    fail_next: list[int] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(f"{request.method} {request.url.path}")
        if self.fail_next:
            return httpx2.Response(self.fail_next.pop(0), json={"error": "injected by the test"})
        path = request.url.path
        if request.method == "POST" and path == "/api/repos/create":
            body = json.loads(request.content)
            repo_id = f"{body['organization']}/{body['name']}" if body.get("organization") else body["name"]
            if repo_id in self.repos:
                return httpx2.Response(409, json={"error": "You already created this dataset repo",
                                                  "url": f"{ENDPOINT}/datasets/{repo_id}"})
            self.repos[repo_id] = {}
            return httpx2.Response(200, json={"url": f"{ENDPOINT}/datasets/{repo_id}"})
        if request.method == "POST" and path == "/api/validate-yaml":
            return self.validate_yaml(json.loads(request.content)["content"])
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/tree/([^/]+)/?(.*)", path):
            return self.tree(m.group(1))
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/preupload/([^/]+)", path):
            files = json.loads(request.content)["files"]
            return httpx2.Response(200, json={"files": [
                {"path": f["path"], "uploadMode": "regular" if f["path"].endswith(".md") else "lfs",
                 "shouldIgnore": False} for f in files]})
        if m := re.fullmatch(r"/datasets/([^/]+/[^/]+)\.git/info/lfs/objects/batch", path):
            objects = json.loads(request.content)["objects"]
            return httpx2.Response(200, json={"transfer": "basic", "objects": [
                {"oid": o["oid"], "size": o["size"],
                 **({} if o["oid"] in self.lfs else
                    {"actions": {"upload": {"href": f"{ENDPOINT}/lfs-upload/{o['oid']}"}}})} for o in objects]})
        if m := re.fullmatch(r"/lfs-upload/([0-9a-f]{64})", path):
            data = request.read()
            assert hashlib.sha256(data).hexdigest() == m.group(1), "LFS upload with the wrong content"
            self.lfs[m.group(1)] = data
            return httpx2.Response(200)
        if m := re.fullmatch(r"/api/datasets/([^/]+/[^/]+)/commit/([^/]+)", path):
            return self.commit(m.group(1), request.read())
        return httpx2.Response(404, json={"error": f"the stand-in does not serve {request.method} {path}"})

    @staticmethod
    def validate_yaml(readme: str) -> httpx2.Response:
        """The card's metadata: YAML front matter whose ``configs`` name data files."""
        errors = []
        match = re.match(r"^---\n(.*?)\n---\n", readme, re.S)
        try:
            meta = yaml.safe_load(match.group(1)) if match else {}
        except yaml.YAMLError as exc:
            meta, errors = {}, [{"message": f"YAML: {exc}"}]
        for config in (meta or {}).get("configs", []):
            if not config.get("config_name") or not config.get("data_files"):
                errors.append({"message": f"config without name or data_files: {config}"})
        return httpx2.Response(400 if errors else 200, json={"errors": errors, "warnings": []})

    def tree(self, repo_id: str) -> httpx2.Response:
        if repo_id not in self.repos:
            return httpx2.Response(404, headers={"X-Error-Code": "RepoNotFound"},
                                   json={"error": "Repository not found"})
        entries = []
        for path, data in sorted(self.repos[repo_id].items()):
            entry = {"type": "file", "oid": git_sha1(data), "size": len(data), "path": path}
            if not path.endswith(".md"):
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            entries.append(entry)
        return httpx2.Response(200, json=entries)

    def commit(self, repo_id: str, body: bytes) -> httpx2.Response:
        files = self.repos[repo_id]
        added, deleted = [], []
        for line in body.decode().splitlines():
            item = json.loads(line)
            value = item["value"]
            if item["key"] == "file":
                files[value["path"]] = base64.b64decode(value["content"])
                added.append(value["path"])
            elif item["key"] == "lfsFile":
                files[value["path"]] = self.lfs[value["oid"]]
                added.append(value["path"])
            elif item["key"] == "deletedFile":
                files.pop(value["path"], None)
                deleted.append(value["path"])
        oid = hashlib.sha1(f"{len(self.commits)}".encode()).hexdigest()
        self.commits.append({"added": sorted(added), "deleted": sorted(deleted), "oid": oid})
        return httpx2.Response(200, json={"commitUrl": f"{ENDPOINT}/datasets/{repo_id}/commit/{oid}",
                                          "commitOid": oid, "pullRequestUrl": None})
