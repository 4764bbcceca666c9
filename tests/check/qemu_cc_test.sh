#!/bin/bash
# QEMU's C compiler in the builds of scripts/build-qemu.sh
# (scripts/qemu-cc.sh) against its contract, on a made-up source tree laid
# out as QEMU's build sees it (sources under ../src), with gcc (the VM's
# build) and clang (the sanitizer builds): a file that begins with
# qemu/osdep.h reads it from a precompiled copy, one per set of flags, and
# compiles to the code it has without; a file that defines something first,
# a copy the compiler refuses, and meson's probes compile as they would
# without the wrapper; a compile error fails, and says so once. With
# --sanitize-where-tested the device's code keeps the sanitizers and its
# optimisation, and other code is built at -O0 without them. Prints
# "ok: ..." or "not ok: ..." per check, and "N passed, N failed" last.
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
#ifdef DEFINED_BEFORE_OSDEP
int osdep_saw_the_definition = 1;
#endif
#endif
EOF
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
{ echo '#define DEFINED_BEFORE_OSDEP 1'; cat "$tmp/src/block/plain.c"; } >"$tmp/src/block/defines_first.c"
{ cat "$tmp/src/block/plain.c"; echo 'int broken(void) { return undeclared_name; }'; } >"$tmp/src/block/broken.c"
cd "$tmp/build" || exit 1

cc=()
flags=()
compile() {	# source under ../src, object; as meson calls the compiler
	"$wrapper" "${cc[@]}" "${flags[@]}" -MD -MQ "$2" -MF "$2.d" -o "$2" -c "../src/$1"
}
direct() {	# object, compiler, its arguments: plain.c without the wrapper
	local out=$1
	shift
	"$@" -iquote ../src/include -c ../src/block/plain.c -o "$out"
}
text() { objcopy -O binary --only-section=.text "$1" "$1.text" && cat "$1.text"; }
has_symbol() { nm "$2" | grep -q "$1"; }
same_code() { cmp -s <(text "$1") <(text "$2"); }
copies() { find accel-pch -name '*.h.?ch' 2>/dev/null | wc -l; }
# -H lists the headers a compile reads: none of osdep.h's from a copy
reads_stdlib() { grep -q 'stdlib\.h' "$1"; }

# what holds for both compilers; flags and the direct compile set
precompiled_checks() {
	check_prefix="$1: "
	rm -rf accel-pch
	compile block/plain.c plain.o
	check "a file beginning with osdep.h gets a precompiled copy of it" [ "$(copies)" -eq 1 ]
	check "to the code it has without" same_code plain.o direct.o
	compile block/plain.c again.o 2>/dev/null   # the copy exists now
	flags+=(-H)
	compile block/plain.c headers.o 2>/dev/null
	compile block/plain.c headers.o 2>read-with-copy
	direct headers-direct.o "${cc[-1]}" "${flags[@]}" 2>read-without
	check "which it reads instead of osdep.h's headers" \
		eval 'reads_stdlib read-without && ! reads_stdlib read-with-copy'
	unset 'flags[-1]'

	compile block/defines_first.c defines_first.o
	check "a file that defines something before osdep.h compiles it itself" \
		has_symbol osdep_saw_the_definition defines_first.o

	for copy in accel-pch/*.h.?ch; do echo "not a precompiled header" >"$copy"; done
	check "a copy the compiler refuses leaves the compile as it was" \
		eval 'compile block/plain.c refused.o 2>refused.err && same_code refused.o direct.o'

	check "a compile error fails" eval '! compile block/broken.c broken.o 2>broken.err'
	check "and is shown once" [ "$(grep -c "broken.c:.*undeclared_name" broken.err)" -eq 1 ]

	rm -rf accel-pch
	for i in 1 2 3 4 5 6; do compile block/plain.c "at-once-$i.o" & done
	local ok=1 job
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
direct direct.o gcc "${flags[@]}"
precompiled_checks gcc

# the sanitizer builds: clang, sanitizers where the device's tests look
cc=(--sanitize-where-tested clang-14)
flags=(-iquote ../src/include -O1 -g -fsanitize=address -Wall)
direct direct.o clang-14 -iquote ../src/include -O0 -g -Wall
precompiled_checks "clang, sanitizing where tested"
check "other code is built without the sanitizer, at -O0" \
	eval '! has_symbol __asan_ plain.o'
check "and a copy clang refuses (an error to it) is not shown" [ ! -s refused.err ]
compile hw/misc/accel/device.c device.o
check "the device's code keeps its sanitizer" has_symbol __asan_ device.o
clang-14 "${flags[@]}" -o device-direct.o -c ../src/hw/misc/accel/device.c
check "and its optimisation" same_code device.o device-direct.o

checks_done
