#!/bin/sh
# Run a command with the kernel's fault injection on for it and its
# children only: failslab and fail_page_alloc fail 1% of their
# allocations, sleeping ones included (task-filter and make-it-fail).
#
#   faults.sh COMMAND [ARG]...
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
echo 1 >/proc/self/make-it-fail
exec "$@"
