"""Near-duplicate removal: code-aware tokens, MinHash LSH clusters, the dedup stage's rules."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasketch
import numpy as np
import polars as pl
import pytest
import yaml
from harness.project import REPO

from cass.dedup.minhash import (
    MinHashParams,
    candidate_links,
    components,
    content_key,
    shingle_hashes,
    signatures,
    token_hashes,
)
from cass.pipeline.context import Stage
from cass.pipeline.manifests import DROPPED_SCHEMA, FILES_DTYPE, write_parquet
from cass.stages.dedup import NoSuiteMirrorError
from cass.stages.dedup import run as run_dedup
from cass.stages.real_tasks import SCHEMA as REAL_TASKS_SCHEMA
from store import Store

PARAMS = MinHashParams(ngram=5, num_perm=256, seed=1, threshold=0.7)
KERNEL = (REPO / "corpus" / "physics_simulation" / "nbody_tiled.cu").read_text()
OTHER = (REPO / "corpus" / "cryptography" / "sha256_blocks.cu").read_text()


def test_tokens_keep_operators_and_literals_and_drop_comments():
    assert len(token_hashes("a += b<<2; /* note */ x->y = 3.5f; // tail")) == 15
    assert content_key("int  a=1;\n// c\n") == content_key("int a = 1; /* other */")
    assert content_key("a + b") != content_key("a - b")
    assert content_key("x = 256;") != content_key("x = 512;")
    assert content_key("Alpha") != content_key("alpha")
    assert token_hashes("").size == 0


def test_a_lightly_edited_copy_clusters_with_its_original_and_nothing_else():
    edited = KERNEL.replace("// ", "// NOTE: ", 3).replace("0.5f", "0.25f", 1)
    sig = signatures([KERNEL, OTHER, edited], PARAMS)
    links = candidate_links(sig, PARAMS)
    assert components(3, links).tolist() == [0, 1, 0]
    assert links.filter(pl.col("doc") == 2)["similarity"][0] > 0.8


def test_signatures_equal_datasketch_bulk():
    texts = [KERNEL, OTHER, "__global__ void k() {}"]
    ours = signatures(texts, PARAMS)
    theirs = datasketch.MinHash.bulk([shingle_hashes(token_hashes(t), PARAMS.ngram).tolist() for t in texts],
                                     num_perm=PARAMS.num_perm, seed=PARAMS.seed, hashfunc=int, scheme="affine32")
    assert all((row == m.hashvalues).all() for row, m in zip(ours, theirs, strict=True))


def test_signatures_are_deterministic_and_uint32():
    one, two = signatures([KERNEL], PARAMS), signatures([KERNEL], PARAMS)
    assert one.dtype == np.uint32 and one.shape == (1, 256)
    assert (one == two).all()


def test_components_follow_chains():
    links = pl.DataFrame({"doc": [1, 2, 4], "first": [0, 1, 3], "similarity": [1.0, 1.0, 1.0]})
    assert components(5, links).tolist() == [0, 0, 0, 3, 3]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A directory with dvc.yaml, params.yaml and the manifests the dedup stage reads (a filter manifest each test
    writes; real_tasks' as it is without the suite's mirror: no task)."""
    for name in ("dvc.yaml", "params.yaml"):
        shutil.copy(REPO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["dedup"]["real_tasks"] = False   # no mirror here: the test below turns it on
    Path("params.yaml").write_text(yaml.safe_dump(params))
    write_parquet(pl.DataFrame(schema=REAL_TASKS_SCHEMA), Path("data/real_tasks/manifest.parquet"))
    write_parquet(pl.DataFrame([{"sample_id": "0" * 16, "origin": "hecbench", "path": "vecsum-cuda", "domain": "d",
                                 "stage": "real_tasks", "reason": "mirror_missing",
                                 "detail": "no mirror of https://github.com/zjin-lcf/HeCBench at /nowhere/hecbench "
                                           "(params.yaml benchmark.real.source)"}], schema=DROPPED_SCHEMA),
                  Path("data/real_tasks/dropped.parquet"))
    return tmp_path


def write_filter_manifest(store: Store, sources: dict[str, str], origins: dict[str, str] | None = None) -> None:
    rows = [{"sample_id": f"{i:016x}", "origin": (origins or {}).get(path, "test"), "path": path, "domain": "d",
             "files": [{"path": path, "digest": store.put_text(text)}], "unresolved_includes": [],
             "bytes": len(text.encode())} for i, (path, text) in enumerate(sorted(sources.items()))]
    write_parquet(pl.DataFrame(rows, schema={"sample_id": pl.String, "origin": pl.String, "path": pl.String,
                                             "domain": pl.String, "files": FILES_DTYPE,
                                             "unresolved_includes": pl.List(pl.String), "bytes": pl.Int64}),
                  Path("data/filter/manifest.parquet"))


def test_stage_keeps_the_longest_and_caches_signatures(project):
    store = Store(project / ".cass" / "store")
    variant = KERNEL.replace("0.5f", "0.25f", 1)
    longer = KERNEL + "\n__device__ int extra_flag = 1;  // the longest of the three\n"
    write_filter_manifest(store, {"a.cu": KERNEL, "b.cu": variant, "c.cu": longer, "d.cu": OTHER,
                                  "e.cu": KERNEL.replace("    ", "\t")})
    run_dedup(Stage("dedup"))
    removed = pl.read_parquet("data/dedup/removed.parquet")
    assert dict(zip(removed["path"], removed["reason"], strict=True)) == {
        "a.cu": "near_duplicate", "b.cu": "near_duplicate", "e.cu": "exact_duplicate"}
    assert set(removed.filter(pl.col("reason") == "near_duplicate")["kept"]) == {"test:c.cu"}
    kept = pl.read_parquet("data/dedup/manifest.parquet")["path"].to_list()
    assert sorted(kept) == ["c.cu", "d.cu"]
    metrics = json.loads(Path("metrics/dedup.json").read_text())
    assert json.loads(Path("metrics/run/dedup.json").read_text())["signatures"] == {"computed": 4, "cached": 0}
    assert metrics["parameters"]["num_perm"] == 256 and metrics["parameters"]["datasketch"] == "2.0.0"

    write_filter_manifest(store, {"a.cu": KERNEL, "b.cu": variant, "c.cu": longer, "d.cu": OTHER,
                                  "e.cu": KERNEL.replace("    ", "\t"), "f.cu": OTHER + "\nint extra;\n"})
    run_dedup(Stage("dedup"))
    assert json.loads(Path("metrics/run/dedup.json").read_text())["signatures"] == {"computed": 1, "cached": 4}


def test_decontamination_drops_items_near_a_reference_and_never_the_benchmarks_own_tasks(project):
    store = Store(project / ".cass" / "store")
    (project / "bench_tasks").mkdir()
    task = OTHER.replace("// ", "// task: ", 2)
    (project / "bench_tasks" / "task1.cu").write_text(task)
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["dedup"].update(reference_trees=["bench_tasks"], exempt_origins=["bench"])
    Path("params.yaml").write_text(yaml.safe_dump(params))
    # the task itself comes in as origin bench (as the pipeline ingests translation_bench/tasks), and would be
    # the exact duplicate of a longer training copy and contaminated by its own file were it not exempt
    write_filter_manifest(store, {"a.cu": KERNEL, "task1.cu": task, "z.cu": task + "\n// a training copy\n"},
                          origins={"task1.cu": "bench"})
    run_dedup(Stage("dedup"))
    removed = pl.read_parquet("data/dedup/removed.parquet")
    assert dict(zip(removed["path"], removed["reason"], strict=True)) == {"z.cu": "contaminated"}
    assert "bench_tasks/task1.cu" in removed["kept"][0]
    kept = pl.read_parquet("data/dedup/manifest.parquet")
    assert sorted(zip(kept["path"], kept["origin"], strict=True)) == [("a.cu", "test"), ("task1.cu", "bench")]
    assert json.loads(Path("metrics/dedup.json").read_text())["kept"] == 2


def test_decontamination_against_a_suite_that_was_not_read_stops_and_names_the_mirror(project):
    """With ``dedup.real_tasks`` on and no task of the real-program suite read (its mirror missing), the stage went
    on and the card said "0 files": a build that believed itself decontaminated. It now stops, naming the mirror and
    the parameter that turns decontamination off; off, it goes on."""
    store = Store(project / ".cass" / "store")
    write_filter_manifest(store, {"a.cu": KERNEL})
    params = yaml.safe_load(Path("params.yaml").read_text())
    params["dedup"]["real_tasks"] = True
    Path("params.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(NoSuiteMirrorError, match=r"mirror_missing: no mirror of .* at /nowhere/hecbench .*"
                                                 r"benchmark.real.source.* dedup.real_tasks: false"):
        run_dedup(Stage("dedup"))
    params["dedup"]["real_tasks"] = False
    Path("params.yaml").write_text(yaml.safe_dump(params))
    run_dedup(Stage("dedup"))
    assert pl.read_parquet("data/dedup/manifest.parquet")["path"].to_list() == ["a.cu"]


def test_a_document_without_tokens_gets_the_empty_signature():
    sig = signatures(["", "// only a comment\n"], PARAMS)
    assert (sig == np.iinfo(np.uint32).max).all()


def test_comment_markers_inside_strings_are_not_comments():
    assert content_key('printf("see http://x\\n"); a = 1;') != content_key('printf("see http://x\\n"); a = 2;')
