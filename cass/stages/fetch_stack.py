"""Stage ``fetch_stack``: the CUDA files of The Stack v2, fetched from Software Heritage into the store.

The Stack v2 (``bigcode/the-stack-v2-dedup``) is metadata only: one row per file with its
repository, path, licenses and ``blob_id``. The bytes live in Software Heritage's S3 bucket at
``s3://<bucket>/<key_prefix><blob_id>``, gzip-compressed. This stage

1. reads the metadata with ``datasets.load_dataset(dataset, data_dir=..., split=...)`` for each subset of
   ``data_dirs`` (``data/Cuda``; ``data/OpenCL`` adds the OpenCL files) (a Hub id, token from ``HF_TOKEN`` as
   ``datasets`` does by itself, or a local directory with the same layout), sorts it by ``blob_id`` and keeps the
   first ``limit`` rows (0 = all);
2. downloads each distinct blob with ``workers`` threads, gunzips it, checks it against its name
   (Software Heritage names contents by their SHA-1 or git SHA-1) and puts the decompressed bytes
   into the content-addressed store;
3. writes ``data/fetch_stack/manifest.parquet`` (one row per fetched file, with its provenance),
   ``dropped.parquet``, ``actions.parquet``, ``repos.parquet`` (one row per repository of the
   whole metadata, most files of the subsets read first, in ``cuda_files``: what ``clone_repos`` picks from) and
   ``metrics/fetch_stack.json``.

Resuming: every blob, as soon as it is stored, is recorded in the store's action cache under the
action ``{"kind": "swh_content", "bucket", "key_prefix", "blob_id"}``; a blob with a record is
never downloaded again, so a run killed at any point loses nothing already fetched and the next
run fetches only the rest (metrics ``fetched`` and ``already_held``). Failures are not recorded:
the service may be fixed later, so they are tried again on the next run.

Per-blob failures drop the row, never the stage: ``blob_missing`` (404 / NoSuchKey),
``blob_corrupt`` (not gzip, or content that does not match its ``blob_id``) and ``fetch_failed``
(throttling, 5xx, connection errors or timeouts still failing after ``retries`` retries with
exponential backoff and jitter). A second file at an origin/path already taken by a row with a
smaller ``blob_id`` is dropped as ``duplicate_path`` (sample ids must be unique). What makes the
whole stage impossible exits with a message naming the dataset or bucket: metadata that cannot
be loaded, a missing bucket, the bucket refusing us (403), no credentials where signing was asked
for, or ``BREAKER`` blobs in a row failing after all their retries.

Requests are unsigned (the bucket was published for anonymous reads); set ``CASS_S3_SIGNED=1``
(or ``stack_v2.signed: true``) to sign them with the standard AWS credential chain instead.
``CASS_S3_ENDPOINT`` overrides ``stack_v2.endpoint_url`` (an S3-compatible mirror or, in tests,
a moto server); such endpoints are addressed path-style. botocore's own retries are off
(``total_max_attempts: 1``): the stage's loop is the one place that retries, so ``retries`` counts
every attempt and each wait is the stage's backoff.
"""

from __future__ import annotations

import sys

import polars as pl

from cass.pipeline.context import Stage
from cass.pipeline.manifests import StageOutput, write_parquet
from cass.sources.stack_v2 import (
    REPOS_SCHEMA,
    BlobFetcher,
    FatalFetchError,
    assemble,
    empty_manifest,
    fetch_all,
    load_metadata,
    repo_table,
    s3_client,
    select_rows,
    split_duplicates,
)


def write_outputs(stage: Stage, out: StageOutput, kept: pl.DataFrame, repos: pl.DataFrame) -> dict:
    """The manifest, the drops and metrics, and the repository table ``clone_repos`` picks from."""
    write_parquet(repos, stage.data_dir / "repos.parquet", sort_by=None)
    return out.write(kept)


def run(stage: Stage) -> None:
    params = stage.params
    sparams = params["stack_v2"]
    limit = int(sparams["limit"])
    out = stage.output()
    out.extra_metrics = {"limit": limit}
    out.run = {"fetched": 0, "already_held": 0, "bytes_fetched": 0, "bytes_downloaded": 0}
    if not sparams["enabled"]:
        print(write_outputs(stage, out, empty_manifest(), pl.DataFrame(schema=REPOS_SCHEMA)))
        return
    client, where = s3_client(sparams)
    meta = load_metadata(sparams)
    repos = repo_table(meta)
    rows = select_rows(meta, limit)
    del meta
    out.rows_in = rows.height
    rows = split_duplicates(rows, out)
    store = stage.store
    fetcher = BlobFetcher(store, client, str(sparams["bucket"]), str(sparams["key_prefix"]),
                          retries=int(sparams["retries"]))
    blob_ids = rows["blob_id"].fill_null("").unique(maintain_order=True)
    workers = max(1, int(sparams["workers"]))
    print(f"fetch_stack: {rows.height} files, {len(blob_ids)} blobs from {where}", file=sys.stderr)
    try:
        results = fetch_all(fetcher, blob_ids, len(blob_ids), workers)
    except FatalFetchError as exc:
        sys.exit(f"fetch_stack: giving up on {where}: {exc} (every blob fetched so far is kept in the store)")
    kept = assemble(rows, results, out)
    fresh = [r for r in results.values() if r.status == "fetched"]
    out.run.update({
        "fetched": len(fresh),
        "already_held": sum(r.status == "held" for r in results.values()),
        "bytes_fetched": sum(r.nbytes for r in fresh),
        "bytes_downloaded": sum(r.compressed_bytes for r in fresh),
    })
    print(write_outputs(stage, out, kept, repos))
