#!/bin/bash
# Run every test suite and end with one line "N passed, N failed".
#
#  1. device-model tests through qtest (tests/device/test_device)
#  2. the seeded device-model fuzzer, 100,000 operations; both again
#     against QEMU built with ASan and UBSan, and with ThreadSanitizer, and
#     QEMU's generic fuzzer on one device and on two, 60 s each
#  3. the libaccel conformance suite on the cpu backend (two devices),
#     again built with ASan and UBSan, and on cuda (one skip for the
#     suite, with the reason, where there is no GPU), and on cuda against
#     fakecuda, a model of the CUDA driver (the suite alone, p2p next to a
#     cpu device each way, the pools off, lib_fuzz, a short run of the
#     allocator benchmark pool_bench_cuda); the differential fuzzer
#     lib_fuzz, 200 programs of 200 ops on cpu (two devices), the seed of
#     the device fuzzer (FUZZ_SEED, 1 by default), as many with the array
#     family mixed in, and 1000 of arrays and handles only
#  4. libaccel's packaging: exports, soname, install, pkg-config; the man
#     pages (man --warnings); dkms; this runner's summary and vm-run.sh's
#     verdicts, against made-up stages and guests; deps.sh and QEMU's
#     compiler wrapper against stand-ins; accel-smi with no
#     device, and against other drivers' fdinfo in fake /proc trees; the
#     examples (one per seed) on cpu; the Paddle plugin's loader test and
#     the libaccel suite through the plugin's function table, on cpu and
#     cuda
#  5. in the VM, simaccel.ko (the driver on DRM accel), two devices with
#     a vIOMMU and slub_debug: its kselftests (device, buffers, queues and
#     jobs, sharing; the reset test's PCI error recovery too: QEMU's AER
#     injection over vm-run.sh --qmp), the libaccel suite on accel, the ioctl fuzzer (10,000
#     operations, the seed of the device fuzzer + 1)
#  6. two devices without a vIOMMU (system memory then scattered on the
#     bus): module cycles, accel-smi against sysfs, fdinfo and a process
#     holding VRAM, a bind with no contiguous memory for the rings (a
#     vIOMMU's mapping needs none), the ioctl fuzzer (the seed), the
#     load test (16 threads in 4 processes on both devices for 10 s), the
#     libaccel suite on accel and accel next to cpu (p2p across backends);
#     then, in a second boot, lib_fuzz on accel (an eighth of the cpu
#     runs' programs), the examples, the plugin's
#     loader on accel, and the suite's device tests on one device (accel:1:
#     the whole suite there reaches 5 more lines of libaccel than on two
#     devices, all of the pool's treap, which is random)
#  7. slow jobs on a throttled one-queue device, and descriptor sizing on
#     a very slow one
#  8. checkpatch.pl --strict and sparse on the driver, QEMU's checkpatch on the model
# The VM runs of 5 and 6 go in a lane beside stages 1-4, two cores' work at
# once, and beside the builds of QEMU with sanitizers that stage 1 needs
# (make check builds only the plain one first); each lane, done with its
# own, takes what the other has not started. Those of 7 and power
# management's, which mostly wait, go in a third lane once the QEMUs
# with sanitizers are built.
# Stage times are printed as each ends, and the VMs' per command.
# A VM run whose kernel log shows a bug report counts as a failed test.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
T=build/tests
# shellcheck source=scripts/suites.sh
. scripts/suites.sh

