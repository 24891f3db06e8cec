#!/usr/bin/env bash
# The main job: set up, then build the dataset from the bundled corpus with `dvc repro`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
dvc repro
cass summary
