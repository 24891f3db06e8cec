"""dvc.yaml against the code: each stage depends on the digest of the code it runs, stages declare the parameters
they read."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO

from cass.cli import main as cass_main
from cass.pipeline.code_digests import stage_listings
from cass.pipeline.context import AMBIENT, Stage, UndeclaredParamError, declared_keys, restrict
from cass.pipeline.wiring import PROJECT_PACKAGES, code_modules, stage_imports, unwired

STAGES = list(yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"])


def test_every_stage_depends_on_its_code_digest_and_no_stage_imports_another(capsys):
    assert unwired(REPO) == {}
    assert stage_imports(REPO) == {}
    assert cass_main(["wiring", str(REPO)]) == 0
    assert "every stage depends on its code's digest" in capsys.readouterr().out


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
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    return tmp_path


def test_an_edit_changes_the_code_digests_of_exactly_the_stages_that_run_it(project_copy: Path):
    before = stage_listings(project_copy)
    assert "code_digests" not in before and len(before) == len(STAGES) - 1
    assert "cass/text/filters.py" in before["filter"] and "cass/text/filters.py" not in before["kernels"]
    # a module planted in cass/hub and imported lazily by the filters: the stages running the filters change
    (project_copy / "cass" / "hub" / "planted.py").write_text("LIMIT = 3\n")
    filters = project_copy / "cass" / "text" / "filters.py"
    filters.write_text(filters.read_text() + "\n\ndef planted_limit() -> int:\n"
                       "    from cass.hub.planted import LIMIT\n    return LIMIT\n")
    after = stage_listings(project_copy)
    changed = {name for name in before if after[name] != before[name]}
    assert changed == {"filter", "synthesize"}   # the two stages that import cass.text.filters
    assert "cass/hub/planted.py" in after["filter"]
    # a data file beside a module (the domain keywords) changes the stages whose modules sit beside it
    keywords = project_copy / "cass" / "sources" / "domain_keywords.yaml"
    keywords.write_text(keywords.read_text() + "\n# an edit\n")
    again = stage_listings(project_copy)
    assert {name for name in after if again[name] != after[name]} == {
        name for name, listing in after.items() if "cass/sources/domain_keywords.yaml" in listing} >= {"ingest"}


def test_a_parameter_change_changes_the_digests_of_exactly_the_stages_that_declare_it(project_copy: Path):
    before = stage_listings(project_copy)
    assert "params.yaml:filter\n" in before["filter"] and "params.yaml:" not in before["kernels"]
    params = project_copy / "params.yaml"
    values = yaml.safe_load(params.read_text())
    values["filter"]["max_lines"] += 1
    values["amd"]["toolchain"] = "elsewhere"   # ambient: it reruns only the stages declaring all of `amd`
    params.write_text(yaml.safe_dump(values))
    after = stage_listings(project_copy)

    def declares(name: str, changed: str) -> bool:
        return any(changed == key or changed.startswith(f"{key}.") for key in declared_keys(
            name, project_copy / "dvc.yaml"))

    assert {name for name in before if after[name] != before[name]} == {
        name for name in before if declares(name, "filter.max_lines") or declares(name, "amd.toolchain")}
    assert {"filter", "hub", "compile_amd"} <= {name for name in before if after[name] != before[name]}
    del values["filter"]["max_bytes"]   # a declared key params.yaml lacks names the stage and the key
    params.write_text(yaml.safe_dump(values))
    with pytest.raises(UndeclaredParamError, match=r"stage 'ingest' declares parameter 'filter\.max_bytes'"):
        stage_listings(project_copy)


def test_parameters_listed_under_dvcs_own_params_are_reported(project_copy: Path):
    pipeline = project_copy / "dvc.yaml"
    values = yaml.safe_load(pipeline.read_text())
    values["stages"]["filter"]["params"] = values["stages"]["filter"].pop("meta")["params"]
    pipeline.write_text(yaml.safe_dump(values, sort_keys=False))
    assert unwired(project_copy) == {"filter": "lists params under DVC's params, whose values the stage's code "
                                               "digest lacks (and dvc.lock would copy): list them under meta.params"}


def test_relative_imports_are_followed_and_stray_files_are_not_code(project_copy: Path):
    before = stage_listings(project_copy)
    (project_copy / "cass" / "text" / "planted_rel.py").write_text("LIMIT = 3\n")
    filters = project_copy / "cass" / "text" / "filters.py"
    filters.write_text(filters.read_text() + "\n\ndef planted_limit() -> int:\n"
                       "    from .planted_rel import LIMIT\n    return LIMIT\n")
    (project_copy / "cass" / "text" / ".filters.py.swp").write_bytes(b"an editor's swap file")
    (project_copy / "cass" / "sources" / "domain_keywords.yaml.orig").write_text("a merge leftover\n")
    after = stage_listings(project_copy)
    assert "cass/text/planted_rel.py" in after["filter"]
    assert {name for name in before if after[name] != before[name]} == {"filter", "synthesize"}
    assert not any(".swp" in listing or ".orig" in listing for listing in after.values())


def test_the_stage_writes_every_listing_keeps_unchanged_ones_and_removes_stale_ones(project_copy: Path, monkeypatch,
                                                                                   capsys):
    from cass.pipeline.code_digests import OUTPUT_DIR
    from cass.pipeline.context import Stage
    from cass.stages.code_digests import run

    monkeypatch.chdir(project_copy)
    stage = Stage("code_digests", pipeline=project_copy / "dvc.yaml")
    (project_copy / OUTPUT_DIR).mkdir(parents=True)
    (project_copy / OUTPUT_DIR / "renamed_stage").write_text("left from a stage dvc.yaml no longer has\n")
    run(stage)
    written = {p.name: p.read_text() for p in (project_copy / OUTPUT_DIR).iterdir()}
    assert written == stage_listings(project_copy)   # the stale file is gone, every stage has its listing
    assert "changed: none" not in capsys.readouterr().out
    mtimes = {p.name: p.stat().st_mtime_ns for p in (project_copy / OUTPUT_DIR).iterdir()}
    run(stage)
    assert "changed: none" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in (project_copy / OUTPUT_DIR).iterdir()} == mtimes


def test_a_stage_without_its_code_digest_or_with_code_deps_is_reported(project_copy: Path, capsys):
    pipeline = project_copy / "dvc.yaml"
    text = pipeline.read_text()
    pipeline.write_text(text.replace("deps: [data/code_digests/filter, ", "deps: [")
                        .replace("deps: [data/code_digests/kernels, ", "deps: [data/code_digests/kernels, cass/text, "))
    assert unwired(project_copy) == {
        "filter": "deps lack data/code_digests/filter (the code the stage runs)",
        "kernels": "deps list project code (cass/text) that data/code_digests/kernels covers"}
    assert cass_main(["wiring", str(project_copy)]) == 1
    assert "dvc.yaml stage filter: deps lack data/code_digests/filter" in capsys.readouterr().out


def test_a_notebook_the_analyze_stage_does_not_list_is_reported(project_copy: Path):
    shutil.copytree(REPO / "analysis", project_copy / "analysis", ignore=shutil.ignore_patterns("__pycache__"))
    assert unwired(project_copy) == {}
    (project_copy / "analysis" / "throughput.py").write_text("# %%\nprint('a new figure')\n")
    assert unwired(project_copy) == {"analyze": "deps lack the notebooks and helpers it runs: analysis/throughput.py"}


def test_a_stage_importing_another_stage_is_reported(project_copy: Path, capsys):
    entry = project_copy / "stages" / "instruct.py"
    entry.write_text("from stages.tokens import run as tokens_run  # noqa: F401\n" + entry.read_text())
    assert stage_imports(project_copy) == {"instruct": ["stages.tokens"]}
    assert cass_main(["wiring", str(project_copy)]) == 1
    assert "stage instruct imports stages.tokens" in capsys.readouterr().out
    work = project_copy / "cass" / "stages" / "kernels.py"
    work.write_text("from cass.stages import normalize  # noqa: F401\n" + work.read_text())
    assert stage_imports(project_copy)["kernels"] == ["cass.stages.normalize"]


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


def test_a_stage_reads_only_the_upstream_outputs_dvc_yaml_gives_it():
    from cass.pipeline.context import UndeclaredUpstreamError

    pair = Stage("pair", pipeline=REPO / "dvc.yaml")
    assert {"dedup", "compile_nvidia", "compile_amd", "branch_parity"} <= pair.upstreams
    with pytest.raises(UndeclaredUpstreamError, match="data/hipify"):
        pair.upstream("hipify")
    with pytest.raises(UndeclaredUpstreamError, match="data/repair"):
        pair.upstream_dir("repair")
    publish = Stage("publish", pipeline=REPO / "dvc.yaml")
    assert publish.upstream_dir("hub") == Stage("hub").data_dir == Path("data") / "hub"


def record_on_a_worker(key: str, store_root: str) -> int:
    """A stage's item on one of its worker processes: it records an action in its own store."""
    from store import ActionRecord, Store

    store = Store(store_root)
    store.record(key, ActionRecord("ok", 0, {}, store.put(b"")))
    return os.getpid()


