#!/bin/bash
# scripts/vm-run.sh's verdicts, against made-up guests: a QEMU stand-in
# (QEMU=) that prints a console from a script per boot.
# - A clean run passes, after one boot.
# - QEMU's TCG failing while the guest boots (a vCPU's lost timer: RCU's
#   stall report with "Possible timer handling issue", the guest panicking
#   or hung; or QEMU aborting on iotlb_to_section's assertion), before
#   init's mark and with no other report before it, boots once more, and
#   fails if it fails again; a hung boot is stopped at once, not at the
#   time-out. The same after init's mark (wherever it comes), or after
#   another report, fails at once, as does a boot that only hangs.
# - The OOM killer's report, and those of allocations that failed in the
#   processes it killed, are no bug reports; an allocation that failed
#   elsewhere is one, shown with the line that names its cause. A report
#   printed amid an OOM report, after one cut short, or after a NUL byte
#   still fails the run; so does QEMU ending badly after the guest's result.
# - The real guest marks where its init starts.
# Prints "ok: ..." or "not ok: ..." per check, and "N passed, N failed" last.
#
#   tests/check/vm_run_test.sh   (from the top of the tree, after make)
set -uo pipefail
tmp=$(mktemp -d /tmp/accel-vm-run-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../checks.sh"

# The stand-in: boot N prints $tmp/console.N (the last one given, past
# them), writes its pid where -pidfile says, sleeps for ever where the
# console holds the line "sleep", aborts where it holds "abort", and prints
# a NUL byte where it holds "nul".
cat >"$tmp/qemu" <<'STANDIN'
#!/bin/bash
dir=$(dirname "$0")
n=$(($(cat "$dir/boots") + 1))
echo $n >"$dir/boots"
printf '%s\n' "$*" >"$dir/args"
while [ $# -gt 0 ]; do
	[ "$1" != -pidfile ] || echo $$ >"$2"
	shift
done
f=$dir/console.$n
[ -f "$f" ] || f=$(ls "$dir"/console.* | sort -t. -k2 -n | tail -n 1)
while IFS= read -r line; do
	case $line in
	sleep) exec sleep 600 ;;
	abort) kill -ABRT $$ ;;
	nul) printf 'raw\0bytes\r\n' ;;
	*) printf '%s\r\n' "$line" ;;
	esac
done <"$f"
STANDIN
chmod +x "$tmp/qemu"

marker='[    1.10] vm: init starts the modules and commands'
# a vCPU's timer lost, as RCU reports it; the guest panics once init is
# about to start (kernel.panic_on_rcu_stall), and hangs before
stall_report='[   23.31] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[   23.31] rcu: 	1-...!: (5 GPs behind) idle=8bd0/0/0x0 softirq=13/15 fqs=1 (false positive?)
[   23.31] rcu: 	(detected by 0, t=5252 jiffies, g=-1139, q=2311 ncpus=2)
[   23.31] NMI backtrace for cpu 1
[   23.32] CPU: 1 UID: 0 PID: 0 Comm: swapper/1 Not tainted 6.12.95+deb12-amd64 #1  Debian 6.12.95-1~bpo12+1
[   23.32] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[   23.33] RIP: 0010:pv_native_safe_halt+0xf/0x20
[   23.33] Call Trace:
[   23.34]  <TASK>
[   23.34]  default_idle+0x9/0x20
[   23.34]  </TASK>
[   23.34] rcu: rcu_preempt kthread timer wakeup didn'"'"'t happen for 5249 jiffies!
[   23.35] rcu: 	Possible timer handling issue on cpu=1 timer-softirq=3'
panic='[   23.40] Kernel panic - not syncing: RCU Stall'
stall="$stall_report
$panic"
hung="$stall_report
sleep"
iotlb_abort="qemu-system-x86_64: ../src/system/physmem.c:2671: iotlb_to_section: Assertion \`section_index < d->map.sections_nb' failed.
abort"
warning='[    1.00] WARNING: CPU: 0 PID: 1 at drivers/pci/probe.c:1 x'
booted="vm: booted in 1.0 s
$marker"
ran="vm\$ true
ok 1 made_up_test
vm: took 0.0 s
ACCEL-VM-EXIT=0"
clean="$booted
$ran"

