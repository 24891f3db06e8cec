"""The vendor toolchain interface: what a compile stage needs to know about a vendor's tools.

A toolchain turns "compile this sample for these archs" into :class:`Target` plans made of
:class:`Step` tool invocations, knows how to start its tools (a :class:`Launcher`), and gives a
fingerprint per tool (versions plus hashes of the binaries, headers and device libraries) that
enters every action key built from it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import blake3

from store.machine_cache import machine_cache
from toolchains.executor import Launcher
from toolchains.language import is_opencl

ENV_ALLOWLIST = (
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "HIPCC_COMPILE_FLAGS_APPEND",
    "HIPCC_LINK_FLAGS_APPEND",
    "ROCM_PATH",
    "HIP_DEVICE_LIB_PATH",
    "HIP_CLANG_PATH",
)
"""Environment variables that change what the compilers do; they are passed to tools and
enter the fingerprint. Nothing else from the caller's environment reaches a tool."""


NVCC_LANGUAGE_FLAGS = frozenset({"--extended-lambda", "-extended-lambda", "--expt-extended-lambda",
                                 "-expt-extended-lambda", "--expt-relaxed-constexpr", "-expt-relaxed-constexpr"})
"""nvcc's switches of the CUDA language a build may pass (clang takes such code as it is): the NVIDIA side only."""
_CXX_STANDARD = re.compile(r"^--?std[= ]?(?:c|gnu)\+\+([0-9a-z]+)$")
_CXX_ORDER = ("98", "03", "0x", "11", "1y", "14", "1z", "17", "2a", "20", "2b", "23", "2c", "26")


def cxx_standard_rank(flag: str) -> int:
    """How new the C++ of a ``-std=`` flag is (-1: no C++ standard flag)."""
    match = _CXX_STANDARD.match(flag)
    return _CXX_ORDER.index(match.group(1)) if match and match.group(1) in _CXX_ORDER else -1


def passed_env() -> dict[str, str]:
    """The allowlisted environment variables that are set in this process."""
    return {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}


@dataclass(frozen=True)
class Step:
    """One tool run inside a target. The first step of a target sees the sample's files; a later
    step sees only the outputs of the step before it that it reads: ``reads``, or where that is None,
    those its arguments name."""

    tool: str
    args: tuple[str, ...]
    outputs: tuple[str, ...]
    stdout_as: str | None = None
    reads: tuple[str, ...] | None = None


EXECUTABLE = "program"
"""The artifact name of every executable a toolchain builds (a program target's output): packs leave these out, since
builds are byte-reproducible and what was learned from running one is keyed by its digest."""


@dataclass(frozen=True)
class Target:
    """An artifact to build for one sample: ``kind`` is ``"host"`` or ``"device"``, ``arch`` the
    arch it was built for, ``artifact`` the output (of the last step) that is the result."""

    kind: str
    arch: str
    steps: tuple[Step, ...]
    artifact: str

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.arch}"


@dataclass(frozen=True)
class ToolStatus:
    """What `cass toolchains` reports for one tool."""

    vendor: str
    tool: str
    path: str | None
    version: str | None
    problem: str | None


def require_archs(archs: list[str], vendor: str) -> None:
    """Refuse an empty arch list (the host step is built for the first arch)."""
    if not archs:
        raise ValueError(f"params.yaml {vendor}.archs is empty: list at least one arch")


@dataclass(frozen=True)
class ToolchainReport:
    """One host's installation of a vendor toolchain, as facts: what a driver elsewhere needs to
    plan and key that host's actions (tool statuses with fingerprints, the installation's layout,
    its library headers) without having the toolchain itself."""

    vendor: str
    tools: dict[str, dict] = field(default_factory=dict)
    """tool -> {"path", "version", "fingerprint", "problem"}"""
    layout: dict = field(default_factory=dict)
    include_root: str = ""
    missing_libraries: tuple[str, ...] = ()
    headers: dict = field(default_factory=dict)
    """the installation's :meth:`Toolchain.header_index`"""

    def fingerprints(self) -> dict[str, str | None]:
        return {tool: t["fingerprint"] for tool, t in self.tools.items()}


class ToolchainMissingError(RuntimeError):
    """A tool the pipeline needs is not installed; the message says how to install it."""


