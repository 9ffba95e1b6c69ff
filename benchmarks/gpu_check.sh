#!/usr/bin/env bash
# Everything the GPU machine must show, in one go: device facts, the GPU tests, the benchmark
# campaigns. Writes under $OUT (the device tool brings it back; at most 8 files there):
#   device.json pytest-gpu.log gpu_check.log {histogram,reduce,matmul,series}-<campaign>.json
# Set WARPLAB_COMMIT=<sha> where the tree was copied without its current git metadata.
# Usage: benchmarks/gpu_check.sh [all|tests|sanitize|large|FAMILY:CAMPAIGN|table|full|quick|rtable|...|squick ...]
set -u -o pipefail
OUT=${OUT:-/tmp/warplab-out}
mkdir -p "$OUT"
export PYTHONPATH=src PYTHONUNBUFFERED=1
stages=${*:-all}
has() { [[ " $stages " == *" all "* || " $stages " == *" $1 "* ]]; }
log() { echo "== $(date +%T) $*" | tee -a "$OUT/gpu_check.log"; }

# The library's C helpers (warplab.core._launch, _ntcopy): a tree run has no install to build
# them, so build them beside their sources (setup.build_in_place reads no pyproject.toml, so
# any setuptools does). Without them the library takes its Python paths; the status lines say.
log "build the C helpers in place"
BUILD_LOG=${TMPDIR:-/tmp}/warplab-build_ext.log
python3 -c "import setup; setup.build_in_place()" > "$BUILD_LOG" 2>&1 \
  || { log "C helpers not built (the library takes its Python paths):"; tail -n 5 "$BUILD_LOG"; }
python3 -c "from warplab.core import launch, ntcopy
print('launch:', launch.status()); print('staging copy:', ntcopy.status())" \
  | tee -a "$OUT/gpu_check.log"

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then  # optional comparators carried as wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=src:/tmp/site
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  | tee -a "$OUT/gpu_check.log"
log "device --measure"
python3 -m warplab device --measure --json > "$OUT/device.json" || log "device FAILED"
if has tests; then
  log "pytest -m gpu"
  timeout ${PYTEST_TIMEOUT:-480} python3 -m pytest -m gpu ${GPU_TESTS:-tests} -q -rs -p no:cacheprovider \
    --maxfail=40 --tb=short --durations=15 2>&1 | tee "$OUT/pytest-gpu.log" | tail -n 80
fi
if [[ " $stages " == *" sanitize "* ]]; then  # not part of all: slow (minutes)
  log "compute-sanitizer memcheck / racecheck on the new kernels, small shapes"
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 python3 -m pytest -m gpu -q -p no:cacheprovider \
      ${SANITIZE_TESTS:-tests/gpu/test_random_walk_gpu.py tests/gpu/test_reduce_axis_gpu.py} \
      -k "${SANITIZE_K:-3x31 or 7x1023 or 999x77}" \
      2>&1 | tail -n 15 | tee -a "$OUT/pytest-gpu.log"
  done
fi
if has large; then
  log "pytest -m large"
  python3 -m pytest -m large tests -q -rs -p no:cacheprovider 2>&1 | tail -n 20 | tee -a "$OUT/pytest-gpu.log"
fi
# Benchmark stages: FAMILY:CAMPAIGN (e.g. corr:table memcpy:quick), or the short names
# histogram: table full quick; reduce: rtable rfull rquick; matmul: mtable mfull mquick;
# series: stable sfull squick. "all" runs every family's table and full campaign.
bench_stage() {  # family campaign
  local family=$1 campaign=$2 tmp
  log "bench $family --$campaign"
  tmp=$(mktemp -d)
  timeout ${BENCH_TIMEOUT:-540} python3 -m warplab bench "$family" --"$campaign" --out "$tmp" ${BENCH_ARGS:-} 2>&1 \
    | tail -n 60 | tee -a "$OUT/gpu_check.log"
  cp "$tmp"/*/"$family".json "$OUT/$family-$campaign.json" || log "bench $family --$campaign: no JSON"
}
for stage in table full quick rtable rfull rquick mtable mfull mquick stable sfull squick; do
  if [[ " $stages " == *" $stage "* ]] || { [[ " $stages " == *" all "* ]] && [[ $stage != *quick ]]; }; then
    family=histogram; campaign=$stage
    if [[ $stage == r* ]]; then family=reduce; campaign=${stage#r}; fi
    if [[ $stage == m* ]]; then family=matmul; campaign=${stage#m}; fi
    if [[ $stage == s* ]]; then family=series; campaign=${stage#s}; fi
    bench_stage "$family" "$campaign"
  fi
done
for stage in $stages; do
  if [[ $stage == *:* ]]; then bench_stage "${stage%%:*}" "${stage#*:}"; fi
done
log "done"
