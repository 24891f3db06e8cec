"""dvc.yaml checked against the code: each stage depends on the digest of the code it runs.

DVC reruns a stage when one of its ``deps`` changes. A stage's code is one dep, ``data/code_digests/<stage>``,
written by stage ``code_digests`` (which depends on the project packages) from :func:`code_modules`: the
stage's entry point (``python -m stages.NAME``) and every project module it imports, directly or through
other modules, lazily inside a function too (and, from :func:`cass.pipeline.code_digests.param_lines`, the
values of the parameters it lists under ``meta.params``).
:func:`unwired` lists the stages short of that dep, listing project code beside it (a second, coarser trigger
that also grows the lock) or parameters under DVC's ``params``, and the analysis notebooks the ``analyze`` stage
runs but does not list. Package ``__init__.py`` files holding only a docstring are skipped:
they run no code. Stage entry points must not import each other (:func:`stage_imports`).

``cass wiring`` prints both checks; tests/test_wiring.py runs them on this repository.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

from cass.pipeline.context import PARAMS_FILE

PROJECT_PACKAGES = ("cass", "stages", "store", "toolchains", "hosts")
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


def imported_names(path: Path, package: str = "") -> set[str]:
    """Every module name ``path`` imports, anywhere in the file (``from a import b`` gives ``a`` and ``a.b``,
    since ``b`` may be a module); relative imports are resolved against ``package``, the file's own package
    (``from . import x`` in ``cass/text/filters.py``: ``cass.text`` and ``cass.text.x``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".") if package else []
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base:
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
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
    return modules_by_entry(root, [entry])[entry]


def modules_by_entry(root: Path, entries: list[str]) -> dict[str, list[Path]]:
    """:func:`code_modules` of each of ``entries``, parsing each file once."""
    imports: dict[Path, set[str]] = {}
    runs_code: dict[Path, bool] = {}
    found = {}
    for entry in entries:
        seen: set[Path] = set()
        todo = [entry]
        while todo:
            name = todo.pop()
            parts = name.split(".")
            for depth in range(1, len(parts) + 1):
                path = module_file(root, ".".join(parts[:depth]))
                if path is not None and path not in seen:
                    seen.add(path)
                    if path not in imports:
                        package = ".".join(parts[:depth] if path.name == "__init__.py" else parts[:depth - 1])
                        imports[path], runs_code[path] = imported_names(path, package), _runs_code(path)
                    todo.extend(imports[path])
        found[entry] = sorted(p.relative_to(root) for p in seen if runs_code[p])
    return found


def stage_entries(pipeline: dict) -> dict[str, str]:
    """Stage name -> the entry module its ``cmd`` runs (``stages.NAME``)."""
    entries = {}
    for name, stage in pipeline["stages"].items():
        match = _STAGE_CMD.search(stage["cmd"])
        if not match:
            raise ValueError(f"dvc.yaml stage {name!r}: cmd {stage['cmd']!r} does not run `python -m stages.<name>`")
        entries[name] = match.group(1)
    return entries


CODE_STAGE = "code_digests"
NOTEBOOK_STAGE, NOTEBOOK_DIR = "analyze", "analysis"
"""The stage that runs every ``analysis/*.py`` (not project modules: each must be one of its deps)."""


def code_digest_dep(stage: str) -> str:
    """The dep that carries ``stage``'s code: its file of ``data/code_digests``."""
    return f"data/{CODE_STAGE}/{stage}"


def _is_project_code(dep: str) -> bool:
    return Path(dep).parts[0] in PROJECT_PACKAGES


def unwired(root: Path, pipeline_file: str = "dvc.yaml") -> dict[str, str]:
    """Stage -> what is wrong with how its code reaches DVC (stages wired right are left out)."""
    pipeline = yaml.safe_load((root / pipeline_file).read_text())
    problems = {}
    for name in stage_entries(pipeline):
        deps = [d if isinstance(d, str) else next(iter(d)) for d in pipeline["stages"][name].get("deps", [])]
        if "params" in pipeline["stages"][name]:
            problems[name] = ("lists params under DVC's params, whose values the stage's code digest lacks "
                              "(and dvc.lock would copy): list them under meta.params")
        elif name == CODE_STAGE:
            if lacking := [p for p in (*PROJECT_PACKAGES, str(PARAMS_FILE)) if p not in deps]:
                problems[name] = f"deps lack {', '.join(lacking)}"
        elif code_digest_dep(name) not in deps:
            problems[name] = f"deps lack {code_digest_dep(name)} (the code the stage runs)"
        elif listed := [d for d in deps if _is_project_code(d)]:
            problems[name] = f"deps list project code ({', '.join(listed)}) that {code_digest_dep(name)} covers"
        elif name == NOTEBOOK_STAGE and (lacking := [f"{NOTEBOOK_DIR}/{p.name}" for p in
                                                     sorted((root / NOTEBOOK_DIR).glob("*.py"))
                                                     if f"{NOTEBOOK_DIR}/{p.name}" not in deps]):
            problems[name] = f"deps lack the notebooks and helpers it runs: {', '.join(lacking)}"
    return problems


def stage_imports(root: Path) -> dict[str, list[str]]:
    """Stage -> the other stages its entry point (``stages/<stage>.py``) or its work (``cass/stages/<stage>.py``)
    imports (a stage calls the library, never another stage)."""
    found = {}
    for path in sorted((root / "stages").glob("*.py")):
        if path.name == "__init__.py":
            continue
        own = {f"stages.{path.stem}", f"cass.stages.{path.stem}"}
        work = root / "cass" / "stages" / path.name
        names = imported_names(path, "stages") | (imported_names(work, "cass.stages") if work.is_file() else set())
        others = sorted(n for n in names if n not in own and module_file(root, n) is not None
                        and ((n.count(".") == 1 and n.startswith("stages.")) or
                             (n.count(".") == 2 and n.startswith("cass.stages."))))
        if others:
            found[path.stem] = others
    return found


def report(root: Path) -> list[str]:
    """One line per problem found by :func:`unwired` and :func:`stage_imports` (none: the wiring is right)."""
    lines = [f"dvc.yaml stage {stage}: {problem}" for stage, problem in unwired(root).items()]
    lines += [f"stage {stage} imports {', '.join(others)}: a stage calls the library, never another stage"
              for stage, others in stage_imports(root).items()]
    return lines
