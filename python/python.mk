# The Python module accel (docs/python.md): a CPython extension in C over
# libaccel, for Debian's Python and NumPy (/usr/bin/python3: a python3
# earlier on PATH may not see them). Built into build/python; its suite is
# tests/python (pytest).
PYTHON := /usr/bin/python3
PY_EXT_SUFFIX = $(shell $(PYTHON)-config --extension-suffix)
PY_MOD = $(BUILD)/python/accel$(PY_EXT_SUFFIX)
PY_SRC := $(wildcard python/*.c)
PY_CFLAGS = -O2 -g -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror \
	    -Wno-missing-field-initializers -Wno-unused-parameter \
	    -Wno-cast-function-type -fPIC \
	    -fvisibility=hidden $$($(PYTHON)-config --includes) \
	    -I$$($(PYTHON) -c 'import numpy; print(numpy.get_include())') \
	    -Ilib/include
# where Debian's Python looks for modules under PREFIX
PY_SITE = $(PREFIX)/lib/python$(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])')/dist-packages

.PHONY: python install-python

python: $(BUILD)/python/.built

# a stamp, so that the rule's prerequisites need not know the suffix
$(BUILD)/python/.built: $(PY_SRC) python/accel_py.h $(LIB_HDR) $(LIB_SO) | deps
	@mkdir -p $(@D)
	$(CC) $(PY_CFLAGS) -shared -o $(PY_MOD) $(PY_SRC) -L$(LIB_DIR) -laccel \
	      -Wl,-rpath,'$$ORIGIN/../lib:$(LIBDIR)'
	@touch $@

install-python: python
	install -d $(DESTDIR)$(PY_SITE)
	install -m 644 $(PY_MOD) $(DESTDIR)$(PY_SITE)/
