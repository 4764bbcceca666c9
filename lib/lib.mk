# libaccel: built into build/lib. 'make install' installs it with the rest of
# the stack: the Paddle plugin, accel-smi, the man pages and the udev rule.
#
# Internal functions are hidden (-fvisibility=hidden); the version script
# gives the public ones the version node LIBACCEL_1.0, and the static
# library keeps them local.

LIB_VERSION := 1.0.0
LIB_SONAME := libaccel.so.1
LIB_DIR := $(BUILD)/lib
# lib/src has a folder per layer: core (devices, errors, handles, streams),
# memory (the raw memory API), backends, pool (the caching allocator) and
# objects (storages, memory handles, arrays).
LIB_SRC := $(wildcard lib/src/*/*.c)
LIB_HDRS_INTERNAL := $(wildcard lib/src/*/*.h)
LIB_OBJ := $(patsubst lib/src/%.c,$(LIB_DIR)/obj/%.o,$(LIB_SRC))
LIB_HDR := lib/include/accel/accel.h lib/include/accel/memory.h \
	   lib/include/accel/dlpack.h
LIB_CFLAGS := -O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	      -Wno-missing-field-initializers -fPIC -fvisibility=hidden \
	      -pthread -Ilib/include -Ilib/src -I.
LIB_SO := $(LIB_DIR)/libaccel.so.$(LIB_VERSION)
LIB_A := $(LIB_DIR)/libaccel.a

# The cuda backend is built when the CUDA headers are there; it loads
# libcuda.so.1 at run time.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
LIB_CFLAGS += -DACCEL_WITH_CUDA -isystem $(CUDA_HOME)/include
endif

PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
# udev reads rules from /etc and /lib, not from under /usr/local
UDEVRULESDIR ?= /etc/udev/rules.d

.PHONY: lib install install-dkms

lib: $(LIB_SO) $(LIB_A)

$(LIB_DIR)/obj/%.o: lib/src/%.c $(LIB_HDRS_INTERNAL) $(LIB_HDR) uapi/simaccel_accel.h | deps
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) $$(pkg-config --cflags libdrm) -c -o $@ $<

$(LIB_SO): $(LIB_OBJ) lib/libaccel.map
	$(CC) -shared -pthread -Wl,-soname,$(LIB_SONAME) \
	      -Wl,--version-script=lib/libaccel.map -Wl,--no-undefined \
	      -o $@ $(LIB_OBJ) -ldl
	ln -sf $(notdir $@) $(LIB_DIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(LIB_DIR)/libaccel.so

# The static library is one relocatable object whose internal (hidden)
# symbols are made local, so that a program linking it sees the public API
# alone and none of the library's internal names can collide with its own.
$(LIB_A): $(LIB_OBJ)
	rm -f $@
	$(LD) -r -o $(LIB_DIR)/libaccel.o $^
	objcopy --localize-hidden $(LIB_DIR)/libaccel.o
	ar rcs $@ $(LIB_DIR)/libaccel.o

install: lib plugin interop $(BUILD)/tools/accel-smi install-python
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR)/accel \
		   $(DESTDIR)$(LIBDIR)/paddle-plugins
	install -m 755 $(PLUGIN) $(DESTDIR)$(LIBDIR)/paddle-plugins/
	install -m 644 $(LIB_HDR) $(DESTDIR)$(INCLUDEDIR)/accel/
	install -m 755 $(LIB_SO) $(TORCH_ALLOC) $(DESTDIR)$(LIBDIR)/
	ln -sf libaccel.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libaccel.so
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(LIB_VERSION)|' \
	    lib/libaccel.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/libaccel.pc
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UDEVRULESDIR)
	install -m 755 $(BUILD)/tools/accel-smi $(DESTDIR)$(BINDIR)/
	install -m 644 udev/70-accel.rules $(DESTDIR)$(UDEVRULESDIR)/
	scripts/install-man.sh $(DESTDIR)$(MANDIR)

# The driver's sources where DKMS looks for them, with dkms.conf.
DKMS_VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
DKMS_SRC := $(DESTDIR)/usr/src/simaccel-$(DKMS_VERSION)

install-dkms:
	install -d $(DKMS_SRC)/driver $(DKMS_SRC)/include $(DKMS_SRC)/uapi
	install -m 644 dkms.conf Kbuild $(DKMS_SRC)/
	install -m 644 driver/simaccel_*.c driver/simaccel_*.h $(DKMS_SRC)/driver/
	install -m 644 include/accel_hw.h $(DKMS_SRC)/include/
	install -m 644 uapi/simaccel_accel.h $(DKMS_SRC)/uapi/

