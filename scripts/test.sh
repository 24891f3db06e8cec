#!/usr/bin/env bash
# Set up, then run the linters and the whole test suite (real toolchains, no GPU needed).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
ruff check .
pytest -q --durations=25 "$@"
