"""Whole folder trees in the store, as git stores them: every file a blob (chunked), one manifest naming them.

A tree's manifest lists, depth first with the names in each folder sorted, each folder (mode), file (mode, size,
chunk digests) and symbolic link (target); its digest is the tree's identity. Only content and permission bits enter
it: no times, no owners, so the same files give the same manifest and the same digest on any machine, whatever order
they were written in. Files are read and written in chunks of :data:`CHUNK_BYTES`, never whole, so a tree of
gigabytes passes through the store in bounded memory.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import blake3

from store.cas import Store, canonical_json

FORMAT = "cass-tree/1"
CHUNK_BYTES = 1 << 26
"""64 MiB: a large file is stored as consecutive blobs of this size."""


class TreeError(ValueError):
    """A tree holds something a manifest cannot describe, or a manifest is not a tree's."""


def exclusion(patterns: Sequence[str]) -> Callable[[str], bool]:
    """Whether a relative path matches one of the glob ``patterns`` (``*`` stops at no ``/``), as one compiled
    expression (a root's walk asks it of tens of thousands of entries)."""
    if not patterns:
        return lambda rel: False
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)).match


def walk(root: Path, exclude: Sequence[str] = ()) -> Iterator[tuple[str, os.stat_result]]:
    """(relative path, lstat) of every entry under ``root``, sorted by path, without what ``exclude`` matches (an
    excluded folder is not entered); symbolic links are not followed."""
    excluded = exclusion(exclude)

    def children(folder: str, prefix: str) -> list[tuple[str, os.DirEntry]]:
        """A folder's entries not excluded, last name first (popped from the end: first name first)."""
        with os.scandir(folder) as it:
            named = [(f"{prefix}{e.name}", e) for e in it]
        return sorted(((rel, e) for rel, e in named if not excluded(rel)), key=lambda n: n[0], reverse=True)

    pending = children(os.fspath(root), "")
    while pending:
        rel, entry = pending.pop()
        st = entry.stat(follow_symlinks=False)
        yield rel, st
        if stat.S_ISDIR(st.st_mode):
            pending += children(entry.path, f"{rel}/")


def listing_digest(root: Path, exclude: Sequence[str] = ()) -> str:
    """BLAKE3 over every entry's path, type and permission bits, and a file's or link's size, inode, and modification
    and change times (nanoseconds): a cheap check that a tree on disk is still the one it was when a manifest was made
    from it (any write, copy or ``touch`` changes the change time). A folder's own times are left out: they change
    with what an excluded entry inside it does."""
    h = blake3.blake3()
    for rel, st in walk(root, exclude):
        own = "" if stat.S_ISDIR(st.st_mode) else f"{st.st_size}\0{st.st_ino}\0{st.st_mtime_ns}\0{st.st_ctime_ns}"
        h.update(f"{rel}\0{st.st_mode:o}\0{own}\n".encode())
    return h.hexdigest()


def put_tree(store: Store, root: Path, exclude: Sequence[str] = (),
             progress: Callable[[int], None] | None = None) -> str:
    """Store every file of ``root`` (but what ``exclude`` matches) and its manifest; return the manifest's digest.
    ``progress`` is called with the bytes of each file stored. A device, socket or pipe raises TreeError."""
    entries: list[list] = []
    for rel, st in walk(root, exclude):
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISDIR(st.st_mode):
            entries.append([rel, "d", mode])
        elif stat.S_ISLNK(st.st_mode):
            entries.append([rel, "l", os.readlink(Path(root) / rel)])
        elif stat.S_ISREG(st.st_mode):
            chunks = []
            with open(Path(root) / rel, "rb") as f:
                while data := f.read(CHUNK_BYTES):
                    chunks.append(store.put(data))
            entries.append([rel, "f", mode, st.st_size, chunks])
            if progress:
                progress(st.st_size)
        else:
            raise TreeError(f"{Path(root) / rel}: a device, socket or pipe has no place in a stored tree; "
                            "exclude it")
    return store.put(canonical_json({"format": FORMAT, "entries": entries}))


def manifest(store: Store, digest: str) -> list[list]:
    """The entries of the tree ``digest`` (see :func:`put_tree`)."""
    data = json.loads(store.get(digest))
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise TreeError(f"store object {digest} is not a {FORMAT} manifest")
    return data["entries"]


def tree_blobs(store: Store, digest: str) -> set[str]:
    """The manifest and every chunk the tree ``digest`` names: what a pack must carry to give the whole tree."""
    return {digest, *(c for e in manifest(store, digest) if e[1] == "f" for c in e[4])}


def tree_bytes(store: Store, digest: str) -> int:
    """The total size of the tree's files."""
    return sum(e[3] for e in manifest(store, digest) if e[1] == "f")


def check_out(store: Store, digest: str, dest: Path, progress: Callable[[int], None] | None = None) -> None:
    """Write the tree ``digest`` to ``dest`` (which must not exist), each chunk verified against its digest.
    The tree is written beside ``dest`` and renamed into place when whole, so an interrupted check-out leaves no
    partial tree at ``dest`` (the next one starts over)."""
    dest = Path(dest)
    if dest.exists() or dest.is_symlink():
        raise FileExistsError(f"{dest} exists; a tree is checked out only into a new folder")
    entries = manifest(store, digest)
    partial = dest.with_name(f"{dest.name}.partial")
    if partial.exists():
        remove_tree(partial)
    partial.mkdir(parents=True)
    folders = []
    for entry in entries:
        if entry[0].startswith("/") or ".." in entry[0].split("/"):
            raise TreeError(f"tree {digest}: entry {entry[0]!r} points outside the tree")
        path = partial / entry[0]
        if entry[1] == "d":
            path.mkdir()
            folders.append((path, entry[2]))
        elif entry[1] == "l":
            os.symlink(entry[2], path)
        else:
            with open(path, "wb") as f:
                for chunk in entry[4]:
                    f.write(store.get(chunk))
            os.chmod(path, entry[2])
            if progress:
                progress(entry[3])
    for path, mode in reversed(folders):   # last: a read-only folder is filled first
        os.chmod(path, mode)
    os.chmod(partial, 0o755)
    os.rename(partial, dest)


def remove_tree(path: Path) -> None:
    """Remove a folder tree, read-only folders in it too (a check-out killed after it made some read-only)."""
    for folder, _, _ in os.walk(path):
        os.chmod(folder, 0o755)
    shutil.rmtree(path)