# The conformance suite: natively against the shared library, and static for the VM.
SUITE_SRC := $(wildcard tests/lib/*.c)
SUITE_HDR := $(wildcard tests/lib/*.h)
SUITE_CFLAGS := -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra \
		-Wno-missing-field-initializers -pthread -Ilib/include

# Compiled once, an object per file, and linked into each program below.
SUITE_OBJ := $(patsubst tests/lib/%.c,$(TESTS)/obj/lib/%.o,$(SUITE_SRC))

$(TESTS)/obj/lib/%.o: tests/lib/%.c $(SUITE_HDR) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(SUITE_CFLAGS) -c -o $@ $<

$(TESTS)/accel_lib_test: $(SUITE_OBJ) $(LIB_SO)
	$(CC) $(SUITE_CFLAGS) -o $@ $(SUITE_OBJ) -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN/../lib'

$(TESTS)/accel_lib_test.static: $(SUITE_OBJ) $(LIB_A)
	$(CC) $(SUITE_CFLAGS) -static -o $@ $(SUITE_OBJ) $(LIB_A)

# The suite and the library in one program under AddressSanitizer and
# UndefinedBehaviorSanitizer: a use after free or an overflow in the
# library fails the test that made it.
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	     -fno-omit-frame-pointer
$(TESTS)/accel_lib_test.asan: $(SUITE_SRC) $(SUITE_HDR) $(LIB_HDR) $(LIB_SRC) \
			      $(LIB_HDRS_INTERNAL) | deps
	@mkdir -p $(@D)
	$(CC) $(filter-out -O2 -Werror,$(LIB_CFLAGS)) -O1 $(SAN_FLAGS) \
	      $$(pkg-config --cflags libdrm) -o $@ $(LIB_SRC) $(SUITE_SRC) -ldl

# The library with gcov's counters, under its suite (scripts/coverage.sh):
# one object per source, so that each has its counters next to it.
LIB_COV_OBJ := $(patsubst lib/src/%.c,$(BUILD)/cov/lib/%.o,$(LIB_SRC))
$(BUILD)/cov/lib/%.o: lib/src/%.c $(LIB_HDR) $(LIB_HDRS_INTERNAL)
	@mkdir -p $(@D)
	$(CC) $(filter-out -O2 -Werror,$(LIB_CFLAGS)) -O0 --coverage \
	      $$(pkg-config --cflags libdrm) -c -o $@ $<
$(BUILD)/cov/accel_lib_test: $(SUITE_OBJ) $(LIB_COV_OBJ)
	$(CC) $(SUITE_CFLAGS) -o $@ $(SUITE_OBJ) $(LIB_COV_OBJ) -ldl -lgcov
# and static for the VM, where it writes its counters under $$GCOV_PREFIX
$(BUILD)/cov/accel_lib_test.static: $(SUITE_OBJ) $(LIB_COV_OBJ)
	$(CC) $(SUITE_CFLAGS) -static -o $@ $(SUITE_OBJ) $(LIB_COV_OBJ) -lgcov

# The load test (static: it runs in the VM).
$(TESTS)/load_test: tests/lib/load/load_test.c $(LIB_HDR) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(SUITE_CFLAGS) -static -o $@ $< $(LIB_A)

# Benchmarks over libaccel, against the shared library here and static for
# the VM: lib_bench (copy bandwidth) and pool_bench (the caching allocator
# against the device and glibc malloc, RMM's random_allocations).
LIB_BENCH_FLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Ilib/include
LIB_TOOLS := $(BUILD)/tools/lib_bench $(BUILD)/tools/pool_bench

$(LIB_TOOLS): $(BUILD)/tools/%: tools/bench/%.c $(LIB_HDR) $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(LIB_BENCH_FLAGS) -o $@ $< -L$(LIB_DIR) -laccel -Wl,-rpath,'$$ORIGIN/../lib'

$(LIB_TOOLS:%=%.static): $(BUILD)/tools/%.static: tools/bench/%.c $(LIB_HDR) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LIB_BENCH_FLAGS) -static -pthread -o $@ $< $(LIB_A)

# lib_bench_cuda also times plain cudaMemcpy (the CUDA runtime, linked
# statically) as its reference; it is built where the CUDA toolkit is, and
# run where a GPU is.
CUDART_STATIC := $(wildcard $(CUDA_HOME)/lib64/libcudart_static.a)

$(BUILD)/tools/lib_bench_cuda: tools/bench/lib_bench.c $(LIB_HDR) $(LIB_SO) $(CUDART_STATIC)
	@[ -n "$(CUDART_STATIC)" ] || { echo "lib_bench_cuda needs $(CUDA_HOME)/lib64/libcudart_static.a"; exit 1; }
	@mkdir -p $(@D)
	$(CC) $(LIB_BENCH_FLAGS) -DWITH_CUDART -isystem $(CUDA_HOME)/include -o $@ $< \
	      -L$(LIB_DIR) -laccel -Wl,-rpath,'$$ORIGIN/../lib' $(CUDART_STATIC) -ldl -lrt -pthread

# pool_bench_cuda also times CUDA's own allocators, cuMemAlloc and
# cuMemAllocAsync (linked against the toolkit's stub of libcuda.so.1).
CUDA_STUB := $(wildcard $(CUDA_HOME)/lib64/stubs/libcuda.so)

$(BUILD)/tools/pool_bench_cuda: tools/bench/pool_bench.c $(LIB_HDR) $(LIB_SO) $(CUDA_STUB)
	@[ -n "$(CUDA_STUB)" ] || { echo "pool_bench_cuda needs $(CUDA_HOME)/lib64/stubs/libcuda.so"; exit 1; }
	@mkdir -p $(@D)
	$(CC) $(LIB_BENCH_FLAGS) -DWITH_CUDA -isystem $(CUDA_HOME)/include -o $@ $< \
	      -L$(LIB_DIR) -laccel -Wl,-rpath,'$$ORIGIN/../lib' $(CUDA_STUB)

# The examples: one program per seed (OCCA memory and wrapMemory, Taichi's
# memory example, Numba's memory management), against the shared library
# here and static for the VM.
LIB_EXAMPLES := $(addprefix $(BUILD)/examples/,occa_memory occa_wrap_memory \
		taichi_memory numba_memory)

.PHONY: examples
examples: $(LIB_EXAMPLES) $(LIB_EXAMPLES:%=%.static)

$(LIB_EXAMPLES): $(BUILD)/examples/%: examples/%.c examples/example.h $(LIB_HDR) $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(LIB_BENCH_FLAGS) -o $@ $< -L$(LIB_DIR) -laccel -Wl,-rpath,'$$ORIGIN/../lib'

$(LIB_EXAMPLES:%=%.static): $(BUILD)/examples/%.static: examples/%.c examples/example.h $(LIB_HDR) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LIB_BENCH_FLAGS) -static -pthread -o $@ $< $(LIB_A)

# libpaddle-accel.so: the PaddlePaddle custom-device plugin over
# libaccel.so.1 (found next to it, in .. or ../lib, or installed),
# exporting InitPlugin alone. 'make install' puts it in
# $(LIBDIR)/paddle-plugins, the directory to name in CUSTOM_DEVICE_ROOT.
PLUGIN := $(BUILD)/plugin/libpaddle-accel.so
PLUGIN_SRC := $(wildcard plugin/*.c)
PLUGIN_OBJ := $(patsubst plugin/%.c,$(BUILD)/plugin/obj/%.o,$(PLUGIN_SRC))

.PHONY: plugin
plugin: $(PLUGIN)

$(BUILD)/plugin/obj/%.o: plugin/%.c $(wildcard plugin/*.h) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -c -o $@ $<

$(PLUGIN): $(PLUGIN_OBJ) $(LIB_SO) plugin/plugin.map
	$(CC) -shared -pthread -Wl,--version-script=plugin/plugin.map \
	      -Wl,--no-undefined -o $@ $(PLUGIN_OBJ) -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..:$$ORIGIN/../lib'

# libaccel-torch.so: the caching allocator as PyTorch's CUDA allocator,
# loaded by torch.cuda.memory.CUDAPluggableAllocator (docs/libaccel.md);
# the suite's torch_allocator tests dlopen() it from ../interop.
TORCH_ALLOC := $(BUILD)/interop/libaccel-torch.so

.PHONY: interop
interop: $(TORCH_ALLOC)

$(TORCH_ALLOC): interop/torch_allocator.c $(LIB_HDR) $(LIB_SO)
	@mkdir -p $(@D)
	$(CC) $(LIB_CFLAGS) -shared -Wl,--no-undefined -o $@ $< -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN/../lib:$(LIBDIR)'

# The plugin's tests, dynamic since they dlopen() it: the loader test (what
# Paddle's loader does, then the plugin's contract through the table), and
# the libaccel conformance suite with every function the table has called
# through the table.
PLUGIN_TESTS := $(TESTS)/plugin_test $(TESTS)/plugin_suite

$(TESTS)/plugin_test: tests/plugin/plugin_test.c tests/plugin/load.c tests/plugin/load.h \
		      plugin/paddle_abi.h $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(SUITE_CFLAGS) -Iplugin -o $@ $(filter %.c,$^) -ldl

PLUGIN_SUITE_OBJ := $(patsubst tests/lib/%.c,$(TESTS)/obj/plugin_suite/%.o,$(SUITE_SRC))

$(TESTS)/obj/plugin_suite/%.o: tests/lib/%.c $(SUITE_HDR) tests/plugin/load.h \
			       tests/plugin/through_table.h plugin/paddle_abi.h $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(SUITE_CFLAGS) -Iplugin -Itests/plugin -include through_table.h -c -o $@ $<

$(TESTS)/plugin_suite: $(PLUGIN_SUITE_OBJ) tests/plugin/load.c tests/plugin/load.h \
		       tests/plugin/through_table.h plugin/paddle_abi.h $(LIB_SO)
	$(CC) $(SUITE_CFLAGS) -Iplugin -Itests/plugin -include through_table.h -o $@ \
	      $(PLUGIN_SUITE_OBJ) tests/plugin/load.c -L$(LIB_DIR) -laccel -ldl \
	      -Wl,-rpath,'$$ORIGIN/../lib'

# What scripts/gpu-check.sh runs on a machine with a GPU.
.PHONY: gpu
gpu: $(LIB_SO) $(TESTS)/accel_lib_test $(PLUGIN_TESTS) $(PLUGIN) $(LIB_EXAMPLES) $(TORCH_ALLOC) python \
     $(BUILD)/tools/lib_bench_cuda $(BUILD)/tools/pool_bench_cuda
