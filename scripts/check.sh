#!/bin/bash
# Run every test suite and end with one line "N passed, N failed".
#
#  1. device-model tests through qtest (tests/qemu/test_device)
#  2. the seeded device-model fuzzer, 100,000 operations
#  3. the kselftests and module cycles in the VM, two devices, no vIOMMU
#  4. the kselftests in the VM with a vIOMMU and slub_debug
#  5. checkpatch.pl --strict and sparse on the driver, QEMU's checkpatch on the model
# A VM run whose kernel log shows a bug report counts as a failed test.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
T=build/tests
passed=0 failed=0 skipped=0
log=$(mktemp /tmp/accel-check.XXXXXX)
trap 'rm -f "$log"' EXIT

add() {	# suite passed failed [skipped]
	echo "== $1: $2 passed, $3 failed${4:+, $4 skipped}"
	passed=$((passed + $2))
	failed=$((failed + $3))
	skipped=$((skipped + ${4:-0}))
}

# A suite whose last line is "N passed, N failed"; a crash counts as one failure.
run_counted() {
	local name=$1 rc p f
	shift
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if read -r p f < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed.*/\1 \2/p' "$log" | tail -n 1); then
		[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
		add "$name" "$p" "$f"
	else
		add "$name" 0 1
	fi
}

# A program that is one test: its exit status decides.
run_one() {
	local name=$1
	shift
	if "$@"; then add "$name" 1 0; else add "$name" 0 1; fi
}

# A VM run: kselftest totals, "ok:"/"not ok" lines of scripts, and the run
# itself (boot, kernel log, time limit) as one more test.
run_vm() {
	local name=$1 rc p f s ok nok
	shift
	scripts/vm-run.sh "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=0 f=0 s=0
	while read -r tp tf ts; do
		p=$((p + tp)) f=$((f + tf)) s=$((s + ts))
	done < <(sed -nE 's/^# Totals: pass:([0-9]+) fail:([0-9]+) xfail:[0-9]+ xpass:[0-9]+ skip:([0-9]+) error:([0-9]+).*/\1 \2 \3/p' "$log")
	ok=$(grep -c '^ok: ' "$log")
	nok=$(grep -c '^not ok: ' "$log")
	p=$((p + ok + (rc == 0 ? 1 : 0)))
	f=$((f + nok + (rc != 0 ? 1 : 0)))
	add "$name" "$p" "$f" "$s"
}

seed=${FUZZ_SEED:-$(date +%s)}
vm_files=(--file "$T/accel_test" --file "$T/accel_mem_test" --file "$T/accel_queue_test"
	  --file tests/kselftest/module_cycle.sh)

run_counted "device model" "$T/test_device"
run_one "device fuzzer" "$T/fuzz_device" --seed "$seed" --ops 100000
run_vm "VM, 2 devices" --devices 2 "${vm_files[@]}" -- \
	./accel_test ./accel_mem_test ./accel_queue_test ./module_cycle.sh
run_vm "VM, vIOMMU, slub_debug" --devices 2 --iommu --slub-debug \
	"${vm_files[@]}" -- ./accel_test ./accel_mem_test ./accel_queue_test
run_one "lint" scripts/lint.sh

echo
echo "$passed passed, $failed failed${skipped:+, $skipped skipped}" | sed 's/, 0 skipped$//'
[ "$failed" -eq 0 ]
