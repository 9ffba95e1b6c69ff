#!/usr/bin/env bash
# warplab.dask on the GPU machine, in one go: the GPU tests of warplab.dask and of corr, then
# the table campaign (`warplab dask --campaign table`), its JSON and printed tables in $OUT,
# and everything under $OUT packed into one file at the end (the device tool returns few
# files). Runs from the repository root; wheels in .whl/ (dask, distributed, dask-cuda and
# their dependencies) are installed into /tmp/site as benchmarks/gpu_shards.sh does, and
# .whl/ucx/ucxsite.tar.xz (UCX for dask-cuda, CONTRIBUTING.md) unpacked beside them.
#
# Usage: benchmarks/dask_gpu.sh [WORKLOADS [MODES]]
#   WORKLOADS  comma-separated names (default: all): corr_pairs_0.9, corr_pairs_0.99,
#              corrcoef, corrcoef_large (4+ GPUs), histogram_files, histogram_files_cold
#   MODES      comma-separated kinds (default: all): direct, cluster, processes
# Environment:
#   BUDGET_S   seconds for the whole script (default 560: under the 10-minute command limit);
#              the campaign gets what the tests left and writes its JSON after every mode, so
#              a run cut short keeps what it measured
#   TESTS=0    skip the tests (a second call that runs more workloads); TEST_FILES: other
#              test files (default: the dask, dask corr placement and corr GPU tests)
#   CAMPAIGN   table (default) or quick; RUNS, WARMUP override the campaign's; THREADS:
#              threads per worker of the campaign's clusters (default 1)
#   FILES_DIR  where histogram_files' 4 x 8 GiB are written once and kept between calls
#              (default /tmp/warplab-dask-files)
# Every workload in every mode does not fit one 10-minute command on 4 GPUs. Measured on
# 4 x H200 (8 modes with UCX): corrcoef + corrcoef_large about 3 minutes; corr_pairs 0.9 and
# 0.99 together, and histogram_files warm and cold together (a cold read of the 32 GiB is
# about 25 s per run), each ran past 9 minutes before the CLI mode. So five calls:
#   benchmarks/dask_gpu.sh corrcoef,corrcoef_large                       (with the tests)
#   TESTS=0 benchmarks/dask_gpu.sh corr_pairs_0.9
#   TESTS=0 benchmarks/dask_gpu.sh corr_pairs_0.99
#   TESTS=0 benchmarks/dask_gpu.sh histogram_files
#   TESTS=0 benchmarks/dask_gpu.sh histogram_files_cold
set -u -o pipefail
start=$(date +%s)
OUT=${OUT:-/tmp/warplab-out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1
WORKLOADS=${1:-}
MODES=${2:-}
BUDGET_S=${BUDGET_S:-560}
tag=$(date +%Y%m%d-%H%M%S)-$(nvidia-smi -L 2>/dev/null | wc -l)gpu
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl > "$OUT/pip.log" 2>&1 || echo "pip install failed (see pip.log)"
  export PYTHONPATH=$PYTHONPATH:/tmp/site PATH=/tmp/site/bin:$PATH
fi
if [ -f .whl/ucx/ucxsite.tar.xz ]; then  # UCX (distributed-ucxx, ucxx, rmm), unpacked site tree
  mkdir -p /tmp/ucx-site && tar -xJf .whl/ucx/ucxsite.tar.xz -C /tmp/ucx-site
  for sub in bindings core pathfinder; do  # the machine's own cuda.* win (CONTRIBUTING.md)
    python3 -c "import importlib.util as u, sys; sys.exit(u.find_spec('cuda.$sub') is None)" \
      2>/dev/null && rm -rf "/tmp/ucx-site/cuda/$sub" /tmp/ucx-site/cuda_"$sub"-*.dist-info
  done
  export PYTHONPATH=$PYTHONPATH:/tmp/ucx-site
  python3 -c "import distributed_ucxx, ucxx; print('ucx: distributed_ucxx', ucxx.__version__)" \
    2>&1 | tail -n 1
fi
if [ -f setup.py ]; then  # the C helpers are built with the package
  python3 setup.py -q build_ext --inplace > "$OUT/build_ext.log" 2>&1 || echo "build_ext failed"
fi
{ nvidia-smi -L; nproc; free -g; df -h /tmp; } > "$OUT/machine-$tag.txt" 2>&1
python3 -c "import dask, distributed, dask_cuda; print('dask', dask.__version__, \
'distributed', distributed.__version__, 'dask_cuda', dask_cuda.__version__)" 2>&1 | tail -n 1
rc=0
if [ "${TESTS:-1}" != 0 ]; then
  # shellcheck disable=SC2086
  timeout 300 python3 -m pytest -m gpu ${TEST_FILES:-tests/gpu/test_dask_gpu.py tests/gpu/test_dask_corr_gpu.py tests/gpu/test_corr_gpu.py tests/gpu/test_corr_pairs_stream_gpu.py} \
    -q -rfEs -p no:cacheprovider --tb=short --durations=10 > "$OUT/pytest-dask-$tag.log" 2>&1 \
    || rc=$?
  echo "== pytest: $(grep -E '[0-9]+ (passed|failed|error)' "$OUT/pytest-dask-$tag.log" | tail -n 1)"
  grep -E "^(FAILED|ERROR)" "$OUT/pytest-dask-$tag.log" | head -n 20
fi
left=$(( BUDGET_S - ($(date +%s) - start) - 15 ))
if [ "$left" -gt 30 ]; then
  # shellcheck disable=SC2086
  timeout --signal=INT --kill-after=10 "$left" python3 -m warplab dask \
    --campaign "${CAMPAIGN:-table}" ${WORKLOADS:+--workload "$WORKLOADS"} \
    ${MODES:+--modes "$MODES"} ${RUNS:+--runs "$RUNS"} ${WARMUP:+--warmup "$WARMUP"} ${THREADS:+--threads "$THREADS"} \
    --files "${FILES_DIR:-/tmp/warplab-dask-files}" --json "$OUT/dask-$tag.json" \
    > "$OUT/dask-$tag.txt" 2> "$OUT/dask-$tag.err" || rc=$?
  grep -v " eta " "$OUT/dask-$tag.txt"
  tail -n 5 "$OUT/dask-$tag.err"
else
  echo "no time left for the campaign ($left s)"
fi
# one file back: everything under $OUT packed
tar -czf "/tmp/warplab-dask-$tag.tar.gz" -C "$OUT" . && rm -rf "${OUT:?}"/* \
  && mv "/tmp/warplab-dask-$tag.tar.gz" "$OUT/"
echo "packed: $OUT/warplab-dask-$tag.tar.gz (exit $rc, $(( $(date +%s) - start )) s)"
exit $rc
