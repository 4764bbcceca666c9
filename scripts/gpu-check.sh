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
# PARTs, all by default, in this order: lib plugin examples python fuzz
# bench torch numba (one PART alone fits one device-tool command when the
# whole batch would not). With the device tool: carry build/lib,
# build/tests, build/tools, build/plugin, build/examples, build/python and
# build/interop, and run
#   scripts/gpu-check.sh "$OUT" 2>&1 | tee "$OUT/check.log"
#
# Ends with "N passed, N failed, N skipped" over the test runs; the
# benchmarks' figures go to LOG_DIR/bench.log (docs/BENCHMARKS.md).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit
T=build/tests
logs=${1:-/tmp/accel-gpu}
shift $(($# > 0 ? 1 : 0))
parts=${*:-lib plugin examples python fuzz bench torch numba}
PYTHON=${PYTHON:-python3}
mkdir -p "$logs"
# shellcheck source=scripts/suites.sh
. scripts/suites.sh

wanted() { [[ " $parts " == *" $1 "* ]]; }

if ! nvidia-smi -L; then
	echo "gpu-check: no NVIDIA GPU here (nvidia-smi -L failed)"
	exit 1
fi

# One benchmark, its output appended to the log: a failed run counts, and
# so does one that outlasts BENCH_TIMEOUT seconds (300), so that a slow one
# cannot take a whole device-tool command with it.
bench() {	# title command...
	local title=$1 rc
	shift
	echo "== $title: $*" | tee -a "$logs/bench.log"
	timeout "${BENCH_TIMEOUT:-300}" "$@" 2>&1 | tee -a "$logs/bench.log"
	rc=${PIPESTATUS[0]}
	add "benchmark $title" $((rc == 0)) $((rc != 0))
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
	tee -a "$logs/bench.log"

# The whole suite on the GPU (with PyTorch's allocator's and the adopted
# streams' tests), then next to a cpu device: p2p and copies between the
# backends, each way.
if wanted lib; then
	run_counted "libaccel on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/accel_lib_test"
	run_counted "libaccel on cuda with a cpu peer" env ACCEL_VISIBLE_DEVICES=cuda,cpu \
		"$T/accel_lib_test" -t p2p
	run_counted "libaccel on cpu with a cuda peer" env ACCEL_VISIBLE_DEVICES=cpu,cuda \
		"$T/accel_lib_test" -t p2p
	run_counted "libaccel on cuda, ACCEL_POOL=off" env ACCEL_VISIBLE_DEVICES=cuda \
		ACCEL_POOL=off "$T/accel_lib_test" -t pool
fi
if wanted plugin; then
	run_counted "Paddle plugin loader on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_test"
	run_counted "libaccel suite through the Paddle plugin on cuda" env \
		ACCEL_VISIBLE_DEVICES=cuda "$T/plugin_suite"
fi
if wanted examples; then
	for e in occa_memory occa_wrap_memory taichi_memory numba_memory; do
		run_one "example $e on cuda" env ACCEL_VISIBLE_DEVICES=cuda "build/examples/$e"
	done
fi
# The Python module's suite on cuda: the CUDA array interface, DLPack's
# kDLCUDA, and CuPy, PyTorch and Numba taking accel's arrays and giving
# theirs (tests/python/test_cuda_frameworks.py, the EMM plugin too).
if wanted python; then
	if PYTHONPATH=build/python "$PYTHON" -c 'import accel'; then
		run_counted "the Python module on cuda" env ACCEL_VISIBLE_DEVICES=cuda \
			PYTHON="$PYTHON" scripts/pytest-suite.sh
	else
		add "the Python module imports in $PYTHON" 0 1
	fi
fi
# The differential fuzzer: cuda is the ground truth for its model. A
# disagreement prints the seed, the trace and a minimized TEST.
if wanted fuzz; then
	fuzz_seed=${FUZZ_SEED:-$(date +%s)}
	run_one "lib_fuzz on cuda" env ACCEL_VISIBLE_DEVICES=cuda "$T/lib_fuzz" \
		--seed "$fuzz_seed" --programs 200 --ops 200 --minimize \
		${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}
	run_one "lib_fuzz on cuda with a cpu peer" env ACCEL_VISIBLE_DEVICES=cuda,cpu \
		"$T/lib_fuzz" --seed "$((fuzz_seed + 1))" --programs 100 --ops 200 --minimize \
		${LIB_FUZZ_KNOWN:+--known "$LIB_FUZZ_KNOWN"}
fi
if wanted bench; then
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
fi
# PyTorch on libaccel's pool (libaccel-torch.so): one model trained with
# PyTorch's allocator, cudaMallocAsync and the pool, alternated; the
# losses must be identical.
if wanted torch; then
	bench "resnet18 with three allocators" "$PYTHON" tools/bench/torch_alloc_bench.py \
		--model resnet18 --steps 300 --rounds 2
	bench "a small transformer with three allocators" "$PYTHON" \
		tools/bench/torch_alloc_bench.py --model transformer --steps 200 --rounds 2
fi
# numba-cuda's own driver tests with every allocation from the pool, where
# its tests are installed: at most TIME_NUMBA seconds.
if wanted numba; then
	if "$PYTHON" -c 'import numba.cuda.tests.cudadrv' 2>/dev/null; then
		run_one "numba-cuda's driver tests on the pool (accel_numba)" env \
			NUMBA_CUDA_MEMORY_MANAGER=accel_numba PYTHONPATH=build/python \
			timeout "${TIME_NUMBA:-300}" "$PYTHON" -m numba.runtests -m 16 \
			numba.cuda.tests.cudadrv
	else
		echo "gpu-check: numba-cuda's tests are not installed: skipped"
	fi
fi
summary
