"""Stage fetch_debian: Debian source packages at pinned versions, unpacked, with their licenses.
"""

from __future__ import annotations

import json

import polars as pl
from tqdm import tqdm

from cass.pipeline.context import Stage
from cass.sources.copyright import Copyright
from cass.sources.debian import SCHEMA, DebianArchive, FetchError, package_origin


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
        })
    out.run["files_downloaded"] = downloaded
    print(out.write(pl.DataFrame(rows, schema=SCHEMA).sort("name")))
