#!/bin/bash
# The Python module's suite (tests/python, pytest) with Debian's Python and
# the module built in build/python, ending with the summary lines that
# scripts/suites.sh counts: kselftest's "# Totals:" (for a VM run) and
# "N passed, N failed, N skipped". Arguments go to pytest; PYTHON names
# another interpreter: any CPython from 3.11 on, with NumPy 1.x or 2.x (the
# module is one abi3 binary); ACCEL_PYTHONPATH set and empty runs the
# module that interpreter has installed (scripts/python-wheel.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp /tmp/accel-pytest.XXXXXX)
trap 'rm -f "$out"' EXIT
# ACCEL_PYTHONPATH= (empty): the module PYTHON has installed, not the build tree's
pypath=${ACCEL_PYTHONPATH-build/python}
PYTHONPATH=$pypath${PYTHONPATH:+${pypath:+:}$PYTHONPATH} ${PYTHON:-/usr/bin/python3} -m pytest \
	-q -rfEs -p no:cacheprovider "$@" tests/python 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
# make all does not install the suite's packages for Debian's Python
if [ -z "${PYTHON-}" ] && grep -qE "No module named '?(pytest|numpy)" "$out"; then
	echo "pytest-suite: scripts/deps.sh python-tests installs pytest, NumPy and PyTorch"
fi
last=$(tail -n 1 "$out")
count() { echo "$last" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
p=$(count passed) s=$(count skipped)
f=$(($(count failed) + $(count error)))
# a run that failed without a count (pytest could not start) is a failure
[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
echo "# Totals: pass:$p fail:$f xfail:0 xpass:0 skip:$s error:0"
echo "$p passed, $f failed, $s skipped"
