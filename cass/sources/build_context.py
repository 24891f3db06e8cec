"""Each file's compile context as its own build gives it (``build_context`` of a sample): the defines, the
language switches and the include folders its build passes, and the headers its configure step writes.

* A Makefile (``GNUmakefile``, ``makefile``, ``Makefile``) in the file's folder or above it, inside its project
  (:meth:`cass.sources.includes.TreeIndex.project_of`): the flags of every recipe in it that runs nvcc (their union,
  in order: a Makefile's targets rarely differ in them), expanded as the run specs expand them
  (:class:`cass.sources.runspecs.Makefile`, with its conditionals followed). Make itself is not run. A folder with
  no such Makefile but with variants of one (``Makefile.<platform>``, ``<platform>.makefile``: a build that asks the
  user to pick one; templates, included fragments and leftovers are not: :func:`is_makefile_variant`) takes the
  flags that every variant with an nvcc recipe passes (a flag one platform's variant sets and another's does not is
  a choice the pipeline cannot make); a folder whose variants run no nvcc is passed over.
* A CMake project (a ``CMakeLists.txt`` at the project's root, and no Makefile, or Makefile variants, with an nvcc
  recipe above the file):
  configured once
  per project in the sandbox with the NVIDIA wheels' nvcc as the CUDA compiler and no network
  (:mod:`toolchains.configure`, a cached action); each file's entry of ``compile_commands.json`` gives its flags, and
  the headers the configuration wrote become files of the tree under :data:`BUILD_DIR` (a file the configuration
  compiles nowhere finds them there by name, as any header of its tree). CMake runs only in bubblewrap's sandbox:
  without it (the rlimits mode) no project is configured. A configure that fails, or stops, leaves the project's
  files stand-alone, its log in ``data/ingest/build_contexts.parquet``.
* A Debian source package's file that neither gets: the package's own configure step (``debian/rules`` with its
  patches, on the build root's system, until ``dh_auto_configure`` has run:
  :class:`toolchains.configure.DebianConfigure`, a cached action), once per package; its compile database is taken
  as CMake's is, and the headers it wrote become files of the tree at their own paths (its build folder,
  ``obj-<triplet>``, is inside the copy). Debian builds most packages without CUDA, so its files mostly get the
  headers only (``debian-headers``), and a template is still configured by hand unless the step wrote its header.
* Otherwise the file is compiled stand-alone, as before.

Taken from a build: ``-D``/``-U`` (both sides), ``-I`` that name a folder of the tree or of the configuration's
output, ``-std`` where it asks for a newer C++ than the pipeline's flags, and nvcc's language switches
(:data:`toolchains.base.NVCC_LANGUAGE_FLAGS`: the NVIDIA side only, clang needs none). Nothing else (arches,
optimisation, warnings, host-compiler flags) is taken: the pipeline's flags decide those.
"""

from __future__ import annotations

import contextlib
import io
import json
import posixpath
import re
import shlex
import tarfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from cass.sources.includes import ROOT_DIR, TreeIndex, within
from cass.sources.runspecs import BUILD_FILES, Makefile, folder_glob, recipe_commands
from store import ActionRecord, ActionSpec, Store, canonical_json, digest_bytes
from toolchains import build_root, load_toolchains
from toolchains.base import NVCC_LANGUAGE_FLAGS, cxx_standard_rank
from toolchains.configure import BUILD, DEBIAN_SCRIPT, SCRIPT, SOURCE, CMakeConfigure, DebianConfigure
from toolchains.executor import JobResult
from toolchains.language import HEADER_SUFFIXES
from toolchains.sandbox import detect

STANDALONE = "standalone"
BUILD_DIR = "_cass_build"
"""Where the headers a configure step wrote lie in a sample's layout (beside the project's own folders; a name no
tree uses)."""
MAX_BUILD_ARCHIVE = 256 << 20
"""A configure step's headers and compile database larger than this are refused (the step counts as failed)."""

CONFIGURE_OUTPUTS = ("build.tar", "scratch.root", "configure.log")
"""What a configure step's record keeps: the archive of what it wrote, the folder it ran in, its log."""


