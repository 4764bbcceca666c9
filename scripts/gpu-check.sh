#!/bin/bash
# The cuda backend on a real GPU, in one batch: everything of the library
# that make check runs on cpu, and the cuda benchmarks. Runs prebuilt
# programs only, so that it works on a machine with a GPU and no compiler.
#
# Here, where the CUDA toolkit is: make gpu
# There, in the repository's root with build/ beside it:
#   scripts/gpu-check.sh [LOG_DIR]
# With the device tool: carry build/lib, build/tests, build/tools,
# build/plugin and build/examples, and run
#   scripts/gpu-check.sh "$OUT" 2>&1 | tee "$OUT/check.log"
#
# Ends with "N passed, N failed, N skipped" over the test runs; the
# benchmarks' figures go to LOG_DIR/bench.log (docs/BENCHMARKS.md).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit
T=build/tests
logs=${1:-/tmp/accel-gpu}
mkdir -p "$logs"
# shellcheck source=scripts/suites.sh
. scripts/suites.sh

if ! nvidia-smi -L; then
	echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed)"
	exit 1
fi

# The whole suite on the GPU, then next to a cpu device: p2p and copies
# between the backends, each way.
run_counted "libaccel on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/accel_lib_test"
run_counted "libaccel on cuda with a cpu peer" env ACCEL_VISIBLE_DEVICES=cuda,cpu \
	"$T/accel_lib_test" -t p2p
run_counted "libaccel on cpu with a cuda peer" env ACCEL_VISIBLE_DEVICES=cpu,cuda \
	"$T/accel_lib_test" -t p2p
run_counted "libaccel on cuda, ACCEL_POOL=off" env ACCEL_VISIBLE_DEVICES=cuda \
	ACCEL_POOL=off "$T/accel_lib_test" -t pool
run_counted "Paddle plugin loader on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_test"
run_counted "libaccel suite through the Paddle plugin on cuda" env \
	ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_suite"
for e in occa_memory occa_wrap_memory taichi_memory numba_memory; do
	run_one "example $e on cuda" env ACCEL_VISIBLE_DEVICES=cuda "build/examples/$e"
done
# The Python module, where it was built for this machine's Python
# (PYTHON; make python PYTHON=... builds it for another): its suite on
# cuda, with the CUDA array interface and DLPack's kDLCUDA.
if PYTHONPATH=build/python "${PYTHON:-python3}" -c 'import accel' 2>/dev/null; then
	run_counted "the Python module on cuda" env ACCEL_VISIBLE_DEVICES=cuda \
		PYTHON="${PYTHON:-python3}" scripts/pytest-suite.sh
else
	echo "gpu-check: the Python module was not built for ${PYTHON:-python3}: its suite is skipped"
fi
# The differential fuzzer: cuda is the ground truth for its model. A
# disagreement prints the seed, the trace and a minimized TEST.
fuzz_seed=${FUZZ_SEED:-$(date +%s)}
run_one "lib_fuzz on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/lib_fuzz" \
	--seed "$fuzz_seed" --programs 200 --ops 200 --minimize \
	${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}
run_one "lib_fuzz on cuda with a cpu peer" env ACCEL_VISIBLE_DEVICES=cuda,cpu \
	"$T/lib_fuzz" --seed "$((fuzz_seed + 1))" --programs 100 --ops 200 --minimize \
	${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}

# One benchmark, its output appended to the log: a failed run counts.
bench() {	# title command...
	local title=$1 rc
	shift
	echo "== $title: $*" | tee -a "$logs/bench.log"
	"$@" 2>&1 | tee -a "$logs/bench.log"
	rc=${PIPESTATUS[0]}
	add "benchmark $title" $((rc == 0)) $((rc != 0))
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
	tee "$logs/bench.log"
for run in 1 2 3; do
	bench "copies, run $run (reference: cudaMemcpy, alternated)" \
		env ACCEL_VISIBLE_DEVICES=cuda build/tools/lib_bench_cuda -d cuda:0 -s 256 -r 30
done
bench "allocator against cuMemAlloc and cuMemAllocAsync" \
	env ACCEL_VISIBLE_DEVICES=cuda build/tools/pool_bench_cuda -d cuda:0 \
	-n 1000,10000,100000 -m 65536 -r 5
for run in 1 2 3; do
	bench "the pool alone, run $run" env ACCEL_VISIBLE_DEVICES=cuda \
		build/tools/pool_bench_cuda -d cuda:0 -n 1000,10000,100000 -m 65536 -r 5 -p
done
summary
