"""The Debian suite's own CUDA: ``nvidia-cuda-toolkit`` from the suite's ``non-free`` component (CUDA 11.8 with g++ 11
in bookworm), installed into the Debian packages' build root (:mod:`toolchains.build_root`), where the pipeline's
nvcc fails a file.

CUDA 12 and 13 removed what older code still uses: texture and surface references (``texture<float, 1>``,
``cudaBindTexture``), ``cudaThreadSynchronize``, and Thrust and CUB names CCCL 3 dropped. A Debian package of the
suite was written against that suite's CUDA, so its build root is where the package's own build compiles it: nvcc
11.8 there sees the root's system headers, the package's build dependencies among them. The root's dpkg status names
every package and version in it, and is the toolchain's identity in action keys (as for the configure steps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from toolchains.base import Target, Toolchain
from toolchains.build_root import STATUS, apt
from toolchains.launchers import ChrootLauncher
from toolchains.nvidia import NvidiaToolchain

PACKAGES = ("nvidia-cuda-toolkit", "nvidia-cuda-toolkit-gcc", "libthrust-dev", "libcub-dev", "libcu++-dev")
"""What the root gets: nvcc with its CUDA libraries and headers, the g++ it supports (the suite's default g++ is
newer than CUDA 11.8 accepts), and the Thrust, CUB and libcu++ headers Debian packages apart from the toolkit."""
COMPONENTS = ("main", "contrib", "non-free")
"""The archive components the root's apt reads: the toolkit is in non-free, and needs contrib."""
TOOLKIT_BIN = "/usr/lib/nvidia-cuda-toolkit/bin"
"""Debian's nvcc and its ``g++`` wrapper, which runs the newest g++ CUDA 11.8 supports: first on the tools' PATH."""
HOST_COMPILER = "g++-11"
"""The g++ that wrapper runs in bookworm (``nvidia-cuda-toolkit-gcc``'s dependency)."""
HEADER_PACKAGES = ("nvidia-cuda-dev", "libthrust-dev", "libcub-dev", "libcu++-dev")
"""The packages whose files under ``/usr/include`` are CUDA's headers."""


def include_paths(root: Path, packages: Sequence[str] = HEADER_PACKAGES) -> list[str]:
    """The paths under ``/usr/include`` that ``packages`` (default: CUDA's headers, :data:`HEADER_PACKAGES`) installed
    in the Debian root ``root`` (dpkg's file lists, in their order; none where the packages are not installed)."""
    info = root / "var/lib/dpkg/info"
    lists = [path for name in packages for pattern in (f"{name}.list", f"{name}:*.list")
             for path in sorted(info.glob(pattern))]
    return list(dict.fromkeys(line for path in lists for line in path.read_text().splitlines()
                              if line.startswith("/usr/include/")))


def toolkit_packages(root: Path) -> list[str]:
    """Every package installed in the Debian root ``root`` that is built from the Debian source package of one of
    :data:`HEADER_PACKAGES` (the CUDA toolkit's, Thrust's, CUB's, libcu++'s: ``libcupti-dev`` and ``libnvidia-ml-dev``
    besides them), from its dpkg status."""
    path = root / STATUS
    installed = {}
    for stanza in (path.read_text(errors="replace") if path.is_file() else "").split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines() if ": " in line and not line[0].isspace())
        if fields.get("Status", "").endswith(" installed") and "Package" in fields:   # held ones too
            installed[fields["Package"]] = fields.get("Source", fields["Package"]).split(" ")[0]
    sources = {installed[name] for name in HEADER_PACKAGES if name in installed}
    return sorted(name for name, source in installed.items() if source in sources)


def build_root_of(dparams: dict, asked_by: str = "nvidia.debian_cuda") -> Path:
    """The build root (``debian_sources.build_root``) that ``nvidia.debian_cuda`` puts the toolkit in, or that another
    parameter, ``asked_by``, uses."""
    if not dparams["build_root"]:
        raise ValueError(f"{asked_by} is on, but debian_sources.build_root names no Debian build root")
    return Path(dparams["build_root"])


def installed(root: Path) -> bool:
    """Whether dpkg in ``root`` has every package of :data:`PACKAGES` installed (an install cut short has not)."""
    path = root / STATUS
    status = path.read_text(errors="replace") if path.is_file() else ""
    done = {stanza.split("\n", 1)[0].removeprefix("Package: ") for stanza in status.split("\n\n")
            if "\nStatus: install ok installed" in stanza}
    return set(PACKAGES) <= done


