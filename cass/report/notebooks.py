"""Executing the analysis notebooks of ``analysis/`` headless (stage ``analyze``: :mod:`cass.stages.analyze`)."""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib.metadata
import importlib.util
import io
import json
import os
import platform
import queue
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import blake3
import jupytext
import nbformat
import polars as pl
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from cass.engine.cached import CachedMap
from cass.pipeline.metrics import write_json
from store import ActionRecord, ActionSpec, Store, digest_bytes
from store.machine_cache import machine_cache

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK_DIR = ROOT / "analysis"
KERNEL_NAME = "python3"
KERNEL_START_S = 60
"""Seconds a preloading kernel may take to start and finish its imports before its first notebook goes ahead anyway
(nbclient's start-up timeout): :meth:`NotebookKernel.preload`."""

# environment variable -> default (relative to the current directory); passed to the kernel as absolute paths
PATH_VARIABLES = {
    "CASS_EXPORT_DIR": "data/export",
    "CASS_METRICS_DIR": "metrics",
    "CASS_FIGURES_DIR": "analysis/figures",
    "CASS_PLOTS_DIR": "analysis/plots",
    "CASS_ANALYSIS_METRICS": "analysis/metrics.json",
    "CASS_EXECUTED_DIR": "analysis/executed",
}

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Set to 1 for the kernels unless set already: the notebooks already run side by side, one per core, and
threads of their own oversubscribe the cores (t-SNE's OpenMP workers spin: on 2 cores the stage took 11.1-12.2 s
with them, 7.9-8.3 s without); and a float sum then does not depend on the machine's core count (unless the
caller sets them)."""


def portable_numerics() -> dict[str, str]:
    """Environment that holds numpy's and OpenBLAS's kernels at the AVX2 level on an x86-64 machine that has AVX2
    (its AVX-512 kernels switched off; nothing elsewhere): their floats then do not depend on which such CPU runs
    the notebooks. The figures and executed notebooks are DVC outputs whose hashes dvc.lock records: with AVX-512
    kernels an AVX-512 machine drew other t-SNE bytes than an AVX2 one, so a fresh clone's build changed dvc.lock."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    import numpy

    found = numpy.show_config(mode="dicts").get("SIMD Extensions", {}).get("found", [])
    if not {"X86_V3", "AVX2"} & set(found):   # OpenBLAS's Haswell kernels need AVX2
        return {}
    env = {"OPENBLAS_CORETYPE": "Haswell"}
    wide = [feature for feature in found if feature.startswith("AVX512") or feature == "X86_V4"]
    if wide:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(wide)
    return env


class AnalysisError(RuntimeError):
    """A notebook failed: carries the notebook name and the failing cell's error."""


class NotebookSkipped(Exception):
    """A notebook stopped because its table has no rows (``NothingToPlot``): not a failure."""


class _InterpreterKernelSpecs(KernelSpecManager):
    """Resolves ``python3`` to an ipykernel on ``sys.executable``, ignoring kernelspecs installed elsewhere, with
    IPython's history off: it would write every cell to the user's history database, which the kernels running side
    by side would contend for, and a kernel is stopped at once (a graceful shutdown takes about 0.6 s), which loses
    the writes it has not made yet."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        if kernel_name != KERNEL_NAME:
            return super().get_kernel_spec(kernel_name)
        return KernelSpec(
            argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}",
                  "--HistoryManager.enabled=False"],
            display_name=f"Python 3 ({sys.prefix})",
            language="python",
            resource_dir=str(NOTEBOOK_DIR),
        )


def resolve_path(value: str) -> str:
    """URLs unchanged; local paths made absolute (from the current directory)."""
    return value if "://" in value else str(Path(value).expanduser().resolve())


def analysis_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The kernel's environment: ``base`` (default ``os.environ``) with every CASS path variable set, absolute, one
    thread per kernel and :func:`portable_numerics` (each unless ``base`` sets it)."""
    env = dict(os.environ if base is None else base)
    for name, default in PATH_VARIABLES.items():
        env[name] = resolve_path(env.get(name) or default)
    env["MPLBACKEND"] = "Agg"
    env.setdefault("PYTHONHASHSEED", "0")
    for name in THREAD_VARIABLES:
        env.setdefault(name, "1")
    for name, value in portable_numerics().items():
        env.setdefault(name, value)
    return env


