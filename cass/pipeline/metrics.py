"""What a stage reports: ``metrics/<stage>.json`` (what its outputs are, a DVC metric, in git) and
``metrics/run/<stage>.json`` (how this run went: time, cache hits; ignored, it differs between runs)."""

from __future__ import annotations

import os
import resource
from pathlib import Path

from cass.files import write_json
from cass.pipeline import stage_worker

METRICS_DIR = Path("metrics")
RUN_DIR = METRICS_DIR / "run"


def write_metrics(stage: str, metrics: dict) -> None:
    """``metrics/<stage>.json``, the file `dvc metrics show` reads (sorted keys, stable bytes): what
    the stage's outputs are, never how this run made them (a cold and a warm run write the same)."""
    write_json(METRICS_DIR / f"{stage}.json", metrics)


def write_run_report(stage: str, report: dict) -> None:
    """``metrics/run/<stage>.json``: how this run went (wall and CPU seconds, tool jobs, cache hits and
    misses). Not a DVC output and not in git: it differs between runs of the same data."""
    write_json(RUN_DIR / f"{stage}.json", {**process_time(), **report})




def process_time() -> dict:
    """This stage process's wall seconds since it started (interpreter start-up and imports included) or, on a
    warm stage worker (:mod:`cass.pipeline.stage_worker`, ``warm_start``), since it took the stage; its own CPU
    seconds over the same span (the tools it ran are counted apart); its peak resident memory and that of its
    largest child (a tool or a worker), in MiB."""
    ticks = os.sysconf("SC_CLK_TCK")
    started = int(stage_worker.start_time(os.getpid())) / ticks
    uptime = float(Path("/proc/uptime").read_text().split()[0])
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = 0.0
    if stage_worker.request_start is not None:
        started, cpu_before = stage_worker.request_start
    return {"stage_wall_s": round(uptime - started, 3),
            "stage_cpu_s": round(own.ru_utime + own.ru_stime - cpu_before, 3),
            "warm_start": stage_worker.request_start is not None,
            "stage_peak_rss_mib": round(own.ru_maxrss / 1024, 1),
            "child_peak_rss_mib": round(children.ru_maxrss / 1024, 1)}


def mean_reduction(counts: list[tuple[int, int]]) -> float:
    """Mean fraction of tokens the normalisation removed, over samples of (raw, normalised) counts."""
    fractions = [1 - after / before if before else 0.0 for before, after in counts]
    return round(sum(fractions) / len(fractions), 4) if fractions else 0.0


def percent(share: float | None) -> str:
    """A share (0 to 1) as a percentage with one decimal, ``-`` when there is none."""
    return "-" if share is None else f"{100 * share:.1f}%"


def percent_of(part: int, whole: int) -> str:
    """``part / whole`` as a percentage with one decimal, ``-`` when ``whole`` is 0: from the counts, never from a
    share already rounded (191 / 196 is 97.4%, where the 4-decimal share 0.9745 would print 97.5%)."""
    return percent(part / whole if whole else None)
