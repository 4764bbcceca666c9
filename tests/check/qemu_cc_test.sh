#!/bin/bash
# QEMU's C compiler in its sanitizer builds (scripts/qemu-sanitized-cc.sh)
# against its contract, on a made-up source tree laid out as QEMU's build
# sees it (sources under ../src): the device's code keeps the sanitizers and
# its optimisation, other code is built at -O0 without them; a file that
# begins with qemu/osdep.h compiles against a precompiled copy of it, one
# per set of flags, to the code it would have had without; a file that
# defines something first, a copy clang refuses, and meson's probes compile
# as they would without the wrapper; a compile error fails. Prints "ok: ..."
# or "not ok: ..." per check, and "N passed, N failed" last.
#
#   tests/check/qemu_cc_test.sh   (from the top of the tree)
set -uo pipefail
cc=$(pwd)/scripts/qemu-sanitized-cc.sh
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

flags=(-iquote ../src/include -O1 -g -fsanitize=address -Wall)
compile() {	# source under ../src, object; as meson calls the compiler
	"$cc" "${flags[@]}" -MD -MQ "$2" -MF "$2.d" -o "$2" -c "../src/$1"
}
text() { objcopy -O binary --only-section=.text "$1" "$1.text" && cat "$1.text"; }
has_symbol() { nm "$2" | grep -q "$1"; }
same_code() { cmp -s <(text "$1") <(text "$2"); }
pchs() { find accel-pch -name '*.pch' 2>/dev/null | wc -l; }

compile hw/misc/accel/device.c device.o
check "the device's code keeps its sanitizer" has_symbol __asan_ device.o
clang-14 "${flags[@]}" -o device-direct.o -c ../src/hw/misc/accel/device.c
check "and its optimisation, with osdep.h precompiled" same_code device.o device-direct.o

rm -rf accel-pch
compile block/plain.c plain.o
check "other code is built without the sanitizer" \
	eval '! has_symbol __asan_ plain.o'
check "against a precompiled osdep.h" [ "$(pchs)" -eq 1 ]
clang-14 -iquote ../src/include -O0 -g -Wall -o plain-direct.o -c ../src/block/plain.c
check "at -O0, to the code it has without the wrapper" same_code plain.o plain-direct.o

compile block/defines_first.c defines_first.o
check "a file that defines something before osdep.h compiles it itself" \
	has_symbol osdep_saw_the_definition defines_first.o

for pch in accel-pch/*.pch; do echo "not a precompiled header" >"$pch"; done
check "a precompiled copy that clang refuses leaves the compile as it was" \
	eval 'compile block/plain.c refused.o 2>refused.err && same_code refused.o plain-direct.o'
check "and says nothing of it" [ ! -s refused.err ]

check "a compile error fails" eval '! compile block/broken.c broken.o 2>broken.err'
check "and is shown once" [ "$(grep -c "broken.c:.*undeclared_name" broken.err)" -eq 1 ]

rm -rf accel-pch
for i in 1 2 3 4 5 6; do compile block/plain.c "at-once-$i.o" & done
ok=1
for job in $(jobs -p); do wait "$job" || ok=0; done
check "compiles at once all succeed" [ $ok -eq 1 ]
check "with one precompiled osdep.h between them" [ "$(pchs)" -eq 1 ]
check "and nothing half written left" [ -z "$(find accel-pch -name '*.tmp')" ]
check "to the same code" same_code at-once-6.o plain-direct.o

cp ../src/block/plain.c "$tmp/probe.c"
"$cc" "$tmp/probe.c" -iquote ../src/include -O1 -fsanitize=address -c -o probe.o
check "meson's probes (absolute paths) keep every flag" has_symbol __asan_ probe.o

checks_done
