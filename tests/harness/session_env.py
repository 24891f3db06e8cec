"""The test session's environment, set on import, before any test or harness module copies it: the Hub is
unreachable here (fail fast instead of retrying), and built tokenizers and the other machine-cache entries go to one
cache per test session, shared by the projects the tests build. The process that imports this first makes the cache
(:data:`CACHE`; pytest-xdist's workers inherit it); tests/conftest.py removes it when that process's session ends. A
``CASS_CACHE`` set beforehand is used as it is, and kept."""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
CACHE = None if "CASS_CACHE" in os.environ else tempfile.mkdtemp(prefix="cass-test-cache-")
"""The cache folder this process made, if it made one."""
if CACHE:
    os.environ["CASS_CACHE"] = CACHE
