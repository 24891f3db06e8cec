"""Headers that real projects generate at configure time, made by a minimal, recorded configure.

A tree ships such headers only as templates (``gmxpre-config.h.cmakein``, ``starpu_config.h.in``,
``ATen/Config.h.in``); without them most of its files fail on both vendors before any kernel is
seen. A template next to which no file of the output's name exists is configured with the rules
of the tools that would have made it:

* CMake's ``configure_file``: ``#cmakedefine VAR rest`` becomes ``#define VAR rest`` when ``VAR`` is
  set to a true value, else ``/* #undef VAR */``; ``#cmakedefine01 VAR`` becomes ``#define VAR 1``
  or ``#define VAR 0``; ``@VAR@`` and ``${VAR}`` become the value or nothing;
* autoconf's ``config.status`` (templates without CMake markers): ``#undef VAR`` becomes
  ``#define VAR value`` when ``VAR`` is set, else it is left as it is (undefining an undefined macro
  does nothing).

Every variable is off or empty unless the parameters set it. The configured header lands at the
template's path without its suffix; both vendors get the same bytes (they are files of the tree).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from toolchains.language import HEADER_SUFFIXES

TEMPLATE_SUFFIXES = (".cmakein", ".in")

CONFIGURE_VERSION = 1
"""Bumped when the rules change what a template configures to."""

_CMAKEDEFINE = re.compile(r"^([ \t]*#[ \t]*)cmakedefine(01)?[ \t]+([A-Za-z_]\w*)(.*)$", re.M)
_AT_VAR = re.compile(r"@([A-Za-z_][\w.+-]*)@")
_DOLLAR_VAR = re.compile(r"\$\{([A-Za-z_][\w.+-]*)\}")
_AUTOCONF_UNDEF = re.compile(r"^([ \t]*#[ \t]*)undef[ \t]+([A-Za-z_]\w*)[ \t]*$", re.M)
_CMAKE_FALSE = {"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"}


def configured_name(template: str) -> str | None:
    """The header a template configures to (``a/b.h.in`` -> ``a/b.h``), or None for other files."""
    for suffix in TEMPLATE_SUFFIXES:
        if template.endswith(suffix):
            out = template[: -len(suffix)]
            return out if out.endswith(HEADER_SUFFIXES) else None
    return None


def cmake_true(value: object) -> bool:
    """CMake's truth test for a variable's value (``if(VAR)``)."""
    text = str(value).strip()
    return text.upper() not in _CMAKE_FALSE and not text.upper().endswith("-NOTFOUND")


@dataclass(frozen=True)
class Configured:
    """One configured header: its text and the variables it used (set, or left off/empty)."""

    text: str
    style: str
    """``cmake`` (a ``.cmakein`` template or one with ``#cmakedefine``) or ``autoconf``"""
    used_set: tuple[str, ...]
    used_unset: tuple[str, ...]


def configure_text(template: str, values: Mapping[str, object], cmake: bool) -> Configured:
    """Configure one template's text with ``values``: ``@VAR@`` and ``#cmakedefine`` always,
    ``${VAR}`` for CMake templates, autoconf's ``#undef VAR`` for the others."""
    used: set[str] = set()

    def value(name: str) -> str:
        used.add(name)
        return str(values[name]) if name in values else ""

    def cmakedefine(m: re.Match) -> str:
        lead, zero_one, name, rest = m.groups()
        on = cmake_true(value(name))
        if zero_one:
            return f"{lead}define {name} {int(on)}"
        return f"{lead}define {name}{rest}" if on else f"/* #undef {name} */"

    def undef(m: re.Match) -> str:
        lead, name = m.groups()
        used.add(name)
        return f"{lead}define {name} {values[name]}" if name in values else m.group(0)

    text = _AT_VAR.sub(lambda m: value(m.group(1)), _CMAKEDEFINE.sub(cmakedefine, template))
    text = _DOLLAR_VAR.sub(lambda m: value(m.group(1)), text) if cmake else _AUTOCONF_UNDEF.sub(undef, text)
    return Configured(text, "cmake" if cmake else "autoconf", tuple(sorted(used & set(values))),
                      tuple(sorted(used - set(values))))


def configure_tree(paths: Collection[str], read: Callable[[str], bytes],
                   values: Mapping[str, object]) -> dict[str, tuple[str, Configured]]:
    """Configured headers for a tree's templates: output path -> (template path, result).

    ``paths`` are the tree's files (relative), ``read`` gives a file's bytes; a template whose
    output already exists in the tree is left alone (the project ships that header)."""
    out: dict[str, tuple[str, Configured]] = {}
    for template in sorted(paths):
        target = configured_name(template)
        if target is None or target in paths or target in out:
            continue
        text = read(template).decode("utf-8", "replace")
        cmake = template.endswith(".cmakein") or bool(_CMAKEDEFINE.search(text))
        out[target] = (template, configure_text(text, values, cmake))
    return out
