"""Every source of CUDA files made samples in the store, with provenance (stage ``ingest``:
:mod:`cass.stages.ingest`)."""

from __future__ import annotations

import fnmatch
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml
from tqdm import tqdm

from cass.engine.stage_work import CHUNK_ROWS
from cass.pipeline.manifests import FILES_DTYPE, StageOutput, sample_id
from cass.sources.build_context import BuildContext, BuildContexts
from cass.sources.configure import configure_tree
from cass.sources.copyright import Copyright, license_type
from cass.sources.debian import COMPLETE_MARK, DebianArchive, FetchError
from cass.sources.domains import DomainLabeler
from cass.sources.includes import Includes, TreeIndex, included_units, resolve_includes
from cass.sources.repositories import CloneError, checkout
from cass.sources.runspecs import UNIT_SUFFIXES, RunSpec, discover
from cass.sources.screen import Rejected, check_size, screen
from cass.text.cuda import main_parameters, strip_comments_and_strings
from store import Store

RUN_SPEC_DTYPE = pl.Struct({"source": pl.String, "workdir": pl.String, "arg_sets": pl.List(pl.List(pl.String)),
                            "units_source": pl.String, "missing_inputs": pl.List(pl.String), "timeout_s": pl.Float64})
"""How a file with a ``main`` is run (:class:`cass.sources.runspecs.RunSpec`; paths are the tree's, like ``files``);
null for other files. ``run_inputs`` are the data files laid out for its runs, ``units`` the other units it links
with and ``unit_files`` their files (the units and their headers that ``files`` lacks)."""

SCHEMA = {
    "sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
    "files": FILES_DTYPE, "include_dirs": pl.List(pl.String), "unresolved_includes": pl.List(pl.String),
    "include_conflicts": pl.List(pl.String), "configured_headers": pl.List(pl.String),
    "build_context": pl.String, "build_flags": pl.List(pl.String), "bytes": pl.Int64,
    "source_encoding": pl.String,
    "repository": pl.String, "revision": pl.String, "license_type": pl.String,
    "detected_licenses": pl.List(pl.String), "stars": pl.Int64,
    "run_spec": RUN_SPEC_DTYPE, "run_inputs": FILES_DTYPE, "units": pl.List(pl.String), "unit_files": FILES_DTYPE,
}
CONFIGURED_SCHEMA = {
    "origin": pl.String, "path": pl.String, "template": pl.String, "style": pl.String, "digest": pl.String,
    "set": pl.List(pl.String), "unset": pl.List(pl.String),
}
"""``data/ingest/configured.parquet``: every configured header, its template and the variables
it used (set by the parameters, or left off/empty)."""
BUILD_CONTEXTS_SCHEMA = {
    "tree": pl.String, "project": pl.String, "source": pl.String, "status": pl.String, "exit_code": pl.Int64,
    "log": pl.String, "files": pl.Int64, "headers": pl.Int64, "system": pl.String,
}
"""``data/ingest/build_contexts.parquet``: every configure step a tree's build took (:mod:`cass.sources.build_context`),
whether it succeeded, its log's digest, how many files it listed and headers it wrote."""
PROVENANCE = ("repository", "revision", "license_type", "detected_licenses", "stars")