def _walk(top: str, rel: str = "") -> Iterator[tuple[str, list[os.DirEntry]]]:
    """(folder relative to ``top`` with a trailing slash, or "", its entries that are not folders, sorted by name),
    top-down with sub-folders in sorted order; symlinked folders are not followed (as ``os.walk`` lists them; an
    unreadable folder lists nothing)."""
    try:
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    folders = [e for e in entries if _is_dir(e)]
    yield rel, [e for e in entries if not _is_dir(e)]
    for folder in folders:
        if not folder.is_symlink():
            yield from _walk(folder.path, f"{rel}{folder.name}/")


def _is_dir(entry: os.DirEntry) -> bool:
    try:
        return entry.is_dir()
    except OSError:
        return False


BYTECODE_CACHE = "__pycache__"
"""A folder of Python bytecode, which a wheel's include folder may hold (nvidia-cuda-cccl-cu12's): not the toolchain,
and its files hold their sources' install times, so two installs of the same wheels would digest apart."""


def _files(top: Path) -> list[tuple[str, str]]:
    """(name relative to ``top``, path) of ``top`` itself when a file, else of every file in its tree but Python's
    bytecode caches, in digest order."""
    if top.is_file():
        return [("", str(top))]
    return sorted(((rel + e.name, e.path) for rel, entries in _walk(os.fspath(top)) for e in entries
                   if _is_file(e) and BYTECODE_CACHE not in rel.split("/")), key=lambda f: f[0].split("/"))


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:   # a symbolic link loop, a file it may not look at: as os.path.isfile, not a file
        return False


DIGEST_SCHEME = 1
"""Enters every memo key: a change to how :func:`digest_paths` hashes must bump it, or warm memos would
answer with digests of the old scheme."""

VERSION_SCHEME = 1
"""Enters every key of a memoised version: a change to what :meth:`Toolchain.version` keeps must bump it."""


def _stat_key(listing: list[tuple[Path, list[tuple[str, str]]]]) -> tuple[str, int]:
    """BLAKE3 over where each file is and what ``stat`` says of it (size, inode, modification and change
    times), and the newest of those times (ns): equal keys mean unchanged bytes once the files are older
    than the clock's granularity (git's index makes the same assumption, with the same caveat)."""
    h = blake3.blake3(f"scheme {DIGEST_SCHEME}\n".encode())
    newest = 0
    for top, files in listing:
        h.update(str(top.absolute()).encode() + b"\0")
        for rel, path in files:
            st = os.stat(path)
            h.update(f"{rel}\0{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}\n".encode())
            newest = max(newest, st.st_mtime_ns, st.st_ctime_ns)
    return h.hexdigest(), newest


class MachineMemo:
    """Text answers kept in this machine's cache (``CASS_CACHE``) under keys that name everything the answer
    depends on: tree digests by :func:`_stat_key` (a toolchain whose files are unchanged is not read again: nvcc's
    tree alone is hundreds of MB), tools' versions by :meth:`Toolchain.identity`. Losing the file, or a write
    another process wins, costs only a recomputation. ``settle_s``: :func:`digest_paths` keeps no digest of a
    tree with a file changed in the last ``settle_s`` seconds (a second change within one tick of the file
    system's clock could leave its ``stat`` as it was)."""

    LIMIT = 512   # entries kept, newest last

    def __init__(self, path: Path, settle_s: float = 2.0):
        self.path = path
        self.settle_ns = int(settle_s * 1e9)

    def _load(self) -> dict[str, str]:
        try:
            entries = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return entries if isinstance(entries, dict) else {}

    def get(self, key: str) -> str | None:
        return self._load().get(key)

    def put(self, key: str, value: str) -> None:
        entries = self._load()
        entries.pop(key, None)
        entries[key] = value
        kept = dict(list(entries.items())[-self.LIMIT:])
        try:   # a read-only or full cache: the digest is still right, only not kept
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        except OSError:
            return
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(kept, indent=0) + "\n")
            os.replace(tmp, self.path)
        except OSError:
            Path(tmp).unlink(missing_ok=True)


