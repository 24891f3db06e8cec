"""HIP on NVIDIA: HIP sources built for the NVIDIA platform, so a translation runs on an NVIDIA GPU.

HIP's headers map every ``hip*`` call to CUDA when ``__HIP_PLATFORM_NVIDIA__`` is defined
(``hip/nvidia_detail``). The headers are ROCm 5.7's, from Debian trixie's ``libamdhip64-dev`` (later Debian
packages ship no ``nvidia_detail``), installed by ``scripts/setup.sh`` whichever AMD root builds the dataset.
They are written against CUDA 12 (CUDA 13 removed fields and calls they use), so the CUDA runtime headers, static
runtime and CCCL (and the cuBLAS and cuRAND headers hipBLAS and hipRAND include) are CUDA 12.9's PyPI wheels,
compiled by the pipeline's nvcc. The binary links the runtime statically: only the binary travels to a GPU host.

nvcc sees the HIP headers through a directory that holds nothing but a ``hip`` link to them
(:func:`hip_include_dir`): adding the AMD root's ``/usr/include`` itself would put that OS's C
library headers before this machine's.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import re
import subprocess
import sysconfig
import tempfile
import urllib.request
from pathlib import Path

from store.machine_cache import machine_cache
from toolchains import build_root_headers as root_headers
from toolchains.base import Toolchain, ToolchainMissingError, ToolStatus
from toolchains.debian_cuda import DebianCudaToolchain
from toolchains.headers import device_definitions, runtime_functions
from toolchains.nvidia import MOUNT_ROOT, NvidiaToolchain

CUDA12_PACKAGES = ("nvidia-cuda-runtime-cu12==12.9.79 nvidia-cuda-cccl-cu12==12.9.27 "
                   "nvidia-cuda-profiler-api-cu12==12.9.79 nvidia-curand-cu12==10.3.10.19 nvidia-cublas-cu12==12.9.1.4")
CUDA12_PARTS = ("cuda_runtime", "cuda_cccl", "cuda_profiler_api", "curand", "cublas")
"""The CUDA 12 wheels' folders under ``site-packages/nvidia``, each with an ``include``."""


HIP_HEADERS_PACKAGE = ("trixie", "libamdhip64-dev")
"""The Debian suite and package whose ``/usr/include/hip`` holds ROCm 5.7's HIP headers with ``nvidia_detail``."""
HIP_HEADERS_DIR = Path("/opt/cass-hip-nvidia/hip")
LIBRARY_PACKAGES = (("experimental", "libhipblas-dev", "hipblas"),
                    ("experimental", "libhipblas-common-dev", "hipblas-common"),
                    ("trixie", "libhipsparse-dev", "hipsparse"), ("trixie", "libhipfft-dev", "hipfft"),
                    ("trixie", "libhiprand-dev", "hiprand"), ("experimental", "libhipcub-dev", "hipcub"))
"""The hip* libraries' headers for the NVIDIA platform (suite, package, its folder under ``/usr/include``), beside
the HIP headers. hipBLAS (with hipblas-common, which it includes) and hipCUB are the default AMD root's suite's, as
on the AMD side: hipBLAS 3 declares only the v2 API hipify-perl 7 maps cuBLAS to (``hipDataType``,
``hipblasComputeType_t``; trixie's hipBLAS 0.54 takes ``hipblasDatatype_t``), and on NVIDIA includes cuBLAS's
headers, from the CUDA 12 cuBLAS wheel of :data:`CUDA12_PACKAGES`; hipCUB's CUB back end builds with CUDA 12.9's CCCL
(5.7's includes CUB iterators CCCL 2 removed). hipSPARSE, hipFFT and hipRAND are trixie's (ROCm 5.5 to 6.1 there,
written for HIP 5.x); hipRAND's NVIDIA back end includes cuRAND's headers, from the CUDA 12 cuRAND wheel."""
FLAT_LIBRARIES = ("hipblas", "hipsparse", "hipfft")
"""Libraries whose headers a HIP source names flat (``<hipblas.h>``, as hipify-perl writes them): their folders go on
the system include path too."""


