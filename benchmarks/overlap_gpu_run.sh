#!/usr/bin/env bash
# The overlapped launches and the per-row probe on the GPU machine, in one device call of
# under 10 minutes:
#   (a) the GPU tests in shards (gpu_shards.sh; Dask's skip)  -> $OUT/pytest-gpu.log, shards
#   (b) benchmarks/explore_rows_shapes.py --axis 1 (all settings)    -> $OUT/rows_shapes1.json
#   (c) benchmarks/explore_rows_shapes.py --axis 0 (all settings)    -> $OUT/rows_shapes0.json
#   (d) benchmarks/explore_memcpy_floor.py                           -> $OUT/memcpy_floor.json
#   (e) benchmarks/explore_memcpy_writeback.py, 1 GiB, windows of 1-8 MiB -> $OUT/writeback.json
#   (f) the axis GPU tests alone, in three processes (axistests)      -> $OUT/pytest-axis-N.log
#   (g) explore_rows_shapes.py --default-only --axis 1 (rows1d)       -> $OUT/rows_default1.json
#   (h) explore_memcpy_floor.py on the 64 KiB and 1-4 KiB cells with the warp kernel's early
#       trigger off and on, one process each (floorab)              -> $OUT/floor_trigger{0,1}.json
#   (i) benchmarks/explore_copy_batched_costs.py (costs)              -> $OUT/copy_costs.json
#   (j) the memcpy GPU tests, in three processes (memtests)           -> $OUT/pytest-mem-N.log
#   (k) explore_rows_shapes.py --default-only --axis 0, the columns kernel with and without
#       the L2::256B hint, one process each (axis0ab; AXIS0_SHAPES=RxC,...: other shapes)
#                                                         -> $OUT/axis0_stream{1-1,2-0}.json
#   (l) the memcpy grid at 64 MiB, 256 MiB and 1 GiB with CUB (grid; GRID_SIZES=1G: other
#       totals; GRID_DEADLINE=S: the campaign's deadline, default 190: too short for all
#       three totals)                                               -> $OUT/memcpy-totals.json
#   (m) explore_memcpy_floor.py on the 1 KiB cells and two others, the warp kernel's second
#       group tier as a whole warp (the default) and in groups of 16 lanes (floorg2)
#                                                                   -> $OUT/floor_g2.json
#   (n) explore_rows_shapes.py --axis 0 on few long rows, 16-128 x 2^20 (axis0few)
#                                                                   -> $OUT/axis0_few.json
#   (o) explore_memcpy_floor.py --windows-parts on cells of 2^20 buffers and more: the
#       destination windows' judging and copy alone, the path launched plainly and
#       overlapped (winparts)                                       -> $OUT/floor_windows.json
#   (p) explore_memcpy_floor.py on the 1-4096 B mixes and two fixed sizes, the warp loop's
#       misaligned copy by shifted 8-byte loads and by shuffles (WARPLAB_MEMCPY_WARP_SHUFFLE
#       0, 4, 2; SHUFFLES="...": others), one process each (shufab; SHUF_CELLS: other cells,
#       SHUF_ARGS: more arguments)                              -> $OUT/floor_shuffle{0,4,2}.json
#   (q) the memcpy GPU tests of the warp kernel compiled with the settings of
#       WARPLAB_MEMCPY_WARP_SHUFFLE other than the library's, 0 and 4, beside (j) (shuftests)
#                                                               -> $OUT/pytest-shuf{0,4}-N.log
#   (r) python3 -m warplab latency (latency)                      -> $OUT/latency.json
#   (v) python3 -m warplab bench latency --full (latfull)      -> $OUT/latency_full/*/latency.json
#   (t) benchmarks/explore_mean_rows_costs.py (meancosts)            -> $OUT/mean_costs.json
#   (w) the memcpy shard of the GPU suite (test_memcpy_gpu, _windows_gpu, _ceiling_gpu in one
#       process, as gpu_shards.sh runs them), twice in a row (memshard; MEMSHARD_PYTEST: the
#       command, e.g. compute-sanitizer in front)          -> $OUT/pytest-memshard-{1,2}.log
#   (x) the BLEV queue's GPU tests (the long queues, the pointer form across calls, streams
#       and threads, copy_batched's plans across threads) in a loop in QUEUE_PROCS processes
#       (default 4) for QUEUE_SECONDS (200) (queuestress)         -> $OUT/queue-stress-N.log
#   (y) explore_rows_shapes.py --default-only --axis 0, the columns kernel's loads in flight
#       per thread (WARPLAB_AXIS_COLS_UNROLL 4, 8, 16, 4, 8; COLS_UNROLLS: others) (axis0unr)
#                                                               -> $OUT/axis0_unrK-U.json
#   (s) explore_rows_shapes.py --axis 0 --hint-ab: the columns kernel with and without the
#       L2::256B hint, alternating in one process (axis0hint)       -> $OUT/axis0_hint.json
#   (z) explore_axis0_ops.py --one-lane on 16-128 x 2^20: each op's columns kernel at the
#       plan's geometry and without its row lanes of one unrolled step, in one rotation, and
#       the public calls (axis0lanes)                                -> $OUT/axis0_lanes.json
# Arguments pick parts (tests rows1 rows0 floor writeback axistests rows1d floorab costs
# memtests axis0ab grid floorg2 axis0few winparts shufab shuftests latency axis0hint meancosts
# latfull memshard queuestress axis0unr axis0lanes; default the first five). Everything under
# $OUT is also packed into $OUT/all.tar.gz (the device call brings back a few files only).
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
tests_in_processes() {  # label limit logname "pytest arguments"...: one process each, at once;
  # `status` becomes 1 when one of them fails or runs past the limit; PYTEST: the command
  local label=$1 limit=$2 name=$3 i=0 spec pid pids=()
  shift 3
  log "$label, $# processes"
  for spec in "$@"; do
    i=$((i + 1))
    eval "timeout $limit ${PYTEST:-python3 -m pytest} -m gpu -q -rfEs -p no:cacheprovider" \
      "--maxfail=20 --tb=short $spec" > "$OUT/pytest-$name-$i.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for f in "$OUT"/pytest-"$name"-*.log; do log "$(basename "$f"): $(tail -n 1 "$f")"; done
}
g=tests/gpu
# the axis GPU tests in two processes of about equal length (pytest arguments each)
axis_halves=("$g/test_reduce_axis_gpu.py -k 'staged or banded or packed'"
  "$g/test_reduce_axis_gpu.py -k 'not (staged or banded or packed)'")
