"""CMake's configure step of an untrusted tree, in the sandbox: how its build would compile each CUDA file.

The tree is seen read-only at its own path and copied into the job's scratch directory (``src``), where CMake
configures it into ``build`` with the NVIDIA wheels' nvcc as the CUDA compiler, ``compile_commands.json`` exported,
no network and nothing else of the host but the system's compiler trees. What comes back: ``configure.log``
(CMake's output), ``scratch.root`` (where the scratch directory was: the compile database names its paths) and
``build.tar``: the compile database, the response files its commands read (``--options-file``) and every header
the step wrote, in the build folder or in the copy.
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
"""What every configure step is given: no tests (their frameworks are downloaded), no downloads, and the CUDA
arches nvcc itself supports (projects that require them set: which arches is not taken from a build)."""
SCRIPT = (
    'tree=$1; nvcc=$2; cuda=$3; shift 3; echo "$PWD" >scratch.root; '
    'mkdir -p ' + TOOLKIT + '/lib64 && for d in "$cuda"/*; do ln -s "$d" ' + TOOLKIT + '/; done && '
    'for f in "$cuda"/lib/*; do n=${f##*/}; ln -s "$f" ' + TOOLKIT + '/lib64/"$n"; case $n in *.so.*) '
    'ln -sf "$f" ' + TOOLKIT + '/lib64/"${n%%.so.*}.so";; esac; done && '
    'cp -a "$tree" ' + SOURCE + ' && touch .copied && '
    'cmake -S ' + SOURCE + ' -B ' + BUILD + ' -G "Unix Makefiles" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON '
    '-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$PWD/' + TOOLKIT + '" -DCUDA_TOOLKIT_ROOT_DIR="$PWD/'
    + TOOLKIT + '" ' + " ".join(CONFIGURE_DEFAULTS) + ' "$@" >configure.log 2>&1; status=$?; '
    '{ find ' + BUILD + ' -type f \\( -name compile_commands.json -o -name "*.rsp" -o ' + _HEADER_NAMES + ' \\); '
    'find ' + SOURCE + ' -type f -newer .copied \\( ' + _HEADER_NAMES + ' \\); } | sort | tar -cf build.tar -T - '
    '2>>configure.log; '
    'exit $status'
)
"""The configure step, run by ``sh`` in the sandbox (part of its action key): the toolkit's view made, the project
copied, configured (the project's cache values after :data:`CONFIGURE_DEFAULTS`, so they win), and the compile
database, its response files and every header the step wrote (in the build folder, or in the copy) archived."""


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
