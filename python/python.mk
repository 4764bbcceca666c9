# The Python module accel (docs/python.md): a CPython extension in C over
# libaccel, built once against the stable ABI (abi3) of Debian's Python
# 3.11 (/usr/bin/python3), with NumPy used through its Python API only, so
# that the one binary imports in any CPython from 3.11 on, with NumPy 1.x
# or 2.x (scripts/python-compat.sh runs the suite so). Built into
# build/python; its suite is tests/python (pytest).
PYTHON := /usr/bin/python3
PY_MOD = $(BUILD)/python/accel.abi3.so
# accel_numba: Numba's EMM plugin over libaccel, in Python (ctypes)
PY_PURE = $(BUILD)/python/accel_numba.py
PY_SRC := $(wildcard python/*.c)
PY_CFLAGS = -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	    -Wno-missing-field-initializers -Wno-unused-parameter \
	    -Wno-cast-function-type -fPIC \
	    -fvisibility=hidden $$($(PYTHON)-config --includes) \
	    -Ilib/include
# where Debian's Python looks for modules under PREFIX
PY_SITE = $(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages

.PHONY: python install-python

python: $(PY_MOD) $(PY_PURE)

$(PY_PURE): $(BUILD)/python/%: python/%
	@mkdir -p $(@D)
	cp $< $@

# A module built for one Python version (accel.cpython-311-*.so, as
# earlier builds made) would be imported before the abi3 one: it goes.
$(PY_MOD): $(PY_SRC) python/accel_py.h $(LIB_HDR) $(LIB_SO) | deps
	@mkdir -p $(@D)
	@rm -f $(@D)/accel.cpython-*.so $(@D)/.built
	$(CC) $(PY_CFLAGS) -shared -o $@ $(PY_SRC) -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN/../lib:$(LIBDIR)'

install-python: python
	install -d $(DESTDIR)$(PY_SITE)
	install -m 644 $(PY_MOD) $(PY_PURE) $(DESTDIR)$(PY_SITE)/
