#!/bin/bash
# The man pages: every function the library exports has a section 3 page
# (its own, or a .so page of its group's), accel-smi(1), simaccel(4) and
# libaccel(7) exist, and man --warnings reports nothing on any installed
# page.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
work=$(mktemp -d /tmp/accel-man.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
bad() { echo "check-man: FAIL: $*"; fail=1; }

scripts/install-man.sh "$work/man"
exported=$(sed -nE 's/^ACCEL_EXPORT [^(]*[ *](accel_[a-z0-9_]+)\(.*/\1/p' \
	   lib/include/accel/accel.h lib/include/accel/memory.h \
	   lib/include/accel/dlpack.h | sort)
for f in $exported; do
	[ -f "$work/man/man3/$f.3" ] || bad "no man page for $f"
done
for page in man1/accel-smi.1 man4/simaccel.4 man7/libaccel.7; do
	[ -f "$work/man/$page" ] || bad "no $page"
done
pages=0
for page in "$work"/man/man*/*.[0-9]; do
	warnings=$(cd "$work/man" && LC_ALL=C.UTF-8 MANWIDTH=80 \
		   man --warnings -E UTF-8 -l "$page" 2>&1 >/dev/null) ||
		bad "man cannot format $(basename "$page")"
	[ -z "$warnings" ] || bad "$(basename "$page"): $warnings"
	pages=$((pages + 1))
done
[ $fail -eq 0 ] && echo "check-man: ok: $pages pages, $(echo "$exported" | wc -l) functions documented"
exit $fail
