#!/usr/bin/env bash
# Build every bundled CUDA program with the machine's nvcc and run it on its GPU; prints one line
# per program (exit status, first output line) and keeps the full output under $OUT (or ./gpu-run).
# Used on the lent GPU machine to check that the corpus programs run and print their results.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-run}
mkdir -p "$out/bin"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
"$nvcc" --version | tail -1
pass=0; fail=0
for src in $(find corpus -name '*.cu' | sort); do
  name=$(echo "${src#corpus/}" | tr / _ | sed 's/\.cu$//')
  if ! "$nvcc" -std=c++17 -O2 -arch=native -o "$out/bin/$name" "$src" >"$out/$name.build.log" 2>&1; then
    echo "BUILD-FAIL $src"; fail=$((fail + 1)); continue
  fi
  timeout 60 "$out/bin/$name" >"$out/$name.stdout" 2>&1
  rc=$?
  [ $rc -eq 0 ] && pass=$((pass + 1)) || fail=$((fail + 1))
  echo "rc=$rc $src: $(head -1 "$out/$name.stdout")"
done
rm -rf "$out/bin"
echo "$pass passed, $fail failed"
