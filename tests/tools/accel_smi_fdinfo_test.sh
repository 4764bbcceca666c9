#!/bin/bash
# accel-smi against other drivers' fdinfo, on the host, without a device:
# fake /proc trees (ACCEL_SMI_PROC) whose processes hold the fdinfo files
# of amdgpu, i915, xe, ivpu, panthor and simaccel as those drivers write
# them (tests/tools/fdinfo/), three snapshots 2 s apart (each tree's
# uptime), and garbage; then a process holding libaccel pool memory on
# the cpu backend, published through ACCEL_STATS_DIR. Prints "ok: ..." or
# "not ok: ..." per check, and "N passed, N failed" last.
#
#   tests/tools/accel_smi_fdinfo_test.sh   (from the top of the tree, after
#                                           make build/tools/accel-smi
#                                           build/tests/hold_pool
#                                           build/tests/unload_lib)
set -uo pipefail
smi=${SMI:-build/tools/accel-smi}
hold_pool=${HOLD_POOL:-build/tests/hold_pool}
unload_lib=${UNLOAD_LIB:-build/tests/unload_lib}
libaccel=${LIBACCEL:-build/lib/libaccel.so.1}
fixtures=tests/tools/fdinfo
tmp=$(mktemp -d /tmp/accel-smi-fdinfo.XXXXXX)
holder=
trap '[ -z "$holder" ] || kill "$holder" 2>/dev/null; rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../checks.sh"
check_prefix="accel-smi "
has() { grep -q -- "$1" "$2"; }
# the line of $2 whose first two fields are $1 (dev pid, or pid name)
row() { awk -v k="$1" '$1 " " $2 == k' "$2"; }
same() {	# expected file, actual file
	diff -u "$1" "$2" >&2
}

process() {	# tree pid comm
	mkdir -p "$1/$2/fdinfo"
	[ -z "$3" ] || echo "$3" >"$1/$2/comm"
}
fd() {		# tree pid fd fixture
	cp "$fixtures/$4" "$1/$2/fdinfo/$3"
}

# Snapshot $2 (0, 1, 2) into tree $1: its processes and their files.
# 200 and its child 201 share client 12 (fork), 200 has it twice (dup)
tree() {
	local t=$1 n=$2 amd=$2 m=$(($2 < 1 ? $2 : 1))

	mkdir -p "$t"
	echo "$((100 + 2 * n)).00 50.00" >"$t/uptime"
	process "$t" 200 gfxapp
	fd "$t" 200 5 "amdgpu-$amd.txt"
	fd "$t" 200 6 "amdgpu-$amd.txt"
	if [ "$n" -lt 2 ]; then		# the child is gone in the third
		process "$t" 201 gfxapp-child
		fd "$t" 201 5 "amdgpu-$amd.txt"
		fd "$t" 201 7 "amdgpu-old-$n.txt"
	fi
	process "$t" 210 glxgears
	fd "$t" 210 4 "i915-$m.txt"
	process "$t" 220 xe_exec
	fd "$t" 220 4 "xe-$m.txt"
	process "$t" 230 vpu_infer
	fd "$t" 230 4 "intel_vpu-$m.txt"
	process "$t" 240 panfrost_app
	fd "$t" 240 4 "panthor-$m.txt"
	process "$t" 250 cyclegpu_app
	fd "$t" 250 4 "cyclegpu-$m.txt"
	process "$t" 260 trainer
	fd "$t" 260 4 "simaccel-$m.txt"
	# garbage, and what a scan meets while processes come and go
	process "$t" 300 junk
	fd "$t" 300 3 garbage.txt
	printf 'pos:\t0\nflags:\t02\nmnt_id:\t24\nino:\t9\n' >"$t/300/fdinfo/4"
	mkdir "$t/300/fdinfo/7"			# not a file
	ln -s "$t/none" "$t/300/fdinfo/8"	# closed between scan and read
	printf 'drm-driver:\tnulldrv\ndrm-client-id:\t1\n' >"$t/300/fdinfo/9"
	mkdir -p "$t/300/fd"
	ln -s /dev/null "$t/300/fd/9"		# a char device, but not DRM's
	mkdir -p "$t/400"			# gone before its fdinfo was read
	mkdir -p "$t/401"
	ln -s "$t/none" "$t/401/fdinfo"
	process "$t" 402 ""			# gone before its comm was read
	printf 'drm-driver:\torphan\ndrm-client-id:\t1\n' >"$t/402/fdinfo/3"
	mkdir -p "$t/self" "$t/notapid7"	# not processes
}
for n in 0 1 2; do
	tree "$tmp/t$n" "$n"
