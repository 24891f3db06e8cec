"""Mutation analysis of the execution oracle: how often does it accept a wrong program?

A program the oracle verifies gets a few mutants (:mod:`cass.text.mutation`: operator swaps, constants and indices
off by one, a barrier removed, an atomic made plain, launch dimensions swapped, an early return), drawn with a
fixed seed. Each mutant is built exactly as the unmutated program was, then run and judged by the very oracle that
verified it:

- **pairs** (the ``execute`` stage's oracle): the HIP side of a verified pair, mutated in its translated files,
  built through HIP's NVIDIA back end from the pair's units, run with the pair's run spec, and judged against the
  CUDA original's recorded runs (:func:`cass.execution.verify.judge_pair`, :func:`~cass.execution.verify.verified`);
- **suite** (the benchmark's oracle): a real-program task's human port, mutated, scored as any prediction is
  (:func:`cass.benchmark.real_evaluate.evaluate_real`: visible and hidden arguments).

A mutant whose binary is byte-identical to the unmutated program's is **equivalent** (no output could tell it); one
that does not build is **stillborn**; neither counts. Every other mutant is **killed** (the oracle rejected it) or a
**survivor**. The mutation score is killed / (killed + survivors). A survivor whose runs show exactly what the
unmutated program's runs of the same arguments show (:func:`observed`: exit, kernel launches, device reads, output
with its volatile fields blanked) is **silent**: the mutation never reached an output on these inputs, so no oracle
that judges outputs could reject it without rejecting the unmutated program. It counts as a survivor in the score;
the score over the mutants that are not silent measures the oracle apart from its inputs' reach.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from cass.engine.placement import Placement
from cass.engine.targets import Build
from cass.execution.compare import text_of, volatile_fields
from cass.execution.programs import (
    ProgramRun,
    ProgramSource,
    Run,
    build_program_targets,
    build_toolchains,
    program_sources,
    routed_toolchains,
    routed_vendor,
    run_plan,
)
from cass.execution.verify import reads_of
from cass.text.mutation import Mutant, sample_mutants
from store import Store

TEXT_ERRORS = "surrogateescape"
"""How a source's bytes that are not UTF-8 survive a mutation: they go back byte for byte."""
DEFAULT_SEED = "cass-mutants-1"
"""The seed mutants are drawn with unless another is given (the mutation analysis, the ``mutant`` baseline)."""
OUTCOMES = ("killed", "survived", "silent", "equivalent", "stillborn", "not_run")


@dataclass
class MutantProgram:
    """One mutant of one program: what was changed, the program's files with it, and what became of it."""

    suite: str
    """``pairs`` (a verified pair's HIP side) or ``suite`` (a real-program task's human port)."""
    program: str
    """The pair's sample id, or the task's id."""
    group: str
    """Where the program comes from (the pair's origin, or the task's half of the development split)."""
    mutant: Mutant
    files: dict[str, str]
    """The mutated program's files: path -> digest (every file of the side, the mutated one changed)."""
    original_binary: str | None = None
    binary: str | None = None
    build: str = ""
    """Why the mutant did not build (``stillborn``), else empty."""
    status: str = ""
    """The oracle's verdict on the mutant."""
    killed: bool | None = None
    runs: list[dict] = field(default_factory=list)

    @property
    def equivalent(self) -> bool:
        return self.binary is not None and self.binary == self.original_binary

    @property
    def outcome(self) -> str:
        """``stillborn``, ``equivalent``, ``killed``, ``survived`` or ``not_run``."""
        if self.binary is None:
            return "stillborn"
        if self.equivalent:
            return "equivalent"
        if self.killed is None:
            return "not_run"
        return "killed" if self.killed else "survived"

    def describe(self) -> dict:
        return {"suite": self.suite, "program": self.program, "group": self.group, "operator": self.mutant.operator,
                "path": self.mutant.path, "line": self.mutant.line, "original": self.mutant.original,
                "replacement": self.mutant.replacement, "binary": self.binary,
                "original_binary": self.original_binary, "build": self.build, "outcome": self.outcome,
                "status": self.status}


def mutate_files(store: Store, files: dict[str, str], mutable: list[str], count: int, seed: str,
                 program: str) -> list[tuple[Mutant, dict[str, str]]]:
    """``count`` mutants of the files ``mutable`` of a program (``files``: path -> digest), each with the program's
    files as that mutant leaves them (:func:`cass.text.mutation.sample_mutants`)."""
    texts = {p: store.get(files[p]).decode("utf-8", TEXT_ERRORS) for p in mutable}
    mutants = []
    for mutant in sample_mutants(texts, count, seed, program):
        changed = mutant.apply(texts[mutant.path]).encode("utf-8", TEXT_ERRORS)
        mutants.append((mutant, {**files, mutant.path: store.put(changed)}))
    return mutants


def translated_paths(store: Store, row: dict, pairs: dict[tuple[str, str], dict]) -> tuple[dict[str, str], list[str]]:
    """A pair's HIP program (path -> digest) and the paths of it that are translations (their HIP text differs from
    the CUDA file, or has no CUDA file): the files a mutant may change."""
    sources = program_sources(store, row, pairs)
    cuda, (hip, _) = sources["cuda"][0], sources["hip"]
    return hip, sorted(p for p, d in hip.items() if cuda.get(p) != d)


