"""The CUDA files of The Stack v2, fetched from Software Heritage into the store (stage ``fetch_stack``:
:mod:`cass.stages.fetch_stack`)."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

import polars as pl
from tqdm import tqdm

from cass.engine.cached import CachedMap
from cass.pipeline.manifests import StageOutput, sample_id
from cass.pipeline.remote import backoff_s, git_blob_id
from store import ActionSpec, Store

ORIGIN = "stack_v2"
ENDPOINT_ENV = "CASS_S3_ENDPOINT"
SIGNED_ENV = "CASS_S3_SIGNED"

BREAKER = 50
"""Blobs in a row that fail after all retries before the stage gives up (the service is down)."""

MANIFEST_SCHEMA = {
    "sample_id": pl.String, "origin": pl.String, "path": pl.String, "domain": pl.String,
    "repo_name": pl.String, "repo_path": pl.String, "blob_id": pl.String, "revision_id": pl.String,
    "detected_licenses": pl.List(pl.String), "license_type": pl.String, "star_events_count": pl.Int64,
    "src_encoding": pl.String, "length_bytes": pl.Int64, "digest": pl.String,
}
REPOS_SCHEMA = {"repo_name": pl.String, "cuda_files": pl.Int64, "revision_id": pl.String,
                "star_events_count": pl.Int64}
REQUIRED_COLUMNS = ("blob_id", "repo_name", "path")
OPTIONAL_COLUMNS = {name: MANIFEST_SCHEMA[name] for name in (
    "revision_id", "detected_licenses", "license_type", "star_events_count", "src_encoding", "length_bytes")}

_MISSING_CODES = {"NoSuchKey", "NotFound", "404"}
_FATAL_CODES = {"NoSuchBucket", "AccessDenied", "AllAccessDisabled", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                "InvalidToken", "ExpiredToken", "AccountProblem", "InvalidBucketName", "PermanentRedirect",
                "AuthorizationHeaderMalformed", "RequestTimeTooSkewed"}
_TRANSIENT_CODES = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequests",
                    "RequestThrottled", "RequestTimeout", "InternalError", "ServiceUnavailable", "BadGateway",
                    "GatewayTimeout", "OperationAborted"}


class FatalFetchError(Exception):
    """The bucket cannot be read at all; continuing would only drop every row."""


@dataclass(frozen=True)
class Fetched:
    """What became of one blob: ``fetched`` now, ``held`` already, or ``missing``/``corrupt``/``failed``."""

    blob_id: str
    status: str
    digest: str | None = None
    nbytes: int = 0
    compressed_bytes: int = 0
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("fetched", "held")


DROP_REASONS = {"missing": "blob_missing", "corrupt": "blob_corrupt", "failed": "fetch_failed"}


# -- metadata ------------------------------------------------------------------------------------


def load_metadata(sparams: dict) -> pl.DataFrame:
    """The Stack v2 rows of every subset ``data_dirs`` names (``data/Cuda``, ``data/OpenCL``, ...), as one Polars
    table with the columns this stage uses typed."""
    dataset, split = str(sparams["dataset"]), sparams["split"]
    try:
        import datasets
    except ImportError:
        sys.exit("fetch_stack: the `datasets` package is needed to read the Stack v2 metadata (pip install datasets)")
    data_dirs = sparams["data_dirs"]
    if not isinstance(data_dirs, list) or not data_dirs or len(set(data_dirs)) < len(data_dirs):
        sys.exit(f"fetch_stack: stack_v2.data_dirs is {data_dirs!r}: give a list of distinct subsets, such as "
                 "[data/Cuda, data/OpenCL]")
    tables = []
    for data_dir in data_dirs:
        try:
            ds = datasets.load_dataset(dataset, data_dir=data_dir, split=split)
        except Exception as exc:
            hint = ""
            if re.search(r"gated|authenticat|401|403", str(exc), re.I):
                hint = (f"; the dataset is gated: accept its terms at https://huggingface.co/datasets/{dataset} and "
                        f"set HF_TOKEN (it is {'set' if os.environ.get('HF_TOKEN') else 'not set'})")
            sys.exit(f"fetch_stack: cannot load the metadata of dataset {dataset!r} (data_dir {data_dir!r}, "
                     f"split {split!r}): {type(exc).__name__}: {exc}{hint}")
        tables.append(normalize_metadata(ds.to_polars(), f"{dataset}/{data_dir}").select(
            *REQUIRED_COLUMNS, *OPTIONAL_COLUMNS))
    return pl.concat(tables)


def normalize_metadata(df: pl.DataFrame, dataset: str = "metadata") -> pl.DataFrame:
    """Check the columns this stage needs, add absent optional ones as nulls and fix their types."""
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        sys.exit(f"fetch_stack: dataset {dataset!r} has no column(s) {missing}; columns: {df.columns}")
    df = df.with_columns(pl.lit(None, dtype).alias(name) for name, dtype in OPTIONAL_COLUMNS.items()
                         if name not in df.columns)
    try:
        return df.with_columns(
            *(pl.col(c).cast(pl.String) for c in REQUIRED_COLUMNS),
            *(pl.col(name).cast(dtype) for name, dtype in OPTIONAL_COLUMNS.items()),
        )
    except pl.exceptions.PolarsError as exc:
        sys.exit(f"fetch_stack: dataset {dataset!r} has columns of unexpected types: {exc}")


def repo_table(meta: pl.DataFrame) -> pl.DataFrame:
    """One row per repository: its number of files, most common revision (ties: the smallest) and
    most stars, sorted by file count (descending) then name."""
    meta = meta.filter(pl.col("repo_name").is_not_null())
    counts = meta.group_by("repo_name").agg(
        pl.len().cast(pl.Int64).alias("cuda_files"), pl.col("star_events_count").max())
    revisions = (
        meta.group_by("repo_name", "revision_id").agg(pl.len().alias("n"))
        .sort(["repo_name", "n", "revision_id"], descending=[False, True, False], nulls_last=True)
        .unique("repo_name", keep="first", maintain_order=True)
        .select("repo_name", "revision_id")
    )
    table = counts.join(revisions, on="repo_name", how="left").select(list(REPOS_SCHEMA)).cast(REPOS_SCHEMA)
    return table.sort(["cuda_files", "repo_name"], descending=[True, False])


def select_rows(meta: pl.DataFrame, limit: int) -> pl.DataFrame:
    """The rows to fetch, in ``blob_id`` order (first ``limit`` if set), with their sample identity."""
    rows = meta.sort(["blob_id", "repo_name", "path"], nulls_last=True, maintain_order=True)
    if limit:
        rows = rows.head(limit)
    repo_path = pl.col("path").str.strip_chars_start("/")
    full_path = pl.col("repo_name") + pl.lit("/") + repo_path
    rows = rows.with_columns(
        pl.lit(ORIGIN).alias("origin"),
        full_path.alias("path"),
        repo_path.alias("repo_path"),
        pl.lit(None, pl.String).alias("domain"),
    )
    ids = pl.Series("sample_id", [sample_id(ORIGIN, p) for p in rows["path"]], dtype=pl.String)
    return rows.with_columns(ids)


# -- S3 ------------------------------------------------------------------------------------------


def s3_client(sparams: dict) -> tuple[Any, str]:
    """A thread-safe S3 client for the bucket and a description of where it points."""
    try:
        import boto3
        from botocore import UNSIGNED
        from botocore.config import Config
    except ImportError:
        sys.exit("fetch_stack: the `boto3` package is needed to download Stack v2 contents (pip install boto3)")
    endpoint = os.environ.get(ENDPOINT_ENV) or sparams["endpoint_url"] or None
    signed = os.environ.get(SIGNED_ENV, "").lower() in ("1", "true", "yes") or bool(sparams["signed"])
    where = f"s3://{sparams['bucket']}/{sparams['key_prefix']} at {endpoint or 'AWS'}"
    session = boto3.session.Session()
    if signed and session.get_credentials() is None:
        sys.exit(f"fetch_stack: signed requests were asked for ({SIGNED_ENV} / stack_v2.signed) but no AWS "
                 f"credentials were found (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, a profile, ...) to read {where}")
    timeout = float(sparams["timeout_s"])
    config = Config(
        signature_version=None if signed else UNSIGNED,
        retries={"mode": "standard", "total_max_attempts": 1},
        connect_timeout=timeout,
        read_timeout=timeout,
        max_pool_connections=max(10, int(sparams["workers"])),
        s3={"addressing_style": "path"} if endpoint else None,
    )
    client = session.client("s3", endpoint_url=endpoint, region_name=sparams["region"],
                            config=config)
    return client, where


def classify(exc: BaseException) -> str:
    """``missing``, ``transient``, ``fatal`` (the bucket is unusable) or ``failed`` (give up on this blob)."""
    from botocore import exceptions as bce

    if isinstance(exc, bce.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        if code in _FATAL_CODES or status in (301, 401, 403):
            return "fatal"
        if code in _MISSING_CODES or status == 404:
            return "missing"
        if code in _TRANSIENT_CODES or status in (408, 429) or status >= 500:
            return "transient"
        return "failed"
    if isinstance(exc, bce.NoCredentialsError | bce.PartialCredentialsError):
        return "fatal"
    if isinstance(exc, bce.ConnectionError | bce.HTTPClientError | bce.IncompleteReadError | OSError):
        return "transient"
    return "failed"


def describe(exc: BaseException) -> str:
    """A one-line account of an S3 error (code and HTTP status when the service answered)."""
    from botocore import exceptions as bce

    if isinstance(exc, bce.ClientError):
        error = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return f"{error.get('Code', '?')} (HTTP {status}): {error.get('Message', '') or exc}"
    return f"{type(exc).__name__}: {exc}"


def matches_name(blob_id: str, data: bytes) -> bool:
    """Whether ``data`` hashes to ``blob_id`` under SHA-1 or git's blob SHA-1 (other names are not checked)."""
    if len(blob_id) != 40:
        return True
    blob_id = blob_id.lower()
    return blob_id in (hashlib.sha1(data).hexdigest(), git_blob_id(data))