class Ingest:
    """Turns files into sample rows (stored, screened, labelled) and records drops."""

    def __init__(self, store: Store, params: dict, out: StageOutput):
        self.store = store
        self.screen_params = params["filter"]
        self.build_params = params["build_context"]
        self.build_statuses: list[dict] = []
        self.labeler = DomainLabeler.load(Path(params["domains"]["keywords_file"]))
        self.out = out
        self.rows: list[dict] = []
        self.configured: list[dict] = []
        self.not_selected: dict[str, int] = {}

    def add(self, identity: dict, files: list[tuple[str, str, bytes]], provenance: dict,
            declared_encoding: str | None = None, includes: Includes | None = None,
            configured: list[str] | tuple[str, ...] = (), run: dict | None = None,
            build: BuildContext | None = None) -> None:
        """One sample: ``files`` are (layout path, name for messages, bytes), the main file first."""
        self.out.rows_in += 1
        try:
            texts = [screen(data, name, self.screen_params, declared_encoding) for _, name, data in files]
        except Rejected as rejected:
            self.out.drop(identity, rejected.reason, str(rejected))
            return
        stored = [{"path": layout_path, "digest": self.store.put(text.data)}
                  for (layout_path, _, _), text in zip(files, texts, strict=True)]
        includes = includes or Includes(headers=[], include_dirs=["."], unresolved=[], conflicts=[])
        build = build or BuildContext()
        self.rows.append({
            **identity, **dict.fromkeys(PROVENANCE), **provenance,
            "domain": self.labeler.label(texts[0].data.decode()),
            "files": stored,
            "include_dirs": includes.include_dirs,
            "unresolved_includes": includes.unresolved,
            "include_conflicts": includes.conflicts,
            "configured_headers": list(configured),
            "build_context": build.source,
            "build_flags": list(build.flags),
            "bytes": len(texts[0].data),
            "source_encoding": texts[0].encoding,
            "run_spec": None, "run_inputs": [], "units": [], "unit_files": [], **(run or {}),
        })

    def tree(self, root: Path, origin: str, extensions: list[str], prefix: str = "",
             provenance: dict | Callable[[str], dict] | None = None, select: Sequence[str] = (), limit: int = 0,
             configure: Mapping[str, object] | None = None, run_specs: Path | None = None,
             system_root: Path | None = None, packaging: Path | None = None) -> None:
        """Every file of a tree with one of ``extensions`` (those matching a ``select`` glob, the
        first ``limit`` by path when set), with its headers and include dirs; ``provenance`` is
        fixed or a function of the file's path; the tree's configure-time headers are made from
        their templates with ``configure`` values (None: no configuring); a file with a ``main`` gets its run spec
        (from ``run_specs``, a YAML file, else the tree's build files); its configure steps see ``system_root``'s
        system where given (:mod:`toolchains.build_root`); ``packaging``: a Debian package's ``debian/`` (its
        tarball, or the tree's own folder), whose configure step the tree then has
        (:mod:`cass.sources.build_context`)."""
        index = TreeIndex.scan(root)
        runs = ProgramTree(self.store, index, run_specs)
        for rel in sorted(index.outside_links):
            if Path(rel).suffix in extensions:
                self.out.rows_in += 1
                self.out.drop(self._identity(origin, prefix + rel), "symlink_outside",
                              f"{root / rel} points outside {root}; not followed")
        candidates = sorted(r for r in index.files if Path(r).suffix in extensions)
        mains = [r for r in candidates if not select or any(fnmatch.fnmatchcase(r, g) for g in select)]
        mains = mains[:limit] if limit else mains
        builds = BuildContexts(index, self.store, self.build_params, configure, f"{origin}:{prefix or root}",
                               system_root, packaging)
        builds.prepare(mains)
        self.build_statuses += builds.statuses()
        if configure is not None:   # the templates of projects a configure step did not make real headers for
            self._configure(index, origin, prefix, configure, skip=builds.made_by_build)
        if len(mains) < len(candidates):
            self.not_selected[origin] = self.not_selected.get(origin, 0) + len(candidates) - len(mains)
        left_out = set(candidates) - set(mains)   # a unit whose includer select/limit leaves out is compiled alone
        included = {u: by for u, by in included_units(index, mains).items() if by not in left_out}
        for rel in tqdm(mains, desc=f"ingest {origin}:{prefix or root}", unit="file", disable=len(mains) < 200):
            identity = self._identity(origin, prefix + rel)
            if rel in included:
                self.out.rows_in += 1
                self.out.drop(identity, "included_unit", f"{prefix}{rel} is part of {prefix}{included[rel]}, "
                              "which #includes it: compiled with it, not alone")
                continue
            try:
                check_size(index.files[rel].stat().st_size, str(root / rel), self.screen_params)
                build = builds.of(rel)
                found = resolve_includes(index, rel, build.include_dirs)
                files = [(path, str(root / index.generated.get(path, path)), index.read(path))
                         for path in (rel, *found.headers)]
            except Rejected as rejected:
                self.out.rows_in += 1
                self.out.drop(identity, rejected.reason, str(rejected))
                continue
            except OSError as exc:
                self.out.rows_in += 1
                self.out.drop(identity, "unreadable", f"{exc.filename}: {exc.strerror}")
                continue
            fixed = provenance(rel) if callable(provenance) else provenance or {}
            configured = [h for h in found.headers if index.generated.get(h, h) != h]   # made from a template
            self.add(identity, files, fixed, includes=found, configured=configured,
                     run=runs.columns(rel, [path for path, _, _ in files], build.include_dirs), build=build)

    def _configure(self, index: TreeIndex, origin: str, prefix: str, values: Mapping[str, object],
                   skip: Callable[[str], bool]) -> None:
        """Add the tree's configured headers to ``index`` (but those ``skip`` says a real configure step made) and
        record how each was made."""
        for header, (template, made) in configure_tree(index.files.keys(), index.read, values).items():
            if skip(header):
                continue
            data = made.text.encode()
            index.add_generated(header, data, template)
            self.configured.append({
                "origin": origin, "path": prefix + header, "template": prefix + template, "style": made.style,
                "digest": self.store.put(data), "set": list(made.used_set), "unset": list(made.used_unset),
            })

    @staticmethod
    def _identity(origin: str, path: str) -> dict:
        return {"sample_id": sample_id(origin, path), "origin": origin, "path": path}


