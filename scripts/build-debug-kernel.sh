#!/bin/bash
# Build the debug kernel: the distribution's kernel source of the same
# version as the guest kernel, configured from x86_64_defconfig with KASAN,
# lockdep (PROVE_LOCKING), DMA-API debugging, kmemleak and fault injection
# (failslab, fail_page_alloc), and what the VM needs. The image is cached
# under $ACCEL_CACHE by the hash of its configuration fragment and version,
# like QEMU's; the source tree, by version, is reused for a new fragment
# (Kbuild then rebuilds only what the changed options touch). simaccel.ko
# is built against it in build/debug-simaccel, and once more with gcov's
# counters (GCOV_KERNEL: read from /sys/kernel/debug/gcov) in
# build/cov-simaccel for scripts/coverage.sh.
#
# Writes build/debug-kernel.env with VMLINUZ (the debug image),
# DEBUG_SIMACCEL_KO (the module built for it) and COV_SIMACCEL_KO (the
# module with counters).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
"$top/scripts/deps.sh" driver vm debug
[ -f "$top/build/kernel.env" ] || "$top/scripts/fetch-kernel.sh" >/dev/null
# shellcheck source=/dev/null
. "$top/build/kernel.env"
series=$(echo "$KREL" | cut -d. -f1,2)

# The options on top of x86_64_defconfig: debugging, and the VM's needs.
# DRM's scheduler and shmem helpers have no prompt: two small drivers that
# select them (etnaviv, ivpu) bring them in, built in like DRM itself.
fragment='
CONFIG_KASAN=y
CONFIG_KASAN_GENERIC=y
CONFIG_KASAN_INLINE=y
CONFIG_PROVE_LOCKING=y
CONFIG_DEBUG_ATOMIC_SLEEP=y
CONFIG_DMA_API_DEBUG=y
CONFIG_DEBUG_KMEMLEAK=y
CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE=16000
CONFIG_FAULT_INJECTION=y
CONFIG_FAILSLAB=y
CONFIG_FAIL_PAGE_ALLOC=y
CONFIG_FAULT_INJECTION_DEBUG_FS=y
CONFIG_DEBUG_FS=y
CONFIG_GCOV_KERNEL=y
CONFIG_DEBUG_INFO_NONE=y
CONFIG_MODULES=y
CONFIG_MODULE_UNLOAD=y
CONFIG_BLK_DEV_INITRD=y
CONFIG_DEVTMPFS=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
CONFIG_PCI=y
CONFIG_PCIEPORTBUS=y
CONFIG_HOTPLUG_PCI=y
CONFIG_HOTPLUG_PCI_PCIE=y
CONFIG_PCI_MSI=y
CONFIG_VFIO=y
CONFIG_INTEL_IOMMU=y
CONFIG_IOMMU_SUPPORT=y
CONFIG_DRM=y
CONFIG_DRM_ACCEL=y
CONFIG_DRM_ETNAVIV=y
CONFIG_DRM_ACCEL_IVPU=y
CONFIG_VIRTIO_PCI=y
CONFIG_NET_9P=y
CONFIG_NET_9P_VIRTIO=y
CONFIG_9P_FS=y
CONFIG_SOUND=n
CONFIG_USB_SUPPORT=n
CONFIG_WLAN=n
CONFIG_WIRELESS=n
CONFIG_NETFILTER=n
'
hash=$(printf '%s\n%s\n' "$KVER" "$fragment" | sha256sum | cut -c1-16)
dir=$cache/debug-kernel/$KREL-$hash
src=$cache/debug-kernel/src-$KVER

if [ ! -f "$dir/vmlinuz" ]; then
	if [ ! -f "$src/Makefile" ]; then
		rm -rf "$src.tmp" "$src"
		mkdir -p "$src.tmp"
		(cd "$src.tmp" && "$top/scripts/apt-derived.sh" "$cache" \
			backports apt-get -q download \
			"linux-source-$series=$KVER" >&2)
		dpkg-deb --fsys-tarfile "$src.tmp"/linux-source-*.deb |
			tar -x -C "$src.tmp" --wildcards './usr/src/linux-source-*.tar.xz'
		mkdir -p "$src"
		tar -xJf "$src.tmp"/usr/src/linux-source-*.tar.xz -C "$src" \
			--strip-components=1
		rm -rf "$src.tmp"
	fi
	mkdir -p "$dir"
	echo "$fragment" >"$dir/debug.config"
	make -s -C "$src" x86_64_defconfig
	"$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" \
		"$dir/debug.config" >/dev/null
	make -s -C "$src" olddefconfig
	# every option of the fragment must have survived olddefconfig, and
	# brought what the driver uses: etnaviv and ivpu the scheduler and
	# shmem helpers of simaccel.ko
	{ grep -E '^CONFIG_[A-Z0-9_]+=y$' "$dir/debug.config"
	  printf 'CONFIG_%s=y\n' DRM_SCHED DRM_GEM_SHMEM_HELPER; } |
	while read -r opt; do
		grep -qx "$opt" "$src/.config" ||
			{ echo "build-debug-kernel: $opt did not take" >&2; exit 1; }
	done
	make -s -C "$src" -j"$(nproc)" bzImage modules
	cp "$src/arch/x86/boot/bzImage" "$dir/vmlinuz"
fi

# The options the kselftests need (tests/driver/config, as in-tree
# selftests have one; an =m there may be built in): the debug kernel has
# them all. DRM_ACCEL_IVPU brings DRM's scheduler and shmem helpers,
# which have no prompt.
while read -r opt; do
	grep -qE "^${opt%=*}=(y|${opt#*=})$" "$src/.config" ||
		{ echo "build-debug-kernel: the kselftests need $opt" >&2; exit 1; }
done < <(grep -E '^CONFIG_' "$top/tests/driver/config")

# simaccel.ko for this kernel, from a copy of the sources laid out as the
# Makefile lays it out (the tree's own objects belong to the distribution
# kernel's build); $2 is added to the Kbuild file.
build_module() {
	local sim=$1

	mkdir -p "$sim/driver" "$sim/uapi" "$sim/include"
	cp -p "$top"/driver/simaccel_*.[ch] "$sim/driver/"
	cp -p "$top/uapi/simaccel_accel.h" "$sim/uapi/"
	cp -p "$top/include/accel_hw.h" "$sim/include/"
	{ cat "$top/Kbuild"; echo "$2"; } >"$sim/Kbuild.new"
	cmp -s "$sim/Kbuild.new" "$sim/Kbuild" || mv "$sim/Kbuild.new" "$sim/Kbuild"
	rm -f "$sim/Kbuild.new"
	make -s -C "$src" M="$sim" modules
}
build_module "$top/build/debug-simaccel" ""
build_module "$top/build/cov-simaccel" "GCOV_PROFILE := y"
cat >"$top/build/debug-kernel.env" <<EOT
VMLINUZ=$dir/vmlinuz
DEBUG_SIMACCEL_KO=$top/build/debug-simaccel/simaccel.ko
COV_SIMACCEL_KO=$top/build/cov-simaccel/simaccel.ko
EOT
cat "$top/build/debug-kernel.env"
