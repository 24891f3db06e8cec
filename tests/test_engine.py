"""The engine's cached map, the loop every per-item cache runs: compute only what the store lacks, record each
result as it comes, count hits and misses; and a stage's own per-row work spread over processes."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from cass.engine.cached import CachedMap
from cass.engine.stage_work import LocalWork
from store import ActionSpec, tracking


def test_only_the_misses_are_computed_and_each_is_recorded_as_it_comes(store):
    computed = []

    def double(items: list[int]):
        for n in items:
            computed.append(n)
            yield n, {"value": str(2 * n).encode()}

    actions = {n: ActionSpec("cass", "double", None, env={"n": n}) for n in range(4)}
    first = CachedMap(store)
    first.map({n: actions[n] for n in (0, 1)}, double)
    assert computed == [0, 1] and first.counts() == {"hits": 0, "misses": 2}

    again = CachedMap(store)
    with tracking() as used:
        records = again.map(actions, double)
    assert computed == [0, 1, 2, 3]   # 0 and 1 came from the store
    assert again.counts() == {"hits": 2, "misses": 2} and used == {a.key for a in actions.values()}
    assert {n: store.get_text(r.outputs["value"]) for n, r in records.items()} == {0: "0", 1: "2", 2: "4", 3: "6"}


def test_an_interrupted_computation_keeps_what_it_finished(store):
    def fails_at_two(items: list[int]):
        for n in items:
            if n == 2:
                raise KeyboardInterrupt
            yield n, {"value": b"x"}

    actions = {n: ActionSpec("cass", "interrupted", None, env={"n": n}) for n in range(4)}
    with pytest.raises(KeyboardInterrupt):
        CachedMap(store).map(actions, fails_at_two)
    rerun = CachedMap(store)
    rerun.map(actions, lambda items: [(n, {"value": b"y"}) for n in items])
    assert rerun.counts() == {"hits": 2, "misses": 2}   # 0 and 1 were recorded before the interruption


def test_an_item_the_computation_skips_is_an_error_not_a_silent_gap(store):
    actions = {n: ActionSpec("cass", "skips", None, env={"n": n}) for n in range(3)}
    with pytest.raises(ValueError, match="1 of 3 items got no result"):
        CachedMap(store).map(actions, lambda items: [(n, {"value": b"v"}) for n in items if n != 1])


def test_a_result_without_an_error_stream_records_none(store):
    cache = CachedMap(store)
    with_stream = cache.record(ActionSpec("cass", "stream", None), {"value": b"v"}, stderr=b"warning\n")
    without = cache.record(ActionSpec("cass", "none", None), {"value": b"v"}, stderr=None)
    assert store.get_text(with_stream.stderr) == "warning\n" and without.stderr == ""


def chunk_facts(rows: pl.DataFrame, offset: int) -> tuple[list[int], int]:
    """A chunk's values plus ``offset``, and the process that computed them."""
    return [v + offset for v in rows["v"]], os.getpid()


def test_chunks_of_rows_are_worked_on_other_processes_and_come_back_in_order(tmp_path):
    rows = pl.DataFrame({"v": list(range(10))})
    work = LocalWork(2, tmp_path / "tally.json", in_process_limit_s=0)   # the workers from the first item
    parallel = list(work.chunks(chunk_facts, rows, 100, chunk_rows=3))
    assert [v for values, _ in parallel for v in values] == list(range(100, 110))   # every row, in order
    assert len(parallel) == 4 and os.getpid() not in {pid for _, pid in parallel}
    tally = json.loads((tmp_path / "tally.json").read_text())   # how much work there was, and where it ran
    assert tally["items"] == 4 and tally["by_worker"] == {"local": 4} and tally["where"] == "local, 2 processes"
    inline = list(LocalWork(1).chunks(chunk_facts, rows, 100, chunk_rows=3))   # one worker: this process
    assert [values for values, _ in inline] == [values for values, _ in parallel]
    assert {pid for _, pid in inline} == {os.getpid()}
    assert list(work.chunks(chunk_facts, rows.head(0), 0)) == []