def with_components(line: str) -> str:
    """A ``deb`` line of sources.list reading :data:`COMPONENTS` (its options, archive and suite kept)."""
    words = line.split()   # deb [options] archive suite components...; options may hold spaces
    archive = next(i for i, w in enumerate(words) if w.endswith("]")) + 1 if words[1].startswith("[") else 1
    return " ".join([*words[:archive + 2], *COMPONENTS])


def install(root: Path, timeout_s: float) -> bool:
    """Install :data:`PACKAGES` into the Debian root ``root`` (its apt then reads :data:`COMPONENTS`; the downloaded
    packages are removed after) unless they are installed; True if installed."""
    if installed(root):
        return False
    sources = root / "etc/apt/sources.list"
    lines = sources.read_text().splitlines()
    widened = [with_components(line) if line.startswith("deb ") else line for line in lines]
    if widened != lines:
        sources.write_text("\n".join(widened) + "\n")
        apt(root, "update", f"apt-get update in {root}", timeout_s)
    apt(root, "install -y --no-install-recommends " + " ".join(PACKAGES), f"installing {PACKAGES[0]} in {root}",
        timeout_s)
    apt(root, "clean", f"apt-get clean in {root}", timeout_s)
    return True


class DebianCudaToolchain(NvidiaToolchain):
    """nvcc, cuobjdump and nvdisasm of the Debian suite's CUDA, run inside its root (:class:`ChrootLauncher`). No
    OpenCL: the pipeline's NVIDIA toolchain compiles that."""

    vendor = "nvidia-debian"
    side = "nvidia"
    host_compiler = HOST_COMPILER
    install_hint = ("Install the Debian suite's CUDA into the build root: `nvidia.debian_cuda: true` makes stage "
                    "fetch_debian do it (apt-get install " + " ".join(PACKAGES) + " from non-free).")
    library_headers = (("cuBLAS", "cublas_v2.h"), ("cuRAND", "curand_kernel.h"), ("cuFFT", "cufft.h"),
                       ("cuSPARSE", "cusparse.h"), ("thrust", "thrust/version.h"), ("CUB", "cub/cub.cuh"))

    def __init__(self, root: Path, mounts: Mapping[str, Path] | None = None):
        # not NvidiaToolchain's: no CUDA tree of this machine to mount; ``mounts``: what else the tools see in the
        # root, by the path under /tmp they see it at (:class:`ChrootLauncher`)
        self.root = Path(root)
        Toolchain.__init__(self, ChrootLauncher(self.root, extra_env={"PATH": f"{TOOLKIT_BIN}:/usr/bin:/bin"},
                                                mounts=mounts))

    def tools(self) -> tuple[str, ...]:
        return ("nvcc", "cuobjdump", "nvdisasm", self.host_compiler)

    def tool_path(self, tool: str) -> Path | None:
        path = self.root / "usr/bin" / tool
        return path if path.is_file() else None

    def identity_files(self, tool: str) -> list[Path]:
        """The root's dpkg status: every package and version in it (the toolkit, g++, the system headers)."""
        status = self.root / STATUS
        return [p for p in (self.tool_path(tool), status) if p is not None and p.is_file()]

    def identity_listings(self, tool: str) -> list[Path]:
        """None: nvcc sees the root's system headers, whose packages the dpkg status names, not this machine's."""
        return []

    def include_root(self) -> Path:
        return self.root / "usr/include"

    def cuda_include_dirs(self) -> list[Path]:
        """Debian installs CUDA's headers into the system's ``/usr/include``."""
        return [self.include_root()]

    def cuda_headers(self) -> list[Path]:
        """The headers the toolkit's and the Thrust, CUB and libcu++ packages installed (dpkg's file lists): the
        root's ``/usr/include`` holds every other package's too."""
        return [p for line in include_paths(self.root)
                if (p := self.root / line.lstrip("/")).is_file() and not p.is_symlink()]

    def system_include_dirs(self) -> list[Path]:
        return [self.root / "usr/include", self.root / "usr/include/x86_64-linux-gnu",
                *sorted((self.root / "usr/lib/gcc").glob("x86_64-linux-gnu/*/include"))]

    def opencl_targets(self, main: str, archs: list[str], flags: list[str],
                       include_dirs: Sequence[str]) -> list[Target]:
        raise ValueError(f"{main}: {self.vendor} compiles no OpenCL C (the pipeline's NVIDIA toolchain does)")