want axistests && tests_in_processes "(f) axis GPU tests" 240 axis "${axis_halves[@]}" \
  "$g/test_overlap_gpu.py"
want rows1d && step "(g) rows probe, axis 1, default" 120 "$OUT/rows_default1.log" \
  python3 benchmarks/explore_rows_shapes.py --default-only --axis 1 \
  --json "$OUT/rows_default1.json"
for t in 0 1; do
  want floorab && step "(h) memcpy floor, warp trigger $t" 150 "$OUT/floor_trigger$t.log" \
    python3 benchmarks/explore_memcpy_floor.py --warp-trigger $t \
    --cells 65536:1G:C_C,65536:1G:S_S,65536:256M:C_C,1024:64M:C_C,4096:64M:C_C \
    --json "$OUT/floor_trigger$t.json"
done
want costs && step "(i) copy_batched costs" 150 "$OUT/copy_costs.log" \
  python3 benchmarks/explore_copy_batched_costs.py --json "$OUT/copy_costs.json"
want meancosts && step "(t) mean(x, axis=1) costs" 150 "$OUT/mean_costs.log" \
  python3 benchmarks/explore_mean_rows_costs.py --json "$OUT/mean_costs.json"
few="variants_copy or warp_classes or full_byte"
with_define() {  # MODULE NAME=V: a pytest command whose kernels of MODULE (its DEFINES) are
  # compiled with -DNAME=V
  echo "python3 -c 'import sys; import $1 as m;" \
    "m.DEFINES[\"${2%%=*}\"] = ${2#*=}; import pytest; sys.exit(pytest.main(sys.argv[1:]))'"
}
if want shuftests; then
  for u in 0 4; do
    PYTEST=$(with_define warplab.families.memcpy.cuda WARPLAB_MEMCPY_WARP_SHUFFLE=$u) \
      tests_in_processes \
      "(q) memcpy GPU tests, WARPLAB_MEMCPY_WARP_SHUFFLE=$u" 240 "shuf$u" \
      "$g/test_memcpy_gpu.py -k '$few'" &
  done
