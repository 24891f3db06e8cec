"""What a toolchain's headers say to the preprocessor: per header, its include guard, the macros it
defines and the headers it includes (resolved on the toolchain's include path), as plain JSON.

A toolchain reports this index (:meth:`toolchains.base.Toolchain.header_index`) so that a driver
without the toolchain's files (a vendor host elsewhere) can still derive CUDA-to-HIP name tables
from it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

_TOKENS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(\w+)(.*)$", re.M)
_INCLUDE = re.compile(r'\s*([<"])([^>"]+)[>"]')
_DEFINE = re.compile(r"\s*([A-Za-z_]\w*)(\()?(.*)$", re.S)


def strip_comments(text: str) -> str:
    """The text with every comment replaced by a space (or its newlines), string literals kept."""
    return _TOKENS.sub(lambda m: m.group(0) if m.group(0)[0] in "\"'" else
                       " " if "\n" not in m.group(0) else "\n" * m.group(0).count("\n"), text)


def directives(text: str) -> list[tuple[str, str]]:
    """(keyword, rest) of every preprocessor directive, comments removed and continuations joined."""
    clean = strip_comments(text.replace("\\\n", " "))
    return [(m.group(1), m.group(2).strip()) for m in _DIRECTIVE.finditer(clean)]


def _tested_absent(keyword: str, rest: str) -> str | None:
    """The macro an ``#ifndef X`` or ``#if !defined(X)`` tests, else None."""
    if keyword == "ifndef":
        return rest.split()[0] if rest.split() else None
    m = re.fullmatch(r"!\s*defined\s*(?:\(\s*(\w+)\s*\)|(\w+))", rest) if keyword == "if" else None
    return (m.group(1) or m.group(2)) if m else None


def parse_header(text: str) -> dict:
    """``guard`` (None without one), ``objects`` (object-like macro -> its first definition),
    ``unconditional`` (those defined outside every conditional but the guard), ``functions``
    (function-like macros), ``empty`` (object-like macros with an empty definition somewhere) and
    ``includes`` ([name, quoted] as written)."""
    found = directives(text)
    guard = None
    if len(found) >= 2 and (name := _tested_absent(*found[0])) and found[1][0] == "define" \
            and found[1][1].split()[:1] == [name]:
        guard = name
    objects: dict[str, str] = {}
    unconditional: list[str] = []
    functions: list[str] = []
    empty: set[str] = set()
    includes = []
    depth, top = 0, 1 if guard else 0
    for keyword, rest in found:
        if keyword in ("if", "ifdef", "ifndef"):
            depth += 1
        elif keyword == "endif":
            depth -= 1
        elif keyword == "define" and (m := _DEFINE.match(rest)):
            if m.group(2):
                functions.append(m.group(1))
            else:
                body = " ".join(m.group(3).split())
                if not body:
                    empty.add(m.group(1))
                if m.group(1) not in objects:
                    objects[m.group(1)] = body
                    if depth <= top:
                        unconditional.append(m.group(1))
        elif keyword == "include" and (m := _INCLUDE.match(rest)):
            includes.append([m.group(2), m.group(1) == '"'])
    return {"guard": guard, "objects": objects, "unconditional": unconditional, "functions": sorted(set(functions)),
            "empty": sorted(empty), "includes": includes}


_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")


def identifiers(text: str) -> set[str]:
    """The identifiers a header's code names (comments left out)."""
    return set(_IDENTIFIER.findall(strip_comments(text)))


