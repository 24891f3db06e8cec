"""Sources that try to read host files at compile time go through the whole pipeline (`dvc repro`):
an absolute include, an escaping relative include, ``/proc/self/environ`` and a symlink to the host
file. Each is accounted for, and the planted secret reaches no artifact: no manifest, drop record,
stored object (stderr included), store pack, metric or figure."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO, TOOL_ENV, copy_pipeline, run_in

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("bubblewrap")]

SOURCES = {name: REPO / "corpus" / rel for name, rel in {   # self-contained programs that pair, one per file
    "honest.cu": "graphics_rendering/mandelbrot_tiles.cu", "absolute.cu": "image_processing/sobel_edge_streams.cu",
    "escaping.cu": "machine_learning/kmeans_clustering.cu", "environ.cu": "memory_operations/shared_transpose.cu",
}.items()}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, toolchains):
    token = f"SECRET_TOKEN_{uuid.uuid4().hex}"
    secret = Path("/var/tmp") / f"cass-secret-{uuid.uuid4().hex}" / "secret.cuh"
    secret.parent.mkdir()
    secret.write_text(f"{token}\n")   # a secrets file: a compiler that read it would quote it in its error
    root = copy_pipeline(tmp_path_factory.mktemp("hostile") / "project", with_bundled_corpus=False)
    tree = root / "corpus"
    tree.mkdir()
    escape = "../" * (len(tree.resolve().parts) + 2) + str(secret).lstrip("/")
    first_lines = {"honest.cu": "", "absolute.cu": f'#include "{secret}"\n',
                   "escaping.cu": f'#include "{escape}"\n', "environ.cu": "#include </proc/self/environ>\n"}
    for name, source in SOURCES.items():
        (tree / name).write_text(first_lines[name] + source.read_text())
    (tree / "linked.cu").symlink_to(secret)
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["trees"] = [{"path": "corpus", "origin": "hostile"}]
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro"], root, env={**TOOL_ENV, "CASS_PLANTED_SECRET": token})
    yield root, token
    secret.unlink()
    secret.parent.rmdir()


def test_no_artifact_holds_the_secret(hostile):
    root, token = hostile
    scanned = 0
    for path in root.rglob("*"):
        if path.is_symlink() or not path.is_file() or path.is_relative_to(root / "corpus"):
            continue
        scanned += 1
        assert token.encode() not in path.read_bytes(), f"{path.relative_to(root)} holds the planted secret"
    packs = list((root / "data" / "store_packs").rglob("*"))
    assert scanned > 100 and any(p.is_file() for p in packs)   # the store, its packs and every output were read


def test_each_hostile_file_is_accounted_for_and_the_honest_one_pairs(hostile):
    root, _ = hostile
    drops = pl.concat([pl.read_parquet(p) for p in sorted((root / "data").glob("*/dropped.parquet"))],
                      how="diagonal_relaxed")
    reason = dict(zip(drops["path"], drops["reason"], strict=False))
    assert reason["linked.cu"] == "symlink_outside"
    for name in ("absolute.cu", "escaping.cu"):   # the include is not found on either side
        assert reason[name].startswith("not_paired:nvidia+amd_failed"), (name, reason[name])
    exported = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))["path"].to_list()
    assert "honest.cu" in exported
    assert set(exported) | set(reason) >= {"honest.cu", "absolute.cu", "escaping.cu", "environ.cu", "linked.cu"}
    assert os.environ.get("CASS_PLANTED_SECRET") is None   # only the pipeline's environment held it