def default_hip_headers() -> Path:
    """ROCm 5.7's HIP headers as ``scripts/setup.sh`` installs them (``CASS_HIP_HEADERS`` wins)."""
    return Path(os.environ.get("CASS_HIP_HEADERS") or HIP_HEADERS_DIR)


def install_hip_headers(dest: Path, mirror: str) -> dict[str, str]:
    """Put the ``hip`` headers of :data:`HIP_HEADERS_PACKAGE` at ``dest`` and each library's of
    :data:`LIBRARY_PACKAGES` beside it, where a folder is missing, has no record beside it (:func:`headers_record`:
    one installed before records were kept) or its record names another suite or package; the packages' versions."""
    wanted = [(*HIP_HEADERS_PACKAGE, "hip", dest), *((s, p, f, dest.parent / f) for s, p, f in LIBRARY_PACKAGES)]
    installed = {}
    for suite, package, folder, path in wanted:
        record, source = headers_record(path), f"{suite} {package}\n"
        if path.is_dir() and record.is_file() and record.read_text() == source:
            continue
        installed[package] = install_headers(suite, package, folder, path, mirror)
        record.write_text(source)
    return installed


def headers_record(folder: Path) -> Path:
    """The file beside an installed header folder naming the Debian suite and package it came from (outside the
    folder, whose files are the toolchain's identity)."""
    return folder.with_name(f".{folder.name}.source")


def install_headers(suite: str, package: str, folder: str, dest: Path, mirror: str) -> str:
    """Put ``/usr/include/<folder>`` of Debian ``suite``'s ``package`` at ``dest``, as apt would check it: the suite's
    ``InRelease`` verified by gpgv against Debian's archive keyring, the package index against its SHA-256 there, the
    package against the index's; unpacked by dpkg-deb. Returns the package's version."""
    release = verified_release(fetch(f"{mirror}/dists/{suite}/InRelease"), f"{mirror} {suite}")
    index_name = "main/binary-amd64/Packages.xz"
    packed = fetch(f"{mirror}/dists/{suite}/{index_name}")
    check_sha256(packed, sha256_listed(release, index_name), index_name)
    index = lzma.decompress(packed).decode()
    stanza = next((s for s in index.split("\n\n") if s.startswith(f"Package: {package}\n")), None)
    if stanza is None:
        raise ToolchainMissingError(f"{mirror}: Debian {suite} lists no {package}")
    fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line.startswith(" "))
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:   # beside dest: the headers arrive by one rename
        deb = Path(tmp) / "package.deb"
        deb.write_bytes(fetch(f"{mirror}/{fields['Filename']}"))
        check_sha256(deb.read_bytes(), fields["SHA256"], fields["Filename"])
        subprocess.run(["dpkg-deb", "-x", str(deb), f"{tmp}/tree"], check=True)
        if dest.exists():
            os.rename(dest, f"{tmp}/old")
        os.rename(f"{tmp}/tree/usr/include/{folder}", dest)
    return fields["Version"]


DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as resp:
        return resp.read()


def verified_release(signed: bytes, what: str) -> str:
    """The text of a clear-signed ``InRelease`` whose signature gpgv accepts with :data:`DEBIAN_KEYRING`."""
    proc = subprocess.run(["gpgv", "--keyring", str(DEBIAN_KEYRING), "--output", "-", "-"], input=signed,
                          capture_output=True, check=False)
    if proc.returncode:
        raise ToolchainMissingError(f"{what}: InRelease has no good signature: {proc.stderr.decode()[-400:]}")
    return proc.stdout.decode()


def sha256_listed(release: str, name: str) -> str:
    """The SHA-256 a Release file lists for ``name``."""
    section = release.partition("\nSHA256:\n")[2]
    for line in section.splitlines():
        if not line.startswith(" "):
            break
        digest, _, listed = line.split()
        if listed == name:
            return digest
    raise ToolchainMissingError(f"the Release file lists no SHA-256 for {name}")


def check_sha256(data: bytes, expected: str, what: str) -> None:
    if (got := hashlib.sha256(data).hexdigest()) != expected:
        raise ToolchainMissingError(f"{what}: SHA-256 {got}, the signed index says {expected}")