def notebooks(directory: Path = NOTEBOOK_DIR, only: list[str] | None = None) -> list[Path]:
    """The notebooks to run, sorted by name: ``*.py`` not starting with ``_``, optionally only the named ones."""
    found = sorted(p for p in directory.glob("*.py") if not p.name.startswith("_"))
    if only:
        wanted = {Path(name).stem for name in only}
        missing = wanted - {p.stem for p in found}
        if missing:
            raise AnalysisError(f"no such notebook in {directory}: {', '.join(sorted(missing))}")
        found = [p for p in found if p.stem in wanted]
    return found


def _failed_cell(nb: nbformat.NotebookNode) -> tuple[int, str] | None:
    """(index, first source line) of the first code cell with an error output."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            first = next((line for line in cell.source.splitlines() if line.strip()), "")
            return index, first
    return None


def coalesce_streams(nb: nbformat.NotebookNode) -> None:
    """Join each cell's consecutive outputs to the same stream into one: how the kernel chunked a
    print (it depends on timing, e.g. on a loaded machine) must not change the executed notebook."""
    for cell in nb.cells:
        merged: list = []
        for output in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if (output.get("output_type") == "stream" and last is not None
                    and last.get("output_type") == "stream" and last.get("name") == output.get("name")):
                last["text"] += output["text"]
            else:
                merged.append(output)
        if "outputs" in cell:
            cell.outputs = merged


class NotebookKernel:
    """One IPython kernel on this interpreter that executes notebooks one after another (one per worker).

    Before each notebook the kernel is made to look fresh: its environment and working directory set to the
    notebook's, open figures closed, matplotlib's settings restored to those read at import, the notebooks'
    helper module ``_common`` dropped from ``sys.modules`` (the notebook imports it again, under its own
    environment), the namespace cleared and the execution counter set back to 1. Only
    library modules stay loaded, so the second notebook on a worker pays no kernel start and no imports (about
    1 s each on 2 cores), and its executed notebook is the one a kernel of its own would give. A kernel that died
    or timed out is discarded: the next notebook starts a new one.

    :meth:`preload` starts the kernel early and has it import the library modules a notebook will import, so that
    the start and the imports run while the stage still decides which notebooks to run.
    """

    def __init__(self, env: dict[str, str]):
        self.env = env
        self._sockets = tempfile.TemporaryDirectory(prefix="cass-kernel-")
        self.km: AsyncKernelManager | None = None
        self._preloading: tuple[BlockingKernelClient, str] | None = None

    def preload(self, cwd: Path, modules: list[str]) -> None:
        """Start the kernel in ``cwd`` and send it the import of ``modules``, waiting for neither (a stage that then
        finds nothing to run stops the kernel at once). A module that fails to import is left to the notebook, which
        reports the error itself; library modules stay loaded from one notebook to the next in any case."""
        self.km = self._start(cwd)
        client = BlockingKernelClient()
        client.load_connection_info(self.km.get_connection_info())
        client.start_channels(iopub=False, stdin=False, hb=False, control=False)   # queued until the kernel listens
        code = "".join(f"try:\n    __import__({name!r})\nexcept Exception:\n    pass\n" for name in modules)
        try:
            self._preloading = (client, client.execute(code, silent=True, store_history=False))
        except Exception:
            client.stop_channels()
            raise

    def _end_preload(self, wait: bool) -> None:
        """Close the preloading client, first waiting (if ``wait``) until the kernel has done the imports, so that
        they come before the notebook's first cell, or has died (the notebook then gets a new kernel)."""
        if self._preloading is None:
            return
        client, request = self._preloading
        self._preloading = None
        deadline = time.monotonic() + KERNEL_START_S
        try:
            while wait and time.monotonic() < deadline and run_sync(self.km.is_alive)():
                with contextlib.suppress(queue.Empty):
                    if client.get_shell_msg(timeout=0.2)["parent_header"].get("msg_id") == request:
                        return
        finally:
            client.stop_channels()

    def _start(self, cwd: Path) -> AsyncKernelManager:
        # IPC transport (unix sockets under an absolute temporary path): local only, no "TCP without encryption"
        # warning. Asynchronous, so that nbclient notices a kernel that died while it waits for output.
        km = AsyncKernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=_InterpreterKernelSpecs(),
                                transport="ipc", ip=str(Path(self._sockets.name) / "kernel"))
        run_sync(km.start_kernel)(env=self.env, cwd=str(cwd))
        return km

    def fresh_state_code(self, env: dict[str, str], cwd: Path) -> str:
        """The code run (silently) before a notebook: ``env`` and ``cwd`` in place of the kernel's."""
        changed = {k: v for k, v in env.items() if self.env.get(k) != v}
        removed = [k for k in self.env if k not in env]
        return (
            "import os as _os, sys as _sys\n"
            f"_os.environ.update({changed!r})\n"
            f"for _k in {removed!r}: _os.environ.pop(_k, None)\n"
            f"_os.chdir({str(cwd)!r})\n"
            "_sys.modules.pop('_common', None)\n"
            "if 'matplotlib.pyplot' in _sys.modules: _sys.modules['matplotlib.pyplot'].close('all')\n"
            "if 'matplotlib' in _sys.modules: _sys.modules['matplotlib'].rc_file_defaults()\n"
            "get_ipython().reset(new_session=True)\n"
        )

    def execute(self, nb: nbformat.NotebookNode, env: dict[str, str], cwd: Path, timeout: int) -> None:
        """Execute ``nb`` in place (raises what nbclient raises); the kernel is kept unless it died or hung."""
        self._end_preload(wait=True)
        if self.km is not None and not run_sync(self.km.is_alive)():
            self.discard()
        if self.km is None:
            self.km = self._start(cwd)
        client = NotebookClient(nb, km=self.km, timeout=timeout, kernel_name=KERNEL_NAME, record_timing=False,
                                resources={"metadata": {"path": str(cwd)}})
        try:
            client.start_new_kernel_client()
            reply = run_sync(client.kc.execute_interactive)(self.fresh_state_code(env, cwd), silent=True,
                                                            timeout=timeout)
            if reply["content"]["status"] != "ok":
                raise RuntimeError(f"resetting the kernel failed: {reply['content'].get('evalue')}")
            client.execute(cleanup_kc=False)
        except (CellTimeoutError, DeadKernelError, RuntimeError, TimeoutError):
            self.discard()
            raise
        finally:
            if client.kc is not None:
                client.kc.stop_channels()

    def discard(self) -> None:
        """Stop the kernel at once and forget it."""
        self._end_preload(wait=False)
        if self.km is not None:
            if run_sync(self.km.is_alive)():
                run_sync(self.km.shutdown_kernel)(now=True)
            run_sync(self.km.cleanup_resources)()
            self.km = None

    def close(self) -> None:
        """Stop the kernel (at once: its notebooks' outputs are all received) and remove its sockets."""
        self.discard()
        self._sockets.cleanup()


