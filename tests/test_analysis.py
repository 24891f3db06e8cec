"""The analysis notebooks (``python -m stages.analyze``) on the exported dataset, outputs in a temporary directory.

The inputs are ``$CASS_TEST_EXPORT_DIR`` (default: this repo's ``data/export``) and ``$CASS_TEST_METRICS_DIR``
(default: ``metrics``), as built by ``dvc repro``; where that export holds no Parquet file (a fresh clone, CI),
the bundled corpus built by the session's ``project`` fixture is used instead.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import polars as pl
import pytest
from harness.project import REPO, SHARED_BUILD
from PIL import Image

from cass.report.notebooks import load_common

pytestmark = SHARED_BUILD   # without an export here, reads the session's `project` build

EXPORT_DIR = os.environ.get("CASS_TEST_EXPORT_DIR") or str(REPO / "data" / "export")
METRICS_DIR = os.environ.get("CASS_TEST_METRICS_DIR") or str(REPO / "metrics")

FIGURES = [
    "lengths_by_backend",
    "source_vs_asm_lines",
    "chrf_cuda_vs_hip",
    "opcode_frequency",
    "opcode_categories",
    "opcode_tsne",
    "domains",
    "pipeline_funnel",
]
NOTEBOOKS = ["composition", "lengths", "opcodes", "similarity"]
SOURCE_READERS_OUTPUTS = {"lengths", "lengths_by_backend", "source_vs_asm_lines", "source_vs_asm", "similarity",
                          "chrf_cuda_vs_hip", "chrf_by_kind", "chrf_per_sample", "metrics"}
"""The outputs of the two notebooks that read sources (executed notebooks, figures, tables), and the merged metrics."""
# CSV -> the columns dvc.yaml's `plots:` entries name (x / y fields)
PLOT_TABLES = {
    "lengths_by_backend": {"backend", "origin", "median_lines", "mean_lines"},
    "source_vs_asm": {"sample_id", "cuda_source_lines", "hip_source_lines", "cuda_device_asm_lines"},
    "chrf_by_kind": {"kind", "origin", "mean_chrf", "median_chrf"},
    "chrf_per_sample": {"kind", "id", "chrf"},
    "opcode_frequency": {"vendor", "rank", "opcode", "count", "share_pct"},
    "opcode_categories": {"vendor", "category", "share_pct"},
    "opcode_tsne": {"vendor", "tfidf_x", "tfidf_y"},
    "domains": {"domain", "pairs"},
    "funnel": {"stage", "in", "kept", "dropped"},
    "funnel_reasons": {"stage", "reason", "count"},
}


def _has_parquet(directory: str) -> bool:
    return "://" in directory or any(Path(directory).glob("**/*.parquet"))


@pytest.fixture(scope="module")
def inputs(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(export dir, metrics dir): the checkout's own build, else the pipeline tests' build of the bundled corpus."""
    if _has_parquet(EXPORT_DIR):
        return EXPORT_DIR, METRICS_DIR
    project = request.getfixturevalue("project")
    return str(project / "data" / "export"), str(project / "metrics")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory, inputs: tuple[str, str]) -> Path:
    out = tmp_path_factory.mktemp("analysis")
    proc = run_analyze(*inputs, out, store_project(out / "project"))
    assert proc.returncode == 0, f"stages.analyze failed:\n{proc.stdout}\n{proc.stderr}"
    assert "4 notebooks (4 run, 0 kept from the store)" in proc.stdout
    return out


def store_project(path: Path) -> Path:
    """A folder whose params.yaml (this checkout's) names an empty store under it, for the stage to run in."""
    path.mkdir(parents=True)
    (path / "params.yaml").write_bytes((REPO / "params.yaml").read_bytes())
    return path