done
snapshots=$tmp/t0:$tmp/t1:$tmp/t2
export ACCEL_SMI_PROC=$tmp/t0:$tmp/t1

# --- --query-gpu: the figures, over the 2 s from the first to the second
"$smi" --query-gpu=index,name,pci.bus_id,driver,memory.used,utilization.gpu \
	--format=csv -d 0 >"$tmp/csv" 2>"$tmp/err"
check "--query-gpu exits 0 with other drivers' devices only" [ $? -eq 0 ]
cat >"$tmp/want" <<'EOF'
index, name, pci.bus_id, driver, memory.used [MiB], utilization.gpu [%]
0, amdgpu, 0000:03:00.0, amdgpu, 1536 MiB, 75 %
1, i915, 0000:00:02.0, i915, 64 MiB, 50 %
2, xe, 0000:05:00.0, xe, 24 MiB, 50 %
3, intel_vpu, 0000:00:0b.0, intel_vpu, 8 MiB, [N/A]
4, panthor, [N/A], panthor, 17 MiB, 25 %
5, cyclegpu, [N/A], cyclegpu, 0 MiB, 25 %
6, simaccel, 0000:00:04.0, simaccel, 4 MiB, 10 %
7, badgpu, [N/A], badgpu, 3 MiB, 0 %
8, orphan, [N/A], orphan, 0 MiB, [N/A]
EOF
check "--query-gpu gives each driver's memory and utilization, as CSV" same "$tmp/want" "$tmp/csv"
check "--query-gpu says nothing on stderr" [ ! -s "$tmp/err" ]
"$smi" --query-gpu=index,memory.used,utilization.gpu --format=csv,noheader,nounits \
	-d 0 >"$tmp/csv"
printf '%s\n' "0, 1536, 75" "1, 64, 50" "2, 24, 50" "3, 8, [N/A]" "4, 17, 25" \
	"5, 0, 25" "6, 4, 10" "7, 3, 0" "8, 0, [N/A]" >"$tmp/want"
check "--query-gpu with noheader,nounits" same "$tmp/want" "$tmp/csv"
"$smi" --query-gpu=count,name,memory.total,node,processes --format=csv,noheader >"$tmp/csv"
check "--query-gpu: count, no total for other drivers, processes" \
	has "^9, amdgpu, \[N/A\], \[N/A\], 2$" "$tmp/csv"
"$smi" --query-gpu=index,bogus --format=csv >"$tmp/csv" 2>"$tmp/err"
check "--query-gpu refuses an unknown field with 2" [ $? -eq 2 ]
check "--query-gpu names the unknown field" has 'field "bogus" is not a valid field' "$tmp/err"
check "--query-gpu prints nothing for a bad field" [ ! -s "$tmp/csv" ]
"$smi" --query-gpu=index >/dev/null 2>"$tmp/err"
check "--query-gpu without --format exits 2" [ $? -eq 2 ]
"$smi" --query-gpu=index --format=xml >/dev/null 2>&1
check "--query-gpu refuses a format other than csv with 2" [ $? -eq 2 ]

# --- pmon: per process, dup'ed and inherited fds counted once
"$smi" pmon -d 0 -c 1 >"$tmp/pmon" 2>&1
check "pmon exits 0" [ $? -eq 0 ]
cat "$tmp/pmon"
check "pmon: the parent has its client once (1 GiB, 50% of gfx)" \
	grep -Eq '^0 +200 gfxapp +50.0 +1024 +2 +- +- +- +gfx=50.0 compute=0.0$' "$tmp/pmon"
check "pmon: the child only its own client (512 MiB, 25% of gfx)" \
	grep -Eq '^0 +201 gfxapp-child +25.0 +512 +4 .* gfx=25.0$' "$tmp/pmon"
check "pmon: i915's video engine over its capacity of 2" \
	grep -Eq '^1 +210 glxgears +50.0 +64 +4 .* render=50.0 copy=0.0 video=50.0 video-enhance=0.0$' "$tmp/pmon"
