"""The floors of the code: ``store/`` and ``toolchains/`` sit below the library and import nothing from it, so a
vendor or GPU host runs ``python -m toolchains.gpu run-batch`` with those two folders and blake3 alone."""

from __future__ import annotations

import subprocess
import sys

import pytest
from harness.project import REPO

PROBE = """import importlib, sys
def outside():
    return {n.split('.')[0] for n, m in list(sys.modules.items())
            if getattr(m, '__file__', None) and not m.__file__.startswith(sys.base_prefix)}
before = outside()
importlib.import_module(sys.argv[1])
print(' '.join(sorted(outside() - before)))
"""


@pytest.mark.parametrize(("module", "allowed"), [
    ("store", {"store", "blake3"}),
    ("toolchains", {"toolchains", "store", "blake3"}),
    ("toolchains.gpu", {"toolchains", "store", "blake3"}),
])
def test_the_lower_floors_import_nothing_from_the_library(module, allowed):
    loaded = subprocess.run([sys.executable, "-c", PROBE, module], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    assert set(loaded) <= allowed, f"{module} loads {sorted(set(loaded) - allowed)}"
    assert module.split(".")[0] in loaded


def test_a_repair_rule_is_code_of_the_repair_stage_alone():
    """Editing a rule (or the derived name tables) changes the code digest of the repair stage and of the evaluate
    stage (its `pipeline` baseline translates with the rules), so `dvc repro` reruns those and what depends on the
    repair stage's output, nothing that merely shared an import with them."""
    from cass.pipeline.code_digests import stage_listings

    listings = stage_listings(REPO)
    for module in ("cass/translate/repair.py", "cass/translate/names.py"):
        assert [stage for stage, text in listings.items() if module in text] == ["repair", "evaluate"], module
