"""Header discovery and include directories for a source file inside a directory tree.

A repository's kernels include headers from their own folder, from sibling folders, from the
repository root and from ``include/`` folders. For each source file this module finds the headers
it includes (transitively, both ``"..."`` and ``<...>`` forms that name a file of the tree) and the
ordered list of include directories (``-I``) under which the compilers find exactly those files:

* a quoted include is looked up first in the including file's own folder (the compilers do the
  same, so that folder needs no ``-I``; a sibling ``common.h`` always wins);
* otherwise, and for angle includes, in the folders the file's build names (``-I``, in their order:
  :mod:`cass.sources.build_context`), then among the folders ``D`` of its project with ``D/<name>`` a
  file; a folder already chosen wins, then the folder nearest to the including file (longest common
  path prefix), then the shorter, then the lexically smaller path. The project is the whole tree
  where the tree's root holds a build file, else the outermost folder above the file with a build file
  of its own: one program of a collection (a benchmark of HeCBench) never takes another's headers;
* the project's folder (the tree root, ``.``, for most trees) is always on the list: where it was
  first needed, else last.

The chosen list is then checked by replaying the compilers' search over the files that will be
laid out: an include that would find a different file than the one meant is reported as a
conflict (a safety net: the rules above only add a folder for a name no chosen folder holds).
Angle includes of standard C, C++ and POSIX headers always name the system's (a project's
compatibility copy of ``pthread.h`` does not shadow it). Angle includes that name no file of the
tree are system or library headers, unless their first folder is one of the tree's
(``<ATen/ops/add.h>`` in a tree with an ``ATen`` folder: a header the build generates) or their
name is that of a header a configure-time template of the tree makes; those and quoted ones that
name nothing are reported as unresolved. Files reached through a symlink that points outside the
tree are never read.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cass.sources.configure import configured_name
from toolchains.language import HEADER_SUFFIXES

_C_HEADERS = """assert complex ctype errno fenv float inttypes iso646 limits locale math setjmp signal stdalign
stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn string tgmath threads time uchar wchar wctype"""
_CXX_HEADERS = """algorithm any array atomic barrier bit bitset charconv chrono codecvt compare complex concepts
condition_variable coroutine deque exception execution expected filesystem format forward_list fstream functional
future initializer_list iomanip ios iosfwd iostream istream iterator latch limits list locale map memory
memory_resource mutex new numbers numeric optional ostream queue random ranges ratio regex scoped_allocator
semaphore set shared_mutex source_location span sstream stack stdexcept stop_token streambuf string string_view
syncstream system_error thread tuple type_traits typeindex typeinfo unordered_map unordered_set utility valarray
variant vector version"""
_POSIX_HEADERS = """aio arpa/inet cpio dirent dlfcn fcntl fmtmsg fnmatch ftw glob grp iconv langinfo libgen monetary
mqueue ndbm net/if netdb netinet/in netinet/tcp nl_types poll pthread pwd regex sched search semaphore spawn strings
stropts sys/ipc sys/mman sys/msg sys/resource sys/select sys/sem sys/shm sys/socket sys/stat sys/statvfs sys/time
sys/times sys/types sys/uio sys/un sys/utsname sys/wait syslog tar termios ulimit unistd utime utmpx wordexp
malloc alloca execinfo sys/syscall sys/sysinfo sys/ioctl sys/param cpuid immintrin x86intrin emmintrin xmmintrin"""
SYSTEM_HEADERS = frozenset(
    [f"{h}.h" for h in _C_HEADERS.split()] + [f"c{h}" for h in _C_HEADERS.split()] + _CXX_HEADERS.split()
    + [f"{h}.h" for h in _POSIX_HEADERS.split()])
"""Standard C, C++ and POSIX headers: an angle include of one of these names the system's header
even where the tree holds a file of that name (a compatibility copy such as
``pthread_win32/pthread.h`` must not shadow the real one)."""

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^">\n]+)[">]', re.M)
ROOT_DIR = "."


@dataclass
class TreeIndex:
    """The regular files of a tree (symlinks resolved, never followed out of the tree)."""

    root: Path
    files: dict[str, Path]
    outside_links: set[str]
    by_name: dict[str, list[str]] = field(default_factory=dict)
    header_folder_names: set[str] = field(default_factory=set)
    """names of the folders a header lies under (``ATen`` and ``core`` for ``ATen/core/Tensor.h``)"""
    template_outputs: set[str] = field(default_factory=set)
    """names of the headers the tree's configure-time templates make"""
    generated: dict[str, str] = field(default_factory=dict)
    """configured headers: path -> the template they were made from (itself: written by a configure step)"""
    build_folders: set[str] = field(default_factory=set)
    """folders holding a build file of their own (:data:`PROJECT_BUILD_FILES`)"""
    _read: dict[str, bytes] = field(default_factory=dict, repr=False)

    @classmethod
    def scan(cls, root: Path, projects: bool = True) -> TreeIndex:
        """The tree at ``root``; ``projects``: folders with a build file of their own are projects apart
        (:meth:`project_of`; off: the whole tree is one)."""
        real_root = root.resolve()
        files: dict[str, Path] = {}
        outside: set[str] = set()
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for name in names:
                path = Path(folder) / name
                rel = path.relative_to(root).as_posix()
                target = path.resolve()
                if path.is_symlink() and not target.is_relative_to(real_root):
                    outside.add(rel)
                elif target.is_file():
                    files[rel] = target
        by_name: dict[str, list[str]] = defaultdict(list)
        for rel in sorted(files):
            by_name[posixpath.basename(rel)].append(rel)
        return cls(root, files, outside, dict(by_name), _header_folder_names(files),
                   {posixpath.basename(out) for rel in files if (out := configured_name(rel))},
                   build_folders={posixpath.dirname(rel) or ROOT_DIR for rel in files
                                  if projects and posixpath.basename(rel) in PROJECT_BUILD_FILES})

    def read(self, rel: str) -> bytes:
        """A file's bytes, read once per tree (headers are shared by many sources)."""
        if rel not in self._read:
            self._read[rel] = self.files[rel].read_bytes()
        return self._read[rel]

    def project_of(self, rel: str) -> str:
        """The folder whose files ``rel`` may include: the whole tree where its root holds a build file (a
        project); else the outermost folder above ``rel`` with a build file of its own (one program of a
        collection, such as a benchmark folder of HeCBench's ``src``, with its subfolders' build files inside
        it); else the whole tree."""
        if any(name in self.files for name in ROOT_BUILD_FILES):
            return ROOT_DIR
        project, folder = ROOT_DIR, posixpath.dirname(rel)
        while folder:
            if folder in self.build_folders:
                project = folder
            folder = posixpath.dirname(folder)
        return project

    def add_generated(self, rel: str, data: bytes, template: str, origin: Path | None = None) -> None:
        """A file made from another one of the tree (a configured header from its template), or one a build's
        configure step wrote (``template`` is then ``rel`` itself, ``origin`` a path for messages): it is a file of
        the tree from now on, with ``data`` as its bytes (``files`` maps it to its template or origin,
        ``generated`` names the template)."""
        known = rel in self.files
        self.files[rel] = origin or self.files[template]
        self._read[rel] = data
        self.generated[rel] = template
        if not known:
            self.by_name.setdefault(posixpath.basename(rel), []).append(rel)
        self.header_folder_names |= _header_folder_names([rel])

    def folders_with(self, name: str) -> list[str]:
        """Folders ``D`` (``.`` for the root) such that ``D/name`` is a file of the tree."""
        found = []
        for rel in self.by_name.get(posixpath.basename(name), ()):
            if rel == name:
                found.append(ROOT_DIR)
            elif rel.endswith("/" + name):
                found.append(rel[: -len(name) - 1])
        return found