class ProgramTree:
    """The run specs of a tree's programs, and the files they need in the store."""

    def __init__(self, store: Store, index: TreeIndex, run_specs: Path | None):
        self.store = store
        self.index = index
        self.overrides = (yaml.safe_load(run_specs.read_text()) or {}) if run_specs else {}
        self.overrides_name = str(run_specs or "")
        self._sizes: dict[str, int] | None = None
        self._included: dict[str, str] = {}
        self._code: dict[str, str] = {}
        self._has_main: dict[str, bool] = {}

    def code(self, rel: str) -> str:
        """``rel``'s source without comments and strings, kept: every program of a folder reads the folder's units."""
        if rel not in self._code:
            self._code[rel] = strip_comments_and_strings(self.index.read(rel).decode("utf-8", "replace"))
        return self._code[rel]

    def has_main(self, rel: str) -> bool:
        if rel not in self._has_main:
            self._has_main[rel] = main_parameters(self.code(rel)) is not None
        return self._has_main[rel]

    def columns(self, rel: str, files: list[str], build_dirs: Sequence[str] = ()) -> dict:
        """The run columns of ``rel`` (whose sample holds ``files``; its build's include folders ``build_dirs``):
        empty unless it defines ``main``."""
        if not self.has_main(rel):
            return {}
        if self._sizes is None:
            self._sizes = {p: len(self.index.read(p)) if p in self.index.generated else f.stat().st_size
                           for p, f in self.index.files.items()}
            self._included = included_units(self.index, [p for p in self._sizes if p.endswith(UNIT_SUFFIXES)])
        spec: RunSpec = discover(self._sizes, self.index.read, rel, self.has_main, self._included, self.overrides,
                                 self.overrides_name, self.code)
        unit_files = [p for unit in spec.units for p in (unit, *resolve_includes(self.index, unit, build_dirs).headers)]
        unit_files = list(dict.fromkeys(p for p in unit_files if p not in files))
        stored = {p: self.store.put(self.index.read(p)) for p in [*spec.inputs, *unit_files]}
        return {"run_spec": spec.row(), "units": spec.units,
                "run_inputs": [{"path": p, "digest": stored[p]} for p in spec.inputs],
                "unit_files": [{"path": p, "digest": stored[p]} for p in unit_files]}


def fetched_stack(path: Path) -> pl.DataFrame | None:
    """The manifest of the files ``fetch_stack`` downloaded (at ``path``), if that stage ran."""
    return pl.read_parquet(path) if path.exists() else None


class IngestError(RuntimeError):
    """A source cannot be read at all (a checkout or an unpacked package is gone and cannot be made again)."""


class Source(ABC):
    """Files of one source made samples by a worker: a tree, or a chunk of single files. It pickles."""

    @abstractmethod
    def add_to(self, ingest: Ingest) -> None:
        """Add this source's samples (and drops) to ``ingest``."""

    @property
    @abstractmethod
    def name(self) -> str:
        """What the source is, for messages."""


