#!/bin/bash
# make check's runner of stages (scripts/suites.sh) against its contract,
# with stages made up for it: the summary's counts, exit status, skips by
# reason and failed tests (last, where the tail of a CI log shows them);
# each stage's CPU time is its own, not a lane's that ends meanwhile; a
# stage either lane may take runs once; needs() waits for what the other
# lane provides, and fails when that failed; provided() waits for it and
# says whether it failed. Prints "ok: ..." or
# "not ok: ..." per check, and "N passed, N failed" last.
#
#   tests/check/suites_test.sh   (from the top of the tree)
set -uo pipefail
tmp=$(mktemp -d /tmp/accel-suites-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../checks.sh"
has() { grep -qxF -- "$1" "$2"; }
# the summary table's row of stage $1: "passed failed skipped seconds CPU-s"
row() {
	awk -v s="$1" '/^== Summary/ { t = 1; next } t && /^$/ { t = 0 }
		t && substr($0, 1, length(s) + 1) == s " " { print $(NF-4), $(NF-3), $(NF-2), $(NF-1), $NF }' "$2"
}
counts() { row "$@" | cut -d' ' -f1-3; }
# the summary's list of failures
failures() { sed -n '/^== Failed, by stage/,/^$/p' "$1"; }
export -f failures
cpu_of() { row "$@" | cut -d' ' -f5; }

# A run of made-up stages in a shell of its own, as check.sh sources them
# (a hang, such as needs() waiting for ever, fails the check)
run_stages() {	# output file, then the body
	local out=$1
	shift
	tmp=$tmp T=unused timeout 120 bash -c 'source scripts/suites.sh; '"$1" >"$out" 2>&1
}

# busy N: use N s of CPU time (not of wall time: the machine may be busy)
busy() {
	local stat
	while read -r -a stat </proc/$BASHPID/stat; [ $((stat[13] + stat[14])) -lt $(($1 * $(getconf CLK_TCK))) ]; do
		for _ in {1..1000}; do :; done
	done
}
export -f busy

# --- counts, skips, failures, exit status
run_stages "$tmp/mixed" '
run_counted "counted" bash -c "
	echo \"ok 1 a\"
	echo \"#   SKIP: no widget\"
	echo \"ok 2 b # SKIP\"
	echo \"ok 3 c # SKIP no widget\"
	echo \"not ok 4 d\"
	echo \"not ok 5 e # SKIP not counted as a skip here, nor as a failure\"
	echo \"not ok 6 f # skip the directive is case-insensitive\"
	echo \"2 passed, 1 failed, 2 skipped\"; exit 1"
run_counted "crashed" bash -c "echo \"ok 1 a\"; kill -SEGV \$\$"
run_counted "exit without a failure" bash -c "echo \"3 passed, 0 failed\"; exit 2"
run_counted "a whole suite skipped" bash -c "echo \"1..0 # SKIP no gadget\"; echo \"0 passed, 0 failed, 1 skipped\""
run_counted "pytest" bash -c "
	echo \"SKIPPED [2] tests/x.py:3: no gizmo\"
	echo \"FAILED tests/x.py::test_y - assert 1 == 2\"
	echo \"1 passed, 1 failed, 2 skipped\"; exit 1"
run_one "one that passes" true
run_one "one that fails" false
summary'
status=$?
out=$tmp/mixed
check "a run with failures exits non-zero" [ $status -ne 0 ]
check "the last line counts every stage's tests" \
	[ "$(tail -n 1 "$out")" = "7 passed, 5 failed, 5 skipped" ]
check "a suite's own counts are its row" [ "$(counts counted "$out")" = "2 1 2" ]
check "a crash with no count is one failure" [ "$(counts crashed "$out")" = "0 1 0" ]
check "a non-zero exit with no failure counted is one failure" \
	[ "$(counts "exit without" "$out")" = "3 1 0" ]
check "a program that is one test fails by its status" \
	[ "$(counts "one that fails" "$out")" = "0 1 0" ]
check "skips are grouped by reason, the suite's SKIP: line counting" \
	has "      2 no widget" "$out"
check "a whole suite's skip has its reason" has "      1 no gadget" "$out"
check "pytest's skips count as many as it says" has "      2 no gizmo" "$out"
check "failed tests are listed by stage" has "counted: not ok 4 d" "$out"
check "a test skipped with ok or not ok is not a failed one" \
	bash -c "! failures '$out' | grep -q 'not ok [356]'"
check "pytest's failures are listed" \
	has "pytest: FAILED tests/x.py::test_y - assert 1 == 2" "$out"
check "a failure without a test named points at the stage's output" \
	has "crashed: (see its output above)" "$out"
check "a failed one-test stage is listed" \
	has "one that fails: (see its output above)" "$out"
check "the failures come after the skips, before the last line" \
	bash -c "awk '/^== Skipped/ { s = NR } /^== Failed/ { f = NR } END { exit !(s && f > s) }' '$out' &&
		 tail -n 4 '$out' | grep -qxF 'one that fails: (see its output above)'"

# A VM run (run_vm) against a made-up vm-run.sh: a console's CR LF, more
# failed tests than are listed, then what ended the run
mkdir -p "$tmp/tree/scripts"
ln -s "$PWD/scripts/suites.sh" "$tmp/tree/scripts/suites.sh"
cat >"$tmp/tree/scripts/vm-run.sh" <<'END'
#!/bin/bash
{
	echo "vm\$ ./many"
	for i in $(seq 25); do echo "not ok $i case $i"; done
	echo "# Totals: pass:3 fail:25 xfail:0 xpass:0 skip:0 error:0"
	echo "vm\$ ./dies --seed 1"
	echo "vm: command failed with status 137"
} | sed 's/$/\r/'
echo "vm-run: FAIL: the kernel log shows a bug report:"
echo "WARNING: CPU: 0 PID: 1 at somewhere"
echo "Call Trace:"
echo " dump_stack"
exit 1
END
chmod +x "$tmp/tree/scripts/vm-run.sh"
(cd "$tmp/tree" && run_stages "$tmp/vmrun" 'run_vm "a VM run" --devices 1; summary')
out=$tmp/vmrun
check "a VM run's counts are its tests' and the run's" [ "$(counts "a VM run" "$out")" = "3 26 0" ]
check "a VM run lists 20 failed tests, CR LF taken off" has "a VM run: not ok 20 case 20" "$out"
check "and counts the others" has "a VM run: and 5 more failed tests" "$out"
check "and always the command that failed, with its command line" \
	has "a VM run: vm: command failed with status 137: ./dies --seed 1" "$out"
check "and the kernel's bug report" has "a VM run: WARNING: CPU: 0 PID: 1 at somewhere" "$out"
check "once" [ "$(grep -c "a VM run: Call Trace:" "$out")" = 1 ]

run_stages "$tmp/vm" '
run_counted "a VM" bash -c "
	echo \"vm\$ ./first --seed 1\"
	echo \"ok: first\"
	echo \"vm\$ ./second --seed 1\"
	echo \"vm: command failed with status 137\"
	echo \"1 passed, 0 failed\"; exit 137"
summary'
check "a VM's command that failed without a word is listed with its command line" \
	has "a VM: vm: command failed with status 137: ./second --seed 1" "$tmp/vm"

run_stages "$tmp/clean" '
run_counted "fine" bash -c "echo \"4 passed, 0 failed\""
run_one "also fine" true
summary'
status=$?
check "a run without failures exits zero" [ $status -eq 0 ]
check "and lists no failures" bash -c "! grep -q '^== Failed' '$tmp/clean'"
check "and ends with its count" [ "$(tail -n 1 "$tmp/clean")" = "5 passed, 0 failed" ]

# --- CPU time: a lane that burns 3 s and ends during a stage that sleeps
run_stages "$tmp/cpu" '
burner() { run_one "burner" busy 3; touch "$tmp/burnt"; }
beside burner
run_one "sleeper" bash -c "until [ -e \"$tmp/burnt\" ]; do sleep 0.2; done; sleep 1"
run_one "worker" busy 2
join_lanes
summary'
out=$tmp/cpu
check "a stage that sleeps used no CPU time, though a lane ended meanwhile" \
	[ "$(cpu_of sleeper "$out")" = 0 ]
check "a busy stage's CPU time is its own, not the lane's too" \
	[ "$(cpu_of worker "$out")" -ge 2 -a "$(cpu_of worker "$out")" -le 3 ]
check "a lane's stages are in the summary" [ "$(counts burner "$out")" = "1 0 0" ]

# --- stages either lane may take, and what one provides for the other
run_stages "$tmp/lanes" '
stages() {
	host_one "first" true
	host_one "second" true
	host_one "needs what builds slowly" needs "slow thing" true
	host_one "needs what failed" needs "broken thing" true
}
lane() {
	provide "slow thing" sleep 3
	provide "broken thing" false
	stages
}
beside lane
stages
join_lanes
summary'
out=$tmp/lanes
for s in first second "needs what builds slowly" "needs what failed"; do
	check "a stage both lanes ask for runs once: $s" \
		[ "$(grep -c "^$s " "$out")" = 1 ]
done
check "a stage waits for what the other lane provides" \
	[ "$(counts "needs what builds slowly" "$out")" = "1 0 0" ]
check "a stage fails when what it needs failed" \
	[ "$(counts "needs what failed" "$out")" = "0 1 0" ]
check "and says why" has "no broken thing: it failed" "$out"

# --- a lane that waits for what another provides, whether or not it succeeds
run_stages "$tmp/waiting" '
builder() {
	provide "slow thing" bash -c "sleep 3; touch \"$tmp/built\""
	provide "broken thing" false
}
waiter() {
	provided "slow thing"
	run_one "after what was built" bash -c "[ $? -eq 0 ] && [ -e \"$tmp/built\" ]"
	provided "broken thing"
	run_one "after what failed" [ $? -eq 1 ]
}
beside waiter
builder
join_lanes
summary'
out=$tmp/waiting
check "a lane waits for what another provides" \
	[ "$(counts "after what was built" "$out")" = "1 0 0" ]
check "and is told that it failed" [ "$(counts "after what failed" "$out")" = "1 0 0" ]

checks_done
