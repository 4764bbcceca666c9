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
if [ $compiling -eq 0 ] || [ -z "$source" ] || [[ $source == /* ]] ||
   [[ $source =~ $instrumented ]]; then
	exec "$real" "$@"
fi
args=()
for arg; do
	case $arg in
	-fsanitize*|-fno-sanitize*) ;;
	-O[0-9sgz]) args+=(-O0) ;;
	*) args+=("$arg") ;;
	esac
done
exec "$real" "${args[@]}"
