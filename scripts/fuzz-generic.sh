#!/bin/bash
# QEMU's own generic fuzzer (tests/qtest/fuzz/generic_fuzz.c: libFuzzer, with
# AddressSanitizer and UndefinedBehaviorSanitizer) on accel-pci: register
# and config-space accesses, DMA whose contents the fuzzer chooses, clock
# steps, a system reset between inputs.
#
# Usage: scripts/fuzz-generic.sh [--devices 1|2] [--seconds N] [--qemu-args]
#   --qemu-args: print the machine's QEMU arguments and stop (for the
#                replays of scripts/coverage.sh)
#
# Two devices let each DMA into the other's BARs (peer to peer). The corpus
# lives in $ACCEL_CACHE/fuzz/generic-Ndev and grows from run to run, from
# the inputs of scripts/generic-fuzz-seeds.py (queues programmed and rung). A
# crash, a hang (an input running past 30 s) or a sanitizer report fails
# the run: the input is kept in build/fuzz/ and the command that replays it
# is printed (QTEST_LOG=1 in front of it prints the input as qtest
# commands, from which a regression test is written).
#
# The last line gives the executions and what the fuzzer reached of the
# device: the edges (branches between basic blocks) of accel.c, counted by
# libFuzzer's -print_coverage.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
devices=1
seconds=60
print_args=

while [ $# -gt 0 ]; do
	case $1 in
	--devices) devices=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--qemu-args) print_args=1; shift ;;
	*) echo "usage: $0 [--devices 1|2] [--seconds N] [--qemu-args]" >&2; exit 2 ;;
	esac
done
case $devices in
1|2) ;;
*) echo "fuzz-generic: --devices is 1 or 2" >&2; exit 2 ;;
esac

# On the root bus: the fuzzer maps the BARs of devices on bus 0 only, below
# 4 GiB, so VRAM is small.
args="-machine q35 -nodefaults -L /usr/share/qemu -L /usr/share/seabios"
for ((i = 0; i < devices; i++)); do
	args+=" -device accel-pci,bus=pcie.0,addr=$((4 + i)),vram-size=16M"
done
if [ -n "$print_args" ]; then
	echo "$args"
	exit 0
fi

"$top/scripts/build-qemu.sh" fuzz >/dev/null
fuzzer=$top/build/asan/qemu-fuzz-x86_64
corpus=$cache/fuzz/generic-${devices}dev
out=$top/build/fuzz/generic-${devices}dev
seeds=$top/build/fuzz/seeds
rm -rf "$out" "$seeds"
mkdir -p "$corpus" "$out"
python3 "$top/scripts/generic-fuzz-seeds.py" "$seeds"

export QEMU_FUZZ_ARGS=$args QEMU_FUZZ_OBJECTS='accel*'

rc=0
"$fuzzer" --fuzz-target=generic-fuzz -max_total_time="$seconds" -timeout=30 \
	-print_final_stats=1 -print_coverage=1 -artifact_prefix="$out/" \
	"$corpus" "$seeds" >"$out/log" 2>&1 || rc=$?

# Edges of accel.c: "COVERED_FUNC: hits: H edges: A/B name file:line".
read -r reached total funcs < <(awk '
	/^(UN)?COVERED_FUNC: .*\/hw\/misc\/accel\/accel\.c:/ {
		split($5, e, "/"); a += e[1]; b += e[2]; if (e[1] > 0) f++
	}
	END { print a + 0, b + 0, f + 0 }' "$out/log")
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/log")

if [ "$rc" -ne 0 ]; then
	grep -v -e '^\s*UNCOVERED_PC' -e '_FUNC: ' "$out/log" | tail -n 60
	for crash in "$out"/crash-* "$out"/timeout-* "$out"/leak-*; do
		[ -e "$crash" ] || continue
		echo "fuzz-generic: replay with:"
		echo "  QEMU_FUZZ_ARGS='$QEMU_FUZZ_ARGS' QEMU_FUZZ_OBJECTS='accel*'" \
		     "$fuzzer --fuzz-target=generic-fuzz $crash"
	done
	echo "not ok: QEMU's generic fuzzer, $devices device(s), failed (exit $rc)"
	exit 1
fi
echo "ok: QEMU's generic fuzzer, $devices device(s): ${execs:-0} executions in" \
     "$seconds s, corpus $(find "$corpus" -type f | wc -l) inputs; accel.c:" \
     "$reached of $total edges, in $funcs functions"
