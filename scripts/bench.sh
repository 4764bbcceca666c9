#!/bin/bash
# make bench: the figures of docs/BENCHMARKS.md, each with its reference
# measured in the same run.
#   BENCH_FRESH=1 also times a QEMU build from scratch (several minutes).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
# NumPy and PyTorch, for the Python module's and the allocator's figures
scripts/deps.sh python-tests

seconds() {	# command...: wall seconds of one run
	local t0
	t0=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	echo "$(date +%s.%N) - $t0" | bc | cut -c1-6
}

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"

echo "== QEMU build (scripts/build-qemu.sh)"
if [ "${BENCH_FRESH:-0}" = 1 ]; then
	fresh=$(mktemp -d /tmp/accel-fresh-cache.XXXXXX)
	echo "from scratch (download, extract, configure, build): $(ACCEL_CACHE=$fresh seconds scripts/build-qemu.sh) s"
	rm -rf "$fresh"
	scripts/build-qemu.sh >/dev/null
fi
echo "cached, nothing changed: $(seconds scripts/build-qemu.sh) s"
bin=$(readlink -f build/qemu-system-x86_64)
base=$(dirname "$(dirname "$bin")")
# What a one-line change to the device costs: recompile accel.c and link.
rm -rf "$base"/bin-*
touch "$base/src/hw/misc/accel/accel.c"
echo "after a change to the device: $(seconds scripts/build-qemu.sh) s"

echo "== VM boot (scripts/vm-run.sh, TCG, 2 vCPUs, one device, command 'true')"
for i in 1 2 3; do
	out=$(scripts/vm-run.sh -- true 2>&1)
	# the last boot's figures: vm-run boots once more where QEMU's TCG
	# failed the first
	retried=""
	! echo "$out" | grep -q '^vm-run: .*booting once more' ||
		retried=" (the second boot: QEMU's TCG failed the first)"
	echo "run $i: guest reached init after $(echo "$out" | sed -n 's/^vm: booted in \(.*\) s/\1/p' | tail -n 1) s," \
	     "whole run $(echo "$out" | sed -n 's/^vm-run: VM ran for \(.*\) s/\1/p' | tail -n 1) s$retried"
done

echo "== DMA through qtest, 64 MiB, 7 runs (build/tests/bench_dma 64 7)"
build/tests/bench_dma 64 7

# One vCPU: on a 2-core machine a second TCG vCPU thread competes with
# QEMU's main loop, which is where the device moves the data.
echo "== simaccel.ko in the VM (build/tools/simaccel_bench; 1 vCPU, VRAM 1G, guest RAM 2G, TCG)"
echo "   reference: memcpy on this machine, natively, at the same sizes; a null ioctl in the same run"
printf '%-24s' size
for s in 4K 64K 1024K 16384K 65536K 262144K; do printf ' %9s' "$s"; done
echo
build/tools/memcpy_bench
scripts/vm-run.sh --smp 1 --vram 1G --memory 2G --timeout 600 \
	--file build/tools/simaccel_bench \
	-- ./simaccel_bench 2>&1 | grep -E 'size|HOST|pageable|D2D|median'
echo "== a 4 KiB job while another process saturates a device of one hardware queue (simaccel_bench --fairness; 1 vCPU, TCG)"
scripts/vm-run.sh --smp 1 --vram 1G --memory 2G --props queues=1 --timeout 600 \
	--file build/tools/simaccel_bench \
	-- ./simaccel_bench --fairness 2>&1 | grep -E 'median'
echo "== libaccel on cpu (build/tools/lib_bench, 64 MiB, median of 10); reference: memcpy above"
ACCEL_VISIBLE_DEVICES=cpu build/tools/lib_bench -s 64 -r 10
echo "== libaccel on accel in the VM (lib_bench, 64 MiB, median of 5; 1 vCPU, VRAM 1G, TCG)"
scripts/vm-run.sh --smp 1 --vram 1G --memory 2G --timeout 600 \
	--file build/tools/lib_bench.static:/opt/accel/lib_bench -- \
	'ACCEL_VISIBLE_DEVICES=accel ./lib_bench -s 64 -r 5' 2>&1 |
	grep -E 'GB/s|^device'
echo "== caching allocator on cpu (build/tools/pool_bench, sizes 1..64 KiB, median of 5, a 16 GiB cpu device)"
ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_MEMORY=16G build/tools/pool_bench -n 1000,10000,100000 -m 65536 -r 5
echo "== caching allocator on accel in the VM (pool_bench, sizes 1..16 KiB, median of 3; 1 vCPU, VRAM 1G, TCG)"
scripts/vm-run.sh --smp 1 --vram 1G --memory 2G --timeout 600 \
	--file build/tools/pool_bench.static:/opt/accel/pool_bench -- \
	'ACCEL_VISIBLE_DEVICES=accel ./pool_bench -n 1000,10000 -m 16384 -r 3' 2>&1 |
	grep -E '^ +[0-9]|blocks|random_allocations'
echo "== the Python module on cpu (tools/bench/python_bench.py); references: NumPy in the same run"
ACCEL_VISIBLE_DEVICES=cpu PYTHONPATH=build/python /usr/bin/python3 tools/bench/python_bench.py
echo "== the Python module on accel in the VM (python_bench.py through --host-root; 1 vCPU, TCG)"
scripts/vm-run.sh --smp 1 --vram 1G --memory 2G --timeout 600 --host-root -- \
	'in-host env ACCEL_VISIBLE_DEVICES=accel PYTHONPATH=build/python /usr/bin/python3 tools/bench/python_bench.py' 2>&1 |
	grep -E '^device |us '
if [ -n "$(command -v nvidia-smi)" ] && make -s build/tools/lib_bench_cuda 2>/dev/null; then
	echo "== libaccel on cuda (build/tools/lib_bench_cuda, 256 MiB, median of 30); reference: cudaMemcpy"
	ACCEL_VISIBLE_DEVICES=cuda build/tools/lib_bench_cuda -s 256 -r 30
fi
if [ -n "$(command -v nvidia-smi)" ] && make -s build/tools/pool_bench_cuda 2>/dev/null; then
	echo "== caching allocator on cuda (build/tools/pool_bench_cuda, sizes 1..64 KiB, median of 5); references: cuMemAlloc, cuMemAllocAsync"
	ACCEL_VISIBLE_DEVICES=cuda build/tools/pool_bench_cuda -n 1000,10000,100000 -m 65536 -r 5
fi
