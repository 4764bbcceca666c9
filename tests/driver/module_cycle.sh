#!/bin/sh
# rmmod/insmod cycles of simaccel.ko in the VM: every device comes back
# each time, and an open file keeps the module in place.
set -eu
ko=${1:-/opt/accel/simaccel.ko}
devices=$(grep -l '^0x1234$' /sys/bus/pci/devices/*/vendor | while read -r v; do
	d=$(dirname "$v"); [ "$(cat "$d/device")" = 0xacc1 ] && echo "$d"; done | wc -l)
nodes() { ls /dev/accel/accel* 2>/dev/null | wc -l; }

# the first node there is (a rebound device gets a new one), opened without
# O_CREAT: '<>' on a missing node made a plain file, which holds nothing
node=$(ls /dev/accel/accel* 2>/dev/null | head -n 1)
[ -c "$node" ] || { echo "not ok: no accel node to hold open"; exit 1; }
exec 3<"$node"
if rmmod simaccel 2>/dev/null; then
	echo "not ok: rmmod succeeded with a file open"
	exit 1
fi
exec 3>&-
for i in 1 2 3 4 5; do
	rmmod simaccel
	[ "$(nodes)" -eq 0 ] || { echo "not ok: $(nodes) nodes left after rmmod"; exit 1; }
	insmod "$ko" autosuspend_ms=60000	# as vm-run.sh loads it
	[ "$(nodes)" -eq "$devices" ] ||
		{ echo "not ok: $(nodes) nodes for $devices devices"; exit 1; }
done
echo "ok: an open file holds simaccel.ko; $devices device(s) survived 5 rmmod/insmod cycles"
