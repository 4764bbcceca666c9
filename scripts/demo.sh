#!/bin/bash
# make demo: boot the VM with two accelerators, load the driver (simaccel.ko,
# on DRM accel), and show what it found: accel-smi, sysfs, and two programs
# (the driver's ioctls, and libaccel's Numba-style arrays).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
echo "demo: booting Debian's kernel on QEMU with two accel-pci devices..."
mapfile -t libs < <(scripts/guest-libs.sh build/tools/accel-smi)
exec scripts/vm-run.sh --devices 2 --vram 512M --file build/examples/accel_info \
	--file build/tools/accel-smi --file /usr/share/misc/pci.ids:/usr/share/misc/pci.ids \
	--file build/examples/numba_memory.static:/opt/accel/numba_memory "${libs[@]}" -- \
	'echo; echo "== accel-smi"; ./accel-smi' \
	'echo; echo "== PCI devices bound to simaccel.ko"; ls /sys/bus/pci/drivers/simaccel | grep :' \
	'echo; echo "== kernel log"; dmesg | grep simaccel' \
	'echo; echo "== device nodes (DRM accel, major 261)"; ls -l /dev/accel' \
	'echo; echo "== sysfs"; for d in /sys/class/accel/accel*; do echo "$d: vram_total=$(cat $d/device/vram_total) vram_used=$(cat $d/device/vram_used)"; done' \
	'echo; echo "== examples/accel_info"; ./accel_info' \
	'echo; echo "== examples/numba_memory on accel:0"; ACCEL_VISIBLE_DEVICES=accel ./numba_memory'
