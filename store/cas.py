"""Content-addressed blob store and action cache, in the manner of Bazel's CAS/AC split.

Layout under the store root::

    objects/ab/cdef...   blob bytes, named by the BLAKE3 hex digest of those bytes
    actions/ab/cdef...   JSON action records, named by the BLAKE3 digest of the canonical action
    tmp/                 staging area for atomic writes (same filesystem as the rest)

Blobs are written before the action record that names them; every write goes to a temporary
file that is fsynced and then renamed into place, so a reader sees a whole object or none.
Reads verify the digest; a damaged object is moved aside and reported as missing, so the
caller recomputes it instead of exporting it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import blake3

from store import pack

SCHEMA_VERSION = 1
"""Enters every action key; bump it when the meaning of a stored action changes."""


def digest_bytes(data: bytes) -> str:
    """BLAKE3 hex digest of ``data``."""
    return blake3.blake3(data).hexdigest()


def canonical_json(value: object) -> bytes:
    """Deterministic JSON encoding (sorted keys, no whitespace) used for hashing."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class CorruptObjectError(Exception):
    """A stored object's bytes do not match its digest."""


class MissingObjectError(KeyError):
    """A digest was asked for that the store does not hold."""


@dataclass(frozen=True)
class ActionRecord:
    """The cached result of one deterministic tool run.

    ``status`` is ``"ok"`` (exit 0) or ``"failed"`` (a deterministic failure such as a compile
    error). Transient failures are never recorded.
    """

    status: str
    exit_code: int
    outputs: Mapping[str, str] = field(default_factory=dict)
    stderr: str = ""

    def to_json(self) -> dict:
        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "outputs": dict(sorted(self.outputs.items())),
            "stderr": self.stderr,
        }

    @classmethod
    def from_json(cls, data: Mapping) -> ActionRecord:
        return cls(
            status=data["status"],
            exit_code=int(data["exit_code"]),
            outputs=dict(data["outputs"]),
            stderr=data["stderr"],
        )

    def digests(self) -> list[str]:
        """Every blob digest this record refers to."""
        return [*self.outputs.values(), *([self.stderr] if self.stderr else [])]


@dataclass
class StoreStats:
    """Counts and sizes of what a store holds."""

    objects: int = 0
    object_bytes: int = 0
    actions: int = 0
    action_bytes: int = 0


@dataclass
class GcResult:
    """What a garbage collection removed."""

    objects: int = 0
    object_bytes: int = 0
    actions: int = 0
    temp_files: int = 0


@dataclass
class PackResult:
    """How many pack files were rewritten, left as they were, or removed."""

    written: int = 0
    unchanged: int = 0
    removed: int = 0


_TRACKED: list[set[str]] = []
"""The key sets of this process's open :func:`tracking` blocks."""


@contextlib.contextmanager
def tracking() -> Iterator[set[str]]:
    """Every action key any store of this process finds a record for or records inside the block (a stage's item
    on one of its workers: keys its stage's ``actions.parquet`` must list)."""
    keys: set[str] = set()
    _TRACKED.append(keys)
    try:
        yield keys
    finally:
        del _TRACKED[next(i for i, tracked in enumerate(_TRACKED) if tracked is keys)]


