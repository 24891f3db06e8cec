"""The execute stage's cluster path on a real GPU: a Dask scheduler and one worker with the ``gpu`` resource
on this machine, program jobs of a batch directory (``cass gpu-batch export``) sent through
:class:`hosts.cluster.DaskExecutor` as the stage sends them. Needs this checkout, ``blake3``,
``dask``/``distributed`` and bubblewrap on a machine with an NVIDIA GPU.

    python bench/gpu_cluster.py BATCH_DIR [--limit N]

Prints one JSON object: the host facts the driver got from the worker, each job's verdict and whether its
stdout equals the batch runner's (``BATCH_DIR/results``, when present), and whether a job keyed for
another host's fingerprint was refused.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hosts.cluster import Cluster, ToolchainMismatchError
from toolchains.sandboxed_runs import ProgramLimits, program_job


def start(folder: Path) -> tuple[str, list[subprocess.Popen]]:
    """A scheduler and a ``gpu=1`` worker (preload ``hosts.cluster``) on 127.0.0.1."""
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    scheduler_file = folder / "scheduler.json"
    procs = [subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                               str(scheduler_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    while not scheduler_file.exists():
        time.sleep(0.2)
    address = json.loads(scheduler_file.read_text())["address"]
    log = (folder / "worker.log").open("w")
    procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address, "--name", "gpu-1",
                                   "--nthreads", "1", "--resources", "gpu=1", "--preload", "hosts.cluster",
                                   "--no-dashboard", "--local-directory", str(folder / "dask")],
                                  stdout=log, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[1]))
    return address, procs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("batch", type=Path)
    parser.add_argument("--limit", type=int, default=8, help="jobs to send (the batch's first N runs)")
    args = parser.parse_args()
    batch = json.loads((args.batch / "batch.json").read_text())
    limits = ProgramLimits(**batch["limits"])
    with tempfile.TemporaryDirectory() as tmp:
        address, procs = start(Path(tmp))
        try:
            cluster = Cluster(address)
            deadline = time.monotonic() + 120
            while (host := cluster.gpu_host()) is None:
                if time.monotonic() > deadline:
                    raise RuntimeError("the gpu worker did not register:\n" + (Path(tmp) / "worker.log").read_text())
                time.sleep(0.5)
            entries = batch["runs"][:args.limit]

            def job(entry: dict, fingerprint: str):
                binary = (args.batch / "binaries" / entry["binary"]).read_bytes()
                return program_job(binary, limits, vendor="gpu", fingerprint=fingerprint,
                                   action=f"{entry['binary'][:16]}-{entry['run']}")

            started = time.monotonic()
            results = dict(cluster.executor(host_wait_s=60).run([job(e, host.fingerprint()) for e in entries]))
            wall = time.monotonic() - started
            rows = []
            for i, entry in enumerate(entries):
                result = results[i]
                batch_stdout = args.batch / "results" / f"{entry['binary']}-{entry['run']}.stdout"
                facts = json.loads(result.outputs["run.json"])
                rows.append({"binary": entry["binary"][:16], "run": entry["run"], "host": result.host,
                             "verdict": facts["verdict"], "exit_code": result.exit_code,
                             "stdout_equals_batch_runner": result.outputs["stdout"] == batch_stdout.read_bytes()
                             if batch_stdout.exists() else None})
            try:
                list(cluster.executor(host_wait_s=60).run([job(entries[0], "0" * 64)]))
                refused = False
            except ToolchainMismatchError:
                refused = True
            print(json.dumps({"host": asdict(host), "jobs": len(entries), "wall_s": round(wall, 2), "runs": rows,
                              "other_fingerprint_refused": refused}, indent=1))
            cluster.close()
        finally:
            for proc in reversed(procs):
                proc.terminate()
                proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
