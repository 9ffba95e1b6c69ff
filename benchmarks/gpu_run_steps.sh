# Sourced by the one-call GPU scripts (memcpy_gpu_run.sh, rows_gpu_run.sh, overlap_gpu_run.sh): the common set-up
# (OUT, PYTHONPATH, WARPLAB_COMMIT) and the step runner. The caller sets LOG (its log file)
# before sourcing; `status` becomes 1 when any step fails or times out.
OUT=${OUT:-/tmp/warplab-out}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-src} PYTHONUNBUFFERED=1
export WARPLAB_COMMIT=${WARPLAB_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
LOG="$OUT/$LOG"
log() { echo "== $(date +%T) $*" | tee -a "$LOG"; }
status=0
step() {  # name limit logfile command...: run under timeout, log its exit status and seconds
  local name=$1 limit=$2 file=$3 t0 rc
  shift 3
  log "$name (limit ${limit} s)"
  t0=$(date +%s)
  timeout "$limit" "$@" > "$file" 2>&1
  rc=$?
  log "$name: exit $rc after $(( $(date +%s) - t0 )) s$([ $rc = 124 ] && echo ' (TIMED OUT)')"
  [ $rc = 0 ] || status=1
}
start() {  # parts...: build the C helpers in place, log the GPU and the commit; `want PART`
  # then says whether PART is among the parts
  python3 -c "import setup; setup.build_in_place()" > "$OUT/build_ext.log" 2>&1 \
    || log "C helpers not built (the library takes its Python paths)"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv 2>&1 | tee -a "$LOG"
  log "commit $WARPLAB_COMMIT"
  parts=" $* "
}
want() { [[ $parts == *" $1 "* ]]; }
