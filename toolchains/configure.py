"""The configure steps of an untrusted tree, in the sandbox: how its build would compile each CUDA file.

The tree is seen read-only at its own path and copied into the job's scratch directory (``src``), where it is
configured with the NVIDIA wheels' nvcc as the CUDA compiler, ``compile_commands.json`` exported, no network and
nothing else of the host but the system's compiler trees (or a build root's: :mod:`toolchains.build_root`):

* :class:`CMakeConfigure`: CMake configures the copy into ``build`` with :data:`CONFIGURE_DEFAULTS` and the
  project's cache values;
* :class:`DebianConfigure`: a Debian source package's own configure step, as its build runs it: the package's
  ``debian/`` unpacked into the copy, its patches applied (``dpkg-source --before-build``), then ``debian/rules
  build-arch`` run until it has configured: ``dh_auto_configure`` (its override, its options) runs, and the build
  stops there or where ``dh_auto_build`` would start (rules without debhelper are not stopped: they build until the
  step's time runs out). CMake exports its compile database (``CMAKE_EXPORT_COMPILE_COMMANDS``
  in the environment), and a package that builds CUDA finds nvcc (``CUDACXX``).

What comes back: ``configure.log`` (the step's output), ``scratch.root`` (where the scratch directory was: the
compile database names its paths) and ``build.tar``: the compile database (at ``build/compile_commands.json``), the
response files its commands read (``--options-file``) and every header the step wrote, in the build folder or in
the copy.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import blake3

from toolchains.executor import Job, JobResult, run_in_scratch
from toolchains.language import HEADER_SUFFIXES
from toolchains.launchers import HostLauncher

BUILD = "build"
"""The build folder, relative to the job's scratch directory."""
SOURCE = "src"
"""The project's copy the step configures, relative to the job's scratch directory: CMake may write into its source
folder (``configure_file`` beside a template), which the tree itself never is."""
_HEADER_NAMES = " -o ".join(f'-name "*{s}"' for s in HEADER_SUFFIXES)
TOOLKIT = "cuda"
"""The CUDA toolkit as CMake's ``FindCUDAToolkit`` and ``FindCUDA`` look for one, relative to the job's scratch
directory: links to the wheels' tree (``cuda_home``), and ``lib64`` with each library under its unversioned name
too (the wheels ship ``libcudart.so.13``, CMake looks for ``libcudart.so``)."""
CONFIGURE_DEFAULTS = ("-DBUILD_TESTING=OFF", "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
                      "-DCMAKE_CUDA_ARCHITECTURES=all-major")
"""What CMake's configure step is given: no tests (their frameworks are downloaded), no downloads, and the CUDA
arches nvcc itself supports (projects that require them set: which arches is not taken from a build)."""
TOOLKIT_LINKS = (
    'mkdir -p ' + TOOLKIT + '/lib64 && for d in "$cuda"/*; do ln -s "$d" ' + TOOLKIT + '/; done && '
    'for f in "$cuda"/lib/*; do n=${f##*/}; ln -s "$f" ' + TOOLKIT + '/lib64/"$n"; case $n in *.so.*) '
    'ln -sf "$f" ' + TOOLKIT + '/lib64/"${n%%.so.*}.so";; esac; done'
)
"""Makes :data:`TOOLKIT` from the wheels' tree ``$cuda``."""


def archive(written_in_copy: str = _HEADER_NAMES) -> str:
    """The step's last command: archive the compile database, its response files and every header the step wrote
    in the build folder, and the files matching ``written_in_copy`` (``find`` tests) it wrote in the copy (after
    ``.copied`` was touched)."""
    return ('{ find ' + BUILD + ' -type f \\( -name compile_commands.json -o -name "*.rsp" -o ' + _HEADER_NAMES
            + ' \\); find ' + SOURCE + ' -type f -newer .copied \\( ' + written_in_copy + ' \\); } | sort | '
            'tar -cf build.tar -T - 2>>configure.log')


