#!/bin/bash
# Style and static checks: the kernel's checkpatch.pl --strict and sparse on
# the driver and uapi, QEMU's checkpatch.pl on the device model (both
# checkpatch scripts come from the distribution's source packages), and
# libaccel's layering (scripts/check-layers.sh).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# sparse, and the kernel's source for checkpatch (make demo leaves both out)
scripts/deps.sh tools
scripts/fetch-kernel.sh >/dev/null
# shellcheck source=/dev/null
. build/kernel.env
qemu_src=$(dirname "$(dirname "$(readlink -f build/qemu-system-x86_64)")")/src
rc=0

echo "lint: kernel checkpatch.pl --strict on driver/, uapi/, include/"
perl "$CHECKPATCH" --strict --no-tree --quiet -f driver/*.c driver/*.h \
	uapi/simaccel_accel.h include/accel_hw.h || rc=1

echo "lint: sparse (make C=2) on driver/"
out=$(make -s -C "$KDIR" M="$top/build/simaccel" C=2 modules 2>&1 |
      grep -E 'warning|error' | grep -v 'Skipping BTF' || true)
[ -z "$out" ] || { echo "$out"; rc=1; }

echo "lint: QEMU checkpatch.pl on qemu-device/"
perl "$qemu_src/scripts/checkpatch.pl" --no-tree --terse -f qemu-device/accel.c |
	grep -v '^total: 0 errors, 0 warnings' || true
perl "$qemu_src/scripts/checkpatch.pl" --no-tree -q -f qemu-device/accel.c \
	>/dev/null || rc=1

echo "lint: libaccel's layers call only down"
scripts/check-layers.sh || rc=1

echo "lint: bash -n on the scripts"
for f in scripts/*.sh tests/*.sh tests/*/*.sh tests/driver/debug/*.sh; do
	[ ! -f "$f" ] || bash -n "$f" || rc=1
done

[ $rc -eq 0 ] && echo "ok: lint clean" || echo "not ok: lint found problems"
exit $rc
