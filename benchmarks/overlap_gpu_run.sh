#!/usr/bin/env bash
# The overlapped launches and the per-row probe on the GPU machine, in one device call of
# under 10 minutes:
#   (a) the GPU tests in shards (gpu_shards.sh; Dask's skip)  -> $OUT/pytest-gpu.log, shards
#   (b) benchmarks/explore_rows_shapes.py --axis 1 (all settings)    -> $OUT/rows_shapes1.json
#   (c) benchmarks/explore_rows_shapes.py --axis 0 (all settings)    -> $OUT/rows_shapes0.json
#   (d) benchmarks/explore_memcpy_floor.py                           -> $OUT/memcpy_floor.json
#   (e) benchmarks/explore_memcpy_writeback.py, 1 GiB, windows of 1-8 MiB -> $OUT/writeback.json
# Arguments pick parts (tests rows1 rows0 floor writeback; default all). Everything under $OUT
# is also packed into $OUT/all.tar.gz (the device call brings back a few files only).
# Usage: OUT=... WARPLAB_COMMIT=<sha> bash benchmarks/overlap_gpu_run.sh [parts]
set -u -o pipefail
LOG=overlap_gpu_run.log
source "$(dirname "$0")/gpu_run_steps.sh"

start ${*:-tests rows1 rows0 floor writeback}

want tests && step "(a) GPU tests" 300 "$OUT/pytest-gpu.log" \
  env PYTEST_TIMEOUT=290 bash benchmarks/gpu_shards.sh
want tests && tail -n 12 "$OUT/pytest-gpu.log" | tee -a "$LOG"
want rows1 && step "(b) rows probe, axis 1" 150 "$OUT/rows_shapes1.log" \
  python3 benchmarks/explore_rows_shapes.py --axis 1 --json "$OUT/rows_shapes1.json"
want rows0 && step "(c) rows probe, axis 0" 120 "$OUT/rows_shapes0.log" \
  python3 benchmarks/explore_rows_shapes.py --axis 0 --json "$OUT/rows_shapes0.json"
want floor && step "(d) memcpy floor" 150 "$OUT/memcpy_floor.log" \
  python3 benchmarks/explore_memcpy_floor.py --json "$OUT/memcpy_floor.json"
want writeback && step "(e) writeback windows" 200 "$OUT/writeback.log" \
  python3 benchmarks/explore_memcpy_writeback.py --totals 1G --sizes 16,1-8 \
  --orders consecutive,win1M,win2M,win4M,win8M,shuffle --deadline 150 \
  --json "$OUT/writeback.json"
log "done (status $status)"
tar -czf /tmp/all.tar.gz -C "$OUT" . && mv /tmp/all.tar.gz "$OUT/all.tar.gz"
exit $status
