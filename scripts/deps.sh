#!/bin/bash
# Install the Debian packages a part of the build needs, or say how to.
#
# Usage: scripts/deps.sh <group>...   (groups: qemu vm driver tests tools debug)
set -euo pipefail

declare -A group=(
	[qemu]="build-essential dpkg-dev ninja-build meson pkg-config python3
		libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev seabios qemu-system-data"
	[vm]="busybox-static cpio kmod bc dpkg-dev"
	[driver]="build-essential kmod sparse dwarves xz-utils"
	[tests]="build-essential xz-utils pkg-config libdrm-dev"
	[tools]="build-essential pkg-config libpci-dev pci.ids dkms man-db groff-base"
	[debug]="build-essential bc bison flex libssl-dev libelf-dev dwarves xz-utils rsync cpio"
)

want=()
for g in "$@"; do
	[ -n "${group[$g]+x}" ] || { echo "deps.sh: unknown group $g" >&2; exit 2; }
	for p in ${group[$g]}; do
		status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
		[ "$status" = installed ] || want+=("$p")
	done
done
[ ${#want[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "Missing packages. Run as root:" >&2
	echo "  apt-get update && apt-get install -y ${want[*]}" >&2
	exit 1
fi
echo "Installing ${want[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -q update >&2
apt-get -q install -y "${want[@]}" >&2