def execute_notebook(path: Path, executed_dir: Path, env: dict[str, str], timeout: int,
                     kernel: NotebookKernel | None = None) -> Path:
    """Convert ``path`` with jupytext, execute it in its folder (on ``kernel``, else on a kernel of its own),
    write ``executed_dir/<name>.ipynb``; return it.

    Raises ``AnalysisError`` naming the notebook and the failing cell; the notebook is written in any case.
    """
    nb = jupytext.read(path)
    nb.metadata["kernelspec"] = {"name": KERNEL_NAME, "display_name": "Python 3", "language": "python"}
    for index, cell in enumerate(nb.cells):
        cell.id = f"cell-{index}"  # jupytext draws random ids: fixed ones keep the executed notebook reproducible
    executed_dir.mkdir(parents=True, exist_ok=True)
    out = executed_dir / f"{path.stem}.ipynb"
    own = kernel is None
    kernel = kernel or NotebookKernel(env)
    try:
        kernel.execute(nb, env, path.parent, timeout)
    except CellExecutionError as error:
        if error.ename == "NothingToPlot":   # raised by analysis/_common.require_rows: an empty table
            raise NotebookSkipped(f"{path.name}: {error.evalue}") from error
        where = _failed_cell(nb)
        cell = f"cell {where[0]} ({where[1]!r})" if where else "a cell"
        raise AnalysisError(
            f"notebook {path.name}: {cell} failed: {error.ename}: {error.evalue}\n(executed notebook: {out})"
        ) from error
    except (CellTimeoutError, DeadKernelError, RuntimeError, TimeoutError) as error:
        raise AnalysisError(f"notebook {path.name}: {type(error).__name__}: {error}") from error
    finally:
        coalesce_streams(nb)
        nbformat.write(nb, out)
        if own:
            kernel.close()
    return out