check "pmon: xe's cycles over its total cycles, ccs over 4 engines" \
	grep -Eq '^2 +220 xe_exec +50.0 +24 +1 .* rcs=25.0 bcs=0.0 ccs=50.0$' "$tmp/pmon"
check "pmon: ivpu's memory, no engine" grep -Eq '^3 +230 vpu_infer +- +8 +0 .* -$' "$tmp/pmon"
check "pmon: panthor's busy time, not its cycles" \
	grep -Eq '^4 +240 panfrost_app +25.0 +17 +0 .* panthor=25.0$' "$tmp/pmon"
check "pmon: busy cycles over the maximum frequency" \
	grep -Eq '^5 +250 cyclegpu_app +25.0 .* gpu=25.0$' "$tmp/pmon"
check "pmon: garbage is skipped, its one good line kept" grep -Eq '^7 +300 junk +0.0 +3 +0 ' "$tmp/pmon"
check "pmon: at most 12 engines a client" \
	[ "$(row "7 300" "$tmp/pmon" | grep -o 'e[0-9]*=' | wc -l)" -eq 12 ]
check "pmon: a process whose comm is gone is '?'" grep -Eq '^8 +402 \? ' "$tmp/pmon"
check "pmon: a char device not DRM's is not a client" [ "$(grep -c nulldrv "$tmp/pmon")" -eq 0 ]
check "pmon: one line per process per device" [ "$(grep -vc '^#' "$tmp/pmon")" -eq 10 ]

# --- dmon: a tree per interval, the devices' sums
ACCEL_SMI_PROC=$snapshots "$smi" dmon -d 0 -c 2 >"$tmp/dmon"
cat "$tmp/dmon"
check "dmon: two samples, a line per device each" [ "$(grep -vc '^#' "$tmp/dmon")" -eq 18 ]
check "dmon: a device's processes summed" \
	grep -Eq '^ +0 amdgpu +0000:03:00.0 +- +75.0 +1536 +gfx=75.0 compute=0.0$' "$tmp/dmon"
check "dmon: the next interval from the next snapshot, without the process gone" \
	grep -Eq '^ +0 amdgpu +0000:03:00.0 +- +100.0 +1024 +gfx=100.0 compute=0.0$' "$tmp/dmon"
check "dmon: a device without engines" grep -Eq '^ +3 intel_vpu +0000:00:0b.0 +- +- +8 +-$' "$tmp/dmon"
check "dmon: simaccel's copy engine" grep -Eq '^ +6 simaccel +0000:00:04.0 +- +10.0 +4 +copy=10.0$' "$tmp/dmon"
check "dmon: a snapshot that does not move gives 0, not a division by 0" \
	grep -Eq '^ +1 i915 .* +0.0 +64 +render=0.0' "$tmp/dmon"

# --- the table, -q, --json, -l
"$smi" -l 0 -c 2 >"$tmp/table" 2>&1
check "exits 0 with other drivers' devices only" [ $? -eq 0 ]
check "-l -c 2 prints the table twice" [ "$(grep -c '^Processes:' "$tmp/table")" -eq 2 ]
check "the table lists xe's device" grep -q '|   2 | -      | 0000:05:00.0 | xe  *| n/a  *|  *24 MiB / n/a |' "$tmp/table"
check "the table lists the child's memory and busy time" \
	grep -q '|   0 |     201 | gfxapp-child     |     512 MiB |       4 MiB |       0 ms |' "$tmp/table"
"$smi" -q >"$tmp/query"
check "-q lists a process's engines" \
	has "PID 210           : glxgears, VRAM 64 MiB, system memory 4 MiB, 1 DRM client, engines busy: render 9289 ms copy 2036 ms video 0 ms video-enhance 0 ms" "$tmp/query"
check "-q names the DRM driver" has "DRM driver            : panthor" "$tmp/query"
check "-q names a client that has a name" has "PID 260           : trainer (client mytrainer), VRAM 4 MiB" "$tmp/query"
"$smi" --json >"$tmp/json"
check "--json parses, with each device and the clients counted once" python3 - "$tmp/json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
devs = d["devices"]
assert [x["drm_driver"] for x in devs] == ["amdgpu", "i915", "xe", "intel_vpu", "panthor",
                                           "cyclegpu", "simaccel", "badgpu", "orphan"], devs
