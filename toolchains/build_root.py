"""The build root of Debian source packages: a Debian root of the packages' own suite in which their build
dependencies are installed from Debian, so that their configure step (:mod:`toolchains.configure`) finds the libraries
their build looks for (BLAS, Ceres, FFTW, ...) without changing this machine's own system.

The root is made by ``debootstrap`` (minbase, then ``build-essential`` and ``cmake``); each package's
``Build-Depends`` and ``Build-Depends-Arch`` (from its ``.dsc``) are installed by ``apt-get satisfy`` inside it.
Configure steps see its system trees in place of this machine's (read-only, in the sandbox, with no network). Its
identity is the digest of dpkg's status file: the installed packages and their versions, which is what a configure
step can find there.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import blake3

BASE_PACKAGES = ("build-essential", "cmake")
"""What every build root holds: Debian's implicit build dependencies, and the CMake that configures."""
DEPENDENCY_FIELDS = ("Build-Depends", "Build-Depends-Arch")
"""The fields of a ``.dsc`` that name what building its architecture-dependent packages needs."""
STATUS = "var/lib/dpkg/status"
_APT_ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C.UTF-8"}


class BuildRootError(Exception):
    """The root could not be made, or a package's build dependencies could not be installed (with apt's words)."""


def build_dependencies(dsc: str) -> str:
    """The build dependencies a ``.dsc`` names for an architecture-dependent build (empty when it names none)."""
    found = []
    for field in DEPENDENCY_FIELDS:
        match = re.search(rf"^{field}:(.*(?:\n[ \t].*)*)", dsc, re.M)
        if match and (value := " ".join(match.group(1).split())):
            found.append(value.rstrip(","))
    return ", ".join(found)


def identity(root: Path) -> str | None:
    """The digest of ``root``'s installed packages (dpkg's status file), or None where ``root`` is no Debian root."""
    status = root / STATUS
    return blake3.blake3(status.read_bytes()).hexdigest() if status.is_file() else None


class BuildRootTimeout(BuildRootError):
    """A step got no answer in its time (it and everything it started were killed)."""


def _run(argv: list[str], what: str, timeout_s: float) -> None:
    """Run ``argv`` in its own session; on timeout the whole session is killed (apt, dpkg and their scripts)."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_APT_ENV,
                                start_new_session=True)
    except OSError as exc:   # debootstrap or unshare missing
        raise BuildRootError(f"{what}: cannot run {argv[0]}: {exc}") from exc
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        with contextlib.suppress(ProcessLookupError):   # the session may have ended on its own meanwhile
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise BuildRootTimeout(f"{what}: no answer after {timeout_s:.0f} s") from exc
    if proc.returncode != 0:
        lines = [line.strip() for line in out.splitlines() if line.strip()]
        words = [line for line in lines if line.startswith(("E:", "W:", "satisfy:"))] or lines[-12:]   # apt's why
        raise BuildRootError(f"{what}: exit {proc.returncode}: " + " / ".join(words))


def apt(root: Path, args: str, what: str, timeout_s: float) -> None:
    """``apt-get -q <args>`` inside the Debian root ``root`` (after finishing any install cut short), reaching the
    archive as this machine does; :class:`BuildRootError` names ``what`` failed, with apt's words."""
    if Path("/etc/resolv.conf").is_file():   # the root's apt reaches the archive as we do
        shutil.copyfile("/etc/resolv.conf", root / "etc/resolv.conf")
    # a private mount namespace with its own /proc: some maintainer scripts (Java's) need one; the machine's
    # mounts are never touched
    _run(["unshare", "--mount", "--mount-proc", f"--root={root}", "sh", "-c",
          f"dpkg --configure -a && apt-get -q {args}"], what, timeout_s)


def ensure(root: Path, suite: str, mirror: str, timeout_s: float) -> bool:
    """Make ``root`` (``suite`` from ``mirror``, with :data:`BASE_PACKAGES`) unless it is there; True if made. A root
    is made in ``<root>.partial`` and renamed into place, so a killed run leaves none half made."""
    if identity(root) is not None:
        return False
    if root.exists():
        raise BuildRootError(f"{root} exists but is no Debian root (no {STATUS}); move it away first")
    partial = root.with_name(root.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    _run(["debootstrap", "--variant=minbase", suite, str(partial), mirror], f"debootstrap {suite} into {partial}",
         timeout_s)
    apt(partial, "update", f"apt-get update in {partial}", timeout_s)
    apt(partial, "install -y --no-install-recommends " + " ".join(BASE_PACKAGES),
         f"installing {', '.join(BASE_PACKAGES)} in {partial}", timeout_s)
    partial.rename(root)
    return True


def satisfy(root: Path, dependencies: str, what: str, timeout_s: float) -> None:
    """Install ``dependencies`` (a Debian dependency field) inside ``root``, with the ``nocheck`` build profile (the
    configure step builds no tests) and never removing a package another one installed (a conflict is this
    package's failure); the package lists are updated once more where the first try fails (an index older than the
    archive)."""
    args = "satisfy -y --no-install-recommends --no-remove -P nocheck " + shlex.quote(dependencies)
    try:
        apt(root, args, f"build dependencies of {what}", timeout_s)
    except BuildRootTimeout:
        raise
    except BuildRootError:
        apt(root, "update", f"apt-get update in {root}", timeout_s)
        apt(root, args, f"build dependencies of {what}", timeout_s)