@dataclass(frozen=True)
class BuildContext:
    """Where a file's context came from (``standalone``, ``makefile:<path>``, ``cmake:<project>``,
    ``debian:<project>``, or ``cmake-headers:``/``debian-headers:<project>`` for a file the configured build does not
    list, which gets its headers only), the flags taken from it, and its include folders (tree paths, searched
    before the resolver's own)."""

    source: str = STANDALONE
    flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()


_SWITCH = re.compile("(?<![\\w-])(" + "|".join(sorted(map(re.escape, NVCC_LANGUAGE_FLAGS), key=len, reverse=True))
                     + ")(?![\\w-])")
"""An nvcc language switch named in a build file (not inside a longer word)."""


def taken_flags(words: Iterable[str], locate: Callable[[str], str | None]) -> tuple[list[str], list[str]]:
    """(flags, include folders) of one compile command's ``words``: the defines, ``-std`` and nvcc language
    switches, and the ``-I`` folders ``locate`` finds in the tree (as tree folders; None: not the tree's)."""
    flags, dirs = [], []
    words = list(words)
    i = 0
    while i < len(words):
        word, option, value = words[i], "", None
        for prefix in ("-D", "-U", "-I", "-isystem"):
            if word == prefix and i + 1 < len(words):
                option, value, i = prefix, words[i + 1], i + 1
                break
            if word.startswith(prefix) and len(word) > len(prefix):
                option, value = prefix, word[len(prefix):]
                break
        if option in ("-D", "-U"):
            flags.append(f"{option}{value}")
        elif option and (folder := locate(value)) is not None:
            dirs.append(folder)
        elif not option and (word in NVCC_LANGUAGE_FLAGS or cxx_standard_rank(word) >= 0):
            flags.append(word)
        i += 1
    return list(dict.fromkeys(flags)), list(dict.fromkeys(dirs))


def makefile_folders(index: TreeIndex, rel: str) -> Iterator[str]:
    """``rel``'s folder and those above it, inside its project, nearest first (the root as ``""``)."""
    project = index.project_of(rel)
    folder = posixpath.dirname(rel)
    while True:
        yield folder
        if (folder or ROOT_DIR) == project or not folder:
            return
        folder = posixpath.dirname(folder)


NOT_VARIANTS = ("am", "in", "inc", "include", "mk", "orig", "bak", "old", "rej")
"""Suffixes of files beside a Makefile that are no variant of it: automake, autoconf and gettext templates, included
fragments, and an editor's or patch's leftovers (the last suffix, in lower case: ``Makefile.in.in``,
``Makefile.cuda.orig``)."""


def is_makefile_variant(name: str) -> bool:
    """Whether a file name is a Makefile for one platform or configuration (``Makefile.cuda``, ``Nvidia.makefile``),
    not a template (``Makefile.am``, ``Makefile.in``), an included fragment (``Makefile.inc``) or a leftover
    (``Makefile.orig``)."""
    stem, _, suffix = name.partition(".")
    if stem in BUILD_FILES:
        return bool(suffix) and suffix.lower().rsplit(".", 1)[-1] not in NOT_VARIANTS
    return bool(stem) and name.lower().endswith(".makefile")


def common_context(contexts: list[tuple[str, BuildContext]]) -> BuildContext:
    """One context from several Makefile variants' (by path): the flags and include folders all of them give, in the
    first one's order."""
    (_, first), *rest = contexts
    flags = tuple(f for f in first.flags if all(f in c.flags for _, c in rest))
    dirs = tuple(d for d in first.include_dirs if all(d in c.include_dirs for _, c in rest))
    return BuildContext(f"makefile:{','.join(path for path, _ in contexts)}", flags, dirs)


def makefile_context(index: TreeIndex, build: str, folders: set[str]) -> BuildContext | None:
    """The flags of every recipe line of the Makefile ``build`` that runs nvcc (None without such a line, or for a
    Makefile whose values cannot be expanded); ``folders``: the tree's (:func:`tree_folders`)."""
    here = posixpath.dirname(build) or ROOT_DIR
    names = {posixpath.relpath(p, here) for p in index.files if (posixpath.dirname(p) or ROOT_DIR) == here}
    try:
        makefile = Makefile.parse(index.read(build).decode("utf-8", "replace"), folder_glob(names), conditionals=True)
        lines = [makefile.expand(line) for recipe in makefile.recipes.values() for r in recipe for line in r]
    except ValueError:   # a value that expands without end: the Makefile says nothing usable
        return None
    words = [w for line in lines for w in _nvcc_words(line)]
    if not words:
        return None

    def locate(value: str) -> str | None:
        found = posixpath.normpath(posixpath.join(here, value))
        return found if not value.startswith("/") and found in folders else None

    flags, dirs = taken_flags(words, locate)
    return BuildContext(f"makefile:{build}", tuple(flags), tuple(dirs))


