"""The Debian packages' build root: their build dependencies installed from Debian into a root of their suite, which
their configure steps see as their system (toolchains/build_root.py), and the CUDA toolkit as CMake finds it; a
package's own configure step (its rules and patches: toolchains/configure.py) where CMake's fails."""

from __future__ import annotations

import io
import os
import pickle
import platform
import shutil
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path

import polars as pl
import pytest
from test_ingest import INGEST_PARAMS, KERNEL, write

from cass.sources.build_context import BuildContexts
from cass.sources.includes import TreeIndex
from cass.stages.fetch_debian import install_build_dependencies
from store import Store
from toolchains import Toolchain, build_root
from toolchains.configure import CMakeConfigure, DebianConfigure
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


DEMO_PACKAGE = {
    "CMakeLists.txt": (
        "cmake_minimum_required(VERSION 3.18)\nproject(demo LANGUAGES CXX CUDA)\n"
        "if(NOT DEFINED DEMO_LEVEL)\n  message(FATAL_ERROR \"DEMO_LEVEL: the package's build sets it\")\nendif()\n"
        "add_compile_definitions(DEMO_LEVEL=${DEMO_LEVEL})\n"
        "add_library(demo scale.cu)\nadd_executable(never never.cpp)\n"),
    "demo_version.h.in": "#define DEMO_VERSION \"@PROJECT_VERSION@\"\n",
    "demo_extra.h.in": "#define DEMO_EXTRA @DEMO_EXTRA@\n",
    "scale.cu": '#include "demo_version.h"\n' + KERNEL,
    "other.cu": KERNEL,
    "never.cpp": "#error the configure step must stop before the build\n",
}
"""An upstream tree whose CMake configure fails without the value its Debian build passes, whose header comes from a
template only a Debian patch configures, and one template no build configures."""
DEMO_RULES = {
    "debhelper": ("override_dh_auto_configure:\n\tdh_auto_configure -- -DDEMO_LEVEL=3\n\n"
                  "override_dh_auto_build:\n\tcd obj-* && $(MAKE)\n"),
    "by hand": "override_dh_auto_configure:\n\tcmake -S . -B obj-by-hand -DDEMO_LEVEL=3\n",
}
"""Two ways rules configure: through ``dh_auto_configure``, with a build by hand after it (only the stop after
``dh_auto_configure`` keeps it from compiling), and by hand, with debhelper's build after it (only the stop at
``dh_auto_build`` keeps that from running); each with the build folder its headers are written in."""
DEMO_DEBIAN = {
    "debian/control": ("Source: demo\nSection: science\nPriority: optional\nMaintainer: Demo <demo@example.org>\n"
                       "Build-Depends: debhelper-compat (= 13), cmake\n\n"
                       "Package: demo\nArchitecture: any\nDescription: demo\n demo\n"),
    "debian/changelog": "demo (1.0-1) unstable; urgency=medium\n\n  * Demo.\n\n"
                        " -- Demo <demo@example.org>  Sun, 29 Nov 2026 12:00:00 +0000\n",
    "debian/rules": "#!/usr/bin/make -f\n%:\n\tdh $@\n\n" + DEMO_RULES["debhelper"],
    "debian/source/format": "3.0 (quilt)\n",
    "debian/patches/series": "version-header.patch\n",
    "debian/patches/version-header.patch": (
        "--- a/CMakeLists.txt\n+++ b/CMakeLists.txt\n@@ -6,2 +6,4 @@\n"
        " add_compile_definitions(DEMO_LEVEL=${DEMO_LEVEL})\n"
        "+configure_file(demo_version.h.in gen/demo_version.h)\n+include_directories(${CMAKE_BINARY_DIR}/gen)\n"
        " add_library(demo scale.cu)\n"),
}
"""The package's ``debian/``: a rules file passing the value, and the patch that writes the header."""
BUILD_FOLDERS = {"debhelper": f"obj-{platform.machine()}-linux-gnu", "by hand": "obj-by-hand"}
"""Where each rules variant's build writes (debhelper's: ``obj-`` and the GNU triplet)."""