def digest_paths(paths: list[Path], memo: MachineMemo | None = None) -> str:
    """BLAKE3 over the contents of files and directory trees (files in path order).

    Names enter relative to each given path, so the digest does not depend on where a
    toolchain is installed (two clones, two roots with the same packages hash the same).
    Read once per state of the files: later calls are answered by ``memo`` (default: this
    machine's :class:`MachineMemo`) while no file's ``stat`` changed. A digest is kept only when
    the files' ``stat`` is the same after reading them as before, and none changed recently."""
    memo = memo or MachineMemo(machine_cache("toolchains") / "identity_digests.json")
    listing = [(top, _files(top)) for top in paths]
    key, newest = _stat_key(listing)
    if digest := memo.get(key):
        return digest
    h = blake3.blake3()
    for top, files in listing:
        for rel, path in files:
            h.update(f"{top.name}/{rel}".encode() + b"\0")
            with open(path, "rb") as fh:
                while chunk := fh.read(1 << 22):
                    h.update(chunk)
            h.update(b"\0")
    digest = h.hexdigest()
    if _stat_key(listing)[0] == key and newest < time.time_ns() - memo.settle_ns:
        memo.put(key, digest)
    return digest


def digest_listing(paths: list[Path]) -> str:
    """BLAKE3 over the relative names, sizes and modification times of every file under ``paths``
    (dpkg gives installed files their package's times, so equal package sets list the same)."""
    h = blake3.blake3()
    for top in paths:
        for rel, entries in _walk(os.fspath(top)):
            for entry in entries:
                try:
                    st = entry.stat()
                except OSError:
                    continue
                h.update(f"{rel}{entry.name}\0{st.st_size}\0{int(st.st_mtime)}\n".encode())
    return h.hexdigest()


