"""Stage fetch_stack against local stand-ins of the real services, run as `python -m stages.fetch_stack`.

* S3: a moto server (``ThreadedMotoServer`` on 127.0.0.1) holding gzip blobs under
  ``softwareheritage/content/<blob_id>``, uploaded with boto3. The stage reaches it through a small
  HTTP proxy that passes requests on unchanged unless a test asks it to answer with an S3 error
  (503 SlowDown, 500 InternalError) or to hold a request; it also counts the
  requests per blob, which shows what was (not) downloaded again.
* The Hub: Stack v2 metadata with the full schema, as Parquet in ``<tmp>/stackv2/data/Cuda/``,
  read by the stage through ``datasets.load_dataset`` (offline).
"""

from __future__ import annotations

import gzip
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO
from stack_v2_standin import git_sha1, meta_row, s3_admin, sha1, start_moto, write_metadata

from cass.pipeline.manifests import sample_id
from cass.sources.stack_v2 import MANIFEST_SCHEMA, REPOS_SCHEMA
from store import Store

BUCKET = "softwareheritage"
PRIVATE_BUCKET = "swh-private"
"""The same objects, not public: moto refuses unsigned reads of them (403 AccessDenied), as S3 does."""
PREFIX = "content/"


def kernel(name: str, body: str = "y[i] = a * x[i] + y[i];") -> bytes:
    return (f"#include <cuda_runtime.h>\n\n__global__ void {name}(float a, const float *x, float *y, int n) {{\n"
            f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {body}\n}}\n").encode()


REV = {k: k * 40 for k in "abcdef"}
"""Fake commit ids: REV["a"] == "aaaa...a"."""

LATIN1 = "// Übergabe der Größe\n".encode("latin-1") + kernel("groesse")
CL_KERNEL = (b"__kernel void vadd(__global const float *a, __global const float *b, __global float *c) {\n"
             b"    size_t i = get_global_id(0);\n    c[i] = a[i] + b[i];\n}\n")
GOOD = [
    # alice/kernels: 3 files, revisions a, a, b -> most common a; stars max 12
    meta_row("alice/kernels", "/src/saxpy.cu", kernel("saxpy"), REV["a"], stars=12),
    meta_row("alice/kernels", "/src/scale.cu", kernel("scale", "y[i] *= a;"), REV["a"], stars=12),
    meta_row("alice/kernels", "/old/scale.cu", kernel("old_scale", "y[i] *= 2 * a;"), REV["b"], stars=11,
             licenses=()),
    # bob/gemm: 2 files at two revisions (a tie) -> the smaller one, c
    meta_row("bob/gemm", "/gemm.cu", kernel("gemm", "y[i] += a * x[i] * x[i];"), REV["d"], stars=None),
    meta_row("bob/gemm", "/sub/dir/gemm_tiled.cu", LATIN1, REV["c"], stars=5, encoding="ISO-8859-1"),
    # dave/fft: a blob named by its git SHA-1 rather than its SHA-1
    meta_row("dave/fft", "/fft.cu", kernel("fft", "y[i] = -x[i];"), REV["e"], stars=1,
             blob_id=git_sha1(kernel("fft", "y[i] = -x[i];"))),
]
MISSING = meta_row("carol/broken", "/missing.cu", kernel("never_uploaded"), REV["f"])
NOT_GZIP = meta_row("carol/broken", "/plain.cu", kernel("plain"), REV["f"])
WRONG = meta_row("carol/broken", "/wrong.cu", kernel("expected"), REV["f"])
OPENCL = meta_row("erin/cl", "/kernels/vadd.cl", CL_KERNEL, REV["a"])
UPLOADS = {  # blob_id -> stored object
    **{row["blob_id"]: None for row in GOOD},
    OPENCL["blob_id"]: gzip.compress(CL_KERNEL, mtime=0),          # in the OpenCL subset
    NOT_GZIP["blob_id"]: kernel("plain"),                          # stored without gzip
    WRONG["blob_id"]: gzip.compress(kernel("something else")),     # gzip, but not the named content
}
CONTENT = {row["blob_id"]: c for row, c in zip(GOOD, [
    kernel("saxpy"), kernel("scale", "y[i] *= a;"), kernel("old_scale", "y[i] *= 2 * a;"),
    kernel("gemm", "y[i] += a * x[i] * x[i];"), LATIN1, kernel("fft", "y[i] = -x[i];")], strict=True)}


