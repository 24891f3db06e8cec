#!/usr/bin/env bash
# Set up everything on a fresh Debian 12 machine (as root): the Python environment with the
# pinned NVIDIA compiler wheels, and the AMD toolchain root (Debian trixie + ROCm 5.7 hipcc and
# hipify-perl, entered with chroot). Safe to run again: finished pieces are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

AMD_ROOT=${CASS_AMD_ROOT:-/opt/cass-amd-root}
MIRROR=${CASS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3

need_apt=()
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v g++ >/dev/null || need_apt+=(g++)          # nvcc's host compiler
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing ${need_apt[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PYTHON" -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check -e ".[test]"

# The AMD packages and what must exist in the root come from toolchains/amd.py (the compiler,
# HIPIFY and the hip* library headers; 7 GB with the rocBLAS kernels they pull in; about 2 min).
AMD_PACKAGES=$(.venv/bin/python -c 'from toolchains.amd import TRIXIE_PACKAGES; print(TRIXIE_PACKAGES)')
amd_complete() {   # any error counts as incomplete: the install below then runs (it is idempotent)
  .venv/bin/python - "$AMD_ROOT" <<'PY'
import sys
from pathlib import Path

from toolchains import AmdToolchain

amd = AmdToolchain.in_root(Path(sys.argv[1]))
sys.exit(1 if amd.missing_libraries() or any(amd.tool_path(t) is None for t in ("hipcc", "hipify-perl")) else 0)
PY
}
if [ -z "${CASS_ROCM_PATH:-}" ] && ! amd_complete; then
  if [ ! -x "$AMD_ROOT/usr/bin/apt-get" ]; then
    echo "setup: debootstrap Debian trixie into $AMD_ROOT (about 30 s)"
    rm -rf "$AMD_ROOT.partial"
    debootstrap --variant=minbase trixie "$AMD_ROOT.partial" "$MIRROR" >/dev/null
    mv "$AMD_ROOT.partial" "$AMD_ROOT"
  fi
  echo "setup: installing hipcc, hipify-perl and the hip* library headers (ROCm 5.7, clang 17) inside $AMD_ROOT"
  chroot "$AMD_ROOT" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends $AMD_PACKAGES >/dev/null"
fi

.venv/bin/cass toolchains
