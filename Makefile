# accel: a simulated PCIe accelerator and its software stack.
#
#   make demo    boot the VM with two accelerators and show what the driver found
#   make check   build everything and run every test suite
#   make bench   run the benchmarks (docs/BENCHMARKS.md)
#
# Third-party parts (QEMU source, kernel packages) are fetched from the
# distribution at build time and cached in $(ACCEL_CACHE).

SHELL := /bin/bash
ACCEL_CACHE ?= $(HOME)/.cache/accel
export ACCEL_CACHE

BUILD := build
TESTS := $(BUILD)/tests
CC ?= gcc
TEST_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Wno-missing-field-initializers \
	       -Iinclude
QTEST_LIB := tests/device/qtest.c tests/device/accel_dev.c
QTEST_HDR := tests/device/qtest.h tests/device/accel_dev.h include/accel_hw.h

.PHONY: all deps qemu kernel driver tests check check-debug demo bench fuzz coverage clean \
	distclean FORCE

all: qemu driver lib python tests examples plugin interop $(BUILD)/tools/accel-smi

include lib/lib.mk
include python/python.mk
include tests/lib/fuzz.mk
include tests/fakecuda/fakecuda.mk

# What a target installs and builds: everything for the tests, less for
# make demo (the packages and the one QEMU that booting the VM needs).
DEPS_GROUPS := qemu vm driver tests lib python smi
QEMU_FLAVOURS := plain fuzz tsan

deps:
	@scripts/deps.sh $(DEPS_GROUPS)

qemu: deps
	@for f in $(QEMU_FLAVOURS); do scripts/build-qemu.sh $$f >/dev/null || exit 1; done

kernel: $(BUILD)/kernel.env

# Always asked: the installed headers decide the kernel, and they may change.
$(BUILD)/kernel.env: FORCE | deps
	@scripts/fetch-kernel.sh $(if $(filter no,$(KERNEL_SOURCE)),--no-source) >/dev/null

FORCE:

# simaccel.ko is built in its own folder: the sources are copied there with
# their times, so that Kbuild rebuilds only what changed.
SIMACCEL_DIR := $(BUILD)/simaccel
SIMACCEL_KO := $(SIMACCEL_DIR)/simaccel.ko
SIMACCEL_SRC := $(wildcard driver/simaccel_*.[ch]) Kbuild uapi/simaccel_accel.h \
		include/accel_hw.h

driver: $(SIMACCEL_KO)

$(SIMACCEL_KO): $(SIMACCEL_SRC) $(BUILD)/kernel.env
	@mkdir -p $(SIMACCEL_DIR)/driver $(SIMACCEL_DIR)/uapi $(SIMACCEL_DIR)/include
	@cp -p driver/simaccel_*.[ch] $(SIMACCEL_DIR)/driver/
	@cp -p uapi/simaccel_accel.h $(SIMACCEL_DIR)/uapi/
	@cp -p include/accel_hw.h $(SIMACCEL_DIR)/include/
	@cp -p Kbuild $(SIMACCEL_DIR)/Kbuild
	. $(BUILD)/kernel.env && $(MAKE) -C $$KDIR M=$(CURDIR)/$(SIMACCEL_DIR) modules

tests: $(TESTS)/test_device $(TESTS)/fuzz_device $(TESTS)/bench_dma \
       $(TESTS)/accel_lib_test $(TESTS)/accel_lib_test.static $(TESTS)/accel_lib_test.asan \
       $(PLUGIN_TESTS) $(TESTS)/hold_device $(TESTS)/hold_pool $(TESTS)/unload_lib $(TESTS)/ioctl_fuzz \
       $(TESTS)/load_test $(TESTS)/lib_fuzz $(TESTS)/lib_fuzz.static \
       $(TESTS)/simaccel_test $(TESTS)/simaccel_job_test $(TESTS)/simaccel_share_test \
       $(TESTS)/simaccel_fence_test $(TESTS)/simaccel_trace_test $(TESTS)/simaccel_reset_test \
       $(TESTS)/simaccel_pm_test