@dataclass(frozen=True)
class TreeSource(Source):
    """A local directory tree (:meth:`Ingest.tree`'s arguments)."""

    root: Path
    origin: str
    extensions: tuple[str, ...]
    prefix: str = ""
    provenance: dict | None = None
    select: tuple[str, ...] = ()
    limit: int = 0
    configure: dict | None = None
    run_specs: Path | None = None

    @property
    def name(self) -> str:
        return f"tree {self.root}"

    def add_to(self, ingest: Ingest) -> None:
        ingest.tree(self.root, self.origin, list(self.extensions), prefix=self.prefix, provenance=self.provenance,
                    select=self.select, limit=self.limit, configure=self.configure, run_specs=self.run_specs)


@dataclass(frozen=True)
class CheckoutSource(Source):
    """A checkout the ``clone_repos`` stage made (``repo``: its manifest row), at its pinned commit, with the Stack v2
    license fields of its repository (``licenses``)."""

    repo: dict
    extensions: tuple[str, ...]
    timeout_s: float
    licenses: dict
    configure: dict | None

    @property
    def name(self) -> str:
        return f"checkout {self.repo['checkout']}"

    def add_to(self, ingest: Ingest) -> None:
        repo = self.repo
        try:
            checkout(repo["url"], repo["revision"], Path(repo["checkout"]), self.timeout_s)  # no-op unless deleted
        except CloneError as exc:
            raise IngestError(f"ingest: checkout {repo['checkout']} is gone and cannot be made again: {exc}") from exc
        ingest.tree(Path(repo["checkout"]), "repos", list(self.extensions), prefix=f"{repo['name']}/",
                    provenance={"repository": repo["url"], "revision": repo["revision"], **self.licenses},
                    configure=self.configure)


@dataclass(frozen=True)
class PackageSource(Source):
    """A source package ``fetch_debian`` unpacked (``pkg``: its manifest row): each file's license from the package's
    copyright file, the package's sample selection and configure values (``archive``: ``debian_sources``)."""

    pkg: dict
    archive: dict
    extensions: tuple[str, ...]
    configure: dict | None

    @property
    def name(self) -> str:
        return f"package {self.pkg['name']} {self.pkg['version']}"

    def add_to(self, ingest: Ingest) -> None:
        pkg = self.pkg
        tree, packaging = Path(pkg["tree"]), Path(pkg["packaging"]) if pkg["packaging"] else None
        if not (tree / COMPLETE_MARK).is_file() or (packaging and not packaging.is_file()):   # caches: make them again
            try:
                DebianArchive.from_params(self.archive).fetch(pkg["name"], pkg["version"])
            except FetchError as exc:
                raise IngestError(f"ingest: {tree} is gone and cannot be made again: {exc}") from exc
        copyright_file = Copyright.parse(ingest.store.get_text(pkg["copyright"]))

        def provenance(rel: str) -> dict:
            name = copyright_file.license_of(rel)
            return {"repository": pkg["dsc_url"], "revision": pkg["version"], "license_type": license_type(name),
                    "detected_licenses": [name]}

        native = "-" not in pkg["version"].split(":")[-1]   # no Debian revision: its tree holds its debian/
        debian = tree / "debian" if native and (tree / "debian").is_dir() else packaging
        ingest.tree(tree, pkg["origin"], list(self.extensions), prefix=f"{pkg['name']}/", provenance=provenance,
                    select=pkg["paths"], limit=pkg["limit"], configure=self.configure,
                    system_root=Path(self.archive["build_root"]) if self.archive["build_root"] else None,
                    packaging=debian if pkg["build_deps"] == "installed" else None)


@dataclass(frozen=True)
class StackRows(Source):
    """Rows of ``fetch_stack``'s manifest: single files with their Stack v2 provenance."""

    rows: pl.DataFrame

    @property
    def name(self) -> str:
        return f"{self.rows.height} Stack v2 files from {self.rows['path'][0]}"

    def add_to(self, ingest: Ingest) -> None:
        for row in self.rows.iter_rows(named=True):
            provenance = {"repository": row["repo_name"], "revision": row["revision_id"],
                          "license_type": row["license_type"], "detected_licenses": row["detected_licenses"],
                          "stars": row["star_events_count"]}
            ingest.add({"sample_id": row["sample_id"], "origin": row["origin"], "path": row["path"]},
                       [(row["repo_path"].lstrip("/"), f"stack_v2:{row['path']}", ingest.store.get(row["digest"]))],
                       provenance, declared_encoding=row["src_encoding"])