fi
want memtests && tests_in_processes "(j) memcpy GPU tests" 240 mem \
  "$g/test_memcpy_gpu.py -k '$few'" \
  "$g/test_memcpy_gpu.py -k 'not ($few)' $g/test_memcpy_ceiling_gpu.py" \
  "$g/test_memcpy_windows_gpu.py $g/test_overlap_gpu.py"
wait  # (q)'s processes
want shuftests && for f in "$OUT"/pytest-shuf*.log; do
  log "$(basename "$f"): $(tail -n 1 "$f")"
  tail -n 1 "$f" | grep -q " passed" && ! tail -n 1 "$f" | grep -q "failed\|error" || status=1
done
axis0_settings() {  # label name prefix "shapes" values...: the public axis-0 calls, one
  # process a value of the define `name`, in order -> $OUT/axis0_<prefix><k>-<value>.{log,json}
  local label=$1 name=$2 prefix=$3 shapes=$4 k=0 v
  shift 4
  for v in "$@"; do
    k=$((k + 1))
    step "$label axis 0, $name=$v" 150 "$OUT/axis0_$prefix$k-$v.log" \
      python3 benchmarks/explore_rows_shapes.py --default-only --axis 0 --define "$name=$v" \
      ${shapes:+--shapes "$shapes"} --json "$OUT/axis0_$prefix$k-$v.json"
  done
}
# shellcheck disable=SC2086
want axis0unr && axis0_settings "(y)" WARPLAB_AXIS_COLS_UNROLL unr \
  "${AXIS0_SHAPES:-32x1048576,8192x8192,64x1048576,16x1048576,512x262144,1048576x32}" \
  ${COLS_UNROLLS:-4 8 16 4 8}
want axis0ab && axis0_settings "(k)" WARPLAB_AXIS_COLS_STREAM stream "${AXIS0_SHAPES:-}" 1 0
want axis0lanes && step "(z) axis 0, row lanes of one step" 240 "$OUT/axis0_lanes.log" \
  python3 benchmarks/explore_axis0_ops.py --one-lane \
  --shapes "${AXIS0_SHAPES:-16x1048576,32x1048576,64x1048576,128x1048576}" \
  --json "$OUT/axis0_lanes.json"
