# The counting the shell tests share, sourced by them: check() runs a
# command and prints "ok: WHAT" or "not ok: WHAT" (WHAT after
# $check_prefix), which scripts/suites.sh counts; checks_done prints
# "N passed, N failed" last and fails if any check did.
passed=0 failed=0
check_prefix=

check() {	# description, then a command that must succeed
	local what=$check_prefix$1
	shift
	if "$@"; then
		echo "ok: $what"
		passed=$((passed + 1))
	else
		echo "not ok: $what"
		failed=$((failed + 1))
	fi
}

checks_done() {
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
}
