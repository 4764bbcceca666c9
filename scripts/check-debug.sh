#!/bin/bash
# make check-debug: the driver, simaccel.ko, on the debug kernel (KASAN,
# lockdep, DMA-API debugging, kmemleak, fault injection;
# scripts/build-debug-kernel.sh), in the VM with two devices and a vIOMMU:
# its kselftests, the libaccel suite on accel, and the ioctl fuzzer with
# failslab and fail_page_alloc failing 1% of its processes' allocations,
# then kmemleak and the DMA-API error count. Any kernel report fails the
# run, except the reports of the allocations that were made to fail. Ends
# with "N passed, N failed".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
T=build/tests
scripts/build-debug-kernel.sh >/dev/null || exit 1
# shellcheck source=/dev/null
. build/debug-kernel.env
# shellcheck source=scripts/suites.sh
. scripts/suites.sh

seed=${FUZZ_SEED:-$(date +%s)}
run_vm "debug kernel, simaccel.ko, vIOMMU" --kernel "$VMLINUZ" \
	--module "$DEBUG_SIMACCEL_KO" --devices 2 --iommu --memory 2G --smp 2 \
	--timeout 3000 --injected-faults --file "$T/simaccel_test" \
	--file "$T/simaccel_job_test" --file "$T/simaccel_share_test" \
	--file "$T/simaccel_fence_test" --file "$T/simaccel_trace_test" \
	--file "$T/simaccel_reset_test" --file "$T/simaccel_pm_test" \
	--file "$T/accel_lib_test.static:/opt/accel/accel_lib_test" \
	--file "$T/ioctl_fuzz" --file tests/driver/debug/faults.sh --file tests/driver/debug/after.sh -- \
	./simaccel_test ./simaccel_job_test ./simaccel_share_test ./simaccel_fence_test \
	./simaccel_trace_test ./simaccel_reset_test ./simaccel_pm_test \
	"ACCEL_VISIBLE_DEVICES=accel ./accel_lib_test" \
	./faults.sh "./ioctl_fuzz --kernel-faults --ops 20000 --procs 4 --seed $seed" \
	./after.sh
summary
