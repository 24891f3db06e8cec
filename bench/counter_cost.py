"""Benchmark: what the kernel counter costs a program's run (issue 48), measured on one GPU host.

Takes a run batch that carries a kernel counter (any exporter's folder), draws ``--sample`` of its distinct programs
(binary, arguments, working directory; seeded), and runs each twice on this machine, one run after the other, in the
program sandbox: with the batch's counter (kernels counted, device reads digested, as ``run-batch`` runs it) and with
no counter; which of the two goes first alternates. ``--jobs`` programs at a time, spread over the host's GPUs. Prints
the median ratio of the two wall times (over the programs both runs of which exited within the limit, and over those
of them that ran at least 0.5 s without the counter) and writes every pair (``--out``, JSON). Needs only
``toolchains``, ``store`` and ``blake3``, like ``run-batch``.

    python bench/counter_cost.py BATCH --sample 60 --jobs 8 --seed cost-1 --out counter-cost.json
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from hosts.gpu import (  # noqa: E402
    BATCH_FILE,
    COUNTER_DIR,
    batch_job,
    gpu_count,
    launcher_for,
    local_gpu_host,
    probe_counter,
    with_counter,
)
from toolchains.launches import LaunchCounter  # noqa: E402

LONG_S = 0.5
"""Runs shorter than this (without the counter) are mostly start-up: their ratio is reported apart."""


def sample_entries(batch: dict, size: int, seed: str) -> list[dict]:
    """``size`` distinct programs of the batch (the first run of each binary, arguments and folder), drawn with
    ``seed``."""
    firsts = {}
    for entry in batch["runs"]:
        firsts.setdefault((entry["binary"], tuple(entry.get("args", ())), entry.get("workdir", "")), entry)
    entries = sorted(firsts.values(), key=lambda e: (e["binary"], e.get("args", ()), e.get("workdir", "")))
    return random.Random(seed).sample(entries, min(size, len(entries)))


def median_ratio(pairs: list[dict]) -> float | None:
    return round(statistics.median(p["with_s"] / p["without_s"] for p in pairs), 3) if pairs else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("batch", type=Path)
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--seed", default="cost-1")
    parser.add_argument("--jobs", type=int, default=8)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    folder = args.batch.resolve()
    batch = json.loads((folder / BATCH_FILE).read_text())
    counter = LaunchCounter.found_in(folder / COUNTER_DIR)
    host = local_gpu_host(counted=False)
    if host is None or counter is None:
        sys.exit("counter_cost: needs an NVIDIA GPU and a batch that carries a kernel counter")
    devices = list(range(max(1, gpu_count())))
    probe_counter(host, counter, devices)
    counted = with_counter(host, counter)

    def measure(numbered: tuple[int, dict]) -> dict:
        n, entry = numbered
        limits, invocation, job = batch_job(folder, batch, entry)
        device = devices[n % len(devices)]
        launchers = {"with": launcher_for(counted, limits, counter, device), "without": launcher_for(host, limits,
                                                                                                   None, device)}
        order = ("with", "without") if n % 2 == 0 else ("without", "with")
        runs = {mode: launchers[mode].run_job(job) for mode in order}
        facts = {mode: json.loads(r.outputs["run.json"]) if not r.transient else {"verdict": r.transient}
                 for mode, r in runs.items()}
        row = {"binary": entry["binary"], "args": list(invocation.args), "first": order[0],
               **{f"{mode}_s": f.get("wall_s") for mode, f in facts.items()},
               **{f"{mode}_verdict": f["verdict"] for mode, f in facts.items()},
               "kernels": facts["with"].get("kernel_launches")}
        print(f"[{n + 1}] {entry['binary'][:12]} {' '.join(invocation.args)[:40]}: with {row['with_s']} s, "
              f"without {row['without_s']} s", flush=True)
        return row

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        rows = list(pool.map(measure, enumerate(sample_entries(batch, args.sample, args.seed))))
    both = [r for r in rows if r["with_verdict"] == r["without_verdict"] == "exited" and r["without_s"]]
    long = [r for r in both if r["without_s"] >= LONG_S]
    summary = {"programs": len(rows), "both_exited": len(both), "median_ratio": median_ratio(both),
               f"at_least_{LONG_S}_s": len(long), f"median_ratio_at_least_{LONG_S}_s": median_ratio(long),
               "total_with_s": round(sum(r["with_s"] for r in both), 2),
               "total_without_s": round(sum(r["without_s"] for r in both), 2)}
    args.out.write_text(json.dumps({"host": asdict(counted), "batch": str(folder), "sample": args.sample,
                                    "seed": args.seed, "jobs": args.jobs, "gpus": len(devices),
                                    "summary": summary, "runs": rows}, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
