#!/bin/bash
# QEMU's C compiler in the builds of build-qemu.sh, given the real one:
#   qemu-cc.sh [--sanitize-where-tested] gcc|clang-14 ARGUMENTS...
#
# QEMU's sources begin with qemu/osdep.h, whose headers (GLib's above all)
# are most of what an -O0 compile reads and a sixth of an -O2 one: each
# compile of such a file includes a precompiled copy, one per set of flags
# (under twenty in a build), made once in the build directory, which a new
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
		-O*) args+=(-O0) ;;
		*) args+=("$arg") ;;
		esac
	done
fi

# Whether the file includes osdep.h before anything else: only blank lines
# and whole comments come first (anything else, even a byte-order mark,
# and the file compiles without the copy).
osdep_first() {
	awk '
	function done(ok) { found = ok; exit }
	in_comment { if (/\*\/[ \t]*$/) in_comment = 0; else if (/\*\//) done(0); next }
	/^[ \t]*$/ { next }
	/^[ \t]*\/\// { if (/\\$/) done(0); next }
	/^[ \t]*\/\*/ { if (/\*\/[ \t]*$/) next; if (/\*\//) done(0); in_comment = 1; next }
	{ done($0 == "#include \"qemu/osdep.h\"") }
	END { exit !found }' "$source" 2>/dev/null
}

# accel-pch/KEY.h includes osdep.h; beside it the compiler's precompiled
# copy (gcc: KEY.h.gch, clang: KEY.h.pch), which "-include KEY.h" reads
# instead of the header, after which the file's own include of osdep.h is
# skipped by its guard; KEY.d lists the headers the copy holds, which gcc's
# dependency file then lists too (-fpch-deps), so that ninja rebuilds what a
# changed header touches. A copy older than one of its headers is made
# again: gcc would read it regardless, clang would refuse it.
dir=accel-pch
case ${real##*/} in clang*) ext=pch pch_deps=() ;; *) ext=gch pch_deps=(-fpch-deps) ;; esac

precompiled_osdep() {
	local key flags=() skip=0 arg

	for arg in "${args[@]}"; do
		if [ $skip -eq 1 ]; then skip=0; continue; fi
		case $arg in
		-o|-MQ|-MF|-MT) skip=1 ;;
		-o?*|-MQ?*|-MF?*|-MT?*|-MD|-MMD|-c|"$source") ;;
		*) flags+=("$arg") ;;
		esac
	done
	key=$(printf '%s\0' "$real" "${flags[@]}" | sha256sum | cut -c1-16)
	header=$dir/$key.h
	copy=$header.$ext
	headers=$dir/$key.headers
	fresh_copy && return
	mkdir -p "$dir"
	(
		flock 9
		fresh_copy && exit
		echo '#include "qemu/osdep.h"' >"$header"
		"$real" "${flags[@]}" -MD -MF "$dir/$key.d" -x c-header "$header" \
			-o "$copy.tmp" >"$dir/$key.log" 2>&1 &&
			sed -e 's/^[^:]*://' -e 's/\\$//' "$dir/$key.d" | tr -s ' \t' '\n\n' |
			sed '/^$/d' >"$headers" &&
			mv "$copy.tmp" "$copy"
	) 9>"$dir/$key.lock"
	fresh_copy
}

fresh_copy() {
	local h

	[ -f "$copy" ] && [ -f "$headers" ] || return 1
	while read -r h; do
		[ ! "$h" -nt "$copy" ] || return 1
	done <"$headers"
}

# The compile with the copy has the last word unless the compiler refused
# the copy: gcc then reads the header itself and warns (-Winvalid-pch),
# or fails to read it; clang fails. Then, and after any other failure, the
# file is compiled again without it; a refused copy goes, and the next
# compile makes it again.
refused() {	# the compile's exit status and output
	[[ $2 == *"[-Winvalid-pch]"* ]] || { [ "$1" -ne 0 ] &&
		[[ $2 == *"$copy"* || $2 == *"precompiled header"* || $2 == *"PCH file"* ]]; }
}

if osdep_first && precompiled_osdep; then
	out=$("$real" -include "$header" -Winvalid-pch "${pch_deps[@]}" "${args[@]}" 2>&1)
	rc=$?
	if refused $rc "$out"; then
		rm -f "$copy"
	elif [ $rc -eq 0 ]; then
		[ -z "$out" ] || printf '%s\n' "$out" >&2
		exit 0
	fi
fi
exec "$real" "${args[@]}"