# -- stand-ins -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def moto_url():
    server, url = start_moto()
    s3 = s3_admin(url)
    for bucket, acl in ((BUCKET, "public-read"), (PRIVATE_BUCKET, "private")):
        s3.create_bucket(Bucket=bucket)
        for blob_id, stored in UPLOADS.items():
            body = gzip.compress(CONTENT[blob_id], mtime=0) if stored is None else stored
            s3.put_object(Bucket=bucket, Key=f"{PREFIX}{blob_id}", Body=body, ACL=acl)
    yield url
    server.stop()


class FaultProxy(ThreadingHTTPServer):
    """Passes GETs on to moto, except the faults queued per blob id; counts requests per blob id."""

    daemon_threads = True

    def __init__(self, upstream: str):
        super().__init__(("127.0.0.1", 0), _ProxyHandler)
        self.upstream = upstream.removeprefix("http://")
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.faults: dict[str, list] = {}
        self.requests: Counter[str] = Counter()
        self.release = threading.Event()

    def next_fault(self, blob_id: str) -> tuple | None:
        with self.lock:
            self.requests[blob_id] += 1
            queue = self.faults.get(blob_id)
            return queue.pop(0) if queue else None

    def handle_error(self, request, client_address) -> None:
        pass  # a client killed mid-request (the kill -9 test) is expected


class _ProxyHandler(BaseHTTPRequestHandler):
    server: FaultProxy

    def do_GET(self) -> None:
        fault = self.server.next_fault(self.path.split("?")[0].rsplit("/", 1)[-1])
        if fault and fault[0] == "hold":
            self.server.release.wait(30)
        elif fault:
            _, status, code = fault
            body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                    f"<Message>injected by the test proxy</Message><RequestId>t</RequestId></Error>").encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        conn = http.client.HTTPConnection(self.server.upstream, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
        conn.request("GET", self.path, headers=headers)
        response = conn.getresponse()
        body = response.read()
        self.send_response(response.status)
        for name, value in response.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        conn.close()

    def log_message(self, format, *args) -> None:
        pass


@pytest.fixture(scope="module")
def proxy_server(moto_url):
    server = FaultProxy(moto_url)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()


@pytest.fixture
def proxy(proxy_server) -> FaultProxy:
    proxy_server.release.set()
    proxy_server.reset()
    return proxy_server


# -- running the stage -----------------------------------------------------------------------------


class Project:
    """A scratch project directory with this pipeline's dvc.yaml, its params.yaml (the Stack v2 block
    pointed at the stand-ins), the metadata and a store."""

    def __init__(self, root: Path, proxy: FaultProxy, rows: list[dict]):
        self.root = root
        self.proxy = proxy
        self.dataset = root / "stackv2"
        write_metadata(self.dataset, rows)
        (root / "dvc.yaml").write_text((REPO / "dvc.yaml").read_text())
        self.params(enabled=True)

    def params(self, **stack_v2) -> None:
        params = yaml.safe_load((REPO / "params.yaml").read_text())
        params["store"]["dir"] = ".cass/store"
        params["stack_v2"].update({"enabled": True, "dataset": str(self.dataset), "data_dirs": ["data/Cuda"],
                                   "split": "train", "limit": 0, "bucket": BUCKET, "key_prefix": PREFIX,
                                   "endpoint_url": None, "workers": 4, "retries": 2, "timeout_s": 10, **stack_v2})
        (self.root / "params.yaml").write_text(yaml.safe_dump(params))

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CASS_", "HF_"))}
        host, port = self.proxy.server_address[:2]
        env.update({
            "PYTHONPATH": str(REPO), "CASS_S3_ENDPOINT": f"http://{host}:{port}",
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": str(self.root / "no-aws-config"),
            "AWS_SHARED_CREDENTIALS_FILE": str(self.root / "no-aws-credentials"),
            "HF_HOME": str(self.root / "hf"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        })
        env.update(extra)
        return {k: v for k, v in env.items() if v is not None}

    def start(self, **env: str) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "stages.fetch_stack"], cwd=self.root, env=self.env(**env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, expect_ok: bool = True, **env: str) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "stages.fetch_stack"], cwd=self.root, env=self.env(**env),
                              capture_output=True, text=True, timeout=120)
        if expect_ok and proc.returncode:
            pytest.fail(f"fetch_stack failed ({proc.returncode}):\n{proc.stderr[-3000:]}", pytrace=False)
        return proc

    def metrics(self) -> dict:
        return json.loads((self.root / "metrics" / "fetch_stack.json").read_text())

    def fetched(self) -> dict:
        """What the last run downloaded and found in the store (its run report, not in the metrics)."""
        report = json.loads((self.root / "metrics" / "run" / "fetch_stack.json").read_text())
        return {k: report[k] for k in ("fetched", "already_held", "bytes_fetched", "bytes_downloaded")}

    def table(self, name: str = "manifest") -> pl.DataFrame:
        return pl.read_parquet(self.root / "data" / "fetch_stack" / f"{name}.parquet")

    def dropped(self) -> dict[str, str]:
        df = self.table("dropped")
        return dict(zip(df["path"], df["reason"], strict=True))

    def store(self) -> Store:
        return Store(self.root / ".cass" / "store")

    def recorded(self) -> int:
        return self.store().stats().actions


