"""The benchmark's real-program suite: tasks made from a mirror of a pinned upstream tree of real programs with
hand-written HIP ports (HeCBench: ``src/<name>-cuda`` and ``src/<name>-hip``), kept by reference.

The repository holds the task manifest (``translation_bench/real/tasks.json``: per task its files by digest, run
spec, argument sets, domain, difficulty and license; per benchmark left out, why) and the reference outputs
(``references.parquet``, :mod:`cass.benchmark.references`), never the programs: stage ``real_tasks`` reads them from
the mirror (``benchmark.real.source``) and checks every file against its digest.

A task's CUDA program is laid out as the pipeline lays out a tree's program (the main file, the headers it reaches,
the other units its Makefile lists, tree paths under ``src/``), so its builds are the pipeline's own actions. A
translation is a set of files over that layout: the human port's files of ``<name>-hip/`` go to the same names
under ``<name>-cuda/`` (a header the port takes from its CUDA sibling, ``-I../<name>-cuda``, is then the CUDA
file, as upstream builds it); a file a translation does not give stays the CUDA original's.

Argument sets: the visible one is the run spec's first (upstream's Makefile ``run:``), shown in the prompt; the
hidden one (never shown; verification runs it) halves every whole number above 1 in it (``1024`` -> ``512``,
``-n=100`` -> ``-n=50``). Where that leaves nothing changed, or the CUDA original fails on it, the hidden set is
the visible one, and the task says so (``hidden_differs``). A third set, **selection** (the hidden set halved once
more), is never judged: the ``mutant`` baseline shows there that its mutants differ from the human port
(:func:`cass.benchmark.baselines.choose_mutants`).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import yaml

from cass.benchmark import REAL_SUITE
from cass.sources.copyright import Copyright
from cass.sources.domains import DomainLabeler
from cass.sources.includes import TreeIndex, included_units, resolve_includes
from cass.sources.runspecs import BUILD_FILES, NOT_DATA, UNIT_SUFFIXES, discover
from cass.text.cuda import main_signature
from store import digest_bytes

REAL_DIR = Path("translation_bench") / "real"
MANIFEST = REAL_DIR / "tasks.json"
SHARED_HEADERS = "include"
"""The upstream tree's folder of headers shared by its benchmarks (``src/include``)."""
LICENSE_NAMES = re.compile(r"(?i)^(license|licence|copyright|copying)([._-].*)?$")
UPSTREAM_DOMAINS = {"bioinformatics": "bioinformatics", "math": "math", "ml": "machine_learning",
                    "machinelearning": "machine_learning", "neuralnetwork": "machine_learning",
                    "cryptography": "cryptography", "imaging": "image_processing", "simulation": "physics_simulation",
                    "matrix": "linear_algebra", "graph": "graph", "compression": "data_structures"}
"""Upstream's categories that say a domain, onto the own suite's domain names (``algorithms`` and the like do not:
those tasks take the paper's keyword label, :data:`KEYWORD_DOMAINS`, which adds ``scientific_computing`` and
``general_compute``)."""
KEYWORD_DOMAINS = {"machine learning": "machine_learning", "cryptography": "cryptography",
                   "graphics": "graphics_rendering", "simulation": "physics_simulation",
                   "scientific computing": "scientific_computing", "data structure": "data_structures",
                   "general compute": "general_compute"}
CONSTRUCTS = {
    "shared_memory": r"__shared__", "atomics": r"\batomic[A-Z]\w*\s*\(",
    "warp_intrinsics": r"__(?:shfl\w*|ballot\w*|any_sync|all_sync|syncwarp|activemask)\b",
    "cooperative_groups": r"cooperative_groups", "streams": r"\bcudaStream\w*",
    "textures": r"\btex\w*D\b|cudaTextureObject",
    "libraries": r"\b(?:cub|thrust)::|\bcu(?:blas|fft|rand|sparse|solver)\w*",
    "inline_ptx": r"\basm\s*(?:volatile\s*)?\(",
    "half_precision": r"\b__half2?\b|\b__nv_bfloat16\b", "templates": r"\btemplate\s*<",
    "dynamic_shared_memory": r"extern\s+__shared__",
}
ADVANCED = {"warp_intrinsics", "cooperative_groups", "libraries", "inline_ptx", "textures", "half_precision",
            "streams"}
HALVED = re.compile(r"^(?P<prefix>-{0,2}[A-Za-z_][\w-]*=)?(?P<number>\d+)$")


