#!/bin/bash
# QEMU's C compiler in the builds of build-qemu.sh, given the real one:
#   qemu-cc.sh [--sanitize-where-tested] gcc|clang-14 ARGUMENTS...
#
# QEMU's sources begin with qemu/osdep.h, whose headers (GLib's above all)
# are most of what an -O0 compile reads and a sixth of an -O2 one: each
# compile of such a file includes a precompiled copy, one per set of flags
# (about a dozen in a build), made once in the build directory, which a new
# configuration starts afresh. The code is the same. A file that defines
# anything before osdep.h, and a copy the compiler refuses, compile as they
# are.
#
# --sanitize-where-tested (the sanitizer builds, fuzz and tsan): the
# sanitizers stay on only where the device's tests look for bugs: the
# device, the PCI, PCIe host and memory code it calls, and the code whose
# locks, atomics and coroutines order its threads (util/, system/, accel/,
# hw/core/). Elsewhere (QAPI and trace code, block, migration, crypto,
# other devices: four fifths of the files) they are off and the file is
# built at -O0, half the compile time of the whole build.
# What that keeps: ASan and UBSan check every access of the instrumented
# code, and ASan's allocator puts red zones round every heap block;
# libFuzzer's coverage is that of the device (and PCI), which is what it
# should steer by. ThreadSanitizer sees each access of the instrumented
# code, and the synchronisation of the rest through pthread's functions,
# which it intercepts; the code that synchronises through its own atomics
# (QemuEvent, RCU, bottom halves) is instrumented.
#
# Only compilations (-c) of QEMU's own sources (paths relative to the
# build directory) are changed: meson's probes (absolute paths) and links
# keep every flag.
sanitize_where_tested=0
if [ "${1-}" = --sanitize-where-tested ]; then
	sanitize_where_tested=1
	shift
fi
real=$1
shift
instrumented='^(\.\./src/)?(hw/misc/accel|hw/pci[^/]*|hw/core|system|util|accel|tests/qtest/fuzz)/'

# the C file compiled: meson's own steps end "-o X -c SOURCE", its probes
# put the source first and the flags after -c
compiling=0 source= prev=
for arg; do
	case $arg in
	-c) compiling=1 ;;
	*.c) case $prev in -o|-MF|-MQ) ;; *) source=$arg ;; esac ;;
	esac
	prev=$arg
done
if [ $compiling -eq 0 ] || [ -z "$source" ] || [[ $source == /* ]]; then
	exec "$real" "$@"
fi

args=("$@")
if [ $sanitize_where_tested -eq 1 ] && ! [[ $source =~ $instrumented ]]; then
	args=()
	for arg; do
		case $arg in
		-fsanitize*|-fno-sanitize*) ;;
		-O[0-9sgz]) args+=(-O0) ;;
		*) args+=("$arg") ;;
		esac
	done
fi

# accel-pch/KEY.h includes osdep.h; beside it the compiler's precompiled
# copy (gcc: KEY.h.gch, clang: KEY.h.pch), which "-include KEY.h" reads
# instead of the header, and after which the file's own include of osdep.h
# is skipped by its guard.
precompiled_osdep() {
	local key dir=accel-pch flags=() skip=0 arg ext=gch

	for arg in "${args[@]}"; do
		if [ $skip -eq 1 ]; then skip=0; continue; fi
		case $arg in
		-o|-MQ|-MF|-c) skip=1 ;;
		-MD) ;;
		*) flags+=("$arg") ;;
		esac
	done
	case $real in clang*) ext=pch ;; esac
	key=$(printf '%s\0' "$real" "${flags[@]}" | sha256sum | cut -c1-16)
	header=$dir/$key.h
	[ -f "$header.$ext" ] && return
	mkdir -p "$dir"
	(
		flock 9
		[ -f "$header.$ext" ] && exit
		echo '#include "qemu/osdep.h"' >"$header"
		"$real" "${flags[@]}" -x c-header "$header" -o "$header.$ext.tmp" &&
			mv "$header.$ext.tmp" "$header.$ext"
	) 9>"$dir/$key.lock"
	[ -f "$header.$ext" ]
}

if [ "$(grep -m1 '^[[:space:]]*#' "$source")" = '#include "qemu/osdep.h"' ] &&
   precompiled_osdep && out=$("$real" -include "$header" "${args[@]}" 2>&1); then
	[ -z "$out" ] || printf '%s\n' "$out" >&2
	exit 0
fi
exec "$real" "${args[@]}"
