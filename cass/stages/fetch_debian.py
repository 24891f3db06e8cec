"""Stage fetch_debian: Debian source packages at pinned versions, unpacked, with their licenses.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
from tqdm import tqdm

from cass.pipeline.context import Stage
from cass.sources.copyright import Copyright
from cass.sources.debian import SCHEMA, DebianArchive, FetchError, package_origin
from toolchains import build_root, debian_cuda

BUILD_ROOT_TIMEOUT_S = 3600
"""For making the build root, and for each package's dependencies (a large package installs some 300 packages)."""


def install_debian_cuda(dparams: dict) -> None:
    """Install the suite's CUDA toolkit into the build root (made first where missing), for ``nvidia.debian_cuda``
    (:mod:`toolchains.debian_cuda`)."""
    root = debian_cuda.build_root_of(dparams)
    build_root.ensure(root, dparams["suite"], dparams["archive"], BUILD_ROOT_TIMEOUT_S)
    if debian_cuda.install(root, BUILD_ROOT_TIMEOUT_S):
        print(f"fetch_debian: installed {', '.join(debian_cuda.PACKAGES)} in {root}")


def install_build_dependencies(rows: list[dict], downloads: Path, dparams: dict) -> None:
    """Install the build dependencies of each package a configure step builds (a CMake project at its tree's root:
    CMake's configure step, else the package's own) in the build root (``debian_sources.build_root``, made first
    where missing; ``downloads``: where the ``.dsc`` files are); each row says how that went."""
    root = Path(dparams["build_root"]) if dparams["build_root"] else None
    configured = [r for r in rows if (Path(r["tree"]) / "CMakeLists.txt").is_file()]
    unmade = None   # why the root could not be made (tried once): every package that needs it fails with that
    if root is not None and configured:
        try:
            build_root.ensure(root, dparams["suite"], dparams["archive"], BUILD_ROOT_TIMEOUT_S)
        except build_root.BuildRootError as exc:
            unmade = f"failed: {exc}"
    for row in tqdm(rows, desc="build dependencies", unit="package", disable=root is None or not rows):
        if root is None:
            row["build_deps"] = "off"
        elif row not in configured:
            row["build_deps"] = "not needed"
        elif unmade is not None:
            row["build_deps"] = unmade
        else:
            dsc = next(f["name"] for f in row["files"] if f["name"].endswith(".dsc"))
            needs = build_root.build_dependencies((downloads / dsc).read_text(errors="replace"))
            try:
                build_root.satisfy(root, needs, f"{row['name']} {row['version']}", BUILD_ROOT_TIMEOUT_S)
                row["build_deps"] = "installed"
            except build_root.BuildRootError as exc:
                row["build_deps"] = f"failed: {exc}"
    state = build_root.identity(root) if root is not None else None
    for row in rows:
        row["build_root"] = state


def run(stage: Stage) -> None:
    """Fetch the packages of ``debian_sources`` (the fetch_debian stage): each package's tree, where its
    licenses came from and its copyright file (in the store) for ingest; a package that cannot be fetched
    is dropped with the reason (``version_not_found``, ``fetch_failed``, ``checksum_mismatch``)."""
    params = stage.params
    dparams = params["debian_sources"]
    packages = dparams["packages"] if dparams["enabled"] else []
    store = stage.store
    out = stage.output(len(packages))
    rows, downloaded = [], 0
    archive = DebianArchive.from_params(dparams) if packages else None
    for pkg in tqdm(packages, desc="debian sources", unit="package", disable=not packages):
        origin = package_origin(pkg["name"])
        try:
            fetched = archive.fetch(pkg["name"], str(pkg["version"]))
        except FetchError as exc:
            out.drop({"origin": origin, "path": pkg["name"]}, exc.reason, f"{pkg['name']} {pkg['version']}: {exc}")
            continue
        downloaded += fetched.downloaded
        rows.append({
            "name": pkg["name"], "version": str(pkg["version"]), "flavour": pkg["flavour"], "origin": origin,
            "tree": str(fetched.tree), "dsc_url": fetched.dsc_url,
            "files": [{"name": f.name, "sha256": f.sha256} for f in fetched.files],
            "copyright": store.put_text(fetched.copyright_text), "license_source": fetched.license_source,
            "machine_readable_copyright": Copyright.parse(fetched.copyright_text).machine_readable,
            "paths": list(pkg["paths"]), "limit": int(pkg["limit"]),
            "configure": json.dumps(pkg["configure"], sort_keys=True),
            "packaging": str(fetched.packaging or ""),
        })
    if params["nvidia"]["debian_cuda"]:
        install_debian_cuda(dparams)
    if archive is not None:
        install_build_dependencies(rows, archive.downloads, dparams)
    if params["nvidia"]["debian_cuda"] or params["amd"]["build_root_headers"]:   # the fallbacks' root, for DVC
        root = Path(dparams["build_root"]) if dparams["build_root"] else None
        stage.data_dir.mkdir(parents=True, exist_ok=True)
        (stage.data_dir / "build_root.json").write_text(json.dumps(
            {"build_root": str(root) if root else None, "identity": build_root.identity(root) if root else None},
            sort_keys=True) + "\n")
    out.run["files_downloaded"] = downloaded
    out.run["build_deps"] = dict(sorted(Counter(r["build_deps"].split(":")[0] for r in rows).items()))
    print(out.write(pl.DataFrame(rows, schema=SCHEMA).sort("name")))
