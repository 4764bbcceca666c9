#!/bin/bash
# Build qemu-system-x86_64 from the distribution's qemu source package with
# the accel device added, and link it as build/qemu-system-x86_64.
#
# Everything lives in a cache outside the repository ($ACCEL_CACHE, default
# ~/.cache/accel). The source tree and build directory are kept per source
# version, so a change to the device is an incremental rebuild; the finished
# binary is kept per content hash of qemu-device/, the hardware header and
# this script, so an unchanged tree costs only the hash.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
configure_args=(--target-list=x86_64-softmmu --without-default-features
		--disable-docs --disable-tools --disable-install-blobs
		--enable-trace-backends=nop --enable-fdt=system)

"$top/scripts/deps.sh" qemu

# Lines are: 'URI' local-file-name size hash
dsc=$("$top/scripts/apt-derived.sh" "$cache" src apt-get source --print-uris qemu |
      awk '$2 ~ /^qemu_.*\.dsc$/ { print $2; exit }')
[ -n "$dsc" ] || { echo "build-qemu: no qemu source package found" >&2; exit 1; }
version=${dsc#qemu_}
version=${version%.dsc}
key=$(cat "$top"/qemu-device/* "$top/include/accel_hw.h" "$0" |
      sha256sum | cut -c1-16)
base=$cache/qemu/$version
bin=$base/bin-$key/qemu-system-x86_64

fetch_source() {
	local tmp=$base/download

	rm -rf "$tmp" "$base/src"
	mkdir -p "$tmp"
	(cd "$tmp" && "$top/scripts/apt-derived.sh" "$cache" src apt-get -q source \
		--download-only qemu >&2)
	dpkg-source -x "$tmp/$dsc" "$base/src" >&2
	rm -rf "$tmp"
}

# Copy only what changed so that ninja rebuilds only what it must.
install_file() {
	mkdir -p "$(dirname "$2")"
	cmp -s "$1" "$2" || cp "$1" "$2"
}

add_device() {
	local src=$base/src

	for f in accel.c meson.build Kconfig; do
		install_file "$top/qemu-device/$f" "$src/hw/misc/accel/$f"
	done
	install_file "$top/include/accel_hw.h" "$src/include/hw/misc/accel_hw.h"
	grep -q "^subdir('accel')" "$src/hw/misc/meson.build" ||
		echo "subdir('accel')" >>"$src/hw/misc/meson.build"
	grep -q '^source accel/Kconfig' "$src/hw/misc/Kconfig" ||
		echo 'source accel/Kconfig' >>"$src/hw/misc/Kconfig"
}

configure() {
	local build=$base/build

	if [ "$(cat "$build/accel-configure-args" 2>/dev/null)" != \
	     "${configure_args[*]}" ]; then
		rm -rf "$build"
		mkdir -p "$build"
		(cd "$build" && ../src/configure "${configure_args[@]}" >&2)
		echo "${configure_args[*]}" >"$build/accel-configure-args"
	fi
}

if [ ! -x "$bin" ]; then
	[ -f "$base/src/VERSION" ] || fetch_source
	add_device
	configure
	ninja -C "$base/build" qemu-system-x86_64 >&2
	rm -rf "$base"/bin-*
	mkdir -p "$(dirname "$bin")"
	cp "$base/build/qemu-system-x86_64" "$bin"
fi
mkdir -p "$top/build"
ln -sfn "$bin" "$top/build/qemu-system-x86_64"
echo "$bin"
