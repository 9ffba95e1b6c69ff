#!/usr/bin/env bash
# Compile every CUDA source for sm_75 and sm_90 with nvcc; fail on any error or warning.
# A family's source families/F/F.cu takes its -D constants from families/F/cuda.py (DEFINES),
# families/F/X.cu from families/F/X_cuda.py. Prints ptxas's register / shared-memory / spill
# lines for the default kernels. Without nvcc it fails under CI (CI=true) and warns elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/bin/nvcc)}
PY=${PY:-python3}
if [ ! -x "$NVCC" ]; then
  if [ "${CI:-}" = "true" ]; then echo "nvcc_check: nvcc not found" >&2; exit 1; fi
  echo "nvcc_check: nvcc not found, CUDA compile check skipped" >&2; exit 0
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
status=0
defines() {  # the -D options of a source, from its launch-plan module's DEFINES
  local cu=$1 dir fam name mod
  dir=$(dirname "$cu"); fam=$(basename "$dir"); name=$(basename "$cu" .cu)
  [[ $dir == */families/* ]] || return 0
  if [ "$name" = "$fam" ]; then mod=cuda; else mod=${name}_cuda; fi
  PYTHONPATH=src "$PY" -c "from warplab.core.loader import defines
from importlib import import_module
print(' '.join(defines(import_module('warplab.families.$fam.$mod').DEFINES)))"
}
for cu in src/warplab/families/*/*.cu src/warplab/lab/harness/*.cu; do
  name=$(basename "$cu" .cu)
  opts=$(defines "$cu")
  for arch in sm_75 sm_90; do
    # shellcheck disable=SC2086
    if "$NVCC" -arch=$arch -std=c++17 -DWARPLAB_NVCC_CHECK -Isrc/warplab/core $opts -Werror all-warnings -Xptxas -v \
         -c "$cu" -o "$tmp/$name-$arch.o" > "$tmp/$name-$arch.log" 2>&1; then
      echo "nvcc_check: $cu ($arch) OK"
    else
      echo "nvcc_check: $cu ($arch) FAILED" >&2; cat "$tmp/$name-$arch.log" >&2; status=1
    fi
  done
done
# The default batched copy's module: memcpy.cu at its load policy (spec.WARP_TIERS_WORDS.loads).
opts=$(PYTHONPATH=src "$PY" -c "from warplab.core.loader import defines
from warplab.families.memcpy.cuda import DEFINES
from warplab.families.memcpy.spec import WARP_TIERS_WORDS as W
print(' '.join(defines({**DEFINES, 'WARPLAB_MEMCPY_LOADS': W.loads})))")
# shellcheck disable=SC2086
if "$NVCC" -arch=sm_90 -std=c++17 -DWARPLAB_NVCC_CHECK -Isrc/warplab/core $opts -Werror all-warnings \
     -c src/warplab/families/memcpy/memcpy.cu -o "$tmp/memcpy-default.o" > "$tmp/memcpy-default.log" 2>&1; then
  echo "nvcc_check: memcpy.cu at the default copy's load policy (sm_90) OK"
else
  echo "nvcc_check: memcpy.cu at the default copy's load policy (sm_90) FAILED" >&2
  cat "$tmp/memcpy-default.log" >&2; status=1
fi
# Resource lines (sm_90) of the default kernels: histogram (bytes mapping) and its seeds; float32 sum.
for k in '_Z19hist_privatized_vecILi1ELb1ELi0EEvPKhyPyjS1_' '_Z11hist_globalILi0EEvPKhyPyjS1_' \
         '_Z19hist_private_strideILi0EEvPKhyPyjS1_'; do
  grep -A3 "Compiling entry function '$k'" "$tmp/histogram-sm_90.log" | grep -E "entry|Used|spill" || true
done
grep -A3 "Compiling entry function '_Z21reduce_persistent_vecIfdf5OpSum" "$tmp/reduce-sm_90.log" \
  | grep -E "entry|Used|spill" || true
# Matmul register tiles: resources of every instantiation; a spill fails the check.
grep -A3 "Compiling entry function '_Z14matmul_regtile" "$tmp/matmul-sm_90.log" \
  | grep -E "entry|Used|spill" || true
if grep -qE "[1-9][0-9]* bytes spill (stores|loads)" "$tmp/matmul-sm_90.log"; then
  echo "nvcc_check: matmul.cu spills registers" >&2; status=1
fi
# Gram configurations (corr/gram_cuda.py CONFIGS): each builds gram.cu with its own -D constants.
# sm_90 resources of the float64 kernels at 8192^2 (double, 16-byte copies, a @ a.T).
while read -r name opts; do
  # shellcheck disable=SC2086
  if "$NVCC" -arch=sm_90 -std=c++17 -DWARPLAB_NVCC_CHECK -Isrc/warplab/core $opts -Werror all-warnings \
       -Xptxas -v -c src/warplab/families/corr/gram.cu -o "$tmp/gram-$name.o" > "$tmp/gram-$name.log" 2>&1; then
    echo "nvcc_check: gram.cu config $name (sm_90) OK"
    grep -A3 -E "Compiling entry function '_Z8gram_mmaILi0EdLi[34]ELb1ELb1E" "$tmp/gram-$name.log" \
      | grep -E "entry|Used|spill" || true
  else
    echo "nvcc_check: gram.cu config $name (sm_90) FAILED" >&2; cat "$tmp/gram-$name.log" >&2; status=1
  fi
done < <(PYTHONPATH=src "$PY" -c "from warplab.core.loader import defines
from warplab.families.corr.gram_cuda import CONFIGS
for name, cfg in CONFIGS.items(): print(name, ' '.join(defines(cfg.defines)))")
# The memcpy family's CUB comparator helper (built at bench time by cub_helper.py): sm_90.
if "$NVCC" -arch=sm_90 -std=c++17 -O3 -shared -Xcompiler -fPIC -Werror all-warnings \
     -o "$tmp/batched_cub.so" src/warplab/lab/campaigns/memcpy/cub/batched_cub.cu > "$tmp/cub.log" 2>&1; then
  echo "nvcc_check: src/warplab/lab/campaigns/memcpy/cub/batched_cub.cu (sm_90, shared) OK"
else
  echo "nvcc_check: src/warplab/lab/campaigns/memcpy/cub/batched_cub.cu FAILED" >&2; cat "$tmp/cub.log" >&2; status=1
fi
exit $status
