"""Where a stage's own work runs: its rows in chunks of :data:`CHUNK_ROWS` (or any independent items, such as a
tree to ingest or a shard to write), each done by a worker, the results handed back in order.

Tool runs are spread by the executors; this is the driver's own work (reading texts, parsing, normalising, making
table rows and shards), which otherwise runs in the one stage process and, past a few thousand files, takes longer
than the tools do on many hosts (bench/scale.py). Two places run it, behind :class:`StageWork`:

* :class:`LocalWork`: ``executor.workers`` processes of this machine, started fresh (``spawn``: the stage process
  holds Polars' thread pool, which a fork would copy mid-use) once the items done in the stage process have taken
  longer than starting them costs (:data:`IN_PROCESS_S`); with one worker, or one item, the stage process.
* :class:`ClusterWork`: the Dask workers of ``executor.scheduler`` that advertise the ``stage`` resource (stage
  hosts, one thread per worker process). A stage host opens the store and writes the stage's files at the driver's
  paths, so it must mount the store and the project where the driver does; one that cannot see them fails the item
  saying so.

A tool stage settles its rows in two passes around the driver's tool runs (:meth:`StageWork.settle`, run by
:mod:`cass.engine.settle`): the workers plan and look up a chunk's actions and make the rows the store has everything
for; the driver runs only the actions the store lacks; then the workers make the rows that waited for them.

``work`` is a module-level function whose arguments pickle (paths as strings: a stage host works in the driver's
project folder, so relative ones hold there too; it refuses items if its code is not the driver's). At most two items
per worker are in flight: memory is the stage process's plus, per worker, one item's, whatever the corpus size. Each
item's wall and CPU seconds and the worker that did it are tallied (:class:`WorkTally`):
``metrics/run/stage_work/<stage>.json`` says how much of a stage's time was spreadable work, and where it ran.
"""

from __future__ import annotations

import multiprocessing
import os
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any, Protocol, TypeVar

import polars as pl

from cass.files import write_json, write_parquet
from store import digest_bytes, tracking

Item = TypeVar("Item")
Result = TypeVar("Result")

CHUNK_ROWS = 2000
"""Rows a stage that reads texts holds at once (per-row work in chunks: memory stays flat as the corpus grows)."""


@dataclass(frozen=True)
class Done:
    """One item's result, with the wall and CPU seconds its work took and the worker that did it."""

    result: Any
    wall_s: float
    cpu_s: float
    worker: str
    keys: frozenset[str] = frozenset()
    """The action keys the work found records for or recorded, in any store (:func:`store.tracking`)."""


@cache
def code_digest() -> str:
    """BLAKE3 of the library's code as this process imported it (``cass``, ``store``, ``toolchains``, ``hosts``): a
    stage host that started before the driver's code changed runs other code, which this tells apart."""
    import cass
    import hosts
    import store
    import toolchains

    roots = [Path(package.__file__).parent for package in (cass, store, toolchains, hosts)]
    return digest_bytes(b"".join(f"{path.relative_to(root.parent)}\0".encode() + digest_bytes(path.read_bytes())
                                 .encode() for root in roots for path in sorted(root.rglob("*.py"))))


def run_item(work: Callable[..., Result], item: Item, args: tuple, host: tuple[str, str] | None = None) -> Done:
    """``work(item, *args)``, timed. ``host``: on a stage host, the driver's project folder (the host works in it,
    one item at a time: one thread per worker process) and the driver's :func:`code_digest`, which the host's must
    equal."""
    worker = "local"
    if host is not None:
        from distributed import get_worker

        project, code = host
        worker = str(get_worker().name)
        where = f"stage host {worker} ({socket.gethostname()})"
        if code_digest() != code:
            raise RuntimeError(f"{where} runs other code than the driver (it started before the code changed?): "
                               "restart it")
        if not Path(project).is_dir():
            raise FileNotFoundError(f"{where} cannot see the project folder {project}: stage hosts need the project "
                                    "and the store mounted where the driver has them")
        os.chdir(project)
    wall, cpu = time.perf_counter(), time.process_time()
    with tracking() as keys:
        result = work(item, *args)
    return Done(result, time.perf_counter() - wall, time.process_time() - cpu, worker, frozenset(keys))


@dataclass
class WorkTally:
    """A stage's spreadable work so far: items, their summed wall and CPU seconds, items per worker."""

    items: int = 0
    wall_s: float = 0.0
    cpu_s: float = 0.0
    by_worker: Counter = field(default_factory=Counter)

    def add(self, done: Done) -> None:
        """Count one finished item."""
        self.items += 1
        self.wall_s += done.wall_s
        self.cpu_s += done.cpu_s
        self.by_worker[done.worker] += 1

    def as_dict(self) -> dict:
        """The tally as the run report writes it."""
        return {"items": self.items, "wall_s": round(self.wall_s, 3), "cpu_s": round(self.cpu_s, 3),
                "by_worker": dict(sorted(self.by_worker.items()))}


class Settling(Protocol):
    """A chunk's result in :meth:`StageWork.settle`: the rows it could not settle yet, by sample id (with what the
    second pass gets for each)."""

    unsettled: dict[str, Any]


