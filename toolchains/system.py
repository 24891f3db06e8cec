"""System and library headers both vendors' environments must offer, listed in one place.

Real CUDA code includes more than the CUDA toolkit: OpenMP, OpenGL/EGL/GLFW/GLEW/GLUT, FFTW, zlib,
libpng, X11, GoogleTest, hwloc, TBB, Boost, valgrind's client requests. The NVIDIA side compiles on
this machine (nvcc with Debian's g++, which finds ``/usr/include``), the AMD side in
its own OS root; a header only one side has would make a sample fail on the other for a reason
that is no translation problem. ``scripts/setup.sh`` installs every package below on both sides
(:func:`host_packages` on this machine, :func:`amd_packages` in the AMD root), and
:func:`header_parity` says which side lacks which header.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from toolchains.nvidia import OPENCL_PACKAGES


@dataclass(frozen=True)
class SystemLibrary:
    """A library real CUDA code includes: a header of it and the Debian package that holds it on
    each side (``{clang}`` in the AMD package is the AMD root's clang major version)."""

    name: str
    header: str
    host_package: str
    amd_package: str | None = None

    def package_for_amd(self, clang_major: int) -> str:
        return (self.amd_package or self.host_package).format(clang=clang_major)


SYSTEM_LIBRARIES: tuple[SystemLibrary, ...] = (
    # gcc's own omp.h serves nvcc's host compiler; hipcc's clang needs LLVM's, for its version
    SystemLibrary("OpenMP", "omp.h", "libgcc-12-dev", "libomp-{clang}-dev"),
    SystemLibrary("GLEW", "GL/glew.h", "libglew-dev"),   # before gl.h, as GLEW requires
    SystemLibrary("OpenGL", "GL/gl.h", "libgl-dev"),
    SystemLibrary("GLU", "GL/glu.h", "libglu1-mesa-dev"),
    SystemLibrary("EGL", "EGL/egl.h", "libegl-dev"),
    SystemLibrary("GLFW", "GLFW/glfw3.h", "libglfw3-dev"),
    SystemLibrary("GLUT", "GL/glut.h", "freeglut3-dev", "libglut-dev"),
    SystemLibrary("X11", "X11/Xlib.h", "libx11-dev"),
    SystemLibrary("FFTW", "fftw3.h", "libfftw3-dev"),
    SystemLibrary("zlib", "zlib.h", "zlib1g-dev"),
    SystemLibrary("libpng", "png.h", "libpng-dev"),
    SystemLibrary("GoogleTest", "gtest/gtest.h", "libgtest-dev"),
    SystemLibrary("GoogleMock", "gmock/gmock.h", "libgmock-dev"),
    SystemLibrary("hwloc", "hwloc.h", "libhwloc-dev"),
    SystemLibrary("TBB", "tbb/tbb.h", "libtbb-dev"),
    SystemLibrary("Boost", "boost/version.hpp", "libboost-dev"),
    SystemLibrary("valgrind", "valgrind/valgrind.h", "valgrind"),
)


def host_packages() -> list[str]:
    """The Debian packages this machine (the NVIDIA side) needs, sorted: the system library headers and the
    OpenCL route's clang and libclc."""
    return sorted({lib.host_package for lib in SYSTEM_LIBRARIES} | set(OPENCL_PACKAGES.split()))


def amd_packages(clang_major: int) -> list[str]:
    """The Debian packages the AMD root needs, for its clang version, sorted."""
    return sorted({lib.package_for_amd(clang_major) for lib in SYSTEM_LIBRARIES})


def find_header(header: str, include_dirs: Iterable[Path]) -> Path | None:
    """The first ``include_dirs`` entry that holds ``header``."""
    for d in include_dirs:
        if (d / header).is_file():
            return d / header
    return None


def header_parity(nvidia_dirs: Iterable[Path], amd_dirs: Iterable[Path]) -> dict[str, dict[str, bool]]:
    """Per library: whether each side's system include directories hold its header."""
    nvidia_dirs, amd_dirs = list(nvidia_dirs), list(amd_dirs)
    return {lib.name: {"nvidia": find_header(lib.header, nvidia_dirs) is not None,
                       "amd": find_header(lib.header, amd_dirs) is not None} for lib in SYSTEM_LIBRARIES}