@pytest.fixture
def make_project(tmp_path, proxy):
    def make(rows: list[dict], name: str = "project") -> Project:
        root = tmp_path / name
        root.mkdir()
        return Project(root, proxy, rows)
    return make


def good_ids() -> list[str]:
    return [row["blob_id"] for row in GOOD]


# -- tests -----------------------------------------------------------------------------------------


def test_contents_and_provenance_arrive_bad_blobs_are_dropped_and_a_rerun_fetches_nothing(make_project, proxy):
    project = make_project([*GOOD, MISSING, NOT_GZIP, WRONG])
    project.run()

    manifest = project.table()
    assert manifest.schema == pl.Schema(MANIFEST_SCHEMA)
    assert sorted(manifest["blob_id"]) == sorted(good_ids())
    store = project.store()
    for row in manifest.iter_rows(named=True):
        assert store.get(row["digest"]) == CONTENT[row["blob_id"]]  # exact bytes, gunzipped, not re-encoded
    saxpy = manifest.row(by_predicate=pl.col("repo_path") == "src/saxpy.cu", named=True)
    assert saxpy == {
        "sample_id": sample_id("stack_v2", "alice/kernels/src/saxpy.cu"), "origin": "stack_v2",
        "path": "alice/kernels/src/saxpy.cu", "domain": None, "repo_name": "alice/kernels",
        "repo_path": "src/saxpy.cu", "blob_id": sha1(kernel("saxpy")), "revision_id": REV["a"],
        "detected_licenses": ["MIT"], "license_type": "permissive", "star_events_count": 12,
        "src_encoding": "UTF-8", "length_bytes": len(kernel("saxpy")), "digest": saxpy["digest"],
    }
    gemm = manifest.filter(pl.col("repo_name") == "bob/gemm").sort("repo_path")
    assert gemm["star_events_count"].to_list() == [None, 5]
    assert gemm["src_encoding"].to_list() == ["UTF-8", "ISO-8859-1"]
    assert manifest.filter(pl.col("repo_path") == "old/scale.cu")["detected_licenses"].to_list() == [[]]

    assert project.dropped() == {"carol/broken/missing.cu": "blob_missing", "carol/broken/plain.cu": "blob_corrupt",
                                 "carol/broken/wrong.cu": "blob_corrupt"}
    details = dict(zip(project.table("dropped")["path"], project.table("dropped")["detail"], strict=True))
    assert "NoSuchKey" in details["carol/broken/missing.cu"]
    assert "not a gzip stream" in details["carol/broken/plain.cu"]
    assert "not to its name" in details["carol/broken/wrong.cu"]
    metrics = project.metrics()
    assert metrics == {"in": 9, "kept": 6, "dropped": 3, "dropped_by_reason": {"blob_corrupt": 2, "blob_missing": 1},
                       "limit": 0}
    assert project.fetched() == {
        "fetched": 6, "already_held": 0, "bytes_fetched": sum(len(c) for c in CONTENT.values()),
        "bytes_downloaded": sum(len(gzip.compress(c, mtime=0)) for c in CONTENT.values()),
    }
    assert project.table("actions").height == 6  # the records of kept blobs, which gc must keep

    repos = project.table("repos")
    assert repos.schema == pl.Schema(REPOS_SCHEMA)
    assert repos.rows() == [
        ("alice/kernels", 3, REV["a"], 12),  # most files first; most common revision; most stars
        ("carol/broken", 3, REV["f"], 3),    # same count: by name; counted over all metadata rows
        ("bob/gemm", 2, REV["c"], 5),        # revisions c and d once each: the smaller one
        ("dave/fft", 1, REV["e"], 1),
    ]

    first_manifest = (project.root / "data/fetch_stack/manifest.parquet").read_bytes()
    project.run()
    assert project.fetched()["fetched"] == 0
    assert project.fetched()["already_held"] == 6
    assert project.dropped() == {"carol/broken/missing.cu": "blob_missing", "carol/broken/plain.cu": "blob_corrupt",
                                 "carol/broken/wrong.cu": "blob_corrupt"}
    assert (project.root / "data/fetch_stack/manifest.parquet").read_bytes() == first_manifest
    # good blobs were downloaded once; failures are not cached, so they were asked for again
    assert {b: proxy.requests[b] for b in good_ids()} == dict.fromkeys(good_ids(), 1)
    assert [proxy.requests[r["blob_id"]] for r in (MISSING, NOT_GZIP, WRONG)] == [2, 2, 2]


