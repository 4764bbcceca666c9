#!/bin/sh
# accel-smi in the VM, against what the guest's sysfs and the driver say:
# two devices of 256 MiB with simaccel.ko bound, a process holding VRAM
# (seen through its DRM fdinfo), and the driver unloaded. Prints "ok: ..."
# or "not ok: ..." per check.
#
#   accel_smi_test.sh   (from /opt/accel, as root, with accel-smi,
#                        hold_device, load_test and simaccel.ko beside it)
fails=0
check() {	# description, then a command that must succeed
	what=$1
	shift
	if "$@"; then
		echo "ok: accel-smi $what"
	else
		echo "not ok: accel-smi $what"
		fails=$((fails + 1))
	fi
}
has() { grep -q -- "$1" "$2"; }

./accel-smi >table.txt 2>err.txt
check "exits 0 with devices and the driver" [ $? -eq 0 ]
cat table.txt
for n in 0 1; do
	bdf=$(basename "$(readlink /sys/class/accel/accel$n/device)")
	check "lists accel$n at $bdf" grep -q "accel$n *| $bdf" table.txt
done
check "shows 256 MiB of VRAM per device" [ "$(grep -c '0 / 256 MiB' table.txt)" -eq 2 ]
check "says no process uses a device" has "no process is using a device" table.txt

# 4 MiB of VRAM, filled by one job, and 12 KiB of system memory, on two fds
# of one DRM client
./hold_device /dev/accel/accel1 4 ready.txt 12 &
holder=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [ -s ready.txt ] && break; sleep 1; done
./accel-smi >table.txt
./accel-smi -q >query.txt
./accel-smi --json >json.txt
cat table.txt
# what the kernel says, in DRM's units, for accel-smi to agree with
check "is checked against a holder that fdinfo shows with 4 MiB of VRAM" \
	[ "$(grep -l 'drm-total-vram:.*4 MiB' /proc/$holder/fdinfo/* | wc -l)" -eq 2 ]
check "is checked against a holder that fdinfo shows with 12 KiB of system memory" \
	[ "$(grep -l 'drm-total-system:.*12 KiB' /proc/$holder/fdinfo/* | wc -l)" -eq 2 ]
check "shows the holder's pid and VRAM" grep -q "| *1 | *$holder | hold_device *| *4 MiB" table.txt
check "shows the holder on accel1 only" [ "$(grep -c "| *$holder | hold_device" table.txt)" -eq 1 ]
check "counts the holder's VRAM as used" has "4 / 256 MiB" table.txt
check "shows the holder's pinned host memory" grep -q "| *4 / 256 MiB | *1 MiB |" table.txt
check "-q names the kernel driver" has "Kernel driver         : simaccel" query.txt
check "-q names the driver's version" grep -q "Driver                    : driver simaccel [0-9][0-9.]* (loaded)" query.txt
check "-q shows the VRAM BAR" grep -q "BAR2 .*256 MiB, 64-bit, prefetchable" query.txt
check "-q shows the PCIe link" grep -q "PCIe link             : [0-9.]*GT/s x[0-9]" query.txt
check "-q shows the node" has "Node                  : /dev/accel/accel1" query.txt
check "-q shows the copy engines' busy time" grep -q "Busy time             : [0-9]* ms" query.txt
# an idle device suspends after 1 s (runtime PM): D0 or D3hot
check "-q shows the PCI power state" \
	grep -Eq "Power state           : (D0|D3hot) \(runtime PM: [a-z]*\)" query.txt
check "--json has the busy time and the resets" \
	grep -Eq '"busy_time_us": [0-9]*, "resets": 0, "power_state": "(D0|D3hot)"' json.txt
check "-q shows no reset yet" grep -q "Resets                : 0" query.txt
check "-q shows the holder, its dup'ed fds as one client" \
	grep -q "PID $holder .*hold_device, VRAM 4 MiB, system memory 12 KiB, 1 DRM client," query.txt
check "--json has both devices bound" [ "$(grep -o '"kernel_driver": "simaccel"' json.txt | wc -l)" -eq 2 ]
check "--json has the VRAM total" has '"total_bytes": 268435456' json.txt
check "--json has the holder" \
	has "\"pid\": $holder, \"name\": \"hold_device\", \"vram_bytes\": 4194304, \"system_bytes\": 12288, \"clients\": 1," json.txt
check "--json has the holder's copy-engine time" grep -q "\"pid\": $holder, .*\"engine_copy_ns\": [1-9]" json.txt
check "--json says root sees every process" has '"all_processes": true' json.txt
# over time: the holder is idle (its one job is over), its VRAM held
bdf0=$(basename "$(readlink /sys/class/accel/accel0/device)")
bdf1=$(basename "$(readlink /sys/class/accel/accel1/device)")
./accel-smi dmon -d 0.5 -c 1 >dmon.txt
./accel-smi pmon -d 0.5 -c 1 >pmon.txt
./accel-smi --query-gpu=index,pci.bus_id,driver,node,memory.total,memory.used,memory.free,utilization.gpu,processes \
	--format=csv,noheader -d 0.5 >csv.txt