$(TESTS)/test_device: tests/device/test_device.c tests/device/check.c \
		      tests/device/check.h $(QTEST_LIB) $(QTEST_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $(filter %.c,$^)

$(TESTS)/fuzz_device $(TESTS)/bench_dma: $(TESTS)/%: tests/device/%.c tools/bench/bench_common.h \
					 $(QTEST_LIB) $(QTEST_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -pthread -o $@ $(filter %.c,$^)

# Guest programs are static: the VM has busybox and no C library.
$(TESTS)/ioctl_fuzz: tests/driver/ioctl_fuzz.c uapi/simaccel_accel.h | deps
	@mkdir -p $(@D)
	$(CC) -static -O2 -g -std=gnu11 -Wall -Wextra $$(pkg-config --cflags libdrm) -o $@ $<

$(TESTS)/hold_device: tests/tools/hold_device.c uapi/simaccel_accel.h | deps
	@mkdir -p $(@D)
	$(CC) -static -O2 -Wall $$(pkg-config --cflags libdrm) -o $@ $<

# accel-smi's host test: a process holding libaccel pool memory
$(TESTS)/hold_pool: tests/tools/hold_pool.c $(LIB_HDR) $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -Ilib/include -o $@ $< -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN/../lib'

# and one unloading the library, which must leave no thread behind
$(TESTS)/unload_lib: tests/tools/unload_lib.c | deps
	@mkdir -p $(@D)
	$(CC) $(TEST_CFLAGS) -o $@ $< -ldl

# simaccel.ko's tests: uapi from the tree, drm.h from libdrm's headers.
$(TESTS)/simaccel_test $(TESTS)/simaccel_job_test $(TESTS)/simaccel_share_test \
$(TESTS)/simaccel_fence_test $(TESTS)/simaccel_trace_test $(TESTS)/simaccel_reset_test \
$(TESTS)/simaccel_pm_test: \
		$(TESTS)/%: tests/driver/%.c tests/driver/simaccel_util.h tests/driver/simaccel_devcd.h \
			uapi/simaccel_accel.h \
			include/accel_hw.h $(BUILD)/kernel.env | deps
	@mkdir -p $(@D)
	. $(BUILD)/kernel.env && $(CC) -static -O2 -g -Wall -I$$KSFT_INC \
		$$(pkg-config --cflags libdrm) -o $@ $<

# make check and make demo install the packages first, then build on every
# core (make -j): QEMU's ninja, the kernel's download and the small C builds
# beside each other.
JOBS := $(shell nproc)

# make check's packages beyond make all's (deps.sh's group check: PyTorch
# and the Python tests' tools, the lint and manual tools, clang for the
# QEMUs with sanitizers) install while make all builds: dpkg keeps one core
# busy, the compiler the other (check.sh's QEMU builds and VMs already
# keep both busy). --say tells a user who is not root
# all of them at once. make check builds the QEMUs with sanitizers itself,
# while its first VMs (which need only the plain one) run beside. (The
# build's command is a variable's, so that make -n, which runs any line
# naming $(MAKE), does not run deps.sh.)
CHECK_BUILD = $(MAKE) --no-print-directory -j$(JOBS) QEMU_FLAVOURS=plain all
check:
	@scripts/deps.sh --say $(DEPS_GROUPS) check
	@$(MAKE) --no-print-directory deps
	@scripts/deps.sh --beside "$(CHECK_BUILD)" check
	@scripts/check.sh

# The driver on a debug kernel (KASAN, lockdep, DMA-API debugging, kmemleak,
# fault injection), built from the distribution's source once and cached.
check-debug: all
	@scripts/check-debug.sh

DEMO_DEPS := qemu vm driver lib smi
demo:
	@$(MAKE) --no-print-directory DEPS_GROUPS="$(DEMO_DEPS)" deps
	@$(MAKE) --no-print-directory -j$(JOBS) DEPS_GROUPS="$(DEMO_DEPS)" \
		QEMU_FLAVOURS=plain KERNEL_SOURCE=no qemu driver $(BUILD)/examples/accel_info \
		$(BUILD)/tools/accel-smi $(BUILD)/examples/numba_memory.static
	@scripts/demo.sh

$(BUILD)/tools/simaccel_bench: tools/bench/simaccel_bench.c tools/bench/bench_common.h \
			      uapi/simaccel_accel.h | deps
	@mkdir -p $(@D)
	$(CC) -static -O2 -Wall $$(pkg-config --cflags libdrm) -o $@ $<

$(BUILD)/tools/memcpy_bench: tools/bench/memcpy_bench.c tools/bench/bench_common.h | deps
	@mkdir -p $(@D)
	$(CC) -O2 -Wall -o $@ $<

# accel-smi links the distribution's libpci, which has no static library:
# the VM gets its shared libraries with it.
SMI_SRC := $(wildcard tools/accel-smi/*.c)
$(BUILD)/tools/accel-smi: $(SMI_SRC) tools/accel-smi/accel_smi.h include/accel_hw.h | deps
	@mkdir -p $(@D)
	$(CC) -O2 -g -std=gnu11 -Wall -Wextra -Werror -DACCEL_SMI_VERSION='"$(LIB_VERSION)"' \
	      $$(pkg-config --cflags libpci) -o $@ $(SMI_SRC) $$(pkg-config --libs libpci)

$(BUILD)/examples/accel_info: examples/accel_info.c uapi/simaccel_accel.h | deps
	@mkdir -p $(@D)
	$(CC) -static -O2 -Wall $$(pkg-config --cflags libdrm) -o $@ $<

bench: qemu driver tests python $(BUILD)/tools/memcpy_bench \
       $(BUILD)/tools/simaccel_bench \
       $(BUILD)/tools/lib_bench $(BUILD)/tools/lib_bench.static \
       $(BUILD)/tools/pool_bench $(BUILD)/tools/pool_bench.static
	@scripts/bench.sh

# A long fuzzing campaign: the device model through qtest and QEMU's generic
# fuzzer (GENERIC_FUZZ_SECONDS on one device, as many on two), then the driver's
# ioctls in the VM, e.g. make fuzz FUZZ_OPS=10000000 IOCTL_FUZZ_OPS=1000000
# FUZZ_SEED=... (each prints its seed; --seed repeats a run). Then
# libaccel's differential fuzzer (lib_fuzz): LIB_FUZZ_PROGRAMS programs of
# LIB_FUZZ_OPS ops on cpu with two devices, and on accel in the VM;
# LIB_FUZZ_KNOWN names disagreement classes to skip (lib_fuzz --help), none
# by default; LIB_FUZZ_ONLY the families (every one, the arrays too).
FUZZ_OPS ?= 2000000
GENERIC_FUZZ_SECONDS ?= 1800
IOCTL_FUZZ_OPS ?= 200000
LIB_FUZZ_PROGRAMS ?= 20000
LIB_FUZZ_OPS ?= 400
LIB_FUZZ_KNOWN ?=
LIB_FUZZ_ONLY ?= all,array
LIB_FUZZ_ARGS = --programs $(LIB_FUZZ_PROGRAMS) --ops $(LIB_FUZZ_OPS) \
		$(if $(LIB_FUZZ_ONLY),--only $(LIB_FUZZ_ONLY)) \
		$(if $(FUZZ_SEED),--seed $(FUZZ_SEED)) \
		$(if $(LIB_FUZZ_KNOWN),--known $(LIB_FUZZ_KNOWN)) --minimize
fuzz: qemu driver $(TESTS)/fuzz_device $(TESTS)/ioctl_fuzz $(TESTS)/lib_fuzz \
      $(TESTS)/lib_fuzz.static
	$(TESTS)/fuzz_device --ops $(FUZZ_OPS) $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))
	scripts/fuzz-generic.sh --devices 1 --seconds $(GENERIC_FUZZ_SECONDS)
	scripts/fuzz-generic.sh --devices 2 --seconds $(GENERIC_FUZZ_SECONDS)
	scripts/vm-run.sh --devices 2 --timeout 3600 --file $(TESTS)/ioctl_fuzz -- \
		"./ioctl_fuzz --ops $(IOCTL_FUZZ_OPS) --procs 8 $(if $(FUZZ_SEED),--seed $(FUZZ_SEED))"
	ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
		$(TESTS)/lib_fuzz $(LIB_FUZZ_ARGS)
	scripts/vm-run.sh --devices 2 --timeout 3600 \
		--file $(TESTS)/lib_fuzz.static:/opt/accel/lib_fuzz -- \
		"ACCEL_VISIBLE_DEVICES=accel ./lib_fuzz $(LIB_FUZZ_ARGS)"

# Line coverage of the device model and libaccel by their tests, for
# docs/RELIABILITY.md (QEMU is built once more, with gcov's counters).
coverage: qemu tests
	@scripts/coverage.sh

clean:
	rm -rf $(BUILD)

distclean: clean
	rm -rf $(ACCEL_CACHE)
