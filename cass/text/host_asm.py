"""CUDA host assembly: nvcc's registration boilerplate, and removing it."""

from __future__ import annotations

import re

_REGISTRATION = re.compile(r"__cudaUnregisterBinaryUtil|__sti____cudaRegisterAll|__nv_cudaEntityRegisterCallback|"
                           r"__nv_save_fatbinhandle_for_managed_rt|__nv_init_managed_rt|__nv_inited_managed_rt|"
                           r"__nv_fatbinhandle_for_managed_rt|__fatDeviceText|__cudaFatCubinHandle")
_TYPE = re.compile(r"^\s*\.type\s+([^,\s]+),\s*@(?:function|object)")
_SIZE = re.compile(r"^\s*\.size\s+([^,\s]+),")
_SYMBOL_DATA = re.compile(r"^\s*\.(?:local|comm|globl|weak|hidden)\s+([^,\s]+)")


def strip_host_registration(text: str) -> str:
    """CUDA host assembly without the registration code nvcc adds to every file.

    Removed: the functions and objects whose names are nvcc's registration machinery
    (``__sti____cudaRegisterAll``, ``__cudaUnregisterBinaryUtil``, ``__nv_cudaEntityRegisterCallback``,
    the managed-runtime helpers, ``__fatDeviceText``, ``__cudaFatCubinHandle``), each from its
    ``.type`` line to its ``.size`` line (an object's data lines after ``.size`` up to the next
    directive that is not data), their ``.local``/``.comm`` lines, and the ``.init_array`` entry
    that calls the registration function. Kernel stubs and host code are kept."""
    lines = text.splitlines()
    keep: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        typed = _TYPE.match(line)
        if typed and _REGISTRATION.search(typed.group(1)):
            name = typed.group(1)
            j = i + 1
            while j < len(lines) and not (_SIZE.match(lines[j]) and _SIZE.match(lines[j]).group(1) == name):
                j += 1
            j += 1
            if "@object" in line:  # the object's label and data follow its .size line
                while j < len(lines) and (lines[j].startswith(name + ":") or
                                          re.match(r"^\s*\.(?:long|quad|byte|short|zero|value)\b", lines[j])):
                    j += 1
            i = j
            continue
        symbol = _SYMBOL_DATA.match(line)
        if symbol and _REGISTRATION.search(symbol.group(1)):
            i += 1
            continue
        if re.match(r"^\s*\.section\s+\.init_array\b", line):
            j = i + 1
            while j < len(lines) and re.match(r"^\s*\.(?:align|p2align|quad)\b", lines[j]):
                j += 1
            entries = [b for b in lines[i + 1:j] if ".quad" in b]
            if entries and all(_REGISTRATION.search(b) for b in entries):
                i = j
                continue
        keep.append(line)
        i += 1
    return "\n".join(keep) + ("\n" if text.endswith("\n") else "")
