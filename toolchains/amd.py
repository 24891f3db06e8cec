"""AMD toolchain: hipify-perl for CUDA -> HIP, hipcc for host x86 and gfx device assembly.

Two kinds of installation are supported behind the same class:

* a Debian OS root, entered per tool call (:class:`ChrootLauncher`), built by ``scripts/setup.sh``
  for one of :data:`AMD_SUITES`: ``trixie`` (ROCm 5.7: hipcc 5.7.1, clang 17, device libraries with
  native gfx1100 bitcode, hipify-perl 6.0.2) or ``sid`` (ROCm 6.4: hipcc 7.0.2 with HIP 6.4, clang
  21, hipify-perl 7.0.2; a moving target, its versions are in the fingerprints);
* a native ROCm install (``/opt/rocm``) on a real AMD vendor host.

Device assembly comes from ``--cuda-device-only -S`` and host assembly from
``--cuda-host-only -S``; the HIP platform is forced to AMD (hipcc otherwise picks NVIDIA when it
sees nvcc on PATH).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolchains.amd_root import RootSeal, valid_seal
from toolchains.base import EXECUTABLE, Step, Target, Toolchain, ToolchainMissingError
from toolchains.headers import device_definitions, index_headers
from toolchains.hipify_script import header_map, name_map, warning_tables
from toolchains.launchers import ChrootLauncher, HostLauncher

AMD_PACKAGES = (
    "hipcc hipify-perl libhipblas-dev libhipfft-dev libhipcub-dev librocthrust-dev libhipsparse-dev "
    "libhiprand-dev libhipsolver-dev"
)
"""The compiler, HIPIFY and the library headers HIPIFY maps cuBLAS, cuFFT, CUB, thrust, cuSPARSE,
cuRAND and cuSOLVER to (real code fails on a missing header without them); the same names in
every suite."""


@dataclass(frozen=True)
class AmdSuite:
    """A Debian suite the AMD root can be built from: where its root lives by default, the apt options it
    needs (sid's Release file is past its Valid-Until date on these machines), the suite debootstrap makes
    (``base``; default: the suite itself) and further apt sources, and the libraries real code includes that
    this suite adds beyond :data:`AMD_PACKAGES` (packages, and a header of each that proves it is there)."""

    name: str
    default_root: Path
    apt_options: tuple[str, ...] = ()
    base: str = ""
    sources: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    library_headers: tuple[tuple[str, str], ...] = ()


_UNCHECKED = ("-o", "Acquire::Check-Valid-Until=false")
_HIPBLASLT = ("hipBLASLt", "hipblaslt/hipblaslt.h")
AMD_SUITES = {
    "trixie": AmdSuite("trixie", Path("/opt/cass-amd-root")),
    "sid": AmdSuite("sid", Path("/opt/cass-amd-root-sid"), _UNCHECKED, packages=("libhipblaslt-dev",),
                    library_headers=(_HIPBLASLT,)),
    "experimental": AmdSuite(
        "experimental", Path("/opt/cass-amd-root-experimental"), (*_UNCHECKED, "-t", "experimental"), base="sid",
        sources=("experimental main",), packages=("libhipblaslt-dev", "librocwmma-dev"),
        library_headers=(_HIPBLASLT, ("rocWMMA", "rocwmma/rocwmma.hpp"))),
}
"""The AMD toolchains ``amd.toolchain`` in params.yaml can name: trixie (ROCm 5.7), sid (ROCm 6.4) and
experimental (sid with experimental's ROCm, 7.2 when last built)."""


DEFAULT_AMD_SUITE = "experimental"
"""params.yaml's default ``amd.toolchain``, also what a vendor host started without it enters."""


def amd_suite(name: str) -> AmdSuite:
    if name not in AMD_SUITES:
        raise ValueError(f"params.yaml amd.toolchain is {name!r}; choose one of {sorted(AMD_SUITES)}")
    return AMD_SUITES[name]

WARP_SYNC_HIP = (6, 2)
"""The first HIP version that declares the ``_sync`` warp builtins (opt-in, 64-bit masks)."""

OTHER_PLATFORM = ("nvidia_detail", "nvcc_detail")
"""HIP's headers for its NVIDIA back end: hipcc with ``HIP_PLATFORM=amd`` never includes them."""

NVCC_PREINCLUDE = "cuda_runtime.h"
"""The header nvcc includes before every CUDA file."""

CUDA_DIALECT = ("-Wno-register",)
"""C++ that nvcc and its host compiler take and clang refuses by default: the ``register`` storage class, removed
in C++17 (g++ and nvcc's front end warn; clang errors unless told not to). A switch, not a rewrite: the code means
the same without it."""

NO_CUID = ("-fuse-cuid=none",)
"""No compilation-unit ID: from clang 18 every HIP object defines ``__hip_cuid_<hash of the file's name and the
options>``, so one kernel under two file names would compile to two assemblies. A program that is not linked with
``-fgpu-rdc`` does not use it."""

COOPERATIVE_GROUPS_FUNCTIONS = frozenset({"reduce"})
"""CUDA's cooperative-groups functions the header index records where a HIP header names them, besides hipify-perl's
targets (the repair layer's ``cooperative_groups_reduce`` asks whether HIP has ``reduce``)."""

NV_ATOMIC_OPERATIONS = ("add", "sub", "and", "or", "xor", "min", "max")
"""The read-modify-write operations of CUDA's ``__nv_atomic_fetch_<op>`` / ``__nv_atomic_<op>`` builtins (CUDA 12.8)."""
CUDA_DEVICE_BUILTINS = frozenset({
    *(f"__nv_atomic_{kind}" for kind in ("load", "load_n", "store", "store_n", "exchange", "exchange_n",
                                         "compare_exchange", "compare_exchange_n", "thread_fence")),
    *(f"__nv_atomic_{op}" for op in NV_ATOMIC_OPERATIONS), *(f"__nv_atomic_fetch_{op}" for op in NV_ATOMIC_OPERATIONS),
    "__ldcg", "__ldca", "__ldcs", "__ldlu", "__stwb", "__stcg", "__stcs", "__stwt", "__dp4a"})
"""CUDA device builtins hipify-perl leaves as they are, which the header index records where a HIP header names them
(the repair layer's ``cuda_device_builtins`` defines, for AMD, those HIP's runtime header never names)."""

AMD_ENV = {"HIP_PLATFORM": "amd", "PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}
"""hipcc must target AMD (it picks NVIDIA when it sees nvcc); hipify-perl's hash order (the order
of some warnings) is fixed."""

LLVM_TOOLS = ("llvm-mc", "ld.lld", "clang-offload-bundler")
"""The LLVM tools that turn device assembly into a program: assembler, linker, offload bundler."""

LIBRARY_SUBDIRS = ("hipblas", "hiprand", "hipsparse", "hipfft", "hipsolver", "rocblas", "rocrand", "rocsparse",
                   "hipblaslt")
"""Library header folders under the toolchain's include directory. hipify-perl 6.0 rewrites
``<cublas_v2.h>``, ``<curand.h>`` and ``<cusparse.h>`` to flat names (``<hipblas.h>``, ...)
while Debian and ROCm 6 install those headers in per-library folders: they go on the system
include path (``-isystem``, after the sample's own ``-I`` directories), where they exist."""


class AmdToolchain(Toolchain):
    """hipcc and hipify-perl, in a chroot root or a native ROCm tree."""

    vendor = "amd"
    install_hint = (
        "Get the AMD toolchain root of params.yaml amd.toolchain with `bash scripts/setup.sh` (the pinned root "
        "pulled through DVC, or debootstrap of that Debian suite into CASS_AMD_ROOT, default "
        "/opt/cass-amd-root-experimental, /opt/cass-amd-root for trixie, /opt/cass-amd-root-sid for sid, then "
        f"apt-get install {AMD_PACKAGES} inside it; needs root; CASS_AMD_SUITES='trixie sid' builds both), or set "
        "CASS_ROCM_PATH to a ROCm install on an AMD host."
    )

    library_headers = (
        ("hipBLAS", "hipblas/hipblas.h"), ("hipRAND", "hiprand/hiprand_kernel.h"),
        ("hipFFT", "hipfft/hipfft.h"), ("hipSPARSE", "hipsparse/hipsparse.h"),
        ("hipSOLVER", "hipsolver/hipsolver.h"), ("rocThrust", "thrust/version.h"),
        ("hipCUB", "hipcub/hipcub.hpp"),
    )

    optional_library_headers = tuple(dict.fromkeys(h for suite in AMD_SUITES.values() for h in suite.library_headers))
    """Libraries some suites add (hipBLASLt, rocWMMA): reported, not required."""

    @classmethod
    def in_root(cls, root: Path) -> AmdToolchain:
        return cls(ChrootLauncher(root, extra_env=AMD_ENV))

    @classmethod
    def native(cls, rocm_path: Path) -> AmdToolchain:
        return cls(HostLauncher([rocm_path / "bin", rocm_path / "llvm" / "bin"],
                                extra_env={**AMD_ENV, "ROCM_PATH": str(rocm_path)}, trees=[rocm_path]))

    def tools(self) -> tuple[str, ...]:
        return ("hipify-perl", "hipcc", *self.llvm_tools(), self.opencl_compiler)

    @property
    def opencl_compiler(self) -> str:
        """The clang that compiles OpenCL C for amdgcn (the one hipcc drives; ``clang-17`` in a Debian root)."""
        return f"clang{self.layout()['llvm_suffix']}"

    def llvm_tools(self) -> tuple[str, str, str]:
        """This installation's LLVM assembler, linker and offload bundler: ``llvm-mc``, ``ld.lld`` and
        ``clang-offload-bundler`` (ROCm), or Debian's names with the LLVM version suffix (``llvm-mc-17``)."""
        suffix = self.layout()["llvm_suffix"]
        return tuple(f"{tool}{suffix}" for tool in LLVM_TOOLS)

    @property
    def assembler(self) -> str:
        return self.llvm_tools()[0]

    def local_layout(self) -> dict:
        suffix = ""
        if isinstance(self.launcher, ChrootLauncher):
            versioned = sorted(self._fs("/usr/bin").glob("llvm-mc-*"))
            if versioned:
                suffix = versioned[-1].name.removeprefix("llvm-mc")
        include = self._include()
        script = self.tool_path("hipify-perl")
        tables = warning_tables(script.read_text(errors="replace")) if script else ((), (), (), ())
        hipblas = self._fs(f"{include}/hipblas/hipblas.h")
        runtime = header_map(script.read_text(errors="replace")).get(NVCC_PREINCLUDE, "") if script else ""
        return {"llvm_suffix": suffix, "hipify_warning_tables": [list(t) for t in tables], "preinclude": runtime,
                "hipblas_v2": hipblas.is_file() and "HIPBLAS_V2" in hipblas.read_text(errors="replace"),
                "library_include_dirs": [f"{include}/{sub}" for sub in LIBRARY_SUBDIRS
                                         if self._fs(f"{include}/{sub}").is_dir()]}

    def local_header_index(self) -> dict:
        """The HIP headers (every file under the include directory's ``hip/``, and the headers hipify-perl
        maps CUDA headers to, with what they include, on the include directory and the library folders),
        ``hipify``: hipify-perl's header map, and ``hipify_names``: its identifier map (each header keeps the
        names of that map's HIP side, and of :data:`COOPERATIVE_GROUPS_FUNCTIONS` and
        :data:`CUDA_DEVICE_BUILTINS`, that it names); ``definitions``: the device functions the header hipcc
        includes first defines for AMD, by name and parameter types (:func:`~toolchains.headers.device_definitions`
        of its host pass)."""
        script = self.tool_path("hipify-perl")
        text = script.read_text(errors="replace") if script else ""
        root = self.include_root()
        dirs = [root, *(self._fs(d) for d in self.library_include_dirs())]
        hipify, names = header_map(text), name_map(text)
        mapped = [p for name in hipify.values() if name for d in dirs if (p := d / name).is_file()]
        hip = sorted(p for p in (root / "hip").rglob("*") if p.is_file())
        targets = set(names.values()) | COOPERATIVE_GROUPS_FUNCTIONS | CUDA_DEVICE_BUILTINS
        return {"headers": index_headers(dirs, [*hip, *mapped], lambda _, name: name in targets, OTHER_PLATFORM),
                "hipify": hipify, "hipify_names": names, "definitions": device_definitions(self.run_tool(
                    "hipcc", ("-E", "-x", "hip", "--cuda-host-only", *self.platform_defines(), *self.preinclude(),
                              "/dev/null")))}

    def _fs(self, inner: str) -> Path:
        """A path of the toolchain's filesystem, as seen from this machine."""
        if isinstance(self.launcher, ChrootLauncher):
            return self.launcher.host_path(inner)
        return Path(inner)

    def installation_digest(self) -> str | None:
        """The digest of the root's stored tree while its seal holds (:mod:`toolchains.amd_root`)."""
        return self.seal.root if self.seal else None

    @functools.cached_property
    def seal(self) -> RootSeal | None:
        """The root's seal if it still holds, checked once (none for a native ROCm install)."""
        if not isinstance(self.launcher, ChrootLauncher) or not self.launcher.root.is_dir():
            return None
        return valid_seal(self.launcher.root)

    def tool_path(self, tool: str) -> Path | None:
        if isinstance(self.launcher, ChrootLauncher):
            path = self._fs(f"/usr/bin/{tool}")
            return path if path.is_file() else None
        return self.launcher.resolve(tool)

    def version_command(self, tool: str) -> list[str]:
        return ["-version"] if tool == "hipify-perl" else ["--version"]

    def clean_version(self, text: str) -> str:
        """Without llvm-mc's list of every registered target and the pcilib/lspci warnings hipcc
        prints where it finds no PCI bus."""
        text = text.split("Registered Targets")[0].strip()
        return "\n".join(ln for ln in text.splitlines() if "pcilib" not in ln and "lspci" not in ln)

    def identity_files(self, tool: str) -> list[Path]:
        tool_file = self.tool_path(tool)
        files = [tool_file] if tool_file else []
        if tool in self.llvm_tools() and isinstance(self.launcher, ChrootLauncher):
            files.append(self._fs("/var/lib/dpkg/status"))   # names the LLVM package version
        if tool in ("hipcc", self.opencl_compiler):
            if isinstance(self.launcher, ChrootLauncher):
                # The root is apt-managed: its dpkg status names every package version (compiler,
                # headers, device libraries); the compiler tree is hashed on top of that.
                files += [self._fs("/var/lib/dpkg/status"), self._fs("/usr/include/hip"),
                          *sorted(self._fs("/usr/lib").glob("llvm-*/lib/clang/*/amdgcn"))]
            else:
                rocm = tool_file.parent.parent if tool_file else Path("/opt/rocm")
                files += [p for p in (rocm / ".info", rocm / "include" / "hip", rocm / "lib" / "llvm" / "bin",
                                      rocm / "amdgcn") if p.exists()]
        return files

    def _include(self) -> str:
        """The include directory as the tools see it."""
        if isinstance(self.launcher, ChrootLauncher):
            return "/usr/include"
        return str((self.tool_path("hipcc") or Path("/opt/rocm/bin/hipcc")).parent.parent / "include")

    def include_root(self) -> Path:
        return self._fs(self._include())

    def hip_version(self) -> tuple[int, int]:
        """HIP's (major, minor) version, from hipcc's version output."""
        m = re.search(r"HIP version:? (\d+)\.(\d+)", self.version("hipcc"))
        if m is None:
            raise ToolchainMissingError(f"hipcc printed no HIP version: {self.version('hipcc')!r}")
        return int(m.group(1)), int(m.group(2))

    def clang_major(self) -> int:
        """The major version of the clang hipcc drives."""
        m = re.search(r"clang version (\d+)", self.version("hipcc"))
        if m is None:
            raise ToolchainMissingError(f"hipcc printed no clang version: {self.version('hipcc')!r}")
        return int(m.group(1))

    def system_include_dirs(self) -> list[Path]:
        """The system header folders hipcc searches (as seen from this machine): the OS's and clang's."""
        if isinstance(self.launcher, ChrootLauncher):
            major = self.clang_major()
            clang = f"/usr/lib/llvm-{major}/lib/clang/{major}/include"
            return [self._fs(d) for d in ("/usr/include", "/usr/include/x86_64-linux-gnu", clang)]
        rocm = Path(self._include()).parent
        return [Path("/usr/include"), Path("/usr/include/x86_64-linux-gnu"),
                *sorted(rocm.glob("llvm/lib/clang/*/include"))]

    def library_include_dirs(self) -> list[str]:
        """The per-library header folders of this installation (paths as the tools see them)."""
        return self.layout()["library_include_dirs"]

    def assemble_step(self, arch: str, source: str) -> Step:
        """Assemble device assembly for ``arch`` into an object (proves the text is valid)."""
        return Step(self.assembler, ("-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-filetype=obj", source,
                                     "-o", "check.o"), ("check.o",))

    def assembly_program_steps(self, arch: str, assembly: str, host_source: str, flags: dict) -> tuple[Step, ...]:
        """Device assembly for ``arch`` made into a program with the host code of ``host_source`` (a HIP file):
        assembled, linked into a code object, bundled as clang bundles HIP device code, embedded by the host
        compile (the host stubs launch the kernels of that code object by name) and linked. The HIP file passes
        through the device steps (a step sees only the outputs of the step before it)."""
        assembler, linker, bundler = self.llvm_tools()
        bundle = f"-targets=host-x86_64-unknown-linux-gnu,hipv4-amdgcn-amd-amdhsa--{arch}"   # clang 22: with "-gnu"
        return (
            Step(assembler, ("-triple=amdgcn-amd-amdhsa", f"-mcpu={arch}", "-filetype=obj", assembly, "-o",
                             "device.o"), ("device.o", host_source)),
            Step(linker, ("-shared", "device.o", "-o", "device.hsaco"), ("device.hsaco", host_source),
                 reads=("device.o", host_source)),
            Step(bundler, ("-type=o", "-bundle-align=4096", bundle, "-input=/dev/null", "-input=device.hsaco",
                           "-output=device.hipfb"), ("device.hipfb", host_source), reads=("device.hsaco", host_source)),
            Step("hipcc", (*self._common_flags(flags), f"--offload-arch={arch}", "--cuda-host-only", "-Xclang",
                           "-fcuda-include-gpubinary", "-Xclang", "device.hipfb", "-c", host_source, "-o", "host.o"),
                 ("host.o",), reads=("device.hipfb", host_source)),
            Step("hipcc", (f"--offload-arch={arch}", "host.o", "-o", EXECUTABLE), (EXECUTABLE,)),
        )

    def hipify_step(self, main: str) -> Step:
        """hipify-perl without its per-line diagnostics (``-quiet-warnings``: the same HIP text,
        far faster); HIP text on stdout."""
        return Step("hipify-perl", ("-quiet-warnings", main), ("hip",), stdout_as="hip")

    def hipify_warnings_step(self, main: str) -> Step:
        """hipify-perl's per-line diagnostics alone (``-no-output``), on stderr; run on the lines
        that can warn (:mod:`cass.translate.hipify_warnings`)."""
        return Step("hipify-perl", ("-no-output", main), ())

    def hipify_warning_tables(self) -> tuple[tuple[str, ...], ...]:
        """What hipify-perl's diagnostics look for, read from the installed script
        (:func:`toolchains.hipify_script.warning_tables`)."""
        return tuple(map(tuple, self.layout()["hipify_warning_tables"]))

    def hipblas_v2(self) -> bool:
        """Whether this hipBLAS declares the v2 API (with ``HIPBLAS_V2``; hipBLAS 2 and later)."""
        return bool(self.layout().get("hipblas_v2"))

    def platform_defines(self) -> tuple[str, ...]:
        """Defines this installation needs for what CUDA compilers accept and hipify-perl writes:
        hipBLAS's half type is HIP's ``__half`` (and its header then includes ``hip_fp16.h``) only
        with ``HIPBLAS_USE_HIP_HALF``, as cuBLAS's is CUDA's ``__half`` (its header includes
        ``cuda_fp16.h``); from HIP 6.2 the warp-sync builtins (``__shfl_down_sync``, ...) are declared
        only with ``HIP_ENABLE_WARP_SYNC_BUILTINS``; hipBLAS 2 declares the API hipify-perl 7 maps
        cuBLAS to (``hipDataType``, ``hipblasComputeType_t``) only with ``HIPBLAS_V2``."""
        defines = ["-DHIPBLAS_USE_HIP_HALF"]
        defines += ["-DHIP_ENABLE_WARP_SYNC_BUILTINS"] if self.hip_version() >= WARP_SYNC_HIP else []
        return (*defines, *(["-DHIPBLAS_V2"] if self.hipblas_v2() else []))

    def preinclude(self) -> tuple[str, ...]:
        """nvcc includes ``cuda_runtime.h`` before every CUDA file, and CUDA code relies on it (a header that names
        ``cudaError_t`` without including anything): hipcc includes first the header hipify-perl maps it to."""
        runtime = self.layout().get("preinclude")
        return ("-include", runtime) if runtime else ()

    def _common_flags(self, flags: dict, include_dirs: Sequence[str] = (".",)) -> tuple[str, ...]:
        """hipcc's flags for a HIP source: ``amd.flags``, what CUDA's compilers accept that clang refuses by default
        (:data:`CUDA_DIALECT`), no compilation-unit ID (:data:`NO_CUID`), the platform's defines, include folders,
        what nvcc includes first."""
        return (*flags["common"], *flags["opt"], *CUDA_DIALECT, *NO_CUID, *self.platform_defines(),
                *(f"-I{d}" for d in include_dirs),
                *(f"-isystem{d}" for d in self.library_include_dirs()), *self.preinclude(), "-x", "hip")

    def preprocess_step(self, main: str, arch: str, flags: dict, include_dirs: Sequence[str] = (".",)) -> Step:
        """Preprocess the HIP file ``main`` as its compile would, both passes (host and ``arch``'s device),
        keeping nothing but the diagnostics; warnings stay on."""
        common = tuple(f for f in self._common_flags(flags, include_dirs) if f != "-w")
        return Step("hipcc", (*common, f"--offload-arch={arch}", "-E", main, "-o", "/dev/null"), ())

    def cuda_targets(self, main: str, archs: list[str], flags: dict, include_dirs: Sequence[str]) -> list[Target]:
        common = self._common_flags(flags, include_dirs)
        host = Target(
            kind="host", arch="x86_64",
            steps=(Step("hipcc", (*common, f"--offload-arch={archs[0]}", "--cuda-host-only", "-S",
                                  main, "-o", "host.s"), ("host.s",)),),
            artifact="host.s",
        )
        devices = [
            Target(
                kind="device", arch=arch,
                steps=(Step("hipcc", (*common, f"--offload-arch={arch}", "--cuda-device-only", "-S",
                                      main, "-o", "device.s"), ("device.s",)),),
                artifact="device.s",
            )
            for arch in archs
        ]
        return [host, *devices]

    def opencl_targets(self, main: str, archs: list[str], flags: list[str],
                       include_dirs: Sequence[str]) -> list[Target]:
        """OpenCL C to gfx assembly by clang for ``amdgcn-amd-amdhsa`` (ROCm's device libraries give the
        builtins), one target per arch."""
        return [Target(kind="device", arch=arch, artifact="device.s",
                       steps=(Step(self.opencl_compiler, ("-x", "cl", *flags, "-target", "amdgcn-amd-amdhsa",
                                                          f"-mcpu={arch}", *(f"-I{d}" for d in include_dirs), "-S",
                                                          main, "-o", "device.s"), ("device.s",)),))
                for arch in archs]
