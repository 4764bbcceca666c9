#!/bin/sh
# Turn on the kernel's fault injection for the tasks that ask for it
# (/proc/PID/make-it-fail, as ioctl_fuzz --kernel-faults does): failslab and
# fail_page_alloc fail 1% of their allocations, sleeping ones included.
dbg=/sys/kernel/debug
for f in failslab fail_page_alloc; do
	[ -d "$dbg/$f" ] || { echo "not ok: faults.sh: no $dbg/$f (a kernel without fault injection)"; exit 1; }
	echo 1 >"$dbg/$f/probability"
	echo 1 >"$dbg/$f/interval"
	echo -1 >"$dbg/$f/times"
	echo 0 >"$dbg/$f/space"
	echo 1 >"$dbg/$f/verbose"
	echo Y >"$dbg/$f/task-filter"
	echo N >"$dbg/$f/ignore-gfp-wait"
done
echo N >"$dbg/fail_page_alloc/ignore-gfp-highmem"
echo "ok: fault injection armed for tasks that ask for it"
