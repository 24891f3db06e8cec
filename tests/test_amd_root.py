"""The AMD root as a content-addressed artifact: trees in the store (store/tree.py), the root's seal and its digest as
the toolchain's identity (toolchains/amd_root.py), and a second setup that pulls the pinned root through DVC instead
of building it, with the same action keys and the same compiler output (cass/toolchain_root.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness.project import REPO, TOOL_ENV, dvc_project, run_in

import store.tree as tree
from cass.engine.actions import ActionRunner, plan
from cass.pipeline.context import load_params
from cass.toolchain_root import set_root_pin
from store import CorruptObjectError, Store, canonical_json
from toolchains import AmdToolchain, ToolchainMissingError, local_executor
from toolchains.amd import DEFAULT_AMD_SUITE
from toolchains.amd_root import SEAL_NAME, read_seal, seal, valid_seal
from toolchains.hip_nvidia import HIP_HEADERS_PACKAGE, fetch, sha256_listed, verified_release


def make_tree(root: Path, order: list[str]) -> None:
    """A small tree, its files written in ``order``: an executable, a read-only folder, a link, an empty folder."""
    files = {"bin/tool": (b"#!/bin/sh\necho hi\n", 0o755), "ro/data.txt": (b"data\n", 0o644),
             "big.bin": (bytes(range(256)) * 40, 0o600)}
    for name in order:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name][0])
        os.chmod(path, files[name][1])
    os.chmod(root / "ro", 0o555)
    (root / "empty").mkdir()
    (root / "link").symlink_to("bin/tool")
    (root / "usr").symlink_to("bin")   # a link to a folder (usrmerge's bin -> usr/bin) is a link, not entered


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(tree, "CHUNK_BYTES", 1000)   # big.bin (10,240 bytes) becomes 11 chunks


def test_a_tree_stores_by_content_and_mode_alone_and_checks_out_the_same(tmp_path, small_chunks):
    store = Store(tmp_path / "store")
    make_tree(tmp_path / "a", ["bin/tool", "ro/data.txt", "big.bin"])
    make_tree(tmp_path / "b", ["big.bin", "ro/data.txt", "bin/tool"])
    os.utime(tmp_path / "b" / "big.bin", (1, 1))
    digest = tree.put_tree(store, tmp_path / "a")
    assert tree.put_tree(store, tmp_path / "b") == digest   # other write order and times: the same tree
    big = next(e for e in tree.manifest(store, digest) if e[0] == "big.bin")
    assert len(big[4]) == 11 and big[2] == 0o600

    tree.check_out(store, digest, tmp_path / "out")
    out = tmp_path / "out"
    assert (out / "big.bin").read_bytes() == (tmp_path / "a" / "big.bin").read_bytes()
    assert os.access(out / "bin" / "tool", os.X_OK) and os.readlink(out / "link") == "bin/tool"
    assert os.readlink(out / "usr") == "bin" and not any(e[0].startswith("usr/") for e in tree.manifest(store, digest))
    assert (out / "ro").stat().st_mode & 0o777 == 0o555 and (out / "empty").is_dir()
    assert tree.put_tree(store, out) == digest
    with pytest.raises(FileExistsError):
        tree.check_out(store, digest, out)

    os.chmod(tmp_path / "b" / "bin" / "tool", 0o644)   # a mode is content
    assert tree.put_tree(store, tmp_path / "b") != digest
    assert tree.put_tree(store, tmp_path / "a", exclude=("big.bin",)) != digest


def test_a_check_out_verifies_every_chunk_and_leaves_nothing_half_written(tmp_path, small_chunks):
    store = Store(tmp_path / "store")
    make_tree(tmp_path / "a", ["bin/tool", "ro/data.txt", "big.bin"])
    digest = tree.put_tree(store, tmp_path / "a")
    chunk = next(e for e in tree.manifest(store, digest) if e[0] == "big.bin")[4][3]
    path = store.root / "objects" / chunk[:2] / chunk[2:]
    good = path.read_bytes()
    path.write_bytes(b"damaged")
    with pytest.raises(CorruptObjectError):
        tree.check_out(store, digest, tmp_path / "out")
    assert not (tmp_path / "out").exists() and (tmp_path / "out.partial").is_dir()
    stale = tmp_path / "out.partial" / "stale"   # as a check-out killed while it set the folders' modes
    stale.mkdir()
    (stale / "file").write_text("left")
    os.chmod(stale, 0o555)
    store.put(good)
    tree.check_out(store, digest, tmp_path / "out")   # the next one replaces the partial tree
    assert tree.put_tree(store, tmp_path / "out") == digest and not (tmp_path / "out.partial").exists()

    with pytest.raises(tree.TreeError, match="not a cass-tree"):
        tree.manifest(store, store.put(b"{}"))
    escaping = store.put(canonical_json({"format": tree.FORMAT, "entries": [["../outside", "d", 0o755]]}))
    with pytest.raises(tree.TreeError, match="outside the tree"):
        tree.check_out(store, escaping, tmp_path / "evil")
    assert not (tmp_path / "outside").exists()


def test_a_pipe_in_a_tree_is_an_error_naming_it(tmp_path):
    (tmp_path / "a").mkdir()
    os.mkfifo(tmp_path / "a" / "fifo")
    with pytest.raises(tree.TreeError, match="fifo"):
        tree.put_tree(Store(tmp_path / "store"), tmp_path / "a")
    assert tree.put_tree(Store(tmp_path / "store"), tmp_path / "a", exclude=("fifo",))


def test_sealing_prunes_what_compiles_never_read_and_a_changed_root_loses_its_seal(tmp_path):
    root = tmp_path / "root"
    kept = ["usr/bin/hipcc", "usr/include/hipblas/hipblas.h", "dev/null-stand-in"]
    pruned = ["var/cache/apt/archives/hipcc.deb", "usr/lib/x86_64-linux-gnu/rocblas/library/kernels.co",
              "usr/lib/x86_64-linux-gnu/librocblas.so.4.4"]
    for name in kept + pruned:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    (root / "var/tmp").mkdir()
    store = Store(tmp_path / "store")
    sealed = seal(store, root, "experimental", "built")
    assert all((root / n).exists() for n in kept) and not any((root / n).exists() for n in pruned)
    assert (root / "var/cache/apt").is_dir()   # the folder stays, its downloads go
    assert [e[0] for e in tree.manifest(store, sealed.root) if e[1] == "f"] == ["usr/bin/hipcc",
                                                                                "usr/include/hipblas/hipblas.h"]
    assert valid_seal(root) == sealed == read_seal(root) and (root / SEAL_NAME).is_file()
    assert AmdToolchain.in_root(root).installation_digest() == sealed.root
    (root / "var/tmp/job.o").write_text("scratch")   # scratch does not break the seal
    (root / "var/cache/apt/archives").mkdir()
    (root / "var/cache/apt/archives/later.deb").write_text("a download after the seal")
    assert seal(store, root, "experimental", "built") == sealed   # a seal that holds: nothing pruned or stored
    assert (root / "var/cache/apt/archives/later.deb").exists()

    header = root / "usr/include/hipblas/hipblas.h"
    before = header.stat()
    header.write_text(header.read_text().upper())   # the same size, the same second
    os.utime(header, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert valid_seal(root) is None and AmdToolchain.in_root(root).installation_digest() is None
    resealed = seal(store, root, "experimental", "built")
    assert resealed.root != sealed.root and valid_seal(root) == resealed


MIRROR = os.environ.get("CASS_DEBIAN_MIRROR", "http://deb.debian.org/debian")


VENV_BIN = Path(sys.executable).parent
SETUP_PATH = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != VENV_BIN)
"""PATH as scripts/setup.sh calls ``.venv/bin/cass``: the environment's own tools are not on it."""


