"""NVIDIA toolchain: nvcc for host x86 assembly and cubins, cuobjdump (+ nvdisasm) for SASS; for OpenCL C,
clang with libclc to PTX and ``ptxas`` to a cubin.

Flags follow the CASS paper's NVIDIA recipe (``-std=c++17 -Xcompiler=-Os -DNDEBUG -w``).
``--objdir-as-tempdir`` keeps nvcc's intermediate names (which end up in the host assembly's
``.file`` directive) derived from the output name instead of ``/tmp/tmpxft_<pid>``, so the host
assembly is byte-identical across runs. The embedded device image (the ``.nv_fatbin`` section)
is removed from the host assembly, as CASS did with sed. The host compile already runs the device
compile of the first arch; with ``--keep`` its cubin is kept (``host.s.<arch>.cubin``, the same
bytes as ``nvcc -cubin``'s, and the host assembly unchanged) and that arch's SASS comes from it,
one nvcc process fewer per sample.
"""

from __future__ import annotations

import os
import re
import shutil
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

from toolchains.base import EXECUTABLE, Step, Target, Toolchain, ToolchainMissingError, require_archs
from toolchains.headers import index_headers
from toolchains.launchers import HostLauncher

PIP_PACKAGES = (
    "nvidia-cuda-nvcc==13.5.37 nvidia-cuda-cuobjdump==13.5.37 nvidia-cuda-nvdisasm==13.5.37 "
    "nvidia-cuda-runtime==13.5.37 nvidia-cuda-crt==13.5.37 nvidia-cuda-cccl==13.3.5.0.6 "
    "nvidia-cublas==13.10.0.20 nvidia-curand==10.4.5.25 nvidia-cufft==12.5.0.14 nvidia-cusparse==12.9.4.2 "
    "nvidia-cusolver==12.4.1.2"
)

MOUNT_ROOT = "/opt/cass"
"""Under which the NVIDIA toolchains' tools see their folders in the sandbox (:meth:`NvidiaToolchain.mounts`)."""

HOST_COMPILER = "g++"
"""nvcc's host compiler, found on the launcher's PATH (Debian's g++ 12 on Debian 12)."""

OPENCL_COMPILER = "clang-15"
"""The OpenCL C compiler of the NVIDIA route (Debian's ``clang-15``), found on the launcher's PATH."""
LIBCLC_NVPTX = Path("/usr/lib/clc/nvptx64--nvidiacl.bc")
"""libclc's OpenCL builtins (get_global_id, sqrt, ...) for NVPTX (Debian's ``libclc-15``), linked into every kernel."""
OPENCL_PACKAGES = "clang-15 libclc-15"

_FATBIN_LINE = re.compile(rb"[^\S\n]*\.section[^\S\n]+\.nv_fatbin\b")
_TEXT_LINE = re.compile(rb"[^\S\n]*\.text[^\S\n]*\n?")


CUDA_NAME = re.compile(r"_*(?:cu|CU|Cu|nv|NV)")
"""How CUDA's own identifiers begin (``cudaMalloc``, ``CUresult``, ``__nv_bfloat16``): the names of its
top-level headers the header index keeps, for pairing them with HIP's."""


def default_cuda_home() -> Path:
    """The CUDA tree installed by the PyPI wheels into this Python environment."""
    return Path(sysconfig.get_paths()["purelib"]) / "nvidia" / "cu13"


def strip_fatbin(host_asm: bytes) -> bytes:
    """Remove the embedded device image: from ``.section .nv_fatbin`` up to and including the
    next ``.text`` line (the same span as CASS's ``sed '/\\.nv_fatbin/,/\\.text/d'``)."""
    kept: list[bytes] = []
    position = 0
    while (start := _next_line(host_asm, b".nv_fatbin", _FATBIN_LINE.match, position)) is not None:
        kept.append(host_asm[position:start[0]])
        end = _next_line(host_asm, b".text", _TEXT_LINE.fullmatch, start[1])
        position = end[1] if end else len(host_asm)
    return b"".join([*kept, host_asm[position:]])


def _next_line(text: bytes, word: bytes, is_it: Callable[[bytes, int, int], object], position: int
               ) -> tuple[int, int] | None:
    """(start, end) of the first line starting at or after ``position`` that holds ``word`` and that ``is_it``
    accepts (the bytes are searched for the word, not matched line by line: a fatbin section is long)."""
    found = text.find(word, position)
    while found >= 0:
        start, end = text.rfind(b"\n", 0, found) + 1, text.find(b"\n", found)
        end = len(text) if end < 0 else end + 1
        if start >= position and is_it(text, start, end):
            return start, end
        found = text.find(word, end)
    return None


