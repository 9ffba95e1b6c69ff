#!/usr/bin/env bash
# Reductions along an axis and small calls on the GPU machine, in one device call of under
# 10 minutes:
#   (a) the GPU tests of the axis kernels and the warm-call paths
#       (tests/gpu/test_reduce_axis_gpu.py, test_fastpath_gpu.py)  -> $OUT/pytest-rows.log
#   (b) `warplab series --m M --n N --compare` per row shape of the series table campaign
#       (ROW_SHAPES and the tuned ones), float32 and float64, the default generator and
#       rows_adaptive only (K1's thread per series takes seconds a run on few long rows): the
#       public mean next to CuPy and torch, 32 calls per sample      -> $OUT/series-MxN-D.json
#   (c) benchmarks/explore_rows_shapes.py --default-only --axis 0      -> $OUT/rows_shapes.json
#   (d) `warplab latency` against CuPy and PyTorch                    -> $OUT/latency.json
#   (e) the read ceiling's kernels at 1 GiB, 256 MiB and 128 MiB      -> $OUT/read_ceiling.log
#   (f) benchmarks/profile_latency.py of the small calls behind torch -> $OUT/profile.log
# Arguments pick parts (tests, series32, series64, axis0, latency, ceiling, profile; default all)
# so that the parts can go in two calls of under 10 minutes each.
# Each step under its own `timeout`. Set WARPLAB_COMMIT=<sha> (the copied tree has no git
# metadata); OUT defaults to /tmp/warplab-out. Usage: bash benchmarks/rows_gpu_run.sh
set -u -o pipefail
LOG=rows_gpu_run.log
source "$(dirname "$0")/gpu_run_steps.sh"

start ${*:-tests series32 series64 axis0 latency ceiling profile}

want tests && step "(a) GPU tests" 200 "$OUT/pytest-rows.log" \
  python3 -m pytest -m gpu tests/gpu/test_reduce_axis_gpu.py tests/gpu/test_fastpath_gpu.py \
  tests/gpu/test_ceilings_gpu.py tests/gpu/test_memcpy_gpu.py::test_copy_batched_cupy_lists_and_dtypes \
  tests/gpu/test_memcpy_gpu.py::test_copy_batched_errors_write_nothing \
  tests/gpu/test_memcpy_gpu.py::test_copy_batched_plans_across_keys_threads_and_streams \
  tests/gpu/test_memcpy_gpu.py::test_no_host_synchronisation_in_copy_batched \
  -q -rfEs -p no:cacheprovider --maxfail=20 --tb=short
want tests && tail -n 1 "$OUT/pytest-rows.log" | tee -a "$LOG"

shapes=$(python3 -c "from warplab.lab.campaigns.series.bench import REPORT_SHAPE, TARGET_SHAPES, ROW_SHAPES
print(' '.join(f'{m}x{n}' for m, n in (REPORT_SHAPE, *TARGET_SHAPES, *ROW_SHAPES)))")
for dtype in float32 float64; do
  want "series${dtype#float}" || continue
  for shape in $shapes; do
    step "(b) series $shape $dtype" 60 "$OUT/series-$shape-$dtype.log" \
      python3 -m warplab series --m "${shape%x*}" --n "${shape#*x}" --dtype "$dtype" --compare \
      --variant warp_scan,rows_adaptive --json "$OUT/series-$shape-$dtype.json"
  done
done

want axis0 && step "(c) explore_rows_shapes.py" 120 "$OUT/rows_shapes.log" \
  python3 benchmarks/explore_rows_shapes.py --default-only --axis 0 --json "$OUT/rows_shapes.json"
want latency && step "(d) latency" 120 "$OUT/latency.log" \
  python3 -m warplab latency --json "$OUT/latency.json"
want latency && tail -n 40 "$OUT/latency.log" >> "$LOG"
want ceiling && step "(e) read ceiling" 90 "$OUT/read_ceiling.log" python3 -c "
from warplab.lab.harness.ceiling_rates import read_bandwidth
for mib in (1024, 256, 128):
    r = read_bandwidth('cuda', 20, mib << 20)
    print(mib, 'MiB', round(r['read_gbps']), {k: round(v) for k, v in r['read_gbps_by_method'].items()})"
want ceiling && cat "$OUT/read_ceiling.log" >> "$LOG"
want profile && step "(f) profile" 90 "$OUT/profile.log" \
  python3 benchmarks/profile_latency.py copy_batched_8 memcpy_batched_8 mean_rows_64 sum_1k
log "done (status $status)"
exit $status