amd = {p["pid"]: p for p in devs[0]["processes"]}
assert amd[200]["clients"] == 1 and amd[201]["clients"] == 1, amd
assert amd[200]["memory_bytes"] == {"cpu": 0, "gtt": 2 << 20, "vram": 1 << 30}, amd[200]
assert amd[201]["memory_bytes"] == {"vram": 512 << 20, "gtt": 4 << 20, "cpu": 0}, amd[201]
sim = devs[6]["processes"][0]
assert sim["client_name"] == "mytrainer" and sim["engine_copy_ns"] == 100000000, sim
xe = devs[2]["processes"][0]["memory_bytes"]
assert xe["vram0"] == 23992 << 10 and xe["gtt"] == 192 << 10, xe
EOF
"$smi" --bogus >/dev/null 2>&1
check "refuses a bad option with 64" [ $? -eq 64 ]
"$smi" dmon -d x >/dev/null 2>&1
check "refuses a delay that is no number with 64" [ $? -eq 64 ]
"$smi" dmon pmon >/dev/null 2>&1
check "refuses dmon and pmon at once with 64" [ $? -eq 64 ]
ACCEL_SMI_PROC=$tmp/none "$smi" >/dev/null 2>"$tmp/err"
check "exits 1 without any device" [ $? -eq 1 ]

# --- more processes than accel-smi keeps: said on stderr, CSV kept whole
for pid in $(seq 1000 1600); do
	process "$tmp/many" "$pid" busy
	sed "s/^drm-client-id:.*/drm-client-id:\t$pid/" "$fixtures/simaccel-0.txt" \
		>"$tmp/many/$pid/fdinfo/3"
done
ACCEL_SMI_PROC=$tmp/many "$smi" --query-gpu=index,processes --format=csv,noheader \
	-d 0 >"$tmp/csv" 2>"$tmp/err"
check "says on stderr that processes past its table are left out" has "left out" "$tmp/err"
check "keeps its CSV whole when processes are left out" \
	[ "$(grep -Evc '^[0-9]+, [0-9]+$' "$tmp/csv")" -eq 0 ]
ACCEL_SMI_PROC=$tmp/t1 "$smi" --query-gpu=index --format=csv -d 0 >/dev/null 2>"$tmp/err"
check "says nothing of left-out processes when none are" [ ! -s "$tmp/err" ]

# --- figures at the top of 64 bits: sums and units stop there, never wrap
for pid in 700 701; do
	process "$tmp/huge" "$pid" huge
	sed "s/^drm-client-id:.*/drm-client-id:\t$pid/; s/^drm-total-vram:.*/drm-total-vram:\t18446744073709551615/" \
		"$fixtures/simaccel-0.txt" >"$tmp/huge/$pid/fdinfo/3"
done
ACCEL_SMI_PROC=$tmp/huge "$smi" --query-gpu=memory.used --format=csv,noheader -d 0 >"$tmp/csv"
check "memory.used at the top of 64 bits neither wraps nor rounds to 0" \
	has "^17592186044416 MiB$" "$tmp/csv"

# --- libaccel's pools: a stale file, then a live process on cpu
mkdir -p "$tmp/stats"
printf '# libaccel pools: device reserved allocated active (bytes)\ncpu:0 4194304 2097152 3145728\n' \
	>"$tmp/stats/260"
cp "$tmp/stats/260" "$tmp/stats/999"		# no process 999 in the tree
cp "$tmp/stats/260" "$tmp/stats/250"		# no lock held: its process execed
mkfifo "$tmp/stats/230"				# planted by another user
ln -s /dev/zero "$tmp/stats/220"
# what a process running libaccel holds on its file while it lives
# (the lock on a descriptor the sleep inherits: killing it frees both,
# and leaves no child holding this script's output open)
hold_shared_lock() { exec 9<"$1"; flock -s 9; exec sleep 60; }
hold_shared_lock "$tmp/stats/260" &
locker=$!
hold_shared_lock "$tmp/stats/999" &
locker2=$!
for _ in $(seq 50); do ! flock -n -x "$tmp/stats/999" true && break; sleep 0.1; done
ACCEL_STATS_DIR=$tmp/stats ACCEL_SMI_PROC=$tmp/t1 timeout 10 "$smi" pmon -d 0 -c 1 >"$tmp/pmon"
check "pmon reads past a FIFO and a link to a device planted as files" [ $? -eq 0 ]
check "pmon shows a live process's pools" \
	grep -Eq '^cpu:0 +260 trainer +- +- +- +4 +2 +3  -$' "$tmp/pmon"
