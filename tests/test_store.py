"""The content-addressed store: digests, verification on read, the action cache's rules."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from cass.pipeline.memo import Memo
from store import (
    ActionRecord,
    ActionSpec,
    CorruptObjectError,
    MissingObjectError,
    Store,
    action_key,
    digest_bytes,
    tracking,
)


def test_put_get_roundtrip_is_keyed_by_blake3(store):
    digest = store.put(b"__global__ void k() {}")
    assert digest == digest_bytes(b"__global__ void k() {}")
    assert store.get(digest) == b"__global__ void k() {}"
    assert store.put(b"__global__ void k() {}") == digest
    assert store.stats().objects == 1


def test_missing_object_names_the_digest(store):
    with pytest.raises(MissingObjectError, match="ab" * 32):
        store.get("ab" * 32)


def test_flipped_byte_is_detected_on_read_and_set_aside(store):
    digest = store.put(b"x" * 1000)
    path = store.root / "objects" / digest[:2] / digest[2:]
    data = bytearray(path.read_bytes())
    data[10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptObjectError, match="corrupt"):
        store.get(digest)
    assert not store.has(digest)
    assert store.put(b"x" * 1000) == digest
    assert store.get(digest) == b"x" * 1000


def test_verify_reports_truncated_objects(store):
    good = store.put(b"good")
    bad = store.put(b"will be truncated")
    (store.root / "objects" / bad[:2] / bad[2:]).write_bytes(b"will")
    assert store.verify() == [bad]
    assert store.verify() == []
    assert store.has(good)


def test_an_action_s_key_comes_from_its_description_alone_and_changes_with_every_field():
    a = ActionSpec("nvidia", "nvcc", "fp", ("-arch=sm_89",), {"k.cu": "00", "h.h": "01"}, ("k.o",))
    b = ActionSpec("nvidia", "nvcc", "fp", ["-arch=sm_89"], [("h.h", "01"), ("k.cu", "00")], ["k.o"])
    assert a.key == b.key == action_key(a)   # the inputs in any order
    for changed in (replace(a, vendor="amd"), replace(a, tool="ptxas"), replace(a, toolchain="fp2"),
                    replace(a, args=("-arch=sm_80",)), replace(a, inputs={"k.cu": "02", "h.h": "01"}),
                    replace(a, inputs={"k2.cu": "00", "h.h": "01"}), replace(a, outputs=("k.s",)),
                    replace(a, stdout_as="k.o"), replace(a, env={"limits": 1})):
        assert changed.key != a.key, changed
    # a tool run keeps the key the actions had before the schema (5ed59bf's `plan`): no compile is redone for it
    assert a.key == "71c9fa99723cbcd5c8acfe001e56b0a2bbe34bc11569381e4fe70d07a718e22c"
    with pytest.raises(ValueError, match="two inputs share a name"):
        ActionSpec("cass", "t", None, inputs=[("a", "01"), ("a", "02")])


def action(**env) -> ActionSpec:
    """An action of these tests, told apart by ``env``."""
    return ActionSpec("cass", "test", None, env=env)


def test_action_record_needs_its_blobs_and_lookup_checks_them(store):
    out = store.put(b"asm")
    err = store.put(b"")
    key = action(x=1).key
    with pytest.raises(MissingObjectError):
        store.record(key, ActionRecord("ok", 0, {"out.s": "cd" * 32}, err))
    store.record(key, ActionRecord("ok", 0, {"out.s": out}, err))
    assert store.lookup(key) == ActionRecord("ok", 0, {"out.s": out}, err)
    (store.root / "objects" / out[:2] / out[2:]).unlink()
    assert store.lookup(key) is None


def test_deterministic_failures_are_cached_transient_ones_refused(store):
    err = store.put(b"error: expected a ';'")
    store.record("aa" * 32, ActionRecord("failed", 1, {}, err))
    assert store.lookup("aa" * 32).status == "failed"
    with pytest.raises(ValueError, match="deterministic"):
        store.record("bb" * 32, ActionRecord("timeout", -9, {}, err))


def test_concurrent_writers_of_the_same_objects_leave_a_valid_store(tmp_path):
    blobs = [f"kernel {i}".encode() * 100 for i in range(200)]

    def writer():
        s = Store(tmp_path / "shared")
        for b in blobs:
            s.put(b)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = Store(tmp_path / "shared")
    assert s.stats().objects == len(blobs)
    assert s.verify() == []
    assert list((tmp_path / "shared" / "tmp").iterdir()) == []


def _write_everything(root: str) -> None:
    s = Store(root)
    for i in range(300):
        digest = s.put(f"blob {i}".encode() * 50)
        s.record(action(i=i).key, ActionRecord("ok", 0, {"out": digest}, s.put(b"")))


def test_two_processes_writing_one_store_leave_it_valid(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_everything, args=(str(tmp_path / "s"),)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    s = Store(tmp_path / "s")
    assert s.verify() == []
    assert all(s.lookup(action(i=i).key) is not None for i in range(300))
    assert s.stats().objects == 301


def test_packs_round_trip_into_an_empty_store(store, tmp_path):
    digests = {store.put(f"object {i}".encode()) for i in range(40)}
    err = store.put(b"warning: x")
    key = action(tool="nvcc").key
    store.record(key, ActionRecord("ok", 0, {"out": sorted(digests)[0]}, err))
    packs = tmp_path / "packs"
    first = store.write_packs(packs, digests | {err}, {key}, prefix_len=1)
    assert first.written == len(list(packs.glob("*.pack"))) <= 16
    again = store.write_packs(packs, digests | {err}, {key}, prefix_len=1)
    assert again.written == 0 and again.unchanged == first.written
    other = Store(tmp_path / "other")
    assert other.import_packs(packs) == len(digests) + 2
    assert other.lookup(key) == store.lookup(key)
    assert other.import_packs(packs) == 0
    assert other.verify() == []


def test_gc_removes_only_what_is_not_live(store):
    live = store.put(b"live")
    dead = store.put(b"dead")
    key_live, key_dead = action(k=1).key, action(k=2).key
    store.record(key_live, ActionRecord("ok", 0, {"o": live}, live))
    store.record(key_dead, ActionRecord("ok", 0, {"o": dead}, dead))
    result = store.gc({live}, {key_live})
    assert (result.objects, result.actions) == (1, 1)
    assert store.lookup(key_live) is not None and not store.has(dead)


def test_a_rewritten_record_rewrites_its_pack(store, tmp_path):
    out = store.put(b"out")
    key = action(k="rewritten").key
    store.record(key, ActionRecord("ok", 0, {"o": out}, out))
    packs = tmp_path / "packs"
    store.write_packs(packs, {out}, {key}, prefix_len=1)
    store.record(key, ActionRecord("failed", 1, {}, out))
    assert store.write_packs(packs, {out}, {key}, prefix_len=1).written == 1


def test_memo_computes_each_new_text_once_and_keeps_results_per_setting(store):
    calls: list[list[str]] = []

    def length(texts: list[str]) -> list[int]:
        calls.append(texts)
        return [len(t) for t in texts]

    memo = Memo(store, "length", {"unit": "char"})
    assert memo.map(["ab", "abc", "ab"], length) == [2, 3, 2]
    assert calls == [["ab", "abc"]]   # distinct texts only
    again = Memo(store, "length", {"unit": "char"})   # a later run: only the new text is computed
    with tracking() as used:
        assert again.map(["abc", "abcd"], length) == [3, 4]
    assert calls[-1] == ["abcd"] and again.counts() == {"hits": 1, "misses": 1}
    assert len(used) == 2 and all(store.lookup(k) is not None for k in used)   # what the packs must carry
    other = Memo(store, "length", {"unit": "byte"})   # other settings: nothing reused
    assert other.map(["ab"], length) == [2] and other.counts() == {"hits": 0, "misses": 1}
