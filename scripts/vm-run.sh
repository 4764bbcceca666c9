#!/bin/bash
# Boot Debian's kernel on the QEMU built with the accel device and run
# commands in the guest.
#
# Usage: scripts/vm-run.sh [options] [--] 'command' ...
#   --devices N       accel devices, each behind its own pcie-root-port (1):
#                     device i has the id acc<i>, its port rp<i>
#   --vram SIZE       vram-size of every device (256M)
#   --props PROPS     more accel-pci properties, comma-separated
#   --iommu           add an Intel vIOMMU and boot with intel_iommu=on and
#                     iommu.strict=1 (unmaps take effect at once): a DMA
#                     fault it reports fails the run
#   --expect-dma-faults  a test provokes DMA faults: they do not fail the run
#   --slub-debug      boot with slub_debug=FZPU
#   --hung-task SECS  report a task in uninterruptible sleep for SECS seconds
#                     (kernel.hung_task_timeout_secs; the report fails the run)
#   --no-driver       do not insmod the driver before the commands
#   --file SRC[:DST]  copy SRC into the guest (default /opt/accel/NAME)
#   --out DIR         share the host folder DIR with the guest, writable, at
#                     /out (9p over virtio): how files come back out
#   --host-root       share the host's root, read-only, at /host (9p), with
#                     the guest's /dev, /proc, /sys and a /tmp of its own
#                     mounted in it: the command 'in-host CMD...' runs CMD
#                     chrooted there, in this tree's folder, with the host's
#                     programs and libraries (Python, its modules)
#   --timeout SECS    kill the VM after SECS seconds (300)
#   --memory SIZE     guest RAM (1G)
#   --smp N           guest CPUs (2)
#   --kernel PATH     boot this kernel image instead of the distribution's
#   --module PATH     load this driver module instead of the tree's
#                     simaccel.ko (in the guest: /opt/accel/NAME.ko)
#   --trace PATTERN   enable QEMU trace events (repeatable), as -trace does:
#                     --trace 'accel_*' prints the device's on stderr
#   --tcg             emulate the CPU even where KVM is usable
#   --injected-faults the guest injects allocation failures: the kernel's
#                     reports of failed allocations (a stack dump each) are
#                     expected, not bugs
#   --qmp             give QEMU a QMP socket, and the guest a way to send
#                     commands on it: a line of JSON written to
#                     /dev/accel-qmp (the guest's ttyS2) is sent as a QMP
#                     command, and its reply ({"return": ...} or
#                     {"error": ...}) comes back there as a line
#                     (scripts/vm-qmp.py relays them and logs each on
#                     stderr). HMP commands go through human-monitor-command,
#                     as 'pcie_aer_inject_error acc0 MALF_TLP' does.
#
# The guest runs the commands in order from /opt/accel, prints their
# output on the serial console, and powers off. The exit status is the
# first failing command's status (0 if all passed). The run fails if the
# kernel log shows a WARN, BUG, oops, KASAN or similar report (an RCU
# stall panics the guest), if the guest does not finish in time, or if QEMU
# ends badly. A boot that QEMU's TCG failed before any command (a vCPU that
# stopped taking interrupts, an abort in iotlb_to_section) boots once more.
# QEMU=PATH runs another build of QEMU (a benchmark's baseline) instead of
# build/qemu-system-x86_64.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
devices=1 vram=256M props="" iommu=0 slub=0 hung_task="" driver=1 timeout=300 memory=1G smp=2
kernel="" module="" injected=0 dma_faults_ok=0 kvm=1 outdir="" host_root=0 qmp=0
files=() traces=()
while [ $# -gt 0 ]; do
	case $1 in
	--devices) devices=$2; shift 2 ;;
	--vram) vram=$2; shift 2 ;;
	--props) props=,$2; shift 2 ;;
	--iommu) iommu=1; shift ;;
	--slub-debug) slub=1; shift ;;
	--hung-task) hung_task=$2; shift 2 ;;
	--no-driver) driver=0; shift ;;
	--file) files+=("$2"); shift 2 ;;
	--out) outdir=$(cd "$2" && pwd); shift 2 ;;
	--host-root) host_root=1; shift ;;
	--timeout) timeout=$2; shift 2 ;;
	--memory) memory=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--module) module=$2; shift 2 ;;
	--trace) traces+=(-trace "$2"); shift 2 ;;
	--tcg) kvm=0; shift ;;
	--injected-faults) injected=1; shift ;;
	--expect-dma-faults) dma_faults_ok=1; shift ;;
	--qmp) qmp=1; shift ;;
	--) shift; break ;;
	-*) echo "vm-run: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done

