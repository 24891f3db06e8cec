"""The AMD root as a content-addressed artifact: sealed into the store as a tree, its digest the toolchain's identity.

``scripts/setup.sh`` builds a root from Debian, or checks one out of the store after `dvc pull` brought its packs.
Either way the root is *sealed*: what a compile never reads is pruned (:data:`PRUNED`: apt's downloads, the
rocBLAS, rocSPARSE, rocSOLVER and hipBLASLt runtime kernels, which only a program linking those libraries loads),
the rest is stored as a tree (:mod:`store.tree`), and ``.cass-root.json`` in the root records the tree's digest, the
suite, where the root came from and a listing digest of its files. While the listing is unchanged, the tree's
digest is the AMD toolchain's identity in every action key (:meth:`AmdToolchain.installation_digest`); a root
changed after its seal (a package installed into it) falls back to per-tool fingerprints until sealed again.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from store.cas import Store
from store.tree import listing_digest, put_tree, tree_blobs

SEAL_NAME = ".cass-root.json"

SKIPPED = ("dev/*", "proc/*", "sys/*", "run/*", "tmp/*", "var/tmp/*", "var/log/*", f"{SEAL_NAME}*",
           "etc/hostname", "etc/hosts", "etc/resolv.conf", "etc/shadow*", "etc/gshadow*", "var/cache/ldconfig/*",
           "var/lib/dpkg/*-old", "var/cache/debconf/*-old")
"""Kept out of the stored tree, left in the root: mount points' contents (the folders stay, as mount points),
scratch, logs, the seal itself, what debootstrap copies from the building machine (its host name and name
servers), password dates, and caches and backups that record when they were written."""

_LIBS = "usr/lib/x86_64-linux-gnu"
DEVICES = {"null": (1, 3), "zero": (1, 5), "full": (1, 7), "random": (1, 8), "urandom": (1, 9), "tty": (5, 0)}
"""The device files debootstrap makes in ``dev/`` (major, minor): a tree holds none, so a check-out makes them, for
the modes that enter the root without mounting ``/dev`` (unshare, chroot)."""

PRUNED = ("var/cache/apt/*", "var/lib/apt/lists/*", f"{_LIBS}/rocblas", f"{_LIBS}/hipblaslt",
          f"{_LIBS}/librocblas.so*", f"{_LIBS}/librocsparse.so*", f"{_LIBS}/librocsolver.so*",
          f"{_LIBS}/libhipblaslt.so*")
"""Removed from the root when it is sealed: apt's downloads and package lists, and the runtime libraries with
their GPU kernels of rocBLAS, rocSPARSE, rocSOLVER and hipBLASLt (sizes per suite: bench/RESULTS.md, "The AMD root as
an artifact"). Compiles read their headers, never these; the pipeline links no program against them."""

EXCLUDED = (*SKIPPED, *PRUNED)


@dataclass(frozen=True)
class RootSeal:
    """What ``.cass-root.json`` says of a root: the tree's digest, the Debian suite, ``built`` (from Debian on this
    machine) or ``pulled`` (checked out of packs), when, and the listing digest of the files it was made from."""

    root: str
    suite: str
    origin: str
    sealed: str
    listing: str


def read_seal(root: Path) -> RootSeal | None:
    """The root's seal, or None when it has none."""
    try:
        return RootSeal(**json.loads((Path(root) / SEAL_NAME).read_text()))
    except (FileNotFoundError, TypeError, ValueError):
        return None


def valid_seal(root: Path) -> RootSeal | None:
    """The root's seal if its files are still those it was made from (same listing), else None."""
    seal = read_seal(root)
    return seal if seal and listing_digest(root, EXCLUDED) == seal.listing else None


def write_seal(root: Path, digest: str, suite: str, origin: str) -> RootSeal:
    """Record ``digest`` as the tree of ``root`` (its files as they are now)."""
    seal = RootSeal(digest, suite, origin, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    listing_digest(root, EXCLUDED))
    tmp = Path(root) / f"{SEAL_NAME}.tmp"
    tmp.write_text(json.dumps(asdict(seal), indent=1) + "\n")
    tmp.replace(Path(root) / SEAL_NAME)
    return seal


def prune(root: Path) -> int:
    """Remove :data:`PRUNED` from ``root``; return the bytes freed."""
    freed = 0
    for pattern in PRUNED:
        for path in sorted(Path(root).glob(pattern)):
            if path.is_dir() and not path.is_symlink():
                freed += sum(p.lstat().st_size for p in path.rglob("*"))
                shutil.rmtree(path)
            else:
                freed += path.lstat().st_size
                path.unlink()
    return freed


def stored(store: Store, digest: str) -> bool:
    """Whether ``store`` holds the tree ``digest`` whole (its manifest and every chunk)."""
    return store.has(digest) and all(store.has(d) for d in tree_blobs(store, digest))


def seal(store: Store, root: Path, suite: str, origin: str) -> RootSeal:
    """Prune ``root``, store it as a tree and seal it as ``origin``. A root whose seal still holds is left as it is,
    its origin too (and not stored again: :func:`store_sealed` does that where the tree is needed)."""
    current = valid_seal(root)
    if current and current.suite == suite:
        return current
    prune(root)
    return write_seal(root, put_tree(store, root, EXCLUDED), suite, origin)


def store_sealed(store: Store, root: Path) -> RootSeal:
    """Put the sealed ``root``'s tree into ``store`` (where it is not there already); a root changed since its
    seal raises ValueError."""
    current = valid_seal(root)
    if current is None:
        raise ValueError(f"{root}: not sealed, or changed since it was sealed; `cass amd-root seal` first")
    if not stored(store, current.root) and (digest := put_tree(store, root, EXCLUDED)) != current.root:
        raise ValueError(f"{root}: its files store as tree {digest}, its seal says {current.root}; seal it again")
    return current


def make_devices(root: Path) -> None:
    """Make :data:`DEVICES` in the root's ``dev/`` where missing (needs root privileges, as setup has)."""
    dev = Path(root) / "dev"
    dev.mkdir(exist_ok=True)
    for name, (major, minor) in DEVICES.items():
        if not (dev / name).exists():
            os.mknod(dev / name, 0o666 | stat.S_IFCHR, os.makedev(major, minor))
            os.chmod(dev / name, 0o666)
