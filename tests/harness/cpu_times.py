"""``pytest --cpu-times FILE``: each test phase's wall time and CPU time (the test process's own and its reaped
children's: compilers, `dvc`, stage processes) appended to FILE as JSON lines, one per phase, by every pytest-xdist
worker. `python bench/test_cpu.py FILE` sums them by test file and lists the costliest phases."""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

OPTION = "--cpu-times"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, metavar="FILE", help="append each test phase's wall and CPU seconds (its own and its "
                     "reaped children's) to FILE as JSON lines (tests/harness/cpu_times.py; bench/test_cpu.py sums "
                     "them)")


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user and system) of this process, and of its children that have been waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def timed(item: pytest.Item, phase: str) -> Iterator[None]:
    """Around one phase of ``item``: its line in the ``--cpu-times`` file, where the option is given."""
    out = item.config.getoption(OPTION)
    if not out:
        yield
        return
    start, (own, children) = time.monotonic(), cpu_seconds()
    yield
    own_after, children_after = cpu_seconds()
    line = {"test": item.nodeid, "phase": phase, "wall_s": round(time.monotonic() - start, 3),
            "cpu_s": round(own_after - own, 3), "children_cpu_s": round(children_after - children, 3),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    with Path(out).open("a") as f:
        f.write(json.dumps(line) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from timed(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from timed(item, "teardown")
