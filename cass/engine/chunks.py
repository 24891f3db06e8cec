"""A stage's own work spread over processes: its rows in chunks of :data:`CHUNK_ROWS` (or any independent items,
such as the Hub's configs), each done by one of ``workers`` processes, the results handed back in order.

Tool runs are spread by the executors; this is the driver's own work (reading texts, parsing, normalising, making
table rows), which otherwise runs in the one stage process and, past a few thousand files, takes longer than the
tools do on many hosts (bench/scale.py). Workers are started fresh (``spawn``: the stage process holds Polars'
thread pool, which a fork would copy mid-use), so ``work`` is a module-level function and its arguments pickle;
a worker opens the store at its root. At most two chunks per worker are in flight: memory is the stage process's
plus, per worker, one chunk's, whatever the corpus size. With one worker, or one chunk, the work runs in the stage
process.
"""

from __future__ import annotations

import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

import polars as pl

from cass.pipeline.manifests import CHUNK_ROWS

Item = TypeVar("Item")
Result = TypeVar("Result")


def map_parallel(work: Callable[..., Result], items: Iterable[Item], workers: int, *args: object
                 ) -> Iterator[Result]:
    """``work(item, *args)`` for every item, on ``workers`` processes, in the items' order (with one worker, in this
    process)."""
    if workers <= 1:
        for item in items:
            yield work(item, *args)
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque[tuple[int, Future]] = deque()

        def result() -> Result:
            number, future = pending.popleft()
            try:
                return future.result()
            except Exception as exc:
                pool.shutdown(cancel_futures=True)   # the items not started yet are not worked on
                raise RuntimeError(f"{work.__name__} failed on item {number} of its map: {exc}") from exc
        for number, item in enumerate(items):
            pending.append((number, pool.submit(work, item, *args)))
            if len(pending) >= 2 * workers:
                yield result()
        while pending:
            yield result()


def map_chunks(work: Callable[..., Result], rows: pl.DataFrame, workers: int, *args: object,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[Result]:
    """``work(chunk, *args)`` for every chunk of ``rows``, on ``workers`` processes (one chunk: in this process), in
    chunk order."""
    return map_parallel(work, rows.iter_slices(chunk_rows), workers if rows.height > chunk_rows else 1, *args)
