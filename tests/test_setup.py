"""Setup installs with uv from the package sources pip is configured with (scripts/pip_sources.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from harness.project import REPO

sys.path.insert(0, str(REPO / "scripts"))
from pip_sources import uv_arguments


def test_each_source_comes_from_the_strongest_section_that_sets_it_and_lists_are_split():
    listed = "\n".join([
        "global.find-links='/global/wheels'",
        "install.find-links='/install/a /install/b'",
        ":env:.constraint='/env/c.txt'",
        "global.constraint='/global/c.txt'",
        "global.extra-index-url='file:///one file:///two'",
        "global.cert='/etc/ssl/certs/ca.crt'",           # not a source: uv has its own trust settings
        "download.index-url='https://elsewhere/simple'",  # a section `pip install` does not read
    ])
    assert uv_arguments(listed) == ["--find-links", "/install/a", "--find-links", "/install/b",
                                    "--constraint", "/env/c.txt",
                                    "--extra-index-url", "file:///one", "--extra-index-url", "file:///two"]
    assert uv_arguments("") == []


def test_the_script_reads_pips_own_configuration(tmp_path):
    conf = tmp_path / "pip.conf"
    conf.write_text("[install]\nfind-links = /from/the/file\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=str(conf), PIP_CONSTRAINT="/from/the/environment.txt")
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "pip_sources.py")], env=env, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    pairs = list(zip(out[::2], out[1::2], strict=True))
    assert ("--find-links", "/from/the/file") in pairs and ("--constraint", "/from/the/environment.txt") in pairs
    assert [option for option, _ in pairs].count("--constraint") == 1
