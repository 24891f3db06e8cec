"""The test session's environment, set on import, before any test or harness module copies it: the Hub is
unreachable here (fail fast instead of retrying), and built tokenizers and the other machine-cache entries go to one
cache per test session, shared by the projects the tests build. The process that imports this first makes the cache
(pytest-xdist's workers inherit it); tests/conftest.py removes it when that process's session ends."""

import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
CACHE_MADE_HERE = "CASS_CACHE" not in os.environ
if CACHE_MADE_HERE:
    os.environ["CASS_CACHE"] = tempfile.mkdtemp(prefix="cass-test-cache-")
