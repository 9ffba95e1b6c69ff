#!/usr/bin/env bash
# The GPU test suite in parallel shards (GPU machine; the suite is mostly host-bound: NumPy
# references, NVRTC compiles, so several processes on one GPU take a fraction of the time;
# on a machine with several GPUs the shards are spread over them).
# Each shard writes $OUT/pytest-shard-N.log; the summary lines go to stdout.
# Usage: benchmarks/gpu_shards.sh ["files of shard 1" "files of shard 2" ...]
# Extra pytest options: PYTEST_ARGS; per-shard limit: PYTEST_TIMEOUT (s, default 420).
set -u -o pipefail
OUT=${OUT:-/tmp/warplab-out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then  # optional packages carried as wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
if [ -f setup.py ]; then  # the C helpers are built with the package
  python3 setup.py -q build_ext --inplace > "$OUT/build_ext.log" 2>&1 || echo "build_ext failed"
fi
g=tests/gpu
if [ $# -eq 0 ]; then  # every GPU test file, in eight shards
  set -- "$g/test_histogram_gpu.py $g/test_histogram_one_block_gpu.py $g/test_file_ranges_gpu.py" \
    "$g/test_histogram_numeric_gpu.py $g/test_matmul_gpu.py" \
    "$g/test_reduce_axis_gpu.py $g/test_reduce_plan_gpu.py" "$g/test_reduce_gpu.py" \
    "$(echo $g/test_memcpy*_gpu.py)" \
    "$g/test_corr_gpu.py $g/test_corr_chunks_gpu.py $g/test_corr_slices_gpu.py $g/test_gram_gpu.py $g/test_dask_gpu.py $g/test_dask_corr_gpu.py" \
    "$g/test_readme_gpu.py $g/test_fastpath_gpu.py $g/test_small_paths_gpu.py $g/test_scalar_gpu.py $g/test_launch_gpu.py $g/test_latency_gpu.py $g/test_streaming_gpu.py $g/test_overlap_gpu.py" \
    "$g/test_corr_pairs_stream_gpu.py $g/test_random_walk_gpu.py $g/test_ceilings_gpu.py"
fi
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
missing=$(ls $g/test_*.py | while read -r f; do [[ " $* " == *" $f "* ]] || echo "$f"; done)
[ -z "$missing" ] || echo "gpu_shards: not in any shard: $missing"
i=0
pids=()
for files in "$@"; do
  i=$((i + 1))
  # several GPUs: shard i on GPU (i - 1) mod n, the dask shards on every GPU
  visible=
  if [ "$gpus" -gt 1 ] && [[ "$files" != *dask* ]]; then visible=$(( (i - 1) % gpus )); fi
  # shellcheck disable=SC2086
  env ${visible:+CUDA_VISIBLE_DEVICES=$visible} timeout "${PYTEST_TIMEOUT:-420}" python3 -m pytest -m gpu $files -q -rfEs -p no:cacheprovider \
    --maxfail=40 --tb=short --durations=10 ${PYTEST_ARGS:-} > "$OUT/pytest-shard-$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for j in "${!pids[@]}"; do
  wait "${pids[$j]}" || rc=$?
  echo "== shard $((j + 1)): $(grep -E '^[0-9]+ (passed|failed)|^FAILED|^ERROR|[0-9]+ (passed|failed|error)' "$OUT/pytest-shard-$((j + 1)).log" | tail -n 3 | tr '\n' ' ')"
done
grep -h -E "^(FAILED|ERROR)" "$OUT"/pytest-shard-*.log | head -n 40
exit $rc