./accel-smi -l 0.2 -c 2 >loop.txt
cat dmon.txt pmon.txt csv.txt
check "dmon shows accel1's VRAM used and its copy engine idle" \
	grep -Eq "^ +1 simaccel +$bdf1 accel1 +0.0 +4 +copy=0.0\$" dmon.txt
check "dmon shows accel0 unused" grep -Eq "^ +0 simaccel +$bdf0 accel0 +- +0 +-\$" dmon.txt
check "pmon shows the holder's VRAM and idle copy engine on accel1" \
	grep -Eq "^1 +$holder hold_device +0.0 +4 +1 +- +- +- +copy=0.0\$" pmon.txt
check "pmon shows one process" [ "$(grep -vc '^#' pmon.txt)" -eq 1 ]
check "--query-gpu gives accel1's figures" \
	has "^1, $bdf1, simaccel, accel1, 256 MiB, 4 MiB, 252 MiB, 0 %, 1\$" csv.txt
check "--query-gpu gives accel0's figures" \
	has "^0, $bdf0, simaccel, accel0, 256 MiB, 0 MiB, 256 MiB, \[N/A\], 0\$" csv.txt
check "-l 0.2 -c 2 prints the table twice" [ "$(grep -c '^Processes:' loop.txt)" -eq 2 ]
# under load: load_test's processes copy on both devices, and pmon and
# dmon, over the same second once its two workers have the devices open,
# see the copy engines busy. Under TCG on a busy host the workers may take
# many seconds to start and each accel-smi run seconds: the load lasts
# until they are done (stop.txt), 60 s at most.
rm -f stop.txt
ACCEL_VISIBLE_DEVICES=accel ./load_test --seconds 60 --procs 2 --threads 2 \
	--stop-file stop.txt >load.txt 2>&1 &
loader=$!
workers_open() {	# load_test processes with a simaccel file open: 2 or more
	local n=0 comm

	for comm in /proc/[0-9]*/comm; do
		[ "$(cat "$comm" 2>/dev/null)" = load_test ] || continue
		grep -qs '^drm-driver:.*simaccel' "${comm%comm}"fdinfo/* && n=$((n + 1))
	done
	[ $n -ge 2 ]
}
for _ in $(seq 150); do workers_open && break; sleep 0.2; done
./accel-smi pmon -d 1 -c 1 >pmon.txt &
./accel-smi dmon -d 1 -c 1 >dmon.txt
wait $!
touch stop.txt
wait "$loader"
check "is checked against a load_test that passes" [ $? -eq 0 ]
./accel-smi --query-gpu=index,busy_time,power.state --format=csv,noheader,nounits >busy.txt
cat busy.txt
check "--query-gpu: both devices' busy time grew under load, and their power state" \
	[ "$(grep -Ec '^[01], [1-9][0-9]*, (D0|D3hot)$' busy.txt)" -eq 2 ]
sed "s/^/load_test said: /" load.txt   # its "ok:" is not this test's
cat dmon.txt pmon.txt
check "dmon sees both copy engines busy under load" \
	[ "$(grep -Ec '^ +[01] simaccel .* copy=([1-9][0-9]*\.[0-9]|0\.[1-9])$' dmon.txt)" -eq 2 ]
check "pmon sees load_test's copy engine busy" \
	grep -Eq "^[01] +[0-9]+ load_test .* copy=([1-9][0-9]*\.[0-9]|0\.[1-9])\$" pmon.txt

# a user other than root: their own processes only (none), and told so
mkdir -p /etc
grep -q '^smiuser:' /etc/passwd 2>/dev/null ||
	echo 'smiuser:x:1000:1000::/tmp:/bin/sh' >>/etc/passwd
su smiuser -c ./accel-smi >user.txt 2>&1
check "shows a user none of root's processes" [ "$(grep -c hold_device user.txt)" -eq 0 ]
check "tells a user that only their own processes are listed" \
	has "only your own processes are listed" user.txt
kill "$holder"
wait "$holder" 2>/dev/null

# a reset through the PCI core counts
echo 1 >"/sys/bus/pci/devices/$bdf0/reset"
./accel-smi --query-gpu=index,resets --format=csv,noheader >resets.txt
check "--query-gpu counts a device's reset" \
	[ "$(cat resets.txt | tr '\n' ' ')" = "0, 1 1, 0 " ]

rmmod simaccel
./accel-smi >table.txt 2>err.txt
check "exits 2 without the driver" [ $? -eq 2 ]
check "says the driver is not loaded" has "not loaded" err.txt
check "still lists the devices, unbound" [ "$(grep -c 'not bound' table.txt)" -eq 2 ]
./accel-smi --json >json.txt 2>/dev/null
check "--json says the driver is not loaded" has '"loaded": false' json.txt
./accel-smi --bogus >/dev/null 2>&1
check "refuses a bad option with 64" [ $? -eq 64 ]
insmod ./simaccel.ko autosuspend_ms=60000	# as vm-run.sh loads it
./accel-smi >/dev/null
check "exits 0 once the driver is back" [ $? -eq 0 ]
exit $((fails != 0))
