"""Setup installs with uv from the package sources pip is configured with (scripts/pip_sources.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from harness.project import REPO

SCRIPT = REPO / "scripts" / "pip_sources.py"


def pip_sources(tmp_path, conf: str, *args: str, **env: str) -> subprocess.CompletedProcess:
    """The script under a pip configuration of only ``conf`` (a pip.conf text) and ``env`` (``PIP_...`` variables)."""
    (tmp_path / "pip.conf").write_text(conf)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False,
                          env={**clean, "PIP_CONFIG_FILE": str(tmp_path / "pip.conf"), **env}, cwd=tmp_path)


def test_each_source_comes_from_the_strongest_section_that_sets_it_and_lists_are_split(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from pip_sources import pip_settings, uv_arguments
    finally:
        sys.path.remove(str(SCRIPT.parent))
    listed = "\n".join([
        "global.find-links='/global/wheels'",
        "install.find-links='/install/a /install/b'",
        ":env:.constraint='/env/c.txt'",
        "global.constraint='/global/c.txt'",
        "global.extra-index-url='file:///one file:///two'",
        "global.trusted-host='mirror.local'",
        "install.no-index='true'",
        "global.pre='false'",
    ])
    assert uv_arguments(pip_settings(listed)) == [
        "--find-links", "/install/a", "--find-links", "/install/b", "--constraint", "/env/c.txt",
        "--extra-index-url", "file:///one", "--extra-index-url", "file:///two",
        "--allow-insecure-host", "mirror.local", "--no-index"]
    assert uv_arguments(pip_settings("")) == []
    with pytest.raises(ValueError, match="proxy"):
        uv_arguments(pip_settings("global.proxy='http://proxy:3128'"))


def test_the_script_reads_pips_own_configuration(tmp_path):
    """Real pip reads the file and the environment: the file's ``install`` section, the environment's variable and
    the file's certificate reach uv; a proxy stops setup with its name."""
    conf = "[global]\ncert = /my/ca.pem\n[install]\nfind-links = /from/the/file\n"
    run = pip_sources(tmp_path, conf, PIP_CONSTRAINT="/from/the/environment.txt")
    pairs = list(zip(*[iter(run.stdout.splitlines())] * 2, strict=True))
    assert ("--find-links", "/from/the/file") in pairs and ("--constraint", "/from/the/environment.txt") in pairs
    assert [option for option, _ in pairs].count("--constraint") == 1
    assert pip_sources(tmp_path, conf, "--cert").stdout == "/my/ca.pem\n"
    refused = pip_sources(tmp_path, conf + "proxy = http://proxy:3128\n")
    assert refused.returncode == 1 and "sets proxy" in refused.stderr and refused.stdout == ""
