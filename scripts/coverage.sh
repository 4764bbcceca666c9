#!/bin/bash
# What the tests reach of the code, by line (gcov), for docs/RELIABILITY.md:
#
#  - the device model (qemu-device/accel.c), in a QEMU built with gcov's
#    counters (scripts/build-qemu.sh cov), by the qtests, by the project's
#    fuzzer (the seed of make check), by the corpus of QEMU's generic fuzzer
#    (replayed as the qtest commands it makes), and by all three;
#  - libaccel, built with the counters, by its suite on the cpu backend,
#    and then on accel in the VM;
#  - the driver, simaccel.ko with counters on the debug kernel
#    (scripts/build-debug-kernel.sh; about 45 minutes to build the first
#    time), by the kselftests, libaccel's suite and the ioctl fuzzer.
#
# Usage: scripts/coverage.sh   (after make: it uses build/tests and the
# generic fuzzer's corpus in $ACCEL_CACHE/fuzz)
# The annotated sources (lines never run start with #####) are left in
# build/coverage/ (the model's is accel-model.c.gcov).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
out=$top/build/coverage
rm -rf "$out"
mkdir -p "$out"

qemu=$(scripts/build-qemu.sh cov)
qemu_base=$(dirname "$(dirname "$qemu")")
qemu_build=$(readlink -f "$(dirname "$qemu")/build")
objdir=$qemu_build/libcommon.a.p
gcda=$objdir/hw_misc_accel_accel.c.gcda

# "Lines executed:P% of N" of the file named $2 in gcov's summary on stdin.
lines_of() {
	awk -v file="$1" '
		/^File / { this = index($0, file) > 0 }
		this && /^Lines executed:/ {
			split($2, a, ":"); sub("%", "", a[2])
			printf "%d of %d lines (%s%%)\n", a[2] * $4 / 100 + 0.5, $4, a[2]
			exit
		}'
}

