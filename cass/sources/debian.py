"""Debian source packages at pinned versions: real development trees nobody here wrote.

apt runs with a private configuration (its own sources list, package lists and cache under the
fetch directory; the machine's apt setup is never touched) naming one archive and suite with
``deb-src`` and ``deb`` lines. ``apt-get source --print-uris NAME=VERSION`` gives the package's
files with the SHA-256 sums of the archive's signed index; each file is downloaded (with retries),
checked against its sum and kept, so a rerun downloads nothing and a damaged file is fetched again.

The upstream tarball (``NAME_UPSTREAM.orig.tar.*``, or the package's own tarball for native
packages) is unpacked without its top folder into ``trees/NAME_VERSION``, component tarballs
(``orig-COMP``) into ``COMP/`` beside it, as ``dpkg-source -x`` lays them out (Debian's patches are
not applied: the tree is upstream's code as Debian ships it). The Debian tarball (``debian/``: the package's
rules and patches) is kept beside the downloads for the package's own configure step
(:mod:`toolchains.configure`). Licenses come from
``debian/copyright`` in the Debian tarball, or, where the archive lacks that tarball, from
``/usr/share/doc/BINARY/copyright`` of the smallest binary package built from the same source
version (the same file, installed). Every finished step is renamed into place, so a killed fetch
resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import io
import re
import shutil
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from cass.pipeline.remote import backoff_s

COMPLETE_MARK = ".cass-unpack-complete"
_URI_LINE = re.compile(r"^'(?P<url>[^']+)' (?P<name>\S+) (?P<size>\d+) SHA256:(?P<sha256>[0-9a-f]{64})$", re.M)
_RETRYABLE_HTTP = {408, 429, 500, 502, 503, 504}


class FetchError(Exception):
    """A source package could not be fetched; ``reason`` is the drop reason."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


class NotInArchiveError(FetchError):
    """The archive answered 404 for a file its index lists."""

    def __init__(self, url: str):
        super().__init__("fetch_failed", f"{url}: 404 Not Found")


@dataclass(frozen=True)
class RemoteFile:
    url: str
    name: str
    size: int
    sha256: str


@dataclass(frozen=True)
class FetchedPackage:
    """A source package on disk: its unpacked tree and its copyright file (with where it came from)."""

    tree: Path
    dsc_url: str
    files: tuple[RemoteFile, ...]
    copyright_text: str
    license_source: str
    downloaded: int
    packaging: Path | None = None
    """The Debian tarball (``debian/``: rules, patches), or None: a native package (its tree holds it), or one whose
    tarball the archive answered 404 for."""


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _strip_top(member: tarfile.TarInfo, dest: str, into: str = "") -> tarfile.TarInfo | None:
    """Tar extraction filter: drop the tarball's top folder (put the rest under ``into``), then
    apply tarfile's ``data`` filter (no absolute paths, no escapes, no devices)."""
    parts = member.name.lstrip("./").split("/", 1)
    if len(parts) < 2 or not parts[1]:
        return None
    name = f"{into}/{parts[1]}" if into else parts[1]
    linkname = member.linkname
    if member.islnk():   # hard links name their target by its path inside the tarball
        link_parts = linkname.lstrip("./").split("/", 1)
        linkname = f"{into}/{link_parts[-1]}" if into else link_parts[-1]
    try:
        return tarfile.data_filter(member.replace(name=name, linkname=linkname, deep=False), dest)
    except tarfile.FilterError:
        return None


def package_origin(name: str) -> str:
    """The origin (subset) name of a Debian package's samples: ``debian_<name>``."""
    return "debian_" + re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


