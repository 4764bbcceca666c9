#!/bin/bash
# QEMU's C compiler in its sanitizer builds (build-qemu.sh fuzz and tsan):
# clang-14 with the sanitizers on only where the device's tests look for
# bugs: the device, the PCI, PCIe host and memory code it calls, and the
# code whose locks, atomics and coroutines order its threads (util/,
# system/, accel/, hw/core/). Elsewhere (QAPI and trace code, block, migration,
# crypto, other devices: four fifths of the files) they are off and the
# file is built at -O0, half the compile time of the whole build.
#
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
real=clang-14
instrumented='^(\.\./src/)?(hw/misc/accel|hw/pci[^/]*|hw/core|system|util|accel|tests/qtest/fuzz)/'

# the C file compiled: meson's own steps end "-o X -c SOURCE", its probes
# put the source first and the flags after -c
compiling=0 source=
prev=
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
args=()
if [[ $source =~ $instrumented ]]; then
	args=("$@")
else
	for arg; do
		case $arg in
		-fsanitize*|-fno-sanitize*) ;;
		-O[0-9sgz]) args+=(-O0) ;;
		*) args+=("$arg") ;;
		esac
	done
fi

# QEMU's sources begin with qemu/osdep.h, whose headers (GLib's above all)
# are most of what an -O0 compile reads: a precompiled copy, one per set of
# flags (a dozen in a build), in the build directory, which a new
# configuration starts afresh, takes a quarter off the build. A file that
# defines anything before it, or a precompiled header that clang refuses,
# compiles as it is.
precompiled_osdep() {	# the flags without the file's own
	local key dir=accel-pch flags=() skip=0 arg

	for arg; do
		if [ $skip -eq 1 ]; then skip=0; continue; fi
		case $arg in
		-o|-MQ|-MF|-c) skip=1 ;;
		-MD) ;;
		*) flags+=("$arg") ;;
		esac
	done
	key=$(printf '%s\0' "${flags[@]}" | sha256sum | cut -c1-16)
	pch=$dir/$key.pch
	[ -f "$pch" ] && return
	mkdir -p "$dir"
	(
		flock 9
		[ -f "$pch" ] && exit
		echo '#include "qemu/osdep.h"' >"$dir/$key.h"
		"$real" "${flags[@]}" -x c-header "$dir/$key.h" -o "$pch.tmp" &&
			mv "$pch.tmp" "$pch"
	) 9>"$dir/$key.lock"
	[ -f "$pch" ]
}

first=$(grep -m1 '^[[:space:]]*#' "$source")
if [ "$first" = '#include "qemu/osdep.h"' ] && precompiled_osdep "${args[@]}" &&
   out=$("$real" "${args[@]}" -include-pch "$pch" 2>&1); then
	[ -z "$out" ] || printf '%s\n' "$out" >&2
	exit 0
fi
exec "$real" "${args[@]}"