[ -f "$top/build/kernel.env" ] || "$top/scripts/fetch-kernel.sh" >/dev/null
# shellcheck source=/dev/null
. "$top/build/kernel.env"
VMLINUZ=${kernel:-$VMLINUZ}
module=${module:-$top/build/simaccel/simaccel.ko}
qemu=${QEMU:-$top/build/qemu-system-x86_64}
[ -x "$qemu" ] || { echo "vm-run: $qemu missing: run 'make qemu'" >&2; exit 2; }
[ $driver -eq 0 ] || [ -f "$module" ] ||
	{ echo "vm-run: $module missing: run 'make driver'" >&2; exit 2; }

work=$(mktemp -d /tmp/accel-vm.XXXXXX)
trap 'rm -rf "$work"' EXIT

make_initramfs() {
	local root=$work/root f src dst

	mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,opt/accel}
	cp /bin/busybox "$root/bin/busybox"
	for f in "${files[@]}"; do
		src=${f%%:*}
		dst=/opt/accel/$(basename "$src")
		[ "$src" = "$f" ] || dst=${f#*:}
		mkdir -p "$root$(dirname "$dst")"
		cp -r "$src" "$root$dst"
	done
	if [ $driver -eq 1 ]; then
		cp "$module" "$root/opt/accel/"
		basename "$module" >"$root/opt/accel/.load-driver"
		mkdir -p "$root/opt/accel/kmods"
		# the kernel's modules, where the driver depends on any
		[ -z "${KMODS:-}" ] || [ -z "$(/sbin/modinfo -F depends "$module")" ] ||
			cp "$KMODS"/* "$root/opt/accel/kmods/"
	fi
	# the 9p client: built into a kernel of --kernel (build-debug-kernel.sh)
	if { [ -n "$outdir" ] || [ $host_root -eq 1 ]; } && [ -z "$kernel" ]; then
		mkdir -p "$root/opt/accel/kmods-9p"
		cp "$KMODS_9P"/* "$root/opt/accel/kmods-9p/"
	fi
	[ -z "$outdir" ] || touch "$root/opt/accel/.mount-out"
	[ $qmp -eq 0 ] || touch "$root/opt/accel/.qmp"
	if [ $host_root -eq 1 ]; then
		echo "$top" >"$root/opt/accel/.mount-host"
		cat >"$root/opt/accel/in-host" <<EOT
#!/bin/sh
# CMD... chrooted into the host's root, in the tree's folder
exec chroot /host /bin/sh -c 'cd "\$0" && exec "\$@"' "$top" "\$@"
EOT
		chmod +x "$root/opt/accel/in-host"
	fi
	printf '%s\n' "$@" >"$root/opt/accel/.commands"
	cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/opt/accel:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t debugfs debugfs /sys/kernel/debug
# the port on which QEMU's QMP takes the guest's commands (--qmp)
[ ! -f /opt/accel/.qmp ] || ln -s ttyS2 /dev/accel-qmp
echo "vm: booted in $(cut -d' ' -f1 /proc/uptime) s"
# through the kernel's log, which reaches the console even where the serial
# port's interrupts do not: whatever the kernel reports after this line may
# come of the modules and commands the guest runs (boot_failure)
echo "vm: init starts the modules and commands" >/dev/kmsg
cd /opt/accel
rc=0
load_modules() {	# the modules of a folder, in its order
	local m
	for m in $(cat "$1/order" 2>/dev/null); do
		insmod "$1/$m" || { echo "vm: insmod $m failed"; return 1; }
	done
}
load_driver() {	# the kernel's modules it needs, in order, then the driver
	local ko
	load_modules kmods || return 1
	ko=$(cat .load-driver)
	# A device suspends only after a minute idle: each suspend and resume
	# turns its BARs' decoding off and on, and QEMU 10's multi-threaded
	# TCG can abort (iotlb_to_section) when the memory map changes under
	# a vCPU's access. The power management tests set their own delay.
	insmod "/opt/accel/$ko" autosuspend_ms=60000 ||
		{ echo "vm: insmod $ko failed"; return 1; }
}
mount_9p() {	# tag, where, options
	{ [ -d /sys/module/9p ] || [ ! -d kmods-9p ] || load_modules kmods-9p; } &&
		mkdir -p "$2" &&
		mount -t 9p -o "trans=virtio,version=9p2000.L,msize=512000$3" "$1" "$2" ||
		{ echo "vm: cannot mount $2"; return 1; }
}
# The host's root is read-only in the guest, and its system's files stay as
# they are while the VM runs: the guest keeps what it read of them in its
# page cache (cache=loose); without, every Python that imports torch reads
# its libraries over 9p again (98 s an import under TCG, against 59 s and
# then 39 s). The tree, which the host may write meanwhile (make check's
# other lane), is read through.
mount_host() {	# the host's root, with the guest's own system folders in it
	local tree
	tree=/host$(cat .mount-host)
	mount_9p hostroot /host ,ro,cache=loose && mount --bind /dev /host/dev &&
		mount -t proc proc /host/proc && mount -t sysfs sys /host/sys &&
		mount -t tmpfs tmp /host/tmp &&
		# the tree on its own, in case the tmpfs hides it (a clone in /tmp)
		mount_9p tree "$tree" ,ro
}
if [ -f .mount-out ] && ! mount_9p out /out ""; then
	rc=1
fi
if [ $rc -eq 0 ] && [ -f .mount-host ] && ! mount_host; then
	rc=1
fi
if [ $rc -eq 0 ] && [ -f .load-driver ] && ! load_driver; then
	rc=1
fi
while [ $rc -eq 0 ] && read -r cmd <&3; do
	echo "vm\$ $cmd"
	t0=$(cut -d' ' -f1 /proc/uptime)
	sh -c "$cmd" </dev/null
	r=$?
	echo "vm: took $(awk -v t0="$t0" '{ printf "%.1f", $1 - t0 }' /proc/uptime) s"
	if [ $r -ne 0 ]; then
		echo "vm: command failed with status $r"
		[ $rc -ne 0 ] || rc=$r
	fi
done 3<.commands
[ ! -f .mount-out ] || umount /out
dmesg >/dev/ttyS1
echo "ACCEL-VM-EXIT=$rc"
poweroff -f
INIT
	chmod +x "$root/init"
	(cd "$root" && find . | cpio -o -H newc --quiet) >"$work/initrd"
}

build_qemu_args() {
	# a stall of RCU panics the guest once init starts: the run ends then,
	# not at its time-out (watch_boot sees those before); the kernel's log
	# keeps the whole run, many OOM reports included, for the verdict
	local append="console=ttyS0 loglevel=5 panic=-1 rdinit=/init sysctl.kernel.panic_on_rcu_stall=1 log_buf_len=8M"
	local i

	args=(-machine q35)
	# KVM where this user can use it and the CPU has virtualization
	# extensions (some sandboxes offer a /dev/kvm whose guests then die of
	# "KVM internal error"); QEMU falls back to the next -accel if KVM
	# cannot start.
	if [ $kvm -eq 1 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] &&
	   grep -qwE 'vmx|svm' /proc/cpuinfo; then
		args+=(-accel kvm)
	fi
	args+=(-accel tcg,thread=multi -cpu max -smp "$smp" -m "$memory"
	      -display none -no-reboot -nodefaults
	      -L /usr/share/qemu -L /usr/share/seabios
	      -kernel "$VMLINUZ" -initrd "$work/initrd"
	      -serial stdio -serial "file:$work/dmesg")
	if [ $iommu -eq 1 ]; then
		args+=(-device intel-iommu,intremap=off)
		append="$append intel_iommu=on iommu.passthrough=0 iommu.strict=1"
	fi
	[ $slub -eq 0 ] || append="$append slub_debug=FZPU"
	[ -z "$hung_task" ] ||
		append="$append sysctl.kernel.hung_task_timeout_secs=$hung_task"
	[ -z "$outdir" ] ||
		args+=(-fsdev "local,id=out,path=$outdir,security_model=none"
		       -device virtio-9p-pci,fsdev=out,mount_tag=out)
	[ $host_root -eq 0 ] ||
		args+=(-fsdev "local,id=hostroot,path=/,security_model=none,readonly=on"
		       -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
		       -fsdev "local,id=tree,path=$top,security_model=none,readonly=on"
		       -device virtio-9p-pci,fsdev=tree,mount_tag=tree)
	[ $qmp -eq 0 ] ||
		args+=(-qmp "unix:$work/qmp.sock,server=on,wait=off"
		       -chardev "socket,id=qmpguest,path=$work/qmp-guest.sock,server=on,wait=off"
		       -serial chardev:qmpguest)
	# Root ports of 5 GT/s: after a secondary bus reset (PCI error recovery)
	# Linux waits for Data Link Layer Link Active behind a faster port,
	# which QEMU's root port sets only when a device is plugged, so the
	# recovery failed once the device's PM capability gave it a delay.
	for i in $(seq 0 $((devices - 1))); do
		args+=(-device "pcie-root-port,id=rp$i,bus=pcie.0,chassis=$((i + 1)),x-speed=5"
		       -device "accel-pci,id=acc$i,bus=rp$i,vram-size=$vram$props")
	done
	args+=("${traces[@]}" -append "$append")
}

# Lines that mean the kernel found a bug; with a vIOMMU, a DMA fault too
# (the device reached memory that was not, or no longer, mapped for it).
dma_fault_re='DMAR: \[(DMA (Read|Write)|INTR-REMAP)|DMAR: DRHD: handling fault'
# init's mark in the kernel's log, and the first line of RCU's stall report
init_mark='vm: init starts the modules and commands'
rcu_stall_re='rcu: INFO: .*detected .*stall'
kernel_bug_re='WARNING:|BUG:|BUG [a-z0-9_-]+ \(|Oops|KASAN|UBSAN|general protection fault|Kernel panic|kernel BUG|refcount_t:|list_(add|del) corruption|INFO: task .* blocked|'$rcu_stall_re'|Call Trace:'

run_qemu() {
	local start watcher

	start=$(date +%s.%N)
	rm -f "$work/qemu.pid" "$work/stopped" "$work/watched"
	: >"$work/console"
	if [ $qmp -eq 1 ]; then
		# it waits for QEMU's sockets, and ends when QEMU closes them
		python3 "$top/scripts/vm-qmp.py" "$work/qmp.sock" "$work/qmp-guest.sock" &
		relay=$!
		# (gone already when QEMU exited normally)
		trap 'kill "$relay" 2>/dev/null || true; rm -rf "$work"' EXIT
	fi
	# (its output elsewhere: vm-run's readers wait for none of it)
	watch_boot </dev/null >/dev/null 2>&1 &
	watcher=$!
	set +e
	timeout -s KILL "$timeout" "$qemu" "${args[@]}" -pidfile "$work/qemu.pid" \
		</dev/null 2>&1 | tee "$work/console"
	qemu_rc=${PIPESTATUS[0]}
	kill "$watcher"
	wait "$watcher"
	# a relay still waiting for a QEMU that died early would meet the next
	[ $qmp -eq 0 ] || { kill "$relay" && wait "$relay"; } 2>/dev/null
	set -e
	echo "vm-run: VM ran for $(echo "$(date +%s.%N) - $start" | bc | cut -c1-5) s"
}

# QEMU's multi-threaded TCG fails now and then early in the boot, in two
# ways. It stops delivering a vCPU's interrupts (its timer, and the serial
# port's, routed to it): the boot hangs, and RCU's stall report shows that
# CPU idle in HLT and its timer overdue. Or a vCPU's access races the
# update of the memory map as the kernel sizes the PCI BARs, and QEMU aborts
# on iotlb_to_section's assertion. Where either comes with no other report
# before it, and init never wrote its mark (it loads no module and runs no
# command before), no code under test ran and nothing was printed that a
# second boot would count twice. Prints what failed.
boot_failure() {	# the console
	# (the pattern through the environment: awk -v would read its \( as "(")
	bug=$kernel_bug_re mark=$init_mark stall_re=$rcu_stall_re awk '
		$0 ~ ENVIRON["mark"] { no = 1; exit }
		found { next }
		/iotlb_to_section: Assertion/ {
			what = "QEMU aborted in iotlb_to_section"; found = 1; next
		}
		$0 ~ ENVIRON["stall_re"] { stall = 1; next }
		# the stall report'"'"'s stack dump is no other report
		$0 ~ ENVIRON["bug"] && !(stall && /Call Trace:/) { no = 1; exit }
		stall && /Possible timer handling issue on cpu=/ {
			what = "a vCPU'"'"'s timer stopped"; found = 1
		}
		END { if (no || !found) exit 1; print what }' "$1"
}

# Each second while QEMU runs, until init writes its mark: a boot hung on a
# lost timer would only end at its time-out (kernel.panic_on_rcu_stall takes
# effect only as init starts). QEMU is stopped a second after RCU's stall
# report (which comes in a burst), and $work/stopped says so. Done, it idles
# until vm-run ends, so that its pid is still its own for run_qemu's kill.
# It waits by read's time-out on a FIFO of its own, which no one writes:
# a sleep it started would outlive it, holding the folders it ran in (a
# chroot that make demo ran in, unmounted next) a moment longer.
watch_boot() {
	local stall=0

	[ -p "$work/nap" ] || mkfifo "$work/nap"
	exec 3<>"$work/nap"
	while kill -0 $$ 2>/dev/null; do
		read -r -t 1 -u 3 || true
		# (no pid file before QEMU starts)
		[ ! -e "$work/watched" ] && [ -s "$work/qemu.pid" ] || continue
		if grep -qF "$init_mark" "$work/console"; then
			: >"$work/watched"
		elif grep -qE "$rcu_stall_re" "$work/console"; then
			if [ $stall -eq 1 ]; then
				: >"$work/stopped"
				: >"$work/watched"
				kill -KILL "$(cat "$work/qemu.pid")" || true
			fi
			stall=1
		fi
	done
}

# What failed as the last boot booted, if it is to boot once more: the
# whole console is read again, which a mark printed as the watcher stopped
# QEMU is in.
failed_at_boot() {
	{ [ -e "$work/stopped" ] || [ "$qemu_rc" -ne 137 ]; } &&
		boot_failure "$work/console"
}

[ $dma_faults_ok -eq 1 ] || kernel_bug_re="$kernel_bug_re|$dma_fault_re"
make_initramfs "$@"
build_qemu_args
run_qemu
if failure=$(failed_at_boot); then
	echo "vm-run: $failure while the guest booted, before any command (QEMU's TCG); booting once more" >&2
	run_qemu
	if failure=$(failed_at_boot); then
		echo "vm-run: FAIL: $failure again while the guest booted" >&2
		exit 1
	fi
fi

if [ "$qemu_rc" -eq 137 ] && [ ! -e "$work/stopped" ]; then
	echo "vm-run: FAIL: the guest did not finish within $timeout s" >&2
	exit 124
fi
# The kernel log, less the stack dumps that report no bug: the OOM killer's
# (the fuzzer's HOST buffers are pinned memory charged to the memory cgroup,
# which a small VM's has no limit on: an OOM kill is the contract), those of
# the allocations that failed in a process it had killed (a victim's last
# allocations fail once the reserves it may take are spent), and, with fault
# injection, those of the allocations it failed. Such a report matches only
# on its stack's "Call Trace:" line, which alone is dropped: whatever other
# CPUs print meanwhile stays, and a dump that does not start right after
# the report's line (its CPU line next, then the taint and the hardware's
# name) is kept. The guest's dmesg first, each file on its own: it has every
# level, where the console shows warnings and worse (and what came after the
# dmesg was taken: a panic).
kernel_log() {
	local quiet='invoked oom-killer:' failed='page allocation failure:|vmalloc error:'
	local logs=("$work/console") victims

	[ ! -f "$work/dmesg" ] || logs=("$work/dmesg" "${logs[@]}")
	[ $injected -eq 0 ] || quiet="$quiet|$failed"
	victims=$(sed -nE 's/.*\] (Memory cgroup out of memory|Out of memory): Killed process ([0-9]+) .*/\2/p' \
		"${logs[@]}" | tr '\n' ' ')
	awk -v quiet="$quiet" -v failed="$failed" -v victims="$victims" '
		BEGIN { n = split(victims, v, " "); for (i = 1; i <= n; i++) victim[v[i]] = 1 }
		FNR == 1 { header = failure = dump = 0 }
		# a program'"'"'s output amid the kernel'"'"'s lines (the console) counts
		# for nothing here
		!/\[ *[0-9]+\.[0-9]+\] / { print; next }
		{
			cpu = match($0, /PID: [0-9]+ Comm:/) && /CPU: [0-9]+ UID: [0-9]+ /
			if (cpu && (header || failure &&
				    substr($0, RSTART + 5, RLENGTH - 11) in victim))
				dump = 5
			else if (cpu)
				dump = 0
			header = $0 ~ quiet
			failure = $0 ~ failed
		}
		dump && /Call Trace:/ { dump = 0; next }
		dump { dump-- }
		{ print }' "${logs[@]}"
}