check "pmon skips the pools of a process gone" [ "$(grep -Ec '^cpu:0 +999 ' "$tmp/pmon")" -eq 0 ]
check "pmon skips a file no process holds locked" [ "$(grep -Ec '^cpu:0 +250 ' "$tmp/pmon")" -eq 0 ]
kill "$locker" "$locker2"
wait "$locker" "$locker2" 2>/dev/null
rm -f "$tmp/stats/260" "$tmp/stats/999" "$tmp/stats/250" "$tmp/stats/230" "$tmp/stats/220"

unset ACCEL_SMI_PROC
ACCEL_STATS_DIR=$tmp/stats ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
	"$hold_pool" 8 "$tmp/ready" &
holder=$!
published() {	# each device's allocated and active bytes: 8 MiB
	[ "$(grep -Ecs '^cpu:[01] [0-9]+ 8388608 8388608$' "$tmp/stats/$holder")" -eq 2 ]
}
# the file is rewritten every 200 ms: the first may be from before the blocks
for _ in $(seq 50); do [ -s "$tmp/ready" ] && published && break; sleep 0.1; done
check "libaccel publishes each device's allocated and active bytes" published
cat "$tmp/stats/$holder"
check "the published file is the process's alone to write" \
	[ "$(stat -c %a "$tmp/stats/$holder")" = 644 ]
ACCEL_STATS_DIR=$tmp/stats "$smi" pmon -d 0 -c 1 >"$tmp/pmon" 2>/dev/null
cat "$tmp/pmon"
check "pmon shows the holder's pools on both devices" \
	[ "$(grep -Ec "^cpu:[01] +$holder hold_pool +- +- +- +[0-9]+ +8 +8  -$" "$tmp/pmon")" -eq 2 ]
ACCEL_STATS_DIR=$tmp/stats "$smi" >"$tmp/table" 2>/dev/null
check "the table shows the holder's pools" \
	grep -Eq "^\| +$holder \| hold_pool +\| cpu:1 +\| +[0-9]+ MiB \| +8 MiB \| +8 MiB \|$" "$tmp/table"
kill -TERM "$holder"
wait "$holder"
check "the holder exits 0 on SIGTERM" [ $? -eq 0 ]
holder=
check "libaccel removes its file at exit" [ -z "$(ls "$tmp/stats")" ]

ACCEL_STATS_DIR=$tmp/stats ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
	"$unload_lib" "$libaccel"
check "a program that unloads libaccel lives on" [ $? -eq 0 ]
check "libaccel removes its file when unloaded" [ -z "$(ls "$tmp/stats")" ]

# A process that goes to another program by exec leaves its file, which
# its lock no longer marks as live
(ACCEL_STATS_DIR=$tmp/stats ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 \
	ACCEL_CPU_MEMORY=1G "$hold_pool" 8 "$tmp/ready3" --exec sleep 30) &
holder=$!
for _ in $(seq 50); do [ "$(cat /proc/$holder/comm 2>/dev/null)" = sleep ] && break; sleep 0.1; done
ACCEL_STATS_DIR=$tmp/stats "$smi" pmon -d 0 -c 1 >"$tmp/pmon" 2>/dev/null
check "a process that execed another program leaves its file" [ -s "$tmp/stats/$holder" ]
check "pmon skips the file of a process that execed another program" \
	[ "$(grep -Ec "^cpu:[01] +$holder " "$tmp/pmon")" -eq 0 ]
kill -TERM "$holder"
wait "$holder" 2>/dev/null
holder=
rm -f "$tmp/stats"/*

# Another user of a shared ACCEL_STATS_DIR links the name the library
# writes beside its file to one of ours: the library must not write
# through the link.
echo precious >"$tmp/victim"
(ln -s "$tmp/victim" "$tmp/stats/$BASHPID.tmp"
 ACCEL_STATS_DIR=$tmp/stats ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 \
	ACCEL_CPU_MEMORY=1G exec "$hold_pool" 8 "$tmp/ready2") &
holder=$!
for _ in $(seq 50); do [ -s "$tmp/ready2" ] && published && break; sleep 0.1; done
check "libaccel publishes past a link planted at its name" published
check "libaccel writes nothing through a link planted at its name" \
	[ "$(cat "$tmp/victim")" = precious ]
kill -TERM "$holder"
wait "$holder"
holder=

checks_done
