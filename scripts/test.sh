#!/usr/bin/env bash
# `make test`: the static checks (scripts/check.sh), then the CPU test suite with the nvcc
# compile check (scripts/nvcc_check.py) running beside it on one core; the check prints one
# summary line, or each failure with the compiler's log. Exits 1 if any part fails.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
status=0
PY=$PY bash scripts/check.sh || status=1
log=$(mktemp)
"$PY" scripts/nvcc_check.py -j 1 > "$log" 2>&1 &
nvcc_pid=$!
"$PY" -m pytest -q -p no:cacheprovider "$@" || status=1
wait "$nvcc_pid" || status=1
cat "$log"
rm -f "$log"
exit "$status"
