"""How the authors of a tree run its programs: run specs read from the tree's own build files, or given in a per-tree
YAML file (``corpus.trees[].run_specs``).

A :class:`RunSpec` says, for a file with a ``main``: the argument sets it is run with, its working directory, the
data files of the tree it reads (laid out around it, read-only, when it runs), the other units it links with, a time
limit, and where each of these came from.

From a ``Makefile`` (``GNUmakefile``, ``makefile``) in the file's folder: the recipe of its ``run`` target (else
``test``, else ``check``): every command that starts ``./<program>`` (the name the Makefile gives its program, or
the main file's stem) is an argument set, ``cd <dir> &&`` before it moves the working directory; the units are the
sources its source or object variables list (``source = main.cu kernels.cu``, ``obj = main.o util.o``) when they
name the file. Make itself is not run: the tree is untrusted, and ``make -n`` would expand ``$(shell ...)``. Else
from a ``CMakeLists.txt``: the ``add_executable`` that lists the file gives the units, and its ``add_test`` commands
the argument sets (and a ``WORKING_DIRECTORY`` inside the folder). Without a build file that lists units, the main
file's undefined functions are resolved against the other source files of its folder (those that no file
``#include``s and that define no ``main``): a unit that defines a function the main file calls but does not define
is linked, and so on from the units taken (a textual resolution: it reads definitions, not object files).

The YAML file maps globs of main files (tree paths) to ``args`` (a list of argument lists), ``workdir``, ``inputs``
(tree paths), ``units`` (tree paths) and ``timeout_s``; it wins over the build files.
"""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from cass.text.cuda import strip_comments_and_strings
from toolchains.sandboxed_runs import PROGRAM

UNIT_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
BUILD_FILES = ("GNUmakefile", "makefile", "Makefile")
RUN_TARGETS = ("run", "test", "check")
NOT_DATA = re.compile(r"(?i)(^|/)(makefile|gnumakefile|cmakelists\.txt|readme[^/]*|license[^/]*|copying[^/]*)$"
                      r"|\.(cu|cuh|c|cc|cpp|cxx|h|hh|hpp|hxx|inl|cl|py|sh|cmake|o|md)$")
"""Files of a program's folder that are not its data: sources, build and documentation files."""
MAX_INPUT_BYTES = 16 << 20
"""Data files larger than this are not laid out for a run (the run spec names them as missing)."""
SOURCE_VARIABLES = re.compile(r"(?i)^(\w*_)?(src|srcs|source|sources|obj|objs|object|objects)$")
ASSIGNMENT = re.compile(r"^(?:override\s+|export\s+)?([A-Za-z_][\w.-]*)\s*(\+=|\?=|:::?=|::=|:=|=)\s*(.*)$")
RULE = re.compile(r"^([^\t#=:][^=:]*?)\s*::?\s*(?!=)(.*)$")
REFERENCE = re.compile(r"\$[({]([A-Za-z_][\w.-]*)(?::([^=)}]*)=([^)}]*))?[)}]")
FUNCTION = re.compile(r"\$[({](\w+)\s+([^()${}]*)[)}]")
MAX_EXPANSION = 1 << 20
"""No Makefile value may expand to more (a hostile Makefile's nested references grow exponentially)."""
CONDITIONAL = re.compile(r"^\s*(ifeq|ifneq|ifdef|ifndef|else|endif)\b\s*(.*)$")
COMMAND_SPLIT = re.compile(r"\s*(?:&&|;|\|\|)\s*")


@dataclass
class RunSpec:
    """How one program is run (paths are tree paths, without the tree's prefix)."""

    source: str
    """Where the arguments came from (``<build file>:<target>``, ``<yaml file>``), or ``none``."""
    workdir: str
    arg_sets: list[list[str]]
    units: list[str] = field(default_factory=list)
    units_source: str = "none"
    inputs: list[str] = field(default_factory=list)
    missing_inputs: list[str] = field(default_factory=list)
    timeout_s: float | None = None

    def row(self) -> dict:
        """The ``run_spec`` column's value."""
        return {"source": self.source, "workdir": self.workdir, "arg_sets": self.arg_sets,
                "units_source": self.units_source, "missing_inputs": self.missing_inputs, "timeout_s": self.timeout_s}


