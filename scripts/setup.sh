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

if [ -z "${CASS_ROCM_PATH:-}" ] && [ ! -x "$AMD_ROOT/usr/bin/hipcc" -o ! -x "$AMD_ROOT/usr/bin/hipify-perl" ]; then
  if [ ! -x "$AMD_ROOT/usr/bin/apt-get" ]; then
    echo "setup: debootstrap Debian trixie into $AMD_ROOT (about 30 s)"
    rm -rf "$AMD_ROOT.partial"
    debootstrap --variant=minbase trixie "$AMD_ROOT.partial" "$MIRROR" >/dev/null
    mv "$AMD_ROOT.partial" "$AMD_ROOT"
  fi
  echo "setup: installing hipcc and hipify-perl (ROCm 5.7, clang 17) inside $AMD_ROOT"
  chroot "$AMD_ROOT" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends hipcc hipify-perl >/dev/null'
fi

.venv/bin/cass toolchains