def hidden_arguments(args: list[str]) -> list[str]:
    """``args`` with every whole number above 1 halved (alone, or as ``option=N``); names and decimals stay."""
    out = []
    for arg in args:
        m = HALVED.match(arg)
        if m and int(m["number"]) > 1:
            out.append(f"{m['prefix'] or ''}{int(m['number']) // 2}")
        else:
            out.append(arg)
    return out


def difficulty(lines: int, units: int, constructs: set[str]) -> str:
    """``easy`` (up to 150 lines, one unit, no advanced construct), ``hard`` (over 600 lines, or two advanced
    constructs, or several units with one), else ``medium``."""
    advanced = len(constructs & ADVANCED)
    if lines > 600 or advanced >= 2 or (units > 1 and advanced):
        return "hard"
    if lines <= 150 and units == 1 and not advanced:
        return "easy"
    return "medium"


def license_of(index: TreeIndex, folder: str) -> tuple[str, str | None]:
    """The license of a benchmark folder: the one its own license file names, with the file (else none: upstream's)."""
    own = sorted(p for p in index.files
                 if posixpath.dirname(p) == folder and LICENSE_NAMES.match(posixpath.basename(p)))
    for path in own:
        found = Copyright.parse(index.read(path).decode("utf-8", "replace")).stanzas
        return (found[0][1] if found else "see file"), path
    return "", None


@dataclass
class RealTask:
    """One real-program task (paths are tree paths under the mirror's ``src/``)."""

    id: str
    benchmark: str
    domain: str
    upstream_categories: list[str]
    difficulty: str
    constructs: list[str]
    lines: int
    license: str
    license_file: str | None
    main: str
    units: list[str]
    include_dirs: list[str]
    files: dict[str, str]
    """The CUDA program: path -> digest (the main file first, its headers, the other units and theirs)."""
    human: dict[str, str]
    """The human port over the same layout: path -> digest."""
    human_from: dict[str, str]
    """Where each human-port file comes from in the mirror (path in the layout -> mirror path)."""
    workdir: str
    inputs: dict[str, str]
    """The data files laid out for a run: path -> digest."""
    timeout_s: float | None
    run_spec_source: str
    visible_args: list[str]
    hidden_args: list[str]
    hidden_differs: bool = True
    """Whether the hidden arguments differ from the visible ones."""
    hidden_output_differs: bool | None = None
    """Whether the CUDA original's output on them does not match its visible output (set when references are
    recorded): where not, a program that prints the visible answer passes the output check, and only the kernel
    count stands against it."""
    hidden_kernels_differ: bool | None = None
    """Whether the CUDA original launches other numbers of kernels on them than on the visible ones (set when
    references are recorded). A task where neither differs is left out (``no_hidden_input``)."""
    references: dict[str, str] = field(default_factory=dict)
    """How the reference outputs went, per argument set (``visible``, ``hidden``): set when they are recorded."""

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.main)

    @property
    def verified_set(self) -> str:
        """The argument set verification runs: the hidden one, or the visible one where they are the same."""
        return "hidden" if self.hidden_differs else "visible"

    def arguments(self, which: str) -> list[str]:
        """The arguments of set ``which``: ``visible``, ``hidden``, or ``selection`` (the hidden set halved)."""
        if which == "selection":
            return hidden_arguments(self.hidden_args)
        return self.visible_args if which == "visible" else self.hidden_args

    def overlay(self, translation: dict[str, str]) -> dict[str, str]:
        """The files a translation's program is built from: the CUDA program with ``translation``'s files over it."""
        return {**self.files, **translation}


def _source_files(index: TreeIndex, folder: str) -> list[str]:
    """The source files (not data, build or license files) under ``folder``."""
    return sorted(p for p in index.files if p.startswith(folder + "/") and NOT_DATA.search(p)
                  and p.endswith((*UNIT_SUFFIXES, ".cuh", ".h", ".hh", ".hpp", ".hxx", ".inl", ".inc")))