class Toolchain(ABC):
    """A vendor's compilers and tools, as installed on one host."""

    vendor: str
    install_hint: str
    library_headers: tuple[tuple[str, str], ...] = ()
    """(vendor library, a header of it), relative to :meth:`include_root` (what `cass toolchains`
    checks: without a library's headers every file using it fails as ``missing_header``)."""

    def __init__(self, launcher: Launcher | None):
        self.launcher = launcher
        self._fingerprints: dict[str, str] = {}
        self._versions: dict[str, str] = {}
        self._identities: dict[str, str] = {}
        self._layout: dict | None = None
        self._headers: dict | None = None

    @classmethod
    def from_report(cls, report: ToolchainReport) -> Toolchain:
        """The toolchain of another host, known from its report: it plans targets and keys
        actions exactly as that host's own toolchain object would, and runs nothing here."""
        vendor_class = next(c for c in cls.__mro__ if not issubclass(c, ReportedToolchain))
        reported = type(f"Reported{vendor_class.__name__}", (ReportedToolchain, vendor_class),
                        {"__module__": vendor_class.__module__})
        tc = reported.__new__(reported)
        Toolchain.__init__(tc, None)
        tc.reported = report
        return tc

    def __reduce__(self) -> tuple:
        """A toolchain goes to another process (a stage host) as its report: there it plans and keys actions as it
        does here, and runs nothing."""
        vendor_class = next(c for c in type(self).__mro__ if not issubclass(c, ReportedToolchain))
        return vendor_class.from_report, (getattr(self, "reported", None) or self.report(),)

    def layout(self) -> dict:
        """Facts of this installation that planning needs (JSON values), looked up once."""
        if self._layout is None:
            self._layout = self.local_layout()
        return self._layout

    def local_layout(self) -> dict:
        """Look up the installation's planning facts (default: none)."""
        return {}

    def header_index(self) -> dict:
        """What the installation's own headers say to the preprocessor (:mod:`toolchains.headers`: ``headers``,
        and what the vendor adds), looked up once."""
        if self._headers is None:
            self._headers = self.local_header_index()
        return self._headers

    def local_header_index(self) -> dict:
        """Index the installation's headers (default: none)."""
        return {}

    def run_tool(self, tool: str, args: Sequence[str]) -> str:
        """A tool's output (standard output, then standard error) for ``args``, run in its sandbox outside any
        action: facts of the installation itself, such as the macros a compiler predefines."""
        argv = self.launcher.argv(tool, tuple(args), Path("/"))
        proc = subprocess.run(argv, capture_output=True, text=True, env=self.launcher.env(), timeout=120, check=False)
        if proc.returncode:
            raise ToolchainMissingError(f"{self.vendor} tool {tool} {' '.join(args)} failed ({proc.returncode}): "
                                        f"{proc.stderr.strip()[-500:]}")
        return proc.stdout + proc.stderr

    def report(self) -> ToolchainReport:
        """This installation as facts, for a driver on another host (fingerprints every tool)."""
        tools = {}
        for tool in self.tools():
            status = self.status(tool)
            tools[tool] = {"path": status.path, "version": status.version, "problem": status.problem,
                           "fingerprint": None if status.problem else self.fingerprint(tool)}
        return ToolchainReport(self.vendor, tools, self.layout(), str(self.include_root()),
                               tuple(self.missing_libraries()), self.header_index())

    @abstractmethod
    def tool_path(self, tool: str) -> Path | None:
        """Where ``tool`` lives on this machine's filesystem, or None if it is missing."""

    @abstractmethod
    def identity_files(self, tool: str) -> list[Path]:
        """Files and directories whose bytes decide what ``tool`` produces."""

    def identity_listings(self, tool: str) -> list[Path]:
        """Large folders whose files decide what ``tool`` produces, fingerprinted by their listing
        (names, sizes, times) instead of their bytes (default: none)."""
        return []

    @abstractmethod
    def version_command(self, tool: str) -> list[str]:
        """Arguments that make ``tool`` print its version."""

    @abstractmethod
    def tools(self) -> tuple[str, ...]:
        """The tools of this toolchain the pipeline uses."""

    @abstractmethod
    def include_root(self) -> Path:
        """The toolchain's main include directory, as seen from this machine."""

    @abstractmethod
    def system_include_dirs(self) -> list[Path]:
        """The system header folders its compiler searches, as seen from this machine."""

    def missing_libraries(self) -> list[str]:
        """The vendor libraries whose headers this installation lacks."""
        root = self.include_root()
        return [lib for lib, header in self.library_headers if not (root / header).is_file()]

    def require(self, tool: str) -> None:
        """Raise ToolchainMissingError (with how to install) unless ``tool`` is usable."""
        problem = self.status(tool).problem
        if problem:
            raise ToolchainMissingError(f"{self.vendor} tool {tool}: {problem}. {self.install_hint}")

    def version(self, tool: str) -> str:
        """The tool's own version text (its version output, one line, noise removed), run once per state of its
        installation: the output of a version command that exited 0 is kept in this machine's cache under the
        tool's :meth:`identity` and the command line and environment it ran with, and read from there while those
        hold (each tool stage asks again; the command costs a process, hipcc's several)."""
        if tool not in self._versions:
            argv = self.launcher.argv(tool, tuple(self.version_command(tool)), Path("/"))
            env = self.launcher.env()
            memo = MachineMemo(machine_cache("toolchains") / "versions.json")
            key = blake3.blake3(json.dumps([VERSION_SCHEME, argv, sorted(env.items()), self.identity(tool)]).encode()
                                ).hexdigest()
            if (kept := memo.get(key)) is not None:
                output, code = kept, 0
            else:
                proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
                output, code = proc.stdout or proc.stderr, proc.returncode
                if code == 0:
                    memo.put(key, output)
            lines = [ln for ln in self.clean_version(output).splitlines() if ln.strip()]
            self._versions[tool] = " | ".join(lines) if lines else f"(exit {code})"
        return self._versions[tool]

    def identity(self, tool: str) -> str:
        """Digest of what decides ``tool``'s output besides its inputs: the installation's stored tree where it
        is one, else the tool's identity files (their bytes) and listings (their names, sizes and times)."""
        if tool not in self._identities:
            if installation := self.installation_digest():
                self._identities[tool] = f"tree={installation}"
            else:
                listings = self.identity_listings(tool)
                self._identities[tool] = digest_paths(self.identity_files(tool)) + (
                    digest_listing(listings) if listings else "")   # two digests of fixed length
        return self._identities[tool]

    def clean_version(self, text: str) -> str:
        """Remove what is not version information from a tool's version output (default: nothing)."""
        return text.strip()

    def status(self, tool: str) -> ToolStatus:
        path = self.tool_path(tool)
        if path is None:
            return ToolStatus(self.vendor, tool, None, None, "not found")
        try:
            version = self.version(tool)
        except (OSError, subprocess.SubprocessError) as exc:
            return ToolStatus(self.vendor, tool, str(path), None, f"does not run: {exc}")
        return ToolStatus(self.vendor, tool, str(path), version, None)

    def companions(self, tool: str) -> tuple[str, ...]:
        """Other tools that ``tool`` runs and whose versions enter its fingerprint."""
        return ()

    def installation_digest(self) -> str | None:
        """The digest of the whole installation as a stored tree, where it is one (default: none)."""
        return None

    def fingerprint(self, tool: str) -> str:
        """Digest of the tool's version (and its companions'), the installation (its stored tree's digest, else the
        tool's identity files and listings), passed environment, the sandbox mode it runs in and where the tools see
        their folders."""
        if tool not in self._fingerprints:
            h = blake3.blake3()
            for name in (tool, *self.companions(tool)):
                self.require(name)
                h.update(self.version(name).encode())
            h.update(self.identity(tool).encode())
            h.update(repr(sorted(passed_env().items())).encode())
            h.update(f"sandbox={self.launcher.sandbox.mode}".encode())
            h.update(self.launcher.path_view().encode())
            self._fingerprints[tool] = h.hexdigest()
        return self._fingerprints[tool]

    @property
    def side(self) -> str:
        """The vendor whose code this toolchain compiles: its own, or, for a fallback, that of the toolchain it stands
        in for (the failure categories and the flags a file's build passes go by it)."""
        return self.vendor

    def build_flags(self, common: Sequence[str], build: Sequence[str]) -> list[str]:
        """``common`` (the pipeline's flags) with a file's own build flags after them (``-D``, ``-U``, nvcc's
        language switches where this toolchain is nvcc, and a ``-std`` that asks for a newer C++, which then
        replaces the pipeline's)."""
        kept = [f for f in build if self.side != "amd" or f not in NVCC_LANGUAGE_FLAGS]
        ours = max((cxx_standard_rank(f) for f in common), default=-1)
        newer = [f for f in kept if cxx_standard_rank(f) > ours][-1:]
        return [*(f for f in common if not (newer and cxx_standard_rank(f) >= 0)), *newer,
                *(f for f in kept if cxx_standard_rank(f) < 0)]

    def targets(self, main: str, archs: list[str], flags: dict, include_dirs: Sequence[str] = (".",)) -> list[Target]:
        """Plans for the host assembly and the device assembly of every arch of one sample (an OpenCL
        sample: device assembly only); ``include_dirs`` (relative to the sample's layout root) become
        ``-I`` flags, in order."""
        require_archs(archs, self.vendor)
        if is_opencl(main):
            return self.opencl_targets(main, archs, flags["opencl"], include_dirs)
        return self.cuda_targets(main, archs, flags, include_dirs)

    @abstractmethod
    def cuda_targets(self, main: str, archs: list[str], flags: dict, include_dirs: Sequence[str]) -> list[Target]:
        """Host and device assembly of a CUDA (NVIDIA) or HIP (AMD) sample."""

    @abstractmethod
    def opencl_targets(self, main: str, archs: list[str], flags: list[str],
                       include_dirs: Sequence[str]) -> list[Target]:
        """Device assembly of an OpenCL C sample for every arch; ``flags``: the vendor's ``flags.opencl``."""

    def finish(self, target: Target, artifact: bytes) -> bytes:
        """Deterministic post-processing of a target's artifact (default: none)."""
        return artifact


class ReportedToolchain:
    """Mixin placed before a vendor class by :meth:`Toolchain.from_report`: everything that
    would look at the installation answers from the host's report instead."""

    reported: ToolchainReport

    def tools(self) -> tuple[str, ...]:
        return tuple(self.reported.tools)

    def layout(self) -> dict:
        return self.reported.layout

    def header_index(self) -> dict:
        return self.reported.headers

    def include_root(self) -> Path:
        return Path(self.reported.include_root)

    def missing_libraries(self) -> list[str]:
        return list(self.reported.missing_libraries)

    def tool_path(self, tool: str) -> Path | None:
        path = self.reported.tools.get(tool, {}).get("path")
        return Path(path) if path else None

    def status(self, tool: str) -> ToolStatus:
        t = self.reported.tools.get(tool)
        if t is None:
            return ToolStatus(self.reported.vendor, tool, None, None, "not reported by any connected host")
        return ToolStatus(self.reported.vendor, tool, t["path"], t["version"], t["problem"])

    def version(self, tool: str) -> str:
        self.require(tool)
        return self.reported.tools[tool]["version"]

    def fingerprint(self, tool: str) -> str:
        self.require(tool)
        return self.reported.tools[tool]["fingerprint"]