if want grid; then
  tmp=$(mktemp -d)
  step "(l) memcpy grid, three totals" $(( ${GRID_DEADLINE:-190} + 40 )) "$OUT/memcpy-totals.log" \
    python3 -m warplab bench memcpy --full --sizes "${GRID_SIZES:-64M,256M,1G}" \
    --variant warp_tiers_windows --deadline "${GRID_DEADLINE:-190}" --out "$tmp"
  cp "$tmp"/*/memcpy.json "$OUT/memcpy-totals.json" 2>/dev/null || log "(l) wrote no JSON"
fi
want floorg2 && step "(m) memcpy floor, second tier as a warp and in 16-lane groups" 200 \
  "$OUT/floor_g2.log" \
  python3 benchmarks/explore_memcpy_floor.py --group2 16 \
  --cells 1024:1G:C_C,1024:1G:S_S,1024:256M:C_C,1024:64M:C_C,512:1G:S_S,4096:1G:C_C \
  --json "$OUT/floor_g2.json"
want axis0few && step "(n) axis 0, few long rows" 200 "$OUT/axis0_few.log" \
  python3 benchmarks/explore_rows_shapes.py --axis 0 \
  --shapes 16x1048576,32x1048576,64x1048576,128x1048576 --json "$OUT/axis0_few.json"
want winparts && step "(o) memcpy floor, the windows' parts" 200 "$OUT/floor_windows.log" \
  python3 benchmarks/explore_memcpy_floor.py --windows-parts \
  --cells 1024:1G:C_C,1024:1G:S_S,256:1G:S_S,16:1G:S_S,16:256M:S_S \
  --json "$OUT/floor_windows.json"
mixes=1-4096:1G:S_S:a1,1-4096:1G:C_S:a1,1-4096:1G:S_C:a1,1-4096:1G:S_S:a4,1-4096:1G:S_S:a16
for u in ${SHUFFLES:-0 4 2}; do
  want shufab && step "(p) memcpy floor, WARPLAB_MEMCPY_WARP_SHUFFLE=$u" 150 \
    "$OUT/floor_shuffle$u.log" python3 benchmarks/explore_memcpy_floor.py \
    --define WARPLAB_MEMCPY_WARP_SHUFFLE=$u ${SHUF_ARGS:-} \
    --cells "${SHUF_CELLS:-$mixes,1-4096:256M:S_S:a1,1024:1G:C_C,4096:1G:S_S}" \
    --json "$OUT/floor_shuffle$u.json"
done
want axis0hint && step "(s) axis 0, the L2::256B hint A/B in one process" 240 \
  "$OUT/axis0_hint.log" python3 benchmarks/explore_rows_shapes.py --axis 0 --hint-ab \
  --shapes "${AXIS0_SHAPES:-8192x8192,32x1048576,64x1048576,128x1048576,512x262144,1048576x32}" \
  --json "$OUT/axis0_hint.json"
for i in 1 2; do
  want memshard && step "(w) the memcpy shard, run $i" 280 "$OUT/pytest-memshard-$i.log" \
    ${MEMSHARD_PYTEST:-python3 -m pytest} -m gpu -q -rfEs -p no:cacheprovider --maxfail=5 \
    --tb=short $g/test_memcpy*_gpu.py  # gpu_shards.sh's memcpy shard
done
queue_loop() {  # seconds log: the BLEV queue's GPU tests, one pytest process after another
  local end=$(( $(date +%s) + $1 )) i=0 fails=0 rc
  while [ "$(date +%s)" -lt "$end" ]; do
    i=$((i + 1))
    timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --tb=short -x \
      $g/test_memcpy_gpu.py -k "long_blev or pointer_form_queue or copy_batched_plans_across" \
      > "$2.last" 2>&1
    rc=$?
    echo "iteration $i: exit $rc, $(tail -n 1 "$2.last")" >> "$2"
    [ $rc = 0 ] || { fails=$((fails + 1)); tail -n 40 "$2.last" >> "$2"; }
  done
  rm -f "$2.last"
  echo "$i iterations, $fails failed" >> "$2"
  [ $fails = 0 ]
}
if want queuestress; then
  log "(x) the BLEV queue's tests in a loop, ${QUEUE_PROCS:-4} processes, ${QUEUE_SECONDS:-200} s"
  pids=()
  for k in $(seq "${QUEUE_PROCS:-4}"); do
    queue_loop "${QUEUE_SECONDS:-200}" "$OUT/queue-stress-$k.log" & pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  for f in "$OUT"/queue-stress-*.log; do log "$(basename "$f"): $(tail -n 1 "$f")"; done
fi
want latency && step "(r) the latency campaign" 120 "$OUT/latency.log" \
  python3 -m warplab latency --json "$OUT/latency.json"
want latfull && step "(v) the latency campaign, full" 400 "$OUT/latency_full.log" \
  python3 -m warplab bench latency --full --out "$OUT/latency_full"
log "done (status $status)"
tar -czf /tmp/all.tar.gz -C "$OUT" . && mv /tmp/all.tar.gz "$OUT/all.tar.gz"
exit $status