class DebianArchive:
    """One Debian archive and suite, reached through apt with a private configuration."""

    @classmethod
    def from_params(cls, d: dict) -> DebianArchive:
        """The archive ``debian_sources`` in params.yaml names, with its working directory."""
        return cls(Path(d["dir"]), d["archive"], d["suite"], d["components"], d["keyring"], d["timeout_s"],
                   d["retries"])

    def __init__(self, workdir: Path, archive: str, suite: str, components: list[str], keyring: str,
                 timeout_s: float = 120, retries: int = 5):
        self.workdir = workdir
        self.timeout_s = timeout_s
        self.retries = retries
        self.apt_dir = workdir / "apt"
        lists = self.apt_dir / "state" / "lists" / "partial"
        cache = self.apt_dir / "cache" / "archives" / "partial"
        for d in (lists, cache):
            d.mkdir(parents=True, exist_ok=True)
        line = f"[signed-by={keyring}] {archive} {suite} {' '.join(components)}\n"
        (self.apt_dir / "sources.list").write_text(f"deb-src {line}deb {line}")
        self.options = [
            "-o", f"Dir::Etc::SourceList={self.apt_dir / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State={self.apt_dir / 'state'}", "-o", "Dir::State::status=/var/lib/dpkg/status",
            "-o", f"Dir::Cache={self.apt_dir / 'cache'}", "-o", "APT::Sandbox::User=root",
            "-o", "Debug::NoLocking=1",
        ]
        self.downloads = workdir / "downloads"
        self.downloads.mkdir(parents=True, exist_ok=True)
        self._updated = False

    def _apt(self, tool: str, *args: str, cwd: Path | None = None) -> str:
        proc = subprocess.run([tool, *self.options, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=self.timeout_s * 5, check=False)
        if proc.returncode:
            raise FetchError("fetch_failed", f"{tool} {' '.join(args)}: {(proc.stderr or proc.stdout).strip()[-1500:]}")
        return proc.stdout

    def update(self) -> None:
        """Download the suite's package lists (once per run)."""
        if not self._updated:
            self._apt("apt-get", "-q", "update")
            self._updated = True

    def source_files(self, name: str, version: str) -> list[RemoteFile]:
        """The files of source package ``name`` at ``version`` with their archive checksums."""
        self.update()
        try:
            out = self._apt("apt-get", "source", "--print-uris", "--download-only", f"{name}={version}")
        except FetchError as exc:
            if "Can not find version" in str(exc) or "Unable to find a source package" in str(exc):
                raise FetchError("version_not_found", f"{name} {version} is not in the archive's index: {exc}") \
                    from exc
            raise
        files = [RemoteFile(m["url"], m["name"], int(m["size"]), m["sha256"]) for m in _URI_LINE.finditer(out)]
        if not files:
            raise FetchError("fetch_failed", f"apt-get source {name}={version} listed no files:\n{out[-1000:]}")
        return files

    def download(self, remote: RemoteFile) -> tuple[Path, bool]:
        """The file, checked against its SHA-256 (a kept copy that does not match is fetched again);
        returns (path, whether it was downloaded now)."""
        dest = self.downloads / remote.name
        if dest.is_file() and dest.stat().st_size == remote.size and sha256_file(dest) == remote.sha256:
            return dest, False
        partial = dest.with_name(dest.name + ".partial")
        for attempt in range(1, self.retries + 1):
            try:
                with urllib.request.urlopen(remote.url, timeout=self.timeout_s) as resp, partial.open("wb") as out:
                    shutil.copyfileobj(resp, out, 1 << 20)
                break
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    raise NotInArchiveError(remote.url) from exc
                if exc.code not in _RETRYABLE_HTTP or attempt == self.retries:
                    raise FetchError("fetch_failed", f"{remote.url}: HTTP {exc.code}") from exc
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                if attempt == self.retries:
                    raise FetchError("fetch_failed", f"{remote.url}: {exc}") from exc
            time.sleep(backoff_s(attempt))
        got = sha256_file(partial)
        if got != remote.sha256:
            partial.unlink()
            raise FetchError("checksum_mismatch", f"{remote.url}: SHA-256 {got}, the archive's index says "
                                                  f"{remote.sha256}")
        partial.replace(dest)
        return dest, True

    def binary_copyright(self, name: str, version: str) -> tuple[str, str]:
        """(copyright text, where from) out of the smallest binary package built from ``name``
        ``version`` that ships ``/usr/share/doc/BINARY/copyright`` as a file."""
        self.update()
        binaries: list[str] = []
        for para in self._apt("apt-cache", "showsrc", name).split("\n\n"):
            if re.search(rf"^Version: {re.escape(version)}$", para, re.M):
                field = re.search(r"^Binary: (.+(?:\n .+)*)", para, re.M)
                binaries = [b.strip() for b in field.group(1).split(",")] if field else []
        candidates = []
        for binary in binaries:
            try:
                shown = self._apt("apt-cache", "show", binary)
            except FetchError:
                continue
            for para in shown.split("\n\n"):
                source = re.search(r"^Source: (\S+)(?: \((\S+)\))?$", para, re.M)
                bin_version = re.search(r"^Version: (\S+)$", para, re.M)
                size = re.search(r"^Size: (\d+)$", para, re.M)
                if not (bin_version and size):
                    continue
                src_version = source.group(2) if source and source.group(2) else bin_version.group(1)
                if src_version == version:
                    candidates.append((int(size.group(1)), binary, bin_version.group(1)))
        target = self.workdir / "binaries"
        target.mkdir(exist_ok=True)
        for _, binary, bin_version in sorted(set(candidates)):
            self._apt("apt-get", "download", f"{binary}={bin_version}", cwd=target)
            deb = next(target.glob(f"{binary}_{bin_version.replace(':', '%3a')}_*.deb"))   # _amd64 or _all
            fs = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True).stdout
            with tarfile.open(fileobj=io.BytesIO(fs)) as tar:
                for member in tar.getmembers():
                    if member.isfile() and member.name.lstrip("./") == f"usr/share/doc/{binary}/copyright":
                        return tar.extractfile(member).read().decode("utf-8", "replace"), \
                            f"{binary}_{bin_version}:/usr/share/doc/{binary}/copyright"
        raise FetchError("fetch_failed", f"{name} {version}: no debian tarball and no binary package with a "
                                         "copyright file")

    def fetch(self, name: str, version: str) -> FetchedPackage:
        """Download (or reuse) and unpack one source package; its tree and copyright. Every
        failure is a :class:`FetchError` naming the package."""
        try:
            return self._fetch(name, version)
        except FetchError:
            raise
        except (OSError, KeyError, StopIteration, tarfile.TarError, subprocess.SubprocessError,
                http.client.HTTPException) as exc:
            raise FetchError("fetch_failed", f"{name} {version}: {type(exc).__name__}: {exc}") from exc

    def _fetch(self, name: str, version: str) -> FetchedPackage:
        files = self.source_files(name, version)
        paths, downloaded, packaging = {}, 0, None
        for remote in files:
            if not re.search(r"\.debian\.tar\.\w+$", remote.name):
                paths[remote.name], fresh = self.download(remote)
            else:   # where the archive answers 404 for it, the licenses come from a binary package
                fresh = False
                with contextlib.suppress(NotInArchiveError):
                    packaging, fresh = self.download(remote)
            downloaded += fresh
        copyright_file = self.workdir / "copyright" / f"{name}_{version}"
        if not copyright_file.is_file():
            text, source = self._copyright(name, version, packaging)
            copyright_file.parent.mkdir(exist_ok=True)
            tmp = copyright_file.with_suffix(".partial")
            tmp.write_text(f"{source}\n{text}")
            tmp.replace(copyright_file)
        source, _, text = copyright_file.read_text().partition("\n")
        tree = self.workdir / "trees" / f"{name}_{version}"
        if not (tree / COMPLETE_MARK).is_file():
            self._unpack(name, version, paths, tree)
        dsc = next((f.url for f in files if f.name.endswith(".dsc")), "")
        return FetchedPackage(tree, dsc, tuple(files), text, source, downloaded, packaging)

    def _copyright(self, name: str, version: str, packaging: Path | None) -> tuple[str, str]:
        if packaging is not None:
            with tarfile.open(packaging) as tar:
                member = tar.getmember("debian/copyright")
                return tar.extractfile(member).read().decode("utf-8", "replace"), f"{packaging.name}:debian/copyright"
        return self.binary_copyright(name, version)

    @staticmethod
    def _unpack(name: str, version: str, tarballs: dict[str, Path], tree: Path) -> None:
        partial = tree.with_name(tree.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        upstream = version.split(":")[-1].rsplit("-", 1)[0]
        mains = [p for n, p in tarballs.items() if re.fullmatch(
            rf"{re.escape(name)}_{re.escape(upstream)}(?:\.orig)?\.tar\.\w+", n)]
        if not mains:
            raise FetchError("fetch_failed", f"{name} {version}: no upstream tarball among {sorted(tarballs)}")
        for file_name, path in sorted(tarballs.items()):
            component = re.fullmatch(rf"{re.escape(name)}_{re.escape(upstream)}\.orig-([\w-]+)\.tar\.\w+", file_name)
            if path not in mains and not component:
                continue
            into = component.group(1) if component else ""
            with tarfile.open(path) as tar:
                tar.extractall(partial, filter=lambda m, dest, into=into: _strip_top(m, dest, into))
        (partial / COMPLETE_MARK).write_text(f"{name} {version}\n")
        shutil.rmtree(tree, ignore_errors=True)
        partial.rename(tree)


# ------------------------------------------------------------------ the fetch_debian stage's work

SCHEMA = {
    "name": pl.String, "version": pl.String, "flavour": pl.String, "origin": pl.String, "tree": pl.String,
    "dsc_url": pl.String, "files": pl.List(pl.Struct({"name": pl.String, "sha256": pl.String})),
    "copyright": pl.String, "license_source": pl.String, "machine_readable_copyright": pl.Boolean,
    "paths": pl.List(pl.String), "limit": pl.Int64, "configure": pl.String,
    "build_deps": pl.String, "build_root": pl.String, "packaging": pl.String,
}
"""``data/fetch_debian/manifest.parquet``; ``build_deps``: ``installed``, ``not needed`` (no CMake project at the
tree's root: nothing configures it), ``off`` (``debian_sources.build_root`` is empty) or ``failed: <why>``;
``build_root``: the root's identity once every package's dependencies were installed (:mod:`toolchains.build_root`);
``packaging``: the Debian tarball's path ("" for a native package, or where the archive answered 404 for it)."""
