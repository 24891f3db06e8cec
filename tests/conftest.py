"""Shared fixtures: the real toolchains (a missing one fails the test with how to install it)."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

# first: the environment every later import and test copies (harness.session_env)
from harness import session_env
from harness.gpu_route import GpuRoute
from harness.project import REPO, SHARED_BUILD, copy_bundled_build, run_in

from cass.pipeline.context import load_params
from store import Store
from toolchains import Toolchain, ToolchainMissingError, load_toolchains
from toolchains.sandbox import detect

pytest_plugins = ["harness.cpu_times"]   # pytest --cpu-times FILE


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Group the tests for pytest-xdist's ``--dist loadgroup`` (scripts/test.sh): a worker takes whole groups, one per
    test file (its module fixtures, several of them pipeline builds, are made once), but one for every test using the
    session's `project` build, by argument or in a file marked :data:`harness.project.SHARED_BUILD` (it is built
    once; they run in file order). A file defining a `project` fixture of its own keeps its tests."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            shares_build = "project" in item.fixturenames and not hasattr(item.module, "project")
            item.add_marker(SHARED_BUILD if shares_build else pytest.mark.xdist_group(item.path.name))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the session's machine cache (some 120 MB) where this process made it (a worker's is the controller's)."""
    if session_env.CACHE:
        shutil.rmtree(session_env.CACHE, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Refuse ``--dist loadgroup`` under a pytest whose test ids pytest-xdist 3.8 cannot rewrite (9 and later): it would
    send each test alone, and the shared builds would be made again on every worker."""
    if config.getoption("dist", "no") == "loadgroup" and int(pytest.__version__.split(".")[0]) >= 9:
        raise pytest.UsageError(f"pytest {pytest.__version__}: pytest-xdist's --dist loadgroup would ignore the "
                                "test files' groups; install the test extras' pytest (pip install -e '.[test]')")


@pytest.fixture(scope="session")
def toolchains() -> dict[str, Toolchain]:
    tcs = load_toolchains(load_params(REPO / "params.yaml")["amd"]["toolchain"])
    for tc in tcs.values():
        for tool in tc.tools():
            try:
                tc.require(tool)
            except ToolchainMissingError as exc:
                pytest.fail(str(exc), pytrace=False)
    return tcs


@pytest.fixture(scope="session")
def bubblewrap() -> None:
    """The sandbox in its full mode; without it a sandbox test fails (never skips) with how to get it."""
    if detect().mode != "bwrap":
        pytest.fail("bubblewrap is missing or cannot create namespaces here: `bash scripts/setup.sh` installs "
                    "Debian's bubblewrap; `cass toolchains` prints the sandbox mode", pytrace=False)


@pytest.fixture
def listener():
    """A TCP socket listening on 127.0.0.1 (``.getsockname()[1]`` is its port) that programs must not reach:
    ``accept`` raises TimeoutError when nothing connected."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.5)
        yield server


@pytest.fixture(scope="session")
def gpu() -> GpuRoute:
    """Where the ``gpu`` tests' programs run: this machine's GPU, or a GPU host through batches
    (``CASS_GPU_TESTS``: :mod:`harness.gpu_route`)."""
    return GpuRoute.from_environment()


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")


@pytest.fixture(scope="session")
def project(tmp_path_factory, toolchains) -> Path:
    """The bundled corpus built locally with `dvc repro` in a copy of the pipeline (shared by the
    pipeline tests, which change it, and the analysis and cluster tests, which only read it and run
    first); with pytest-xdist, the tests using it run on one worker (:func:`pytest_collection_modifyitems`)."""
    root = copy_bundled_build(tmp_path_factory.mktemp("build") / "project")
    try:
        run_in(["dvc", "repro"], root)
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    return root