class BlobFetcher:
    """Fetches blobs into the store through the action cache; safe to call from many threads."""

    def __init__(self, store: Store, client: Any, bucket: str, key_prefix: str, retries: int,
                 sleep: Callable[[float], None] = time.sleep):
        self.store = store
        self.client = client
        self.bucket = bucket
        self.key_prefix = key_prefix
        self.retries = retries
        self.sleep = sleep
        self.stop = threading.Event()
        self.cache = CachedMap(store)

    def action(self, blob_id: str) -> ActionSpec:
        """Fetching blob ``blob_id`` from the bucket, as an action."""
        return ActionSpec("s3", "swh_content", {"bucket": self.bucket, "key_prefix": self.key_prefix}, (blob_id,),
                          outputs=("content",))

    def fetch(self, blob_id: str | None) -> Fetched:
        """The blob from the store if recorded, else from S3 (stored and recorded before returning)."""
        if not blob_id:
            return Fetched("", "missing", detail="the metadata row has no blob_id")
        action = self.action(blob_id)
        record = self.cache.lookup(action)
        if record is not None and record.status == "ok" and "content" in record.outputs:
            return Fetched(blob_id, "held", record.outputs["content"])
        s3_key = f"{self.key_prefix}{blob_id}"
        last = ""
        for attempt in range(self.retries + 1):
            if self.stop.is_set():
                return Fetched(blob_id, "failed", detail=f"stage stopped; last error: {last}")
            if attempt:
                self.sleep(backoff_s(attempt))
            try:
                body = self.client.get_object(Bucket=self.bucket, Key=s3_key)["Body"].read()
            except Exception as exc:
                kind, last = classify(exc), describe(exc)
                if kind == "missing":
                    return Fetched(blob_id, "missing", detail=f"s3://{self.bucket}/{s3_key}: {last}")
                if kind == "fatal":
                    raise FatalFetchError(f"cannot read s3://{self.bucket}/{s3_key}: {last}") from exc
                if kind == "transient":
                    continue
                return Fetched(blob_id, "failed", detail=last)
            return self._keep(blob_id, action, body)
        return Fetched(blob_id, "failed", detail=f"{self.retries + 1} attempts; last error: {last}")

    def _keep(self, blob_id: str, action: ActionSpec, body: bytes) -> Fetched:
        try:
            data = gzip.decompress(body)
        except (OSError, EOFError, zlib.error) as exc:
            return Fetched(blob_id, "corrupt", detail=f"not a gzip stream ({len(body)} bytes): {exc}")
        if not matches_name(blob_id, data):
            return Fetched(blob_id, "corrupt", detail=f"content ({len(data)} bytes) hashes to sha1 "
                           f"{hashlib.sha1(data).hexdigest()}, not to its name")
        record = self.cache.record(action, {"content": data}, stderr=None)
        return Fetched(blob_id, "fetched", record.outputs["content"], len(data), len(body))


