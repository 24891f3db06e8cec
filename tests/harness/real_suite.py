"""The small mirror of real programs the tests build a suite from (laid out as HeCBench is), and the outputs its CUDA
originals print, as a GPU host would record them."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cass.benchmark.real_programs import REFERENCE_SCHEMA

MIRROR = Path(__file__).parents[1] / "fixtures" / "real_mirror"
UPSTREAM = {"repository": "example/programs", "commit": "0" * 40, "license": "BSD-3-Clause"}
VISIBLE_OUTPUT = b"n 4096 sum 25159680\nPASS\n"   # 3 * (0 + 1 + ... + 4095)
HIDDEN_OUTPUT = b"n 2048 sum 6288384\nPASS\n"


def recorded() -> pl.DataFrame:
    """The fixture programs' outputs as their CUDA originals print them (three runs per argument set): vecsum launches
    one kernel per repeat (its second argument), twounits one."""
    sets = [("hecbench_vecsum", "visible", ["4096", "10"], VISIBLE_OUTPUT, 10),
            ("hecbench_vecsum", "hidden", ["2048", "5"], HIDDEN_OUTPUT, 5),
            ("hecbench_twounits", "visible", ["1000"], b"sum 2997\n", 1),
            ("hecbench_twounits", "hidden", ["500"], b"sum 1494\n", 1)]
    rows = [{"task_id": task, "arg_set": arg_set, "args": args, "run": n, "verdict": "exited", "exit_code": 0,
             "stdout": out, "wall_s": 0.5, "max_rss_kib": 1000, "kernel_launches": kernels}
            for task, arg_set, args, out, kernels in sets for n in (1, 2, 3)]
    return pl.DataFrame(rows, schema=REFERENCE_SCHEMA)
