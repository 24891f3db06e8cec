"""Stage ``branch_parity``'s work: the conditionals of a sample's own files whose taken branch differs
between the NVIDIA and the AMD side.

A pair is one program only if both compilers see the same code. Each CUDA file of a sample and its
HIP translation (after the repairs) get a marker after every branch of every ``#if``/``#ifdef``/
``#ifndef`` group (``#if``, each ``#elif``, ``#else``): a ``#warning`` naming the branch and the
compiler pass (host or device). Each side's compiler preprocesses the marked sample once, both
passes (``nvcc -M``, ``hipcc -E``), as a cached action; the markers on its stderr are the branches
it took. Groups whose taken branch differs, in a branch both sides entered, are divergences:
file, line, pass, the branch each side took and the macros the group's conditions name, kept on
the sample's row (``branch_divergences``) and counted in the metrics. System headers are not
marked. Files whose HIP text has a different conditional structure than the CUDA text are not
compared (``branch_parity`` ``unaligned``); a sample whose preprocessing failed on a side is
``unknown``. OpenCL C samples (the same text on both sides) are not checked. Nothing is dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import polars as pl

from cass.engine.actions import pipeline_toolchains, plan, stage_runner
from cass.pipeline.context import Stage
from cass.pipeline.manifests import attach
from toolchains.headers import strip_comments
from toolchains.language import is_opencl

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif)\b(.*)$")
_MARKER = re.compile(r"__cass_branch_([hd])_(\d+)_(\d+)__")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_NOT_MACROS = frozenset({"defined", "__has_include", "__has_include_next", "__has_attribute", "__has_builtin",
                         "__has_feature", "__has_cpp_attribute", "__has_extension", "true", "false"})
PASSES = {"h": "host", "d": "device"}

DIVERGENCE = pl.Struct({"file": pl.String, "line": pl.Int64, "pass": pl.String, "nvidia_line": pl.Int64,
                        "amd_line": pl.Int64, "macros": pl.List(pl.String)})
"""One divergence: the group's ``#if`` line, the line of the branch each side took (null: none)."""


@dataclass(frozen=True)
class Branch:
    """One branch of a conditional group: ``number`` counts the branches of its file, ``group`` its groups."""

    number: int
    group: int
    line: int
    """1-based line of its directive"""
    end: int
    """last line of its directive (continuations)"""
    condition: str
    parent: int | None
    """the branch the group lies in (None at the top)"""


def branches(text: str) -> list[Branch]:
    """Every branch of every conditional group of a C/C++ text (comments and continuations handled)."""
    lines = strip_comments(text).split("\n")
    found: list[Branch] = []
    open_groups: list[tuple[int, int | None]] = []   # (group, branch it lies in)
    current: list[int | None] = [None]                # the innermost open branch
    groups = 0
    i = 0
    while i < len(lines):
        start, logical = i, lines[i]
        while logical.endswith("\\") and i + 1 < len(lines):
            i += 1
            logical = logical[:-1] + " " + lines[i]
        m = _DIRECTIVE.match(logical)
        i += 1
        if not m:
            continue
        kind, rest = m.groups()
        if kind.startswith("if"):
            open_groups.append((groups, current[-1]))
            groups += 1
        elif not open_groups:
            continue   # an unbalanced #elif/#else/#endif: the compiler reports it
        if kind == "endif":
            open_groups.pop()
            current.pop()
            continue
        group, parent = open_groups[-1]
        if not kind.startswith("if"):
            current.pop()
        found.append(Branch(len(found), group, start + 1, i, f"{kind} {rest.strip()}".strip(), parent))
        current.append(found[-1].number)
    return found


def marker(file_number: int, branch: int) -> str:
    """The lines that report, on a compiler's stderr, that it took a branch, and in which pass."""
    return (f"#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)\n#warning __cass_branch_d_{file_number}_"
            f"{branch}__\n#else\n#warning __cass_branch_h_{file_number}_{branch}__\n#endif\n")


def instrument(text: str, file_number: int, found: list[Branch]) -> str:
    """``text`` with :func:`marker` lines after each branch's directive."""
    lines = text.split("\n")
    after = {b.end: b.number for b in found}
    out = []
    for n, line in enumerate(lines, 1):
        out.append(line)
        if n in after:
            out.append(marker(file_number, after[n]).rstrip("\n"))
    return "\n".join(out)


def taken(stderr: str) -> set[tuple[str, int, int]]:
    """(pass, file number, branch number) of every marker a compiler reported."""
    return {(p, int(f), int(b)) for p, f, b in _MARKER.findall(stderr)}