def index_headers(dirs: Sequence[Path], roots: Iterable[Path], names_kept: Callable[[str, str], bool] | None = None,
                  never: Sequence[str] = ()) -> dict[str, dict]:
    """:func:`parse_header` of ``roots`` and of every header they include, directly or not, found on
    ``dirs``; keyed by the shortest name ``#include`` finds each by (``names``: all of them), with
    ``includes`` resolved to such names (those not found on ``dirs`` left out), for a runtime API header its
    :func:`runtime_functions` (``runtime``), and with ``names_kept``, the :func:`identifiers` of each header
    it keeps (``names_kept(header, identifier)``). Headers under a folder named in ``never`` are left out (the
    compiler never includes them: another platform's)."""
    dirs = [d.resolve() for d in dirs if d.is_dir()]

    def names_of(path: Path) -> list[str]:
        """Every name ``#include`` finds ``path`` by on ``dirs``, the shortest first."""
        return sorted((str(path.relative_to(d)) for d in dirs if path.is_relative_to(d)), key=lambda n: (len(n), n))

    def find(name: str, beside: Path | None) -> Path | None:
        return next((p.resolve() for d in ([beside] if beside else []) + dirs if (p := d / name).is_file()), None)

    index: dict[str, dict] = {}
    todo = [p.resolve() for p in roots]
    while todo:
        path = todo.pop()
        names = names_of(path)
        if not names or names[0] in index or any(part in never for part in Path(names[0]).parts):
            continue
        facts = parse_header(path.read_text(errors="replace"))
        resolved = []
        for included, quoted in facts["includes"]:
            if (found := find(included, path.parent if quoted else None)) and (found_names := names_of(found)):
                resolved.append(found_names[0])
                todo.append(found)
        index[names[0]] = {**facts, "includes": resolved, "names": names}
        text = path.read_text(errors="replace")
        if "Error_t" in text:
            index[names[0]]["runtime"] = runtime_functions(text)
        if names_kept is not None:
            index[names[0]]["identifiers"] = sorted(n for n in identifiers(text) if names_kept(names[0], n))
    return dict(sorted(index.items()))


_RETURNS_ERROR = re.compile(r"\b(?:cudaError_t|hipError_t)\s+(?:__\w+__\s+)*((?:cuda|hip)\w+)\s*\(")
_RETURN_CALL = re.compile(r"\s*return\s+(?:::)?(\w+)\s*\(")


def balanced_end(text: str, start: int, opener: str = "(") -> int:
    """The index just past the bracket that closes the one at ``start`` (the end of ``text`` if none does)."""
    closer = {"(": ")", "{": "}"}[opener]
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == opener
        depth -= text[i] == closer
        if depth == 0:
            return i + 1
    return len(text)


def split_top_level(text: str, openers: str = "([{<", closers: str = ")]}>") -> list[str]:
    """The comma-separated parts of ``text`` at bracket depth 0 (as written, blanks kept; template angle brackets
    count by default)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += c in openers
        depth -= c in closers
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _split_top(text: str) -> list[str]:
    return [p.strip() for p in split_top_level(text) if p.strip()]


def runtime_functions(text: str) -> list[dict]:
    """Every function of a runtime API header that returns ``cudaError_t`` or ``hipError_t``: its name,
    parameter names, how many are required, the defaults of the others, whether it is a template, and where
    its body is one ``return ::other(args);``, that call's name and argument expressions."""
    clean = strip_comments(text)
    found = []
    for m in _RETURNS_ERROR.finditer(clean):
        close = balanced_end(clean, m.end() - 1)
        params = [p for p in _split_top(clean[m.end():close - 1]) if p != "void"]
        names, defaults = [], []
        for param in params:
            declarator, _, default = param.partition("=")
            ident = re.findall(r"[A-Za-z_]\w*", re.sub(r"\[[^\]]*\]", "", declarator))
            names.append(ident[-1] if ident else "")
            if default.strip():
                defaults.append(default.strip())
        statement = clean[max(clean.rfind(";", 0, m.start()), clean.rfind("}", 0, m.start())) + 1:m.start()]
        rest = clean[close:].lstrip()
        target, args = None, None
        if rest.startswith("{"):
            body = rest[1:balanced_end(rest, 0, "{") - 1]
            if (call := _RETURN_CALL.match(body)) and body[balanced_end(body, call.end() - 1):].strip() == ";":
                target = call.group(1)
                args = _split_top(body[call.end():balanced_end(body, call.end() - 1) - 1])
        elif not rest.startswith(";"):
            continue   # a call, not a declaration
        found.append({"name": m.group(1), "params": names, "required": len(names) - len(defaults),
                      "defaults": defaults, "template": "template" in statement, "target": target, "args": args})
    return found


_INTEGER_WORDS = frozenset({"unsigned", "signed", "short", "long", "int", "char"})
_TYPE_WORDS = _INTEGER_WORDS | {"float", "double", "bool", "void", "const", "volatile", "wchar_t", "auto"}
_PARAMETER_TOKEN = re.compile(r"[A-Za-z_]\w*|::|\*|&&|&|\.\.\.|[^\s\w]")
_IGNORED_QUALIFIERS = re.compile(r"\b(?:__restrict__|__restrict|restrict|register)\b")
_ARRAY = re.compile(r"\[[^\]]*\]")
_QUALIFIERS = ("const", "volatile")


