#!/usr/bin/env bash
# Before/after on one GPU machine, in one go: the latency campaign and the speed tables of every
# family, run alternately from a baseline tree and from this tree, then `warplab compare` of
# each pair. The baseline is another checkout's src/ (e.g. `git worktree add /tmp/base REV`,
# copied to BASE=baseline/ and carried to the GPU machine).
# `axis`: the public per-row and per-column reductions on the issue's shapes with torch beside
# (public_axis_before_after.py), the trees alternating, ROUNDS rounds.
# Writes $OUT/{base,new}-<what>-<round>.json and $OUT/before_after.log.
# Usage: BASE=baseline benchmarks/before_after.sh [latency] [speed] [axis]
set -u -o pipefail
OUT=${OUT:-/tmp/warplab-out}
BASE=${BASE:-baseline}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 COLUMNS=${COLUMNS:-100}
stages=${*:-latency speed}
has() { [[ " $stages " == *" $1 "* ]]; }
log() { echo "== $(date +%T) $*" | tee -a "$OUT/before_after.log"; }
tree_src() { if [ "$1" = base ]; then echo "$BASE/src"; else echo src; fi; }
wl() {  # tree, args...: the warplab command of that tree
  local tree=$1; shift
  PYTHONPATH=$(tree_src "$tree") timeout "${STEP_TIMEOUT:-240}" python3 -m warplab "$@"
}
if [ -f setup.py ]; then  # this tree's C helpers are built with the package
  python3 setup.py -q build_ext --inplace > "$OUT/build_ext.log" 2>&1 || log "build_ext failed"
fi
rounds=${ROUNDS:-2}
if has latency; then
  for r in $(seq 1 "$rounds"); do
    order="base new"; [ $((r % 2)) -eq 0 ] && order="new base"  # alternate who goes first
    for tree in $order; do
      log "latency $tree round $r"
      wl "$tree" latency --runs "${LAT_RUNS:-300}" --json "$OUT/$tree-latency-$r.json" \
        2>&1 | tail -n 30 | tee -a "$OUT/before_after.log"
    done
  done
fi
speed() {  # name, args...: one speed table per tree, alternately
  local name=$1; shift
  for tree in base new; do
    log "$name $tree"
    wl "$tree" "$@" --json "$OUT/$tree-$name.json" 2>&1 | tail -n 25 | tee -a "$OUT/before_after.log"
  done
  PYTHONPATH=src python3 -m warplab compare "$OUT/base-$name.json" "$OUT/new-$name.json" \
    2>&1 | tail -n 25 | tee -a "$OUT/before_after.log"
}
if has speed; then
  speed histogram histogram --generate uniform --size 1G --runs 20
  speed sum reduce --size 2^28 --dtype float32 --op sum --runs 20
  speed rows series --m 8192 --n 8192 --op mean --runs 20
  speed corr corr --m 8192 --n 8192 --runs 10
  speed sgemm matmul --size 8192 --dtype float32 --runs 10
  speed memcpy_tiny memcpy --min 1 --max 8 --in consecutive --out shuffle --align 4 --total 512M --runs 10
  speed memcpy_1k memcpy --min 1024 --max 1024 --in shuffle --out shuffle --align 16 --total 512M --runs 10
  speed stream stream --sizes 4G --source pageable,pinned --op histogram --runs 3
fi
axis_ab=benchmarks/public_axis_before_after.py
if has axis; then
  for r in $(seq 1 "$rounds"); do
    order="base new"; [ $((r % 2)) -eq 0 ] && order="new base"
    for tree in $order; do
      log "axis $tree round $r"
      PYTHONPATH=$(tree_src "$tree") timeout "${STEP_TIMEOUT:-240}" python3 "$axis_ab" run \
        --json "$OUT/$tree-axis-$r.json" > "$OUT/$tree-axis-$r.log" 2>&1 || log "axis $tree failed"
    done
  done
  python3 "$axis_ab" compare --base "$OUT"/base-axis-*.json --new "$OUT"/new-axis-*.json \
    2>&1 | tee -a "$OUT/before_after.log"
fi
if has latency; then
  for r in $(seq 1 "$rounds"); do
    PYTHONPATH=src python3 -m warplab compare "$OUT/base-latency-$r.json" "$OUT/new-latency-$r.json" \
      2>&1 | tail -n 30 | tee -a "$OUT/before_after.log"
  done
fi
log done