def slow_item(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def test_items_are_done_in_the_stage_process_until_they_have_taken_longer_than_starting_workers_costs():
    quick = LocalWork(2)
    assert [pid for _, pid in quick.chunks(chunk_facts, pl.DataFrame({"v": list(range(10))}), 0, chunk_rows=3)] \
        == [os.getpid()] * 4
    assert quick.executor is None   # four quick chunks: no worker was started
    slow = LocalWork(2, in_process_limit_s=0.75)
    pids = list(slow.map(slow_item, [0.5] * 4, count=4))   # all four held at once (two per worker)
    # 0.5 s, then 1.0 s done here: past 0.75 s the workers start and take every item not done yet, in parallel
    assert pids[:2] == [os.getpid()] * 2 and os.getpid() not in pids[2:]
    assert os.getpid() not in slow.map(slow_item, [0] * 3, count=3)   # later maps: the workers


def waits_for_the_others(item: tuple[int, str]) -> bool:
    """Item 0 waits (up to 10 s) until every other item has started, saying whether they did; the others mark their
    start."""
    number, folder = item
    if number:
        Path(folder, str(number)).touch()
        return True
    deadline = time.monotonic() + 10
    while len(list(Path(folder).iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(list(Path(folder).iterdir())) == 2


def test_an_item_that_runs_past_the_limit_in_the_stage_process_lets_the_workers_take_the_others(tmp_path):
    # the first item runs here and goes on past 0.3 s: the workers start meanwhile and do the other two (it would
    # wait 10 s for them, and fail, if they waited for it)
    work = LocalWork(2, in_process_limit_s=0.3)
    assert list(work.map(waits_for_the_others, [(n, str(tmp_path)) for n in range(3)], count=3)) == [True] * 3


def failing_chunk(rows: pl.DataFrame) -> int:
    if 7 in rows["v"]:
        raise ValueError("no sevens")
    return rows.height


@pytest.mark.parametrize(("workers", "where"), [(2, "local, 2 processes"), (1, "local, 1 process")])
def test_a_failing_chunk_names_its_item_and_the_error(workers, where):
    with pytest.raises(RuntimeError, match=rf"failing_chunk failed on item 2 of its map \({where}\): no sevens"):
        list(LocalWork(workers, in_process_limit_s=0).chunks(failing_chunk, pl.DataFrame({"v": list(range(10))}),
                                                             chunk_rows=3))


@dataclass
class Settled:
    done: dict[str, str]
    unsettled: dict[str, int]


def settle_from_file(part: tuple[pl.DataFrame, dict | None], known: str, transients: dict[str, str]) -> Settled:
    """Rows whose id the file ``known`` lists (or that failed transiently) settled; the others handed back with
    what this pass made for them (their id's length, which the second pass must receive)."""
    rows, made = part
    listed = set(Path(known).read_text().split())
    settled, unsettled = {}, {}
    for sample in rows["sample_id"]:
        if sample in listed or sample in transients:
            assert made is None or made[sample] == len(sample)
            settled[sample] = transients.get(sample, "ok")
        else:
            unsettled[sample] = len(sample)
    return Settled(settled, unsettled)


def test_a_tool_stage_settles_its_rows_in_two_passes_around_the_driver_s_runs(tmp_path):
    known = tmp_path / "known"
    known.write_text("s0 s1 s2500\n")
    rows = pl.DataFrame({"sample_id": [f"s{n}" for n in range(4500)]})
    sent = []

    def run_misses(results: list[Settled]) -> dict[str, str]:
        missing = [s for r in results for s in r.unsettled]
        sent.append(len(missing))
        known.write_text(" ".join(missing[1:]))   # the first miss fails transiently
        return {missing[0]: "killed by signal 9"}

    results = LocalWork(2).settle(settle_from_file, rows, run_misses, str(known))
    assert sent == [4497] and len(results) == 6   # three chunks of 2,000 rows, each waited
    done = {s: v for r in results for s, v in r.done.items()}
    assert sum(len(r.done) for r in results) == len(done) == 4500   # each row settled once
    assert done["s2"] == "killed by signal 9" and done["s3"] == "ok"
    known.write_text("")
    with pytest.raises(RuntimeError, match="settle_from_file: s0 still needs an action"):
        LocalWork(1).settle(settle_from_file, rows.head(3), lambda results: {}, str(known))


def test_settled_chunks_merge_into_the_stage_output_and_count_each_key_found_once(store):
    from cass.engine.actions import ActionRunner
    from cass.engine.settle import Settled, SettledRows, merge
    from cass.pipeline.manifests import StageOutput

    runner, nvidia = ActionRunner(store, None, 0), ActionRunner(store, None, 0)   # the driver's: it found k3 itself
    runner.found.add("k3")
    runner.counts.corrupt, nvidia.counts.corrupt = 1, 2   # the shared store's damaged objects each runner set aside
    chunks = [Settled(added=[{"sample_id": "a"}], found={"amd": {"k1", "k2"}}, corrupt=1),
              Settled(dropped=[({"sample_id": "b", "origin": "o", "path": "b.cu", "domain": "d"}, "why", "detail")],
                      found={"amd": {"k2", "k3"}})]
    out = StageOutput("stage", rows_in=2)
    merge(out, chunks, {"amd": runner, "nvidia": nvidia})
    assert SettledRows(chunks).added == [{"sample_id": "a"}]
    assert [(d["sample_id"], d["reason"]) for d in out.dropped] == [("b", "why")]
    assert runner.counts.hits == 3 and nvidia.counts.hits == 0   # k2 and k3 found twice, counted once
    # in the run report: the driver's two (one of them found by both vendors' runners) and the worker's one
    assert out.run["actions"]["hits"] == 3 and out.run["actions"]["corrupt_recomputed"] == 3
    assert out.run["actions_by_vendor"]["nvidia"]["corrupt_recomputed"] == 0
