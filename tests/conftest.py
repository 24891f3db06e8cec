"""Shared fixtures: the real toolchains (a missing one fails the test with how to install it)."""

from __future__ import annotations

import os

import pytest

# The Hub is unreachable here: fail fast instead of retrying (the tokens stage then uses its
# documented offline fallback tokenizer). Set before any test copies the environment.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from store import Store
from toolchains import Toolchain, ToolchainMissingError, load_toolchains


@pytest.fixture(scope="session")
def toolchains() -> dict[str, Toolchain]:
    tcs = load_toolchains()
    for tc in tcs.values():
        for tool in tc.tools():
            try:
                tc.require(tool)
            except ToolchainMissingError as exc:
                pytest.fail(str(exc), pytrace=False)
    return tcs


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path / "store")