# an OOM kill as Linux 6.12 reports it (the header, then the stack dump:
# the CPU line, the taint, the hardware), and an allocation that failed in
# the process PID after it
dump_of() {	# PID, then the first function of its stack
	echo "[   76.70] CPU: 1 UID: 0 PID: $1 Comm: ioctl_fuzz Tainted: G           O       6.12.48+deb12-amd64 #1
[   76.70] Tainted: [O]=OOT_MODULE
[   76.70] Hardware name: QEMU Standard PC (Q35 + ICH9, 2009), BIOS 1.16.2-debian-1.16.2-1 04/01/2014
[   76.70] Call Trace:
[   76.70]  <TASK>
[   76.70]  $2+0x5d/0x80
[   76.70]  </TASK>"
}
oom_header='[   76.70] ioctl_fuzz invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0'
oom_killed='[   76.71] Out of memory: Killed process 313 (ioctl_fuzz) total-vm:10240kB, anon-rss:0kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:64kB oom_score_adj:0'
oom_kill="$oom_header
$(dump_of 312 dump_header)
[   76.70] Mem-Info:
$oom_killed"
failed_in() {	# PID
	echo "[   76.73] ioctl_fuzz: page allocation failure: order:0, mode:0x400dc0(GFP_KERNEL_ACCOUNT|__GFP_ZERO), nodemask=(null),cpuset=/,mems_allowed=0"
	dump_of "$1" warn_alloc
}

boot() {	# name, then the consoles of the boots in turn
	local name=$1 i=0 start
	shift
	rm -f "$tmp"/console.*
	echo 0 >"$tmp/boots"
	for c; do
		i=$((i + 1))
		printf '%s\n' "$c" >"$tmp/console.$i"
	done
	start=$SECONDS
	QEMU=$tmp/qemu scripts/vm-run.sh --no-driver --timeout 5 ${with-} -- true \
		2>&1 | cat >"$tmp/$name.out"	# a pipe, as make check reads it
	echo "${PIPESTATUS[0]}" >"$tmp/$name.rc"
	echo $((SECONDS - start)) >"$tmp/$name.secs"
}
rc() { cat "$tmp/$1.rc"; }
boots() { cat "$tmp/boots"; }
said() { grep -qF -- "$2" "$tmp/$1.out"; }
reported() { sed -n '/^vm-run: FAIL/,$p' "$tmp/$1.out" | grep -qF -- "$2"; }

boot clean "$clean"
check "a clean run passes" [ "$(rc clean)" = 0 ]
check "after one boot" [ "$(boots)" = 1 ]
check "the guest is told to panic on an RCU stall" \
	grep -q 'sysctl.kernel.panic_on_rcu_stall=1' "$tmp/args"

boot lost_once "[    2.49] amd_pstate: the _CPC object is not present
$stall" "$clean"
check "a vCPU's timer lost while booting: the guest boots once more" [ "$(boots)" = 2 ]
check "and the second boot's verdict stands" [ "$(rc lost_once)" = 0 ]
check "and vm-run says so" said lost_once "booting once more"
check "and the test's output is there once" \
	[ "$(grep -c '^ok 1 made_up_test' "$tmp/lost_once.out")" = 1 ]

boot hung_once "$hung" "$clean"
check "a boot hung on a lost timer is stopped, and boots once more" \
	[ "$(boots)" = 2 ]
check "and the second boot's verdict stands" [ "$(rc hung_once)" = 0 ]
check "the hung boot stopped well before its time-out" \
	awk '/VM ran for/ { exit !($5 < 4) }' "$tmp/hung_once.out"

with=--qmp boot hung_with_qmp "$hung" "$clean"
check "with a QMP relay too, waiting for the first QEMU's sockets" \
	[ "$(rc hung_with_qmp)" = 0 ]
check "and the run ends promptly" [ "$(cat "$tmp/hung_with_qmp.secs")" -lt 15 ]

boot lost_twice "$hung" "$stall"
check "a timer lost again on the second boot fails" [ "$(rc lost_twice)" != 0 ]
check "with no third boot" [ "$(boots)" = 2 ]
check "and says it failed again" said lost_twice "vm-run: FAIL: a vCPU's timer stopped again"

boot after_init "$marker
$stall"
check "a stall once init loads modules or runs commands fails" [ "$(rc after_init)" != 0 ]
check "with no second boot" [ "$(boots)" = 1 ]
check "and the failure names the stall" reported after_init "rcu: INFO: rcu_preempt detected stalls"

boot mark_after_stall "$stall_report
$marker
ok: a test of the first boot
$panic"
check "a stall before init's mark, the mark after it, fails" \
	[ "$(rc mark_after_stall)" != 0 ]
check "with no second boot to count that test twice" [ "$(boots)" = 1 ]

boot after_report "$warning
$stall"
check "a stall after another report fails" [ "$(rc after_report)" != 0 ]
check "with no second boot either" [ "$(boots)" = 1 ]

boot hung_after_report "$warning
$hung"
check "a boot hung on a lost timer after another report is stopped too" \
	[ "$(rc hung_after_report)" = 1 ]
check "with no second boot, and the report named" reported hung_after_report "WARNING:"

