"""Stage ``filter``: the paper's source filters, each drop counted with its reason.

* ``too_short`` / ``too_long``: line count of the main file outside [min_lines, max_lines]
  (the paper: 10..7000);
* ``no_kernel``: no ``__global__`` function (OpenCL C: ``__kernel``/``kernel`` function) outside comments
  and strings, in the file or in the local headers it includes (real libraries define their kernels as
  templates in headers and instantiate them in ``.cu`` files; whether a file compiles to any kernel at
  all shows in its SASS);
* ``trivial``: hello-world boilerplate: a short file (under ``TRIVIAL_CODE_LINES`` lines of code)
  that prints a greeting, or one whose every kernel body is empty.

The files are read and checked a chunk at a time on the stage's workers.
"""

from __future__ import annotations

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import SAMPLE_COLUMNS
from cass.text.filters import defines_kernel, drop_reason
from store import Store
from toolchains.language import is_opencl


def run(stage: Stage) -> None:
    rows = stage.upstream("ingest")
    out = stage.output(rows.height)
    for dropped in stage.work.chunks(filter_chunk, rows, str(stage.store.root), dict(stage.params["filter"])):
        for row, reason, detail in dropped:
            out.drop(row, reason, detail)
    gone = {d["sample_id"] for d in out.dropped}
    print(out.write(rows.filter(~pl.col("sample_id").is_in(gone))))


def filter_chunk(rows: pl.DataFrame, store_root: str, params: dict) -> list[tuple[dict, str, str]]:
    """The ``rows`` a filter drops: (identity, reason, detail), read and checked on a worker."""
    store = Store(store_root)
    dropped = []
    header_kernels: dict[tuple[str, bool], bool] = {}   # headers are shared by many samples: look at each once
    for row in rows.iter_rows(named=True):
        source = store.get_text(row["files"][0]["digest"])
        main = row["files"][0]["path"]
        for f in row["files"][1:]:
            if (f["digest"], is_opencl(main)) not in header_kernels:
                header_kernels[f["digest"], is_opencl(main)] = defines_kernel(store.get_text(f["digest"]), main)
        reason = drop_reason(source, params,
                             any(header_kernels[f["digest"], is_opencl(main)] for f in row["files"][1:]), main)
        if reason:
            dropped.append(({c: row[c] for c in SAMPLE_COLUMNS}, *reason))
    return dropped
