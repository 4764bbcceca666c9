#!/bin/bash
# accel-smi on a machine with no accelerator (this one, outside the VM):
# a clear message on stderr, exit status 1, and valid JSON with no device.
set -uo pipefail
smi=build/tools/accel-smi
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor"):$(cat "$d/device")" = 0x1234:0xacc1 ]; then
		echo "smi-no-device: this machine has an accelerator; nothing to check"
		exit 0
	fi
done
err=$("$smi" 2>&1 >/dev/null); rc=$?
[ $rc -eq 1 ] || { echo "smi-no-device: exit status $rc, not 1"; exit 1; }
grep -q "no accelerator (PCI 1234:acc1) was found" <<<"$err" ||
	{ echo "smi-no-device: unclear message: $err"; exit 1; }
json=$("$smi" --json 2>/dev/null)
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["devices"] == []' "$json" ||
	{ echo "smi-no-device: bad JSON: $json"; exit 1; }
echo "smi-no-device: ok ($err)"
