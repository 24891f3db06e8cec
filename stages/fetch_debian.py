"""Stage fetch_debian: Debian source packages at pinned versions, unpacked, with their licenses.

``debian_sources.packages`` in params.yaml names each package, its exact version, its flavour (a
framework, a scientific code, a runtime), the sample files to take (``paths`` globs, ``limit``)
and the values its configure-time headers get (``configure``). The work is
:class:`cass.sources.debian.DebianArchive`; this stage records each package's tree, where its
licenses came from, and its copyright file (in the store) for ingest. A package that cannot be
fetched is dropped with the reason (``version_not_found``, ``fetch_failed``,
``checksum_mismatch``) and the run goes on.
"""

from __future__ import annotations

import json

import polars as pl
from tqdm import tqdm

from cass.sources.copyright import Copyright
from cass.sources.debian import DebianArchive, FetchError, package_origin
from stages.common import StageOutput, load_params, open_store

STAGE = "fetch_debian"
SCHEMA = {
    "name": pl.String, "version": pl.String, "flavour": pl.String, "origin": pl.String, "tree": pl.String,
    "dsc_url": pl.String, "files": pl.List(pl.Struct({"name": pl.String, "sha256": pl.String})),
    "copyright": pl.String, "license_source": pl.String, "machine_readable_copyright": pl.Boolean,
    "paths": pl.List(pl.String), "limit": pl.Int64, "configure": pl.String,
}


def main() -> None:
    params = load_params()
    dparams = params["debian_sources"]
    packages = dparams["packages"] if dparams["enabled"] else []
    store = open_store(params)
    out = StageOutput(STAGE, rows_in=len(packages))
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
            "name": pkg["name"], "version": str(pkg["version"]), "flavour": pkg.get("flavour", ""), "origin": origin,
            "tree": str(fetched.tree), "dsc_url": fetched.dsc_url,
            "files": [{"name": f.name, "sha256": f.sha256} for f in fetched.files],
            "copyright": store.put_text(fetched.copyright_text), "license_source": fetched.license_source,
            "machine_readable_copyright": Copyright.parse(fetched.copyright_text).machine_readable,
            "paths": list(pkg.get("paths") or []), "limit": int(pkg.get("limit") or 0),
            "configure": json.dumps(pkg.get("configure") or {}, sort_keys=True),
        })
    out.run["files_downloaded"] = downloaded
    print(out.write(pl.DataFrame(rows, schema=SCHEMA).sort("name")))


if __name__ == "__main__":
    main()
