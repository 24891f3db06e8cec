"""Debian source packages as a source: licenses from copyright files, and real fetches from
Debian's archive (the one network service these machines and CI reach; these tests need it)
through apt with a private configuration: checksums, a license from a binary package, a missing
version."""

from __future__ import annotations

import pytest

from cass.sources.copyright import Copyright, license_type
from cass.sources.debian import COMPLETE_MARK, DebianArchive, FetchError, package_origin, sha256_file

DEP5 = """Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: demo

Files: *
Copyright: 2020 Someone
License: LGPL-2.1+

Files: src/common/uthash.h
       third_party/*
Copyright: 2003 Troy
License: BSD-uthash
 Redistribution and use in source and binary forms ...
 .
 more text

Files: third_party/gpl/??.cu
License: GPL-2+

License: LGPL-2.1+
 The full text.
"""


def test_the_last_matching_files_paragraph_names_the_license():
    c = Copyright.parse(DEP5)
    assert c.machine_readable
    assert c.license_of("examples/pi/pi_kernel.cu") == "LGPL-2.1+"
    assert c.license_of("src/common/uthash.h") == "BSD-uthash"
    assert c.license_of("third_party/x/y.cu") == "BSD-uthash"       # '*' crosses folders
    assert c.license_of("third_party/gpl/ab.cu") == "GPL-2+"
    assert c.license_of("third_party/gpl/abc.cu") == "BSD-uthash"   # '?' is one character


def test_a_free_text_copyright_names_the_first_license_it_mentions():
    c = Copyright.parse("Copyright GROMACS\n\nGROMACS is free software under the terms of the GNU Lesser General "
                        "Public License; see also the GNU General Public License.\n")
    assert not c.machine_readable and c.license_of("src/x.cu") == "LGPL"
    assert Copyright.parse("no license words here\n").license_of("a.cu") == "unknown"


def test_license_types():
    assert [license_type(n) for n in ("BSD-3-Clause", "Expat", "Apache-2.0", "LGPL-2.1+", "GPL-2+ or MIT",
                                      "GPL-3", "Custom", "BSD-3-clause and GPL-2+", "MIT and Zlib",
                                      "GPL-2 and BSD-2-clause or Apache-2.0")] == \
        ["permissive", "permissive", "permissive", "copyleft", "permissive", "copyleft", "unknown", "copyleft",
         "permissive", "permissive"]
    assert Copyright.parse("Format: x\n\nFiles: *\nLicense:\n").license_of("a.cu") == "unknown"
    assert package_origin("nvidia-cuda-samples") == "debian_nvidia_cuda_samples"


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> DebianArchive:
    return DebianArchive(tmp_path_factory.mktemp("debian"), "http://deb.debian.org/debian", "bookworm",
                         ["main", "contrib"], "/usr/share/keyrings/debian-archive-keyring.gpg", timeout_s=120)


def test_a_pinned_source_package_is_fetched_checked_and_unpacked(archive):
    fetched = archive.fetch("starpu", "1.3.10+dfsg-2")
    assert fetched.license_source == "starpu_1.3.10+dfsg-2.debian.tar.xz:debian/copyright"
    assert fetched.packaging == archive.downloads / "starpu_1.3.10+dfsg-2.debian.tar.xz"   # for its configure step
    assert (fetched.tree / COMPLETE_MARK).is_file()
    assert (fetched.tree / "include" / "starpu_config.h.in").is_file()   # the top folder is stripped
    assert len(list(fetched.tree.rglob("*.cu"))) == 39
    assert Copyright.parse(fetched.copyright_text).license_of("examples/pi/pi_kernel.cu") == "LGPL-2.1"
    assert fetched.dsc_url == "http://deb.debian.org/debian/pool/main/s/starpu/starpu_1.3.10%2bdfsg-2.dsc"
    orig = next(f for f in fetched.files if ".orig.tar" in f.name)
    assert sha256_file(archive.downloads / orig.name) == orig.sha256

    again = archive.fetch("starpu", "1.3.10+dfsg-2")
    assert again.downloaded == 0 and again.tree == fetched.tree

    (archive.downloads / orig.name).write_bytes(b"damaged")    # a kept file that no longer matches
    (fetched.tree / COMPLETE_MARK).unlink()                     # and an unpack that did not finish
    repaired = archive.fetch("starpu", "1.3.10+dfsg-2")
    assert repaired.downloaded == 1 and sha256_file(archive.downloads / orig.name) == orig.sha256
    assert len(list(repaired.tree.rglob("*.cu"))) == 39


def test_without_a_debian_tarball_the_license_comes_from_a_binary_package(archive):
    # (the archive mirror here answers 404 for relion's and pytorch's debian.tar.xz)
    text, source = archive.binary_copyright("relion", "3.1.3-3")
    package, _, path = source.partition(":")
    assert package.startswith("relion-gui_3.1.3-3") and path == "/usr/share/doc/relion-gui/copyright"   # smallest
    assert Copyright.parse(text).license_of("src/acc/cuda/cuda_ml_optimiser.cu") == "GPL-2+"


def test_a_version_the_archive_does_not_have_is_a_clear_error(archive):
    with pytest.raises(FetchError) as err:
        archive.fetch("starpu", "0.0-1")
    assert err.value.reason == "version_not_found" and "starpu 0.0-1" in str(err.value)

