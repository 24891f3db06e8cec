"""Ingest of local trees: include directories, byte screening, encodings, domain labels."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stages.common import StageOutput
from stages.domains import DomainLabeler
from stages.includes import TreeIndex, resolve_includes
from stages.ingest import Ingest
from stages.screen import Rejected, screen
from store import Store

SCREEN = {"max_bytes": 1000, "decode_fallbacks": []}
KERNEL = "__global__ void k(float *x) { x[threadIdx.x] *= 2.0f; }\n"


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return root


def includes_of(root: Path, main: str):
    return resolve_includes(TreeIndex.scan(root), main)


def test_a_sibling_header_wins_over_a_same_named_one_elsewhere(tmp_path):
    write(tmp_path, {"blas/config.h": "#define BLAS\n", "fft/config.h": "#define FFT\n",
                     "config.h": "#define ROOT\n", "blas/gemm.cu": '#include "config.h"\n' + KERNEL})
    found = includes_of(tmp_path, "blas/gemm.cu")
    assert found.headers == ["blas/config.h"]
    assert found.include_dirs == ["."] and found.conflicts == []


def test_angle_includes_of_project_headers_get_their_folder_transitively(tmp_path):
    write(tmp_path, {"include/ltk/check.cuh": '#include "detail/impl.h"\n', "include/ltk/detail/impl.h": "\n",
                     "src/common/math.cuh": "#include <ltk/check.cuh>\n",
                     "src/k.cu": '#include "src/common/math.cuh"\n#include <cublas_v2.h>\n#include "gone.h"\n'})
    found = includes_of(tmp_path, "src/k.cu")
    assert found.headers == ["include/ltk/check.cuh", "include/ltk/detail/impl.h", "src/common/math.cuh"]
    assert found.include_dirs == [".", "include"]      # in order of need; cublas_v2.h is a library header
    assert found.unresolved == ["gone.h"]


def test_the_nearest_folder_is_chosen_and_earlier_choices_are_never_shadowed(tmp_path):
    write(tmp_path, {"a/inc/util.h": "// a\n", "b/inc/util.h": "// b\n", "a/x/k.cu": "#include <util.h>\n",
                     "cfg.h": "// root\n", "lib/cfg.h": "// lib\n", "lib/only.h": "\n",
                     "app/k.cu": "#include <cfg.h>\n#include <only.h>\n"})
    assert includes_of(tmp_path, "a/x/k.cu").include_dirs == ["a/inc", "."]
    found = includes_of(tmp_path, "app/k.cu")
    assert found.headers == ["cfg.h", "lib/only.h"]
    assert found.include_dirs == [".", "lib"] and found.conflicts == []   # lib/cfg.h must not win


def test_a_symlink_out_of_the_tree_is_not_followed(tmp_path):
    outside = write(tmp_path / "outside", {"secret.h": "#define SECRET 1\n", "k.cu": KERNEL})
    tree = write(tmp_path / "tree", {"k.cu": '#include "secret.h"\n' + KERNEL})
    os.symlink(outside / "secret.h", tree / "secret.h")
    os.symlink(outside / "k.cu", tree / "linked.cu")
    index = TreeIndex.scan(tree)
    assert index.outside_links == {"secret.h", "linked.cu"}
    assert resolve_includes(index, "k.cu").unresolved == ["secret.h"]
    out = StageOutput("ingest")
    ingest = Ingest(Store(tmp_path / "store"), {"filter": SCREEN, "domains": {
        "keywords_file": "stages/domain_keywords.yaml"}}, out)
    ingest.tree(tree, "t", [".cu"])
    assert [r["path"] for r in ingest.rows] == ["k.cu"]
    assert [(d["path"], d["reason"]) for d in out.dropped] == [("linked.cu", "symlink_outside")]


@pytest.mark.parametrize(("data", "reason"), [
    (b"\x7fELF\x02\x01\x01\0\0\0", "binary"),
    (bytes(range(1, 32)) * 4, "binary"),
    (b"x" * 1001, "too_large"),
    (b"// caf\xe9 \x81\n" + KERNEL.encode(), "undecodable"),
])
def test_screen_rejects_with_a_reason(data, reason):
    with pytest.raises(Rejected) as info:
        screen(data, "f.cu", SCREEN)
    assert info.value.reason == reason and "f.cu" in str(info.value)


def test_non_utf8_text_is_decoded_by_its_declared_encoding_or_a_fallback():
    latin = "// auteur: François\n".encode("latin-1") + KERNEL.encode()
    assert screen(latin, "f.cu", SCREEN, declared="ISO-8859-1").data.decode().startswith("// auteur: François")
    assert screen(latin, "f.cu", {**SCREEN, "decode_fallbacks": ["cp1252"]}).encoding == "cp1252"
    assert screen(b"\xef\xbb\xbf" + KERNEL.encode(), "f.cu", SCREEN).data == KERNEL.encode()


def test_a_sample_whose_header_fails_screening_is_dropped_naming_the_header(tmp_path):
    tree = write(tmp_path / "d", {"k.cu": '#include "h.cuh"\n' + KERNEL, "h.cuh": b"// Fran\xe7ois\n",
                                  "ok.cu": KERNEL})
    out = StageOutput("ingest")
    ingest = Ingest(Store(tmp_path / "store"), {"filter": SCREEN, "domains": {
        "keywords_file": "stages/domain_keywords.yaml"}}, out)
    ingest.tree(tree, "t", [".cu"])
    assert [r["path"] for r in ingest.rows] == ["ok.cu"]
    assert out.dropped[0]["reason"] == "undecodable" and "h.cuh" in out.dropped[0]["detail"]
    assert out.rows_in == 2


def test_domain_labels_follow_keyword_counts():
    labeler = DomainLabeler.load(Path("stages/domain_keywords.yaml"))
    assert labeler.label("__global__ void reluForward(float *activations, float *gradients)") == \
        "machine learning"
    assert labeler.label("void sha256_transform(uint32_t *digest) { encrypt(); }") == "cryptography"
    assert labeler.label("__global__ void k(int *a) { a[0] = 1; }") == "general compute"