PROJECT_BUILD_FILES = ("CMakeLists.txt", "GNUmakefile", "makefile", "Makefile")
"""Build files that make their folder a project of its own."""
ROOT_BUILD_FILES = (*PROJECT_BUILD_FILES, "configure", "configure.ac", "meson.build", "setup.py")
"""Build files that, at a tree's root, make the whole tree one project."""


def within(folder: str, project: str) -> bool:
    """Whether ``folder`` (a tree folder, ``.`` for the root) lies in ``project``'s."""
    return project == ROOT_DIR or folder == project or folder.startswith(project + "/")


def _header_folder_names(paths) -> set[str]:
    """The names of the folders above every header of ``paths`` (``a/b/c.h`` -> ``a``, ``b``)."""
    return {part for rel in paths if rel.endswith(HEADER_SUFFIXES) for part in rel.split("/")[:-1]}


def project_folder(index: TreeIndex, name: str) -> bool:
    """Whether an angle include names a path under one of the tree's own header folders
    (``<ATen/ops/x.h>`` where the tree has headers under an ``ATen`` folder): a project header the
    tree does not hold, such as one generated by the build."""
    return "/" in name and name.split("/")[0] in index.header_folder_names


@dataclass
class Includes:
    """What one source file needs from its tree."""

    headers: list[str]
    include_dirs: list[str]
    unresolved: list[str]
    conflicts: list[str]


