"""A real Debian source package through `dvc repro`: StarPU 1.3.10 (a runtime), two of its example
files, fetched from Debian's archive, with its configure-time header made from the template and
the values in params.yaml; then the same files without configuring, which fail on both vendors
for the header only their build would have made."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO, copy_pipeline, metrics, run_in

pytestmark = pytest.mark.slow

FILES = ["starpu/examples/basic_examples/block_cuda.cu", "starpu/examples/basic_examples/variable_kernels.cu"]


def build(root: Path, debian_dir: Path, configure: bool) -> Path:
    """A copy of the pipeline building the two StarPU files (configured or not) to the export."""
    copy_pipeline(root, with_bundled_corpus=False, hip_nvidia_check=False)
    (root / "corpus").mkdir()
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    starpu = next(p for p in params["debian_sources"]["packages"] if p["name"] == "starpu")
    starpu["paths"] = [f.removeprefix("starpu/") for f in FILES]
    params["corpus"]["trees"] = []
    params["dedup"]["real_tasks"] = False   # no suite mirror beside the copy (as copy_pipeline sets it)
    params["configure"]["enabled"] = configure
    params["debian_sources"].update(enabled=True, dir=str(debian_dir), packages=[starpu])
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro", "yield_report", "export"] if configure else ["dvc", "repro", "yield_report"], root)
    return root


@pytest.fixture(scope="module")
def debian_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("debian")


@pytest.fixture(scope="module")
def project(tmp_path_factory, toolchains, debian_dir) -> Path:
    return build(tmp_path_factory.mktemp("configured") / "project", debian_dir, configure=True)


@pytest.fixture(scope="module")
def unconfigured(tmp_path_factory, toolchains, debian_dir, project) -> Path:
    return build(tmp_path_factory.mktemp("unconfigured") / "project", debian_dir, configure=False)


def test_the_package_is_fetched_and_its_files_keep_their_license(project):
    fetched = pl.read_parquet(project / "data" / "fetch_debian" / "manifest.parquet")
    assert fetched.select("name", "version", "flavour").rows() == [("starpu", "1.3.10+dfsg-2", "runtime")]
    assert fetched["license_source"][0] == "starpu_1.3.10+dfsg-2.debian.tar.xz:debian/copyright"
    assert fetched["build_deps"][0] == "not needed"   # autotools: no configure step needs the build root
    ingest = metrics(project, "ingest")
    assert ingest["by_origin"] == {"debian_starpu": 2} and ingest["not_selected"] == {"debian_starpu": 37}
    assert ingest["with_configured_headers"] == {"debian_starpu": 2}
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    assert sorted(pairs["path"]) == FILES
    assert pairs["detected_licenses"].to_list() == [["LGPL-2.1"], ["LGPL-2.1"]]
    assert (pairs["license_type"] == "copyleft").all() and (pairs["revision"] == "1.3.10+dfsg-2").all()
    assert pairs["repository"].str.ends_with("starpu_1.3.10%2bdfsg-2.dsc").all()


def test_the_configured_header_is_recorded_and_both_vendors_get_it(project):
    configured = pl.read_parquet(project / "data" / "ingest" / "configured.parquet")
    header = configured.filter(pl.col("path") == "starpu/include/starpu_config.h").row(0, named=True)
    assert header["template"] == "starpu/include/starpu_config.h.in" and header["style"] == "autoconf"
    assert "STARPU_USE_CUDA" in header["set"] and "STARPU_HAVE_WINDOWS" in header["unset"]
    pairs = pl.read_parquet(sorted((project / "data" / "export" / "pairs").glob("*.parquet")))
    for cuda, hip in zip(pairs["cuda_headers"], pairs["hip_headers"], strict=True):
        text = {h["path"]: h["text"] for h in cuda}["include/starpu_config.h"]
        assert "#define STARPU_USE_CUDA 1" in text and "#define STARPU_NMAXBUFS 8" in text
        assert "include/starpu_config.h" in {h["path"] for h in hip}
    corpus = metrics(project, "yield")["corpora"]["debian_starpu"]
    assert (corpus["files"], corpus["nvidia_ok"], corpus["both"], corpus["nvidia_ok_with_configured_headers"]) == \
        (2, 2, 2, 2)


def test_without_configuring_both_vendors_fail_on_the_generated_header(unconfigured):
    corpus = metrics(unconfigured, "yield")["corpora"]["debian_starpu"]
    assert (corpus["nvidia_ok"], corpus["amd_ok"]) == (0, 0)
    assert corpus["nvidia_failures"] == corpus["amd_failures"] == {"generated_header": 2}
    assert corpus["top_nvidia_causes"] == [
        {"cause": "fatal error: starpu_config.h: No such file or directory", "files": 2}]
