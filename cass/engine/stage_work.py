"""Where a stage's own work runs: its rows in chunks of :data:`CHUNK_ROWS` (or any independent items, such as a
tree to ingest or a shard to write), each done by a worker, the results handed back in order.

Tool runs are spread by the executors; this is the driver's own work (reading texts, parsing, normalising, making
table rows and shards), which otherwise runs in the one stage process and, past a few thousand files, takes longer
than the tools do on many hosts (bench/scale.py). Two places run it, behind :class:`StageWork`:

* :class:`LocalWork`: ``executor.workers`` processes of this machine, started fresh (``spawn``: the stage process
  holds Polars' thread pool, which a fork would copy mid-use); with one worker, or one item, the stage process.
* :class:`ClusterWork`: the Dask workers of ``executor.scheduler`` that advertise the ``stage`` resource (stage
  hosts, one thread per worker process). A stage host opens the store and writes the stage's files at the driver's
  paths, so it must mount the store and the project where the driver does; one that cannot see them fails the item
  saying so.

``work`` is a module-level function whose arguments pickle (paths as absolute strings). At most two items per
worker are in flight: memory is the stage process's plus, per worker, one item's, whatever the corpus size. Each
item's wall and CPU seconds and the worker that did it are tallied (:class:`WorkTally`): ``metrics/run/
stage_work/<stage>.json`` says how much of a stage's time was spreadable work, and where it ran.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import polars as pl

from cass.pipeline.manifests import CHUNK_ROWS, write_parquet
from cass.pipeline.metrics import RUN_DIR, write_json

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class Done:
    """One item's result, with the wall and CPU seconds its work took and the worker that did it."""

    result: Any
    wall_s: float
    cpu_s: float
    worker: str


def run_item(work: Callable[..., Result], item: Item, args: tuple, project: str | None = None) -> Done:
    """``work(item, *args)``, timed. ``project``: the driver's project folder, which a stage host works in."""
    worker = "local"
    if project is not None:
        from distributed import get_worker

        worker = str(get_worker().name)
        if not Path(project).is_dir():
            raise FileNotFoundError(f"stage host {worker} ({socket.gethostname()}) cannot see the project folder "
                                    f"{project}: stage hosts need the project and the store mounted where the "
                                    "driver has them")
        os.chdir(project)
    wall, cpu = time.perf_counter(), time.process_time()
    result = work(item, *args)
    return Done(result, time.perf_counter() - wall, time.process_time() - cpu, worker)


@dataclass
class WorkTally:
    """A stage's spreadable work so far: items, their summed wall and CPU seconds, items per worker."""

    items: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    by_worker: Counter = field(default_factory=Counter)

    def add(self, done: Done) -> None:
        self.items += 1
        self.wall_s += done.wall_s
        self.cpu_s += done.cpu_s
        self.by_worker[done.worker] += 1

    def as_dict(self) -> dict:
        return {"items": self.items, "wall_s": round(self.wall_s, 3), "cpu_s": round(self.cpu_s, 3),
                "by_worker": dict(sorted(self.by_worker.items()))}


class Pending(Protocol):
    def result(self) -> Done: ...
    def cancel(self) -> bool: ...


class Ran:
    """An item worked on in this process, when its result is asked for (so its errors surface as a worker's do)."""

    def __init__(self, *call: Any):
        self.call = call

    def result(self) -> Done:
        return self.call[0](*self.call[1:])

    def cancel(self) -> bool:
        return True


@dataclass(frozen=True)
class Pool:
    """Workers: how many items they take at once, and how an item is sent (``submit(item, work, args)``)."""

    slots: int
    submit: Callable[[Any, Callable, tuple], Pending]


