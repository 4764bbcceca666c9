#!/bin/bash
# Resolve the guest kernel from the distribution's backports suite (Debian's
# 6.12 LTS for bookworm) and cache it.
#
# The kernel release is the one that the suite's linux-headers-amd64
# metapackage depends on. At exactly its version are fetched: the image
# (linux-image-<release>-unsigned), the headers with their common part and
# kbuild tools (unpacked into the cache: module builds use them from there,
# nothing is installed), and the source (linux-source-<major.minor>), of
# which only what the tests and checks need is extracted: the kselftest
# harness and checkpatch.pl. The suite's apt entries are derived from the
# machine's own (scripts/apt-derived.sh).
#
# The image's modules that the driver depends on (DRM and its helpers), and
# those of the 9p client over virtio with which the VM runner shares host
# folders, are decompressed into the cache, with the order to load them in.
#
# Writes build/kernel.env with KREL, KVER, KDIR, VMLINUZ, KMODS, KMODS_9P,
# KSFT_INC and CHECKPATCH for the Makefile and the VM runner.
#
#   scripts/fetch-kernel.sh [--no-source]
# --no-source leaves the source for later (make demo: the kernel's 150 MB
# of compressed source are a tenth of its downloads and unpacking them is
# CPU time the QEMU build beside it wants); KSFT_INC and CHECKPATCH then
# name what a later run without it fetches.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
# the modules of the image that simaccel.ko needs, dependencies found here
modules=(drm gpu-sched drm_shmem_helper)
# and those vm-run.sh mounts a 9p share with (virtio_pci may be built in)
modules_9p=(virtio_pci 9pnet_virtio 9p)

"$top/scripts/deps.sh" driver vm
apt=("$top/scripts/apt-derived.sh" "$cache" backports)
# shellcheck source=/dev/null
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")-backports

meta=$("${apt[@]}" apt-cache show "linux-headers-amd64/$suite")
# the metapackage depends on exactly one linux-headers-<release>
hdr_pkg=$(echo "$meta" | sed -n 's/^Depends:.*\(linux-headers-[^ ,]*-amd64\).*/\1/p' | head -n 1)
kver=$(echo "$meta" | sed -n 's/^Version: //p' | head -n 1)
[ -n "$hdr_pkg" ] && [ -n "$kver" ] ||
	{ echo "fetch-kernel: no linux-headers-amd64 in $suite" >&2; exit 1; }
krel=${hdr_pkg#linux-headers-}		# 6.12.95+deb12-amd64
abi=${krel%-amd64}			# 6.12.95+deb12
series=$(echo "$krel" | cut -d. -f1,2)
dir=$cache/kernel/$krel-$kver
root=$dir/root
kdir=$root/usr/src/$hdr_pkg

download() {	# package=version... into the current directory
	"${apt[@]}" apt-get -q download "$@" >&2 && return
	echo "fetch-kernel: cannot download $*" >&2
	exit 1
}

# The image and the headers, unpacked into one tree: the headers' links
# into kbuild are relative, and their Makefile names the common part by
# its installed path, which is rewritten to the cache's.
if [ ! -f "$dir/vmlinuz" ]; then
	echo "fetch-kernel: downloading Debian's kernel $krel ($kver, $suite) once into $cache/kernel: the image, its headers and kbuild, about 100 MB" >&2
	tmp=$dir.tmp
	rm -rf "$tmp" "$root"
	mkdir -p "$tmp" "$root"
	(cd "$tmp" && download "linux-image-$krel-unsigned=$kver" \
		"$hdr_pkg=$kver" "linux-headers-$abi-common=$kver" \
		"linux-kbuild-$abi=$kver")
	for deb in "$tmp"/*.deb; do
		dpkg-deb -x "$deb" "$root"
	done
	sed -i "s|^include /usr/src/|include $root/usr/src/|" "$kdir/Makefile"
	cp "$root/boot/vmlinuz-$krel" "$tmp/vmlinuz"
	rm -rf "$tmp"/*.deb "$root/boot"
	mv "$tmp/vmlinuz" "$dir/vmlinuz"
	rm -rf "$tmp"
fi

# Modules with their dependencies, decompressed into a folder with the order
# to load them in (dependencies first); those built into the image are left
# out.
collect_modules() {	# folder module...
	local out=$1 moddir=$root/lib/modules/$krel m
	shift
	[ -f "$out/order" ] && return
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp"
	touch "$out.tmp/order"
	add_module() {	# name: its dependencies, then itself
		local name=$1 file dep
		[ -f "$out.tmp/$name.ko" ] && return
		grep -qE "/($name|${name//_/-}).ko\$" "$moddir/modules.builtin" && return
		file=$(find "$moddir/kernel" -name "$name.ko.xz" -o \
			    -name "${name//_/-}.ko.xz" | head -n 1)
		[ -n "$file" ] ||
			{ echo "fetch-kernel: no module $name in $krel" >&2; exit 1; }
		for dep in $(/sbin/modinfo -F depends "$file" | tr ',' ' '); do
			add_module "$dep"
		done
		xz -dc "$file" >"$out.tmp/$name.ko"
		echo "$name.ko" >>"$out.tmp/order"
	}
	for m in "$@"; do
		add_module "$m"
	done
	rm -rf "$out"
	mv "$out.tmp" "$out"
}
kmods=$dir/modules
collect_modules "$kmods" "${modules[@]}"
collect_modules "$dir/modules-9p" "${modules_9p[@]}"

source=1
[ "${1:-}" != --no-source ] || source=0
if [ $source -eq 1 ] && [ ! -f "$dir/src/scripts/checkpatch.pl" ]; then
	tmp=$dir/src.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	(cd "$tmp" && download "linux-source-$series=$kver")
	dpkg-deb --fsys-tarfile "$tmp"/linux-source-*.deb |
		tar -x -C "$tmp" --wildcards './usr/src/linux-source-*.tar.xz'
	tar -xJf "$tmp"/usr/src/linux-source-*.tar.xz -C "$tmp" \
		--strip-components=1 --wildcards \
		'*/tools/testing/selftests/kselftest_harness.h' \
		'*/tools/testing/selftests/kselftest.h' \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' \
		'*/scripts/const_structs.checkpatch'
	rm -rf "$dir/src"
	mkdir -p "$dir/src"
	mv "$tmp/tools" "$tmp/scripts" "$dir/src/"
	rm -rf "$tmp"
fi

# Rewrite the file only when it changes, so that make rebuilds only then.
mkdir -p "$top/build"
cat >"$top/build/kernel.env.new" <<EOT
KREL=$krel
KVER=$kver
KDIR=$kdir
VMLINUZ=$dir/vmlinuz
KMODS=$kmods
KMODS_9P=$dir/modules-9p
KSFT_INC=$dir/src/tools/testing/selftests
CHECKPATCH=$dir/src/scripts/checkpatch.pl
EOT
if cmp -s "$top/build/kernel.env.new" "$top/build/kernel.env"; then
	rm "$top/build/kernel.env.new"
else
	mv "$top/build/kernel.env.new" "$top/build/kernel.env"
fi
cat "$top/build/kernel.env"