# The first report, with the lines that name its cause: a stack dump's
# header comes before its "CPU: N UID: U PID: P Comm:" line (then come the
# taint and the hardware's name), another report's is its matching line.
# awk reads NUL bytes and bad UTF-8 as they come (grep would call the log
# binary and print nothing).
first_report() {
	bug=$kernel_bug_re awk '
	{ sub(/\r$/, "") }
	/CPU: [0-9]+ UID: [0-9]+ PID: [0-9]+ Comm:/ { cause = prev; cpu = $0 }
	# (reading on: an early exit would end kernel_log by SIGPIPE)
	!shown && $0 ~ ENVIRON["bug"] {
		if (/Call Trace:/ && cpu != "") print cause "\n" cpu "\n" $0
		else print prev2 "\n" prev "\n" $0
		shown = 1
	}
	/<\/TASK>/ { cpu = "" }
	# the kernel'"'"'s lines only: a program'"'"'s output names no cause
	/\[ *[0-9]+\.[0-9]+\] / { prev2 = prev; prev = $0 }'
}

bad=$(kernel_log | first_report)
if [ -n "$bad" ]; then
	echo "vm-run: FAIL: the kernel log shows a bug report:" >&2
	printf '%s\n' "$bad" >&2
	exit 1
fi
result=$(grep -a -o 'ACCEL-VM-EXIT=[0-9]*' "$work/console" | tail -n 1)
if [ -z "$result" ]; then
	echo "vm-run: FAIL: the guest did not report a result (QEMU status $qemu_rc)" >&2
	exit 1
fi
if [ "$qemu_rc" -ne 0 ]; then
	echo "vm-run: FAIL: QEMU ended with status $qemu_rc after the guest reported" >&2
	exit 1
fi
exit "${result#ACCEL-VM-EXIT=}"
