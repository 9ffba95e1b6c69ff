#!/usr/bin/env bash
# Issue 13 (batched memcpy) on the GPU machine in one device call of under 9 minutes:
#   (a) the memcpy GPU tests: tests/gpu/test_memcpy_gpu.py (every variant, warp_classes and
#       its sweep shapes, the planned grid's runner: 569 tests) -> $OUT/pytest-memcpy-gpu.log
#   (b) benchmarks/explore_memcpy_small.py (warp_classes, its shapes, the default and CUB on
#       the small cells, every byte checked)        -> $OUT/explore_memcpy_small.{log,json}
#   (c) the full PR grid with CUB in the same run: its plan first (--dry-run, CPU), then
#       `warplab bench memcpy --full`               -> $OUT/memcpy-full.{log,json}
# Each step under its own `timeout`; the limits add up to 530 s (8 min 50 s) at most.
# Estimates (H100; cold caches for the first step, warm after it; benchmarks/NOTES.md, helper notes memcpy3):
#   (a) ~75 s: CUB helper nvcc build ~20 s, NVRTC of memcpy.cu ~5 s, 569 tests ~50 s   (limit 180)
#   (b) ~60 s: ceilings measured and stored ~15 s, 22 cells x 8 targets planned at ~18 s,
#       the every-byte check ~10 s, CuPy kernels compiled on first use              (limit 120)
#   (c) ~95 s: 140 cells, 566 records planned at ~72 s (conservative), start-up ~10 s
#       with warm caches, the public-call records ~10 s; no new cell starts after
#       $DEADLINE s of cells, so the JSON is written before the limit; should the limit
#       strike anyway, SIGTERM still writes the JSON of the records so far          (limit 230)
# Set WARPLAB_COMMIT=<sha> (the copied tree has no git metadata); OUT defaults to
# /tmp/warplab-out. Usage: WARPLAB_COMMIT=abc1234 bash benchmarks/memcpy_gpu_run.sh
set -u -o pipefail
T_TESTS=${T_TESTS:-180} T_EXPLORE=${T_EXPLORE:-120} T_GRID=${T_GRID:-230}
DEADLINE=${DEADLINE:-180}
LOG=memcpy_gpu_run.log
source "$(dirname "$0")/gpu_run_steps.sh"

nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  2>&1 | tee -a "$LOG"
log "commit $WARPLAB_COMMIT"

step "(a) pytest tests/gpu/test_memcpy_gpu.py" "$T_TESTS" "$OUT/pytest-memcpy-gpu.log" \
  python3 -m pytest -m gpu tests/gpu/test_memcpy_gpu.py -q -rfEs -p no:cacheprovider \
  --maxfail=40 --tb=short --durations=10
grep -E "passed|failed|error" "$OUT/pytest-memcpy-gpu.log" | tail -n 3 | tee -a "$LOG"

step "(b) explore_memcpy_small.py" "$T_EXPLORE" "$OUT/explore_memcpy_small.log" \
  env OUT="$OUT" python3 benchmarks/explore_memcpy_small.py
tail -n 3 "$OUT/explore_memcpy_small.log" | tee -a "$LOG"

log "(c) the plan of warplab bench memcpy --full"
python3 -m warplab bench memcpy --full --dry-run 2>&1 | tail -n 2 | tee -a "$LOG"
tmp=$(mktemp -d)
step "(c) warplab bench memcpy --full --deadline $DEADLINE" "$T_GRID" "$OUT/memcpy-full.log" \
  python3 -m warplab bench memcpy --full --deadline "$DEADLINE" --out "$tmp"
if cp "$tmp"/*/memcpy.json "$OUT/memcpy-full.json" 2>/dev/null; then
  grep -E "^memcpy full|planned grid|stopped at" "$OUT/memcpy-full.log" | tee -a "$LOG"
else
  log "(c) wrote no JSON"
  status=1
fi
log "done (status $status)"
exit $status
