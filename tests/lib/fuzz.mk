# lib_fuzz: the differential conformance fuzzer of libaccel (issue 17,
# item 9), natively against the shared library and static for the VM.
LIB_FUZZ_SRC := $(wildcard tests/lib/fuzz/*.c)
LIB_FUZZ_HDR := $(wildcard tests/lib/fuzz/*.h) tests/lib/pattern.h
LIB_FUZZ_CFLAGS := -O2 -g -std=gnu11 -Wall -Wextra -Werror \
		   -Wno-missing-field-initializers -pthread -Ilib/include

# compiled once, an object per file, for both programs
LIB_FUZZ_OBJ := $(patsubst tests/lib/fuzz/%.c,$(TESTS)/obj/lib_fuzz/%.o,$(LIB_FUZZ_SRC))

$(TESTS)/obj/lib_fuzz/%.o: tests/lib/fuzz/%.c $(LIB_FUZZ_HDR) $(LIB_HDR) | deps
	@mkdir -p $(@D)
	$(CC) $(LIB_FUZZ_CFLAGS) -c -o $@ $<

$(TESTS)/lib_fuzz: $(LIB_FUZZ_OBJ) $(LIB_SO)
	$(CC) $(LIB_FUZZ_CFLAGS) -o $@ $(LIB_FUZZ_OBJ) -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN/../lib'

$(TESTS)/lib_fuzz.static: $(LIB_FUZZ_OBJ) $(LIB_A)
	$(CC) $(LIB_FUZZ_CFLAGS) -static -o $@ $(LIB_FUZZ_OBJ) $(LIB_A)

# with the library's gcov counters, for scripts/coverage.sh's VM run
$(BUILD)/cov/lib_fuzz.static: $(LIB_FUZZ_SRC) $(LIB_FUZZ_HDR) $(LIB_COV_OBJ)
	$(CC) $(LIB_FUZZ_CFLAGS) -DLIB_FUZZ_COVERAGE -static -o $@ $(LIB_FUZZ_SRC) \
	      $(LIB_COV_OBJ) -lgcov

# scripts/gpu-check.sh runs it on cuda
gpu: $(TESTS)/lib_fuzz