def _nvcc_words(line: str) -> list[str]:
    """The arguments of each command of a recipe line that runs nvcc."""
    return [w for words in recipe_commands(line) if words and posixpath.basename(words[0]) == "nvcc"
            for w in words[1:]]


@dataclass
class ConfiguredProject:
    """What one configure step gave: each listed file's context, the headers it wrote (layout paths), and its row of
    ``data/ingest/build_contexts.parquet`` (``source``: the step, ``cmake`` or ``debian``; ``status``: ``ok``,
    ``failed``, ``no cmake``, ``no sandbox``, ``no build root`` (``debian_sources.build_root`` names no Debian root,
    or the package's step has none), or ``stopped: <why>`` for a run that timed out or was killed, which is not
    cached)."""

    contexts: dict[str, BuildContext]
    status: dict
    headers: frozenset[str] = frozenset()

    @property
    def ok(self) -> bool:
        return self.status["status"] == "ok"


class BuildContexts:
    """The build contexts of one tree's files: :func:`makefile_context`, else its CMake project configured once,
    else (a Debian source package, ``packaging``: its Debian tarball, or a native package's own ``debian`` folder)
    the package's own configure step; each step a cached action keyed by the files it reads, the tools'
    fingerprints, the step's script and the system's identity (CMake's step: and the cache values; the package's:
    and the tarball's bytes)."""

    def __init__(self, index: TreeIndex, store: Store, params: dict, cache_values: Mapping[str, object] | None,
                 label: str, system_root: Path | None = None, packaging: Path | None = None):
        self.index, self.store, self.params, self.label = index, store, params, label
        self.system_root, self.packaging = system_root, packaging
        self.cache_values = dict(cache_values or {})
        self.projects: dict[str, ConfiguredProject | None] = {}
        self.package: ConfiguredProject | None = None
        self._folders = tree_folders(index.files)
        self._folder_contexts: dict[str, tuple[BuildContext | None] | None] = {}
        self._variants: dict[str, list[str]] | None = None
        """The Makefile variants by folder (read on the first folder without a Makefile)."""
        self._digests: dict[str, str] = {}
        self._switches: dict[str, tuple[str, ...]] = {}
        self._system = build_root.identity(system_root) if system_root is not None else None
        """The build root's identity (None: no root named, or no Debian root there), read once per tree."""

    def makefile(self, rel: str) -> BuildContext | None:
        """``rel``'s context from the nearest folder with a Makefile, or with Makefile variants that run nvcc (each
        Makefile read once)."""
        for folder in makefile_folders(self.index, rel):
            if folder not in self._folder_contexts:
                self._folder_contexts[folder] = self._folder_makefiles(folder)
            if (found := self._folder_contexts[folder]) is not None:
                return found[0]
        return None

    def _folder_makefiles(self, folder: str) -> tuple[BuildContext | None] | None:
        """The context ``folder``'s Makefile gives (None inside: it runs no nvcc), else its variants' common one;
        None: the folder has neither (the search goes on above it)."""
        prefix = f"{folder}/" if folder else ""
        if build := next((prefix + n for n in BUILD_FILES if prefix + n in self.index.files), None):
            return (makefile_context(self.index, build, self._folders),)
        if self._variants is None:
            self._variants = {}
            for path in sorted(self.index.files):
                if path not in self.index.generated and is_makefile_variant(posixpath.basename(path)):
                    self._variants.setdefault(posixpath.dirname(path), []).append(path)
        found = [(p, c) for p in self._variants.get(folder, [])
                 if (c := makefile_context(self.index, p, self._folders)) is not None]
        return (common_context(found),) if found else None

    def prepare(self, mains: Iterable[str]) -> None:
        """Configure the CMake projects of ``mains`` that no Makefile covers, and the Debian package where such a
        file's CMake project did not configure (``build_context.cmake`` turns both off); the headers they write join
        the tree."""
        for rel in mains:
            if self.makefile(rel) is not None:
                continue
            project = self.index.project_of(rel)
            if project not in self.projects and self._cmake_lists(project):
                self.projects[project] = self._configure_cmake(project) if self.params["cmake"] else None
            cmake = self.projects.get(project)
            if self.package is None and self.packaging is not None and self.params["cmake"] and not (
                    cmake and cmake.ok):
                self.package = self._configure_package()

    def made_by_build(self, header: str) -> bool:
        """Whether a configure step made ``header`` (a template's output), so that its template is not configured by
        hand: a CMake project configured makes every header of its folders; the package's own step, which may
        configure less than a CUDA build would (Debian's switches), those it wrote (by name)."""
        if self.package is not None and posixpath.basename(header) in self.package.headers:
            return True
        return any(p is not None and p.ok and within(posixpath.dirname(header) or ROOT_DIR, f)
                   for f, p in self.projects.items())

    def of(self, rel: str) -> BuildContext:
        """``rel``'s context: its Makefile's, else its configured CMake project's, else its configured package's,
        else stand-alone. A file no compile command lists (headers only, or stand-alone) in a CMake project gets the
        nvcc language switches the project's CMake files name (:meth:`cmake_switches`)."""
        if found := self.makefile(rel):
            return found
        project = self.index.project_of(rel)
        switches = self.cmake_switches(project) if self._cmake_lists(project) else ()
        for configured in (self.projects.get(project), self.package):
            if configured is not None and configured.ok:
                return configured.contexts.get(rel) or BuildContext(
                    f"{configured.status['source']}-headers:{configured.status['project']}", switches)
        return BuildContext(flags=switches)

    def cmake_switches(self, project: str) -> tuple[str, ...]:
        """The nvcc language switches (:data:`NVCC_LANGUAGE_FLAGS`) that ``project``'s CMake files (its
        ``CMakeLists.txt`` files and ``.cmake`` modules) name, in a fixed order (read once per project): what its
        build passes nvcc where no configure step gave a file its own command."""
        if project not in self._switches:
            prefix = "" if project == ROOT_DIR else project + "/"
            named: set[str] = set()
            for path in self.index.files:
                if path.startswith(prefix) and path not in self.index.generated and (
                        path.endswith(".cmake") or posixpath.basename(path) == "CMakeLists.txt"):
                    named.update(_SWITCH.findall(self.index.read(path).decode(errors="replace")))
            self._switches[project] = tuple(sorted(named))
        return self._switches[project]

    def statuses(self) -> list[dict]:
        return [p.status for p in [*self.projects.values(), self.package] if p is not None]

    def _cmake_lists(self, project: str) -> str | None:
        path = "CMakeLists.txt" if project == ROOT_DIR else f"{project}/CMakeLists.txt"
        return path if path in self.index.files else None

    def _tree_digest(self, prefix: str) -> str:
        """The digest of the tree's own files under ``prefix`` (once per prefix: both steps of a package read it)."""
        if prefix not in self._digests:
            index = self.index
            own = (p for p in index.files if p.startswith(prefix) and p not in index.generated)
            self._digests[prefix] = digest_bytes(canonical_json(sorted((p, digest_bytes(index.read(p))) for p in own)))
        return self._digests[prefix]

    def _configure_cmake(self, project: str) -> ConfiguredProject:
        """CMake's configure step of ``project`` (:class:`toolchains.configure.CMakeConfigure`)."""
        if blocked := self._blocked(project, "cmake"):
            return blocked
        prefix = "" if project == ROOT_DIR else project + "/"
        nvidia = load_toolchains()["nvidia"]
        tool = CMakeConfigure(nvidia.cuda_home / "bin" / "nvcc", nvidia.cuda_home)
        if tool.fingerprint is None:
            return ConfiguredProject({}, self._row(project, "cmake", "no cmake"))
        return self._run_step(
            project, "cmake", ActionSpec("cass", "cmake-configure", {"cmake": tool.fingerprint, "script": SCRIPT,
                                                                     "nvcc": nvidia.fingerprint("nvcc")},
                                         inputs={"tree": self._tree_digest(prefix)}, outputs=CONFIGURE_OUTPUTS,
                                         env={"cache": self.cache_values}),
            lambda: tool.configure(self.index.root / prefix if prefix else self.index.root, self.cache_values,
                                   self.params["timeout_s"], self.system_root))

    def _configure_package(self) -> ConfiguredProject:
        """The Debian package's own configure step (:class:`toolchains.configure.DebianConfigure`), on the build
        root's system."""
        if blocked := self._blocked(ROOT_DIR, "debian"):
            return blocked
        nvidia = load_toolchains()["nvidia"]
        tool = DebianConfigure(nvidia.cuda_home / "bin" / "nvcc", nvidia.cuda_home)
        packaging = self.packaging if self.packaging.is_file() else None
        inputs = {"tree": self._tree_digest(""), **({"packaging": digest_bytes(packaging.read_bytes())}
                                                     if packaging else {})}
        return self._run_step(
            ROOT_DIR, "debian", ActionSpec("cass", "debian-configure", {"script": DEBIAN_SCRIPT,
                                                                        "nvcc": nvidia.fingerprint("nvcc")},
                                           inputs=inputs, outputs=CONFIGURE_OUTPUTS),
            lambda: tool.configure(self.index.root, packaging, self.params["timeout_s"], self.system_root))

    def _row(self, project: str, step: str, status: str) -> dict:
        """A row of ``build_contexts.parquet`` for a step of ``project`` that did not run (yet)."""
        system = f"{self.system_root}@{self._system}" if self.system_root is not None else "this machine"
        return {"tree": self.label, "project": project, "source": step, "status": status, "exit_code": None,
                "log": None, "files": 0, "headers": 0, "system": system}

    def _blocked(self, project: str, step: str) -> ConfiguredProject | None:
        """Why ``step`` cannot run here, as its result: no bubblewrap (the step runs the tree's own code: never with
        the user's rights and network), or no build root where one is named (the package's step needs one)."""
        if detect().mode != "bwrap":
            return ConfiguredProject({}, self._row(project, step, "no sandbox"))
        if (self.system_root is None and step == "debian") or (
                self.system_root is not None and self._system is None):
            return ConfiguredProject({}, self._row(project, step, "no build root"))
        return None

    def _run_step(self, project: str, step: str, action: ActionSpec, run: Callable[[], JobResult],
                  ) -> ConfiguredProject:
        """One configure step of ``project``: its record in the store (``action`` in the sandbox's mode, on the
        build root's system if one is named), else ``run`` and record it; the files it lists and the headers it
        wrote."""
        status = self._row(project, step, "failed")
        system = self._system
        action = replace(action, env={**action.env, "sandbox": detect().mode, **({"system": system} if system else {})})
        record = self.store.lookup(action.key)
        if record is None:
            result = run()
            log = result.outputs.get("configure.log", b"") + result.stderr
            if result.transient:   # says nothing about the tree: not cached, tried again next run
                return ConfiguredProject({}, {**status, "status": f"stopped: {result.transient}",
                                              "log": self.store.put(log)})
            archive = result.outputs.get("build.tar", b"")
            if len(archive) > MAX_BUILD_ARCHIVE:
                log += f"\ncass: the step wrote {len(archive)} bytes of headers, over {MAX_BUILD_ARCHIVE}\n".encode()
            ok = result.ok and len(archive) <= MAX_BUILD_ARCHIVE
            record = ActionRecord("ok" if ok else "failed", result.exit_code,
                                  {"build.tar": self.store.put(archive if ok else b""),
                                   "scratch.root": self.store.put(result.outputs.get("scratch.root", b"")),
                                   "configure.log": self.store.put(log)}, "")
            self.store.record(action.key, record)
        status.update(exit_code=record.exit_code, log=record.outputs["configure.log"])
        if record.status != "ok":
            return ConfiguredProject({}, status)
        scratch = self.store.get_text(record.outputs["scratch.root"]).strip()
        contexts, headers = _compile_database(self.index, project, step,
                                              self.store.get(record.outputs["build.tar"]), scratch)
        for path, data in headers.items():
            self.index.add_generated(path, data, path, self.index.root / path)
        return ConfiguredProject(contexts, {**status, "status": "ok", "files": len(contexts), "headers": len(headers)},
                                 frozenset(posixpath.basename(p) for p in headers))


