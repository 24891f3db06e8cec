"""bench/RESULTS.md: each benchmark owns one ``## `` section and rewrites only that one."""

from __future__ import annotations

from pathlib import Path


def replace_section(path: Path, title: str, section: str) -> None:
    """Put ``section`` (which starts with the line ``title``) in place of the section of that title
    in ``path``, or append it."""
    text = path.read_text() if path.exists() else "# Benchmark results\n"
    if title in text:
        head, _, tail = text.partition(title)
        rest = tail.split("\n## ", 1)
        text = head + section.rstrip("\n") + "\n" + ("\n## " + rest[1] if len(rest) > 1 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    path.write_text(text)
