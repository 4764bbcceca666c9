#!/bin/bash
# dkms.conf as a user gets it: 'make install-dkms' puts the sources in
# /usr/src/simaccel-VERSION (here under a temporary DESTDIR), and dkms add,
# build and install make simaccel.ko for the kernel the project targets, into
# a private DKMS tree and module tree.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# shellcheck source=/dev/null
. build/kernel.env
work=$(mktemp -d /tmp/accel-dkms.XXXXXX)
trap 'rm -rf "$work"' EXIT
say() { echo "check-dkms: $*"; }

version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
driver=$(sed -nE 's/^#define SIMACCEL_DRIVER_(MAJOR|MINOR|PATCH)\s+([0-9]+).*/\2/p' driver/simaccel_drv.h | paste -sd.)
[ "$version" = "$driver" ] || { say "FAIL: dkms.conf has $version, the driver $driver"; exit 1; }

make -s install-dkms DESTDIR="$work/root"
mkdir -p "$work/dkms" "$work/modules/$KREL"
trees=(--sourcetree "$work/root/usr/src" --dkmstree "$work/dkms" --installtree "$work/modules")
dkms add "${trees[@]}" -m simaccel -v "$version" >/dev/null
dkms build "${trees[@]}" -m simaccel -v "$version" -k "$KREL" --kernelsourcedir "$KDIR" >/dev/null
# the kernel is not installed here: no depmod of its module tree
dkms install "${trees[@]}" -m simaccel -v "$version" -k "$KREL" --kernelsourcedir "$KDIR" \
	--no-depmod >/dev/null
ko=$(find "$work/modules/$KREL" -name 'simaccel.ko*')
[ -n "$ko" ] || { say "FAIL: dkms install left no simaccel.ko"; exit 1; }
[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$KREL" ] ||
	{ say "FAIL: simaccel.ko is not for $KREL"; exit 1; }
[ "$(modinfo -F version "$ko")" = "$version" ] ||
	{ say "FAIL: simaccel.ko is not version $version"; exit 1; }
dkms status "${trees[@]}" -m simaccel -v "$version" | grep installed >/dev/null ||
	{ say "FAIL: dkms does not report simaccel installed"; exit 1; }
say "ok: simaccel/$version built and installed for $KREL (${ko#"$work/modules/"})"
