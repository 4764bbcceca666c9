#!/bin/bash
# Build QEMU from the distribution's qemu source package (trixie's 10.0) with
# the accel device added, and link its binaries into build/.
#
# Usage: scripts/build-qemu.sh [plain|fuzz|tsan|cov]
#   plain: qemu-system-x86_64, minimal, with the log trace backend and the
#          devices the VM uses (scripts/qemu-vm-devices.mak)
#          (build/qemu-system-x86_64)
#   fuzz:  clang with AddressSanitizer and UndefinedBehaviorSanitizer:
#          qemu-system-x86_64 for the qtests and libFuzzer's qemu-fuzz-x86_64
#          (build/asan/qemu-system-x86_64, build/asan/qemu-fuzz-x86_64)
#   tsan:  clang with ThreadSanitizer: qemu-system-x86_64 for the qtests
#          (build/tsan/qemu-system-x86_64)
#          Both sanitize the device and the code that orders its accesses
#          only (scripts/qemu-cc.sh --sanitize-where-tested).
#   cov:   gcc with gcov's counters (build/cov/qemu-system-x86_64), which
#          write to the build directory: scripts/coverage.sh reads them
#
# Everything lives in a cache outside the repository ($ACCEL_CACHE, default
# ~/.cache/accel). The source tree and build directories are kept per source
# version, so a change to the device is an incremental rebuild; the finished
# binaries are kept per content hash of qemu-device/, the hardware header and
# this script, so an unchanged tree costs only the hash.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
flavour=${1:-plain}
# trixie's sources only: a deb-src entry derived from the machine's own.
suite=src-trixie
# Debian's python, which sees meson and pycotap: a python3 earlier on PATH
# may not. No blobs: Debian's repacked source has none to unpack.
configure_args=(--python=/usr/bin/python3 --target-list=x86_64-softmmu
		--without-default-features --disable-docs --disable-tools
		--disable-install-blobs --enable-fdt=system)
# The sanitizer builds run only qtests (-accel qtest): no TCG, whose
# translator and softfloat are a sixth of their compile time (KVM only
# because a target needs an accelerator), and the devices the qtests use,
# a third less to build.
qtest_only=(--disable-tcg --enable-kvm --enable-trace-backends=log
	    --without-default-devices --with-devices-x86_64=accel-qtest
	    --extra-ldflags=-fuse-ld=lld-14)
# The C compiler's wrapper (qemu-cc.sh: QEMU's common header precompiled,
# and in the sanitizer builds the sanitizers only where the device's tests
# look), kept in the cache under its hash, which is thus in the build's
# configuration; configure splits --cc into the command's words
compiler=$top/scripts/qemu-cc.sh
qemu_cc=$cache/qemu/cc-$(sha256sum "$compiler" | cut -c1-8)
# what a first build takes on 2 cores with nothing beside it (ninja then
# prints each step)
declare -A minutes=([plain]="3 to 4" [fuzz]="3 to 4" [tsan]="3 to 4" [cov]="6 to 8")
case $flavour in
plain)
	# virtfs: vm-run.sh shares host folders with the guest over 9p; its
	# xattr calls are glibc's (attr). Debug information for backtraces
	# only (functions and lines, -g1): an eighth less to compile than -g.
	configure_args+=(--cc="$qemu_cc gcc" --enable-trace-backends=log --enable-kvm
			 --enable-virtfs --enable-attr --without-default-devices
			 --with-devices-x86_64=accel-vm --extra-cflags=-g1)
	targets=(qemu-system-x86_64)
	devices=$top/scripts/qemu-vm-devices.mak
	out=$top/build ;;
fuzz)
	"$top/scripts/deps.sh" fuzz
	# at -O1 with line tables, as ASan's documentation advises (reports
	# keep their file:line): a tenth faster to compile than -O2 -g
	configure_args+=(--cc="$qemu_cc --sanitize-where-tested clang-14"
			 --cxx=clang++-14 --enable-fuzzing
			 --enable-asan --enable-ubsan "${qtest_only[@]}"
			 --extra-cflags="-O1 -gline-tables-only")
	targets=(qemu-system-x86_64 qemu-fuzz-x86_64)
	devices=$top/scripts/qemu-devices.mak
	out=$top/build/asan ;;
tsan)
	"$top/scripts/deps.sh" fuzz
	# -O2, as QEMU builds it: the qtests' latency bounds hold under
	# ThreadSanitizer at -O2 (8 ms seen), not always at -O1 (40 ms); line
	# tables, all that its reports print
	configure_args+=(--cc="$qemu_cc --sanitize-where-tested clang-14"
			 --cxx=clang++-14 --enable-tsan
			 "${qtest_only[@]}" --extra-cflags=-gline-tables-only)
	targets=(qemu-system-x86_64)
	devices=$top/scripts/qemu-devices.mak
	out=$top/build/tsan ;;
cov)
	# gcov's counters, for scripts/coverage.sh; the qtests' devices only
	configure_args+=(--enable-gcov --enable-trace-backends=log
			 --without-default-devices --with-devices-x86_64=accel-qtest)
	targets=(qemu-system-x86_64)
	devices=$top/scripts/qemu-devices.mak
	out=$top/build/cov ;;
