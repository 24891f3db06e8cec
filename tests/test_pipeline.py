"""The whole pipeline with `dvc repro` on the bundled corpus, in a copy of the project."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

REPO = Path(__file__).resolve().parents[1]
PROJECT_FILES = ["dvc.yaml", "params.yaml", ".dvcignore", "stages", "store", "toolchains", "cass", "corpus"]
pytestmark = pytest.mark.slow


def run(cmd: list[str], cwd: Path) -> str:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def metrics(project: Path, stage: str) -> dict:
    return json.loads((project / "metrics" / f"{stage}.json").read_text())


def dropped(project: Path, stage: str) -> dict[str, str]:
    df = pl.read_parquet(project / "data" / stage / "dropped.parquet")
    return dict(zip(df["path"], df["reason"], strict=True))


@pytest.fixture(scope="module")
def project(tmp_path_factory, toolchains) -> Path:
    root = tmp_path_factory.mktemp("project")
    for name in PROJECT_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, root / name)
    run(["git", "init", "-q"], root)
    run(["dvc", "init", "-q"], root)
    run(["dvc", "config", "core.analytics", "false"], root)
    run(["dvc", "repro"], root)
    return root


def test_dag_has_every_stage(project):
    dag = run(["dvc", "dag"], project)
    for stage in ("ingest", "filter", "dedup", "hipify", "compile_nvidia", "compile_amd", "pair", "export"):
        assert stage in dag


def test_every_sample_is_accounted_for(project):
    ingest = metrics(project, "ingest")
    assert ingest["in"] == len(list((project / "corpus").rglob("*.cu")))
    for stage in ("filter", "dedup", "hipify", "compile_nvidia", "compile_amd", "pair"):
        m = metrics(project, stage)
        assert m["in"] == m["kept"] + m["dropped"] == m["kept"] + sum(m["dropped_by_reason"].values())
    assert metrics(project, "export")["rows"] == metrics(project, "pair")["kept"]


def test_samples_made_to_fail_are_reported_with_their_reason(project):
    assert dropped(project, "filter") == {
        "reduction_scan/scale_stub.cu": "too_short",
        "memory_operations/device_properties_report.cu": "no_kernel",
        "memory_operations/hello_from_gpu.cu": "trivial",
    }
    assert dropped(project, "dedup") == {"linear_algebra/tiled_matmul_copy.cu": "exact_duplicate"}
    assert dropped(project, "compile_nvidia") == {"math/broken_polynomial_eval.cu": "compile_failed:syntax"}
    amd = dropped(project, "compile_amd")
    assert amd["machine_learning/wmma_tensor_core_gemm.cu"] == "compile_failed:hipify_gap"
    assert amd["reduction_scan/warp_shuffle_reduce.cu"] == "compile_failed:hipify_gap"
    assert amd["math/broken_polynomial_eval.cu"] == "compile_failed:syntax"


def test_export_holds_real_pairs_for_both_vendors(project):
    shards = sorted((project / "data" / "export" / "pairs").glob("train-*.parquet"))
    df = pl.read_parquet(shards)
    good = df.filter(pl.col("cuda_device_sass_sm_89").str.contains("Function : ")
                     & pl.col("hip_device_asm_gfx1100").str.contains("s_endpgm")
                     & pl.col("hip_device_asm_gfx1100").str.contains(".amdhsa_kernel", literal=True))
    assert good.height >= 40
    assert df["domain"].n_unique() == 16
    assert df.filter(pl.col("hip_source").str.contains("cudaMalloc")).height == 0
    assert (df["nvcc_version"].str.contains("13.5") & df["hipcc_version"].str.contains("HIP version")).all()

    import datasets

    loaded = datasets.load_dataset("parquet", data_files=[str(s) for s in shards], split="train")
    assert loaded.num_rows == df.height
    assert set(loaded.column_names) == set(df.columns)


def test_rerun_is_up_to_date_and_one_changed_file_recompiles_only_that_file(project):
    assert "Data and pipelines are up to date" in run(["dvc", "repro"], project)
    changed = project / "corpus" / "graph" / "pagerank_pull.cu"
    changed.write_text(changed.read_text() + "\n// a comment added by a contributor\n")
    run(["dvc", "repro"], project)
    paired = metrics(project, "pair")["kept"]
    hip = metrics(project, "hipify")["actions"]
    assert hip["misses"] == 1
    nv = metrics(project, "compile_nvidia")["actions"]
    assert 2 <= nv["misses"] <= 3  # host + cubin; cuobjdump only if the cubin bytes changed
    amd = metrics(project, "compile_amd")["actions"]
    assert amd["misses"] == 2  # host + gfx1100
    assert amd["hits"] >= 2 * (paired - 1)