@dataclass
class Makefile:
    """What a Makefile says, as far as running its program goes (variables expanded by make's simple rules)."""

    variables: dict[str, str]
    recipes: dict[str, list[list[str]]]
    """Each target's recipes, one per rule that names it (a rule may have none: ``run: prog``)."""
    wildcard: Callable[[str], list[str]] = lambda _: []
    """``$(wildcard PATTERN)``: the files of the build file's folder the pattern matches."""

    @classmethod
    def parse(cls, text: str, wildcard: Callable[[str], list[str]] | None = None,
              conditionals: bool = False) -> Makefile:
        """The Makefile's variables and recipes; ``conditionals``: only the branches of ``ifeq``, ``ifneq``,
        ``ifdef`` and ``ifndef`` that hold with the variables set so far and none given on make's command line
        (else every branch is read, as the run specs always have)."""
        made = cls({}, {}, *([wildcard] if wildcard else []))
        variables, recipes = made.variables, made.recipes
        current: list[str] | None = None
        taken: list[list[bool]] = []   # per open conditional: [its current branch is read, a branch was read]
        for line in re.sub(r"\\\r?\n", " ", text).splitlines():
            if line.startswith("\t"):
                if current is not None and all(t for t, _ in taken):
                    current.append(line.strip())
                continue
            line = line.split("#", 1)[0].rstrip()
            if conditionals and (branch := CONDITIONAL.match(line)):
                made._branch(taken, branch.group(1), branch.group(2) or "")
                continue
            if not line.strip() or re.match(r"\s*(ifn?eq|ifn?def|else|endif|include|-include)\b", line) \
                    or not all(t for t, _ in taken):
                continue
            if match := ASSIGNMENT.match(line.strip()):
                name, operator, value = match.groups()
                if operator == "+=":
                    variables[name] = f"{variables.get(name, '')} {value}".strip()
                elif operator in (":=", "::=", ":::="):   # simply expanded: once, here
                    variables[name] = made.expand(value.strip())
                elif operator != "?=" or name not in variables:
                    variables[name] = value.strip()
                current = None
            elif match := RULE.match(line):
                current = []
                for target in match.group(1).split():
                    recipes.setdefault(target, []).append(current)
            else:
                current = None
        return made

    def _branch(self, taken: list[list[bool]], keyword: str, condition: str) -> None:
        """Follow one conditional line: open (``if...``), switch (``else [if...]``) or close (``endif``)."""
        if keyword == "endif":
            if taken:
                taken.pop()
        elif keyword == "else":
            if taken:
                branch = taken[-1]
                nested = CONDITIONAL.match(condition.strip())
                holds = not branch[1] and (self._holds(nested.group(1), nested.group(2) or "") if nested else True)
                taken[-1] = [holds, branch[1] or holds]
        else:
            holds = self._holds(keyword, condition)
            taken.append([holds, holds])

    def _holds(self, keyword: str, condition: str) -> bool:
        if keyword in ("ifdef", "ifndef"):
            defined = bool(self.variables.get(condition.strip(), "").strip())   # make does not expand it
            return defined == (keyword == "ifdef")
        condition = condition.strip()
        if condition.startswith("(") and condition.endswith(")"):
            parts = condition[1:-1].split(",", 1)
        else:
            parts = [p.strip("\"'") for p in re.findall(r"\"[^\"]*\"|'[^']*'", condition)]
        if len(parts) != 2:
            return False
        equal = self.expand(parts[0]).strip() == self.expand(parts[1]).strip()
        return equal == (keyword == "ifeq")

    def expand(self, text: str, depth: int = 0) -> str:
        """``text`` with ``$(VAR)``, ``$(VAR:a=b)`` and ``$(wildcard ...)`` expanded; other functions are empty."""
        if depth > 10 or "$" not in text:
            return text.replace("$$", "$")

        def reference(match: re.Match) -> str:
            value = self.expand(self.variables.get(match.group(1), ""), depth + 1)
            if match.group(2) is not None:
                old, new = match.group(2), match.group(3)
                value = " ".join(w[: -len(old)] + new if old and w.endswith(old) else w for w in value.split())
            return value

        def function(match: re.Match) -> str:
            name, argument = match.groups()
            if name == "wildcard":
                return " ".join(p for pattern in argument.split() for p in self.wildcard(pattern))
            return ""

        expanded = FUNCTION.sub(function, REFERENCE.sub(reference, text))
        if len(expanded) > MAX_EXPANSION:
            raise ValueError(f"a Makefile value expands to over {MAX_EXPANSION} characters")
        return self.expand(expanded, depth + 1) if expanded != text else expanded.replace("$$", "$")

    def run_commands(self) -> tuple[str, list[str]]:
        """The first of the run targets with a recipe (its last rule that has one), and the recipe's lines."""
        for target in RUN_TARGETS:
            if recipe := next((r for r in reversed(self.recipes.get(target, [])) if r), None):
                return target, [self.expand(line) for line in recipe]
        return "", []

    def program_names(self) -> set[str]:
        """The names the Makefile gives its program (``program``, ``EXE``, ``TARGET``, ...)."""
        return {word for name, value in self.variables.items() if PROGRAM_VARIABLES.match(name)
                for word in self.expand(value).split()}


