#!/usr/bin/env bash
# Set up everything on a fresh Debian 12 machine (as root): the Python environment with the
# pinned NVIDIA compiler wheels, the system library headers real CUDA code includes (on this
# machine and in the AMD root: toolchains/system.py), and the AMD toolchain root of params.yaml
# amd.toolchain (Debian experimental + ROCm 7.2 by default; trixie + ROCm 5.7 or sid + ROCm 6.4), entered per
# tool call: pulled from the DVC remote where it holds the root params.yaml pins (amd.root), else built from Debian.
# CASS_AMD_SUITES="trixie sid" builds both roots. Safe to run again: finished pieces are kept.
set -euo pipefail
cd "$(dirname "$0")/.."

MIRROR=${CASS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null || PYTHON=python3

need_apt=()
command -v debootstrap >/dev/null || need_apt+=(debootstrap)
command -v g++ >/dev/null || need_apt+=(g++)          # nvcc's host compiler
command -v bwrap >/dev/null || need_apt+=(bubblewrap)  # the sandbox of every tool (toolchains/sandbox.py)
command -v cmake >/dev/null || need_apt+=(cmake)       # configures CMake trees for their build context (toolchains/configure.py)
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
# uv installs the packages from the sources pip is configured with (scripts/pip_sources.py), in under a minute where
# pip takes four; unsafe-best-match takes the newest version any source offers, as pip does; the bytecode is compiled
# at install, as pip does, for processes that may not write it (PYTHONDONTWRITEBYTECODE)
UV_VERSION=0.13.9
[[ "$(.venv/bin/uv --version 2>/dev/null) " == "uv $UV_VERSION "* ]] ||   # it prints "uv 0.13.9 (<platform>)"
  .venv/bin/pip install -q --disable-pip-version-check "uv==$UV_VERSION"
sources=$(.venv/bin/python scripts/pip_sources.py)
mapfile -t pip_sources <<<"$sources"; [ -n "$sources" ] || pip_sources=()
cert=$(.venv/bin/python scripts/pip_sources.py --cert)   # the bundle pip trusts, if one is set
env ${cert:+"SSL_CERT_FILE=$cert"} .venv/bin/uv pip install -q --python .venv/bin/python --index-strategy unsafe-best-match --compile-bytecode \
  "${pip_sources[@]}" -e ".[test]"
py() { .venv/bin/python -c "$1" "${@:2}"; }

# The system library headers of the NVIDIA side (this machine): one list with the AMD side's.
HOST_PACKAGES=$(py 'from toolchains.system import host_packages; print(" ".join(host_packages()))')
# shellcheck disable=SC2086
installed=$(dpkg-query -W -f='${db:Status-Abbrev}\n' $HOST_PACKAGES 2>/dev/null | grep -c '^ii' || true)
if [ "$installed" -lt "$(wc -w <<<"$HOST_PACKAGES")" ]; then
  echo "setup: installing the system library headers and the OpenCL compiler of the NVIDIA side: $HOST_PACKAGES"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $HOST_PACKAGES >/dev/null
fi

# The AMD roots: the packages and what must exist in a root come from toolchains/amd.py and
# toolchains/system.py (the compiler, HIPIFY, the hip* library headers and the system library
# headers; 9-11 GB with the rocBLAS kernels they pull in; 3-6 minutes per root).
SUITES=${CASS_AMD_SUITES:-$(py 'import yaml; print(yaml.safe_load(open("params.yaml"))["amd"]["toolchain"])')}
AMD_PACKAGES=$(py 'from toolchains.amd import AMD_PACKAGES; print(AMD_PACKAGES)')
if [ -n "${CASS_AMD_ROOT:-}" ] && [ "$(wc -w <<<"$SUITES")" -gt 1 ]; then
  echo "setup: CASS_AMD_ROOT names one root, but CASS_AMD_SUITES asks for $SUITES; build them one at a time" >&2
  exit 2
fi
amd_complete() {   # any error counts as incomplete: the install below then runs (it is idempotent)
  .venv/bin/python - "$1" "$2" <<'PY'
import sys
from pathlib import Path

from toolchains import AmdToolchain
from toolchains.amd import amd_suite
from toolchains.system import header_parity

amd = AmdToolchain.in_root(Path(sys.argv[1]))
if amd.missing_libraries() or any(amd.tool_path(t) is None for t in ("hipcc", "hipify-perl")):
    sys.exit(1)
if any(not (amd.include_root() / header).is_file() for _, header in amd_suite(sys.argv[2]).library_headers):
    sys.exit(1)
sys.exit(1 if any(not sides["amd"] for sides in header_parity([], amd.system_include_dirs()).values()) else 0)
PY
}
suite_field() {   # a field of toolchains.amd.AMD_SUITES[suite], words joined by spaces
  py 'import sys; from toolchains.amd import amd_suite; v = getattr(amd_suite(sys.argv[1]), sys.argv[2]); print(" ".join(map(str, v)) if isinstance(v, tuple) else v)' "$1" "$2"
}
for suite in $SUITES; do
  [ -n "${CASS_ROCM_PATH:-}" ] && break
  root=${CASS_AMD_ROOT:-$(suite_field "$suite" default_root)}
  apt_options=$(suite_field "$suite" apt_options)
  base=$(suite_field "$suite" base); base=${base:-$suite}
  if amd_complete "$root" "$suite"; then
    .venv/bin/cass amd-root seal --suite "$suite"   # prunes and stores a root built before roots were sealed
    continue
  fi
  # The root params.yaml pins (amd.root), from the DVC remote's packs where it holds them; else built from Debian.
  if [ ! -e "$root" ]; then
    pulled=0; .venv/bin/cass amd-root pull --suite "$suite" || pulled=$?
    [ "$pulled" -eq 0 ] && continue
    [ "$pulled" -eq 3 ] || exit "$pulled"   # 3: not there to pull (it says why); anything else is an error
  fi
  if [ ! -x "$root/usr/bin/apt-get" ]; then
    if [ -e "$root" ] && [ -n "$(find "$root" ! -type d -print -quit)" ]; then
      echo "setup: $root exists but is no Debian root (no usr/bin/apt-get); move it away first" >&2
      exit 2
    fi
    rm -rf "$root"   # nothing in it but empty folders: mv(1) below would put the new root inside it
    echo "setup: debootstrap Debian $base into $root (about 30 s)"
    rm -rf "$root.partial"
    debootstrap --variant=minbase "$base" "$root.partial" "$MIRROR" >/dev/null
    mv -T "$root.partial" "$root"   # -T: never into a folder that is still there
  fi
  sources=$(py 'import sys; from toolchains.amd import amd_suite; print("\n".join(amd_suite(sys.argv[1]).sources))' "$suite")
  if [ -n "$sources" ]; then
    sed "s|^|deb $MIRROR |" <<<"$sources" >"$root/etc/apt/sources.list.d/cass-$suite.list"
  fi
  echo "setup: installing hipcc, hipify-perl and the hip* library headers inside $root ($suite)"
  # shellcheck disable=SC2086
  chroot "$root" sh -c "apt-get $apt_options update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get $apt_options install -y -qq --no-install-recommends $AMD_PACKAGES $(suite_field "$suite" packages) >/dev/null"
  clang=$(py 'import sys; from pathlib import Path; from toolchains import AmdToolchain; print(AmdToolchain.in_root(Path(sys.argv[1])).clang_major())' "$root")
  system=$(py 'import sys; from toolchains.system import amd_packages; print(" ".join(amd_packages(int(sys.argv[1]))))' "$clang")
  echo "setup: installing the system library headers of the AMD side inside $root: $system"
  chroot "$root" sh -c "DEBIAN_FRONTEND=noninteractive apt-get $apt_options install -y -qq --no-install-recommends \
    $system >/dev/null"
  echo "setup: sealing $root: what compiles never read is removed, the rest stored as a tree (toolchains/amd_root.py)"
  .venv/bin/cass amd-root seal --suite "$suite"
done

# HIP's NVIDIA back end (the execution route) takes ROCm 5.7's HIP headers and the hip* libraries' headers beside
# them (toolchains/hip_nvidia.py), whichever root builds the dataset; each folder missing, without the record of its
# package beside it, or from another package than LIBRARY_PACKAGES names, is installed.
if [ -z "${CASS_HIP_HEADERS:-}" ]; then
  py 'import sys; from toolchains.hip_nvidia import HIP_HEADERS_DIR, install_hip_headers
for package, version in install_hip_headers(HIP_HEADERS_DIR, sys.argv[1]).items():
    print(f"setup: {package} {version} for HIP on NVIDIA, beside {HIP_HEADERS_DIR}")' "$MIRROR"
fi

.venv/bin/cass toolchains
