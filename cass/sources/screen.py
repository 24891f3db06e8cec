"""Byte-level screening of source files before they enter the store: size, binary, encoding.

* ``too_large``: more than ``filter.max_bytes`` bytes (checked before the file is read);
* ``binary``: a NUL byte, or more than ``BINARY_CONTROL_RATIO`` of control characters, in the
  first ``BINARY_PROBE`` bytes;
* ``undecodable``: not UTF-8, and not decodable with the encoding the source declares (The Stack
  v2's ``src_encoding``) or any of ``filter.decode_fallbacks`` (Latin-1, then CP1252 by default: a
  ``©`` in a copyright comment is enough to make a file not UTF-8) without C1 control characters.
  A file decoded from another encoding is stored transcoded to UTF-8, and the encoding is recorded
  with the sample (``source_encoding``, as The Stack v2 records ``src_encoding``).

A UTF-8 byte-order mark is removed; otherwise UTF-8 files are stored byte for byte.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

BINARY_PROBE = 8192
BINARY_CONTROL_RATIO = 0.05
_CONTROL = bytes(b for b in range(32) if b not in b"\t\n\r\f\v\b\x1b")
_C1_CONTROL = re.compile("[\x80-\x9f]")
"""C1 control characters: text no fallback encoding may produce (a Latin-1 reading of CP1252's quotes, or of
bytes no single-byte text has)."""


@dataclass(frozen=True)
class Screened:
    """A file that passed: its UTF-8 bytes and the encoding it was read as."""

    data: bytes
    encoding: str


class Rejected(Exception):
    """A file that did not pass: ``reason`` is the drop reason, the message the detail."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


def check_size(size: int, name: str, params: dict) -> None:
    """Raise Rejected(too_large) for a file over the byte limit."""
    if size > params["max_bytes"]:
        raise Rejected("too_large", f"{name}: {size} bytes > max_bytes {params['max_bytes']}")


def screen(data: bytes, name: str, params: dict, declared: str | None = None) -> Screened:
    """The file's text as UTF-8 bytes, or Rejected with the reason it cannot be used."""
    check_size(len(data), name, params)
    probe = data[:BINARY_PROBE]
    nul = probe.find(0)
    if nul >= 0:
        raise Rejected("binary", f"{name}: NUL byte at offset {nul}")
    controls = sum(probe.count(c) for c in _CONTROL)
    if probe and controls > BINARY_CONTROL_RATIO * len(probe):
        raise Rejected("binary", f"{name}: {controls} control bytes in the first {len(probe)}")
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        data.decode("utf-8")
        return Screened(data, "utf-8")
    except UnicodeDecodeError as exc:
        first_error = exc
    tried = []
    for encoding in [e for e in (declared, *params["decode_fallbacks"]) if e]:
        try:
            normal = codecs.lookup(encoding).name
        except LookupError:
            continue
        if normal in ("utf-8", *tried):
            continue
        tried.append(normal)
        try:
            text = data.decode(normal)
        except UnicodeDecodeError:
            continue
        if encoding == declared or not _C1_CONTROL.search(text):
            return Screened(text.encode("utf-8"), normal)
    raise Rejected("undecodable", f"{name}: not UTF-8 ({first_error.reason} at byte {first_error.start})"
                   + (f", nor {', '.join(tried)}" if tried else ""))
