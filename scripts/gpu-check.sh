#!/bin/bash
# The cuda backend on a real GPU, in one batch: everything of the library
# that make check runs on cpu, the frameworks using it (PyTorch's allocator,
# Numba's EMM plugin, CuPy, PyTorch and Numba through the CUDA array
# interface and DLPack), and the cuda benchmarks. Runs prebuilt programs
# only (the Python module is one abi3 binary for any CPython >= 3.11), so
# that it works on a machine with a GPU and no compiler.
#
# Here, where the CUDA toolkit is: make gpu
# There, in the repository's root with build/ beside it:
#   scripts/gpu-check.sh [LOG_DIR [PART...]]
# PARTs, all by default: lib plugin (the suites), examples python fuzz
# numba (the other tests), torch bench (benchmarks). Parts run in the
# order of what matters most: the library's suite first and alone (its
# tests check that the device's free memory is back where it was, which
# any other process on the GPU would upset), then two lanes at once (the
# fuzzer; the frameworks and the examples), then the plugin's suite alone,
# and the benchmarks last, alone again. With the device tool: carry build/lib,
# build/tests, build/tools, build/plugin, build/examples, build/python and
# build/interop, and run
#   scripts/gpu-check.sh "$OUT" PART... 2>&1 | tee "$OUT/check.log"
# With GPU_DEADLINE a little under the command's limit, a first command
# runs what fits and a second one the parts the first names as not run.
# The lanes' output goes to LOG_DIR/lane-N.log as it runs, the
# benchmarks' figures to LOG_DIR/bench.log (docs/BENCHMARKS.md).
#
# Limits, in seconds: PART_TIMEOUT (300) for each test program,
# BENCH_TIMEOUT (300) for each benchmark, and GPU_DEADLINE for the whole
# batch: a part starts only while 20 s of it are left, and no program
# runs past it, so that a device-tool command ends inside its own limit
# with the log of every part it ran ("== part P not run" names the others,
# to run in a second command). Ends with one line per part (its counts and
# time) and "N passed, N failed, N skipped".
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit
T=build/tests
logs=${1:-/tmp/accel-gpu}
shift $(($# > 0 ? 1 : 0))
parts=${*:-lib plugin examples python fuzz numba torch bench}
PYTHON=${PYTHON:-python3}
mkdir -p "$logs"
# shellcheck source=scripts/suites.sh
. scripts/suites.sh

wanted() { [[ " $parts " == *" $1 "* ]]; }
# The suites' checks that free memory is back at its baseline allow what
# CUDA's driver keeps of its own (tests/lib/suite.h): 2 and 4 MiB were seen
# on an H100 with every chunk of libaccel's given back.
export ACCEL_SUITE_DRIVER_SLACK=$((4 << 20))
deadline=$((SECONDS + ${GPU_DEADLINE:-86400}))

# Runs a command for at most @most seconds, and never past the deadline.
within() {	# most command...
	local most=$1 left=$((deadline - SECONDS))
	shift
	((left < most)) && most=$((left > 1 ? left : 1))
	timeout -k 10 "$most" "$@"
}
limit() { within "${PART_TIMEOUT:-300}" "$@"; }

if ! nvidia-smi -L; then
	echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed)"
	exit 1
fi

# One benchmark, its output appended to the log: a failed run counts, and
# so does one that outlasts BENCH_TIMEOUT seconds, so that a slow one
# cannot take a whole device-tool command with it.
bench() {	# title command...
	local title=$1 rc
	shift
	echo "== $title: $*" | tee -a "$logs/bench.log"
	within "${BENCH_TIMEOUT:-300}" "$@" 2>&1 | tee -a "$logs/bench.log"
	rc=${PIPESTATUS[0]}
	add "benchmark $title" $((rc == 0)) $((rc != 0))
}

# The whole suite on the GPU (with PyTorch's allocator's and the adopted
# streams' tests), then next to a cpu device: p2p and copies between the
# backends, each way.
part_lib() {
	run_counted "libaccel on cuda" limit env ACCEL_VISIBLE_DEVICES=cuda "$T/accel_lib_test"
	run_counted "libaccel on cuda with a cpu peer" limit env ACCEL_VISIBLE_DEVICES=cuda,cpu \
		"$T/accel_lib_test" -t p2p
	run_counted "libaccel on cpu with a cuda peer" limit env ACCEL_VISIBLE_DEVICES=cpu,cuda \
		"$T/accel_lib_test" -t p2p
	run_counted "libaccel on cuda, ACCEL_POOL=off" limit env ACCEL_VISIBLE_DEVICES=cuda \
		ACCEL_POOL=off "$T/accel_lib_test" -t pool
}

# free_is_not_starved_by_copies ran out of time in the plugin's suite on
# two H100s (docs/libaccel.md): ten more runs, each of whose time-outs
# prints every thread's stack (offsets for addr2line on build/tests).
part_plugin() {
	run_counted "Paddle plugin loader on cuda" limit env ACCEL_VISIBLE_DEVICES=cuda \
		"$T/plugin_test"
	run_counted "libaccel suite through the Paddle plugin on cuda" limit env \
		ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_suite"
	for run in $(seq 10); do
		run_counted "free_is_not_starved_by_copies through the plugin, run $run" \
			limit env ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_suite" \
			-t free_is_not_starved_by_copies
	done
}

part_examples() {
	for e in occa_memory occa_wrap_memory taichi_memory numba_memory; do
		run_one "example $e on cuda" limit env ACCEL_VISIBLE_DEVICES=cuda \
			"build/examples/$e"
	done
}

# The Python module's suite on cuda: the CUDA array interface, DLPack's
# kDLCUDA, and CuPy, PyTorch and Numba taking accel's arrays and giving
# theirs (tests/python/test_cuda_frameworks.py, the EMM plugin too).
part_python() {
	if PYTHONPATH=build/python "$PYTHON" -c 'import accel'; then
		run_counted "the Python module on cuda" limit env ACCEL_VISIBLE_DEVICES=cuda \
			PYTHON="$PYTHON" scripts/pytest-suite.sh
	else
		add "the Python module imports in $PYTHON" 0 1
	fi
}

# The differential fuzzer: cuda is the ground truth for its model. A
# disagreement prints the seed, the trace and a minimized TEST.
part_fuzz() {
	local seed=${FUZZ_SEED:-$(date +%s)}

	run_one "lib_fuzz on cuda" limit env ACCEL_VISIBLE_DEVICES=cuda "$T/lib_fuzz" \
		--seed "$seed" --programs 200 --ops 200 --minimize \
		${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}
	run_one "lib_fuzz on cuda with a cpu peer" limit env ACCEL_VISIBLE_DEVICES=cuda,cpu \
		"$T/lib_fuzz" --seed "$((seed + 1))" --programs 100 --ops 200 --minimize \
		${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}
}

# numba-cuda's own driver tests with every allocation from the pool, where
# its tests are installed. Modules that need a package the machine lacks
# (filecheck) cannot be collected: counted as skipped, with the reason.
part_numba() {
	local out=/tmp/accel-numba.log p f e

	if ! "$PYTHON" -c 'import numba.cuda.tests.cudadrv' 2>/dev/null; then
		echo "gpu-check: numba-cuda's tests are not installed: skipped"
		return
	fi
	# numba-cuda's own pytest.ini: its tests' package is numba.cuda only
	# through the namespace package numba (else pytest imports them as
	# cuda.tests, and finds cuda-python's cuda), and its test cases keep
	# their class's state in one worker (loadscope).
	NUMBA_CUDA_MEMORY_MANAGER=accel_numba PYTHONPATH=build/python${PYTHONPATH:+:$PYTHONPATH} \
		limit "$PYTHON" -m pytest -q -p no:cacheprovider -n 8 --dist loadscope \
		-o consider_namespace_packages=true \
		--continue-on-collection-errors --pyargs numba.cuda.tests.cudadrv \
		2>&1 | tee "$out"
	count() { tail -n 1 "$out" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
	p=$(count passed) f=$(count failed) e=$(count error)
	grep -E '^E +ModuleNotFoundError' "$out" | sort | uniq -c
	[ "$p" -gt 0 ] || f=$((f + 1))
	add "numba-cuda's driver tests on the pool (accel_numba)" "$p" "$f" \
		"$(($(count skipped) + e))"
}

part_bench() {
	for run in 1 2; do
		bench "copies, run $run (reference: cudaMemcpy, alternated)" \
			env ACCEL_VISIBLE_DEVICES=cuda build/tools/lib_bench_cuda -d cuda:0 -s 256 -r 30
	done
	bench "allocator against cuMemAlloc and cuMemAllocAsync" \
		env ACCEL_VISIBLE_DEVICES=cuda build/tools/pool_bench_cuda -d cuda:0 \
		-n 1000,10000 -m 65536 -r "${BENCH_REPEATS:-5}"
	for run in 1 2; do
		bench "the pool alone, run $run" env ACCEL_VISIBLE_DEVICES=cuda \
			build/tools/pool_bench_cuda -d cuda:0 -n 1000,10000,100000 -m 65536 -r "${BENCH_REPEATS:-5}" -p
	done
}

# PyTorch on libaccel's pool (libaccel-torch.so): one model trained with
# PyTorch's allocator, cudaMallocAsync and the pool, alternated; the
# losses must be identical.
part_torch() {
	bench "resnet18 with three allocators" "$PYTHON" tools/bench/torch_alloc_bench.py \
		--model resnet18 --steps "${TORCH_STEPS:-100}" --rounds 2
	bench "a small transformer with three allocators" "$PYTHON" \
		tools/bench/torch_alloc_bench.py --model transformer \
		--steps "${TORCH_STEPS:-100}" --rounds 2
}

# Runs the wanted PARTs one after another, each one's time in the log.
run_parts() {	# part...
	local start

	for part in "$@"; do
		wanted "$part" || continue
		if ((deadline - SECONDS < 20)); then
			echo "== part $part not run (GPU_DEADLINE)"
			continue
		fi
		start=$SECONDS
		echo "== part $part"
		"part_$part"
		echo "== part $part took $((SECONDS - start)) s"
	done
}

# A lane: PARTs in a subshell of their own, whose stages go to the
# summary's table as they end; $counts/N says that the lane ended.
lane() {	# N part...
	local n=$1
	shift
	(
		log=$(mktemp /tmp/accel-check.XXXXXX)
		run_parts "$@" >"$logs/lane-$n.log" 2>&1
		echo ended >"$counts/$n"
		rm -f "$log"
	)
}

add_lane() {	# N
	grep '^== ' "$logs/lane-$1.log"
	[ -s "$counts/$1" ] || add "lane $1 (stopped before its end)" 0 1
}

# numba-cuda 0.30 cannot import under NumPy 2.5 (numpy.row_stack is gone)
if ! "$PYTHON" -c 'import numpy; numpy.row_stack' 2>/dev/null; then
	export PYTHONPATH=$top/scripts/numpy-compat${PYTHONPATH:+:$PYTHONPATH}
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
	tee -a "$logs/bench.log"
# The GPU's use over the run; where persistence mode is off, it also keeps
# the driver initialized, so that each test's process does not pay for
# bringing the GPU up.
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 \
	>"$logs/gpu-use.csv" 2>&1 &
monitor=$!
counts=$(mktemp -d /tmp/accel-lanes.XXXXXX)
run_parts lib
lane 1 fuzz &
lanes=($!)
lane 2 python numba examples &
lanes+=($!)
wait "${lanes[@]}"
for n in 1 2; do
	add_lane "$n"
done
run_parts plugin torch bench
kill "$monitor"
rm -rf "$counts"
summary
