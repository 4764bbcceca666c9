#!/bin/bash
# Resolve the guest kernel from the distribution's packages and cache it.
#
# The kernel release is the one of the installed linux-headers-amd64
# package; the image (linux-image-<release>) and the source
# (linux-source-<major.minor>) are fetched at exactly that version. From the
# source only what the tests and checks need is extracted: the kselftest
# harness and checkpatch.pl.
#
# Writes build/kernel.env with KREL, KVER, KDIR, VMLINUZ, KSFT_INC and
# CHECKPATCH for the Makefile and the VM runner.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}

"$top/scripts/deps.sh" driver vm

# linux-headers-amd64 depends on exactly one linux-headers-<release>.
hdr_pkg=$(dpkg-query -W -f='${Depends}' linux-headers-amd64 |
	  grep -o 'linux-headers-[^ ,]*-amd64' | head -n 1)
krel=${hdr_pkg#linux-headers-}
kver=$(dpkg-query -W -f='${Version}' "$hdr_pkg")
kdir=/usr/src/$hdr_pkg
series=$(echo "$krel" | cut -d. -f1,2)
dir=$cache/kernel/$krel-$kver

download() {	# package=version into the current directory
	apt-get -q -o APT::Sandbox::User=root download "$1" >&2 && return
	echo "fetch-kernel: cannot download $1, the version of the installed" \
	     "$hdr_pkg. Update the headers (as root: apt-get update &&" \
	     "apt-get install --only-upgrade linux-headers-amd64) and retry." >&2
	exit 1
}

if [ ! -f "$dir/vmlinuz" ]; then
	tmp=$dir.tmp
	rm -rf "$tmp"
	mkdir -p "$tmp"
	(cd "$tmp" && download "linux-image-$krel=$kver")
	dpkg-deb -x "$tmp"/linux-image-*.deb "$tmp/root"
	mkdir -p "$dir"
	cp "$tmp/root/boot/vmlinuz-$krel" "$dir/vmlinuz"
	rm -rf "$tmp"
fi

if [ ! -f "$dir/src/scripts/checkpatch.pl" ]; then
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
KSFT_INC=$dir/src/tools/testing/selftests
CHECKPATCH=$dir/src/scripts/checkpatch.pl
EOT
if cmp -s "$top/build/kernel.env.new" "$top/build/kernel.env"; then
	rm "$top/build/kernel.env.new"
else
	mv "$top/build/kernel.env.new" "$top/build/kernel.env"
fi
cat "$top/build/kernel.env"