def test_limit_takes_the_first_rows_by_blob_id_and_the_full_run_fetches_only_the_rest(make_project, proxy):
    project = make_project(GOOD)
    project.params(limit=3)
    project.run()
    first = sorted(good_ids())[:3]
    assert sorted(project.table()["blob_id"]) == first
    assert project.metrics()["in"] == 3
    assert project.metrics()["limit"] == 3
    assert project.fetched()["fetched"] == 3
    assert project.table("repos")["cuda_files"].sum() == len(GOOD)  # repos: the whole metadata

    project.params(limit=0)
    project.run(CASS_S3_SIGNED="1")  # signed with the (moto) credentials this time: same objects
    metrics, fetched = project.metrics(), project.fetched()
    assert (metrics["in"], metrics["kept"], fetched["fetched"], fetched["already_held"]) == (6, 6, 3, 3)
    assert dict(proxy.requests) == dict.fromkeys(good_ids(), 1)


def test_the_opencl_subset_comes_with_the_cuda_one_when_named(make_project, proxy):
    project = make_project(GOOD)
    write_metadata(project.dataset, [OPENCL], subset="OpenCL")
    project.run()
    assert sorted(project.table()["blob_id"]) == sorted(good_ids())   # data/Cuda alone by default
    project.params(data_dirs=["data/Cuda", "data/OpenCL"])
    project.run()
    manifest = project.table()
    assert sorted(manifest["blob_id"]) == sorted([*good_ids(), OPENCL["blob_id"]])
    row = manifest.row(by_predicate=pl.col("blob_id") == OPENCL["blob_id"], named=True)
    assert row["path"] == "erin/cl/kernels/vadd.cl" and project.store().get(row["digest"]) == CL_KERNEL
    assert project.fetched()["fetched"] == 1 and project.fetched()["already_held"] == len(GOOD)


