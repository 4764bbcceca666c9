#!/bin/bash
# Run every test suite and end with one line "N passed, N failed".
#
#  1. device-model tests through qtest (tests/qemu/test_device)
#  2. the seeded device-model fuzzer, 100,000 operations
#  3. the libaccel conformance suite on the cpu backend (two devices)
#  4. libaccel's packaging: exports, soname, install, pkg-config; the man
#     pages (man --warnings); dkms; accel-smi with no device; the
#     examples (one per seed) on cpu; the Paddle plugin's loader test and
#     the libaccel suite through the plugin's function table, on cpu
#  5. in the VM, two devices, no vIOMMU: the kselftests, module cycles,
#     accel-smi against sysfs and a process holding VRAM, the
#     libaccel suite on accel with two devices, one device, and accel next
#     to cpu (p2p across backends), the examples, and the plugin's tests
#     on accel
#  6. the kselftests and the libaccel suite with a vIOMMU and slub_debug
#  7. checkpatch.pl --strict and sparse on the driver, QEMU's checkpatch on the model
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

# A suite whose last line is "N passed, N failed[, N skipped]"; a crash
# counts as one failure.
run_counted() {
	local name=$1 rc p f s
	shift
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if read -r p f s < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/p' "$log" | tail -n 1); then
		[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
		add "$name" "$p" "$f" "${s:-0}"
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
	  --file tests/kselftest/module_cycle.sh
	  --file "$T/accel_lib_test.static:/opt/accel/accel_lib_test")
lib_on_accel=("ACCEL_VISIBLE_DEVICES=accel ./accel_lib_test")
# The plugin's tests and accel-smi are dynamic (Debian has no static
# libpci): the guest gets the libraries they need.
mapfile -t system_libs < <(scripts/guest-libs.sh "$T/plugin_test" "$T/plugin_suite" \
			    build/tools/accel-smi)
plugin_files=(--file "$T/plugin_test" --file "$T/plugin_suite"
	      --file build/plugin/libpaddle-accel.so:/opt/plugin/libpaddle-accel.so
	      --file build/lib/libaccel.so.1.0.0:/opt/lib/libaccel.so.1)
smi_files=(--file build/tools/accel-smi --file "$T/hold_device"
	   --file tests/tools/accel_smi_test.sh
	   --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids)
plugin_on_accel=("ACCEL_VISIBLE_DEVICES=accel ./plugin_test"
		 "ACCEL_VISIBLE_DEVICES=accel ./plugin_suite")
examples=(occa_memory occa_wrap_memory taichi_memory numba_memory)
example_files=() examples_on_accel=()
for e in "${examples[@]}"; do
	example_files+=(--file "build/examples/$e.static:/opt/accel/$e")
	examples_on_accel+=("if ACCEL_VISIBLE_DEVICES=accel ./$e; then echo 'ok: example $e on accel'; else echo 'not ok: example $e on accel'; fi")
done

run_counted "device model" "$T/test_device"
run_one "device fuzzer" "$T/fuzz_device" --seed "$seed" --ops 100000
run_counted "libaccel on cpu" env ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 \
	ACCEL_CPU_MEMORY=1G "$T/accel_lib_test"
run_one "libaccel packaging" scripts/check-lib.sh
run_one "accel-smi without a device" scripts/smi-no-device.sh
run_one "man pages" scripts/check-man.sh
run_one "dkms add, build, install" scripts/check-dkms.sh
for e in "${examples[@]}"; do
	run_one "example $e on cpu" env ACCEL_VISIBLE_DEVICES=cpu "build/examples/$e"
done
run_counted "Paddle plugin loader on cpu" env ACCEL_VISIBLE_DEVICES=cpu \
	ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G "$T/plugin_test"
run_counted "libaccel suite through the Paddle plugin on cpu" env \
	ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
	"$T/plugin_suite"
run_vm "VM, 2 devices" --devices 2 "${vm_files[@]}" "${example_files[@]}" \
	"${plugin_files[@]}" "${smi_files[@]}" "${system_libs[@]}" -- \
	./accel_test ./accel_mem_test ./accel_queue_test ./module_cycle.sh \
	./accel_smi_test.sh \
	"${lib_on_accel[@]}" "${examples_on_accel[@]}" "${plugin_on_accel[@]}" \
	"ACCEL_VISIBLE_DEVICES=accel:1 ./accel_lib_test" \
	"ACCEL_VISIBLE_DEVICES=accel:0,cpu ./accel_lib_test -t p2p"
run_vm "VM, vIOMMU, slub_debug" --devices 2 --iommu --slub-debug \
	"${vm_files[@]}" -- ./accel_test ./accel_mem_test ./accel_queue_test \
	"${lib_on_accel[@]}"
run_one "lint" scripts/lint.sh

echo
echo "$passed passed, $failed failed${skipped:+, $skipped skipped}" | sed 's/, 0 skipped$//'
[ "$failed" -eq 0 ]