def _compile_database(index: TreeIndex, project: str, step: str, archive: bytes, scratch: str,
                      ) -> tuple[dict[str, BuildContext], dict[str, bytes]]:
    """Each CUDA file's context (``step:project``, ``step`` being ``cmake`` or ``debian``) from a configure step's
    ``build.tar`` (the step ran in ``scratch``), and the headers it wrote at their layout paths: the build folder's
    under :data:`BUILD_DIR`, those it wrote into the project's copy (a Debian build's ``obj-<triplet>`` folder among
    them) at their own paths (where they differ from the tree's)."""
    members = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar.getmembers():
            if member.isfile() and (f := tar.extractfile(member)) is not None:
                members[member.name] = f.read()
    prefix = "" if project == ROOT_DIR else f"{project}/"
    layout = f"{prefix}{BUILD_DIR}"
    headers = {}
    for name, data in members.items():
        if not name.endswith(HEADER_SUFFIXES):
            continue
        if name.startswith(f"{BUILD}/"):
            headers[f"{layout}/{name.removeprefix(BUILD + '/')}"] = data
        elif (path := prefix + name.removeprefix(SOURCE + "/")) not in index.files or index.read(path) != data:
            headers[path] = data
    try:
        database = json.loads(members.get(f"{BUILD}/compile_commands.json", b"[]"))
    except ValueError:   # a database CMake did not write as JSON: no file's flags
        database = []
    build_folder, copy = f"{scratch}/{BUILD}", f"{scratch}/{SOURCE}"
    folders = tree_folders([*index.files, *headers])

    def tree_path(path: str) -> str | None:
        """A path of the compile database as a tree path (its build folder laid out at ``layout``)."""
        for root, laid in ((build_folder, layout), (copy, "" if project == ROOT_DIR else project)):
            if root and (path == root or path.startswith(root + "/")):
                return posixpath.normpath(posixpath.join(laid, path[len(root) + 1:])) if path != root else \
                    (laid or ROOT_DIR)
        return None

    def member(path: str) -> bytes | None:
        """A file the step archived, by its absolute path (a response file, in the build folder or the copy)."""
        path = posixpath.normpath(path)
        for root, name in ((build_folder, BUILD), (copy, SOURCE)):
            if path.startswith(root + "/"):
                return members.get(f"{name}/{path[len(root) + 1:]}")
        return None

    contexts = {}
    for entry in database if isinstance(database, list) else []:
        if not isinstance(entry, dict):
            continue
        directory = entry.get("directory", "")
        rel = tree_path(posixpath.normpath(posixpath.join(directory, entry.get("file", ""))))
        if rel is None or not rel.endswith(".cu"):
            continue
        words = entry["arguments"] if "arguments" in entry else shlex.split(entry.get("command", ""))
        expanded: list[str] = []
        for at, word in enumerate(words):
            named = words[at + 1] if word == "--options-file" and at + 1 < len(words) else \
                word[1:] if word.startswith("@") else None
            if named is not None and (data := member(posixpath.join(directory, named))) is not None:
                with contextlib.suppress(ValueError):   # an unbalanced quote: the response file gives nothing
                    expanded += shlex.split(data.decode("utf-8", "replace"))
            elif not (at and words[at - 1] == "--options-file"):
                expanded.append(word)

        def locate(value: str, directory: str = directory) -> str | None:
            found = tree_path(posixpath.normpath(posixpath.join(directory, value)))
            return found if found in folders else None

        flags, dirs = taken_flags(expanded, locate)
        contexts[rel] = BuildContext(f"{step}:{project}", tuple(flags), tuple(dirs))
    return contexts, headers


def tree_folders(paths: Iterable[str]) -> set[str]:
    """Every folder the tree ``paths`` lie in, and the folders above them (``.``: the root)."""
    found = {ROOT_DIR}
    for path in paths:
        folder = posixpath.dirname(path)
        while folder and folder not in found:
            found.add(folder)
            folder = posixpath.dirname(folder)
    return found