def sass_step(cubin: str) -> Step:
    """A cubin's SASS, as cuobjdump prints it."""
    return Step("cuobjdump", ("-sass", cubin), ("device.sass",), stdout_as="device.sass")


class NvidiaToolchain(Toolchain):
    """nvcc, cuobjdump and nvdisasm from a CUDA tree (PyPI wheels by default)."""

    vendor = "nvidia"
    host_compiler = HOST_COMPILER
    """nvcc's host compiler: its version enters nvcc's fingerprint."""
    install_hint = (
        "Install the pinned NVIDIA compiler wheels with `bash scripts/setup.sh` "
        f"(pip install {PIP_PACKAGES}), or point CASS_CUDA_HOME at a CUDA toolkit that has "
        "bin/nvcc, bin/cuobjdump and bin/nvdisasm; OpenCL needs Debian's "
        f"{OPENCL_PACKAGES} (apt-get install {OPENCL_PACKAGES}, also done by scripts/setup.sh)."
    )

    library_headers = (
        ("cuBLAS", "cublas_v2.h"), ("cuRAND", "curand_kernel.h"), ("cuFFT", "cufft.h"),
        ("cuSPARSE", "cusparse.h"), ("cuSOLVER", "cusolverDn.h"), ("thrust", "cccl/thrust/version.h"),
        ("CUB", "cccl/cub/cub.cuh"),
    )

    def __init__(self, cuda_home: Path):
        self.cuda_home = Path(cuda_home)
        super().__init__(HostLauncher([self.cuda_home / "bin"], trees=self.trees(), extra_env=self.tool_env(),
                                      mounts=self.mounts(), binds=self.binds()))

    def trees(self) -> list[Path]:
        """The folders the tools read (in the sandbox: at their paths, or where :meth:`mounts` puts them)."""
        return [self.cuda_home]

    def tool_env(self) -> dict[str, str]:
        """What the tools' environment adds (none)."""
        return {}

    def mounts(self) -> dict[Path, str]:
        """Where the tools see the toolkit in the sandbox, on every machine: nvlink writes its library folders
        (nvcc.profile's, under the toolkit) into every executable, which would else hold this machine's path."""
        return {self.cuda_home: f"{MOUNT_ROOT}/cuda"}

    def binds(self) -> dict[str, Path]:
        """Files and folders the tools see at a fixed path, which no argument names by this machine's path (none)."""
        return {}

    def tools(self) -> tuple[str, ...]:
        return ("nvcc", "cuobjdump", "nvdisasm", HOST_COMPILER, "ptxas", OPENCL_COMPILER)

    def include_root(self) -> Path:
        return self.cuda_home / "include"

    def cuda_version(self) -> tuple[int, int]:
        """CUDA's (major, minor) version, from nvcc's version output (``release 13.5``)."""
        m = re.search(r"release (\d+)\.(\d+)", self.version("nvcc"))
        if m is None:
            raise ToolchainMissingError(f"nvcc printed no CUDA release: {self.version('nvcc')!r}")
        return int(m.group(1)), int(m.group(2))

    def cuda_include_dirs(self) -> list[Path]:
        """The folders nvcc puts on the include path itself: ``$(TOP)/...`` of nvcc.profile's ``INCLUDES`` and
        ``SYSTEM_INCLUDES`` (``include`` and ``include/cccl`` for the wheels)."""
        profile = self.cuda_home / "bin" / "nvcc.profile"
        text = profile.read_text(errors="replace") if profile.is_file() else ""
        dirs = [self.cuda_home / m for line in text.splitlines() if re.match(r"\s*(SYSTEM_)?INCLUDES\b", line)
                for m in re.findall(r"\$\(TOP\)/([^\"\s]+)", line)]
        return dirs or [self.include_root()]

    def cuda_headers(self) -> list[Path]:
        """CUDA's own headers: every file of :meth:`cuda_include_dirs`."""
        return [p for d in self.cuda_include_dirs() for p in sorted(d.rglob("*")) if p.is_file()]

    def local_header_index(self) -> dict:
        """The CUDA headers (every file of :meth:`cuda_include_dirs`; the CUDA identifiers of the top-level ones)
        and ``predefined``: the macros nvcc defines for the compilers it drives (its ``-D`` flags in
        ``--dryrun``)."""
        steps = self.run_tool("nvcc", ("--dryrun", "-E", "-x", "cu", "/dev/null"))
        predefined = {m.group(1): m.group(2) if m.group(2) is not None else "1"
                      for m in re.finditer(r"(?<!\S)-D(\w+)(?:=([^\s\"]*))?", steps)}
        top_level_cuda = lambda header, name: "/" not in header and bool(CUDA_NAME.match(name))  # noqa: E731
        return {"headers": index_headers(self.cuda_include_dirs(), self.cuda_headers(), top_level_cuda),
                "predefined": dict(sorted(predefined.items()))}

    def system_include_dirs(self) -> list[Path]:
        """The system header folders nvcc's host compiler searches: the OS's and g++'s own."""
        return [Path("/usr/include"), Path("/usr/include/x86_64-linux-gnu"),
                *sorted(Path("/usr/lib/gcc").glob("x86_64-linux-gnu/*/include"))]

    def tool_path(self, tool: str) -> Path | None:
        if tool in (HOST_COMPILER, OPENCL_COMPILER):
            found = shutil.which(tool, path=self.launcher.env()["PATH"])
            return Path(os.path.realpath(found)) if found else None
        path = self.cuda_home / "bin" / tool
        return path if path.is_file() else None

    def version_command(self, tool: str) -> list[str]:
        return ["--version"]

    def companions(self, tool: str) -> tuple[str, ...]:
        return (self.host_compiler,) if tool == "nvcc" else ("nvdisasm",) if tool == "cuobjdump" else ()

    def identity_files(self, tool: str) -> list[Path]:
        home = self.cuda_home
        if tool == "nvcc":
            # nvcc compiles host code with the host compiler: its binary and C++ headers count too
            host = self.tool_path(HOST_COMPILER)
            candidates = [home / "bin", home / "nvvm" / "bin", home / "nvvm" / "libdevice",
                          home / "include", *([host] if host else []), *sorted(Path("/usr/include/c++").glob("*")),
                          *sorted(Path("/usr/lib/gcc").glob("*/*/cc1plus"))]
        elif tool == HOST_COMPILER:
            candidates = [p for p in [self.tool_path(tool)] if p]
        elif tool == OPENCL_COMPILER:
            # the compiler, its OpenCL headers (opencl-c.h, in the resource directory) and libclc
            clang = self.tool_path(tool)
            candidates = [*([clang, *sorted(clang.parent.parent.glob("lib/clang/*/include"))] if clang else []),
                          LIBCLC_NVPTX]
        elif tool == "ptxas":
            candidates = [home / "bin" / "ptxas"]
        else:
            candidates = [home / "bin" / "cuobjdump", home / "bin" / "nvdisasm"]
        return [p for p in candidates if p.exists()]

    def identity_listings(self, tool: str) -> list[Path]:
        """The system headers nvcc's host compiler finds (installing a -dev package changes what
        compiles), and the LLVM libraries the OpenCL compiler does its work in (libLLVM, libclang-cpp):
        listed, not read, since they hold hundreds of MB."""
        if tool == "nvcc":
            return [Path("/usr/include")]
        if tool == OPENCL_COMPILER and (clang := self.tool_path(tool)):
            return [clang.parent.parent / "lib"]
        return []

    @staticmethod
    def _common(flags: dict, include_dirs: Sequence[str]) -> tuple[str, ...]:
        return (*flags["common"], *(f"-I{d}" for d in include_dirs), *(f"-Xcompiler={f}" for f in flags["host"]))

    def preprocess_step(self, main: str, arch: str, flags: dict, include_dirs: Sequence[str] = (".",)) -> Step:
        """Preprocess ``main`` as its compile would, both passes (host and ``arch``'s device), keeping nothing but
        the diagnostics: ``nvcc -M`` runs the host compiler's and the device preprocessor; warnings stay on."""
        common = tuple(f for f in self._common(flags, include_dirs) if f not in ("-w", "-Xcompiler=-w"))
        return Step("nvcc", (*common, f"-arch={arch}", "-M", main, "-o", "/dev/null"), ())

    def cubin_step(self, main: str, arch: str, flags: dict, include_dirs: Sequence[str] = (".",)) -> Step:
        """nvcc's device compile of ``main`` for ``arch`` alone, into ``device.cubin``."""
        return Step("nvcc", (*self._common(flags, include_dirs), f"-arch={arch}", "-cubin", main, "-o", "device.cubin"),
                    ("device.cubin",))

    def cuda_targets(self, main: str, archs: list[str], flags: dict, include_dirs: Sequence[str]) -> list[Target]:
        common = self._common(flags, include_dirs)
        host_step = Step("nvcc", (*common, f"-arch={archs[0]}", "-Xcompiler=-S", "-c", "--objdir-as-tempdir",
                                  "--keep", main, "-o", "host.s"), ("host.s", f"host.s.{archs[0]}.cubin"))
        host = Target(kind="host", arch="x86_64", steps=(host_step,), artifact="host.s")

        devices = [Target(kind="device", arch=archs[0], steps=(host_step, sass_step(f"host.s.{archs[0]}.cubin")),
                          artifact="device.sass")]
        devices += [
            Target(kind="device", arch=arch, artifact="device.sass",
                   steps=(self.cubin_step(main, arch, flags, include_dirs), sass_step("device.cubin")))
            for arch in archs[1:]
        ]
        return [host, *devices]

    def opencl_targets(self, main: str, archs: list[str], flags: list[str],
                       include_dirs: Sequence[str]) -> list[Target]:
        """OpenCL C to PTX by clang with libclc linked in (``flags`` set the language version, the optimisation
        and the PTX's virtual arch, ``-march=sm_XX``; one PTX for every arch), then a cubin per arch by ``ptxas``
        and its SASS by cuobjdump: the route of the driver's clBuildProgram without a driver."""
        ptx = Step(OPENCL_COMPILER, ("-x", "cl", *flags, "-target", "nvptx64-unknown-nvidiacl", "-Xclang",
                                     "-finclude-default-header", "-Xclang", "-mlink-builtin-bitcode", "-Xclang",
                                     str(LIBCLC_NVPTX), *(f"-I{d}" for d in include_dirs), "-S", main,
                                     "-o", "device.ptx"), ("device.ptx",))
        return [Target(kind="device", arch=arch, artifact="device.sass",
                       steps=(ptx, Step("ptxas", (f"-arch={arch}", "device.ptx", "-o", "device.cubin"),
                                        ("device.cubin",)), sass_step("device.cubin")))
                for arch in archs]

    def finish(self, target: Target, artifact: bytes) -> bytes:
        return strip_fatbin(artifact) if target.kind == "host" else artifact

    def program_flags(self) -> tuple[str, ...]:
        """What an executable build adds to the caller's flags (none: a CUDA program as it is)."""
        return ()

    def _build_step(self, flags: list[str], include_dirs: Sequence[str], archs: list[str], rest: tuple[str, ...],
                    outputs: tuple[str, ...]) -> Step:
        """nvcc as a program's build runs it (``flags``, this platform's own, ``-I``, SASS for every arch in
        ``archs``), then ``rest``, making ``outputs``."""
        require_archs(archs, self.vendor)
        codes = [f"-gencode=arch=compute_{a.removeprefix('sm_')},code={a}" for a in archs]
        return Step("nvcc", (*flags, *self.program_flags(), *(f"-I{d}" for d in include_dirs), *codes, *rest),
                    outputs)

    def build_check_target(self, main: str, archs: list[str], flags: list[str],
                           include_dirs: Sequence[str] = (".",)) -> Target:
        """``main`` compiled, not linked, as :meth:`program_target` compiles it, keeping nothing but the outcome:
        whether a translation unit builds on this platform at all."""
        step = self._build_step(flags, include_dirs, archs, ("-c", main, "-o", "/dev/null"), ())
        return Target(kind="build_check", arch="+".join(archs), steps=(step,), artifact="")

    def program_target(self, units: str | Sequence[str], archs: list[str], flags: list[str],
                       include_dirs: Sequence[str] = (".",)) -> Target:
        """An executable of ``units`` (one source, or the main file and the units it links with) with SASS for
        every arch in ``archs`` (``sm_XX``) and the CUDA runtime linked statically, so that only the binary travels
        to a GPU host."""
        units = [units] if isinstance(units, str) else list(units)
        step = self._build_step(flags, include_dirs, archs, (*units, "-o", EXECUTABLE, "-cudart", "static"),
                                (EXECUTABLE,))
        return Target(kind="program", arch="+".join(archs), steps=(step,), artifact=EXECUTABLE)