def default_cuda12_root() -> Path:
    """Where the CUDA 12 wheels are installed in this Python environment."""
    return Path(sysconfig.get_paths()["purelib"]) / "nvidia"


def library_headers(hip_headers: Path) -> list[Path]:
    """The library header folders of :data:`LIBRARY_PACKAGES` present beside ``hip_headers``."""
    return [hip_headers.parent / f for _, _, f in LIBRARY_PACKAGES if (hip_headers.parent / f).is_dir()]


def hip_include_dir(hip_headers: Path, libraries: list[Path]) -> Path:
    """A directory holding only ``hip`` -> ``hip_headers`` and a link to each folder of ``libraries``, made once per
    set of folders in the cache (its name holds a digest of where every link points; a damaged link is made again)."""
    targets = [Path(os.path.realpath(t)) for t in (hip_headers, *libraries)]
    names = ["hip", *(t.name for t in libraries)]
    links = hashlib.sha256(repr(list(zip(names, map(str, targets), strict=True))).encode()).hexdigest()[:16]
    folder = machine_cache("hip-include") / f"{str(targets[0]).strip('/').replace('/', '_')}_{links}"
    for name, target in zip(names, targets, strict=True):
        link = folder / name
        if not link.is_symlink() or link.readlink() != target:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{name}-{os.getpid()}"
            tmp.unlink(missing_ok=True)
            tmp.symlink_to(target)
            tmp.replace(link)
    return folder


def missing_hip_headers(vendor: str, tool: str, hip_headers: Path) -> ToolStatus | None:
    """``tool``'s status where ``hip_headers`` has no NVIDIA back end (``nvidia_detail``), else None."""
    if (hip_headers / "nvidia_detail").is_dir():
        return None
    return ToolStatus(vendor, tool, None, None, f"no HIP headers for NVIDIA at {hip_headers}")


class HipNvidiaToolchain(NvidiaToolchain):
    """nvcc with HIP's NVIDIA headers and CUDA 12's runtime: HIP programs as NVIDIA executables."""

    vendor = "hip-nvidia"
    install_hint = (
        "HIP on NVIDIA needs the CUDA 12 runtime wheels (pip install "
        f"{CUDA12_PACKAGES}; `bash scripts/setup.sh` does) and ROCm 5.7's HIP headers from Debian trixie's "
        f"libamdhip64-dev in {HIP_HEADERS_DIR} (`bash scripts/setup.sh`, or CASS_HIP_HEADERS=<a ROCm 5.x include/hip>)."
    )

    def __init__(self, cuda_home: Path, hip_headers: Path, cuda12_root: Path):
        self.hip_headers = Path(hip_headers)
        self.cuda12 = [Path(cuda12_root) / part for part in CUDA12_PARTS]
        self.libraries = library_headers(self.hip_headers)
        self.hip_include = hip_include_dir(self.hip_headers, self.libraries) if self.hip_headers.is_dir() else None
        super().__init__(cuda_home)

    def trees(self) -> list[Path]:
        return [*super().trees(), *self.cuda12, self.hip_headers, *self.libraries,
                *([self.hip_include] if self.hip_include else [])]

    def tool_env(self) -> dict[str, str]:
        """HIP's and CUDA 12's folders for nvcc. Their paths differ between machines: they reach nvcc through its
        environment, never the arguments of an action key (the files themselves enter the fingerprint), and nvcc
        sees them at fixed paths (:meth:`mounts`), so an executable holds no path of this machine's."""
        flat = [f"-isystem={self.hip_include / p.name}" for p in self.libraries if p.name in FLAT_LIBRARIES]
        paths = [f"-I{self.hip_include}", *(f"-I{p / 'include'}" for p in self.cuda12), *flat,
                 f"-L{self.cuda12[0] / 'lib'}"]
        return {"NVCC_PREPEND_FLAGS": " ".join([os.environ.get("NVCC_PREPEND_FLAGS", ""), *paths]).strip()}

    def tools(self) -> tuple[str, ...]:
        return ("nvcc",)

    def mounts(self) -> dict[Path, str]:
        return {**super().mounts(), **{p: f"{MOUNT_ROOT}/cuda12/{p.name}" for p in self.cuda12},
                **({self.hip_include: f"{MOUNT_ROOT}/hip-include"} if self.hip_include else {})}

    def status(self, tool: str) -> ToolStatus:
        if problem := missing_hip_headers(self.vendor, tool, self.hip_headers):
            return problem
        if missing := [str(p) for p in self.cuda12 if not (p / "include").is_dir()]:
            return ToolStatus(self.vendor, tool, None, None, f"no CUDA 12 headers at {', '.join(missing)}")
        return super().status(tool)

    def identity_files(self, tool: str) -> list[Path]:
        return [*super().identity_files(tool), self.hip_headers, *self.libraries, *(p / "include" for p in self.cuda12),
                self.cuda12[0] / "lib"]

    def program_flags(self) -> tuple[str, ...]:
        return ("-x", "cu", "-D__HIP_PLATFORM_NVIDIA__")

    def local_header_index(self) -> dict:
        """What HIP's NVIDIA platform declares: ``typedefs``, the names it declares as typedefs (``typedef enum
        cudaMemcpyKind hipMemcpyKind;``), which no ``enum``, ``struct`` or ``union`` keyword may name there; and
        ``runtime``, the :func:`~toolchains.headers.runtime_functions` of HIP's runtime header as nvcc preprocesses
        it for this platform (the overloads it has and those it lacks); ``definitions``: the device functions HIP's
        whole runtime header defines on this platform, CUDA's among them, by name and parameter types
        (:func:`~toolchains.headers.device_definitions`)."""
        self.require("nvcc")
        api, runtime = (self.run_tool("nvcc", ("-E", *self.program_flags(), "-include", f"hip/{header}", "/dev/null"))
                        for header in ("hip_runtime_api.h", "hip_runtime.h"))
        return {"typedefs": platform_typedefs(self.hip_headers),
                "runtime": [f for f in runtime_functions(api) if f["name"].startswith("hip")],
                "definitions": device_definitions(runtime)}


