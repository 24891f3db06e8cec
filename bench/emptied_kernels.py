"""Predictions whose kernels do nothing: each chosen task's reference HIP with ``return;`` as the first statement
of every ``__global__`` function. A benchmark whose outputs did not depend on every element would pass them.

    python bench/emptied_kernels.py OUT.jsonl [TASK_ID ...]
    cass eval --predictions OUT.jsonl          # every one must come out wrong_output where it runs
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cass.benchmark.tasks import load_tasks

DEFAULT = ("finance_black_scholes_greeks", "math_collatz_trajectories", "sorting_search_rank_sort",
           "image_processing_bilateral_filter", "linear_algebra_rank1_update")


def main() -> int:
    out, chosen = Path(sys.argv[1]), sys.argv[2:] or DEFAULT
    tasks = load_tasks()
    with out.open("w") as f:
        for task_id in chosen:
            emptied, kernels = re.subn(r"(__global__[^{;]*\{)", r"\1 return;", tasks[task_id].reference_hip)
            if not kernels:
                raise SystemExit(f"{task_id}: no __global__ function found")
            f.write(json.dumps({"task_id": task_id, "task": "source", "prediction": emptied}) + "\n")
    print(f"{len(chosen)} predictions in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