# gcov finds the source from QEMU's build directory; the annotated file
# goes to build/coverage.
device_lines() {
	(cd "$qemu_build" && gcov -o "$objdir" "$gcda" 2>/dev/null &&
	 mv ./*.gcov "$out/" && mv "$out/accel.c.gcov" "$out/accel-model.c.gcov") |
		lines_of accel/accel.c
}

# Replay the generic fuzzer's corpus: libFuzzer runs every input once and
# logs the qtest commands it made (DMA fills included), which one QEMU then
# runs in a row (without the machine reset the fuzzer does between inputs).
replay_generic() {
	local devices=$1 args
	local corpus=$cache/fuzz/generic-${devices}dev
	local reorder=$qemu_base/src/scripts/oss-fuzz/reorder_fuzzer_qtest_trace.py

	args=$(scripts/fuzz-generic.sh --devices "$devices" --qemu-args)
	find "$corpus" -type f 2>/dev/null | wc -l >"$out/replayed-$devices"
	[ -d "$corpus" ] || return 0
	QTEST_LOG=1 FUZZ_SERIALIZE_QTEST=1 QEMU_FUZZ_ARGS=$args \
		QEMU_FUZZ_OBJECTS='accel*' build/asan/qemu-fuzz-x86_64 \
		--fuzz-target=generic-fuzz -runs=0 "$corpus" >/dev/null 2>"$out/trace.log" || true
	python3 "$reorder" "$out/trace.log" >"$out/trace"
	# then power off through ACPI (ICH9's PM base at 0x600, S5), which ends
	# QEMU with its counters written: qtest has no command to quit
	printf '%s\n' "outl 0xcf8 0x8000f840" "outl 0xcfc 0x601" \
		"outl 0xcf8 0x8000f844" "outb 0xcfc 0x80" "outw 0x604 0x2000" \
		>>"$out/trace"
	# shellcheck disable=SC2086
	timeout -s TERM 600 "$qemu" -display none -machine accel=qtest -m 512M \
		$args -qtest stdio <"$out/trace" >/dev/null 2>&1 || true
}

rm -f "$gcda"
QEMU=$qemu build/tests/test_device >/dev/null 2>&1 || true
echo "device model, qtests (build/tests/test_device): $(device_lines)"
cp "$gcda" "$out/qtests.gcda"

rm -f "$gcda"
QEMU=$qemu build/tests/fuzz_device --seed 1 --ops 100000 >/dev/null 2>&1 || true
echo "device model, project fuzzer (fuzz_device --seed 1 --ops 100000): $(device_lines)"
cp "$gcda" "$out/fuzz_device.gcda"

rm -f "$gcda"
replay_generic 1
replay_generic 2
echo "device model, QEMU's generic fuzzer ($(cat "$out/replayed-1") + $(cat "$out/replayed-2") corpus inputs replayed): $(device_lines)"

# All three: gcov adds up what a program writes to an existing .gcda, so
# run the qtests and the fuzzer again over the generic fuzzer's counters.
QEMU=$qemu build/tests/test_device >/dev/null 2>&1 || true
QEMU=$qemu build/tests/fuzz_device --seed 1 --ops 100000 >/dev/null 2>&1 || true
echo "device model, all three: $(device_lines)"
grep '#####' "$out/accel-model.c.gcov" >"$out/accel-unreached.txt" || true
echo "  (lines never run: build/coverage/accel-unreached.txt)"

# libaccel, built with the counters: its .c files (headers are counted in
# each file that includes them), grouped as the accel backend, the cuda
# backend and the rest. $1 names the runs.
lib_lines() {
	find "$top/build/cov/lib" -name '*.gcda' | while read -r f; do
		(cd "$out" && gcov -o "$(dirname "$f")" "$f" 2>/dev/null)
	done | awk -v runs="$1" -v files="$out/libaccel-files-$2.txt" '
		/^File .*lib\/src\/.*\.c'"'"'$/ { file = $2; next }
		/^File / { file = ""; next }
		file != "" && /^Lines executed:/ && !(file in seen) {
			seen[file] = 1
			split($2, a, ":"); sub("%", "", a[2])
			g = "the rest"
			if (file ~ /backends\/driver/) g = "the accel backend"
			if (file ~ /backends\/cuda/) g = "the cuda backend"
			run[g] += a[2] * $4 / 100; all[g] += $4
			printf "  %s %s%% of %d\n", file, a[2], $4 >files
		}
		END {
			for (g in run)
				printf "libaccel, %s, %s: %d of %d lines (%.1f%%)\n",
				       runs, g, run[g] + 0.5, all[g], 100 * run[g] / all[g]
		}' | sort
	echo "  (per file: build/coverage/libaccel-files-$2.txt)"
}

# libaccel under its suite on cpu (two devices).
make -s build/cov/accel_lib_test build/cov/accel_lib_test.static \
	build/cov/lib_fuzz.static >/dev/null
find build/cov/lib -name '*.gcda' -delete
ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
	build/cov/accel_lib_test >/dev/null 2>&1 || true
lib_lines "its suite on cpu" cpu

# The driver, simaccel.ko built with gcov's counters for the debug kernel
# (GCOV_KERNEL), in the VM with two devices and a vIOMMU, under what
# make check and make check-debug run there: its kselftests, a module
# unload and reload, libaccel's suite and fuzzer on accel (both with the
# library's counters, written in the guest under GCOV_PREFIX), and the
# ioctl fuzzer with the kernel's allocations failing. The counters come
# back through vm-run.sh --out.
scripts/build-debug-kernel.sh >/dev/null
# shellcheck source=/dev/null
. build/debug-kernel.env
T=build/tests
mkdir -p "$out/vm"
save_counters='cd /sys/kernel/debug/gcov && find . -name "*.gcda" | while read -r f; do mkdir -p "/out/driver/${f%/*}" && cat "$f" >"/out/driver/$f"; done && cp -r /tmp/gcov /out/libaccel'
gcov="GCOV_PREFIX=/tmp/gcov"
# a failing test does not end the run here: it is counted all the same
commands=(./simaccel_test ./simaccel_job_test ./simaccel_share_test
	  ./simaccel_fence_test ./module_cycle.sh "$gcov ACCEL_VISIBLE_DEVICES=accel ./accel_lib_test"
	  "$gcov ACCEL_VISIBLE_DEVICES=accel:0,cpu ./accel_lib_test -t p2p"
	  "$gcov ACCEL_VISIBLE_DEVICES=accel ./lib_fuzz --programs 200 --ops 400 --only all,array --seed 1"
	  ./faults.sh "./ioctl_fuzz --kernel-faults --ops 20000 --procs 4 --seed 1")
scripts/vm-run.sh --kernel "$VMLINUZ" --module "$COV_SIMACCEL_KO" \
	--devices 2 --iommu --memory 2G --timeout 3000 --injected-faults \
	--out "$out/vm" --file "$T/simaccel_test" --file "$T/simaccel_job_test" \
	--file "$T/simaccel_share_test" --file "$T/simaccel_fence_test" \
	--file tests/driver/module_cycle.sh \
	--file build/cov/accel_lib_test.static:/opt/accel/accel_lib_test \
	--file build/cov/lib_fuzz.static:/opt/accel/lib_fuzz --file "$T/ioctl_fuzz" \
	--file tests/driver/debug/faults.sh -- \
	"${commands[@]/%/ || echo 'coverage: that command failed'}" \
	"$save_counters" >"$out/vm.log" 2>&1 ||
	echo "coverage: the VM run failed (build/coverage/vm.log); its counters are counted" >&2
failed=$(grep -c '^coverage: that command failed' "$out/vm.log" || true)
echo "  ($failed of the VM's ${#commands[@]} commands failed: build/coverage/vm.log)"

sim=$top/build/cov-simaccel
find "$out/vm/driver" -name '*.gcda' -path "*$sim/driver/*" -exec cp {} "$sim/driver/" \;
(cd "$out" && gcov -o "$sim/driver" "$sim"/driver/*.gcda 2>/dev/null) | awk '
	/^File .*driver\/simaccel_[a-z_]*\.c'"'"'$/ { file = $2; next }
	/^File / { file = ""; next }
	file != "" && /^Lines executed:/ && !(file in seen) {
		seen[file] = 1
		split($2, a, ":"); sub("%", "", a[2])
		run += a[2] * $4 / 100; all += $4
		printf "  %s %s%% of %d\n", file, a[2], $4 >"'"$out"'/driver-files.txt"
	}
	END {
		printf "driver (simaccel.ko on the debug kernel): %d of %d lines (%.1f%%)\n",
		       run + 0.5, all, 100 * run / all
	}'
grep -h '#####' "$out"/simaccel_*.c.gcov >"$out/driver-unreached.txt" || true
echo "  (per file: build/coverage/driver-files.txt; lines never run: simaccel_*.c.gcov)"

# libaccel on cpu here and on accel in the VM: the guest's counters added
# to this machine's (gcov-tool adds two runs' counters up).
vm_lib=$out/vm/libaccel$top/build/cov/lib
if [ -d "$vm_lib" ]; then
	gcov-tool merge -o "$out/lib-merged" "$top/build/cov/lib" "$vm_lib" 2>/dev/null
	(cd "$out/lib-merged" && find . -name '*.gcda' -exec cp {} "$top/build/cov/lib/{}" \;)
	lib_lines "its suite on cpu, and on accel in the VM" all
fi