def run_analyze(export_dir: str, metrics_dir: str, out: Path, cwd: Path) -> subprocess.CompletedProcess:
    """The stage on those inputs, its outputs under ``out``; ``cwd``'s params.yaml names the store it keeps
    results in."""
    env = {
        **os.environ,
        "CASS_EXPORT_DIR": export_dir,
        "CASS_METRICS_DIR": metrics_dir,
        "CASS_FIGURES_DIR": str(out / "figures"),
        "CASS_PLOTS_DIR": str(out / "plots"),
        "CASS_ANALYSIS_METRICS": str(out / "metrics.json"),
        "CASS_EXECUTED_DIR": str(out / "executed"),
    }
    return subprocess.run([sys.executable, "-m", "stages.analyze"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def test_an_empty_export_skips_what_it_cannot_draw_and_still_draws_the_funnel(inputs, tmp_path) -> None:
    """A build that exported nothing (every file dropped somewhere) runs the stage: the notebooks that plot pairs
    are skipped with the reason in their metrics section; the funnel, which shows where the files went, is drawn."""
    empty = tmp_path / "export"
    for table in ("pairs", "kernels"):
        (empty / table).mkdir(parents=True)
        pl.read_parquet(sorted(Path(inputs[0], table).glob("*.parquet"))).head(0).write_parquet(
            empty / table / "train-00000-of-00001.parquet")
    proc = run_analyze(str(empty), inputs[1], tmp_path / "out", store_project(tmp_path / "project"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped lengths.py: the 'pairs' table" in proc.stdout
    sections = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert sections["lengths"] == sections["opcodes"] == {"skipped": f"the 'pairs' table under {empty} has no rows"}
    assert sections["composition"]["funnel"] and (tmp_path / "out" / "figures" / "pipeline_funnel.png").is_file()


def test_a_notebook_runs_again_only_when_what_it_reads_changed(inputs, tmp_path) -> None:
    """The stage keeps each notebook's outputs in the store under the bytes its READS names: a second run runs
    nothing and writes the same bytes; a changed CUDA source reruns the two notebooks that read sources (lengths,
    similarity), not opcodes (device assembly) or composition (domains, stage metrics), and what it writes is what a
    run of all four in an empty store writes; a changed stage metric reruns composition only if it declares it."""
    if "://" in inputs[0] + inputs[1]:
        pytest.skip("needs a local export and stage metrics")
    metrics = tmp_path / "metrics"
    shutil.copytree(inputs[1], metrics)
    export = tmp_path / "export"
    for table in ("pairs", "kernels"):
        (export / table).mkdir(parents=True)
        for part in sorted(Path(inputs[0], table).glob("*.parquet")):
            (export / table / part.name).write_bytes(part.read_bytes())
    project = store_project(tmp_path / "project")

    def analyze(name: str, where: Path = project) -> tuple[str, dict[str, bytes]]:
        proc = run_analyze(str(export), str(metrics), tmp_path / name, cwd=where)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        files = {str(p.relative_to(tmp_path / name)): p.read_bytes() for p in (tmp_path / name).rglob("*")
                 if p.is_file()}
        return proc.stdout, files

    said, first = analyze("first")
    assert "4 notebooks (4 run, 0 kept from the store)" in said
    said, again = analyze("again")
    assert "(0 run, 4 kept from the store)" in said and again == first
    pairs = sorted((export / "pairs").glob("*.parquet"))[0]
    table = pl.read_parquet(pairs)
    changed = table["cuda_source"].to_list()
    changed[0] += "\n// a comment added by a contributor\n"
    table.with_columns(pl.Series("cuda_source", changed)).write_parquet(pairs)
    said, after = analyze("after")
    assert "(2 run, 2 kept from the store)" in said
    rerun = {name for name in first if first[name] != after[name]}
    assert rerun and all(name.split("/")[-1].split(".")[0] in SOURCE_READERS_OUTPUTS for name in rerun), rerun
    said, alone = analyze("alone", store_project(tmp_path / "fresh"))   # another store: every notebook runs
    assert "(4 run, 0 kept from the store)" in said and alone == after
    # stage metrics: a stage no notebook declares changes nothing; one composition declares reruns it alone
    for stage, ran in (("evaluate", "(0 run, 4 kept from the store)"), ("tokens", "(1 run, 3 kept from the store)")):
        numbers = json.loads((metrics / f"{stage}.json").read_text())
        (metrics / f"{stage}.json").write_text(json.dumps(numbers | {"in": numbers.get("in", 0) + 1}))
        said, _ = analyze(f"after_{stage}")
        assert ran in said, (stage, said)


def test_a_notebook_sees_only_the_columns_and_tables_it_declares(monkeypatch, inputs) -> None:
    common = load_common()
    if "://" in inputs[0]:
        pytest.skip("needs a local export")
    monkeypatch.setenv(common.READS_VARIABLE, json.dumps({"pairs": ["sample_id", "hip_device_asm_*"]}))
    names = common.scan_table("pairs", export_dir=inputs[0]).collect_schema().names()
    assert names[0] == "sample_id" and len(names) > 1
    assert all(n == "sample_id" or n.startswith("hip_device_asm_") for n in names), names
    with pytest.raises(common.UndeclaredRead, match="'kernels', which its READS does not name"):
        common.scan_table("kernels", export_dir=inputs[0], required=False)
    monkeypatch.delenv(common.READS_VARIABLE)   # outside the stage (Jupyter): every column
    assert "cuda_source" in common.scan_table("pairs", export_dir=inputs[0]).collect_schema().names()


def test_a_notebook_without_reads_is_refused_by_name(tmp_path: Path) -> None:
    from cass.report.notebooks import AnalysisError, declared_reads

    notebook = tmp_path / "undeclared.py"
    notebook.write_text("# %%\nimport polars as pl\n")
    with pytest.raises(AnalysisError, match=r"undeclared\.py: no READS"):
        declared_reads(notebook)
    notebook.write_text("# %%\nCOLUMNS = ['a']\nREADS = {'pairs': COLUMNS}\n")
    with pytest.raises(AnalysisError, match=r"undeclared\.py: READS is not a literal"):
        declared_reads(notebook)


@pytest.fixture(scope="module")
def metrics(outputs: Path) -> dict:
    return json.loads((outputs / "metrics.json").read_text())


@pytest.mark.parametrize("name", FIGURES)
def test_figure_is_a_readable_png(outputs: Path, name: str) -> None:
    path = outputs / "figures" / f"{name}.png"
    assert path.is_file(), f"missing figure {path.name}"
    with Image.open(path) as image:
        assert image.format == "PNG"
        width, height = image.size
        image.load()
        extrema = image.convert("L").getextrema()
    assert width >= 600 and height >= 400, f"{name}.png is only {width}x{height}"
    assert extrema[0] < 100 < extrema[1], f"{name}.png looks blank"
    assert path.stat().st_size > 20_000, f"{name}.png is suspiciously small"


def test_executed_notebooks_have_no_errors(outputs: Path) -> None:
    for name in NOTEBOOKS:
        nb = nbformat.read(outputs / "executed" / f"{name}.ipynb", as_version=4)
        assert nb.cells[0].cell_type == "markdown"
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.get("execution_count") for c in code), f"{name}: not every cell ran"
        errors = [o for c in code for o in c.outputs if o.output_type == "error"]
        assert not errors, f"{name}: {errors[0]['ename']}: {errors[0]['evalue']}"


@pytest.mark.parametrize("name", sorted(PLOT_TABLES))
def test_plot_tables(outputs: Path, name: str) -> None:
    table = pl.read_csv(outputs / "plots" / f"{name}.csv")
    assert table.height > 0
    assert PLOT_TABLES[name] <= set(table.columns), f"{name}.csv lacks {PLOT_TABLES[name] - set(table.columns)}"


def test_metrics_sections_and_values(metrics: dict) -> None:
    assert set(metrics) == {"composition", "lengths", "opcodes", "similarity"}
    pairs = metrics["lengths"]["pairs"]
    assert pairs > 0

    lengths = metrics["lengths"]
    assert set(lengths["median_lines"]) == {"cuda_host", "cuda_device", "hip_host", "hip_device"}
    assert all(v > 0 for v in lengths["median_lines"].values())

    similarity = metrics["similarity"]
    assert {"source", "host asm", "device asm"} <= set(similarity["mean_chrf"])
    for kind, value in similarity["mean_chrf"].items():
        assert 0 <= value <= 100, (kind, value)
        assert 0 <= similarity["median_chrf"][kind] <= 100
    # the paper's finding, and a sanity check of which text is compared with which
    chrf = similarity["mean_chrf"]
    assert chrf["source"] > chrf["host asm"] > chrf["device asm"]
    assert similarity["n"]["source"] == min(pairs, similarity["max_samples"] or pairs)

    opcodes = metrics["opcodes"]
    for vendor in ("nvidia", "amd"):
        assert opcodes["instructions"][vendor] > 0
        assert len(opcodes["top_opcodes"][vendor]) == min(10, opcodes["distinct_opcodes"][vendor])
        assert sum(opcodes["category_share_pct"][vendor].values()) == pytest.approx(100, abs=0.01)
    top_sass = [op for op, _ in opcodes["top_opcodes"]["nvidia"]]
    top_amd = [op for op, _ in opcodes["top_opcodes"]["amd"]]
    assert all(op.isupper() and "." not in op for op in top_sass), top_sass
    assert all(op[:2] in {"s_", "v_"} or op.split("_")[0] in {"ds", "global", "buffer", "flat"} for op in top_amd)
    assert opcodes["tsne"]["points"] == 2 * opcodes["samples"]
    assert 2 <= opcodes["tsne"]["perplexity"] < opcodes["tsne"]["points"]

    composition = metrics["composition"]
    assert sum(composition["domains"].values()) == pairs == composition["pairs"]
    for stage, counts in composition["funnel"].items():
        assert counts["kept"] + counts["dropped"] == counts["in"], stage


def test_metrics_file_is_sorted_and_stable(outputs: Path) -> None:
    text = (outputs / "metrics.json").read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_published_layout_and_metrics_merge(tmp_path: Path, inputs: tuple[str, str]) -> None:
    common = load_common()
    if "://" in inputs[0]:
        pytest.skip("needs a local pairs table, not a remote export")
    source = next(Path(inputs[0]).glob("pairs/*.parquet"))
    published = tmp_path / "repo" / "data" / "pairs"
    published.mkdir(parents=True)
    (published / "train-00000-of-00001.parquet").symlink_to(source)
    for base in (tmp_path / "repo", tmp_path / "repo" / "data"):  # <repo>/data/pairs/* and <dir>/pairs/*
        frame = common.scan_table("pairs", export_dir=str(base))
        assert "sample_id" in frame.collect_schema().names()
    assert common.scan_table("kernels", export_dir=str(tmp_path / "repo"), required=False) is None

    target = tmp_path / "metrics.json"
    common.merge_metrics("b", {"x": 1 / 3}, target)
    common.merge_metrics("a", {"y": [1.0, float("nan")]}, target)
    assert json.loads(target.read_text()) == {"a": {"y": [1.0, None]}, "b": {"x": 0.3333}}


def test_kernels_run_one_thread_each_unless_told_otherwise() -> None:
    from cass.report.notebooks import THREAD_VARIABLES, analysis_environment

    env = analysis_environment({"PATH": "/usr/bin"})
    assert {env[name] for name in THREAD_VARIABLES} == {"1"}
    assert analysis_environment({"OMP_NUM_THREADS": "4"})["OMP_NUM_THREADS"] == "4"


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the AVX2 level is an x86-64 one")
def test_kernels_compute_at_the_avx2_level_on_any_x86_64_cpu() -> None:
    from cass.report.notebooks import analysis_environment

    env = analysis_environment({"PATH": os.environ["PATH"]})
    probe = ("import numpy, threadpoolctl\n"
             "from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__ as cpu\n"
             "print(sorted(f for f in __cpu_dispatch__ if cpu[f] and (f.startswith('AVX512') or f == 'X86_V4')))\n"
             "blas = [i for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas']\n"
             "print(sorted({i['architecture'] for i in blas}))\n")
    shown = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert shown.stdout.splitlines() == ["[]", "['Haswell']"] and shown.stderr == ""   # silent, no AVX-512 kernel
    assert analysis_environment({"OPENBLAS_CORETYPE": "SkylakeX"})["OPENBLAS_CORETYPE"] == "SkylakeX"


def test_failing_cell_names_notebook_and_error(tmp_path: Path) -> None:
    from cass.report.notebooks import AnalysisError, analysis_environment, execute_notebook

    notebook = tmp_path / "broken.py"
    notebook.write_text('# %% [markdown]\n# broken\n\n# %%\nx = 1\n\n# %%\nraise ValueError("boom")\n')
    with pytest.raises(AnalysisError) as error:
        execute_notebook(notebook, tmp_path / "executed", analysis_environment(), timeout=60)
    message = str(error.value)
    assert "broken.py" in message and "cell 2" in message and "ValueError: boom" in message
    assert (tmp_path / "executed" / "broken.ipynb").is_file()


def test_a_print_split_into_chunks_gives_the_same_executed_notebook():
    from cass.report.notebooks import coalesce_streams

    def notebook(chunks: list[str]) -> str:
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("print(x)", id="cell-0")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=c) for c in chunks]
        cell.outputs.append(nbformat.v4.new_output("stream", name="stderr", text="warning\n"))
        nb.cells.append(cell)
        coalesce_streams(nb)
        return nbformat.writes(nb)

    whole = notebook(["backends: [...]\nsamples: 48\n"])
    assert notebook(["backends: [...]\n", "samples: 48\n"]) == whole
    assert notebook(["back", "ends: [...]\nsam", "ples: 48\n"]) == whole
    assert '"name": "stderr"' in whole   # another stream stays its own output


def test_notebooks_run_longest_first_by_their_last_durations(tmp_path: Path, monkeypatch) -> None:
    from cass.report.notebooks import analysis_environment, longest_first, run_notebooks

    names = [Path(n) for n in ("a.py", "b.py", "c.py", "d.py")]
    assert longest_first(names, {"a.py": 1.0, "b.py": 3.0, "c.py": 2.0}) == [Path(n) for n in
                                                                           ("d.py", "b.py", "c.py", "a.py")]
    # a real run records each notebook's seconds in the machine cache (kernel start-up included, so only the
    # slow one's lower bound is certain); the next run starts whichever the file says was longest
    monkeypatch.setenv("CASS_CACHE", str(tmp_path / "cache"))
    started = tmp_path / "started.txt"   # each notebook appends its name when it starts
    for name, seconds in (("quick", 0), ("slow", 1.5)):
        (tmp_path / f"{name}.py").write_text(f"# %%\nimport time\nwith open({str(started)!r}, 'a') as f:\n"
                                             f"    f.write('{name}.py\\n')\ntime.sleep({seconds})\n")
    env = analysis_environment() | {"CASS_EXECUTED_DIR": str(tmp_path / "executed")}
    paths = [tmp_path / "quick.py", tmp_path / "slow.py"]

    def order_of_a_run() -> list[str]:
        started.unlink(missing_ok=True)
        run_notebooks(paths, env, timeout=60, jobs=1)
        return started.read_text().split()

    assert order_of_a_run() == ["quick.py", "slow.py"]   # no durations yet: name order
    durations_file = tmp_path / "cache" / "analysis" / "notebook_seconds.json"
    durations = json.loads(durations_file.read_text())
    assert set(durations) == {"quick.py", "slow.py"} and durations["slow.py"] >= 1.5 and durations["quick.py"] > 0
    for longest in ("slow.py", "quick.py"):
        durations_file.write_text(json.dumps({"quick.py": 1.0, "slow.py": 1.0} | {longest: 9.0}))
        assert order_of_a_run()[0] == longest
    # a durations file that is not a JSON object counts as none: name order again
    durations_file.write_text("[]")
    assert order_of_a_run() == ["quick.py", "slow.py"]


def test_notebooks_on_one_worker_share_its_kernel_yet_each_starts_fresh(tmp_path: Path, monkeypatch) -> None:
    from cass.report.notebooks import AnalysisError, analysis_environment, execute_notebook, run_notebooks

    monkeypatch.setenv("CASS_CACHE", str(tmp_path / "cache"))
    probe = (
        "# %%\nimport os\nfrom pathlib import Path\nimport matplotlib\n"
        "own = Path(os.environ['CASS_ANALYSIS_METRICS']).parent.name\n"
        "Path(os.environ['PROBE_DIR'], own + '.pid').write_text(str(os.getpid()))\n"
        "print(own, 'leaked' in dir(), matplotlib.rcParams['lines.linewidth'])\n"
        "leaked = True\nmatplotlib.rcParams['lines.linewidth'] = 7\n"
        "# %%\n6 * 7\n"   # an execute_result, numbered by the kernel
    )
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for name in ("a", "b", "d"):
        (notebooks / f"{name}.py").write_text(probe)
    (notebooks / "c.py").write_text("# %%\nimport os\nos._exit(1)\n")   # its kernel dies
    env = analysis_environment() | {"CASS_EXECUTED_DIR": str(tmp_path / "executed"), "PROBE_DIR": str(tmp_path)}
    with pytest.raises(AnalysisError, match=r"c\.py: DeadKernelError"):
        run_notebooks(sorted(notebooks.glob("*.py")), env, timeout=60, jobs=1)   # one worker, in name order

    pid = {name: (tmp_path / f"{name}.pid").read_text() for name in ("a", "b", "d")}
    assert pid["a"] == pid["b"] != pid["d"]   # b reused a's kernel; d got a new one after c's died
    # each saw its own environment, a clean namespace, matplotlib's defaults, and counts from 1: its executed
    # notebook is the same as on a kernel of its own
    alone = tmp_path / "alone"
    execute_notebook(notebooks / "b.py", alone, env | {"CASS_ANALYSIS_METRICS": str(tmp_path / "b" / "metrics.json")},
                     60)
    assert (tmp_path / "executed" / "b.ipynb").read_bytes() == (alone / "b.ipynb").read_bytes()
    assert "b False 1.5" in (alone / "b.ipynb").read_text()


def test_a_kernel_has_its_first_notebooks_libraries_loaded_before_the_notebook_runs(tmp_path: Path,
                                                                                      monkeypatch) -> None:
    from cass.report.notebooks import AnalysisError, analysis_environment, library_imports, run_notebooks

    monkeypatch.setenv("CASS_CACHE", str(tmp_path / "cache"))
    libraries = tmp_path / "libraries"
    libraries.mkdir()
    (libraries / "probelib.py").write_text("")
    (libraries / "broken.py").write_text("raise ImportError('broken on purpose')\n")
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    loaded = (notebooks / "loaded.py")
    loaded.write_text("# %%\nimport sys\nprint('probelib loaded:', 'probelib' in sys.modules)\n"
                      "import probelib\nimport matplotlib.pyplot as plt\nfrom _helper import x\n")
    (notebooks / "_helper.py").write_text("x = 1\n")
    failing = notebooks / "failing.py"
    failing.write_text("# %%\nimport broken\n")
    # what a kernel may load first: top-level library imports, not the helpers, not matplotlib
    assert library_imports(loaded) == ["sys", "probelib"]
    assert library_imports(failing) == ["broken"]
    env = analysis_environment() | {"CASS_EXECUTED_DIR": str(tmp_path / "executed"), "PYTHONPATH": str(libraries)}
    run_notebooks([loaded], env, timeout=60, jobs=1)
    assert "probelib loaded: True" in (tmp_path / "executed" / "loaded.ipynb").read_text()
    # a library that fails to load first fails the notebook, in its own cell, as it would without the head start
    with pytest.raises(AnalysisError, match=r"failing\.py: cell 0 .*ImportError: broken on purpose"):
        run_notebooks([failing], env, timeout=60, jobs=1)
