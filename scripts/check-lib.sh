#!/bin/bash
# libaccel as a user gets it: exactly the public functions exported, each
# under the version node that brought it (LIBACCEL_1.0, 1.1), soname libaccel.so.1, a header that C and C++ accept, and
# 'make install' giving a tree that pkg-config finds and programs link
# against, shared and static, with the Paddle plugin that finds it, and
# accel-smi, the man pages and the udev rule.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
work=$(mktemp -d /tmp/accel-lib.XXXXXX)
trap 'rm -rf "$work"' EXIT
fail=0
say() { echo "check-lib: $*"; }
bad() { echo "check-lib: FAIL: $*"; fail=1; }

so=build/lib/libaccel.so.1.0.0
headers="lib/include/accel/accel.h lib/include/accel/memory.h lib/include/accel/dlpack.h"

# Exports: the functions the header declares, each versioned, nothing more.
declared=$(sed -nE 's/^ACCEL_EXPORT [^(]*[ *](accel_[a-z0-9_]+)\(.*/\1/p' $headers | sort)
exported=$(nm -D --defined-only "$so" | awk '$3 !~ /^LIBACCEL_1\.[0-9]+$/ { print $3 }' | sort)
[ "$(echo "$exported" | sed -E 's/@@LIBACCEL_1\.[0-9]+$//')" = "$declared" ] ||
	bad "exports differ from the header: $(diff <(echo "$declared") <(echo "$exported" | sed 's/@@.*//') | grep '^[<>]' | tr '\n' ' ')"
echo "$exported" | grep -vE '@@LIBACCEL_1\.[0-9]+$' >/dev/null && bad "unversioned exports"
for node in $(echo "$exported" | sed -nE 's/.*@@(LIBACCEL_1\.[0-9]+)$/\1/p' | sort -u); do
	say "$(echo "$exported" | grep -c "@@$node\$") functions exported under $node"
done

soname=$(readelf -d "$so" | sed -nE 's/.*\(SONAME\).*\[(.*)\]/\1/p')
[ "$soname" = libaccel.so.1 ] || bad "soname is '$soname'"

# The Paddle plugin exports its entry point alone.
plugin_exports=$(nm -D --defined-only build/plugin/libpaddle-accel.so | awk '{ print $3 }')
[ "$plugin_exports" = InitPlugin ] ||
	bad "libpaddle-accel.so exports $(echo "$plugin_exports" | tr '\n' ' ')"

# The headers stand alone in C and C++ (Paddle's plugins are C++).
printf '#include <accel/accel.h>\n#include <accel/memory.h>\n#include <accel/dlpack.h>\n' >"$work/h.c"
gcc -std=c11 -Wall -Wextra -Werror -pedantic -fsyntax-only -Ilib/include "$work/h.c" ||
	bad "the header does not compile alone as C11"
g++ -x c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only -Ilib/include "$work/h.c" ||
	bad "the header does not compile as C++"

# ... and beside PaddlePaddle's declarations, in either order.
for lang in "gcc -std=c11" "gcc -std=c99" "g++ -x c++ -std=c++11" "g++ -x c++ -std=c++17"; do
	for order in "" -DPADDLE_FIRST; do
		$lang -pedantic -Wall -Wextra -Werror -fsyntax-only $order -Ilib/include \
			tests/lib/headers/beside_paddle.c ||
			bad "the headers clash with Paddle's (${lang%% *} $order)"
	done
done

# Install, then build a program the way a user would.
make -s install PREFIX=/opt/accel DESTDIR="$work/root" >/dev/null
cat >"$work/use.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <accel/accel.h>

int main(void)
{
	struct accel_device_id dev = { 0 };
	char in[64] = "through an installed libaccel", out[64] = "";
	void *d;

	if (accel_device_memory_allocate(&dev, &d, sizeof(in)) ||
	    accel_memory_copy_h2d(&dev, d, in, sizeof(in)) ||
	    accel_memory_copy_d2h(&dev, out, d, sizeof(out)) ||
	    accel_device_memory_deallocate(&dev, d, sizeof(in))) {
		fprintf(stderr, "%s\n", accel_get_last_error());
		return 1;
	}
	return strcmp(in, out) != 0;
}
C
export PKG_CONFIG_PATH=$work/root/opt/accel/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$work/root
[ "$(pkg-config --modversion libaccel)" = 1.0.0 ] || bad "pkg-config does not find libaccel"
# shellcheck disable=SC2046
gcc -o "$work/use" "$work/use.c" $(pkg-config --cflags --libs libaccel) || bad "shared link"
# shellcheck disable=SC2046
gcc -static -o "$work/use-static" "$work/use.c" $(pkg-config --cflags --libs --static libaccel) ||
	bad "static link"
# The static library defines the public functions alone: a program may
# have functions of its own named like the library's internal ones.
static_defs=$(nm -g --defined-only build/lib/libaccel.a | awk 'NF == 3 { print $3 }' | sort)
[ "$static_defs" = "$declared" ] ||
	bad "libaccel.a defines more than the header: $(comm -13 <(echo "$declared") <(echo "$static_defs") | head -5 | tr '\n' ' ')"
cat >"$work/clash.c" <<'C'
/* Functions named like libaccel's internal ones; the library must not call them. */
#include <stdlib.h>
#include <accel/memory.h>

void storage_get(void) { abort(); }
void storage_put(void) { abort(); }
void transfer(void) { abort(); }
void pool_grow(void) { abort(); }
void memory_lookup(void) { abort(); }

int main(void)
{
	struct accel_device_id dev = { 0 };
	char in[16] = "no clash", out[16] = "";
	accel_memory_t m;

	if (accel_memory_create(&dev, sizeof(in), accel_dtype(ACCEL_UINT8), in, 0, &m) ||
	    accel_memory_copy_to(m, out, ACCEL_ALL, 0) || accel_memory_release(m))
		return 1;
	return out[0] != 'n';
}
C
# shellcheck disable=SC2046
gcc -static -o "$work/use-clash" "$work/clash.c" $(pkg-config --cflags --libs --static libaccel) ||
	bad "a program with the library's internal names does not link statically"
for prog in use use-static use-clash; do
	ACCEL_VISIBLE_DEVICES=cpu LD_LIBRARY_PATH=$work/root/opt/accel/lib "$work/$prog" ||
		bad "$prog did not run"
done
LD_LIBRARY_PATH=$work/root/opt/accel/lib ldd "$work/use" | grep "libaccel.so.1 => $work/root/opt/accel/lib/" >/dev/null ||
	bad "the program does not load the installed libaccel.so.1"
# The rest of the stack: the tool, the man pages, the udev rule.
for f in opt/accel/bin/accel-smi opt/accel/share/man/man1/accel-smi.1 \
	 opt/accel/share/man/man4/simaccel.4 opt/accel/share/man/man7/libaccel.7 \
	 opt/accel/share/man/man3/accel_pool_allocate.3 etc/udev/rules.d/70-accel.rules; do
	[ -f "$work/root/$f" ] || bad "make install did not install /$f"
done
# The installed plugin finds the installed libaccel by itself.
ldd "$work/root/opt/accel/lib/paddle-plugins/libpaddle-accel.so" |
	grep "libaccel.so.1 => $work/root/opt/accel/lib/" >/dev/null ||
	bad "the installed plugin does not load the installed libaccel.so.1"

[ $fail -eq 0 ] && say "ok"
exit $fail