def test_a_stage_run_writes_every_key_its_store_and_its_workers_used_also_when_it_fails_and_only_where_declared(
        tmp_path: Path, monkeypatch):
    from store import ActionRecord, Store

    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump({"stages": {
        "asks": {"cmd": "python -m stages.asks", "outs": ["data/asks"]},
        "reads": {"cmd": "python -m stages.reads", "outs": [{"data/reads": {"persist": True}}]},
        "packs": {"cmd": "python -m stages.packs", "outs": ["data/elsewhere"]}}}))
    ambient = {"store": {"dir": ".cass/store"},
               "executor": {"scheduler": None, "workers": 2, "host_wait_s": 0, "in_process_s": 0},   # workers at once
               "amd": {"toolchain": ""}, "tokens": {"cache_dir": ""}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(ambient))
    monkeypatch.chdir(tmp_path)
    earlier = Store(".cass/store")
    earlier.record("a" * 64, ActionRecord("ok", 0, {"out": earlier.put(b"kept")}, earlier.put(b"")))

    def asks(stage: Stage) -> None:   # one hit, one new record, one miss, two records on its worker processes
        assert stage.store.lookup("a" * 64) is not None and stage.store.lookup("c" * 64) is None
        stage.store.record("b" * 64, ActionRecord("failed", 1, {}, stage.store.put(b"error")))
        workers = set(stage.work.map(record_on_a_worker, ["d" * 64, "e" * 64], str(stage.store.root), count=2))
        assert os.getpid() not in workers

    Stage("asks").run(asks)
    assert pl.read_parquet("data/asks/actions.parquet")["key"].to_list() == [c * 64 for c in "abde"]
    shutil.rmtree("data/asks")

    def stops(stage: Stage) -> None:   # what it recorded before it stopped is kept, for its rerun to find
        stage.store.record("f" * 64, ActionRecord("ok", 0, {}, stage.store.put(b"")))
        raise SystemExit("the server is gone")

    with pytest.raises(SystemExit, match="server is gone"):
        Stage("asks").run(stops)
    assert pl.read_parquet("data/asks/actions.parquet")["key"].to_list() == ["f" * 64]
    Stage("reads").run(lambda stage: stage.output())   # no store opened: it used no action
    Stage("reads").run(lambda stage: stage.store.root)   # opened, nothing looked up
    assert not Path("data/reads").exists()
    Stage("packs").run(lambda stage: stage.store.lookup("a" * 64))   # writes elsewhere: no undeclared folder
    assert not Path("data/packs").exists()


def test_every_entry_point_runs_its_stage_in_the_context_that_writes_its_actions():
    for name in STAGES:
        text = (REPO / "stages" / f"{name}.py").read_text()
        assert name == "analyze" or "Stage.of(__file__).run(run)" in text, f"stages/{name}.py"
