"""The Stack v2 projection with what the dry run leaves out: the HIP-NVIDIA checks of ``pair``, the ``execute``
stage's builds, the GPU runs and the store traffic.

bench/scale.py's dry run projects the build of 124,000 files on 1, 8 and 64 vendor hosts from a cold build of
generated programs, but its pipeline ran no program (no GPU host: ``execute`` builds nothing) and it did not measure
the network. This script adds those terms to its totals from measured costs given on the command line (each with
where it was measured: see bench/RESULTS.md), for a share of files that are programs (have a ``main``: only those
are built and run), and prints the table:

* ``pair``'s HIP-NVIDIA check (the HIP side compiled through HIP's NVIDIA back end), per paired file, and
  ``execute``'s builds (both programs of a pair, compiled and linked), per program: both counted on the driver
  machine's cores. The HIP side is built there (``cass.engine.placement``): it needs the CUDA wheels and the HIP
  headers at once, which no vendor host offers yet. The CUDA side's builds go to the NVIDIA hosts with every other
  NVIDIA action, so counting them on the driver is an upper bound;
* the GPU runs (``runs_per_pair`` runs, both sides), per run per GPU at the batch runner's measured
  concurrency;
* the store traffic through the driver: the tools' inputs and outputs, per file, at a stated bandwidth, and per
  host.

    python bench/projection.py --dry-run-hours 47.33 5.96 0.80 --check-cpu-s 4.1 --build-cpu-s 3.0 \\
        --gpu-run-s 0.91 --store-mb-per-file 0.3 --main-share 0.02 0.5 1.0
"""

from __future__ import annotations

import argparse

STACK_V2_FILES = 124_000
HOSTS = (1, 8, 64)


def projection(args: argparse.Namespace) -> list[str]:
    """The markdown table: per share of programs and host count, each term's hours and the total."""
    lines = ["| programs | vendor hosts | GPUs | dry run, h | HIP-NVIDIA checks (driver), h | "
             "execute builds (driver), h | GPU runs, h | store traffic per host, GB | its transfer, h | total, h |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    total_gb = STACK_V2_FILES * args.store_mb_per_file / 1000
    for share in args.main_share:
        programs = STACK_V2_FILES * share
        for hosts, dry in zip(HOSTS, args.dry_run_hours, strict=True):
            gpus = hosts * args.gpus_per_host
            checks = STACK_V2_FILES * args.paired_share * args.check_cpu_s / args.driver_cores / 3600
            builds = programs * args.build_cpu_s / args.driver_cores / 3600
            gpu = programs * args.runs_per_pair * args.gpu_run_s / gpus / 3600
            per_host_gb = total_gb / hosts
            transfer = total_gb * 8 / args.bandwidth_gbit / 3600   # all of it passes the driver's link
            total = dry + checks + builds + gpu + transfer
            lines.append(f"| {share:.0%} | {hosts} | {gpus} | {dry:.2f} | {checks:.2f} | {builds:.2f} | {gpu:.2f} | "
                         f"{per_host_gb:.1f} | {transfer:.3f} | {total:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run-hours", type=float, nargs=3, required=True, metavar=("H1", "H8", "H64"),
                        help="bench/scale.py's totals on 1, 8 and 64 hosts")
    parser.add_argument("--check-cpu-s", type=float, required=True, help="CPU s of one HIP-NVIDIA check")
    parser.add_argument("--paired-share", type=float, default=1.0,
                        help="share of the files that become pairs and are checked (default 1: an upper bound)")
    parser.add_argument("--build-cpu-s", type=float, required=True,
                        help="CPU s of one pair's two execute builds (compile and link, both sides)")
    parser.add_argument("--gpu-run-s", type=float, required=True,
                        help="seconds per run per GPU at the batch runner's concurrency")
    parser.add_argument("--runs-per-pair", type=int, default=4, help="runs of a pair (2 per side by default)")
    parser.add_argument("--store-mb-per-file", type=float, required=True, help="store objects per file, MB")
    parser.add_argument("--bandwidth-gbit", type=float, default=10.0, help="the driver's link (default 10 Gbit/s)")
    parser.add_argument("--main-share", type=float, nargs="+", required=True,
                        help="shares of the files that are programs (have a main)")
    parser.add_argument("--driver-cores", type=int, default=2, help="the driver machine's cores")
    parser.add_argument("--gpus-per-host", type=int, default=1, help="GPUs per host that runs programs")
    args = parser.parse_args()
    print("\n".join(projection(args)))


if __name__ == "__main__":
    main()