*)
	echo "build-qemu: unknown flavour $flavour" >&2
	exit 2 ;;
esac

"$top/scripts/deps.sh" qemu

# Lines are: 'URI' local-file-name size hash
dsc=$("$top/scripts/apt-derived.sh" "$cache" "$suite" apt-get source --print-uris qemu |
      awk '$2 ~ /^qemu_.*\.dsc$/ { print $2; exit }')
[ -n "$dsc" ] || { echo "build-qemu: no qemu source package found" >&2; exit 1; }
version=${dsc#qemu_}
version=${version%.dsc}
key=$(cat "$top"/qemu-device/* "$top/include/accel_hw.h" "$0" "$devices" "$compiler" |
      sha256sum | cut -c1-16)
base=$cache/qemu/$version
# a build directory per configuration: checkouts whose scripts configure
# differently (a clean clone of an older commit) do not rebuild each other's
build=$base/build-$flavour-$(echo "${configure_args[*]}" | sha256sum | cut -c1-8)
bins=$base/bin-$flavour-$key

fetch_source() {
	local tmp=$base/download

	rm -rf "$tmp" "$base/src"
	mkdir -p "$tmp"
	(cd "$tmp" && "$top/scripts/apt-derived.sh" "$cache" "$suite" apt-get -q source \
		--download-only qemu >&2)
	dpkg-source -x "$tmp/$dsc" "$base/src" >&2
	rm -rf "$tmp"
}

# Copy only what changed so that ninja rebuilds only what it must.
# Whole or not at all: another build may be running the compiler wrapper.
install_file() {
	mkdir -p "$(dirname "$2")"
	cmp -s "$1" "$2" || { cp "$1" "$2.tmp.$$" && mv "$2.tmp.$$" "$2"; }
}

# The device under hw/, where the fuzzing build instruments it, with its
# trace events among QEMU's.
add_device() {
	local src=$base/src f

	for f in "$top"/qemu-device/*; do
		install_file "$f" "$src/hw/misc/accel/$(basename "$f")"
	done
	install_file "$top/include/accel_hw.h" "$src/include/hw/misc/accel_hw.h"
	install_file "$top/scripts/qemu-devices.mak" \
		"$src/configs/devices/x86_64-softmmu/accel-qtest.mak"
	install_file "$top/scripts/qemu-vm-devices.mak" \
		"$src/configs/devices/x86_64-softmmu/accel-vm.mak"
	grep -q "^subdir('accel')" "$src/hw/misc/meson.build" ||
		echo "subdir('accel')" >>"$src/hw/misc/meson.build"
	grep -q '^source accel/Kconfig' "$src/hw/misc/Kconfig" ||
		echo 'source accel/Kconfig' >>"$src/hw/misc/Kconfig"
	grep -q "'hw/misc/accel'," "$src/meson.build" ||
		sed -i "s|^\\( *\\)'hw/misc',\$|&\\n\\1'hw/misc/accel',|" "$src/meson.build"
	grep -q "'hw/misc/accel'," "$src/meson.build" || {
		echo "build-qemu: no place for the device's trace events" >&2
		exit 1
	}
}

# configure's report goes to a log, shown if it fails
configure() {
	if [ ! -f "$build/accel-configured" ]; then
		rm -rf "$build"
		mkdir -p "$build"
		(cd "$build" && ../src/configure "${configure_args[@]}" >configure.log 2>&1) || {
			tail -n 20 "$build/configure.log" >&2
			echo "build-qemu: configure failed (all of it: $build/configure.log)" >&2
			exit 1
		}
		touch "$build/accel-configured"
	fi
}

if [ ! -x "$bins/${targets[0]}" ]; then
	echo "build-qemu: building QEMU $version ($flavour) once into $cache, ${minutes[$flavour]} minutes on 2 cores" >&2
	[ -f "$base/src/VERSION" ] || fetch_source
	add_device
	install_file "$compiler" "$qemu_cc"
	touch "$qemu_cc"
	configure
	touch "$build"   # in use: not to be pruned by another checkout's run
	ninja -C "$build" "${targets[@]}" >&2
	mkdir -p "$bins"
	for t in "${targets[@]}"; do
		cp "$build/$t" "$bins/$t"
	done
	# where the objects are: the cov flavour's counters go there
	ln -sfn "$build" "$bins/build"
fi
# Binaries of other sources, and build directories of other
# configurations, go once unused for a day: another checkout (a clean clone
# running make check) may be using one now.
touch "$bins"
[ ! -d "$build" ] || touch "$build"
find "$base" -maxdepth 1 \( -name "bin-$flavour-*" ! -name "bin-$flavour-$key" -o \
	-name "build-$flavour*" ! -name "$(basename "$build")" \) \
	-mmin +1440 -exec rm -rf {} +
# and so do the compiler wrappers of other checkouts' scripts
[ ! -f "$qemu_cc" ] || touch "$qemu_cc"
find "$cache/qemu" -maxdepth 1 -type f -name 'cc-*' ! -name "$(basename "$qemu_cc")" \
	-mmin +1440 -delete
mkdir -p "$out"
for t in "${targets[@]}"; do
	ln -sfn "$bins/$t" "$out/$t"
done
echo "$bins/${targets[0]}"
