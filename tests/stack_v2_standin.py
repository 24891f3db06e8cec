"""Local stand-ins for The Stack v2: metadata with the real schema as Parquet (read through
``datasets.load_dataset`` like the Hub's files) and a moto S3 server holding gzip blobs."""

from __future__ import annotations

import gzip
import hashlib
import logging
import socket
from datetime import datetime
from pathlib import Path

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
from moto.server import ThreadedMotoServer


def sha1(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()


def git_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def meta_row(repo: str, path: str, content: bytes, revision: str, stars: int | None = 3,
             blob_id: str | None = None, encoding: str = "UTF-8", licenses: tuple[str, ...] = ("MIT",)) -> dict:
    """One Stack v2 metadata row (every column of the real schema)."""
    when = datetime(2023, 9, 6, 12, 0, 0)
    extension = path.rsplit(".", 1)[-1]
    language = "OpenCL" if extension == "cl" else "Cuda"
    return {
        "blob_id": blob_id or sha1(content), "directory_id": sha1(repo.encode() + b"/dir"), "path": path,
        "content_id": git_sha1(content), "detected_licenses": list(licenses),
        "license_type": "permissive" if licenses else "no_license", "repo_name": repo,
        "snapshot_id": sha1(repo.encode() + b"/snp"), "revision_id": revision, "branch_name": "refs/heads/main",
        "visit_date": when, "revision_date": when, "committer_date": when, "github_id": 1000 + len(repo),
        "star_events_count": stars, "fork_events_count": 1, "gha_license_id": None, "gha_event_created_at": None,
        "gha_created_at": when, "gha_language": language, "src_encoding": encoding, "language": language,
        "is_vendor": False, "is_generated": False, "length_bytes": len(content), "extension": extension,
    }


STACK_V2_SCHEMA = pa.schema([
    ("blob_id", pa.string()), ("directory_id", pa.string()), ("path", pa.string()), ("content_id", pa.string()),
    ("detected_licenses", pa.list_(pa.string())), ("license_type", pa.string()), ("repo_name", pa.string()),
    ("snapshot_id", pa.string()), ("revision_id", pa.string()), ("branch_name", pa.string()),
    ("visit_date", pa.timestamp("ns")), ("revision_date", pa.timestamp("ns")), ("committer_date", pa.timestamp("ns")),
    ("github_id", pa.int64()), ("star_events_count", pa.int64()), ("fork_events_count", pa.int64()),
    ("gha_license_id", pa.string()), ("gha_event_created_at", pa.timestamp("ns")),
    ("gha_created_at", pa.timestamp("ns")), ("gha_language", pa.string()), ("src_encoding", pa.string()),
    ("language", pa.string()), ("is_vendor", pa.bool_()), ("is_generated", pa.bool_()),
    ("length_bytes", pa.int64()), ("extension", pa.string()),
])

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_moto() -> tuple[ThreadedMotoServer, str]:
    """A moto S3 server on 127.0.0.1 (stop it with ``.stop()``) and its URL."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)   # one log line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def s3_admin(url: str):
    """A signed boto3 client of the moto server (to create buckets and upload)."""
    return boto3.client("s3", endpoint_url=url, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def upload_blobs(url: str, bucket: str, prefix: str, contents: dict[str, bytes]) -> None:
    """A public bucket holding each content gzip-compressed under ``<prefix><blob_id>``."""
    s3 = s3_admin(url)
    s3.create_bucket(Bucket=bucket)
    for blob_id, data in contents.items():
        s3.put_object(Bucket=bucket, Key=f"{prefix}{blob_id}", Body=gzip.compress(data, mtime=0), ACL="public-read")


def write_metadata(dataset: Path, rows: list[dict], subset: str = "Cuda") -> None:
    """The metadata rows as the data file of one of the dataset's subsets (``<dataset>/data/<subset>/train-...``)."""
    data = dataset / "data" / subset
    data.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=STACK_V2_SCHEMA), data / "train-00000-of-00001.parquet")
