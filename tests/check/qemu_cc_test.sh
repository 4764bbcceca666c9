#!/bin/bash
# QEMU's C compiler in the builds of scripts/build-qemu.sh
# (scripts/qemu-cc.sh) against its contract, on a made-up source tree laid
# out as QEMU's build sees it (sources under ../src), with gcc (the VM's
# build) and clang (the sanitizer builds): a file that begins with
# qemu/osdep.h reads it from a precompiled copy, one per set of flags, and
# compiles to the code it has without; its dependency file names the
# headers the copy holds, and a copy older than one of them is made again;
# a file that defines something first (even hidden after a comment or a
# byte-order mark), a copy the compiler refuses, and meson's probes compile
# as they would without the wrapper; a compile error fails, and says so
# once. With --sanitize-where-tested the device's code keeps the sanitizers
# and its optimisation, and other code is built at -O0 without them.
# Prints "ok: ..." or "not ok: ..." per check, and "N passed, N failed" last.
#
#   tests/check/qemu_cc_test.sh   (from the top of the tree)
set -uo pipefail
wrapper=$(pwd)/scripts/qemu-cc.sh
tmp=$(mktemp -d /tmp/accel-qemu-cc-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../checks.sh"

mkdir -p "$tmp/src/include/qemu" "$tmp/src/block" "$tmp/src/hw/misc/accel" "$tmp/build"
cat >"$tmp/src/include/qemu/osdep.h" <<'EOF'
#ifndef QEMU_OSDEP_H
#define QEMU_OSDEP_H
#include <stdlib.h>
#include <string.h>
#include "qemu/value.h"
#ifdef DEFINED_BEFORE_OSDEP
int osdep_saw_the_definition = 1;
#endif
#endif
EOF
echo '#define OSDEP_VALUE 1' >"$tmp/src/include/qemu/value.h"
for f in block/plain.c hw/misc/accel/device.c; do
	cat >"$tmp/src/$f" <<'EOF'
/* a comment first, as QEMU's files have */
#include "qemu/osdep.h"

int twice(int *x)
{
	char *p = malloc(4);

	memset(p, *x, 4);
	*x = p[3] * 2;
	free(p);
	return *x;
}
EOF
done
printf '#include "qemu/osdep.h"\nint value(void) { return OSDEP_VALUE; }\n' >"$tmp/src/block/value.c"
defines_first() {	# name, then what comes before osdep.h
	printf '%b\n#include "qemu/osdep.h"\n' "$2" >"$tmp/src/block/$1.c"
}
defines_first plainly '#define DEFINED_BEFORE_OSDEP 1'
defines_first after_a_comment '/* a comment */ #define DEFINED_BEFORE_OSDEP 1'
defines_first after_a_bom '\xef\xbb\xbf#define DEFINED_BEFORE_OSDEP 1'
defines_first as_a_digraph '%:define DEFINED_BEFORE_OSDEP 1'
defines_first after_osdep_commented_out '/*\n#include "qemu/osdep.h"\n*/\n#define DEFINED_BEFORE_OSDEP 1'
{ cat "$tmp/src/block/plain.c"; echo 'int broken(void) { return undeclared_name; }'; } >"$tmp/src/block/broken.c"
cd "$tmp/build" || exit 1

# set per compiler: the wrapper's arguments before meson's, meson's flags,
# and the compiler and flags that the wrapper makes of them for block/
cc=()
flags=()
direct_cc=()
compile() {	# source under ../src, object; as meson calls the compiler
	"$wrapper" "${cc[@]}" "${flags[@]}" -MD -MQ "$2" -MF "$2.d" -o "$2" -c "../src/$1"
}
direct() {	# source under ../src, object: without the wrapper
	"${direct_cc[@]}" -c "../src/$1" -o "$2"
}
text() { objcopy -O binary --only-section=.text "$1" "$1.text" && cat "$1.text"; }
has_symbol() { nm "$2" | grep -q "$1"; }
same_code() { cmp -s <(text "$1") <(text "$2"); }
copies() { find accel-pch -name '*.h.?ch' 2>/dev/null | wc -l; }
# -H lists the headers a compile reads: none of osdep.h's from a copy
reads_stdlib() { grep -q 'stdlib\.h' "$1"; }
one_fresh_copy() { rm -rf accel-pch && compile block/plain.c plain.o; }

# what holds for both compilers
precompiled_checks() {
	local name job ok=1

	check_prefix="$1: "
	direct block/plain.c direct.o
	one_fresh_copy
	check "a file beginning with osdep.h gets a precompiled copy of it" [ "$(copies)" -eq 1 ]
	check "to the code it has without" same_code plain.o direct.o
	flags+=(-H)
	compile block/plain.c headers.o 2>/dev/null   # makes the copy
	compile block/plain.c headers.o 2>read-with-copy
	"${direct_cc[@]}" -H -c ../src/block/plain.c -o headers-direct.o 2>read-without
	check "which it reads instead of osdep.h's headers" \
		eval 'reads_stdlib read-without && ! reads_stdlib read-with-copy'
	unset 'flags[-1]'

	for name in plainly after_a_comment after_a_bom as_a_digraph after_osdep_commented_out; do
		compile "block/$name.c" "$name.o"
		check "a file that defines something before osdep.h ($name) compiles it itself" \
			has_symbol osdep_saw_the_definition "$name.o"
	done

	one_fresh_copy
	echo "not a precompiled header" >accel-pch/*.h.?ch
	check "a copy the compiler refuses leaves the compile as it was" \
		eval 'compile block/plain.c refused.o 2>refused.err && same_code refused.o direct.o'
	check "and says nothing of it" [ ! -s refused.err ]
	compile block/plain.c remade.o
	check "the next compile makes the copy again" \
		eval '[ "$(copies)" -eq 1 ] && ! grep -q "not a precompiled header" accel-pch/*.h.?ch'

	# a header that osdep.h includes changes after the copy was made
	compile block/value.c value.o
	check "an object's dependencies name the headers the copy holds" \
		grep -q 'qemu/value\.h' value.o.d
	touch -d '-1 min' accel-pch/*
	echo '#define OSDEP_VALUE 2' >../src/include/qemu/value.h
	compile block/value.c value.o
	direct block/value.c value-direct.o
	check "a compile after one of them changed reads it as it is now" \
		same_code value.o value-direct.o
	echo '#define OSDEP_VALUE 1' >../src/include/qemu/value.h

	check "a compile error fails" eval '! compile block/broken.c broken.o 2>broken.err'
	check "and is shown once" [ "$(grep -c "broken.c:.*undeclared_name" broken.err)" -eq 1 ]

	rm -rf accel-pch
	for name in 1 2 3 4 5 6; do compile block/plain.c "at-once-$name.o" & done
	for job in $(jobs -p); do wait "$job" || ok=0; done
	check "compiles at once all succeed" [ $ok -eq 1 ]
	check "with one precompiled copy between them" [ "$(copies)" -eq 1 ]
	check "and nothing half written left" [ -z "$(find accel-pch -name '*.tmp')" ]
	check "to the same code" same_code at-once-6.o direct.o

	cp ../src/block/plain.c "$tmp/probe.c"
	"$wrapper" "${cc[@]}" "$tmp/probe.c" -iquote ../src/include -O1 -fsanitize=address -c -o probe.o
	check "meson's probes (absolute paths) keep every flag" has_symbol __asan_ probe.o
}

# the VM's build: gcc, every file as it asks
cc=(gcc)
flags=(-iquote ../src/include -O2 -g -Wall -Winvalid-pch)
direct_cc=(gcc "${flags[@]}")
precompiled_checks gcc

# the sanitizer builds: clang, sanitizers where the device's tests look
cc=(--sanitize-where-tested clang-14)
flags=(-iquote ../src/include -O1 -g -fsanitize=address -Wall)
direct_cc=(clang-14 -iquote ../src/include -O0 -g -Wall)
precompiled_checks "clang, sanitizing where tested"
check "other code is built without the sanitizer, at -O0" \
	eval '! has_symbol __asan_ plain.o && same_code plain.o direct.o'
compile hw/misc/accel/device.c device.o
check "the device's code keeps its sanitizer" has_symbol __asan_ device.o
clang-14 "${flags[@]}" -o device-direct.o -c ../src/hw/misc/accel/device.c
check "and its optimisation" same_code device.o device-direct.o

checks_done