def _integer_type(words: list[str]) -> str:
    """One spelling of a builtin integer type: ``unsigned`` -> ``unsigned int``, ``long long int`` -> ``long long``,
    ``signed short`` -> ``short``; ``signed char`` stays (a type of its own)."""
    base = ("char" if "char" in words else "short" if "short" in words else
            " ".join(["long"] * words.count("long")) or "int")
    sign = "unsigned " if "unsigned" in words else "signed " if base == "char" and "signed" in words else ""
    return sign + base


def _spelled(tokens: list[str]) -> str:
    """A parameter's type tokens as one string: qualifiers first, integer types in one spelling, ``*``/``&`` and
    ``::`` joined."""
    pointer = next((i for i, t in enumerate(tokens) if t in ("*", "&", "&&")), len(tokens))
    base = tokens[:pointer]
    qualifiers = [t for t in _QUALIFIERS if t in base]   # east or west: ``float const*`` is ``const float*``
    base = [t for t in base if t not in _QUALIFIERS]
    if base and set(base) <= _INTEGER_WORDS:
        base = [_integer_type(base)]
    spelled = ""
    for token in [*qualifiers, *base, *tokens[pointer:]]:
        joined = not spelled or token in ("*", "&", "&&", "::") or spelled.endswith("::")
        spelled += token if joined else f" {token}"
    return spelled


def parameter_types(params: str) -> tuple[str, ...]:
    """The types of a parameter list as the function's type has them: names, defaults, ``restrict`` and a
    parameter's own ``const`` (``const int n``, ``float* const p``) left out, an array as a pointer, qualifiers
    first, builtin integer types in one spelling (``unsigned`` is ``unsigned int``, ``long long int`` is ``long
    long``), one blank between words (``float *addr, const int n = 0`` -> ``("float*", "int")``; ``void`` ->
    ``()``)."""
    types = []
    for param in split_top_level(params):
        param = _IGNORED_QUALIFIERS.sub(" ", param.partition("=")[0]).strip()
        if not param or param == "void":
            continue
        tokens = _PARAMETER_TOKEN.findall(_ARRAY.sub(" ", param))
        last = tokens[-1] if tokens else ""
        named = len(tokens) > 1 and (last[0].isalpha() or last[0] == "_") and last not in _TYPE_WORDS
        if named and tokens[-2] != "::" and set(tokens[:-1]) - set(_QUALIFIERS):
            tokens.pop()   # the parameter's name (``const uint32_t`` has none)
        tokens += ["*"] * len(_ARRAY.findall(param))
        while len(tokens) > 1 and tokens[-1] in _QUALIFIERS and {"*", "&", "&&"} & set(tokens):
            tokens.pop()   # a pointer parameter's own qualifier
        if not {"*", "&", "&&"} & set(tokens):
            tokens = [t for t in tokens if t not in _QUALIFIERS] or tokens
        types.append(_spelled(tokens))
    return tuple(types)


_FUNCTION_HEAD = re.compile(
    r"([A-Za-z_]\w*)\s*\(([^(){};]*)\)\s*(?:__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)\s*)*$")
_DEVICE = re.compile(r"__device__|\(\(\s*device\s*\)\)")


def device_definitions(preprocessed: str) -> dict[str, list[list[str]]]:
    """Name -> :func:`parameter_types` of every device function (``__device__``, preprocessed:
    ``__attribute__((device))``) a preprocessed translation unit defines at file scope; templates, operators and
    what an ``extern "C" {`` block holds left out."""
    text = "\n".join(line for line in preprocessed.splitlines() if not line.lstrip().startswith("#"))
    found: dict[str, set[tuple[str, ...]]] = {}
    depth, statement = 0, 0
    for m in re.finditer(r"[{};]", text):
        if m.group(0) == "{":
            head = text[statement:m.start()]
            if depth == 0 and (f := _FUNCTION_HEAD.search(head)) and _DEVICE.search(head[:f.start()]) \
                    and not re.search(r"\btemplate\b", head) and not f.group(1).startswith("operator"):
                found.setdefault(f.group(1), set()).add(parameter_types(f.group(2)))
            depth += 1
        elif m.group(0) == "}":
            depth = max(depth - 1, 0)
            statement = m.end() if depth == 0 else statement
        elif depth == 0:
            statement = m.end()
    return {name: sorted(map(list, found[name])) for name in sorted(found)}
