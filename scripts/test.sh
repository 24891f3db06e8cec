#!/usr/bin/env bash
# Set up, then run the linters and the whole test suite (real toolchains, no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check .
# two workers, each taking whole test files (the files sharing the session's `project` build together): one's
# serial work (DVC, stage start-up) fills the core the other's leaves idle (tests/conftest.py)
pytest -q --durations=25 -n 2 --dist loadgroup "$@"