def cass(args: list[str], cwd: Path, root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "cass"), *args], cwd=cwd,
                          env={**TOOL_ENV, "PATH": SETUP_PATH, "CASS_AMD_ROOT": str(root)},
                          capture_output=True, text=True, check=False)


def test_pin_sets_the_suite_and_root_and_keeps_every_other_line(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("amd:\n  toolchain: trixie   # the suite\n  root:\n  archs: [gfx1100]\npair:\n  root: x\n")
    set_root_pin(params, "sid", "ab" * 32)
    assert params.read_text() == (f"amd:\n  toolchain: sid   # the suite\n  root: {'ab' * 32}\n  archs: [gfx1100]\n"
                                  "pair:\n  root: x\n")
    params.write_text("amd:\n  toolchain: sid\n")
    with pytest.raises(ValueError, match=r"amd\.root is missing"):
        set_root_pin(params, "sid", "ab" * 32)


def test_pull_needs_a_pin_and_the_remote_and_never_overwrites_a_root(tmp_path):
    project = dvc_project(tmp_path / "p", tmp_path / "remote")
    shutil.copy(REPO / "amd_root.dvc", project / "amd_root.dvc")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "etc").mkdir()
    params = project / "params.yaml"
    params.write_text(params.read_text().replace("\n  root: ", "\n  root: null  # "))
    refused = cass(["amd-root", "pull"], project, tmp_path / "root")
    assert refused.returncode == 3 and "pins no AMD root" in refused.stderr
    shutil.copy(REPO / "params.yaml", params)
    refused = cass(["amd-root", "pull"], project, tmp_path / "root")
    assert refused.returncode == 3 and "move it away" in refused.stderr
    unpulled = cass(["amd-root", "pull"], project, tmp_path / "new-root")   # the remote lacks the packs
    assert unpulled.returncode == 3 and "dvc pull of the pinned AMD root failed" in unpulled.stderr
    assert "Missing cache files" in unpulled.stderr


