"""Stage ingest: read CUDA sources from local directory trees into the store.

Each source file becomes one sample. Its local headers (``#include "..."`` resolved against
the including file's own folder, then the tree's root) are stored and listed with it, so later
stages can lay the same tree out for the compilers. The domain is the first folder of the file's
path inside its tree (the bundled corpus is organised by domain). Files that cannot be read as
UTF-8 are dropped with the reason ``undecodable``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath

import polars as pl

from stages.common import FILES_DTYPE, StageOutput, load_params, open_store, sample_id
from store import Store

STAGE = "ingest"
_LOCAL_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.M)


def local_headers(root: Path, rel: PurePosixPath, data: bytes) -> tuple[list[PurePosixPath], list[str]]:
    """Headers ``rel`` includes with quotes, transitively: (resolved relative paths, unresolved)."""
    found: list[PurePosixPath] = []
    unresolved: list[str] = []
    queue = [(rel, data)]
    seen = {rel}
    while queue:
        current, text = queue.pop(0)
        for name in _LOCAL_INCLUDE.findall(text):
            include = name.decode("utf-8", "replace")
            for base in (current.parent, PurePosixPath()):
                candidate = PurePosixPath(*(base / include).parts)
                resolved = (root / candidate).resolve()
                if resolved.is_file() and root.resolve() in resolved.parents:
                    candidate = PurePosixPath(resolved.relative_to(root.resolve()).as_posix())
                    if candidate not in seen:
                        seen.add(candidate)
                        found.append(candidate)
                        queue.append((candidate, resolved.read_bytes()))
                    break
            else:
                unresolved.append(include)
    return sorted(found), sorted(set(unresolved))


def is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def ingest_tree(store: Store, root: Path, origin: str, extensions: list[str], out: StageOutput) -> list[dict]:
    """Samples of one directory tree (sorted by path); undecodable files are dropped."""
    rows = []
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix in extensions)
    for path in files:
        rel = PurePosixPath(path.relative_to(root).as_posix())
        data = path.read_bytes()
        row = {
            "sample_id": sample_id(origin, str(rel)),
            "origin": origin,
            "path": str(rel),
            "domain": rel.parts[0] if len(rel.parts) > 1 else "unknown",
        }
        out.rows_in += 1
        headers, unresolved = local_headers(root, rel, data)
        undecodable = [p for p in [rel, *headers] if not is_utf8(data if p == rel else (root / p).read_bytes())]
        if undecodable:
            out.drop(row, "undecodable", f"not UTF-8: {', '.join(str(root / p) for p in undecodable)}")
            continue
        row["files"] = [{"path": str(rel), "digest": store.put(data)}] + [
            {"path": str(h), "digest": store.put((root / h).read_bytes())} for h in headers
        ]
        row["unresolved_includes"] = unresolved
        row["bytes"] = len(data)
        rows.append(row)
    return rows


def main() -> None:
    params = load_params()
    store = open_store(params)
    out = StageOutput(STAGE)
    rows: list[dict] = []
    for tree in params["corpus"]["trees"]:
        root = Path(tree["path"])
        if not root.is_dir():
            sys.exit(f"ingest: corpus tree {root} (params.yaml corpus.trees) is not a directory")
        rows += ingest_tree(store, root, tree["origin"], params["corpus"]["extensions"], out)
    schema = {"sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
              "files": FILES_DTYPE, "unresolved_includes": pl.List(pl.String), "bytes": pl.Int64}
    kept = pl.DataFrame(rows, schema=schema)
    duplicate_ids = kept.filter(pl.col("sample_id").is_duplicated())
    if duplicate_ids.height:
        sys.exit(f"ingest: two trees produce the same origin/path: {duplicate_ids['path'].to_list()[:5]}")
    print(out.write(kept))


if __name__ == "__main__":
    main()