def test_a_run_killed_mid_download_loses_nothing_it_fetched(make_project, proxy):
    project = make_project(GOOD)
    held_back = sorted(good_ids())[1:3]
    proxy.release.clear()
    for blob_id in held_back:
        proxy.faults[blob_id] = [("hold",)]
    proc = project.start()
    deadline = time.monotonic() + 30
    while project.recorded() < len(GOOD) - len(held_back):
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "the stage did not fetch the other blobs"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert not (project.root / "data/fetch_stack/manifest.parquet").exists()
    proxy.release.set()

    project.run()
    metrics, fetched = project.metrics(), project.fetched()
    assert (metrics["kept"], fetched["fetched"], fetched["already_held"]) == (6, 2, 4)
    store = project.store()
    assert {r["blob_id"]: store.get(r["digest"]) for r in project.table().iter_rows(named=True)} == CONTENT
    assert {b: proxy.requests[b] for b in good_ids()} == {b: 2 if b in held_back else 1 for b in good_ids()}


def test_transient_errors_are_retried_with_backoff_and_then_dropped_uncached(make_project, proxy):
    project = make_project(GOOD)
    flaky, down = sorted(good_ids())[:2]
    proxy.faults[flaky] = [("error", 503, "SlowDown"), ("error", 503, "SlowDown")]
    proxy.faults[down] = [("error", 500, "InternalError")] * 10
    started = time.monotonic()
    project.run()
    assert time.monotonic() - started > 0.25 + 0.5  # two backoffs (0.25-0.5 s, 0.5-1 s) before the 3rd try
    assert proxy.requests[flaky] == 3 and proxy.requests[down] == 3  # retries: 2 -> 3 attempts, none hidden
    dropped = project.table("dropped")
    assert dropped["reason"].to_list() == ["fetch_failed"]
    assert dropped["detail"][0].startswith(f"blob {down}: 3 attempts; last error: InternalError (HTTP 500)")
    assert project.fetched()["fetched"] == 5

    proxy.faults.clear()
    project.run()  # the service recovered: only the failed blob is fetched
    metrics, fetched = project.metrics(), project.fetched()
    assert (metrics["kept"], metrics["dropped"], fetched["fetched"], fetched["already_held"]) == (6, 0, 1, 5)
    assert proxy.requests[down] == 4


def test_disabled_writes_empty_outputs_and_touches_nothing(make_project, proxy):
    project = make_project(GOOD)
    project.params(enabled=False, dataset=str(project.root / "absent"))
    project.run()
    assert project.table().schema == pl.Schema(MANIFEST_SCHEMA) and project.table().height == 0
    assert project.table("repos").schema == pl.Schema(REPOS_SCHEMA) and project.table("repos").height == 0
    assert project.metrics() == {"in": 0, "kept": 0, "dropped": 0, "dropped_by_reason": {}, "limit": 0}
    assert project.fetched() == {"fetched": 0, "already_held": 0, "bytes_fetched": 0, "bytes_downloaded": 0}
    assert not (project.root / ".cass").exists()
    assert not proxy.requests


