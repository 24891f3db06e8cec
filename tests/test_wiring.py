"""dvc.yaml against the code: deps cover what each stage runs, stages declare the parameters they read."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from harness.project import REPO

from cass.cli import main as cass_main
from cass.pipeline.context import AMBIENT, Stage, UndeclaredParamError, declared_keys, restrict
from cass.pipeline.wiring import PROJECT_PACKAGES, code_modules, stage_imports, uncovered

STAGES = list(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])


def test_every_stage_deps_cover_its_modules_and_no_stage_imports_another(capsys):
    assert uncovered(REPO) == {}
    assert stage_imports(REPO) == {}
    assert cass_main(["wiring", str(REPO)]) == 0
    assert "every stage's deps cover" in capsys.readouterr().out


def test_modules_are_followed_through_lazy_and_transitive_imports():
    modules = {str(p) for p in code_modules(REPO, "stages.tokens")}
    # stages/tokens.py -> cass.training.token_counts -> cass.training.tokenizer (imported inside functions too)
    assert {"stages/tokens.py", "cass/training/token_counts.py", "cass/training/tokenizer.py",
            "cass/pipeline/context.py", "store/cas.py"} <= modules
    assert not any(m.startswith("cass/compiling/") for m in modules)   # tokens runs no tools


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    """The code and dvc.yaml of this repository, in a directory a test may change."""
    for package in PROJECT_PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "dvc.yaml", tmp_path / "dvc.yaml")
    return tmp_path


def test_a_planted_module_outside_the_deps_is_reported(project_copy: Path, capsys):
    # stages depend on whole packages: a module planted in a package filter does not depend on (cass/hub)
    # is reported, one planted in a package it does depend on (cass/text) is covered
    (project_copy / "cass" / "hub" / "planted.py").write_text("LIMIT = 3\n")
    (project_copy / "cass" / "text" / "covered.py").write_text("FLOOR = 1\n")
    filters = project_copy / "cass" / "text" / "filters.py"
    filters.write_text(filters.read_text() + "\n\ndef planted_limit() -> int:\n"
                       "    from cass.hub.planted import LIMIT\n    from cass.text.covered import FLOOR\n"
                       "    return LIMIT + FLOOR\n")
    missing = uncovered(project_copy)
    # filter and synthesize import cass.text.filters; dedup and others do not, so only they are short of a dep
    assert missing == {"filter": ["cass/hub/planted.py"], "synthesize": ["cass/hub/planted.py"]}
    assert cass_main(["wiring", str(project_copy)]) == 1
    assert "dvc.yaml stage filter: deps do not cover cass/hub/planted.py" in capsys.readouterr().out


def test_a_stage_importing_another_stage_is_reported(project_copy: Path, capsys):
    entry = project_copy / "stages" / "instruct.py"
    entry.write_text("from stages.tokens import run as tokens_run  # noqa: F401\n" + entry.read_text())
    assert stage_imports(project_copy) == {"instruct": ["stages.tokens"]}
    assert cass_main(["wiring", str(project_copy)]) == 1
    assert "stages/instruct.py imports stages.tokens" in capsys.readouterr().out


@pytest.mark.parametrize("name", STAGES)
def test_every_declared_parameter_exists_in_params_yaml(name: str):
    params = Stage(name, pipeline=REPO / "dvc.yaml", params_file=REPO / "params.yaml").params
    for key in [*declared_keys(name, REPO / "dvc.yaml"), *AMBIENT]:
        value = params
        for part in key.split("."):
            value = value[part]


def test_a_stage_reading_an_undeclared_parameter_fails_naming_stage_and_key():
    params = Stage("filter", pipeline=REPO / "dvc.yaml", params_file=REPO / "params.yaml").params
    assert params["filter"]["min_lines"] > 0
    with pytest.raises(UndeclaredParamError, match=r"stage 'filter' reads parameter 'dedup'"):
        params["dedup"]
    with pytest.raises(UndeclaredParamError, match=r"'filter\.no_such_key'"):
        params["filter"].get("no_such_key", 3)   # a default in code is no way around params.yaml


def test_restrict_gives_declared_keys_whole_sections_and_ambient_ones():
    values = {"amd": {"archs": ["gfx1100"], "flags": {"host": ["-O2"]}, "toolchain": "sid"},
              "store": {"dir": ".cass/store", "pack_prefix": "p"}}
    view = restrict(values, ["amd.archs", "store"], "compile")
    assert view["amd"]["archs"] == ["gfx1100"]
    assert view["store"]["pack_prefix"] == "p"
    with pytest.raises(UndeclaredParamError, match=r"'amd\.flags'"):
        view["amd"]["flags"]
    assert yaml.safe_load(yaml.safe_dump(view)) == {"amd": {"archs": ["gfx1100"]}, "store": values["store"]}
    with pytest.raises(UndeclaredParamError, match=r"declares parameter 'amd\.missing', which params\.yaml lacks"):
        restrict(values, ["amd.missing"], "compile")
