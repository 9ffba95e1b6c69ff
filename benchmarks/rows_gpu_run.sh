#!/usr/bin/env bash
# Reductions along an axis and small calls on the GPU machine, in one device call of under
# 10 minutes:
#   (a) the GPU tests of the axis kernels and the warm-call paths
#       (tests/gpu/test_reduce_axis_gpu.py, test_fastpath_gpu.py)  -> $OUT/pytest-rows.log
#   (b) `warplab series --m M --n N --compare` per row shape of the series table campaign
#       (ROW_SHAPES and the tuned ones), float32 and float64, the default generator and
#       rows_adaptive only (K1's thread per series takes seconds a run on few long rows): the
#       public mean next to CuPy and torch, 32 calls per sample      -> $OUT/series-MxN-D.json
#   (c) benchmarks/explore_rows_shapes.py --default-only (axis 0 too) -> $OUT/rows_shapes.json
#   (d) `warplab latency` against CuPy and PyTorch                    -> $OUT/latency.json
# Each step under its own `timeout`. Set WARPLAB_COMMIT=<sha> (the copied tree has no git
# metadata); OUT defaults to /tmp/warplab-out. Usage: bash benchmarks/rows_gpu_run.sh
set -u -o pipefail
LOG=rows_gpu_run.log
source "$(dirname "$0")/gpu_run_steps.sh"

python3 -c "import setup; setup.build_in_place()" > "$OUT/build_ext.log" 2>&1 \
  || log "C helpers not built (the library takes its Python paths)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$LOG"
log "commit $WARPLAB_COMMIT"

step "(a) GPU tests" 200 "$OUT/pytest-rows.log" \
  python3 -m pytest -m gpu tests/gpu/test_reduce_axis_gpu.py tests/gpu/test_fastpath_gpu.py \
  -q -rfEs -p no:cacheprovider --maxfail=20 --tb=short
tail -n 1 "$OUT/pytest-rows.log" | tee -a "$LOG"

shapes=$(python3 -c "from warplab.lab.campaigns.series.bench import REPORT_SHAPE, TARGET_SHAPES, ROW_SHAPES
print(' '.join(f'{m}x{n}' for m, n in (REPORT_SHAPE, *TARGET_SHAPES, *ROW_SHAPES)))")
for dtype in float32 float64; do
  for shape in $shapes; do
    step "(b) series $shape $dtype" 60 "$OUT/series-$shape-$dtype.log" \
      python3 -m warplab series --m "${shape%x*}" --n "${shape#*x}" --dtype "$dtype" --compare \
      --variant warp_scan,rows_adaptive --json "$OUT/series-$shape-$dtype.json"
  done
done

step "(c) explore_rows_shapes.py" 120 "$OUT/rows_shapes.log" \
  python3 benchmarks/explore_rows_shapes.py --default-only --json "$OUT/rows_shapes.json"
step "(d) latency" 120 "$OUT/latency.log" python3 -m warplab latency --json "$OUT/latency.json"
tail -n 40 "$OUT/latency.log" >> "$LOG"
log "done (status $status)"
exit $status
