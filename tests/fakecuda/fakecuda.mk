# fakecuda: a model of the CUDA driver (tests/fakecuda/fakecuda.c), built as
# build/tests/fakecuda/libcuda.so.1 where the CUDA headers are, so that
# make check runs the cuda backend without a GPU (LD_LIBRARY_PATH). cuda.h
# gives its functions the versioned names the backend looks up
# (cuMemAlloc -> cuMemAlloc_v2).
FAKECUDA := $(TESTS)/fakecuda/libcuda.so.1

ifneq ($(wildcard $(CUDA_HOME)/include/cuda.h),)
tests: $(FAKECUDA)
# make check's smoke run of the allocator benchmark against the model,
# where the toolkit's stub is to link it (lib/lib.mk)
ifneq ($(CUDA_STUB),)
tests: $(BUILD)/tools/pool_bench_cuda
endif
endif

$(FAKECUDA): tests/fakecuda/fakecuda.c
	@mkdir -p $(@D)
	$(CC) -O2 -g -std=c11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
	      -fPIC -shared -pthread -isystem $(CUDA_HOME)/include \
	      -Wl,-soname,libcuda.so.1 -Wl,--no-undefined -o $@ $<
