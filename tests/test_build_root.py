"""The Debian packages' build root: their build dependencies installed from Debian into a root of their suite, which
their configure step sees as its system (toolchains/build_root.py), and the CUDA toolkit as CMake finds it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_ingest import INGEST_PARAMS, KERNEL, write

from cass.sources.build_context import BuildContexts
from cass.sources.includes import TreeIndex
from cass.stages.fetch_debian import install_build_dependencies
from toolchains import build_root
from toolchains.sandbox import Sandbox, detect

DSC = """Format: 3.0 (quilt)
Source: demo
Build-Depends: cmake,
 libblas-dev [amd64 arm64],
 debhelper-compat (= 13)
Build-Depends-Indep: python3-sphinx
Build-Depends-Arch: libgtest-dev <!nocheck>
Package-List:
 demo deb science optional arch=any
"""

BLAS_PROJECT = {
    "CMakeLists.txt": (
        "cmake_minimum_required(VERSION 3.18)\nproject(demo LANGUAGES CXX CUDA)\n"
        "find_package(BLAS REQUIRED)\nfind_package(CUDAToolkit REQUIRED)\n"
        "configure_file(config.h.in generated/config.h)\n"
        "add_library(demo scale.cu)\ntarget_include_directories(demo PRIVATE ${CMAKE_BINARY_DIR}/generated)\n"
        "target_link_libraries(demo CUDA::cudart ${BLAS_LIBRARIES})\n"),
    "config.h.in": "#define HAVE_BLAS 1\n",
    "scale.cu": '#include "config.h"\n' + KERNEL,
}


def test_the_build_dependencies_of_a_dsc_are_those_of_an_architecture_dependent_build():
    """Build-Depends and Build-Depends-Arch, continuation lines joined, qualifiers kept for apt; not -Indep."""
    assert build_root.build_dependencies(DSC) == (
        "cmake, libblas-dev [amd64 arm64], debhelper-compat (= 13), libgtest-dev <!nocheck>")
    assert build_root.build_dependencies("Source: bare\n") == ""


def test_a_system_root_stands_in_for_the_machines_system_trees(tmp_path):
    """The sandbox binds the root's /usr (and the loader's files) where the machine's would be; the tool's own trees
    keep their paths; the rlimits mode cannot honour a root and says so."""
    argv = Sandbox("bwrap", "bwrap").host(["cmake"], tmp_path, [tmp_path / "tree"], Path("/roots/bookworm"))
    binds = [(argv[i + 1], argv[i + 2]) for i, a in enumerate(argv) if a == "--ro-bind"]
    assert ("/roots/bookworm/usr", "/usr") in binds
    assert ("/roots/bookworm/etc/ld.so.cache", "/etc/ld.so.cache") in binds
    assert ("/usr", "/usr") not in binds
    with pytest.raises(ValueError, match="needs the bwrap sandbox"):
        Sandbox.weak().host(["cmake"], tmp_path, [], Path("/roots/bookworm"))


@pytest.fixture(scope="module")
def blas_root(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A bookworm build root made by the stage's own step, from three packages: one needing libblas-dev, one with no
    CMake project, one naming a package Debian does not have."""
    if shutil.which("debootstrap") is None or detect().mode != "bwrap" or os.geteuid() != 0:
        pytest.skip("needs root, debootstrap and bubblewrap (scripts/setup.sh installs both)")
    base = tmp_path_factory.mktemp("build-root")
    downloads = base / "downloads"
    rows = []
    for name, needs, cmake in (("blas-user", "libblas-dev", True), ("no-cmake", "libblas-dev", False),
                               ("missing", "cass-no-such-package", True)):
        tree = write(base / name, {"CMakeLists.txt" if cmake else "Makefile": "\n"})
        write(downloads, {f"{name}_1.dsc": f"Source: {name}\nBuild-Depends: {needs}\n"})
        rows.append({"name": name, "version": "1", "tree": str(tree), "files": [{"name": f"{name}_1.dsc"}]})
    params = {"build_root": str(base / "root"), "suite": "bookworm", "archive": "http://deb.debian.org/debian"}
    install_build_dependencies(rows, downloads, params)
    return base / "root", rows


@pytest.mark.slow
def test_each_cmake_package_gets_its_build_dependencies_and_a_failure_is_told(blas_root):
    """Made once, the root holds libblas-dev for the CMake package; the package with no CMake project needs none;
    a dependency Debian lacks is that package's failure, with apt's words, and the others go on. Every row names
    the root's identity, which changes with what is installed."""
    root, rows = blas_root
    states = {r["name"]: r["build_deps"] for r in rows}
    assert states["blas-user"] == "installed"
    assert states["no-cmake"] == "not needed"
    assert states["missing"].startswith("failed: build dependencies of missing 1") and "cass-no-such-package" in \
        states["missing"]
    assert {r["build_root"] for r in rows} == {build_root.identity(root)}
    installed = subprocess.run(["chroot", str(root), "dpkg-query", "-W", "-f", "${Package}\n"], capture_output=True,
                               text=True, check=True).stdout.split()
    assert {"libblas-dev", "cmake", "g++"} <= set(installed)


@pytest.mark.slow
def test_a_configure_finds_in_the_build_root_what_this_machine_lacks(blas_root, tmp_path, store):
    """A project needing BLAS and the CUDA runtime (CUDA::cudart: the wheels' libraries under CMake's names)
    configures in the build root; its file gets the written header and the step names the root it saw. On this
    machine, which has no libblas-dev, the same project fails to configure."""
    root, _ = blas_root
    tree = write(tmp_path / "demo", BLAS_PROJECT)
    made = BuildContexts(TreeIndex.scan(tree), store, INGEST_PARAMS["build_context"], {}, "demo", root)
    made.prepare(["scale.cu"])
    [status] = made.statuses()
    assert (status["status"], status["files"], status["headers"]) == ("ok", 1, 1), store.get_text(status["log"])
    assert status["system"] == f"{root}@{build_root.identity(root)}"
    assert made.of("scale.cu").source == "cmake:."
    assert "_cass_build/generated" in made.of("scale.cu").include_dirs

    if subprocess.run(["dpkg-query", "-W", "libblas-dev"], capture_output=True, check=False).returncode != 0:
        here = BuildContexts(TreeIndex.scan(tree), store, INGEST_PARAMS["build_context"], {}, "demo")
        here.prepare(["scale.cu"])
        [status] = here.statuses()
        assert (status["status"], status["system"]) == ("failed", "this machine")
        assert "BLAS" in store.get_text(status["log"])
