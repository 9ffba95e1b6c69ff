#!/usr/bin/env bash
# `make test`: the static checks (scripts/check.sh), then the CPU test suite in one process per
# core (pytest-xdist) with the nvcc compile check (scripts/nvcc_check.py) beside it, one job;
# the check prints one summary line, or each failure with the compiler's log. Exits 1 if any
# part fails. Extra arguments go to pytest (e.g. `-n 0`: one process).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
status=0
PY=$PY bash scripts/check.sh || status=1
log=$(mktemp)
"$PY" scripts/nvcc_check.py -j 1 > "$log" 2>&1 &
nvcc_pid=$!
"$PY" -m pytest -q -p no:cacheprovider -n auto "$@" || status=1
wait "$nvcc_pid" || status=1
cat "$log"
rm -f "$log"
exit "$status"