PROGRAM_VARIABLES = re.compile(r"(?i)^(program|prog|exe|executable|target|bin|binary|app|name)$")
OUTPUT_OPTIONS = ("-o", "--output", "-out", "--out")
"""Options whose value is a file the program writes, not one it reads."""


def recipe_commands(line: str) -> list[list[str]]:
    """The words of each command of an (expanded) recipe line, without its ``@-+`` prefix and the ``VAR=value``
    assignments before a command; a command that does not split as the shell would is left out."""
    commands = []
    for command in COMMAND_SPLIT.split(line.lstrip("@-+ ")):
        try:
            words = shlex.split(command)
        except ValueError:
            continue
        while words and re.fullmatch(r"[A-Za-z_]\w*=.*", words[0]):   # VAR=value ./program
            words.pop(0)
        commands.append(words)
    return commands


def program_invocations(lines: list[str], programs: set[str] | None = None) -> list[tuple[str, list[str]]]:
    """(working directory relative to the build file, arguments) of every ``./<program>`` command of a recipe
    (``programs``: the names that count; None: any ``./name``)."""
    found = []
    for line in lines:
        workdir = "."
        for words in recipe_commands(line):
            if words[:1] == ["cd"] and len(words) == 2:
                workdir = posixpath.normpath(posixpath.join(workdir, words[1]))
            elif words and words[0].startswith("./") and (programs is None or words[0][2:] in programs):
                args = []
                for word in words[1:]:
                    if word in ("|", ">", ">>", "<", "2>", "2>&1", "&>", "1>") or word.startswith((">", "2>", "<")):
                        break
                    args.append(word)
                found.append((workdir, args))
    return found


def _main_units(makefile: Makefile, folder_files: set[str], main_name: str) -> list[str] | None:
    """The source files (folder-relative) the Makefile's source or object variables list, or None when none lists
    the main file."""
    for name, value in makefile.variables.items():
        if not SOURCE_VARIABLES.match(name):
            continue
        units = []
        for word in makefile.expand(value).split():
            word = posixpath.normpath(word)
            stem, suffix = posixpath.splitext(word)
            candidates = [word] if suffix in UNIT_SUFFIXES else [stem + s for s in UNIT_SUFFIXES if suffix == ".o"]
            units += [c for c in candidates if c in folder_files][:1]
        if main_name in units:
            return units
    return None


CMAKE_COMMAND = re.compile(r"\b(set|add_executable|add_test)\s*\(([^()]*)\)", re.I)
CMAKE_SOURCE_DIRS = ("${CMAKE_CURRENT_SOURCE_DIR}", "${CMAKE_SOURCE_DIR}", "${PROJECT_SOURCE_DIR}")
CMAKE_OPTIONS = {"WIN32", "MACOSX_BUNDLE", "EXCLUDE_FROM_ALL"}


