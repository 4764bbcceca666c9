# Sourced by check.sh and check-debug.sh: run suites and count their tests,
# ending with one line "N passed, N failed[, N skipped]" from summary.
# Expects T (the tests' build directory) and runs from the top of the tree.
passed=0 failed=0 skipped=0
log=$(mktemp /tmp/accel-check.XXXXXX)
trap 'rm -f "$log"' EXIT

add() {	# suite passed failed [skipped]
	echo "== $1: $2 passed, $3 failed${4:+, $4 skipped}"
	passed=$((passed + $2))
	failed=$((failed + $3))
	skipped=$((skipped + ${4:-0}))
}

# A suite whose last line is "N passed, N failed[, N skipped]"; a crash
# counts as one failure.
run_counted() {
	local name=$1 rc p f s
	shift
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	if read -r p f s < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/p' "$log" | tail -n 1); then
		[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
		add "$name" "$p" "$f" "${s:-0}"
	else
		add "$name" 0 1
	fi
}

# A program that is one test: its exit status decides.
run_one() {
	local name=$1
	shift
	if "$@"; then add "$name" 1 0; else add "$name" 0 1; fi
}

# A VM run: kselftest totals, "ok:"/"not ok" lines of scripts, and the run
# itself (boot, kernel log, time limit) as one more test.
run_vm() {
	local name=$1 rc p f s ok nok
	shift
	scripts/vm-run.sh "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=0 f=0 s=0
	while read -r tp tf ts; do
		p=$((p + tp)) f=$((f + tf)) s=$((s + ts))
	done < <(sed -nE 's/^# Totals: pass:([0-9]+) fail:([0-9]+) xfail:[0-9]+ xpass:[0-9]+ skip:([0-9]+) error:([0-9]+).*/\1 \2 \3/p' "$log")
	ok=$(grep -c '^ok: ' "$log")
	nok=$(grep -c '^not ok: ' "$log")
	p=$((p + ok + (rc == 0 ? 1 : 0)))
	f=$((f + nok + (rc != 0 ? 1 : 0)))
	add "$name" "$p" "$f" "$s"
}

# The last line of a run; the exit status says whether anything failed.
summary() {
	echo
	echo "$passed passed, $failed failed${skipped:+, $skipped skipped}" | sed 's/, 0 skipped$//'
	[ "$failed" -eq 0 ]
}