def debian_tarball(path: Path, files: dict[str, str]) -> Path:
    """A ``.debian.tar.xz`` holding ``files`` (``debian/rules`` executable)."""
    with tarfile.open(path, "w:xz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name == "debian/rules" else 0o644
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def blas_root(tmp_path_factory) -> tuple[Path, list[dict]]:
    """A bookworm build root made by the stage's own step, from four packages: one needing libblas-dev, one with no
    CMake project, one naming a package Debian does not have, and one built with debhelper."""
    if shutil.which("debootstrap") is None or detect().mode != "bwrap" or os.geteuid() != 0:
        pytest.skip("needs root, debootstrap and bubblewrap (scripts/setup.sh installs both)")
    base = tmp_path_factory.mktemp("build-root")
    downloads = base / "downloads"
    rows = []
    for name, needs, cmake in (("blas-user", "libblas-dev", True), ("no-cmake", "libblas-dev", False),
                               ("missing", "cass-no-such-package", True), ("debhelper-user", "debhelper-compat (= 13)",
                                                                           True)):
        tree = write(base / name, {"CMakeLists.txt" if cmake else "Makefile": "\n"})
        write(downloads, {f"{name}_1.dsc": f"Source: {name}\nBuild-Depends: {needs}\n"})
        rows.append({"name": name, "version": "1", "tree": str(tree), "files": [{"name": f"{name}_1.dsc"}]})
    params = {"build_root": str(base / "root"), "suite": "bookworm", "archive": "http://deb.debian.org/debian"}
    install_build_dependencies(rows, downloads, params)
    return base / "root", rows


@pytest.mark.slow
def test_each_cmake_package_gets_its_build_dependencies_and_a_failure_is_told(blas_root):
    """Made once, the root holds libblas-dev and debhelper for the CMake packages; the package with no CMake project
    needs none;
    a dependency Debian lacks is that package's failure, with apt's words, and the others go on. Every row names
    the root's identity, which changes with what is installed."""
    root, rows = blas_root
    states = {r["name"]: r["build_deps"] for r in rows}
    assert states["blas-user"] == states["debhelper-user"] == "installed"
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
    configures in the build root; its file gets the written header and the step names the root it saw (a Debian
    package's own step is not needed then). On this machine, which has no libblas-dev, the same project fails to
    configure."""
    root, _ = blas_root
    tree = write(tmp_path / "demo", BLAS_PROJECT)
    packaging = debian_tarball(tmp_path / "demo_1.0-1.debian.tar.xz", DEMO_DEBIAN)
    made = BuildContexts(TreeIndex.scan(tree), store, INGEST_PARAMS["build_context"], {}, "demo", root, packaging)
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


@pytest.mark.slow
@pytest.mark.parametrize("rules", list(DEMO_RULES))
def test_a_debian_package_whose_cmake_configure_fails_is_configured_by_its_own_rules(blas_root, tmp_path, store,
                                                                                     monkeypatch, rules):
    """CMake's own configure step fails on the upstream tree (a value only the package's rules pass); the package's
    configure step then runs its rules with its patch applied: the file gets the rules' define and the patched-in
    header, another file the headers only, and the build stops before it compiles anything (``never.cpp`` would not
    compile), however the rules configure. The template the step made is not configured by hand; the other one is.
    Run again, both steps come from the store."""
    root, _ = blas_root
    tree = write(tmp_path / "demo", DEMO_PACKAGE)
    own = {**DEMO_DEBIAN, "debian/rules": "#!/usr/bin/make -f\n%:\n\tdh $@\n\n" + DEMO_RULES[rules]}
    packaging = debian_tarball(tmp_path / "demo_1.0-1.debian.tar.xz", own)
    folder = BUILD_FOLDERS[rules]

    def configured() -> BuildContexts:
        made = BuildContexts(TreeIndex.scan(tree), store, INGEST_PARAMS["build_context"], {}, "demo", root, packaging)
        made.prepare(["scale.cu", "other.cu"])
        return made

    made = configured()
    cmake, debian = made.statuses()
    assert (cmake["source"], cmake["status"]) == ("cmake", "failed")
    assert "DEMO_LEVEL: the package's build sets it" in store.get_text(cmake["log"])
    assert (debian["source"], debian["status"], debian["files"], debian["headers"]) == ("debian", "ok", 1, 1), \
        store.get_text(debian["log"])
    scale = made.of("scale.cu")
    assert (scale.source, scale.include_dirs) == ("debian:.", (f"{folder}/gen",))
    assert "-DDEMO_LEVEL=3" in scale.flags
    assert made.of("other.cu").source == "debian-headers:."   # no target of the build compiles it
    assert made.index.read(f"{folder}/gen/demo_version.h") == b'#define DEMO_VERSION ""\n'
    assert made.made_by_build("demo_version.h") and not made.made_by_build("demo_extra.h")
    assert "never.cpp" not in store.get_text(debian["log"])

    def ran(*args, **kwargs):
        raise AssertionError("a configure step ran again")

    monkeypatch.setattr(CMakeConfigure, "configure", ran)
    monkeypatch.setattr(DebianConfigure, "configure", ran)
    again = configured()
    assert [s["status"] for s in again.statuses()] == ["failed", "ok"]
    assert again.of("scale.cu") == made.of("scale.cu")


@pytest.mark.slow
def test_a_debian_package_is_not_configured_by_its_rules_without_a_build_root_or_cmake(tmp_path, store, toolchains):
    """With no build root the package's step does not run (this machine's system lacks its build dependencies), and
    says why; the file is stand-alone. With ``build_context.cmake`` off, neither step runs."""
    if detect().mode != "bwrap":
        pytest.skip("configure steps run only in bubblewrap's sandbox")
    tree = write(tmp_path / "demo", DEMO_PACKAGE)
    packaging = debian_tarball(tmp_path / "demo_1.0-1.debian.tar.xz", DEMO_DEBIAN)
    made = BuildContexts(TreeIndex.scan(tree), store, INGEST_PARAMS["build_context"], {}, "demo", None, packaging)
    made.prepare(["scale.cu"])
    assert [(s["source"], s["status"]) for s in made.statuses()] == [("cmake", "failed"), ("debian", "no build root")]
    assert made.of("scale.cu").source == "standalone" and not made.made_by_build("demo_version.h")

    params = {**INGEST_PARAMS["build_context"], "cmake": False}
    off = BuildContexts(TreeIndex.scan(tree), store, params, {}, "demo", None, packaging)
    off.prepare(["scale.cu"])
    assert off.statuses() == [] and off.of("scale.cu").source == "standalone"


def ladder_params(root: Path, side: str, **overrides) -> dict:
    """params.yaml with two workers, ``debian_sources.build_root`` at ``root`` and ``overrides`` set in ``side``'s
    section."""
    from harness.project import REPO

    from cass.pipeline.context import load_params

    params = load_params(REPO / "params.yaml")
    return {**params, "executor": {**params["executor"], "workers": 2}, side: {**params[side], **overrides},
            "debian_sources": {**params["debian_sources"], "build_root": str(root)}}


def through_ladder(params: dict, store: Store, side: str, rungs: list[Toolchain], files_column: str,
                   samples: dict[str, str], build_flags: Sequence[str] = ()) -> tuple[dict, dict]:
    """``samples`` (name: text), each with ``build_flags`` from its build, through ``side``'s compile ladder twice, as
    its compile stage runs them: (rows added, rows dropped), by name. Each row is dropped once, the fallback ran
    actions the store lacked, and the second run takes every action from the store and gives the same rows."""
    from test_settle import StandIn

    from cass.compiling.compile import RETRIED, compiled_chunk
    from cass.engine.settle import settle_ladder
    from cass.engine.stage_work import LocalWork
    from cass.pipeline.manifests import StageOutput

    rows = pl.DataFrame([{"sample_id": name, "origin": "t", "path": name, "domain": "t",
                          files_column: [{"path": name, "digest": store.put(text.encode())}], "include_dirs": ["."],
                          "unresolved_includes": [], "build_flags": list(build_flags)}
                         for name, text in samples.items()])

    def compiled() -> tuple[dict, StageOutput]:
        out = StageOutput(f"compile_{side}", rows_in=rows.height)
        added = settle_ladder(StandIn(f"compile_{side}", params, store, LocalWork(1)), out, rows, rungs,
                              RETRIED[side], 300, compiled_chunk, side, params[side], params["scope"],
                              files_column).added
        return {row["sample_id"]: row for row in added}, out

    added, out = compiled()
    drops = {d["sample_id"]: d for d in out.dropped}
    assert len(out.dropped) == len(drops)
    fallback = out.run["actions_by_vendor"][rungs[-1].vendor]
    assert fallback["misses"] > 0 and fallback["hits"] == 0
    again, warm = compiled()
    assert again == added and warm.dropped == out.dropped
    assert warm.run["actions"]["misses"] == 0 and warm.run["actions"]["hits"] == out.run["actions"]["misses"]
    return added, drops


def fake_root(path: Path, packages: dict[str, list[str]], headers: list[str], source: dict[str, str] | None = None,
              links: dict[str, str] | None = None) -> Path:
    """A folder shaped as a Debian root for the AMD fallback (no tool runs in it): dpkg's status (each package
    installed, built from ``source``'s package where given, with a version, else from itself, written without a
    Source field; a multi-line description; one more package removed) and file lists (``<name>:amd64.list``) of
    ``packages`` (name: the ``/usr/include`` paths it installed), empty ``headers`` under ``usr/include``, and
    ``links`` (path in the root: target)."""
    source = source or {}
    status = "".join(f"Package: {name}\nStatus: install ok installed\n"
                     + (f"Source: {source[name]} (1.0-1)\n" if name in source else "")
                     + "Description: a package\n a second line: of text\n\n" for name in packages)
    status += "Package: nvidia-cuda-dev-old\nStatus: deinstall ok config-files\nSource: nvidia-cuda-toolkit\n\n"
    lists = {f"var/lib/dpkg/info/{name}:amd64.list": "".join(f"{p}\n" for p in paths)
             for name, paths in packages.items()}
    root = write(path, {"var/lib/dpkg/status": status, **lists, **{f"usr/include/{h}": "\n" for h in headers}})
    for link, target in (links or {}).items():
        (root / link).parent.mkdir(parents=True, exist_ok=True)
        (root / link).symlink_to(target)
    return root


def test_the_amd_fallback_mounts_no_cuda_header_and_its_keys_follow_the_build_root(tmp_path, toolchains):
    """The fallback mounts every entry of the build root's ``/usr/include`` but those of the packages built from the
    CUDA toolkit's Debian sources, each link followed inside the root (through two links; one leading nowhere there
    is left out, whatever this machine has at that path); its hipcc fingerprint follows the root's packages and the
    entries it mounts, not where the root lies. The plain AMD toolchain mounts nothing."""
    from toolchains.amd_build_root import AmdBuildRootToolchain
    from toolchains.build_root_headers import MOUNT, header_mounts
    from toolchains.launchers import ChrootLauncher

    cuda = {"nvidia-cuda-dev": ["/usr/include/cuda_runtime.h", "/usr/include/crt/host_defines.h"],
            "libcupti-dev": ["/usr/include/cupti.h"]}   # built from the toolkit's source too: also CUDA's
    toolkit = {name: "nvidia-cuda-toolkit" for name in cuda}
    root = fake_root(tmp_path / "root", {"libdmlc-dev": ["/usr/include/dmlc/base.h"], **cuda},
                     ["dmlc/base.h", "cuda_runtime.h", "crt/host_defines.h", "cupti.h", "glog.h",
                      "../lib/petscdir/include/petsc.h"], toolkit,
                     {"usr/include/petsc": "/etc/alternatives/petscinclude",   # absolute, then absolute again
                      "etc/alternatives/petscinclude": "/usr/lib/petscdir/include",
                      "usr/include/profile.h": "glog.h", "usr/include/gone.h": "/usr/include/nowhere.h",
                      "usr/include/hosts": "/etc/hosts"})   # this machine has one; the root does not
    assert header_mounts(root) == {f"{MOUNT}/usr/include/{name}": root / path for name, path in (
        ("dmlc", "usr/include/dmlc"), ("glog.h", "usr/include/glog.h"), ("petsc", "usr/lib/petscdir/include"),
        ("profile.h", "usr/include/glog.h"))}

    amd_root = toolchains["amd"].launcher.root
    assert ChrootLauncher(amd_root).path_view() == ""

    def fingerprint(folder: str, packages: dict, headers: list[str]) -> str:
        return AmdBuildRootToolchain(amd_root, fake_root(tmp_path / folder, packages, headers)).fingerprint("hipcc")

    dmlc = {"libdmlc-dev": ["/usr/include/dmlc/base.h"]}
    first = fingerprint("a", dmlc, ["dmlc/base.h"])
    assert fingerprint("b", dmlc, ["dmlc/base.h"]) == first   # the same root elsewhere
    assert fingerprint("c", {**dmlc, "libglog-dev": []}, ["dmlc/base.h"]) != first   # another package installed
    assert fingerprint("d", dmlc, ["dmlc/base.h", "glog.h"]) != first   # another entry mounted


AMD_LADDER_SAMPLES = {
    "plain.cu": KERNEL,
    # libblas-dev's own header, in the build root only; the system's headers stay the AMD root's (a newer glibc)
    "netlib.cu": "#include <cblas-netlib.h>\n#include <features.h>\n"
                 "static_assert(__GLIBC_MINOR__ > 36, \"bookworm's glibc\");\n" + KERNEL,
    "alternative.cu": "#include <cblas.h>\n" + KERNEL,   # libblas-dev's, through Debian's alternatives: not seen
    "typo.cu": KERNEL.replace(";", "", 1),
    "nosuch.cu": "#include <cass_no_such_library.h>\n" + KERNEL,   # a library neither has
}


@pytest.mark.slow
def test_a_header_the_amd_root_lacks_is_taken_from_the_build_root_after_its_own(blas_root, store, toolchains):
    """With ``amd.build_root_headers``, a HIP file hipcc fails for a missing header is compiled again in the AMD root
    with the build root's headers searched last: a build dependency's header (libblas-dev's) is found there and the
    row names the fallback; a file the AMD root compiles stays on it; a header reached through an alternatives link,
    or that no root has, fails on both and keeps the first reason with the second added; a syntax error is not tried
    again. nvcc's language switches a build passes stay off both rungs (clang refuses them). A copy of the fallback
    sent to a worker plans and keys as it does. Run again, every action comes from the store."""
    from cass.compiling.compile import fallbacks

    root, _ = blas_root
    params = ladder_params(root, "amd", build_root_headers=True)
    [fallback] = fallbacks(params, toolchains["amd"])
    amd = toolchains["amd"]
    assert (fallback.vendor, fallback.side) == ("amd-build-root", "amd")
    assert fallback.fingerprint("hipcc") != amd.fingerprint("hipcc")
    sent = pickle.loads(pickle.dumps(fallback))   # what a stage worker plans with
    assert sent.fingerprint("hipcc") == fallback.fingerprint("hipcc")
    assert sent.targets("k.cu", ["gfx1100"], params["amd"]["flags"]) == \
        fallback.targets("k.cu", ["gfx1100"], params["amd"]["flags"])
    added, drops = through_ladder(params, store, "amd", [amd, fallback], "hip_files", AMD_LADDER_SAMPLES,
                                  ["--expt-extended-lambda"])
    assert {name: row["amd_toolchain"] for name, row in added.items()} == {
        "plain.cu": "amd", "netlib.cu": "amd-build-root"}
    [device] = added["netlib.cu"]["amd_device_asm"]
    assert device["arch"] == "gfx1100" and ".amdhsa_kernel" in store.get_text(device["digest"])
    assert {name: d["reason"] for name, d in drops.items()} == {
        "alternative.cu": "compile_failed:missing_header", "typo.cu": "compile_failed:syntax",
        "nosuch.cu": "compile_failed:missing_header"}
    for name in ("alternative.cu", "nosuch.cu"):
        assert "| amd-build-root: compile_failed:missing_header: " in drops[name]["detail"]
    assert "amd-build-root" not in drops["typo.cu"]["detail"]


HIP_KERNEL = "#include <hip/hip_runtime.h>\n" + KERNEL
HIP_NVIDIA_SAMPLES = {   # the name, the toolchain that compiled its AMD side, its HIP text
    "netlib.cu": ("amd-build-root", "#include <cblas-netlib.h>\n" + HIP_KERNEL),   # libblas-dev's, the build root's
    "netlib_alone.cu": ("amd", "#include <cblas-netlib.h>\n" + HIP_KERNEL),   # the same, its AMD side without them
    "alternative.cu": ("amd-build-root", "#include <cblas.h>\n" + HIP_KERNEL),   # through Debian's alternatives
    "plain.cu": ("amd-build-root", HIP_KERNEL),
}


@pytest.mark.slow
def test_a_pair_built_for_amd_with_the_build_roots_headers_is_checked_with_them_on_hip_nvidia(blas_root, store,
                                                                                                tmp_path):
    """With ``amd.build_root_headers``, the pair stage's check on HIP's NVIDIA platform gives a pair whose AMD side
    compiled with the build root's headers those headers too, searched last: a build dependency's header is found
    there; the same file whose AMD side compiled without them is checked without them and misses it; a header reached
    through an alternatives link is not found. Run again, every check comes from the store. Without the setting, or
    with no row that took the headers, every pair is checked on the platform alone, and no build root is needed. The
    check's toolchain passes the root's folders as ``-idirafter`` to nvcc's host compiler, plans and keys the same in a
    worker's copy, and keys on the build root's packages, not where it lies."""
    from test_settle import StandIn

    from cass.engine.stage_work import LocalWork
    from cass.execution.programs import hip_nvidia_checks
    from cass.pipeline.manifests import StageOutput
    from toolchains import load_toolchains
    from toolchains.hip_nvidia import HipNvidiaBuildRootToolchain

    root, _ = blas_root
    for own in ("/usr/include/cblas-netlib.h", "/etc/alternatives/cblas.h-x86_64-linux-gnu"):   # the platform sees
        assert not Path(own).exists(), f"this machine has {own} (a BLAS -dev package): the test shows nothing"
    params = ladder_params(root, "amd", build_root_headers=True)
    samples = pl.DataFrame([{"sample_id": name, "hip_files": [{"path": name, "digest": store.put_text(text)}],
                             "include_dirs": ["."], "build_flags": [], "nvidia_toolchain": "nvidia",
                             "amd_toolchain": amd} for name, (amd, text) in HIP_NVIDIA_SAMPLES.items()])

    def check(params: dict, rows: pl.DataFrame = samples) -> tuple[dict, dict]:
        out = StageOutput("pair", rows_in=rows.height)
        return hip_nvidia_checks(StandIn("pair", params, store, LocalWork(1)), out, rows), out.run

    verdicts, run = check(params)
    actions = run["actions_by_vendor"]
    assert {name: category for name, (category, _) in verdicts.items()} == {
        "netlib.cu": "ok", "plain.cu": "ok", "netlib_alone.cu": "missing_header", "alternative.cu": "missing_header"}
    assert "cblas-netlib.h" in verdicts["netlib_alone.cu"][1] and "cblas.h" in verdicts["alternative.cu"][1]
    assert actions["hip-nvidia-build-root"]["misses"] == 3 and actions["hip-nvidia"]["misses"] == 1
    again, warm = check(params)
    assert again == verdicts and warm["actions"]["misses"] == 0
    off = {**params, "amd": {**params["amd"], "build_root_headers": False},
           "debian_sources": {**params["debian_sources"], "build_root": str(root / "nowhere")}}
    alone, _ = check(off)   # every pair on the platform alone: no build root needed
    assert {name: category for name, (category, _) in alone.items()} == {
        "netlib.cu": "missing_header", "plain.cu": "ok", "netlib_alone.cu": "missing_header",
        "alternative.cu": "missing_header"}
    nowhere = {**params, "debian_sources": off["debian_sources"]}   # the setting on, but no row took the headers
    assert check(nowhere, samples.filter(pl.col("amd_toolchain") == "amd"))[0] == {
        "netlib_alone.cu": verdicts["netlib_alone.cu"]}

    platform = load_toolchains(None, ("hip-nvidia",))["hip-nvidia"]
    with_headers = HipNvidiaBuildRootToolchain.over(platform, root)
    [step] = with_headers.build_check_target("k.cu", ["sm_90"], []).steps
    assert [arg for arg in step.args if "cass-build-root" in arg] == [
        "-Xcompiler=-idirafter,/tmp/cass-build-root/usr/include",
        "-Xcompiler=-idirafter,/tmp/cass-build-root/usr/include/x86_64-linux-gnu"]
    sent = pickle.loads(pickle.dumps(with_headers))   # what a stage worker plans with
    assert sent.fingerprint("nvcc") == with_headers.fingerprint("nvcc")
    assert sent.build_check_target("k.cu", ["sm_90"], []).steps == (step,)

    def fingerprint(folder: str, packages: dict, headers: list[str]) -> str:
        return HipNvidiaBuildRootToolchain.over(platform, fake_root(tmp_path / folder, packages, headers)) \
            .fingerprint("nvcc")

    dmlc = {"libdmlc-dev": ["/usr/include/dmlc/base.h"]}
    first = fingerprint("a", dmlc, ["dmlc/base.h"])
    assert first != platform.fingerprint("nvcc") and fingerprint("b", dmlc, ["dmlc/base.h"]) == first
    assert fingerprint("c", {**dmlc, "libglog-dev": []}, ["dmlc/base.h"]) != first   # another package installed
    assert fingerprint("d", dmlc, ["dmlc/base.h", "glog.h"]) != first   # another entry mounted
    with pytest.raises(ValueError, match=r"amd\.build_root_headers is on, but .* is no Debian root"):
        HipNvidiaBuildRootToolchain.over(platform, tmp_path)


TEXTURE_KERNEL = ("texture<float, 1, cudaReadModeElementType> tex;\n"
                  "__global__ void fetch(float *out) { out[threadIdx.x] = 2.0f * tex1Dfetch(tex, threadIdx.x); }\n")
"""A texture reference: CUDA 12 removed them, so nvcc 13.5 rejects the file and CUDA 11.8 compiles it."""
TEXTURE_PROGRAM = TEXTURE_KERNEL + (
    "#include <cstdio>\n"
    "int main() {\n"
    "  float h[4] = {1, 2, 3, 4}, *d, *o;\n"
    "  cudaMalloc(&d, sizeof h); cudaMalloc(&o, sizeof h);\n"
    "  cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);\n"
    "  cudaBindTexture(0, tex, d, sizeof h);\n"
    "  fetch<<<1, 4>>>(o);\n"
    "  cudaMemcpy(h, o, sizeof h, cudaMemcpyDeviceToHost);\n"
    "  printf(\"%g %g %g %g\\n\", h[0], h[1], h[2], h[3]);\n"
    "}\n")
"""A program around :data:`TEXTURE_KERNEL` that prints what the texture fetched, doubled."""
LADDER_SAMPLES = {
    "modern.cu": KERNEL,
    "texture.cu": TEXTURE_KERNEL,
    "blas.cu": "#include <cblas.h>\n" + KERNEL,   # libblas-dev: in the build root, not on this machine
    "typo.cu": KERNEL.replace(";", "", 1),
    "nosuch.cu": "#include <cass_no_such_library.h>\n" + KERNEL,   # a library neither has
    "mpi.cu": "#include <mpi.h>\n" + KERNEL,
}


@pytest.mark.slow
def test_the_debian_suites_cuda_compiles_what_nvcc_13_fails_and_nothing_else(blas_root, store, toolchains):
    """Last in this file: it installs bookworm's CUDA 11.8 into the module's build root (stage fetch_debian's step).
    Then the AMD fallback still does not see CUDA's headers there.
    A file nvcc 13.5 compiles keeps its row from 13.5; a texture reference and a file including a header only the
    build root has are compiled by Debian's CUDA in the root (the row says so, its SASS is cuobjdump's, its host
    assembly without the device image); a file both fail keeps 13.5's reason (a syntax error; a library header:
    ``out_of_scope:library`` on 13.5, ``missing_header`` on Debian's), with Debian's added, and is dropped once; a
    file out of scope for its API is not tried again. Run again, every action comes from the store."""
    from cass.compiling.compile import fallbacks
    from cass.stages.fetch_debian import install_debian_cuda
    from toolchains import debian_cuda

    root, _ = blas_root
    install_debian_cuda({"build_root": str(root), "suite": "bookworm", "archive": "http://deb.debian.org/debian"})
    assert not debian_cuda.install(root, 60)   # installed once
    params = ladder_params(root, "nvidia", archs=["sm_89"], debian_cuda=True)
    [fallback] = fallbacks(params, toolchains["nvidia"])
    assert "release 11.8" in fallback.version("nvcc") and fallbacks(params, toolchains["amd"]) == []
    added, drops = through_ladder(params, store, "nvidia", [toolchains["nvidia"], fallback], "files", LADDER_SAMPLES)
    assert {name: row["nvidia_toolchain"] for name, row in added.items()} == {
        "modern.cu": "nvidia", "texture.cu": "nvidia-debian", "blas.cu": "nvidia-debian"}
    [device] = added["texture.cu"]["nvidia_device_asm"]
    sass = store.get_text(device["digest"])
    assert device["arch"] == "sm_89" and "Function : _Z5fetchPf" in sass and "TLD" in sass   # the texture fetch
    assert ".nv_fatbin" not in store.get_text(added["texture.cu"]["nvidia_host_asm"])
    assert {name: d["reason"] for name, d in drops.items()} == {
        "typo.cu": "compile_failed:syntax", "nosuch.cu": "out_of_scope:library", "mpi.cu": "out_of_scope:mpi"}
    assert "| nvidia-debian: compile_failed:syntax: " in drops["typo.cu"]["detail"]
    assert "| nvidia-debian: compile_failed:missing_header: " in drops["nosuch.cu"]["detail"]
    assert "nvidia-debian" not in drops["mpi.cu"]["detail"]

    # with the toolkit in the root, HIP code still never builds against CUDA's headers there (libcu++'s here)
    amd_params = ladder_params(root, "amd", build_root_headers=True)
    [amd_fallback] = fallbacks(amd_params, toolchains["amd"])
    libcudacxx = {"libcudacxx.cu": "#include <cblas-netlib.h>\n#include <cuda/std/cstdint>\n" + KERNEL}
    added, drops = through_ladder(amd_params, store, "amd", [toolchains["amd"], amd_fallback], "hip_files", libcudacxx)
    [(reason, detail)] = [(d["reason"], d["detail"]) for d in drops.values()]
    assert added == {} and reason == "compile_failed:missing_header"   # cblas-netlib.h, on the first rung
    assert "| amd-build-root: compile_failed:" in detail and "'cuda/std/cstdint' file not found" in detail


HIP_TEXTURE = "#include <hip/hip_runtime.h>\n" + TEXTURE_KERNEL.replace("cudaReadMode", "hipReadMode")
DEBIAN_CUDA_PAIRS = {   # the name, the toolchains that compiled its CUDA and its AMD side, its HIP text
    "texture.cu": ("nvidia-debian", "amd", HIP_TEXTURE),   # a texture reference: CUDA 11.8 has them, 12 does not
    "texture_13.cu": ("nvidia", "amd", HIP_TEXTURE),   # the same, its CUDA side compiled by nvcc 13.5
    "netlib.cu": ("nvidia-debian", "amd-build-root", "#include <cblas-netlib.h>\n" + HIP_KERNEL),   # the root's
    "netlib_13.cu": ("nvidia", "amd-build-root", "#include <cblas-netlib.h>\n" + HIP_KERNEL),
    "undeclared.cu": ("nvidia-debian", "amd", HIP_KERNEL.replace("2.0f", "hipNoSuchScale(2.0f)", 1)),
}


@pytest.mark.slow
def test_a_pair_whose_cuda_side_only_debians_cuda_compiled_is_checked_on_it_through_hip_nvidia(blas_root, store,
                                                                                                 tmp_path):
    """With ``nvidia.debian_cuda``, the pair stage's check on HIP's NVIDIA platform builds a pair whose CUDA side only
    the Debian suite's CUDA compiled with that CUDA, in the build root, with HIP's NVIDIA headers mounted there: a
    texture reference builds (CUDA 12's headers have none: the same file whose CUDA side nvcc 13.5 compiled fails on
    the platform), the root's own headers are found (this rule before the build root's headers' rule), and a wrong
    translation still fails. Run again, every check comes from the store; without the setting, no pair is checked on
    Debian's CUDA (the platform, or the build root's headers where the AMD side took them, check them). The toolchain
    keys on the root's packages and HIP's headers' bytes, not their path, the same in a worker's copy; the execute
    stage's builds of such a pair give two statically linked executables."""
    from test_settle import StandIn

    from cass.engine.stage_work import LocalWork
    from cass.execution.programs import hip_nvidia_checks
    from cass.pipeline.manifests import StageOutput
    from cass.stages.fetch_debian import install_debian_cuda
    from toolchains import load_toolchains
    from toolchains.debian_cuda import DebianCudaToolchain
    from toolchains.hip_nvidia import HipNvidiaDebianCudaToolchain

    root, _ = blas_root
    install_debian_cuda({"build_root": str(root), "suite": "bookworm", "archive": "http://deb.debian.org/debian"})
    params = ladder_params(root, "nvidia", debian_cuda=True)
    params["amd"] = {**params["amd"], "build_root_headers": True}
    samples = pl.DataFrame([{"sample_id": name, "hip_files": [{"path": name, "digest": store.put_text(text)}],
                             "include_dirs": ["."], "build_flags": [], "nvidia_toolchain": nvidia,
                             "amd_toolchain": amd} for name, (nvidia, amd, text) in DEBIAN_CUDA_PAIRS.items()])

    def check(params: dict) -> tuple[dict, dict]:
        out = StageOutput("pair", rows_in=samples.height)
        verdicts, run = hip_nvidia_checks(StandIn("pair", params, store, LocalWork(1)), out, samples), out.run
        return {name: category for name, (category, _) in verdicts.items()}, {**verdicts, "run": run}

    verdicts, found = check(params)
    assert verdicts == {"texture.cu": "ok", "netlib.cu": "ok", "netlib_13.cu": "ok",
                        "texture_13.cu": verdicts["texture_13.cu"], "undeclared.cu": "undeclared"}
    assert verdicts["texture_13.cu"] != "ok" and "texture" in found["texture_13.cu"][1]
    assert "hipNoSuchScale" in found["undeclared.cu"][1]
    by_vendor = found["run"]["actions_by_vendor"]
    assert by_vendor["hip-nvidia-debian"]["misses"] == 3 and by_vendor["hip-nvidia"]["misses"] == 1
    assert by_vendor["hip-nvidia-build-root"]["misses"] == 1   # netlib_13.cu: the headers' rule
    again, warm = check(params)
    assert again == verdicts and warm["run"]["actions"]["misses"] == 0
    off = {**params, "nvidia": {**params["nvidia"], "debian_cuda": False}}
    alone, off_found = check(off)   # Debian's CUDA not asked for: the platform (and the headers' rule) check them
    assert "hip-nvidia-debian" not in off_found["run"]["actions_by_vendor"]
    assert alone["texture.cu"] == alone["texture_13.cu"] == verdicts["texture_13.cu"]
    assert alone["netlib.cu"] == "ok" and alone["undeclared.cu"] == "undeclared"

    platform = load_toolchains(None, ("hip-nvidia",))["hip-nvidia"]
    on_debian = HipNvidiaDebianCudaToolchain.over(platform, root)
    assert "release 11.8" in on_debian.version("nvcc")
    [step] = on_debian.build_check_target("k.cu", ["sm_90"], []).steps
    assert {"-D__HIP_PLATFORM_NVIDIA__", "-I/tmp/cass-hip-include"} <= set(step.args)
    sent = pickle.loads(pickle.dumps(on_debian))   # what a stage worker plans with
    assert sent.fingerprint("nvcc") == on_debian.fingerprint("nvcc")
    assert sent.build_check_target("k.cu", ["sm_90"], []).steps == (step,)
    assert on_debian.fingerprint("nvcc") not in (DebianCudaToolchain(root).fingerprint("nvcc"),
                                                 platform.fingerprint("nvcc"))
    copies = [tmp_path / name / "hip" for name in ("a", "b", "c")]   # HIP's headers alone, at three paths
    for copy in copies:
        shutil.copytree(platform.hip_headers, copy)
    (copies[2] / "hip_version.h").write_text((copies[2] / "hip_version.h").read_text() + "// changed\n")
    a, b, c = (HipNvidiaDebianCudaToolchain(root, copy).fingerprint("nvcc") for copy in copies)
    assert a == b != c   # the key follows the headers' bytes, not where they lie
    with pytest.raises(ValueError, match=r"nvidia\.debian_cuda is on, but .* is no Debian root"):
        HipNvidiaDebianCudaToolchain.over(platform, root / "nowhere")

    # the execute stage builds such a pair's two programs the same way: both on Debian's CUDA, the runtime static
    from cass.engine.placement import Placement
    from cass.execution.programs import build_programs, routed_toolchains

    texts = {"cuda": TEXTURE_PROGRAM, "hip": "#include <hip/hip_runtime.h>\n" + TEXTURE_PROGRAM.replace("cuda", "hip")}
    digests = {side: [{"path": "prog.cu", "digest": store.put_text(text)}] for side, text in texts.items()}
    programs = [{"sample_id": nvidia, "origin": "t", "path": "prog.cu", "files": digests["cuda"], "unit_files": [],
                 "units": None, "hip_files": digests["hip"], "include_dirs": ["."], "build_flags": [],
                 "nvidia_toolchain": nvidia, "amd_toolchain": "amd"} for nvidia in ("nvidia-debian", "nvidia")]
    placement = Placement.of(params)
    routed = routed_toolchains(params, placement, programs)
    assert sorted(routed) == ["hip-nvidia-debian", "nvidia-debian"]
    builds, _ = build_programs(store, params["execute"], programs, placement, None, routed)
    for side in ("cuda", "hip"):
        binary = store.get(builds["nvidia-debian", side].binary)
        assert binary.startswith(b"\x7fELF") and b"libcudart.so" not in binary, side
        assert builds["nvidia", side].binary is None and "texture" in builds["nvidia", side].detail, side