# a fixed seed, so that a run of make check can be repeated; make fuzz
# draws new ones
seed=${FUZZ_SEED:-1}
# disagreement classes lib_fuzz skips (lib_fuzz --help), each with a test
# of the feature it breaks in tests/lib: none is open
LIB_FUZZ_KNOWN=${LIB_FUZZ_KNOWN-}
lib_fuzz_args=(--seed "$seed" --programs 200 --ops 200
	       ${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"})
# the same with the array family mixed in (not in "all", so that the run
# above keeps the programs its seeds always made)
lib_fuzz_array_args=(--seed "$seed" --programs 200 --ops 200 --only all,array
		     ${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"})
# and arrays with the handles, mapping and streams around them only: small
# programs, fast, so many more of them
lib_fuzz_arrays_only_args=(--seed "$seed" --programs 1000 --ops 200
			   --only array,mem,map,sync,misuse,p2p
			   ${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"})
kselftests=(--file "$T/simaccel_test" --file "$T/simaccel_job_test"
	    --file "$T/simaccel_share_test" --file "$T/simaccel_fence_test"
	    --file "$T/simaccel_trace_test" --file "$T/simaccel_reset_test"
	    --file "$T/simaccel_pm_test")
lib_files=(--file "$T/accel_lib_test.static:/opt/accel/accel_lib_test"
	   --file "$T/lib_fuzz.static:/opt/accel/lib_fuzz")
lib_on_accel="ACCEL_VISIBLE_DEVICES=accel ./accel_lib_test"
# On accel, the first eighth of each (the same seeds): all of them took 495 s
# in the VM and reached no line of libaccel that the suite on accel and cpu
# and the fuzzer on cpu do not (gcov, build/cov/lib_fuzz.static); make fuzz
# runs as many as asked.
lib_fuzz_on_accel() {	# name, lib_fuzz's arguments
	local name=$1 args=()
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--programs) args+=(--programs $(($2 / 8 > 0 ? $2 / 8 : 1))); shift 2 ;;
		*) args+=("$1"); shift ;;
		esac
	done
	echo "if ACCEL_VISIBLE_DEVICES=accel ./lib_fuzz ${args[*]}; then echo 'ok: $name on accel'; else echo 'not ok: $name on accel'; fi"
}
fuzz_on_accel=("$(lib_fuzz_on_accel lib_fuzz "${lib_fuzz_args[@]}")"
	       "$(lib_fuzz_on_accel "lib_fuzz with arrays" "${lib_fuzz_array_args[@]}")"
	       "$(lib_fuzz_on_accel "lib_fuzz on arrays" "${lib_fuzz_arrays_only_args[@]}")")
# The plugin's tests and accel-smi are dynamic (Debian has no static
# libpci): the guest gets the libraries they need.
mapfile -t system_libs < <(scripts/guest-libs.sh "$T/plugin_test" \
			    build/tools/accel-smi)
plugin_files=(--file "$T/plugin_test"
	      --file build/plugin/libpaddle-accel.so:/opt/plugin/libpaddle-accel.so
	      --file build/lib/libaccel.so.1.0.0:/opt/lib/libaccel.so.1)
smi_files=(--file build/tools/accel-smi --file "$T/hold_device"
	   --file tests/tools/accel_smi_test.sh
	   --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids)
# The loader on accel; the suite through the plugin runs on cpu and cuda:
# the plugin forwards whatever the backend, and adds no line of libaccel
# or of the driver to what the suite on accel runs itself.
plugin_on_accel=("ACCEL_VISIBLE_DEVICES=accel ./plugin_test")
examples=(occa_memory occa_wrap_memory taichi_memory numba_memory)
example_files=() examples_on_accel=()
for e in "${examples[@]}"; do
	example_files+=(--file "build/examples/$e.static:/opt/accel/$e")
	examples_on_accel+=("if ACCEL_VISIBLE_DEVICES=accel ./$e; then echo 'ok: example $e on accel'; else echo 'not ok: example $e on accel'; fi")
done

# The VM runs, longest first. Each keeps one core busy with its vCPU: one
# lane takes them in order beside the host's stages, and once those are
# over the host's lane takes what is left (and the lane beside, the host's
# stages left), so that the two cores stay busy whichever ends first
# (claim() gives each run to one lane).
#
# The driver's kselftests and the library's suite on accel run once, with a
# vIOMMU and slub_debug: the driver has no branch on whether an IOMMU
# translates its DMA, so a run without one reaches no other line of it, and
# the strict vIOMMU and slub_debug only add checks. The run without them
# (vm_two_devices) keeps what drives the direct DMA mapping hardest: the
# fuzzers, the load test and peer copies. And the suite's tests that a
# synchronizing call ignores work queued after it: they need the second
# stream's work queued before the first's is over, and submissions are too
# slow for that under the vIOMMU and slub_debug (each such test took a
# minute or more, to skip).
lib_later_work=ignores_later_work
vm_iommu() {
	run_vm "VM, simaccel.ko, vIOMMU, slub_debug" --devices 2 --iommu --slub-debug \
		--hung-task 10 --timeout 900 --qmp "${kselftests[@]}" "${lib_files[@]}" --file "$T/ioctl_fuzz" -- \
		"SIMACCEL_CAN_FRAGMENT=1 ./simaccel_test" "SIMACCEL_KO=/opt/accel/simaccel.ko ./simaccel_job_test" \
		./simaccel_share_test "SIMACCEL_KO=/opt/accel/simaccel.ko ./simaccel_fence_test" \
		./simaccel_trace_test ./simaccel_reset_test "$lib_on_accel -x $lib_later_work" \
		"./ioctl_fuzz --ops 10000 --procs 4 --seed $((seed + 1))"
}

vm_fuzz_examples_plugin() {
	run_vm "VM, simaccel.ko, 2 devices: lib_fuzz, examples, plugin, one device" \
		--devices 2 --timeout 900 "${lib_files[@]}" "${example_files[@]}" \
		"${plugin_files[@]}" "${system_libs[@]}" -- \
		"${fuzz_on_accel[@]}" "${examples_on_accel[@]}" "${plugin_on_accel[@]}" \
		"ACCEL_VISIBLE_DEVICES=accel:1 ./accel_lib_test -t device"
}

# The Python module in the guest on accel, with the host's Python, NumPy
# and torch (the host's root over 9p)
vm_python() {
	run_vm "VM, simaccel.ko, 2 devices: the Python module" --devices 2 --memory 2G \
		--timeout 900 --host-root -- \
		"in-host env ACCEL_VISIBLE_DEVICES=accel scripts/pytest-suite.sh"
}

vm_two_devices() {
	run_vm "VM, simaccel.ko, 2 devices" --devices 2 --hung-task 10 --timeout 900 \
		"${lib_files[@]}" --file "$T/ioctl_fuzz" --file "$T/load_test" \
		--file tests/driver/module_cycle.sh "${smi_files[@]}" "${system_libs[@]}" \
		--file "$T/simaccel_test" -- \
		./module_cycle.sh ./accel_smi_test.sh \
		"SIMACCEL_CAN_FRAGMENT=1 ./simaccel_test -t a_bind_without_contiguous_memory_for_its_rings_fails_with_enomem" \
		"./ioctl_fuzz --ops 10000 --procs 4 --seed $seed" \
		"ACCEL_VISIBLE_DEVICES=accel ./load_test --seconds 10 --procs 4 --threads 4" \
		"ACCEL_VISIBLE_DEVICES=accel:0,cpu ./accel_lib_test -t p2p" \
		"$lib_on_accel -t $lib_later_work"
}

# Power management on one vCPU: suspending and resuming turn the BARs'
# decoding off and on, and QEMU 10's multi-threaded TCG can abort
# (iotlb_to_section) when the memory map changes under another vCPU's access
vm_power() {
	run_vm "VM, simaccel.ko, 2 devices, one vCPU: power management" --devices 2 \
		--smp 1 --hung-task 10 --file "$T/simaccel_pm_test" -- ./simaccel_pm_test
}

# fences in order need several hardware queues: a job could finish first
vm_slow_four_queues() {
	run_vm "VM, simaccel.ko, a slow device with four queues" \
		--hung-task 10 --props dma-bandwidth=16777216 --file "$T/simaccel_fence_test" -- \
		"SIMACCEL_SLOW_DEVICE=1 SIMACCEL_KO=/opt/accel/simaccel.ko ./simaccel_fence_test -t a_queues_fences_signal_in_order -t jobs_in_flight_keep_the_module"
}

vm_slow() {
	run_vm "VM, simaccel.ko, a slow device" \
		--hung-task 10 --props dma-bandwidth=16777216,queues=1 --file "$T/simaccel_job_test" \
		--file "$T/simaccel_share_test" -- \
		"SIMACCEL_SLOW_DEVICE=1 ./simaccel_job_test -t a_slow_job_that_progresses_survives_the_time_out -t a_failed_job_returns_without_waiting_for_others -t a_small_job_waits_behind_a_slice_of_another_files_work -t a_submission_of_several_jobs_fails_once -t closing_a_file_does_not_wait_for_its_queued_work -t a_killed_process_with_many_busy_queues_is_reaped_at_once -t a_user_past_the_vram_limit_is_told_at_once -t a_files_clearings_do_not_hold_up_another_files_job -t a_large_clearing_is_not_kept_out_by_its_files_smaller_jobs -t unbind_does_not_wait_for_a_creation_waiting_on_full_vram -t a_fault_waiting_for_a_clearing_holds_no_mmap_lock -t a_futex_waiting_for_a_clearing_ends_with_a_kill -t a_futex_waiting_for_a_clearing_holds_up_no_unbind -t a_futex_waiting_for_a_clearing_goes_on_after_a_caught_signal -t a_system_call_copying_from_a_mapping_being_cleared_sleeps_through_signals -t settling_waits_only_for_what_is_under_way -t a_submit_waiting_for_a_job_slot_ends_with_a_signal -t a_submit_waiting_for_a_job_slot_holds_no_one_up -t a_submit_waiting_for_a_job_slot_holds_up_no_unbind" \
		"SIMACCEL_SLOW_DEVICE=1 ./simaccel_share_test -t an_export_waiting_for_a_clearing_holds_no_one_up"
}

# a full VRAM that another user keeps clearing needs a small one
vm_slow_small_vram() {
	run_vm "VM, simaccel.ko, a slow device with 64 MiB of VRAM" --vram 64M \
		--hung-task 10 --props dma-bandwidth=16777216,queues=1 --file "$T/simaccel_job_test" -- \
		"SIMACCEL_SLOW_DEVICE=1 ./simaccel_job_test -t a_creation_on_full_vram_waits_only_for_what_is_under_way"
}

vm_two_slow() {
	run_vm "VM, simaccel.ko, two slow devices" --devices 2 --hung-task 10 \
		--props dma-bandwidth=16777216,queues=1 --file "$T/simaccel_share_test" -- \
		"SIMACCEL_SLOW_DEVICE=1 ./simaccel_share_test -t unbind_fails_a_peers_queued_work_on_an_import -t unbind_does_not_wait_for_what_a_peers_job_waits_for -t unbind_does_not_wait_for_other_work_ahead_of_a_peers_job"
}

vm_very_slow() {
	run_vm "VM, simaccel.ko, a very slow device" \
		--hung-task 10 --props dma-bandwidth=1000000,queues=1 --file "$T/simaccel_job_test" -- \
		"SIMACCEL_VERY_SLOW_DEVICE=1 ./simaccel_job_test -t descriptors_are_sized_to_a_slow_devices_bandwidth"
}

vm_runs=(vm_iommu vm_fuzz_examples_plugin vm_python vm_two_devices)
# The runs on a throttled device, and power management's on one vCPU, wait
# more than they compute (a fifth of their 150 s on a core): two lanes
# running them were half idle. They get a lane of their own, from when the
# QEMUs with sanitizers are built: their jobs' time-outs and throttled
# transfers are not tried beside ninja's jobs, the heaviest load.
waiting_vm_runs=(vm_power vm_slow_four_queues vm_slow vm_slow_small_vram vm_two_slow vm_very_slow)
lane_waiting() {
	local run

	# built or not (these need only the plain QEMU), unless the run is over
	provided "QEMU (tsan)"
	[ $? -ne 2 ] || return 0
	# claimed, as the other lanes' runs are: an interrupted run starts no more
	for run in "${waiting_vm_runs[@]}"; do
		claim "$run" && "$run"
	done
	# sparse through Kbuild on the module the VMs load only checks it (make
	# C=2 on a built tree rewrites no object): beside the other VM runs
	claim lint && run_one "lint" scripts/lint.sh
}
run_vms() {
	local run

	for run in "${vm_runs[@]}"; do
		if claim "$run"; then
			"$run"
		fi
	done
}
# The host's stages, which either lane takes (claim()) once it is done with
# its own: the lane beside the VM runs, and this one once the VM runs are
# over. The builds of QEMU with sanitizers come first, the stages that need
# them last: one lane may still be building what the other needs (needs()
# waits for it).

# The QEMUs with sanitizers, cached like the plain one: a few minutes each
# the first time (ninja's count goes to the log), seconds after.
build_qemu() {	# flavour
	echo "== building QEMU ($1) once into the cache, if it is not there"
	provide "QEMU ($1)" scripts/build-qemu.sh "$1" >/dev/null
}
# Against QEMU built with ASan and UBSan: a report fails the test.
under_asan() {
	needs "QEMU (fuzz)" env QEMU=build/asan/qemu-system-x86_64 "$@"
}
# Under ThreadSanitizer: a race on the model's state stops QEMU
# (halt_on_error), and the report is printed; guest memory that queues,
# peers and vCPUs share is not the model's (tests/device/tsan.supp).
# Reports go to files, not to the QEMU output the qtests read: one made
# as QEMU exits (its test already passed) fails the stage here.
# Before its exit-time checks a process lets its other threads run for
# atexit_sleep_ms: 1000 by default, which were a third of the device
# model's run (a QEMU per test, idle); a tenth of that lets any thread
# with work left run on two cores.
under_tsan() {
	local reports rc

	reports=$(mktemp -d /tmp/accel-tsan.XXXXXX)
	needs "QEMU (tsan)" env QEMU=build/tsan/qemu-system-x86_64 \
		TSAN_OPTIONS="halt_on_error=1 atexit_sleep_ms=100 log_path=$reports/qemu suppressions=$top/tests/device/tsan.supp" "$@"
	rc=$?
	cat "$reports"/* 2>/dev/null
	if grep -qs '^SUMMARY: ThreadSanitizer' "$reports"/*; then
		echo "not ok: ThreadSanitizer reported in QEMU (above)"
		rc=1
	fi
	rm -rf "$reports"
	return $rc
}

host_stages() {
	host_one "QEMU with ASan, UBSan and libFuzzer, built" build_qemu fuzz
	host_one "QEMU with ThreadSanitizer, built" build_qemu tsan
	host_counted "libaccel on cpu" env ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 \
		ACCEL_CPU_MEMORY=1G "$T/accel_lib_test"
	# Leaks are not checked: each test ends its process, library objects and all.
	host_counted "libaccel on cpu under ASan and UBSan" env ASAN_OPTIONS=detect_leaks=0 \
		ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
		"$T/accel_lib_test.asan"
	# Where there is no GPU, the cuda backend says why, and the suite is one skip.
	host_counted "libaccel on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/accel_lib_test" -u
	# The cuda backend against fakecuda, a model of the CUDA driver
	# (tests/fakecuda, built where the CUDA headers are): two devices whose
	# memory the host cannot touch, streams that really run later. A model, not
	# ground truth: scripts/gpu-check.sh on a GPU is. Next to a cpu device with
	# one model GPU, so that the peer is the cpu device, as on a one-GPU machine.
	if [ -e "$T/fakecuda/libcuda.so.1" ]; then
		fakecuda=(env "LD_LIBRARY_PATH=$top/$T/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
		host_counted "libaccel on cuda (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda "$T/accel_lib_test"
		host_counted "libaccel on cuda with a cpu peer (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" FAKECUDA_DEVICES=1 ACCEL_VISIBLE_DEVICES=cuda,cpu \
			"$T/accel_lib_test" -t p2p
		host_counted "libaccel on cpu with a cuda peer (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" FAKECUDA_DEVICES=1 ACCEL_VISIBLE_DEVICES=cpu,cuda \
			"$T/accel_lib_test" -t p2p
		host_counted "libaccel on cuda, ACCEL_POOL=off (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda ACCEL_POOL=off \
			"$T/accel_lib_test" -t pool
		host_one "libaccel fuzzer on cuda (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda "$T/lib_fuzz" \
			"${lib_fuzz_args[@]}"
		host_one "libaccel fuzzer with arrays on cuda (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda "$T/lib_fuzz" \
			--seed "$seed" --programs 100 --ops 200 --only all,array \
			${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}
		host_counted "Paddle plugin loader on cuda (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_test"
		host_counted "libaccel suite through the Paddle plugin on cuda (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_suite"
		for e in occa_memory occa_wrap_memory taichi_memory numba_memory; do
			host_one "example $e on cuda (fakecuda, a model of the driver)" \
				"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda "build/examples/$e"
		done
		# the CUDA array interface, DLPack's kDLCUDA and native streams
		host_counted "the Python module on cuda (fakecuda, a model of the driver)" \
			"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda scripts/pytest-suite.sh
		# scripts/gpu-check.sh's allocator benchmark, small: that it runs to
		# the end on every allocator, CUDA's stream-ordered one too, with the
		# streams' work lagging (its figures mean nothing here)
		if [ -x build/tools/pool_bench_cuda ]; then
			host_one "pool_bench_cuda on cuda (fakecuda, a model of the driver)" \
				"${fakecuda[@]}" ACCEL_VISIBLE_DEVICES=cuda FAKECUDA_DELAY_US=20 \
				build/tools/pool_bench_cuda -d cuda:0 -n 100,1000 -m 65536 -r 3 -v
		else
			echo "== no pool_bench_cuda (no stub libcuda.so in \$CUDA_HOME/lib64/stubs): its run is left out"
		fi
	else
		echo "== no fakecuda (no CUDA headers in \$CUDA_HOME): the cuda backend's model runs are left out"
	fi
	host_one "libaccel fuzzer on cpu" env ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 \
		ACCEL_CPU_MEMORY=1G "$T/lib_fuzz" "${lib_fuzz_args[@]}"
	host_one "libaccel fuzzer with arrays on cpu" env ACCEL_VISIBLE_DEVICES=cpu \
		ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G "$T/lib_fuzz" \
		"${lib_fuzz_array_args[@]}"
	host_one "libaccel fuzzer on arrays on cpu" env ACCEL_VISIBLE_DEVICES=cpu \
		ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G "$T/lib_fuzz" \
		"${lib_fuzz_arrays_only_args[@]}"
	host_one "libaccel packaging" scripts/check-lib.sh
	host_one "accel-smi without a device" scripts/smi-no-device.sh
	host_counted "accel-smi against other drivers' fdinfo" tests/tools/accel_smi_fdinfo_test.sh
	host_counted "make check's stages and summary" tests/check/suites_test.sh
	host_counted "vm-run's verdicts" tests/check/vm_run_test.sh
	host_counted "QEMU's compiler wrapper" tests/check/qemu_cc_test.sh
	host_counted "the packages' installer" tests/check/deps_test.sh
	host_one "man pages" scripts/check-man.sh
	host_one "dkms add, build, install" scripts/check-dkms.sh
	for e in "${examples[@]}"; do
		host_one "example $e on cpu" env ACCEL_VISIBLE_DEVICES=cpu "build/examples/$e"
	done
	host_counted "Paddle plugin loader on cpu" env ACCEL_VISIBLE_DEVICES=cpu \
		ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G "$T/plugin_test"
	host_counted "libaccel suite through the Paddle plugin on cpu" env \
		ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
		"$T/plugin_suite"
	# The Python module's suite on cpu against the module as pip installs it:
	# the abi3 wheel built from python/ against libaccel installed under a
	# prefix (the same sources as build/python's, which the runs on cuda, on
	# accel and under trixie's Python use)
	host_counted "the Python module from its wheel, in a virtual environment, on cpu" \
		env ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
		scripts/python-wheel.sh
	# the same binary under Debian trixie's Python 3.13 and NumPy 2, in a chroot
	# made once into the cache (40 s; 3 s when there)
	host_counted "the Python module on cpu, trixie's Python and NumPy 2" \
		scripts/python-compat.sh
	host_counted "libaccel suite through the Paddle plugin on cuda" env \
		ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_suite" -u
	host_counted "device model" "$T/test_device"
	host_one "device fuzzer" "$T/fuzz_device" --seed "$seed" --ops 100000
	# The same against QEMU built with ASan and UBSan (a report fails the test),
	# and QEMU's own generic fuzzer, from the corpus kept in the cache.
	host_counted "device model under ASan and UBSan" under_asan \
		"$T/test_device"
	host_one "device fuzzer under ASan and UBSan" under_asan \
		"$T/fuzz_device" --seed "$seed" --ops 100000
	# The same under ThreadSanitizer (under_tsan)
	host_counted "device model under ThreadSanitizer" under_tsan "$T/test_device"
	host_one "device fuzzer under ThreadSanitizer" under_tsan "$T/fuzz_device" \
		--seed "$seed" --ops 100000
	host_one "QEMU's generic fuzzer, one device" needs "QEMU (fuzz)" scripts/fuzz-generic.sh --devices 1 \
		--seconds 60
	host_one "QEMU's generic fuzzer, two devices" needs "QEMU (fuzz)" scripts/fuzz-generic.sh --devices 2 \
		--seconds 60
}
# the lane beside: the VM runs, then the host's stages the other has not taken
lane_beside() {
	run_vms
	host_stages
}
beside lane_beside
beside lane_waiting
host_stages
# the VM runs the lane beside has not taken
run_vms
join_lanes
summary