@dataclass(frozen=True)
class SynthesizedRows(Source):
    """Rows of ``synthesize``'s manifest: one file each, the model that wrote it as the provenance (the template,
    persona and variables are in ``data/synthesize/requests.parquet``, by sample id)."""

    rows: pl.DataFrame

    @property
    def name(self) -> str:
        return f"{self.rows.height} synthesized programs from {self.rows['path'][0]}"

    def add_to(self, ingest: Ingest) -> None:
        for row in self.rows.iter_rows(named=True):
            model = json.loads(row["model"])
            ingest.add({"sample_id": row["sample_id"], "origin": row["origin"], "path": row["path"]},
                       [(row["path"], f"synthetic:{row['path']}", ingest.store.get(row["digest"]))],
                       {"repository": f"{model['backend']}:{model.get('model') or model.get('weights')}",
                        "revision": model.get("revision"), "license_type": "model_output"})


def stack_licenses(fetched: pl.DataFrame | None) -> dict[str, dict]:
    """Per Stack v2 repository: its most common license type, every detected license, its stars
    (a checkout of a repository the Stack lists carries them to the files it did not list)."""
    if fetched is None or not fetched.height:
        return {}
    per_repo = fetched.group_by("repo_name").agg(
        pl.col("license_type").drop_nulls().mode().sort().first().alias("license_type"),
        pl.col("detected_licenses").list.explode(keep_nulls=False, empty_as_null=False).unique().sort()
        .alias("detected_licenses"),
        pl.col("star_events_count").max().alias("stars"))
    return {r.pop("repo_name"): r for r in per_repo.iter_rows(named=True)}


def cloned_repositories(path: Path, extensions: list[str], timeout_s: float, licenses: dict[str, dict],
                        configure: Callable[[dict | None], dict | None]) -> list[Source]:
    """The checkouts the ``clone_repos`` stage made (its manifest at ``path``)."""
    if not path.exists():
        return []
    return [CheckoutSource(repo, tuple(extensions), timeout_s, licenses.get(repo["name"], {}), configure(None))
            for repo in pl.read_parquet(path).iter_rows(named=True)]


def debian_packages(path: Path, params: dict, extensions: list[str],
                    configure: Callable[[dict | None], dict | None]) -> list[Source]:
    """The source packages ``fetch_debian`` unpacked (its manifest at ``path``)."""
    if not path.exists():
        return []
    return [PackageSource(pkg, dict(params["debian_sources"]), tuple(extensions),
                          configure(json.loads(pkg["configure"])))
            for pkg in pl.read_parquet(path).iter_rows(named=True)]


def file_chunks(kind: type[StackRows | SynthesizedRows], rows: pl.DataFrame | None) -> list[Source]:
    """Single-file sources in chunks of :data:`CHUNK_ROWS` rows."""
    return [] if rows is None else [kind(chunk) for chunk in rows.iter_slices(CHUNK_ROWS)]


@dataclass
class Ingested:
    """What a worker made of one source: sample rows, configured headers, configure steps (tables: made on the
    worker, where it is cheaper than on the driver), drops, files seen, files not selected."""

    rows: pl.DataFrame
    configured: pl.DataFrame
    build_contexts: pl.DataFrame
    dropped: list[dict]
    rows_in: int
    not_selected: dict[str, int]


def ingest_source(source: Source, store_root: str, params: dict, stage: str) -> Ingested:
    """One source's samples, made by a worker (``params``: ``filter``, ``domains`` and ``build_context``)."""
    out = StageOutput(stage)
    ingest = Ingest(Store(store_root), params, out)
    source.add_to(ingest)
    return Ingested(pl.DataFrame(ingest.rows, schema=SCHEMA), pl.DataFrame(ingest.configured, schema=CONFIGURED_SCHEMA),
                    pl.DataFrame(ingest.build_statuses, schema=BUILD_CONTEXTS_SCHEMA), out.dropped, out.rows_in,
                    ingest.not_selected)