def test_a_pair_takes_the_first_route_its_row_and_the_settings_allow(tmp_path):
    """The toolchain that builds a pair's side: both sides on Debian's CUDA where only it compiled the CUDA side (also
    where the AMD side took the build root's headers), the HIP side with the build root's headers where only the AMD
    side took them, and each side's own where no route's toolchain was made (its setting off). A route's toolchains are
    made only where a row takes it and its setting is on; a setting on over pairs without its column is an error."""
    from types import SimpleNamespace

    from cass.engine.placement import Placement
    from cass.execution.programs import ProgramSource, build_program_targets, builder_of, routed_toolchains

    own = {side: SimpleNamespace(vendor=vendor) for side, vendor in (("cuda", "nvidia"), ("hip", "hip-nvidia"))}
    made = {v: SimpleNamespace(vendor=v) for v in ("nvidia-debian", "hip-nvidia-debian", "hip-nvidia-build-root")}
    both_on, debian_off = made, {"hip-nvidia-build-root": made["hip-nvidia-build-root"]}

    def built(nvidia: str, amd: str, routed: dict) -> tuple[str, str]:
        row = {"nvidia_toolchain": nvidia, "amd_toolchain": amd}
        return tuple(builder_of(row, side, own[side], routed).vendor for side in ("cuda", "hip"))

    assert built("nvidia-debian", "amd", both_on) == ("nvidia-debian", "hip-nvidia-debian")
    assert built("nvidia-debian", "amd-build-root", both_on) == ("nvidia-debian", "hip-nvidia-debian")
    assert built("nvidia", "amd-build-root", both_on) == ("nvidia", "hip-nvidia-build-root")
    assert built("nvidia-debian", "amd-build-root", debian_off) == ("nvidia", "hip-nvidia-build-root")
    assert built("nvidia-debian", "amd", debian_off) == built("nvidia", "amd", both_on) == ("nvidia", "hip-nvidia")
    assert built("nvidia-debian", "amd-build-root", {}) == ("nvidia", "hip-nvidia")
    assert builder_of({}, "hip", own["hip"], both_on) is own["hip"]   # no column: no route

    params = ladder_params(Path("/nonexistent-build-root"), "nvidia", debian_cuda=True)
    placement = Placement.local(1)
    plain = [{"nvidia_toolchain": "nvidia", "amd_toolchain": "amd"}]
    assert routed_toolchains(params, placement, plain) == {} and routed_toolchains(params, placement, []) == {}
    off = {**params, "nvidia": {**params["nvidia"], "debian_cuda": False}}
    assert routed_toolchains(off, placement, [{"nvidia_toolchain": "nvidia-debian", "amd_toolchain": "amd"}]) == {}
    with pytest.raises(ValueError, match=r"nvidia\.debian_cuda is on, but the pairs have no nvidia_toolchain"):
        routed_toolchains(params, placement, [{"amd_toolchain": "amd"}])
    with pytest.raises(ValueError, match=r"nvidia\.debian_cuda is on, but /nonexistent-build-root is no Debian root"):
        routed_toolchains(params, placement, [{"nvidia_toolchain": "nvidia-debian", "amd_toolchain": "amd"}])
    hip_only = {"hip-nvidia-debian": made["hip-nvidia-debian"]}   # made for the HIP side alone (the check's)
    with pytest.raises(ValueError, match=r"its cuda side is built by nvidia-debian, which was not made"):
        builder_of({"nvidia_toolchain": "nvidia-debian"}, "cuda", own["cuda"], hip_only)
    with pytest.raises(ValueError, match=r"programs name toolchains \['nowhere'\] to build them, which were not made"):
        build_program_targets(Store(tmp_path), params["execute"],
                              {0: ProgramSource("hip", ["k.cu"], ["."], {}, (), "nowhere")}, placement)


def test_only_cuda_files_failing_to_compile_or_missing_a_library_header_go_to_the_next_toolchain():
    """NVIDIA's ladder tries again what fails to compile; AMD's only what misses a header."""
    from cass.compiling.compile import RETRIED, retried_on_nvidia

    on_nvidia = retried_on_nvidia
    assert on_nvidia({"path": "k.cu"}, "compile_failed:syntax") and on_nvidia({"path": "k.cu"}, "out_of_scope:library")
    assert not on_nvidia({"path": "k.cl"}, "compile_failed:syntax")   # OpenCL C: the fallbacks compile CUDA only
    assert not on_nvidia({"path": "k.cu"}, "out_of_scope:mpi") and not on_nvidia({"path": "k.cu"}, "timeout")
    assert RETRIED["nvidia"] is retried_on_nvidia
    on_amd = RETRIED["amd"]
    assert on_amd({"path": "k.cu"}, "compile_failed:missing_header")
    assert not on_amd({"path": "k.cu"}, "compile_failed:syntax") and not on_amd({"path": "k.cu"}, "timeout")
    assert not on_amd({"path": "k.cl"}, "compile_failed:missing_header")