def build_task(index: TreeIndex, name: str, categories: list[str], labeler: DomainLabeler,
               included: dict[str, str], default_license: str) -> RealTask:
    """The task of benchmark ``name``, or ValueError naming why it cannot be one."""
    cuda_folder, hip_folder = f"{name}-cuda", f"{name}-hip"
    has_main = lambda p: main_signature(index.read(p).decode("utf-8", "replace")) is not None  # noqa: E731
    mains = [p for p in _source_files(index, cuda_folder) if p.endswith(UNIT_SUFFIXES) and has_main(p)
             and p not in included]
    if not mains:
        raise ValueError("no_main: the CUDA folder has no file defining main")
    main = min(mains, key=lambda p: (p.count("/"), not posixpath.basename(p).startswith("main."), p))
    found = resolve_includes(index, main)
    sizes = {p: f.stat().st_size for p, f in index.files.items()}
    spec = discover(sizes, index.read, main, has_main, included)
    if spec.missing_inputs:
        raise ValueError(f"needs_input: the run reads {', '.join(spec.missing_inputs[:3])}, which the mirror does "
                         f"not have (or over 16 MiB; {len(spec.missing_inputs)} in all)")
    program = [main, *found.headers]
    for unit in spec.units:
        program += [unit, *resolve_includes(index, unit).headers]
    program = list(dict.fromkeys(program))
    makefile = next((f"{cuda_folder}/{b}" for b in BUILD_FILES if f"{cuda_folder}/{b}" in index.files), None)
    named = set(re.findall(r"\.\./([\w.+-]+)", index.read(makefile).decode("utf-8", "replace"))) if makefile else set()
    foreign = [p for p in program if p.split("/")[0] not in {cuda_folder, SHARED_HEADERS, *named}]
    if foreign:   # the include resolver took another benchmark's header for a system one: not this program
        raise ValueError(f"foreign_header: {foreign[0]} is another benchmark's file, and the Makefile names no "
                         f"../{foreign[0].split('/')[0]}")
    digest = lambda p: digest_bytes(index.read(p))  # noqa: E731
    hip_sources = _source_files(index, hip_folder)
    if not hip_sources:
        raise ValueError("no_port: the HIP folder has no source file")
    hip_mains = [p for p in hip_sources if p.endswith(UNIT_SUFFIXES) and has_main(p)]
    mapped = {}
    for path in hip_sources:
        target = cuda_folder + path.removeprefix(hip_folder)
        if path in hip_mains and posixpath.basename(path) != posixpath.basename(main):
            if len(hip_mains) > 1:
                continue
            target = main   # the port's one main file, named otherwise
        mapped[target] = path
    text = "\n".join(index.read(p).decode("utf-8", "replace") for p in program)
    constructs = {c for c, rx in CONSTRUCTS.items() if re.search(rx, text)}
    upstream = [UPSTREAM_DOMAINS[c] for c in categories if c in UPSTREAM_DOMAINS]
    domain = upstream[0] if upstream else KEYWORD_DOMAINS[labeler.label(text)]
    lines = sum(1 for line in text.splitlines() if line.strip())
    license_name, license_file = license_of(index, cuda_folder)
    visible = list(spec.arg_sets[0]) if spec.arg_sets else []
    hidden = hidden_arguments(visible)
    return RealTask(
        id=f"{REAL_SUITE}_{re.sub(r'[^0-9A-Za-z]+', '_', name).strip('_').lower()}", benchmark=name, domain=domain,
        upstream_categories=categories, difficulty=difficulty(lines, 1 + len(spec.units), constructs),
        constructs=sorted(constructs), lines=lines, license=license_name or default_license,
        license_file=license_file, main=main, units=spec.units, include_dirs=found.include_dirs,
        files={p: digest(p) for p in program}, human={t: digest(p) for t, p in mapped.items()}, human_from=mapped,
        workdir=spec.workdir, inputs={p: digest(p) for p in spec.inputs}, timeout_s=spec.timeout_s,
        run_spec_source=spec.source, visible_args=visible, hidden_args=hidden, hidden_differs=hidden != visible)


def build_manifest(mirror: Path, upstream: dict, progress: Callable = iter) -> dict:
    """The manifest of every benchmark of ``mirror`` with a CUDA and a HIP folder: its tasks, and the benchmarks
    left out with the reason (counted by reason)."""
    src = mirror / "src"
    index = TreeIndex.scan(src, projects=False)   # a benchmark that takes another's header is refused below
    names = sorted(p.name.removesuffix("-cuda") for p in src.glob("*-cuda") if (src / f"{p.name[:-5]}-hip").is_dir())
    meta = yaml.safe_load((mirror / "benchmarks.yaml").read_text()) if (mirror / "benchmarks.yaml").is_file() else {}
    labeler = DomainLabeler.load(Path(__file__).parents[1] / "sources" / "domain_keywords.yaml")
    units = [p for p in index.files if p.endswith(UNIT_SUFFIXES)]
    included = included_units(index, units)
    tasks, left_out = [], []
    for name in progress(names):
        try:
            task = build_task(index, name, list((meta.get(name) or {}).get("categories", [])), labeler, included,
                              upstream["license"])
        except ValueError as why:
            reason, _, detail = str(why).partition(": ")
            left_out.append({"benchmark": name, "reason": reason, "detail": detail})
            continue
        tasks.append(asdict(task))
    return {"upstream": upstream, "tasks": tasks, "left_out": left_out,
            "left_out_by_reason": dict(Counter(x["reason"] for x in left_out).most_common())}


