"""dvc.yaml checked against the code: a stage's code dependencies cover every project module it runs.

DVC reruns a stage when one of its ``deps`` changes, so a module a stage imports (directly or through
other modules, lazily inside a function too) but does not list is an edit that fails to rerun it.
:func:`code_modules` follows a stage's imports from its entry point (``python -m stages.NAME``)
through the project's packages; :func:`uncovered` lists the modules no dep covers (a dep covers a
file equal to it or below it). Package ``__init__.py`` files holding only a docstring are skipped:
they run no code. Stage entry points must not import each other (:func:`stage_imports`).

``cass wiring`` prints both checks; tests/test_wiring.py runs them on this repository.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

PROJECT_PACKAGES = ("cass", "stages", "store", "toolchains")
_STAGE_CMD = re.compile(r"\bpython -m (stages\.\w+)")


def module_file(root: Path, name: str) -> Path | None:
    """The file of project module ``name`` under ``root`` (a module or a package's ``__init__.py``)."""
    if name.split(".")[0] not in PROJECT_PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_names(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports, anywhere in the file (``from a import b`` gives ``a``
    and ``a.b``, since ``b`` may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _runs_code(path: Path) -> bool:
    """False for an ``__init__.py`` that holds nothing but a docstring."""
    if path.name != "__init__.py":
        return True
    body = ast.parse(path.read_text()).body
    return not (len(body) <= 1 and all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body))


def code_modules(root: Path, entry: str) -> list[Path]:
    """The project files module ``entry`` runs: its own, what it imports, transitively, with the packages
    on the way (relative to ``root``, sorted)."""
    seen: set[Path] = set()
    todo = [entry]
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            path = module_file(root, ".".join(parts[:depth]))
            if path is not None and path not in seen:
                seen.add(path)
                todo.extend(imported_names(path))
    return sorted(p.relative_to(root) for p in seen if _runs_code(p))


def stage_entries(pipeline: dict) -> dict[str, str]:
    """Stage name -> the entry module its ``cmd`` runs (``stages.NAME``)."""
    entries = {}
    for name, stage in pipeline["stages"].items():
        match = _STAGE_CMD.search(stage["cmd"])
        if not match:
            raise ValueError(f"dvc.yaml stage {name!r}: cmd {stage['cmd']!r} does not run `python -m stages.<name>`")
        entries[name] = match.group(1)
    return entries


def _covered(path: Path, deps: list[str]) -> bool:
    return any(path == Path(dep) or Path(dep) in path.parents for dep in deps)


def uncovered(root: Path, pipeline_file: str = "dvc.yaml") -> dict[str, list[str]]:
    """Stage -> the project modules it runs that none of its deps covers (stages with none are left out)."""
    pipeline = yaml.safe_load((root / pipeline_file).read_text())
    missing = {}
    for name, entry in stage_entries(pipeline).items():
        deps = [d if isinstance(d, str) else next(iter(d)) for d in pipeline["stages"][name].get("deps", [])]
        if lacking := [str(p) for p in code_modules(root, entry) if not _covered(p, deps)]:
            missing[name] = lacking
    return missing


def stage_imports(root: Path) -> dict[str, list[str]]:
    """Stage entry point -> the other entry points it imports (it should import the library only)."""
    found = {}
    for path in sorted((root / "stages").glob("*.py")):
        if path.name == "__init__.py":
            continue
        others = sorted(n for n in imported_names(path)
                        if n.count(".") == 1 and module_file(root, n) is not None and n.startswith("stages.")
                        and n != f"stages.{path.stem}")
        if others:
            found[path.stem] = others
    return found


def report(root: Path) -> list[str]:
    """One line per problem found by :func:`uncovered` and :func:`stage_imports` (none: the wiring is right)."""
    lines = [f"dvc.yaml stage {stage}: deps do not cover {', '.join(paths)}"
             for stage, paths in uncovered(root).items()]
    lines += [f"stages/{stage}.py imports {', '.join(others)}: a stage calls the library, never another stage"
              for stage, others in stage_imports(root).items()]
    return lines
