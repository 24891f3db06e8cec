"""Benchmark: how fast the kernel counter digests what a program copies back from the GPU (``toolchains/
launch_counter.c``'s ``digest_bytes``), on this machine's CPU, for this checkout's counter (built as
``toolchains.launches.build_counter`` builds it) and an earlier commit's (built with ``-O2``, as it was).

The digest runs inside every counted program, on the host thread that made the copy, so its speed adds to a run's
wall time in proportion to the bytes copied back (HeCBench's ``mandelbrot`` copies back a 16 MiB image 1,000 times).

    python bench/digest_speed.py [--before REV] [--mib 256] [--repeats 5]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]

from toolchains.launches import COUNTER_FLAGS, SOURCE, counter_harness_command  # noqa: E402

HARNESS = r"""#include "launch_counter.c"
#include <time.h>
int main(int argc, char **argv) {
    size_t size = strtoull(argv[1], 0, 10) << 20;
    int repeats = atoi(argv[2]);
    unsigned char *data = malloc(size);
    double best = 1e30;
    Read read;
    (void)argc;
    for (size_t i = 0; i < size; i++) data[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int r = 0; r < repeats; r++) {
        struct timespec a, b;
        memset(&read, 0, sizeof read);
        clock_gettime(CLOCK_MONOTONIC, &a);
        digest_bytes(&read, data, size);
        clock_gettime(CLOCK_MONOTONIC, &b);
        double s = (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec);
        if (s < best) best = s;
    }
    printf("%.3f\n", (double)size / best / 1e9);
    return 0;
}
"""


def speed(source: Path, mib: int, repeats: int, folder: Path, flags: tuple[str, ...]) -> float:
    """GB/s of ``digest_bytes`` of ``source`` built with ``flags`` over ``mib`` MiB, the best of ``repeats``."""
    (folder / "launch_counter.c").write_bytes(source.read_bytes())
    (folder / "harness.c").write_text(HARNESS)
    subprocess.run(counter_harness_command(folder / "harness.c", folder / "harness", folder, flags), check=True)
    out = subprocess.run([str(folder / "harness"), str(mib), str(repeats)], capture_output=True, text=True, check=True)
    return float(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", default="c37fe14", help="the earlier commit whose counter to time beside")
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if shutil.which("cc") is None:
        raise SystemExit("no C compiler")
    with tempfile.TemporaryDirectory() as scratch:
        old = Path(scratch) / "before"
        old.mkdir()
        before = old / "source.c"
        before.write_bytes(subprocess.run(["git", "show", f"{args.before}:toolchains/launch_counter.c"], cwd=REPO,
                                          capture_output=True, check=True).stdout)
        now = Path(scratch) / "now"
        now.mkdir()
        rows = [(f"{args.before} (-O2)", speed(before, args.mib, args.repeats, old, ("-O2",))),
                (f"this checkout ({' '.join(COUNTER_FLAGS)})",
                 speed(SOURCE, args.mib, args.repeats, now, COUNTER_FLAGS))]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    print(f"digest_bytes over {args.mib} MiB, best of {args.repeats}, at {commit}:")
    for name, gbps in rows:
        print(f"  {name}: {gbps:.2f} GB/s ({gbps / rows[0][1]:.1f}x)")


if __name__ == "__main__":
    main()