def read_manifest(path: Path = MANIFEST) -> tuple[dict, list[RealTask]]:
    """The manifest's upstream and its tasks."""
    data = json.loads(path.read_text())
    return data["upstream"], [RealTask(**t) for t in data["tasks"]]


class MirrorError(ValueError):
    """A mirror file that is missing or not the one the manifest names."""


def load_files(store, mirror: Path, tasks: list[RealTask]) -> tuple[list[RealTask], dict[str, str]]:
    """Every task's files read from ``mirror`` (``src/``), checked against their digests and put in ``store``: the
    tasks whose files all check, and why each other task does not (task id -> the first file that fails)."""
    ok, problems = [], {}
    for task in tasks:
        try:
            wanted = {*task.files.items(), *task.inputs.items(),
                      *((task.human_from[p], d) for p, d in task.human.items())}
            for origin, digest in sorted(wanted):
                try:
                    data = (mirror / "src" / origin).read_bytes()
                except OSError as exc:
                    raise MirrorError(f"{mirror / 'src' / origin}: {exc.strerror}") from exc
                if digest_bytes(data) != digest:
                    raise MirrorError(f"{mirror / 'src' / origin}: BLAKE3 {digest_bytes(data)[:16]}, the manifest "
                                      f"names {digest[:16]} (another upstream commit?)")
                store.put(data)
        except MirrorError as why:
            problems[task.id] = str(why)
            continue
        ok.append(task)
    return ok, problems


def card(manifest: dict) -> str:
    """The suite's card (``translation_bench/real/README.md``): what it is, its sizes, domains, difficulty, licenses,
    and what was left out and why, from the manifest."""
    tasks, upstream = manifest["tasks"], manifest["upstream"]
    host = manifest.get("references_host") or {}

    def table(title: str, key: str) -> list[str]:
        counts = Counter(t[key] for t in tasks)
        return ["", f"| {title} | tasks |", "|---|---:|", *(f"| {k} | {n} |" for k, n in counts.most_common())]

    lines = [
        "# The real-program suite", "",
        f"{len(tasks)} tasks from the real programs of {upstream['repository']} at commit `{upstream['commit']}` "
        f"({upstream['license']}; a benchmark folder's own license file applies to it), each with the hand-written "
        "HIP port upstream keeps beside it as the reference. This folder holds the task manifest (`tasks.json`) and "
        "the CUDA originals' reference outputs (`references.parquet`), not the programs: stage `real_tasks` reads "
        "them from a mirror of that commit (`benchmark.real.source`) and checks every file by its BLAKE3 digest. "
        "Made by `cass bench-tasks build` (the manifest) and `cass bench-tasks record` (the references and this "
        "card); docs/benchmark.md says how tasks are judged.", "",
        f"- Every task has a hidden argument set (the visible set halved), which no prompt shows; a translation "
        "passes only where it passes on both. The hidden set changes what the CUDA original prints in "
        f"{sum(bool(t['hidden_output_differs']) for t in tasks)} tasks and how many kernels it launches in "
        f"{sum(bool(t.get('hidden_kernels_differ')) for t in tasks)}, so a program that prints the visible answer "
        "and launches as many kernels as the CUDA original does on the visible set fails; a benchmark whose hidden "
        "set changes neither is left out (`no_hidden_input`).",
        "- Every task's output holds a computed value (a number outside the timings that is not part of a name or "
        "one of its arguments echoed, or a hash); a benchmark whose output holds none (only `PASS`, timings and "
        "labels) is left out (`no_output_signal`): its verdict would rest on the translation's own self-check.",
        f"- {sum(len(t['units']) > 0 for t in tasks)} tasks are programs of several units (a prediction is the set "
        "of files).",
        f"- References recorded on {host.get('gpu', 'no GPU host yet')} ({host.get('sm', '-')}, driver "
        f"{host.get('driver', '-')}): the CUDA original {manifest['references_runs']} times per argument set"
        + (", its kernels counted and what it copies back from the GPU digested" if host.get("launch_counter") else "")
        + "; the human port agreed with it on both sets in every task kept.",
    ]
    lines += table("domain", "domain") + table("difficulty", "difficulty") + table("license", "license")
    lines += ["", "Benchmarks left out:", "", "| reason | benchmarks |", "|---|---:|",
              *(f"| `{r}` | {n} |" for r, n in manifest["left_out_by_reason"].items()), "",
              "`tasks.json` lists each one with its detail."]
    return "\n".join(lines) + "\n"
