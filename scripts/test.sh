#!/usr/bin/env bash
# `make test`: the nvcc compile check (scripts/nvcc_check.py) starts first, in the background,
# one compilation per core at the lowest CPU priority (nice 19): it takes the cores the rest
# leaves idle (the install and the static checks run on one core, tests wait on processes and
# clusters) and has them to itself once pytest is done; it needs NumPy only. Meanwhile the
# install is completed ($INSTALL, where `make` passes it), then the static checks
# (scripts/check.sh), then the CPU test suite in one process per core (pytest-xdist). Prints
# each part's summary line (the nvcc check's log only when a compilation fails) and the wall
# time; exits 1 if any part fails. Extra arguments go to pytest (e.g. `-n 0`: one process).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
start=$SECONDS
status=0
log=$(mktemp)
nice -n 19 "$PY" scripts/nvcc_check.py -j "$(nproc)" > "$log" 2>&1 &
nvcc_pid=$!
trap 'kill "$nvcc_pid" 2>/dev/null; rm -f "$log"; exit 130' INT TERM
if [ -n "${INSTALL:-}" ] && ! $INSTALL; then
    kill "$nvcc_pid" 2>/dev/null
    rm -f "$log"
    echo "make test: the install failed" >&2
    exit 1
fi
PY=$PY bash scripts/check.sh || status=1
"$PY" -m pytest -q -p no:cacheprovider -n auto "$@" || status=1
wait "$nvcc_pid" || status=1
cat "$log"
rm -f "$log"
echo "make test: $([ "$status" -eq 0 ] && echo passed || echo FAILED) in $((SECONDS - start)) s"
exit "$status"