SCRIPT = (
    'tree=$1; nvcc=$2; cuda=$3; shift 3; echo "$PWD" >scratch.root; ' + TOOLKIT_LINKS + ' && '
    'cp -a "$tree" ' + SOURCE + ' && touch .copied && '
    'cmake -S ' + SOURCE + ' -B ' + BUILD + ' -G "Unix Makefiles" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON '
    '-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$PWD/' + TOOLKIT + '" -DCUDA_TOOLKIT_ROOT_DIR="$PWD/'
    + TOOLKIT + '" ' + " ".join(CONFIGURE_DEFAULTS) + ' "$@" >configure.log 2>&1; status=$?; '
    + archive() + '; exit $status'
)
"""CMake's configure step, run by ``sh`` in the sandbox (part of its action key): the toolkit's view made, the
project copied, configured (the project's cache values after :data:`CONFIGURE_DEFAULTS`, so they win), and
:func:`archive`."""
DEBIAN_STOPS = ("dh_auto_build", "dh_auto_test", "dh_auto_install")
"""The debhelper commands after the configure step: reaching one means it is done."""
DEBIAN_SCRIPT = rf"""tree=$1 nvcc=$2 cuda=$3 packaging=$4
scratch=$PWD; echo "$scratch" >scratch.root
{TOOLKIT_LINKS} || exit
cp -a "$tree" {SOURCE} || exit
if [ -n "$packaging" ]; then rm -rf {SOURCE}/debian && tar -xf "$packaging" -C {SOURCE} || exit; fi
(cd {SOURCE} && dpkg-source --before-build .) >configure.log 2>&1 || exit
touch .copied
mkdir -p stop home {BUILD}
printf '#!/bin/sh\n/usr/bin/dh_auto_configure "$@" || exit\ntouch "$CASS_SCRATCH/.configured"; exit 99\n' \
  >stop/dh_auto_configure
for command in {" ".join(DEBIAN_STOPS)}; do
  printf '#!/bin/sh\ntouch "$CASS_SCRATCH/.configured"; exit 99\n' >stop/$command
done
chmod +x stop/*
(cd {SOURCE} && env PATH="$scratch/stop:$PATH" HOME="$scratch/home" CASS_SCRATCH="$scratch" \
  DEB_BUILD_OPTIONS="nocheck nodoc" DEB_BUILD_PROFILES=nocheck CMAKE_EXPORT_COMPILE_COMMANDS=ON CUDACXX="$nvcc" \
  CUDAToolkit_ROOT="$scratch/{TOOLKIT}" CUDA_TOOLKIT_ROOT_DIR="$scratch/{TOOLKIT}" debian/rules build-arch) \
  >>configure.log 2>&1
status=$?
database=$(find {SOURCE} -name compile_commands.json -newer .copied | sort | head -n 1)
[ -z "$database" ] || cp "$database" {BUILD}/
{archive(_HEADER_NAMES + ' -o -name "*.rsp"')}
test -e .configured || {{ echo "cass: debian/rules build-arch ended (status $status) before it had configured" \
  >>configure.log; exit $((status > 128 ? status : 1)); }}
"""
"""The Debian package's configure step, run by ``sh`` in the sandbox (part of its action key): the toolkit's view
made, the tree copied, its ``debian/`` unpacked from ``$packaging`` (a native package's tree has its own) and its
patches applied, then ``debian/rules build-arch`` (under the profile its build dependencies were installed for:
``nocheck``) with debhelper's commands after the configure step replaced by ones that stop the build (``stop/``), and
``dh_auto_configure`` by one that stops it once it has configured (where the rules' own process is killed first,
the step ends with its signal's status, which the executor takes as transient); the first
compile database the step wrote (the first build flavour's, by path) and :func:`archive`, with the response files
its commands read (the build folder is inside the copy)."""


class CMakeConfigure:
    """``cmake`` of this machine, configuring CUDA trees with ``nvcc`` (whose install tree is ``cuda_home``)."""

    def __init__(self, nvcc: Path, cuda_home: Path):
        self.cmake = shutil.which("cmake")
        self.nvcc = nvcc
        self.cuda_home = cuda_home

    @functools.cached_property
    def version(self) -> str | None:
        """``cmake --version``'s first line, or None where CMake is not installed."""
        if self.cmake is None:
            return None
        out = subprocess.run([self.cmake, "--version"], capture_output=True, text=True, check=False).stdout
        return out.splitlines()[0].strip() if out else None

    @functools.cached_property
    def fingerprint(self) -> str | None:
        """CMake's version and the digest of its executable (its modules come with its version)."""
        if self.version is None:
            return None
        return blake3.blake3(self.version.encode() + Path(self.cmake).read_bytes()).hexdigest()

    def configure(self, source: Path, cache: Mapping[str, object], timeout_s: float,
                  system_root: Path | None = None) -> JobResult:
        """Configure the CMake project at ``source`` (``cache``: ``-D`` values) in a fresh scratch directory, with
        ``system_root``'s system (its CMake, compilers and libraries) where given, else this machine's."""
        source = source.resolve()
        launcher = HostLauncher([Path(self.cmake).parent], trees=[self.cuda_home, source], system_root=system_root)
        args = ("-c", SCRIPT, "sh", str(source), str(self.nvcc), str(self.cuda_home),
                *(f"-D{k}={v}" for k, v in sorted(cache.items())))
        job = Job("cmake", "sh", args, {}, ("build.tar", "scratch.root", "configure.log"), timeout_s)
        return run_in_scratch(launcher, job)


class DebianConfigure:
    """A Debian source package's own configure step (:data:`DEBIAN_SCRIPT`), on the build root's system."""

    def __init__(self, nvcc: Path, cuda_home: Path):
        self.nvcc = nvcc
        self.cuda_home = cuda_home

    def configure(self, source: Path, packaging: Path | None, timeout_s: float, system_root: Path) -> JobResult:
        """Configure the package whose upstream tree is ``source`` and whose ``debian/`` is in the tarball
        ``packaging`` (None: in the tree), in a fresh scratch directory, with ``system_root``'s system."""
        source = source.resolve()
        trees = [self.cuda_home, source, *([packaging.resolve()] if packaging else [])]
        launcher = HostLauncher([Path("/usr/bin")], trees=trees, system_root=system_root)
        args = ("-c", DEBIAN_SCRIPT, "sh", str(source), str(self.nvcc), str(self.cuda_home),
                str(packaging.resolve()) if packaging else "")
        job = Job("debian-configure", "sh", args, {}, ("build.tar", "scratch.root", "configure.log"), timeout_s)
        return run_in_scratch(launcher, job)
