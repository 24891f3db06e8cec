"""Whole repositories and The Stack v2 through the pipeline, against local stand-ins: Stack v2
metadata (real schema, read with `datasets`) naming a repository and its files, a moto S3 server
holding the files' gzip blobs, and a local bare git repository with two revisions, chosen as the
top repository by CUDA-file count and cloned at the revision the metadata names (not the newer
one). Include directories come from the repository; the vendor library headers are on both
stacks; a clone that fails and a moving revision are dropped with their reasons."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO, TOOL_ENV, copy_pipeline, metrics, run_report
from stack_v2_standin import git_sha1, meta_row, start_moto, upload_blobs, write_metadata

from cass.engine.actions import ActionRunner
from cass.engine.targets import TargetRun, failure_reason, run_targets
from store import Store
from toolchains import local_executor

pytestmark = pytest.mark.slow

FIXTURE = REPO / "tests" / "fixtures" / "library_tree"
CATCH_ALL = "compile_failed:compile_error"


def git(args: list[str], cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=TOOL_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture(scope="module")
def bare_repo(tmp_path_factory) -> dict:
    """The fixture tree as a bare repository: revision 1, then revision 2 that changes a kernel and
    adds a file (the pipeline must ingest revision 1 when pinned to it)."""
    base = tmp_path_factory.mktemp("git")
    work = base / "work"
    shutil.copytree(FIXTURE, work)
    git(["init", "-q", "-b", "main"], work)
    git(["add", "-A"], work)
    git(["commit", "-qm", "revision 1"], work)
    rev1 = git(["rev-parse", "HEAD"], work)
    changed = sorted(work.rglob("*.cu"))[0]
    changed.write_text(changed.read_text() + "\n// REVISION_TWO\n")
    (work / "src" / "rev2_only.cu").write_text("__global__ void rev2(int *a) { a[0] = 2; }\n")
    git(["add", "-A"], work)
    git(["commit", "-qm", "revision 2"], work)
    git(["clone", "-q", "--bare", str(work), str(base / "lab" / "library_tree.git")], base)
    git(["checkout", "-q", rev1], work)
    files = {p.relative_to(work).as_posix(): p.read_bytes() for p in sorted(work.rglob("*.cu"))}
    return {"base": base, "url": str(base / "lab" / "library_tree.git"), "rev1": rev1,
            "rev2": git(["rev-parse", "main"], work), "changed": changed.relative_to(work).as_posix(),
            "files": files}


@pytest.fixture(scope="module")
def stack_v2(tmp_path_factory, bare_repo):
    """Stack v2 metadata listing the repository's CUDA files at revision 1, and their blobs in S3."""
    rows = [meta_row("lab/library_tree", f"/{path}", data, bare_repo["rev1"], blob_id=git_sha1(data))
            for path, data in bare_repo["files"].items()]
    dataset = tmp_path_factory.mktemp("stackv2")
    write_metadata(dataset, rows)
    server, url = start_moto()
    upload_blobs(url, "softwareheritage", "content/", {r["blob_id"]: d for r, d in
                                                       zip(rows, bare_repo["files"].values(), strict=True)})
    yield {"dataset": str(dataset), "endpoint": url, "rows": len(rows)}
    server.stop()