@pytest.mark.parametrize("case", ["access_denied", "no_bucket", "no_dataset", "subsets_not_a_list", "no_credentials"])
def test_what_makes_the_stage_impossible_stops_it_with_a_message(make_project, proxy, case):
    project = make_project(GOOD)
    env: dict = {}
    if case == "access_denied":
        project.params(bucket=PRIVATE_BUCKET)
        expected = [f"s3://{PRIVATE_BUCKET}/content/", "(HTTP 403)"]
    elif case == "no_bucket":
        project.params(bucket="no-such-bucket")
        expected = ["s3://no-such-bucket/content/", "NoSuchBucket"]
    elif case == "no_dataset":
        project.params(dataset=str(project.root / "absent"))
        expected = [f"dataset {str(project.root / 'absent')!r}"]
    elif case == "subsets_not_a_list":
        project.params(data_dirs="data/Cuda")
        expected = ["stack_v2.data_dirs is 'data/Cuda'", "[data/Cuda, data/OpenCL]"]
    else:
        env = {"CASS_S3_SIGNED": "1", "AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None}
        expected = ["no AWS credentials", "s3://softwareheritage/content/"]
    proc = project.run(expect_ok=False, **env)
    message = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 1
    assert message.startswith("fetch_stack: ")
    for part in expected:
        assert part in message
    assert "Traceback" not in proc.stderr
    assert not (project.root / "data/fetch_stack/manifest.parquet").exists()


# -- pieces, in-process ----------------------------------------------------------------------------


def test_metadata_without_optional_columns_and_with_duplicate_paths():
    from cass.pipeline.manifests import StageOutput
    from cass.sources.stack_v2 import normalize_metadata, select_rows, split_duplicates

    meta = normalize_metadata(pl.DataFrame({
        "blob_id": ["b" * 40, "a" * 40, "c" * 40], "repo_name": ["r/x", "r/x", "r/y"],
        "path": ["/k.cu", "k.cu", "/k.cu"], "star_events_count": pl.Series([1, 2, 3], dtype=pl.Int32),
    }))
    assert meta.schema["revision_id"] == pl.String and meta.schema["detected_licenses"] == pl.List(pl.String)
    assert meta.schema["star_events_count"] == pl.Int64 and meta["length_bytes"].null_count() == 3
    out = StageOutput("fetch_stack")
    rows = split_duplicates(select_rows(meta, 0), out)
    assert rows["blob_id"].to_list() == ["a" * 40, "c" * 40]  # r/x/k.cu twice: the smaller blob_id stays
    assert [(d["path"], d["reason"]) for d in out.dropped] == [("r/x/k.cu", "duplicate_path")]


def test_errors_are_classified_by_what_a_retry_could_change():
    from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

    from cass.sources.stack_v2 import classify

    def client_error(code: str, status: int) -> ClientError:
        return ClientError({"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
                           "GetObject")

    assert classify(client_error("NoSuchKey", 404)) == "missing"
    for code, status in [("SlowDown", 503), ("InternalError", 500), ("RequestTimeout", 400), ("Whatever", 502)]:
        assert classify(client_error(code, status)) == "transient", code
    for code, status in [("NoSuchBucket", 404), ("AccessDenied", 403), ("InvalidAccessKeyId", 403)]:
        assert classify(client_error(code, status)) == "fatal", code
    assert classify(client_error("InvalidArgument", 400)) == "failed"
    assert classify(EndpointConnectionError(endpoint_url="http://x")) == "transient"
    assert classify(ReadTimeoutError(endpoint_url="http://x")) == "transient"


def test_a_service_that_keeps_failing_stops_the_stage_and_records_nothing(tmp_path):
    from botocore.exceptions import EndpointConnectionError

    from cass.sources.stack_v2 import BREAKER, BlobFetcher, FatalFetchError, fetch_all

    class DownClient:
        calls = 0

        def get_object(self, **kwargs):
            DownClient.calls += 1
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:9")

    store = Store(tmp_path / "store")
    fetcher = BlobFetcher(store, DownClient(), BUCKET, PREFIX, retries=1, sleep=lambda s: None)
    ids = [f"{i:040x}" for i in range(3 * BREAKER)]
    with pytest.raises(FatalFetchError, match=f"{BREAKER} blobs in a row failed after 1 retries"):
        fetch_all(fetcher, ids, len(ids), workers=4)
    assert DownClient.calls < 2 * (BREAKER + 4 * 4 + 4)  # stopped early: not every blob was tried
    assert not list(store.iter_actions())