boot report_in_stall "$(echo "$stall_report" | sed '2i [   23.31] BUG: unable to handle page fault for address: 0000000000001000')
$panic"
check "a report inside the stall's fails" [ "$(rc report_in_stall)" != 0 ]
check "with no second boot after it" [ "$(boots)" = 1 ]

boot timed_out "vm: booted in 1.0 s
sleep"
check "a boot that hangs with no sign of the TCG's fails at its time-out" \
	[ "$(rc timed_out)" = 124 ]
check "nor boots a second time" [ "$(boots)" = 1 ]

boot aborted_once "[    2.00] mtrr: your CPUs had inconsistent MTRRdefType settings
$iotlb_abort" "$clean"
check "QEMU aborting on iotlb_to_section while the guest boots: it boots once more" \
	[ "$(boots)" = 2 ]
check "and the second boot's verdict stands, after an abort too" [ "$(rc aborted_once)" = 0 ]
check "and vm-run says what failed" said aborted_once "QEMU aborted in iotlb_to_section"

boot aborted_after_init "$marker
$iotlb_abort"
check "QEMU aborting once init loads modules or runs commands fails" \
	[ "$(rc aborted_after_init)" != 0 ]
check "with no second boot, after an abort too" [ "$(boots)" = 1 ]

boot aborted_after_fault "[    1.00] DMAR: [DMA Read NO_PASID] Request device [01:00.0] fault addr 0x1000 [fault reason 0x06] PTE Read access is not set
$iotlb_abort"
check "QEMU aborting after a DMA fault fails" [ "$(rc aborted_after_fault)" != 0 ]
check "with no second boot after a DMA fault" [ "$(boots)" = 1 ]

boot aborted_after_result "$clean
$iotlb_abort"
check "QEMU aborting after the guest's result fails" [ "$(rc aborted_after_result)" != 0 ]
check "and says so" said aborted_after_result "QEMU ended with status"

boot oom_victim "$booted
$oom_kill
$(failed_in 313)
$ran"
check "an OOM kill, and an allocation that failed in its victim, pass" \
	[ "$(rc oom_victim)" = 0 ]

boot oom_survivor "$booted
$oom_kill
$(failed_in 314)
$ran"
check "an allocation that failed in a process the OOM killer spared fails" \
	[ "$(rc oom_survivor)" != 0 ]
check "as a bug report, after an OOM kill too" \
	said oom_survivor "vm-run: FAIL: the kernel log shows a bug report"

boot no_oom "$booted
$(failed_in 313)
$ran"
check "an allocation that failed with no OOM kill fails" [ "$(rc no_oom)" != 0 ]
check "and the failure names the report's cause, the line before its stack" \
	reported no_oom "ioctl_fuzz: page allocation failure"
check "and its process" reported no_oom "PID: 313 Comm: ioctl_fuzz"

boot killed_by_a_user "$booted
supervisor: Out of memory: Killed process 313 (worker), says a program
$(failed_in 313)
$ran"
check "a program's line of its own that names a killed process excuses nothing" \
	[ "$(rc killed_by_a_user)" != 0 ]

boot program_amid_oom "$booted
$oom_header
ok: a line of a program between the kernel's
$(dump_of 312 dump_header)
$oom_killed
$ran"
check "an OOM report with a program's line inside passes" [ "$(rc program_amid_oom)" = 0 ]

boot amid_oom "$booted
$oom_header
[   76.70] BUG: Bad rss-counter state mm:00000000c0ffee00 type:MM_FILEPAGES val:-16
$(dump_of 312 dump_header)
$oom_killed
$ran"
check "a report printed amid an OOM report fails" [ "$(rc amid_oom)" != 0 ]

boot after_cut_oom "$booted
$oom_header
[   76.70] ** 37 printk messages dropped **
$oom_killed
[   80.00] irq 16: nobody cared (try booting with the \"irqpoll\" option)
$(dump_of 0 __report_bad_irq)
$ran"
check "a stack dump after an OOM report cut short fails" [ "$(rc after_cut_oom)" != 0 ]

boot after_nul "$booted
nul
$ran
$warning"
check "a report after a NUL byte fails" [ "$(rc after_nul)" != 0 ]

# what the rule above reads: the real guest's mark, through the kernel's
# log, before init loads a module or runs a command
scripts/vm-run.sh --timeout 120 -- true >"$tmp/real.out" 2>&1
check "the real guest marks where init starts, before the driver loads" \
	awk '/vm: init starts the modules and commands/ { m = 1 }
	     /simaccel|^vm\$ / { exit !m }' "$tmp/real.out"
check "and passes" [ "$(grep -a -c '^ACCEL-VM-EXIT=0' "$tmp/real.out")" = 1 ]

checks_done