@pytest.mark.slow
def test_a_second_setup_pulls_the_pinned_root_and_keys_and_compiles_as_the_first(tmp_path, toolchains):
    amd = toolchains["amd"]
    built = amd.launcher.root
    if valid_seal(built) is None:
        pytest.fail(f"{built} is not sealed: `bash scripts/setup.sh` seals it", pytrace=False)
    remote = tmp_path / "remote"
    first = dvc_project(tmp_path / "first", remote)
    pinned = cass(["amd-root", "pin"], first, built)
    assert pinned.returncode == 0, pinned.stderr
    digest = read_seal(built).root
    assert f"  root: {digest}\n" in (first / "params.yaml").read_text()
    assert sorted(p.name for p in (first / "amd_root").iterdir()) == [*(f"{d:x}.pack" for d in range(16)), "root.json"]
    run_in(["dvc", "push", "-q"], first)
    run_in(["git", "add", "-A"], first)
    run_in(["git", "commit", "-qm", "pin the AMD root"], first)
    shutil.rmtree(first / ".cass")   # only the remote holds the root now
    shutil.rmtree(first / ".dvc" / "cache")
    shutil.rmtree(first / "amd_root")

    second = tmp_path / "second"
    run_in(["git", "clone", "-q", str(first), str(second)], tmp_path)
    pulled_root = tmp_path / "pulled-root"
    pulled = cass(["amd-root", "pull"], second, pulled_root)
    assert pulled.returncode == 0, pulled.stderr
    assert read_seal(pulled_root).origin == "pulled" and valid_seal(pulled_root).root == digest
    assert (pulled_root / "dev" / "null").is_char_device()   # what debootstrap makes and a tree cannot hold
    shutil.rmtree(second / ".cass")
    shutil.rmtree(second / ".dvc" / "cache")

    again = AmdToolchain.in_root(pulled_root)
    assert again.installation_digest() == amd.installation_digest() == digest
    assert {t: again.fingerprint(t) for t in amd.tools()} == {t: amd.fingerprint(t) for t in amd.tools()}
    kernel = b"__global__ void scale(float *x, float a) { x[threadIdx.x] *= a; }\n"
    outputs = []
    for tc in (amd, again):
        store = Store(tmp_path / f"store-{len(outputs)}")
        [device] = [t for t in tc.targets("k.cu", ["gfx1100"], {"common": ["-std=c++17"], "opt": ["-O1"]})
                    if t.kind == "device"]
        action = plan(tc, device.steps[0], {"k.cu": store.put(kernel)})
        outcome = ActionRunner(store, local_executor({"amd": tc}), 300).run([action], desc="hipcc")[action.key]
        assert outcome.ok, store.get_text(outcome.record.stderr)
        outputs.append((action.key, outcome.record.outputs["device.s"]))
    assert outputs[0] == outputs[1]   # the same key, the same assembly


def test_the_default_suite_is_the_one_params_yaml_pins():
    params = load_params(REPO / "params.yaml")["amd"]
    assert params["toolchain"] == DEFAULT_AMD_SUITE and len(params["root"]) == 64


def test_the_hip_headers_come_only_through_debians_signature():
    signed = fetch(f"{MIRROR}/dists/{HIP_HEADERS_PACKAGE[0]}/InRelease")
    release = verified_release(signed, "trixie")
    assert len(sha256_listed(release, "main/binary-amd64/Packages.xz")) == 64
    forged = signed.replace(b"main/binary-amd64/Packages.xz", b"main/binary-amd64/Packages.xy", 1)
    with pytest.raises(ToolchainMissingError, match="no good signature"):
        verified_release(forged, "trixie")