class Pending(Protocol):
    """An item sent to a worker: its outcome (raising the worker's error), and a way to take it back unstarted."""

    def result(self) -> Done: ...
    def cancel(self) -> bool: ...


STAGE_PROCESS = "stage process"
"""The worker name of the items done in the stage process itself (in the run report's tally)."""


@dataclass(frozen=True)
class InProcess:
    """An item to work on in this process when its result is asked for (its errors then surface as a worker's do)."""

    work: Callable
    item: Any
    args: tuple

    def result(self) -> Done:
        return run_here(self.work, self.item, self.args)

    def cancel(self) -> bool:
        return True


def run_here(work: Callable[..., Result], item: Item, args: tuple) -> Done:
    """:func:`run_item` in the stage process, tallied as its work."""
    return replace(run_item(work, item, args), worker=STAGE_PROCESS)


@dataclass(frozen=True)
class Pool:
    """Workers: how many items they take at once, and how an item is sent (``submit(work, item, args)``)."""

    slots: int
    submit: Callable[[Any, Callable, tuple], Pending]


class StageWork(ABC):
    """Runs a stage's items somewhere; ``report`` (if set) receives the tally after every map."""

    where: str

    def __init__(self, report: Path | None = None):
        self.report = report
        self.tally = WorkTally()
        self.keys: set[str] = set()
        """The action keys its items found records for or recorded, wherever they ran."""

    @abstractmethod
    def pool(self, items: int | None) -> AbstractContextManager[Pool | None]:
        """Workers for a map of ``items`` items (None: not known); None: run them in this process."""

    def map(self, work: Callable[..., Result], items: Iterable[Item], *args: object, count: int | None = None,
            label: Callable[[Item], str] | None = None, name: str | None = None) -> Iterator[Result]:
        """``work(item, *args)`` for every item, in the items' order (``count``: how many, if known; ``label``: what
        an error calls an item, by default its number; ``name``: what it calls the work, by default its function's
        name)."""
        try:
            with self.pool(count) as pool:
                pending: deque[tuple[str, Pending]] = deque()
                for number, item in enumerate(items):
                    pending.append((label(item) if label else f"item {number} of its map",
                                    InProcess(work, item, args) if pool is None else pool.submit(work, item, args)))
                    if len(pending) >= 2 * (pool.slots if pool else 1):
                        yield self._take(pending, name or work.__name__)
                while pending:
                    yield self._take(pending, name or work.__name__)
        finally:
            if self.report is not None:
                write_json(self.report, {"where": self.where, **self.tally.as_dict()})

    def _take(self, pending: deque[tuple[str, Pending]], work: str) -> Any:
        name, future = pending.popleft()
        try:
            done = future.result()
        except Exception as exc:
            for _, other in pending:   # the items not started yet are not worked on
                other.cancel()
            raise RuntimeError(f"{work} failed on {name} ({self.where}): {exc}") from exc
        self.tally.add(done)
        self.keys |= done.keys
        return done.result

    def chunks(self, work: Callable[..., Result], rows: pl.DataFrame, *args: object,
               chunk_rows: int = CHUNK_ROWS) -> Iterator[Result]:
        """``work(chunk, *args)`` for every chunk of ``rows``, in chunk order."""
        return self.map(work, rows.iter_slices(chunk_rows), *args, count=-(-rows.height // chunk_rows))

    def settle(self, work: Callable[..., Settling], rows: pl.DataFrame,
               run_misses: Callable[[list], dict[str, str]], *args: object, name: str | None = None) -> list:
        """Rows in two passes over the workers (a tool stage's: :mod:`cass.engine.settle` gives the ``work``). First
        ``work((chunk, None), *args, {})`` per chunk settles every row it can and returns the others in
        ``unsettled`` (by sample id, what the pass made for the row: all the second pass is handed); then
        ``run_misses(results)`` runs what they wait for here and returns the keys that failed transiently (with why);
        then ``work((their rows, their unsettled), *args, transients)`` settles them. The first pass's results in
        chunk order, then the second's. ``name``: what errors call the work, by default its function's name."""
        name = name or work.__name__
        slices = list(rows.iter_slices(CHUNK_ROWS))
        first = list(self.map(work, ((part, None) for part in slices), *args, {}, count=len(slices), name=name))
        transients = run_misses(first)
        waiting = [(part.filter(pl.col("sample_id").is_in(list(done.unsettled))), done.unsettled)
                   for part, done in zip(slices, first, strict=True) if done.unsettled]
        second = list(self.map(work, waiting, *args, transients, count=len(waiting), name=name))
        if lost := [sample for done in second for sample in done.unsettled]:
            raise RuntimeError(f"{name}: {lost[0]} still needs an action after the executor ran every miss (a bug)")
        return first + second

    def write_shards(self, make: Callable[..., pl.DataFrame], parts: Iterable[Item], count: int, folder: Path,
                     *args: object) -> int:
        """``count`` shards ``folder/train-XXXXX-of-XXXXX.parquet``, the n-th ``make(n-th part, *args)``, each
        made and written by a worker (``count`` at least one: an empty table still has its schema on disk)."""
        paths = (str(folder / f"train-{n:05d}-of-{count:05d}.parquet") for n in range(count))
        for _ in self.map(write_shard, zip(parts, paths, strict=True), make, args, count=count,
                          label=lambda part_path: f"shard {part_path[1]}"):
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


IN_PROCESS_S = 0.5
"""Seconds of a stage's items a :class:`LocalWork` does in the stage process before it starts its workers, where no
params say (a stage's come from params.yaml's ``executor.in_process_s``): about what starting them costs on 2 cores.
For a change of one source, ``hub`` took 1.26 s in one process against 1.60 to 1.71 s with two spawned workers,
``ingest`` 0.49 s against 0.73 s. A stage with less work than this never pays the start; in one with more, the
workers start once the items done here, the one running included, reach it."""


class Deferred:
    """An item :class:`LocalWork` holds back: done in this process when its result is asked for, unless the stage's
    workers have started by then (:meth:`LocalWork.start_workers` hands them every held item)."""

    def __init__(self, local: LocalWork, work: Callable, item: Any, args: tuple):
        self.local, self.work, self.item, self.args = local, work, item, args
        self.future: Pending | None = None

    def result(self) -> Done:
        local = self.local
        with local.lock:
            here = self.future is None
            if here:
                local.held.remove(self)
        if not here:
            return self.future.result()
        # past the limit mid-item, the workers start and take the held items while this one goes on
        timer = threading.Timer(max(0.0, local.in_process_limit_s - local.in_process_spent_s), local.start_workers)
        start = time.perf_counter()
        timer.start()
        try:
            done = run_here(self.work, self.item, self.args)
        finally:
            timer.cancel()
            timer.join()
            local.in_process_spent_s += time.perf_counter() - start
        if local.in_process_spent_s >= local.in_process_limit_s:
            local.start_workers()
        return done

    def cancel(self) -> bool:
        with self.local.lock:
            if self in self.local.held:
                self.local.held.remove(self)
        return self.future.cancel() if self.future is not None else True


class LocalWork(StageWork):
    """``workers`` spawned processes of this machine (one: this process). Items are done in the stage process until
    they have taken ``in_process_limit_s`` seconds (:data:`IN_PROCESS_S`), counting an item still running; the
    workers take the rest."""

    def __init__(self, workers: int, report: Path | None = None, in_process_limit_s: float = IN_PROCESS_S):
        super().__init__(report)
        self.workers = workers
        self.where = f"local, {workers} process{'es' if workers > 1 else ''}"
        self.executor: ProcessPoolExecutor | None = None
        """Started once the items done here have taken ``in_process_limit_s``, and kept for the next map (a stage
        may map several times)."""
        self.in_process_limit_s = in_process_limit_s
        self.in_process_spent_s = 0.0
        self.held: list[Deferred] = []
        """Items submitted before the workers started and not begun yet, in the order they were submitted."""
        self.lock = threading.Lock()
        """Guards ``executor`` and ``held``: the workers may be started by a timer while an item runs here."""

    def submit(self, work: Callable, item: Any, args: tuple) -> Pending:
        """An item, to the workers once they have started, else held (:class:`Deferred`)."""
        with self.lock:
            if self.executor is None and self.in_process_spent_s < self.in_process_limit_s:
                deferred = Deferred(self, work, item, args)
                self.held.append(deferred)
                return deferred
        self.start_workers()
        return self.executor.submit(run_item, work, item, args)

    def start_workers(self) -> None:
        """Start the workers, if they have not started, and hand them every held item (each leaves ``held`` once
        the workers have it)."""
        with self.lock:
            if self.executor is None:
                self.executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
            while self.held:
                first = self.held[0]
                first.future = self.executor.submit(run_item, first.work, first.item, first.args)
                self.held.pop(0)

    @contextmanager
    def pool(self, items: int | None) -> Iterator[Pool | None]:
        if self.workers <= 1 or (items is not None and items <= 1):
            yield None
            return
        try:
            yield Pool(self.workers, self.submit)
        except BaseException:
            with self.lock:
                self.held = []
                executor, self.executor = self.executor, None
            if executor is not None:   # a failed map leaves no worker behind; the next starts afresh
                executor.shutdown(cancel_futures=True)
            raise


class ClusterWork(StageWork):
    """The ``stage`` workers of a Dask scheduler (``client``: a connected :class:`distributed.Client`)."""

    def __init__(self, client: Any, slots: int, report: Path | None = None):
        super().__init__(report)
        self.client = client
        self.slots = slots
        self.where = f"stage hosts of {client.scheduler.address}, {slots} slots"

    def pool(self, items: int | None) -> AbstractContextManager[Pool | None]:
        from hosts.cluster import STAGE_RESOURCE

        host = (str(Path.cwd().resolve()), code_digest())
        return nullcontext(Pool(self.slots, lambda work, item, args: self.client.submit(
            run_item, work, item, args, host, resources={STAGE_RESOURCE: 1}, pure=False)))