class HipNvidiaBuildRootToolchain(root_headers.WithBuildRootHeaders, HipNvidiaToolchain):
    """HIP's NVIDIA platform with the Debian packages' build root's system headers searched after its own
    (:mod:`toolchains.build_root_headers`; bwrap mode only): a pair's HIP side that compiled for AMD with them
    (``amd.build_root_headers``) is checked on this platform with them too."""

    vendor = "hip-nvidia-build-root"
    side = HipNvidiaToolchain.vendor
    compiler = "nvcc"

    def __init__(self, cuda_home: Path, hip_headers: Path, cuda12_root: Path, build_root: Path):
        self.build_root = root_headers.checked_build_root(build_root, self.setting)   # before :meth:`binds` reads it
        super().__init__(cuda_home, hip_headers, cuda12_root)
        root_headers.require_bwrap(self.launcher.sandbox.mode, self.build_root, self.setting)

    @classmethod
    def over(cls, platform: HipNvidiaToolchain, build_root: Path) -> HipNvidiaBuildRootToolchain:
        """``platform`` (this machine's HIP-NVIDIA toolchain) with ``build_root``'s headers after its own."""
        platform = local_platform(platform, cls.setting, "the build root's headers are mounted here")
        return cls(platform.cuda_home, platform.hip_headers, platform.cuda12[0].parent, build_root)

    def binds(self) -> dict[str, Path]:
        return root_headers.header_mounts(self.build_root)

    def program_flags(self) -> tuple[str, ...]:
        """The platform's, and the build root's header folders searched last by nvcc's host compiler, which
        preprocesses both passes."""
        return (*super().program_flags(),
                *(f"-Xcompiler=-idirafter,{folder}" for folder in self.searched_last()))


HIP_MOUNT = "/tmp/cass-hip-include"
"""Where :class:`HipNvidiaDebianCudaToolchain`'s nvcc sees HIP's headers (``hip``) and each library's, in the root."""


