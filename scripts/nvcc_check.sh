#!/usr/bin/env bash
# Compile every CUDA source for sm_90 with nvcc; fail on any error. Prints ptxas's register /
# shared-memory / spill lines for the default kernels. Without nvcc it fails under CI (CI=true)
# and warns elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/bin/nvcc)}
if [ ! -x "$NVCC" ]; then
  if [ "${CI:-}" = "true" ]; then echo "nvcc_check: nvcc not found" >&2; exit 1; fi
  echo "nvcc_check: nvcc not found, CUDA compile check skipped" >&2; exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
for cu in src/warplab/kernels/*.cu; do
  name=$(basename "$cu" .cu)
  if "$NVCC" -arch=sm_90 -std=c++17 -DWARPLAB_NVCC_CHECK -Werror all-warnings -Xptxas -v \
       -c "$cu" -o "$tmp/$name.o" > "$tmp/$name.log" 2>&1; then
    echo "nvcc_check: $cu OK"
  else
    echo "nvcc_check: $cu FAILED" >&2; cat "$tmp/$name.log" >&2; status=1
  fi
done
# Resource lines of the default kernels: histogram (bytes mapping) and its seeds; float32 sum.
for k in '_Z19hist_privatized_vecILi1ELb1ELi0EEvPKhyPyjS1_' '_Z11hist_globalILi0EEvPKhyPyjS1_' \
         '_Z19hist_private_strideILi0EEvPKhyPyjS1_'; do
  grep -A3 "Compiling entry function '$k'" "$tmp/histogram.log" | grep -E "entry|Used|spill" || true
done
grep -A3 "Compiling entry function '_Z21reduce_persistent_vecIfdf5OpSum" "$tmp/reduce.log" \
  | grep -E "entry|Used|spill" || true
# Matmul register tiles: resources of every instantiation; a spill fails the check.
grep -A3 "Compiling entry function '_Z14matmul_regtile" "$tmp/matmul.log" \
  | grep -E "entry|Used|spill" || true
if grep -qE "[1-9][0-9]* bytes spill (stores|loads)" "$tmp/matmul.log"; then
  echo "nvcc_check: matmul.cu spills registers" >&2; status=1
fi
exit $status
