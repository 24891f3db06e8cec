"""A tree of 1,000 files of mixed junk goes through the whole pipeline: every file is accounted for
(kept in the export or dropped with a reason by exactly one stage) and no stage crashes."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml
from harness.project import REPO, copy_pipeline, metrics, run_in

from cass.dedup.minhash import content_key

pytestmark = pytest.mark.slow

GOOD = ["cryptography/aes128_ctr.cu", "graph/bfs_frontier.cu", "graphics_rendering/mandelbrot_tiles.cu",
        "linear_algebra/conjugate_gradient.cu", "math/newton_sqrt_batch.cu", "physics_simulation/nbody_tiled.cu",
        "sorting_search/radix_sort_lsd.cu", "sparse_computation/csr_spmv.cu", "stencil_pde/heat2d_jacobi_tiled.cu",
        "image_processing/sobel_edge_streams.cu"]
MAX_BYTES = 200_000
STAGES = ("ingest", "filter", "dedup", "hipify", "compile_nvidia", "compile_amd", "pair")

# How many files of each kind the tree holds, and where each kind must end up.
KINDS = {
    "good": 10, "exact_copy": 150, "reformatted_copy": 40, "binary": 150, "control_bytes": 50,
    "empty": 100, "huge": 50, "invalid_utf8": 150, "no_kernel": 150, "too_short": 50, "hello": 50, "stub": 50,
}


def junk_tree(root: Path) -> dict[str, str]:
    """Write the tree; return {relative path: kind}."""
    rng = random.Random(0)
    corpus = REPO / "corpus"
    good = {rel: (corpus / rel).read_text() for rel in GOOD}
    for rel in GOOD:
        folder = (root / rel).parent
        folder.mkdir(parents=True, exist_ok=True)
        for header in (corpus / rel).parent.glob("*.cuh"):
            shutil.copy(header, folder / header.name)
    kinds: dict[str, str] = {}

    def put(kind: str, rel: str, data: bytes) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        kinds[rel] = kind

    for rel, text in good.items():
        put("good", rel, text.encode())
    sources = list(good.items())
    for i in range(KINDS["exact_copy"]):
        rel, text = sources[i % len(sources)]
        put("exact_copy", f"{Path(rel).parent}/copy_{i:03d}.cu", text.encode())
    for i in range(KINDS["reformatted_copy"]):
        rel, text = sources[i % len(sources)]
        reformatted = f"// vendored copy {i}\n" + text.replace("    ", "\t").replace("\n\n", "\n")
        put("reformatted_copy", f"{Path(rel).parent}/vendored_{i:03d}.cu", reformatted.encode())
    for i in range(KINDS["binary"]):
        header = rng.choice([b"\x7fELF\x02\x01\x01\0", b"\x89PNG\r\n\x1a\n", b"PK\x03\x04", b""])
        put("binary", f"junk/binary_{i:03d}.cu", header + rng.randbytes(rng.randint(16, 4096)) + b"\0")
    for i in range(KINDS["control_bytes"]):
        put("control_bytes", f"junk/control_{i:03d}.cu", bytes(rng.choice(range(1, 8)) for _ in range(500)))
    for i in range(KINDS["empty"]):
        put("empty", f"junk/empty_{i:03d}.cu", b"" if i % 2 else b"\n\n  \n")
    filler = "".join(f"__device__ float f{k}(float x) {{ return x * {k}.0f + 1.0f; }}\n" for k in range(4000))
    for i in range(KINDS["huge"]):
        put("huge", f"junk/huge_{i:03d}.cu", (f"// {i}\n" + filler + "__global__ void k(float *x) { x[0] = 1; }\n")
            .encode())
    for i in range(KINDS["invalid_utf8"]):
        rel, text = sources[i % len(sources)]
        put("invalid_utf8", f"junk/latin_{i:03d}.cu", f"// variant {i}\n".encode() + b"// \xff\xfe caf\xe9 \x81\n"
            + text.encode())
    for i in range(KINDS["no_kernel"]):
        body = "\n".join(f"    total += {k} * i;" for k in range(12))
        put("no_kernel", f"host/util_{i:03d}.cu",
            f"#include <cstdio>\nint util{i}(int i) {{\n    int total = 0;\n{body}\n    return total;\n}}\n".encode())
    for i in range(KINDS["too_short"]):
        put("too_short", f"junk/short_{i:03d}.cu", f"__global__ void k{i}(int *a) {{ a[0] = {i}; }}\n".encode())
    for i in range(KINDS["hello"]):
        put("hello", f"junk/hello_{i:03d}.cu", (
            "#include <cstdio>\n__global__ void hello() {\n"
            f'    printf("Hello World from GPU thread %d ({i})\\n", threadIdx.x);\n}}\n'
            "int main() {\n    hello<<<1, 4>>>();\n    cudaDeviceSynchronize();\n"
            "    return 0;\n}\n\n\n\n").encode())
    for i in range(KINDS["stub"]):
        put("stub", f"junk/stub_{i:03d}.cu", ("".join(f"// line {k}\n" for k in range(12))
                                              + f"__global__ void empty{i}(float *x) {{ }}\n").encode())
    assert len(kinds) == 1000
    return kinds


@pytest.fixture(scope="module")
def project(tmp_path_factory, toolchains) -> tuple[Path, dict[str, str]]:
    root = copy_pipeline(tmp_path_factory.mktemp("junk") / "project", with_bundled_corpus=False,
                         hip_nvidia_check=False)
    kinds = junk_tree(root / "corpus")
    params = yaml.safe_load((root / "params.yaml").read_text())
    params["corpus"]["trees"] = [{"path": "corpus", "origin": "junk"}]
    params["filter"]["max_bytes"] = MAX_BYTES
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    run_in(["dvc", "repro", "export"], root)   # the tests read the stages up to the export
    return root, kinds


def test_every_file_is_kept_or_dropped_once_with_a_reason(project):
    root, kinds = project
    previous_kept = len(kinds)
    for stage in STAGES:
        m = metrics(root, stage)
        assert m["in"] == previous_kept, stage
        assert m["in"] == m["kept"] + m["dropped"], stage
        previous_kept = m["kept"]
    drops = pl.concat([pl.read_parquet(root / "data" / s / "dropped.parquet") for s in STAGES[:-1]])
    exported = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
    assert drops.height + exported.height == len(kinds)
    assert sorted(drops["path"].to_list() + exported["path"].to_list()) == sorted(kinds)
    assert drops["reason"].null_count() == 0


def test_each_kind_of_junk_gets_its_reason(project):
    root, kinds = project
    drops = pl.concat([pl.read_parquet(root / "data" / s / "dropped.parquet") for s in STAGES])
    reason = dict(zip(drops["path"], drops["reason"], strict=True))
    expected = {"binary": {"binary"}, "control_bytes": {"binary"}, "huge": {"too_large"},
                "invalid_utf8": {"undecodable"}, "empty": {"too_short"}, "too_short": {"too_short"},
                "no_kernel": {"no_kernel"}, "hello": {"trivial"}, "stub": {"trivial"},
                # one file of each group of copies is the representative (kept, no reason)
                **{key: {None, "exact_duplicate"} for key in ("good", "exact_copy", "reformatted_copy")}}
    for path, kind in kinds.items():
        if kind in expected:
            assert reason.get(path) in expected[kind], (path, kind, reason.get(path))
    ingest = metrics(root, "ingest")["dropped_by_reason"]
    assert ingest == {"binary": 200, "too_large": 50, "undecodable": 150}


def test_one_copy_of_each_good_program_survives_to_the_export(project):
    root, _ = project
    exported = pl.read_parquet(sorted((root / "data" / "export" / "pairs").glob("*.parquet")))
    good = {content_key((REPO / "corpus" / rel).read_text()) for rel in GOOD}
    assert exported.height == len(GOOD)
    assert {content_key(text) for text in exported["cuda_source"]} == good
    assert all(exported["hip_device_asm_gfx1100"].str.contains("s_endpgm"))