class Store:
    """A content-addressed store rooted at a directory; the only code that touches its files."""

    def __init__(self, root: Path | str):
        self.root = Path(root)
        self._objects = self.root / "objects"
        self._actions = self.root / "actions"
        self._tmp = self.root / "tmp"
        self._corrupt = self.root / "corrupt"
        self._imported = self.root / "imported-packs"
        self._objects_prefix = f"{self._objects}{os.sep}"
        self._actions_prefix = f"{self._actions}{os.sep}"
        self.corrupt_found: list[str] = []
        """Names of objects and records found damaged (and set aside) by this instance."""
        for d in (self._objects, self._actions, self._tmp):
            d.mkdir(parents=True, exist_ok=True)

    # -- blobs -----------------------------------------------------------------------------

    def _object_path(self, digest: str) -> Path:
        return self._objects / digest[:2] / digest[2:]

    def _object_file(self, digest: str) -> str:
        """``_object_path`` as a plain string (the hot lookup path avoids pathlib)."""
        return f"{self._objects_prefix}{digest[:2]}/{digest[2:]}"

    def put(self, data: bytes) -> str:
        """Store ``data``; return its digest. Storing the same bytes twice is a no-op."""
        digest = digest_bytes(data)
        path = self._object_path(digest)
        if not path.exists():
            self._write_atomic(path, data)
        return digest

    def has(self, digest: str) -> bool:
        """Whether the store holds an object with this digest (its bytes are not checked)."""
        return os.path.exists(self._object_file(digest))

    def get(self, digest: str) -> bytes:
        """Return the bytes of ``digest``, verified.

        Raises MissingObjectError if absent and CorruptObjectError if the bytes do not match;
        in the latter case the damaged file is moved to ``corrupt/`` so a later put rewrites it.
        """
        path = self._object_file(digest)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise MissingObjectError(f"store {self.root}: no object {digest}") from None
        actual = digest_bytes(data)
        if actual != digest:
            self._quarantine(Path(path), digest)
            raise CorruptObjectError(
                f"store {self.root}: object {digest} is corrupt (its bytes hash to {actual}); "
                f"moved to {self._corrupt}"
            )
        return data

    def size(self, digest: str) -> int:
        """The byte size of a stored object."""
        try:
            return self._object_path(digest).stat().st_size
        except FileNotFoundError:
            raise MissingObjectError(f"store {self.root}: no object {digest}") from None

    def get_text(self, digest: str, errors: str = "strict") -> str:
        """``get`` decoded as UTF-8 (``errors="replace"`` for tool logs, which may hold any bytes)."""
        return self.get(digest).decode("utf-8", errors)

    def put_text(self, text: str) -> str:
        """``put`` of the UTF-8 encoding of ``text``."""
        return self.put(text.encode("utf-8"))

    def iter_objects(self) -> Iterator[str]:
        """Digests of every stored object, in sorted order."""
        for sub in sorted(self._objects.iterdir()):
            for f in sorted(sub.iterdir()):
                yield sub.name + f.name

    def verify(self) -> list[str]:
        """Check every object's bytes against its name; return (and quarantine) the bad ones."""
        bad = []
        for digest in self.iter_objects():
            try:
                self.get(digest)
            except CorruptObjectError:
                bad.append(digest)
        return bad

    # -- action cache ----------------------------------------------------------------------

    def _action_path(self, key: str) -> Path:
        return self._actions / key[:2] / key[2:]

    def lookup(self, key: str) -> ActionRecord | None:
        """The record for ``key`` if it exists and every blob it names is present and intact.

        Each named blob is read and re-hashed, so a corrupt output is caught here (and set
        aside) and the action reruns instead of handing damaged bytes to a later stage."""
        try:
            with open(f"{self._actions_prefix}{key[:2]}/{key[2:]}", "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        try:
            record = ActionRecord.from_json(json.loads(raw))
        except (ValueError, KeyError, TypeError):
            self._quarantine(self._action_path(key), key)
            return None
        try:
            for digest in record.digests():
                self.get(digest)
        except (MissingObjectError, CorruptObjectError):
            return None
        self._used(key)
        return record

    def record(self, key: str, record: ActionRecord) -> None:
        """Record the result of an action whose output blobs are already stored."""
        if record.status not in ("ok", "failed"):
            raise ValueError(f"action {key}: only deterministic results are cached, got {record.status!r}")
        missing = [d for d in record.digests() if not self.has(d)]
        if missing:
            raise MissingObjectError(f"action {key}: outputs not stored yet: {missing}")
        self._write_atomic(self._action_path(key), canonical_json(record.to_json()))
        self._used(key)

    @staticmethod
    def _used(key: str) -> None:
        for tracked in _TRACKED:
            tracked.add(key)

    # -- maintenance -----------------------------------------------------------------------

    def stats(self) -> StoreStats:
        """Counts and byte sizes of objects and action records."""
        s = StoreStats()
        for path in self._objects.glob("*/*"):
            s.objects += 1
            s.object_bytes += path.stat().st_size
        for path in self._actions.glob("*/*"):
            s.actions += 1
            s.action_bytes += path.stat().st_size
        return s

    def iter_actions(self) -> Iterator[str]:
        """Keys of every action record, in sorted order."""
        for sub in sorted(self._actions.iterdir()):
            for f in sorted(sub.iterdir()):
                yield sub.name + f.name

    def gc(self, live_objects: set[str], live_actions: set[str], tmp_age_s: float = 3600) -> GcResult:
        """Delete objects and action records outside the live sets, leftovers of interrupted
        writes older than ``tmp_age_s`` and set-aside corrupt files."""
        result = GcResult()
        for digest in list(self.iter_objects()):
            if digest not in live_objects:
                path = self._object_path(digest)
                result.object_bytes += path.stat().st_size
                path.unlink()
                result.objects += 1
        for key in list(self.iter_actions()):
            if key not in live_actions:
                self._action_path(key).unlink()
                result.actions += 1
        now = time.time()
        for path in self._tmp.iterdir():
            if now - path.stat().st_mtime > tmp_age_s:
                path.unlink(missing_ok=True)
                result.temp_files += 1
        if self._corrupt.exists():
            shutil.rmtree(self._corrupt)
        if self._imported.exists():  # packs may hold entries removed here: import them again
            shutil.rmtree(self._imported)
        return result

    # -- packs (sharing through DVC) -------------------------------------------------------

    def write_packs(self, pack_dir: Path, objects: set[str], actions: set[str], prefix_len: int) -> PackResult:
        """Write the given entries into pack files bucketed by the first ``prefix_len`` hex digits
        of their names. A pack whose content is unchanged is left untouched; packs of buckets
        that became empty are removed."""
        pack_dir.mkdir(parents=True, exist_ok=True)
        for stale in pack_dir.glob("*.tmp"):  # left by a killed run
            stale.unlink()
        records = {key: self._action_path(key).read_bytes() for key in actions}
        buckets: dict[str, list[tuple[str, str, str]]] = {}
        for name in objects:
            buckets.setdefault(name[:prefix_len], []).append(("O", name, name))
        for key, data in records.items():
            buckets.setdefault(key[:prefix_len], []).append(pack.entry_id("A", key, data))
        result = PackResult()
        for prefix, entries in sorted(buckets.items()):
            path = pack_dir / f"{prefix}.pack"
            ident = pack.content_id(entries)
            if pack.read_header(path) == ident:
                result.unchanged += 1
            else:
                data = [(k, n, self.get(n) if k == "O" else records[n]) for k, n, _ in entries]
                tmp = path.with_suffix(".tmp")
                with tmp.open("wb") as f:
                    pack.write_pack(f, data)
                    f.flush()
                    os.fsync(f.fileno())
                tmp.replace(path)
                result.written += 1
            self._mark_imported(path, ident)
        for path in pack_dir.glob("*.pack"):
            if path.stem not in buckets:
                path.unlink()
                result.removed += 1
        return result

    def import_packs(self, pack_dir: Path) -> int:
        """Bring the entries of packs not imported yet into the store; return how many entries
        were added. Objects are verified against their names; action records are added only
        once every blob they name is present."""
        added = 0
        pending_actions: list[tuple[str, bytes]] = []
        marks = []
        for path in sorted(pack_dir.glob("*.pack")) if pack_dir.is_dir() else []:
            ident = pack.read_header(path)
            if ident is None:
                print(f"store: {path} is not a CASS pack; skipped", file=sys.stderr)
                continue
            mark = self._imported / path.name
            if mark.exists() and mark.read_text() == ident:
                continue
            for kind, name, data in pack.read_pack(path):
                if kind == "O" and not self.has(name):
                    if digest_bytes(data) != name:
                        raise CorruptObjectError(f"pack {path}: entry {name} does not match its digest")
                    self._write_atomic(self._object_path(name), data)
                    added += 1
                elif kind == "A" and not self._action_path(name).exists():
                    pending_actions.append((name, data))
            marks.append((path, ident))
        for key, data in pending_actions:
            missing = [d for d in ActionRecord.from_json(json.loads(data)).digests() if not self.has(d)]
            if missing:
                print(f"store: pack record {key} names objects no pack holds ({missing[0]}...); skipped",
                      file=sys.stderr)
                continue
            self._write_atomic(self._action_path(key), data)
            added += 1
        for path, ident in marks:
            self._mark_imported(path, ident)
        return added

    def _mark_imported(self, path: Path, ident: str) -> None:
        self._imported.mkdir(parents=True, exist_ok=True)
        (self._imported / path.name).write_text(ident)

    # -- internals -------------------------------------------------------------------------

    def _write_atomic(self, path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._tmp)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _quarantine(self, path: Path, name: str) -> None:
        self.corrupt_found.append(name)
        self._corrupt.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, self._corrupt / name)