def divergences(files: list[tuple[str, list[Branch]]], nvidia: set[tuple[str, int, int]],
                amd: set[tuple[str, int, int]]) -> list[dict]:
    """The groups whose taken branch differs between the sides, per pass, in branches both sides entered."""
    found = []
    for number, (path, marked) in enumerate(files):
        by_group: dict[int, list[Branch]] = {}
        for b in marked:
            by_group.setdefault(b.group, []).append(b)
        for p, pass_name in PASSES.items():
            nv = {b for (q, f, b) in nvidia if q == p and f == number}
            hip = {b for (q, f, b) in amd if q == p and f == number}
            for group in by_group.values():
                parent = group[0].parent
                if parent is not None and not (parent in nv and parent in hip):
                    continue
                ids = {b.number for b in group}
                if ids & nv == ids & hip:
                    continue
                line_of = {b.number: b.line for b in group}
                macros = sorted({n for b in group for n in _NAME.findall(b.condition.split(None, 1)[-1])
                                 if n not in _NOT_MACROS and not b.condition.startswith("else")})
                found.append({"file": path, "line": group[0].line, "pass": pass_name,
                              "nvidia_line": min((line_of[b] for b in ids & nv), default=None),
                              "amd_line": min((line_of[b] for b in ids & hip), default=None), "macros": macros})
    return found


def aligned(cuda: list[Branch], hip: list[Branch]) -> bool:
    """Whether a HIP text has the CUDA text's conditional structure (the same groups and branches, in order)."""
    return [(b.group, b.parent) for b in cuda] == [(b.group, b.parent) for b in hip]


def run(stage: Stage) -> None:
    params = stage.params
    store = stage.store
    rows = stage.upstream("repair")
    out = stage.output(rows.height)
    toolchains = pipeline_toolchains(params, ("nvidia", "amd"))
    timeout = params["branch_parity"]["timeout_s"]
    marked: dict[str, dict] = {}
    actions: dict[str, list] = {"nvidia": [], "amd": []}
    for row in rows.iter_rows(named=True):
        if is_opencl(row["files"][0]["path"]):
            continue
        sample = {"files": [], "unaligned": []}
        inputs: dict[str, dict[str, str]] = {"nvidia": {}, "amd": {}}
        for number, (cuda, hip) in enumerate(zip(row["files"], row["hip_files"], strict=True)):
            cuda_text, hip_text = store.get_text(cuda["digest"], "replace"), store.get_text(hip["digest"], "replace")
            cuda_branches, hip_branches = branches(cuda_text), branches(hip_text)
            if not aligned(cuda_branches, hip_branches):
                sample["unaligned"].append(cuda["path"])
                cuda_branches = hip_branches = []
            sample["files"].append((cuda["path"], cuda_branches))
            inputs["nvidia"][cuda["path"]] = store.put_text(instrument(cuda_text, number, cuda_branches))
            inputs["amd"][hip["path"]] = store.put_text(instrument(hip_text, number, hip_branches))
        main = row["files"][0]["path"]
        for vendor, tc in toolchains.items():
            step = tc.preprocess_step(main, params[vendor]["archs"][0], params[vendor]["flags"], row["include_dirs"])
            sample[vendor] = plan(tc, step, inputs[vendor])
            actions[vendor].append(sample[vendor])
        marked[row["sample_id"]] = sample
    outcomes, counts, times = {}, {}, {}
    for vendor, tc in toolchains.items():
        runner = stage_runner(store, tc, params, timeout)
        outcomes.update(runner.run(actions[vendor], desc=f"{vendor} preprocess"))
        counts[vendor], times[vendor] = runner.counts.as_dict(), runner.time_metrics()

    added, by_macro, status = [], Counter(), Counter()
    for row in rows.iter_rows(named=True):
        sample = marked.get(row["sample_id"])
        if sample is None:
            added.append({"sample_id": row["sample_id"], "branch_parity": "opencl", "branch_divergences": []})
            status["opencl"] += 1
            continue
        results = {v: outcomes[sample[v].key] for v in toolchains}
        if not all(o.ok for o in results.values()):
            failed = [v for v, o in results.items() if not o.ok]
            added.append({"sample_id": row["sample_id"], "branch_parity": f"unknown:{'+'.join(failed)}",
                          "branch_divergences": []})
            status["unknown"] += 1
            continue
        seen = {v: taken(store.get_text(o.record.stderr, "replace")) for v, o in results.items()}
        found = divergences(sample["files"], seen["nvidia"], seen["amd"])
        by_macro.update(m for d in found for m in d["macros"])
        verdict = "diverged" if found else "unaligned" if sample["unaligned"] else "same"
        status[verdict] += 1
        added.append({"sample_id": row["sample_id"], "branch_parity": verdict, "branch_divergences": found})
    kept = attach(rows, added, {"branch_parity": pl.String, "branch_divergences": pl.List(DIVERGENCE)})
    out.extra_metrics.update({
        "samples": dict(sorted(status.items())),
        "divergences": sum(len(a["branch_divergences"]) for a in added),
        "divergences_by_macro": dict(by_macro.most_common(20)),
    })
    out.run.update(actions=counts, by_vendor=times)
    out.action_keys = {a.key for acts in actions.values() for a in acts}
    print(out.write(kept))