class StageWork(ABC):
    """Runs a stage's items somewhere; ``report`` (if set) receives the tally after every map."""

    where: str

    def __init__(self, report: Path | None = None):
        self.report = report
        self.tally = WorkTally()

    @abstractmethod
    def pool(self, items: int | None) -> AbstractContextManager[Pool | None]:
        """Workers for a map of ``items`` items (None: not known); None: run them in this process."""

    def map(self, work: Callable[..., Result], items: Iterable[Item], *args: object,
            count: int | None = None) -> Iterator[Result]:
        """``work(item, *args)`` for every item, in the items' order (``count``: how many, if known)."""
        try:
            with self.pool(count) as pool:
                pending: deque[tuple[int, Pending]] = deque()
                for number, item in enumerate(items):
                    pending.append((number, Ran(run_item, work, item, args) if pool is None
                                    else pool.submit(item, work, args)))
                    if len(pending) >= 2 * (pool.slots if pool else 1):
                        yield self._take(pending, work)
                while pending:
                    yield self._take(pending, work)
        finally:
            if self.report is not None:
                write_json(self.report, {"where": self.where, **self.tally.as_dict()})

    def _take(self, pending: deque[tuple[int, Pending]], work: Callable) -> Any:
        number, future = pending.popleft()
        try:
            done = future.result()
        except Exception as exc:
            for _, other in pending:   # the items not started yet are not worked on
                other.cancel()
            raise RuntimeError(f"{work.__name__} failed on item {number} of its map ({self.where}): {exc}") from exc
        self.tally.add(done)
        return done.result

    def chunks(self, work: Callable[..., Result], rows: pl.DataFrame, *args: object,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[Result]:
        """``work(chunk, *args)`` for every chunk of ``rows``, in chunk order."""
        return self.map(work, rows.iter_slices(chunk_rows), *args, count=-(-rows.height // chunk_rows))

    def write_shards(self, make: Callable[..., pl.DataFrame], parts: Iterable[Item], count: int, folder: Path,
                     *args: object) -> int:
        """``count`` shards ``folder/train-XXXXX-of-XXXXX.parquet``, the n-th ``make(n-th part, *args)``, each
        made and written by a worker (``count`` at least one: an empty table still has its schema on disk)."""
        paths = (str(folder / f"train-{n:05d}-of-{count:05d}.parquet") for n in range(count))
        for _ in self.map(write_shard, zip(parts, paths, strict=False), make, args, count=count):
            pass
        return count


def shard_parts(rows: pl.DataFrame, per_shard: int) -> tuple[Iterator[pl.DataFrame], int]:
    """``rows`` in slices of ``per_shard`` (at least one, maybe empty), and how many."""
    count = max(1, -(-rows.height // per_shard))
    return (rows.slice(n * per_shard, per_shard) for n in range(count)), count


def write_shard(part_path: tuple[Any, str], make: Callable[..., pl.DataFrame], args: tuple) -> None:
    """One shard made and written (on a worker)."""
    part, path = part_path
    write_parquet(make(part, *args), Path(path), sort_by=None)


class LocalWork(StageWork):
    """``workers`` spawned processes of this machine (one: this process)."""

    def __init__(self, workers: int, report: Path | None = None):
        super().__init__(report)
        self.workers = workers
        self.where = f"local, {workers} process{'es' if workers > 1 else ''}"
        self.executor: ProcessPoolExecutor | None = None
        """Started at the first map that needs it and kept for the next (a stage may map several times)."""

    @contextmanager
    def pool(self, items: int | None) -> Iterator[Pool | None]:
        if self.workers <= 1 or (items is not None and items <= 1):
            yield None
            return
        if self.executor is None:
            self.executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
        executor = self.executor
        try:
            yield Pool(self.workers, lambda item, work, args: executor.submit(run_item, work, item, args))
        except BaseException:
            executor.shutdown(cancel_futures=True)   # a failed map leaves no worker behind; the next starts afresh
            self.executor = None
            raise


class ClusterWork(StageWork):
    """The ``stage`` workers of a Dask scheduler (``client``: a connected :class:`distributed.Client`)."""

    def __init__(self, client: Any, slots: int, report: Path | None = None):
        super().__init__(report)
        self.client = client
        self.slots = slots
        self.where = f"stage hosts of {client.scheduler.address}, {slots} slots"

    def pool(self, items: int | None) -> AbstractContextManager[Pool | None]:
        from toolchains.cluster import STAGE_RESOURCE

        project = str(Path.cwd().resolve())
        return nullcontext(Pool(self.slots, lambda item, work, args: self.client.submit(
            run_item, work, item, args, project, resources={STAGE_RESOURCE: 1}, pure=False)))


def stage_work(stage: str, executor: dict, workers: int) -> StageWork:
    """Where ``stage``'s own work runs: the stage hosts of the configured scheduler if it has any, else ``workers``
    local processes."""
    from toolchains.cluster import STAGE_RESOURCE, scheduler_address

    report = RUN_DIR / "stage_work" / f"{stage}.json"
    if (address := scheduler_address(executor)) is not None:
        from toolchains.cluster import Cluster

        cluster = Cluster(address)
        slots = int(sum(r.get(STAGE_RESOURCE, 0) for r in cluster.resources().values()))
        if slots:
            return ClusterWork(cluster.client, slots, report)
        cluster.close()
    return LocalWork(workers, report)
