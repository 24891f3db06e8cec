"""The floors of the code: ``store/``, ``toolchains/`` and ``hosts/`` sit below the library and import nothing from
it, so a GPU host runs ``python -m hosts.gpu run-batch`` with those three folders and blake3 alone (a vendor host
adds Dask and its toolchain); the toolchains know nothing of the hosts that run them."""

from __future__ import annotations

import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest
from harness.project import REPO

PROBE = """import importlib, sys
def outside():
    return {n.split('.')[0] for n, m in list(sys.modules.items())
            if getattr(m, '__file__', None) and not m.__file__.startswith(sys.base_prefix)}
before = outside()
importlib.import_module(sys.argv[1])
print(' '.join(sorted(outside() - before)))
"""


@pytest.mark.parametrize(("module", "allowed"), [
    ("store", {"store", "blake3"}),
    ("toolchains", {"toolchains", "store", "blake3"}),
    ("hosts.gpu", {"hosts", "toolchains", "store", "blake3"}),
])
def test_the_lower_floors_import_nothing_from_the_library(module, allowed):
    loaded = subprocess.run([sys.executable, "-c", PROBE, module], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    assert set(loaded) <= allowed, f"{module} loads {sorted(set(loaded) - allowed)}"
    assert module.split(".")[0] in loaded


FLOORS = {"store": {"store"}, "toolchains": {"toolchains", "store"}, "hosts": {"hosts", "toolchains", "store"}}
"""Each floor below the library, and the project packages its files may import (lazy imports included)."""


def imports_above(root: Path, floor: str) -> list[str]:
    """``file: module`` for every import in a file of ``root/floor`` of a project package above that floor."""
    from cass.pipeline.wiring import PROJECT_PACKAGES, imported_names

    return sorted(f"{path.relative_to(root)}: {name}" for path in sorted((root / floor).rglob("*.py"))
                  for name in imported_names(path, floor)
                  if name.split(".")[0] in set(PROJECT_PACKAGES) - FLOORS[floor])


@pytest.mark.parametrize("floor", sorted(FLOORS))
def test_no_file_of_a_floor_imports_a_project_package_above_it(floor):
    assert not (above := imports_above(REPO, floor)), f"{floor}/ imports from above it: {above}"


def test_a_lazy_import_from_above_is_found_in_a_floor(tmp_path):
    """Inside a function, and beside an import the floor may make (``store``, reported nowhere)."""
    (tmp_path / "toolchains").mkdir()
    (tmp_path / "toolchains" / "tool.py").write_text("import store\n\n\ndef later():\n"
                                                     "    from hosts.gpu import RunHost\n")
    assert imports_above(tmp_path, "toolchains") == ["toolchains/tool.py: hosts.gpu",
                                                     "toolchains/tool.py: hosts.gpu.RunHost"]


def test_a_repair_rule_is_code_of_the_repair_stage_alone():
    """Editing a rule (or the derived name tables) changes the code digest of the repair stage and of the evaluate
    stage (its `pipeline` baseline translates with the rules), so `dvc repro` reruns those and what depends on the
    repair stage's output, nothing that merely shared an import with them."""
    from cass.pipeline.code_digests import stage_listings

    listings = stage_listings(REPO)
    for module in ("cass/translate/repair.py", "cass/translate/names.py"):
        assert [stage for stage, text in listings.items() if module in text] == ["repair", "evaluate"], module


def package_imports(root: Path = REPO / "cass") -> dict[str, dict[str, set[str]]]:
    """For each package of the library (``cass/<package>/``, and ``files`` for the lone module ``cass/files.py``):
    the other library packages it imports, each with the files that import it."""
    from cass.pipeline.wiring import imported_names

    graph: dict[str, dict[str, set[str]]] = {}
    for path in sorted(root.rglob("*.py")):
        inner = path.relative_to(root).with_suffix("").parts
        package = inner[0]
        if len(inner) == 1 and package != "files":
            continue   # cass/cli.py and the package's own __init__: the top, which may import anything
        for name in imported_names(path, ".".join(("cass", *inner[:-1]))):
            target = name.split(".")[1] if name.startswith("cass.") else None
            if target and target != package and ((root / target).is_dir() or (root / f"{target}.py").is_file()):
                graph.setdefault(package, {}).setdefault(target, set()).add(str(path.relative_to(REPO)))
    return graph


def import_cycle(graph: dict[str, dict[str, set[str]]]) -> list[str] | None:
    """A cycle of packages importing each other (the first found, in name order), or None."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt, [*path, nxt])):
                return found
        state[node] = "done"
        return None

    return next((c for node in sorted(graph) if node not in state and (c := visit(node, [node]))), None)


def test_the_librarys_packages_import_each_other_without_a_cycle_and_the_engine_sits_under_the_stages():
    graph = package_imports()
    cycle = import_cycle(graph)
    assert cycle is None, "packages import each other: " + " -> ".join(cycle) + "; through " + "; ".join(
        f"{a}->{b}: {sorted(graph[a][b])}" for a, b in pairwise(cycle))
    assert set(graph["engine"]) <= {"files"}, f"the engine imports {graph['engine']}"
    assert "engine" in graph["pipeline"]   # the stage context runs the engine, not the other way round


def test_a_cycle_between_packages_is_found_with_the_files_that_make_it():
    graph = {"sources": {"models": {"a.py"}}, "models": {"benchmark": {"b.py"}}, "benchmark": {"sources": {"c.py"}},
             "engine": {"files": {"d.py"}}}
    assert import_cycle(graph) == ["benchmark", "sources", "models", "benchmark"]
    del graph["benchmark"]["sources"]
    assert import_cycle(graph) is None