def pair_mutants(store: Store, params: dict, rows: list[dict], pairs: dict[tuple[str, str], dict], count: int,
                 seed: str, placement: Placement) -> list[MutantProgram]:
    """``count`` mutants of the HIP side of every pair of ``rows`` (the ``execute`` stage's manifest rows), built as
    the stage builds that side (``params``: params.yaml's; a pair that takes a route, on its route's toolchain)."""
    mutants, targets = [], {}
    own = build_toolchains(placement)
    routed = routed_toolchains(params, placement, rows, ("hip",), own["hip"])
    for row in rows:
        hip, mutable = translated_paths(store, row, pairs)
        units = [row["files"][0]["path"], *(row["units"] or ())]
        builder = routed_vendor(row, "hip", own, routed)
        for mutant, files in mutate_files(store, hip, mutable, count, seed, row["sample_id"]):
            mutants.append(MutantProgram("pairs", row["sample_id"], row["origin"], mutant, files,
                                         original_binary=row["hip_program"]))
            targets[len(mutants) - 1] = ProgramSource("hip", units, row["include_dirs"], files, row["build_flags"],
                                                      builder)
    built, _ = build_program_targets(store, params["execute"], targets, placement, routed, own)
    for key, build in built.items():
        _settle_build(mutants[key], build)
    return mutants


def suite_mutants(store: Store, tasks: dict, halves: dict[str, str], count: int, seed: str) -> list[MutantProgram]:
    """``count`` mutants of the human port of every real-program task (``tasks`` by id; ``halves``: each benchmark's
    half of the development split), over the task's layout (the port's files, the CUDA files the port does not
    give)."""
    mutants = []
    for task in tasks.values():
        for mutant, files in mutate_files(store, task.human, sorted(task.human), count, seed, task.id):
            mutants.append(MutantProgram("suite", task.id, halves.get(task.benchmark, "-"), mutant, files))
    return mutants


def settle_suite(mutants: list[MutantProgram], rows: list[dict], programs: dict[str, str | None]) -> None:
    """Each suite mutant's binary, its human port's, and the benchmark's verdict, from an evaluation of the mutants
    as predictions in order (``rows`` and ``programs`` of :func:`cass.benchmark.real_evaluate.evaluate_real`)."""
    predicted = [r for r in rows if not r["baseline_reference"]]
    for i, (mutant, row) in enumerate(zip(mutants, predicted, strict=True)):
        mutant.original_binary = programs.get(f"reference:{mutant.program}")
        mutant.binary = programs.get(str(i))
        if mutant.binary is None:
            mutant.build = f"{row['verdict']}: {row['detail'][:300]}"
        elif not row["verdict"].startswith("not_run"):
            mutant.status = row["verdict"]
            mutant.killed = not row["verdict"].startswith("pass")


def _settle_build(mutant: MutantProgram, build: Build) -> None:
    mutant.binary = build.binary
    if build.binary is None:
        mutant.build = f"{build.reason}: {build.detail[:300]}"


def planned_pair_runs(rows: dict[str, dict], mutants: list[MutantProgram], params: dict, runs: int,
                      ) -> dict[int, list[ProgramRun]]:
    """Per mutant that built and is not equivalent, its runs: ``runs`` per argument set of its pair's run spec, with
    the pair's limits."""
    planned = {}
    for i, mutant in enumerate(mutants):
        if mutant.binary is None or mutant.equivalent:
            continue
        invocations, limits = run_plan(rows[mutant.program], params)
        planned[i] = [ProgramRun(mutant.binary, invocation, limits, n) for invocation in invocations
                      for n in range(1, runs + 1)]
    return planned


def observed(store: Store, run: Run) -> tuple:
    """What a run shows: how it ended, its kernel launches, its device reads, and its output line by line with the
    words that are volatile by nature (:func:`cass.execution.compare.volatile_fields`) blanked."""
    lines = tuple(tuple("~" if volatile else word for word, volatile in zip(words, volatile_fields(words), strict=True))
                  for words in (line.split() for line in text_of(store.get(run.stdout)).splitlines()))
    reads = reads_of(store, run)   # by each copy's size and digest (its sums may be NaN, never equal to itself)
    copies = reads and (reads.copies, tuple((copy.size, copy.digest) for copy in reads.records))
    return run.verdict, run.exit_code, run.kernel_launches, copies, lines


def silent(store: Store, runs: list[Run], unmutated: list[Run]) -> bool:
    """Whether a mutant's runs (at least one) show what the unmutated program's runs of the same arguments show
    (:func:`observed`), run for run."""
    mine, theirs = sorted(runs, key=lambda r: r.args), sorted(unmutated, key=lambda r: r.args)
    return (bool(mine) and [r.args for r in mine] == [r.args for r in theirs]
            and all(observed(store, a) == observed(store, b) for a, b in zip(mine, theirs, strict=True)))


def score(outcomes: Iterable[tuple[str, str]]) -> dict[str, dict]:
    """Per group (and ``all``) of ``(group, outcome)`` pairs (outcomes of :attr:`MutantProgram.outcome`, or
    ``silent``): the count of each outcome, the mutation score, killed / (killed + survived + silent), and the score
    over the mutants that reached an output, killed / (killed + survived) (``score_reached``; None where none was
    judged)."""
    groups: dict[str, dict] = {}
    for group, outcome in outcomes:
        for name in ("all", group):
            counts = groups.setdefault(name, dict.fromkeys(OUTCOMES, 0))
            counts[outcome] += 1
    for counts in groups.values():
        reached = counts["killed"] + counts["survived"]
        judged = reached + counts["silent"]
        counts["score"] = round(counts["killed"] / judged, 4) if judged else None
        counts["score_reached"] = round(counts["killed"] / reached, 4) if reached else None
    return groups
