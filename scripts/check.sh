#!/usr/bin/env bash
# Static checks of the library (src/warplab without the lab): ruff, then mypy, both with the
# configuration in pyproject.toml ([tool.ruff], [tool.mypy]). Prints every finding, then one
# summary line per checker; exits 1 when either finds anything.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
status=0

ruff_out=$("$PY" -m ruff check --output-format concise --quiet 2>&1)
ruff_rc=$?
[ -n "$ruff_out" ] && printf '%s\n' "$ruff_out"
ruff_n=$(printf '%s\n' "$ruff_out" | grep -cE '^[^:]+:[0-9]+:[0-9]+: ')
if [ "$ruff_rc" -ne 0 ]; then status=1; fi

mypy_out=$("$PY" -m mypy 2>&1)
mypy_rc=$?
printf '%s\n' "$mypy_out" | grep -vE '^(Success|Found [0-9]+ error)'
mypy_n=$(printf '%s\n' "$mypy_out" | grep -cE '^[^:]+:[0-9]+: error: ')
if [ "$mypy_rc" -ne 0 ]; then status=1; fi

echo "check: ruff ${ruff_n} finding(s) (exit ${ruff_rc}), mypy ${mypy_n} error(s) (exit ${mypy_rc})"
exit "$status"