@dataclass
class CMakeLists:
    """What a ``CMakeLists.txt`` says about running its programs: each executable's sources, and its tests."""

    executables: dict[str, list[str]]
    tests: list[tuple[str, list[str], str]]
    """(executable, arguments, working directory relative to the file's folder) of each ``add_test``."""

    @classmethod
    def parse(cls, text: str) -> CMakeLists:
        variables: dict[str, list[str]] = {}
        executables: dict[str, list[str]] = {}
        tests = []
        text = re.sub(r"#[^\n]*", "", text)

        def words(arguments: str) -> list[str]:
            try:
                raw = shlex.split(arguments)
            except ValueError:
                return []
            expanded = []
            for word in raw:
                name = re.fullmatch(r"\$\{(\w+)\}", word)
                expanded += variables.get(name.group(1), []) if name else [word]
            return expanded

        for command, arguments in CMAKE_COMMAND.findall(text):
            args = words(arguments)
            if not args:
                continue
            if command.lower() == "set":
                variables[args[0]] = args[1:]
            elif command.lower() == "add_executable":
                executables[args[0]] = [a for a in args[1:] if a not in CMAKE_OPTIONS]
            elif args[0] == "NAME" and "COMMAND" in args:   # add_test(NAME n COMMAND exe args [WORKING_DIRECTORY d])
                rest = args[args.index("COMMAND") + 1:]
                workdir = "."
                if "WORKING_DIRECTORY" in rest:
                    at = rest.index("WORKING_DIRECTORY")
                    workdir = rest[at + 1] if at + 1 < len(rest) else "."
                    rest = rest[:at]
                for prefix in CMAKE_SOURCE_DIRS:
                    workdir = workdir.replace(prefix, ".")
                target = re.sub(r"^\$<TARGET_FILE:(\w+)>$", r"\1", rest[0]) if rest else ""
                tests.append((target, rest[1:], posixpath.normpath(workdir.lstrip("/") if workdir.startswith("./")
                                                                    else workdir)))
            elif len(args) >= 2:   # add_test(name exe args...)
                tests.append((args[1], args[2:], "."))
        return cls(executables, tests)


DEFINITION = re.compile(r"^[A-Za-z_][\w:<>,*&\s]*?[\s*&]([A-Za-z_]\w*)\s*\([^;{}]*\)\s*(?:const\s*)?\{", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<<<[^;]*?>>>\s*)?\(")


@functools.lru_cache(maxsize=8192)
def _symbols(code: str) -> tuple[frozenset[str], frozenset[str]]:
    """The functions ``code`` (a unit without comments and strings) defines, and those it calls: every program of a
    folder asks this of the folder's units."""
    return frozenset(DEFINITION.findall(code)), frozenset(CALL.findall(code))


def resolve_units(main: str, candidates: list[str], text: Callable[[str], str]) -> list[str]:
    """The ``candidates`` that define functions ``main`` (or a unit taken) calls and does not define itself
    (``text``: a unit's source without comments and strings)."""
    defined = {unit: _symbols(text(unit))[0] for unit in candidates}
    taken: list[str] = []
    main_defines, main_calls = _symbols(text(main))
    wanted = set(main_calls - main_defines)
    while found := [u for u in candidates if u not in taken and defined[u] & wanted]:
        taken += found
        for unit in found:
            wanted |= _symbols(text(unit))[1] - defined[unit]
        wanted -= {name for unit in taken for name in defined[unit]}
    return sorted(taken)


def discover(files: Mapping[str, int], read: Callable[[str], bytes], main: str, has_main: Callable[[str], bool],
             included: Mapping[str, str], overrides: Mapping[str, dict] | None = None,
             overrides_name: str = "", code: Callable[[str], str] | None = None) -> RunSpec:
    """The run spec of ``main`` (a tree path) in a tree of ``files`` (path: size): ``included`` maps units to the
    file that ``#include``s them, ``has_main`` says whether a unit defines ``main``, ``code`` gives a unit's source
    without comments and strings (default: ``read`` and strip; a caller that asks of many programs keeps them)."""
    folder = posixpath.dirname(main)

    def join(rel: str) -> str:
        return posixpath.normpath(posixpath.join(folder, rel))
    in_folder = {posixpath.relpath(p, folder or ".") for p in files if posixpath.dirname(p) == folder}
    spec = RunSpec("none", folder, [[]])
    build = next((b for b in BUILD_FILES if b in in_folder), None)
    listed = None
    if build:
        try:
            makefile = Makefile.parse(read(join(build)).decode("utf-8", "replace"), folder_glob(in_folder))
            target, lines = makefile.run_commands()
            programs = makefile.program_names() | {posixpath.splitext(posixpath.basename(main))[0]}
            listed = _main_units(makefile, in_folder, posixpath.basename(main))
        except ValueError:   # a value that expands without end: the Makefile gives no run and no units
            target, lines, programs = "", [], set()
        inside = [(join(where), args) for where, args in program_invocations(lines, programs)
                  if not join(where).startswith(("/", ".."))]   # a working directory outside the tree: not ours
        if inside:
            spec.source = f"{join(build)}:{target}"
            spec.workdir = "" if inside[0][0] == "." else inside[0][0]
            spec.arg_sets = [args for where, args in inside if where == inside[0][0]]
        if listed is not None:
            spec.units = [join(u) for u in listed if join(u) != main]
            spec.units_source = f"{join(build)}:sources"
    if "CMakeLists.txt" in in_folder and (spec.source == "none" or listed is None):
        cmake = CMakeLists.parse(read(join("CMakeLists.txt")).decode("utf-8", "replace"))
        name = posixpath.basename(main)
        for program, sources in cmake.executables.items():
            if name not in [posixpath.normpath(src) for src in sources]:
                continue
            runs = [(join(where), args) for exe, args, where in cmake.tests
                    if exe == program and not join(where).startswith(("/", ".."))]
            if spec.source == "none" and runs:
                spec.source = f"{join('CMakeLists.txt')}:add_test"
                spec.workdir = "" if runs[0][0] == "." else runs[0][0]
                spec.arg_sets = [args for where, args in runs if where == runs[0][0]]
            if listed is None:
                listed = [posixpath.normpath(src) for src in sources if posixpath.normpath(src) in in_folder]
                spec.units = [join(u) for u in listed if join(u) != main]
                spec.units_source = f"{join('CMakeLists.txt')}:add_executable"
            break
    if listed is None:
        candidates = sorted(p for p in files if posixpath.dirname(p) == folder and p != main
                            and p.endswith(UNIT_SUFFIXES) and p not in included and not has_main(p))
        spec.units = resolve_units(main, candidates, code or (
            lambda p: strip_comments_and_strings(read(p).decode("utf-8", "replace"))))
        spec.units_source = "symbols"
    override = next((o for pattern, o in (overrides or {}).items() if fnmatch.fnmatchcase(main, pattern)), None)
    if override:
        spec.source = overrides_name
        spec.workdir = str(override.get("workdir", spec.workdir))
        arg_sets = override.get("args", spec.arg_sets)
        if arg_sets and not all(isinstance(a, list) for a in arg_sets):   # one argument list given flat
            arg_sets = [arg_sets]
        spec.arg_sets = [[str(a) for a in args] for args in arg_sets] or [[]]
        if "units" in override:
            units = [str(u) for u in override["units"]]
            spec.units, spec.units_source = [u for u in units if u in files], overrides_name
            spec.missing_inputs += [u for u in units if u not in files]   # a unit the tree lacks: cannot build
        spec.timeout_s = float(override["timeout_s"]) if override.get("timeout_s") else None
    if spec.source != "none":   # a program without a run spec runs as it always has: no arguments, no data
        _lay_out_inputs(spec, files, [str(i) for i in (override or {}).get("inputs", ())])
    return spec


def _read_arguments(args: list[str]) -> list[str]:
    """The arguments that may name files the program reads: not the value of an output option (``-o out.bin``)."""
    found, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in OUTPUT_OPTIONS:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in OUTPUT_OPTIONS)):
            found.append(arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg)
    return found