def fetch_all(fetcher: BlobFetcher, blob_ids: Iterable[str], total: int, workers: int) -> dict[str, Fetched]:
    """Fetch every blob with ``workers`` threads (a bounded window of them in flight).

    Raises FatalFetchError if the bucket is unusable or ``BREAKER`` blobs in a row fail; what was
    fetched by then is already recorded."""
    results: dict[str, Fetched] = {}
    pending_ids = iter(blob_ids)
    in_flight: set[Future[Fetched]] = set()
    failed_in_a_row = 0
    counts = dict.fromkeys(("fetched", "held", "missing", "corrupt", "failed"), 0)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="swh_fetch") as pool, \
            tqdm(total=total, desc="fetch", unit="blob", disable=None) as bar:
        try:
            while True:
                for blob_id in pending_ids:
                    in_flight.add(pool.submit(fetcher.fetch, blob_id))
                    if len(in_flight) >= 4 * workers:
                        break
                if not in_flight:
                    break
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                for future in done:
                    result = future.result()
                    results[result.blob_id] = result
                    counts[result.status] += 1
                    if result.status == "failed":
                        failed_in_a_row += 1
                        if failed_in_a_row >= BREAKER:
                            raise FatalFetchError(f"{failed_in_a_row} blobs in a row failed after "
                                                  f"{fetcher.retries} retries; last: {result.detail}")
                    elif result.status != "held":
                        failed_in_a_row = 0
                    bar.update()
                bar.set_postfix(counts, refresh=False)
        except BaseException:
            fetcher.stop.set()
            for future in in_flight:
                future.cancel()
            raise
    return results


# -- outputs -------------------------------------------------------------------------------------


def empty_manifest() -> pl.DataFrame:
    return pl.DataFrame(schema=MANIFEST_SCHEMA)


def split_duplicates(rows: pl.DataFrame, out: StageOutput) -> pl.DataFrame:
    """Drop rows whose origin/path an earlier row (smaller blob_id) already has; return the rest."""
    first = pl.col("sample_id").is_first_distinct()
    for row in rows.filter(~first).iter_rows(named=True):
        out.drop(row, "duplicate_path", f"{row['path']} appears again with blob {row['blob_id']}")
    return rows.filter(first)


def assemble(rows: pl.DataFrame, results: dict[str, Fetched], out: StageOutput) -> pl.DataFrame:
    """The manifest of fetched rows; the others are dropped with their reason."""
    kept = []
    for row in rows.iter_rows(named=True):
        result = results[row["blob_id"] or ""]
        if result.ok:
            kept.append({**row, "digest": result.digest})
        else:
            out.drop(row, DROP_REASONS[result.status], f"blob {row['blob_id']}: {result.detail}")
    return pl.DataFrame([{c: r[c] for c in MANIFEST_SCHEMA} for r in kept], schema=MANIFEST_SCHEMA)