class HipNvidiaDebianCudaToolchain(DebianCudaToolchain):
    """HIP's NVIDIA platform on the Debian suite's own CUDA (:mod:`toolchains.debian_cuda`; bwrap mode only): nvcc
    11.8 in the Debian packages' build root, with CUDA's headers and the build dependencies' there, and HIP's NVIDIA
    headers (and the hip* libraries', :func:`library_headers`) mounted read-only at :data:`HIP_MOUNT`. A pair whose
    CUDA side only that CUDA compiled (``nvidia.debian_cuda``) is checked on it: its code uses what CUDA 12 removed
    (texture references), and HIP's headers map each ``hip*`` name onto the CUDA they are compiled with."""

    vendor = "hip-nvidia-debian"
    side = HipNvidiaToolchain.vendor
    setting = "nvidia.debian_cuda"
    """The parameter that asks for Debian's CUDA."""
    install_hint = (f"HIP on Debian's CUDA needs ROCm 5.7's HIP headers for NVIDIA in {HIP_HEADERS_DIR} (`bash "
                    f"scripts/setup.sh`) and the suite's CUDA in the build root ({DebianCudaToolchain.install_hint})")

    def __init__(self, root: Path, hip_headers: Path):
        self.hip_headers = Path(hip_headers)
        self.libraries = library_headers(self.hip_headers)
        folders = {"hip": self.hip_headers, **{p.name: p for p in self.libraries}}
        super().__init__(root_headers.checked_build_root(root, self.setting),
                         {f"{HIP_MOUNT}/{name}": Path(os.path.realpath(p)) for name, p in folders.items()})
        root_headers.require_bwrap(self.launcher.sandbox.mode, self.root, self.setting)

    @classmethod
    def over(cls, platform: HipNvidiaToolchain, build_root: Path) -> HipNvidiaDebianCudaToolchain:
        """The HIP headers of ``platform`` (this machine's HIP-NVIDIA toolchain) on ``build_root``'s CUDA."""
        platform = local_platform(platform, cls.setting, "its HIP headers go into the build root")
        return cls(build_root, platform.hip_headers)

    def tools(self) -> tuple[str, ...]:
        return ("nvcc", self.host_compiler)

    def status(self, tool: str) -> ToolStatus:
        return missing_hip_headers(self.vendor, tool, self.hip_headers) or super().status(tool)

    def identity_files(self, tool: str) -> list[Path]:
        """The root's dpkg status, and for nvcc HIP's headers and the libraries' too."""
        headers = [self.hip_headers, *self.libraries] if tool == "nvcc" else []
        return [*super().identity_files(tool), *headers]

    def local_layout(self) -> dict:
        """``libraries``: the hip* libraries whose headers are mounted beside HIP's (what planning a worker's copy
        needs of this installation)."""
        return {"libraries": [p.name for p in self.libraries]}

    def program_flags(self) -> tuple[str, ...]:
        """HIP's platform macro, and its headers where nvcc sees them (the flat libraries' folders too, as
        :meth:`HipNvidiaToolchain.tool_env` gives them)."""
        flat = [f"-isystem={HIP_MOUNT}/{name}" for name in self.layout()["libraries"] if name in FLAT_LIBRARIES]
        return ("-x", "cu", "-D__HIP_PLATFORM_NVIDIA__", f"-I{HIP_MOUNT}", *flat)


def local_platform(platform: Toolchain, setting: str, why: str) -> HipNvidiaToolchain:
    """``platform`` where it is this machine's HIP-NVIDIA toolchain, else a ValueError naming ``setting``, which needs
    it here (``why``)."""
    if type(platform) is not HipNvidiaToolchain:
        raise ValueError(f"{setting} needs HIP's NVIDIA platform on this machine, not {platform.vendor} "
                         f"({type(platform).__name__}): {why}")
    return platform


_TYPEDEF = re.compile(r"\btypedef\b[^;{}]*?\b(\w+)\s*;")


def platform_typedefs(hip_headers: Path) -> list[str]:
    """The names the ``typedef ... name;`` declarations (without a body) of HIP's NVIDIA headers declare."""
    return sorted({m.group(1) for path in sorted((hip_headers / "nvidia_detail").glob("*.h"))
                   for m in _TYPEDEF.finditer(path.read_text(errors="replace"))})