def _lay_out_inputs(spec: RunSpec, files: Mapping[str, int], named: list[str]) -> None:
    """The data files a run reads: the working directory's own (those up to 16 MiB), those the YAML names, and every
    argument that is a file or folder of the tree; a named file or an argument that looks like a file of the tree
    that is not there, or is larger than 16 MiB, is missing."""
    required = {posixpath.normpath(posixpath.join(spec.workdir, n)) for n in named}
    for value in (v for args in spec.arg_sets for v in _read_arguments(args)):
        if not re.search(r"[/.]", value) or re.fullmatch(r"[-+]?[\d.eE+-]+", value):
            continue
        path = posixpath.normpath(posixpath.join(spec.workdir, value))
        under = [p for p in files if p.startswith(path.rstrip("/") + "/")]
        if path in files or under:
            required |= {path} if path in files else set(under)
        elif "/" in value or re.search(r"\.\w{1,5}$", value):
            spec.missing_inputs.append(path)
    ambient = {p for p in files if posixpath.dirname(p) == spec.workdir and not NOT_DATA.search(p)
               and files[p] <= MAX_INPUT_BYTES}
    binary = posixpath.join(spec.workdir, PROGRAM)   # where the built program is laid out: a file there is not data
    for path in sorted((required | ambient) - {binary}):
        if path not in files or files[path] > MAX_INPUT_BYTES:
            spec.missing_inputs.append(path)
        else:
            spec.inputs.append(path)
    spec.missing_inputs = sorted(set(spec.missing_inputs))


def folder_glob(names: set[str]) -> Callable[[str], list[str]]:
    """``$(wildcard ...)`` over a folder's files (``names``, relative to it)."""
    return lambda pattern: sorted(n for n in names if fnmatch.fnmatchcase(n, posixpath.normpath(pattern)))
