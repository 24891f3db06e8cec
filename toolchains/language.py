"""Which language a sample is in, from its main file's name: CUDA (or HIP) C++, or OpenCL C."""

from __future__ import annotations

HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl")
"""Files a C, C++ or CUDA source includes (what a configure step writes and a tree's configured templates make)."""
OPENCL_SUFFIX = ".cl"
"""Samples whose main file has this suffix are OpenCL C: device code only, compiled by each vendor's OpenCL route."""


def is_opencl(path: str) -> bool:
    """Whether a sample's main file is OpenCL C (by its suffix)."""
    return path.endswith(OPENCL_SUFFIX)