@pytest.fixture(scope="module")
def project(tmp_path_factory, toolchains, bare_repo, stack_v2) -> Path:
    root = copy_pipeline(tmp_path_factory.mktemp("repos") / "project", with_bundled_corpus=False)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["trees"] = []
    (root / "corpus").mkdir()   # a dependency of ingest in dvc.yaml, empty here
    params["stack_v2"].update(enabled=True, dataset=stack_v2["dataset"], workers=4, retries=1)
    params["repositories"].update(top_n=1, url_template=f"{bare_repo['base']}/{{repo_name}}.git", list=[
        {"url": str(bare_repo["base"] / "missing.git"), "revision": "0" * 40, "name": "missing"},
        {"url": bare_repo["url"], "revision": "main", "name": "moving"},
    ])
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    env = {**TOOL_ENV, "CASS_S3_ENDPOINT": stack_v2["endpoint"], "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(root / ".hf")}
    # the tests read the stages up to the compilers
    proc = subprocess.run(["dvc", "repro", "compile_nvidia", "compile_amd"], cwd=root, env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return root


def table(root: Path, stage: str, name: str = "manifest") -> pl.DataFrame:
    return pl.read_parquet(root / "data" / stage / f"{name}.parquet")


def test_clone_failures_and_moving_revisions_are_dropped_with_reasons(project):
    dropped = table(project, "clone_repos", "dropped")
    reasons = dict(zip(dropped["path"], dropped["reason"], strict=True))
    assert reasons == {"missing": "clone_failed", "moving": "bad_revision"}
    assert "missing.git" in dropped.filter(pl.col("path") == "missing")["detail"][0]
    assert run_report(project, "clone_repos")["checkouts"] == {"shallow": 1, "full": 0, "cached": 0}


def test_stack_v2_files_arrive_from_s3_with_their_provenance(project, stack_v2):
    fetched = metrics(project, "fetch_stack")
    assert fetched["kept"] == run_report(project, "fetch_stack")["fetched"] == stack_v2["rows"]
    rows = table(project, "ingest").filter(pl.col("origin") == "stack_v2")
    assert rows.height == stack_v2["rows"]
    assert set(rows["repository"]) == {"lab/library_tree"} and set(rows["license_type"]) == {"permissive"}
    assert rows.filter(pl.col("files").list.len() > 1).height == 0     # single files: no headers


def test_the_top_repository_is_cloned_at_the_pinned_revision(project, bare_repo):
    rows = table(project, "ingest").filter(pl.col("origin") == "repos")
    assert set(rows["revision"]) == {bare_repo["rev1"]} and set(rows["repository"]) == {bare_repo["url"]}
    assert len(rows) == len(bare_repo["files"])
    assert "lab/library_tree/src/rev2_only.cu" not in rows["path"].to_list()
    changed = rows.filter(pl.col("path") == f"lab/library_tree/{bare_repo['changed']}")
    assert changed.height == 1
    checkout = Path(project / table(project, "clone_repos")["checkout"][0])
    assert "REVISION_TWO" not in (checkout / bare_repo["changed"]).read_text()


def test_include_directories_come_from_the_repository(project):
    rows = table(project, "ingest").filter(pl.col("origin") == "repos")
    angle = rows.filter(pl.col("include_dirs").list.contains("include"))
    assert angle.height > 0, "no file found its <ltk/...> headers through -Iinclude"
    for row in rows.iter_rows(named=True):
        sibling = f"{Path(row['files'][0]['path']).parent}/config.h"
        configs = [f["path"] for f in row["files"][1:] if Path(f["path"]).name == "config.h"]
        if sibling in configs:   # same-named headers in other folders: the sibling one, and only it
            assert configs == [sibling], (row["path"], configs)
        assert row["include_conflicts"] == []


def test_both_stacks_compile_most_files_and_every_failure_has_a_category(project):
    nvidia_ok = set(table(project, "compile_nvidia")["sample_id"])
    amd_ok = set(table(project, "compile_amd")["sample_id"])
    candidates = table(project, "dedup")
    assert candidates.filter(pl.col("files").list.len() > 1)["origin"].unique().to_list() == ["repos"]
    assert len(nvidia_ok) >= 0.9 * candidates.height
    assert len(nvidia_ok & amd_ok) >= 0.8 * len(nvidia_ok), (len(nvidia_ok), len(nvidia_ok & amd_ok))
    failures = pl.concat([table(project, s, "dropped") for s in ("hipify", "compile_nvidia", "compile_amd")])
    assert failures.filter(pl.col("reason") == CATCH_ALL).height == 0, failures.to_dicts()


def test_the_same_files_compiled_alone_fail_on_their_missing_headers(project, store, toolchains):
    """Without the repository (only the file itself, as a scraped single file), nvcc fails."""
    nv = toolchains["nvidia"]
    rows = table(project, "ingest").filter(pl.col("include_dirs").list.len() > 1)
    assert rows.height > 0 and set(rows["origin"]) == {"repos"}
    runner = ActionRunner(store, local_executor({"nvidia": nv}), timeout_s=300)
    params = yaml.safe_load((project / "params.yaml").read_text())["nvidia"]
    project_store = Store(project / ".cass" / "store")
    for row in rows.head(3).iter_rows(named=True):
        main = row["files"][0]
        inputs = {main["path"]: store.put(project_store.get(main["digest"]))}
        runs = [TargetRun(t, dict(inputs)) for t in nv.targets(main["path"], ["sm_89"], params["flags"])]
        run_targets(nv, runner, runs)
        failed = [r for r in runs if r.failure is not None]
        assert failed, row["path"]
        assert failure_reason(nv, failed[0], store)[0] == "compile_failed:missing_header"