def _inside(rel: str) -> str | None:
    """A normalised tree-relative path, or None if it climbs out of the tree."""
    norm = posixpath.normpath(rel)
    return None if norm.startswith("../") or norm == ".." or norm.startswith("/") else norm


def _join(folder: str, name: str) -> str | None:
    return _inside(name if folder == ROOT_DIR else f"{folder}/{name}")


def _nearness(folder: str, includer_dir: str) -> tuple[int, int, str]:
    a = [] if folder == ROOT_DIR else folder.split("/")
    b = [] if includer_dir in ("", ROOT_DIR) else includer_dir.split("/")
    common = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common += 1
    return (-common, len(a), folder)


def _search(laid_out: set[str], includer: str, quoted: bool, name: str, include_dirs: list[str]) -> str | None:
    """The file the compilers find for one include, over the files that will be laid out."""
    folders = ([posixpath.dirname(includer) or ROOT_DIR] if quoted else []) + include_dirs
    for folder in folders:
        candidate = _join(folder, name)
        if candidate in laid_out:
            return candidate
    return None


def resolve_includes(index: TreeIndex, main: str, build_dirs: Sequence[str] = ()) -> Includes:
    """The headers ``main`` reaches in its tree, and the include directories that find them: the folders
    ``build_dirs`` its build names first (searched in that order, wherever they lie in the tree), then folders
    of its project (:meth:`TreeIndex.project_of`) as needed; the project's folder is always on the list."""
    project = index.project_of(main)
    include_dirs: list[str] = list(dict.fromkeys(build_dirs))
    wanted: list[tuple[str, bool, str, str]] = []  # (includer, quoted, name, intended file)
    unresolved: set[str] = set()
    seen = {main}
    queue = [main]
    while queue:
        current = queue.pop(0)
        here = posixpath.dirname(current) or ROOT_DIR
        for kind, raw in _INCLUDE.findall(index.read(current)):
            name = raw.decode("utf-8", "replace").strip()
            quoted = kind == b'"'
            target = None
            own = _join(here, name) if quoted else None
            if own in index.files:
                target = own
            elif not quoted and name in SYSTEM_HEADERS:
                continue
            else:
                folders = [d for d in index.folders_with(name) if d in include_dirs or within(d, project)]
                if folders:
                    folder = next((d for d in include_dirs if d in folders), None) or \
                        min(folders, key=lambda d: _nearness(d, here))
                    if folder not in include_dirs:
                        include_dirs.append(folder)
                    target = _join(folder, name)
            if target is None:
                if quoted or project_folder(index, name) or posixpath.basename(name) in index.template_outputs:
                    unresolved.add(name)
                continue
            wanted.append((current, quoted, name, target))
            if target not in seen:
                seen.add(target)
                queue.append(target)
    if project not in include_dirs:
        include_dirs.append(project)
    conflicts = sorted({   # replay the compilers' search over the files that will be laid out
        f"{includer}: #include {name!r} finds {found or 'nothing'}, meant {target}"
        for includer, quoted, name, target in wanted
        if (found := _search(seen, includer, quoted, name, include_dirs)) != target
    })
    return Includes(sorted(seen - {main}), include_dirs, sorted(unresolved), conflicts)


SOURCE_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".cu", ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc", ".cl")
"""Files that may ``#include`` a translation unit of the tree."""


def included_units(index: TreeIndex, units: list[str]) -> dict[str, str]:
    """Which of ``units`` (main files: ``.cu``, ``.cl``) another file of the tree ``#include``s, directly or
    through its headers: unit -> the first such file by path. Such a unit is part of its includer's
    translation unit, not one of its own."""
    suffixes = tuple({posixpath.splitext(u)[1] for u in units})
    if not suffixes:
        return {}
    names = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"][^">\n]+(?:' +
                       b"|".join(re.escape(s.encode()) for s in suffixes) + rb')[">]', re.M)
    wanted, found = set(units), {}
    for rel in sorted(index.files):
        if rel.endswith(SOURCE_SUFFIXES) and rel not in index.generated and names.search(index.read(rel)):
            for reached in resolve_includes(index, rel).headers:
                if reached in wanted and reached != rel:
                    found.setdefault(reached, rel)
    return found