NOTEBOOK_SCHEME = 1
"""Enters every key of a kept notebook result: bump it when what :class:`NotebookMemo` keeps changes meaning."""
NOTEBOOK_OUTPUTS = ("executed.ipynb", "figures/*", "plots/*", "metrics.json")
"""What a notebook run keeps (:func:`notebook_outputs`): the executed notebook, the files it wrote, its metrics."""

KEY_PREFIXES = ("CASS_ANALYSIS_MAX_SAMPLES", "PYTHONHASHSEED", "POLARS_", "MPL", "MATPLOTLIB", "OMP_", "OPENBLAS_",
                "MKL_", "NPY_")
"""The kernel's environment variables (by prefix) that can change a notebook's results: sampling, hashing, how
Polars prints a frame, matplotlib's settings, the numeric libraries' threads and kernels. Its paths do not: the
notebooks show them as :func:`_common.shown_path` does, which the key holds."""


def declared_reads(path: Path) -> dict[str, list[str]]:
    """A notebook's ``READS``: a literal dict at its top level, table -> column glob patterns, and ``metrics`` ->
    the stages whose metrics it reads."""
    for node in ast.parse(path.read_text(), filename=str(path)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if getattr(node, "value", None) is not None and any(isinstance(t, ast.Name) and t.id == "READS"
                                                            for t in targets):
            try:
                reads = ast.literal_eval(node.value)
            except ValueError as error:
                raise AnalysisError(f"notebook {path.name}: READS is not a literal ({error})") from error
            if isinstance(reads, dict) and all(isinstance(v, list) and all(isinstance(x, str) for x in v)
                                               for v in reads.values()):
                return reads
            raise AnalysisError(f"notebook {path.name}: READS must map names to lists of strings, not {reads!r}")
    raise AnalysisError(f"notebook {path.name}: no READS = {{...}} at its top level (the tables' columns and the "
                        "stage metrics it reads): the analyze stage keeps results only under what a notebook reads")


def load_common(directory: Path = NOTEBOOK_DIR) -> ModuleType:
    """The notebooks' helper module ``_common.py``, loaded here for what the stage shares with it (the tables'
    layouts and which columns a notebook's ``READS`` lets it see)."""
    spec = importlib.util.spec_from_file_location("cass_analysis_common", directory / "_common.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def matplotlib_settings(directory: Path, env: dict[str, str]) -> dict[str, str | None]:
    """Digests of the matplotlibrc files a kernel in ``directory`` with ``env`` could read (``rc_file_defaults``
    reloads whichever comes first), by path; None where there is none."""
    home = Path(env.get("HOME") or Path.home())
    candidates = [directory / "matplotlibrc", *[Path(env[v]) / "matplotlibrc" for v in ("MATPLOTLIBRC", "MPLCONFIGDIR")
                                                if env.get(v)],
                  Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "matplotlib" / "matplotlibrc"]
    return {str(path): digest_bytes(path.read_bytes()) if path.is_file() else None for path in candidates}


class NotebookMemo:
    """Each notebook's results (its executed notebook, figures, tables and metrics section) kept in the store as one
    action, keyed by all a run of it can depend on: its text and ``_common.py``, the installed packages, Python, the
    machine's architecture, this runner's code, the kernel's environment (:data:`KEY_PREFIXES`) and matplotlibrc
    files, the export and metrics folders as the notebooks show them (relative to the repository when inside it),
    and the bytes of the columns and the stage metrics its ``READS`` names. The
    notebook runs seeing only those (:meth:`view`), so a kept result is the one a run would give; a notebook whose
    inputs changed runs again. Only for a local export and metrics folder."""

    def __init__(self, store: Store, env: dict[str, str], directory: Path = NOTEBOOK_DIR):
        self.cache = CachedMap(store)
        self.store = store
        self.export_dir = env["CASS_EXPORT_DIR"]
        self.metrics_dir = Path(env["CASS_METRICS_DIR"])
        self.directory = directory
        self.kernel_env = env

    @functools.cached_property
    def common(self) -> ModuleType:
        """``_common.py``, loaded on the first key, as :attr:`identity` is (it imports matplotlib, and the packages'
        metadata is 500 reads): the kernels start meanwhile."""
        return load_common(self.directory)

    @functools.cached_property
    def identity(self) -> dict:
        """What every notebook's key holds besides its own inputs."""
        packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
        return {"scheme": NOTEBOOK_SCHEME, "python": sys.version, "machine": platform.machine(),
                "packages": digest_bytes("\n".join(packages).encode()),
                "common": digest_bytes((self.directory / "_common.py").read_bytes()),
                "runner": digest_bytes(Path(__file__).read_bytes()),   # conversion, kernel, outputs
                "matplotlibrc": matplotlib_settings(self.directory, self.kernel_env)}

    @functools.cached_property
    def env(self) -> dict:
        """The kernel's environment as far as it can change a result, and the folders as the notebooks show them."""
        return {"env": {k: v for k, v in sorted(self.kernel_env.items()) if k.startswith(KEY_PREFIXES)},
                "shown": [self.common.shown_path(p) for p in (self.export_dir, str(self.metrics_dir))]}

    @staticmethod
    def usable(env: dict[str, str]) -> bool:
        """Whether the export and the stage metrics are local (a remote one is read by the notebooks alone)."""
        return not any("://" in env[name] for name in ("CASS_EXPORT_DIR", "CASS_METRICS_DIR"))

    def _table(self, config: str, reads: dict[str, list[str]]) -> str | None:
        """Digest of the columns of ``config`` the notebook sees (their Arrow IPC bytes, a file at a time), None
        where there is no table."""
        files = self.common.table_files(config, self.export_dir)
        if not files:
            return None
        visible = self.common.readable_columns(config, pl.scan_parquet(files).collect_schema().names(), reads)
        digest = blake3.blake3()
        for file in files:
            buffer = io.BytesIO()
            pl.read_parquet(file, columns=visible).write_ipc(buffer, compression="uncompressed")
            digest.update(digest_bytes(buffer.getvalue()).encode())
        return digest.hexdigest()

    def _metrics(self, reads: dict[str, list[str]]) -> dict[str, Path]:
        return {stage: path for stage in reads.get("metrics", [])
                if (path := self.metrics_dir / f"{stage}.json").is_file()}

    def action(self, path: Path, reads: dict[str, list[str]]) -> ActionSpec:
        """Running the notebook at ``path``, as an action: its inputs the notebook, the tables and the stage metrics
        it reads (a configuration without a table is not among them), by digest."""
        tables = {f"table:{config}": digest for config in sorted(reads) if config != "metrics"
                  if (digest := self._table(config, reads)) is not None}
        metrics = {f"metrics:{stage}": digest_bytes(p.read_bytes()) for stage, p in self._metrics(reads).items()}
        return ActionSpec("cass", "analysis-notebook", self.identity,
                          inputs={"notebook": digest_bytes(path.read_bytes()), **tables, **metrics},
                          outputs=NOTEBOOK_OUTPUTS, env={**self.env, "reads": reads})

    def view(self, reads: dict[str, list[str]], scratch: Path) -> dict[str, str]:
        """The environment that shows a notebook only what ``reads`` names: the tables' columns through ``_common``,
        and a metrics folder in ``scratch`` holding copies of the declared stages' metrics alone."""
        folder = scratch / "metrics_in"
        folder.mkdir(parents=True, exist_ok=True)
        for stage, path in self._metrics(reads).items():
            shutil.copyfile(path, folder / f"{stage}.json")
        return {self.common.READS_VARIABLE: json.dumps(reads), "CASS_METRICS_DIR": str(folder),
                "CASS_METRICS_SHOWN": str(self.metrics_dir)}

    def outputs(self, record: ActionRecord) -> dict[str, bytes]:
        return {name: self.store.get(digest) for name, digest in record.outputs.items()}


def notebook_outputs(path: Path, executed_dir: Path, scratch: Path) -> dict[str, bytes]:
    """What a notebook run wrote, by name: ``executed.ipynb``, ``figures/<file>``, ``plots/<file>`` and its metrics
    section (``metrics.json``, where it wrote one)."""
    found = {"executed.ipynb": (executed_dir / f"{path.stem}.ipynb").read_bytes()}
    for kind in ("figures", "plots"):
        if (scratch / kind).is_dir():
            found.update((f"{kind}/{p.name}", p.read_bytes()) for p in sorted((scratch / kind).iterdir()))
    if (scratch / "metrics.json").is_file():
        found["metrics.json"] = (scratch / "metrics.json").read_bytes()
    return found


def longest_first(paths: list[Path], durations: dict[str, float]) -> list[Path]:
    """``paths`` by their last run's seconds, longest first (unknown ones first, then by name): with
    several notebooks per worker, the longest one no longer starts last."""
    return sorted(paths, key=lambda p: (-durations.get(p.name, float("inf")), p.name))


def library_imports(path: Path) -> list[str]:
    """The modules the notebook at ``path`` imports at its top level that a kernel may load before it runs
    (:meth:`NotebookKernel.preload`): not the notebooks' helpers (``_*``, imported afresh under each notebook's
    environment), not relative imports, and not matplotlib, whose backend the helpers choose before pyplot is
    imported. They are loaded under the kernel's environment, before anything the notebook does first (a
    ``sys.path`` entry it adds is not seen). Empty for a notebook that does not parse (it reports that when it
    runs)."""
    try:
        body = ast.parse(path.read_text(), filename=str(path)).body
    except (SyntaxError, ValueError):
        return []
    names = [alias.name for node in body if isinstance(node, ast.Import) for alias in node.names]
    names += [node.module for node in body if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module]
    return [name for name in dict.fromkeys(names) if not name.startswith("_") and name.split(".")[0] != "matplotlib"]


def run_notebooks(paths: list[Path], env: dict[str, str], timeout: int, jobs: int,
                  memo: NotebookMemo | None = None) -> dict:
    """Execute ``paths`` on ``jobs`` workers, each with one :class:`NotebookKernel`, longest first by the
    durations kept in ``CASS_CACHE``, each notebook writing its figures, tables and metrics section to a folder of
    its own; then put every notebook's outputs in place (``env``'s figures and plots folders, the executed
    notebooks' folder) and return their merged sections. With ``memo``, a notebook whose inputs are unchanged is not
    run: its kept outputs are put in place, and every notebook run is kept. While the memo's keys are computed, the
    kernels of up to one worker per core but one (one kernel on 2 cores: a core is left to the keys) start, each
    importing the libraries of the notebook it takes first if that one is to run; the other workers' kernels start
    with their first notebook. With many cores and few notebooks to run, some kernels start for nothing.

    Raises the ``AnalysisError`` of the first notebook (in name order) that failed, after all have run and the
    others' outputs are in place."""
    executed_dir = Path(env["CASS_EXECUTED_DIR"])
    durations_file = machine_cache("analysis") / "notebook_seconds.json"
    try:
        durations = json.loads(durations_file.read_text())
    except (OSError, ValueError):   # first run on this machine, or a file another run is writing
        durations = {}
    if not isinstance(durations, dict):
        durations = {}
    order = longest_first(paths, durations)
    todo: list[Path] = []   # the notebooks to run, longest first
    taking = threading.Lock()
    decided = threading.Event()   # set once every notebook to run is in ``todo``

    def take(preferred: Path) -> Path | None:
        """The next notebook for a worker: ``preferred`` (whose imports its kernel preloaded) if it is to run."""
        with taking:
            return todo.pop(todo.index(preferred) if preferred in todo else 0) if todo else None
    errors: dict[Path, AnalysisError] = {}
    reads: dict[Path, dict[str, list[str]]] = {}
    with tempfile.TemporaryDirectory(prefix="cass-analysis-") as scratch_dir:
        scratch = {path: Path(scratch_dir) / path.stem for path in paths}

        def run(path: Path, kernel: NotebookKernel) -> None:
            start = time.monotonic()
            own = env | {"CASS_ANALYSIS_METRICS": str(scratch[path] / "metrics.json"),
                         "CASS_FIGURES_DIR": str(scratch[path] / "figures"),
                         "CASS_PLOTS_DIR": str(scratch[path] / "plots"),
                         **(memo.view(reads[path], scratch[path]) if memo else {})}
            try:
                execute_notebook(path, executed_dir, own, timeout, kernel)
            except NotebookSkipped:   # its metrics section says so
                return
            except AnalysisError as error:
                errors[path] = error
                return
            durations[path.name] = round(time.monotonic() - start, 2)

        def worker(first: Path, early: bool) -> None:
            kernel = NotebookKernel(env)
            try:
                try:
                    if early:
                        kernel.preload(first.parent, library_imports(first))
                except Exception:   # only a head start: the notebook then starts a kernel of its own
                    kernel.discard()
                decided.wait()
                while (path := take(first)) is not None:
                    run(path, kernel)
            finally:
                kernel.close()

        count = max(1, min(jobs, len(paths)))
        with ThreadPoolExecutor(max_workers=count) as pool:
            early = max(1, (os.cpu_count() or 1) - 1)   # one core left to computing the keys
            try:
                workers = [pool.submit(worker, first, number < early) for number, first in enumerate(order[:count])]
                reads.update({path: declared_reads(path) for path in paths} if memo else {})
                actions = {path: memo.action(path, reads[path]) for path in paths} if memo else {}
                kept = {path: record for path in paths
                        if memo and (record := memo.cache.lookup(actions[path])) is not None}
                todo.extend(path for path in order if path not in kept)
            finally:
                decided.set()
            for future in workers:
                future.result()
        try:
            write_json(durations_file, durations)
        except OSError as error:   # only an ordering hint: a read-only or full cache is no failure
            print(f"analyze: notebook durations not kept ({error})", file=sys.stderr)
        outputs = {}
        for path in paths:
            if path in kept:
                outputs[path] = memo.outputs(kept[path])
            elif path not in errors:
                outputs[path] = notebook_outputs(path, executed_dir, scratch[path])
                if memo:
                    memo.cache.record(actions[path], outputs[path], stderr=None)
        merged = place_outputs(outputs, env)
    for path in paths:
        if path in errors:
            raise errors[path]
    return merged


def place_outputs(outputs: dict[Path, dict[str, bytes]], env: dict[str, str]) -> dict:
    """Write each notebook's outputs (:func:`notebook_outputs`) to the folders ``env`` names; return the merged
    metrics sections. Two notebooks writing one file name is an error naming both."""
    folders = {"figures": Path(env["CASS_FIGURES_DIR"]), "plots": Path(env["CASS_PLOTS_DIR"])}
    writers: dict[Path, Path] = {}
    files: dict[Path, bytes] = {}
    merged: dict = {}
    for path, found in outputs.items():
        for name, data in found.items():
            if name == "metrics.json":
                merged.update(json.loads(data))
                continue
            kind, _, file = name.partition("/")
            target = Path(env["CASS_EXECUTED_DIR"]) / f"{path.stem}.ipynb" if name == "executed.ipynb" \
                else folders[kind] / file
            if (other := writers.setdefault(target, path)) != path:
                raise AnalysisError(f"notebooks {other.name} and {path.name} both write {target.name}")
            files[target] = data
    for target, data in files.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return merged
