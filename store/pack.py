"""Pack files: many store entries in one file, so DVC shares a store as a few large files.

A pack holds the objects and action records whose names share a hex prefix. Format::

    CASSPACK1 <BLAKE3 of the sorted entry names>\\n
    then per entry, sorted by (kind, name):  <kind> <name> <length>\\n<bytes>

with kind ``O`` (object) or ``A`` (action record). The header digest identifies the pack's
content (object names are content digests; an action record is determined by its key), so an
unchanged pack is recognised from its first line without reading the rest; action records,
named by their keys, enter that identity with the digest of their bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import blake3

MAGIC = b"CASSPACK1"


def entry_id(kind: str, name: str, data: bytes) -> tuple[str, str, str]:
    """(kind, name, content digest) of an entry: an object's name is its digest already; an
    action record is named by its key, so its bytes are hashed too."""
    return kind, name, name if kind == "O" else blake3.blake3(data).hexdigest()


def content_id(entries: list[tuple[str, str, str]]) -> str:
    """Identity of a pack with these entries (see ``entry_id``)."""
    return blake3.blake3("\n".join(" ".join(e) for e in sorted(entries)).encode()).hexdigest()


def read_header(path: Path) -> str | None:
    """The content id in a pack's first line, or None if the file is not a pack."""
    try:
        with path.open("rb") as f:
            line = f.readline(200)
    except FileNotFoundError:
        return None
    parts = line.split()
    return parts[1].decode() if len(parts) == 2 and parts[0] == MAGIC else None


def write_pack(f: BinaryIO, entries: list[tuple[str, str, bytes]]) -> None:
    """Write (kind, name, bytes) entries, sorted, with the header."""
    entries = sorted(entries, key=lambda e: (e[0], e[1]))
    f.write(MAGIC + b" " + content_id([entry_id(k, n, d) for k, n, d in entries]).encode() + b"\n")
    for kind, name, data in entries:
        f.write(f"{kind} {name} {len(data)}\n".encode())
        f.write(data)


def read_pack(path: Path) -> Iterator[tuple[str, str, bytes]]:
    """The (kind, name, bytes) entries of a pack; raises ValueError on a damaged file."""
    with path.open("rb") as f:
        if read_header(path) is None:
            raise ValueError(f"{path}: not a CASS pack")
        f.readline()
        while line := f.readline():
            try:
                kind, name, length = line.decode().split()
                size = int(length)
            except ValueError:
                raise ValueError(f"{path}: damaged entry header {line[:80]!r}") from None
            data = f.read(size)
            if len(data) != size:
                raise ValueError(f"{path}: truncated entry {name}")
            yield kind, name, data
