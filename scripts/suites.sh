# Sourced by check.sh and check-debug.sh: run suites and count their tests,
# ending with a table of the stages (counts, time and CPU time), the skips
# grouped by reason, the failed tests by stage, and one line
# "N passed, N failed[, N skipped]" from summary.
# Expects T (the tests' build directory) and runs from the top of the tree.
stage_start=$SECONDS run_start=$SECONDS
log=$(mktemp /tmp/accel-check.XXXXXX)
cpu_file=$(mktemp /tmp/accel-cpu.XXXXXX)
stages=$(mktemp /tmp/accel-stages.XXXXXX)
skip_reasons=$(mktemp /tmp/accel-skips.XXXXXX)
failures=$(mktemp /tmp/accel-failures.XXXXXX)
stage_cpu=$(mktemp /tmp/accel-stage-cpu.XXXXXX)
claims=$(mktemp -d /tmp/accel-claims.XXXXXX)
lanes=() lane_pids=()
trap 'rm -rf "$log" "$cpu_file" "$stages" "$skip_reasons" "$failures" "$stage_cpu" "$claims" ${lanes[@]+"${lanes[@]}"}' EXIT

# children_cpu_ms: the CPU time (user and system, in ms) of the finished
# children of this shell, the whole run's at its end: a wall time says
# little where stages run beside each other on two cores. times is a
# builtin, and a command substitution would ask a subshell, so the answer
# is a variable (stage_cpu_ms too).
seconds_ms() {	# "1m2.345s"
	local t=${1%s} min sec
	min=${t%%m*} sec=${t#*m}
	echo $((10#$min * 60000 + 10#${sec%.*} * 1000 + 10#${sec#*.}))
}

children_cpu() {
	local user sys
	times >"$cpu_file"
	{ read -r _; read -r user sys; } <"$cpu_file"
	children_cpu_ms=$(($(seconds_ms "$user") + $(seconds_ms "$sys")))
}

stage_begins() {
	stage_start=$SECONDS
	: >"$stage_cpu"
}

# A stage's command, in a subshell that leaves what it and its children
# used in $stage_cpu: the shell's own count of its children would take in
# another lane's, whenever that ends and is reaped.
timed() {
	( "$@"; rc=$?; times >"$stage_cpu"; exit $rc )
}

# stage_cpu_ms: the CPU time (ms) of the stage that timed() ran.
stage_cpu_used() {
	local u s cu cs
	stage_cpu_ms=0
	{ read -r u s && read -r cu cs; } <"$stage_cpu" || return 0
	stage_cpu_ms=$(($(seconds_ms "$u") + $(seconds_ms "$s") +
			$(seconds_ms "$cu") + $(seconds_ms "$cs")))
}

add() {	# suite passed failed [skipped]
	local line="$1: $2 passed, $3 failed${4:+, $4 skipped} ($((SECONDS - stage_start)) s)"

	stage_cpu_used
	echo "== $line"
	# a stage beside the others says so where they print too
	[ -z "${lane_name:-}" ] || echo "== beside: $line" >&3
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4:-0}" \
		"$((SECONDS - stage_start))" \
		"$((stage_cpu_ms / 1000))" >>"$stages"
}

# Run the stages of function $1 in the background, beside the ones that
# follow, with their own logs: a VM's one vCPU and a host suite each keep
# a core busy. join_lanes prints their output and counts their stages.
beside() {
	local dir

	dir=$(mktemp -d /tmp/accel-lane.XXXXXX)
	lanes+=("$dir")
	echo "== $1 run beside the stages below; their output follows them"
	(
		lane_name=$1 log=$dir/log stages=$dir/stages skip_reasons=$dir/skips
		failures=$dir/failures cpu_file=$dir/cpu stage_cpu=$dir/stage_cpu
		: >"$stages"
		: >"$skip_reasons"
		: >"$failures"
		"$1" >"$dir/out" 2>&1
	) 3>&1 &
	lane_pids+=($!)
}

# Whether this lane is the first to ask for $1 (work that two lanes share).
claim() {
	mkdir "$claims/$1" 2>/dev/null
}

# A stage that either lane may run, run once: by the first to claim it.
host_one() { claim "stage ${1//\//|}" && run_one "$@"; }
host_counted() { claim "stage ${1//\//|}" && run_counted "$@"; }

# provide NAME command...: run what stages of either lane may need, and
# leave whether it succeeded for needs(), which waits for it.
provide() {
	local marker=$claims/provided-${1//\//|} result=failed

	"${@:2}" && result=ok
	echo $result >"$marker.tmp"
	mv "$marker.tmp" "$marker"
	[ $result = ok ]
}
# provided NAME: wait until NAME's provide() is over; 0 if it succeeded,
# 1 if it failed, 2 if the run is over (interrupted) and it will not come
provided() {
	local marker=$claims/provided-${1//\//|}

	while [ ! -e "$marker" ]; do
		[ -d "$claims" ] || return 2
		sleep 1
	done
	[ "$(cat "$marker")" = ok ]
}
needs() {	# name, command...
	local rc

	provided "$1"
	rc=$?
	[ $rc -ne 1 ] || echo "no $1: it failed"
	[ $rc -eq 0 ] && "${@:2}"
}

join_lanes() {
	local i

	for i in "${!lanes[@]}"; do
		wait "${lane_pids[$i]}"
		echo
		echo "== the output of the stages run beside"
		cat "${lanes[$i]}/out"
		cat "${lanes[$i]}/stages" >>"$stages"
		cat "${lanes[$i]}/skips" >>"$skip_reasons"
		cat "${lanes[$i]}/failures" >>"$failures"
	done
}

# The reason of each skipped test in the log of a stage: kselftest's and
# the libaccel suite's TAP ("ok N name # SKIP reason", the suite's reason
# on its "#   SKIP: reason" line before, "1..0 # SKIP reason" for a whole
# suite), pytest's -rs lines (SKIPPED).
note_skips() {
	awk '
	{ sub(/\r$/, "") }	# the serial console of a VM ends lines with CR LF
	/^#   SKIP: / { last = substr($0, index($0, "SKIP: ") + 6); next }
	/^1\.\.0 # SKIP / { print substr($0, 13); next }	# a whole suite
	/^ok [0-9]+ .* # SKIP/ {
		r = $0; sub(/.* # SKIP */, "", r)
		if (r == "") r = last
		print (r == "" ? "(no reason given)" : r); last = ""
	}
	/^SKIPPED \[[0-9]+\] / {
		n = $2; gsub(/[][]/, "", n); r = $0; sub(/^SKIPPED \[[0-9]+\] [^ ]*: /, "", r)
		for (i = 0; i < n; i++) print r
	}' "$log" | sed -E 's/[[:space:]]+$//' >>"$skip_reasons"
}

# The failed tests in the log of stage $1, or the stage itself where its
# log names none (a crash, a time limit, a kernel warning), for the end of
# the summary: the tail of a long run is what a CI page shows.
note_failures() {
	stage=$1 awk '
	BEGIN { stage = ENVIRON["stage"] }
	{ sub(/\r$/, "") }
	report > 0 { report--; print stage ": " $0; next }
	/^vm\$ / { command = substr($0, 5) }
	# what ended a VM run, never left out
	/^vm: command failed/ { print stage ": " $0 ": " command; n++; next }
	/^vm-run: FAIL/ {
		print stage ": " $0; n++
		if (/bug report/) report = 3	# vm-run prints three lines of it
		next
	}
	/^not ok[: ]/ && toupper($0) !~ /# (SKIP|TODO)/ || /^(FAILED|ERROR) / {
		if (++tests <= 20) print stage ": " $0
		n++
	}
	END {
		if (!n) print stage ": (see its output above)"
		if (tests > 20) print stage ": and " tests - 20 " more failed tests"
	}' "$log" >>"$failures"
}

# A suite whose last line is "N passed, N failed[, N skipped]"; a crash
# counts as one failure.
run_counted() {
	local name=$1 rc p f s
	shift
	stage_begins
	timed "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	note_skips
	if read -r p f s < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/p' "$log" | tail -n 1); then
		[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	else
		p=0 f=1 s=0
	fi
	[ "$f" -eq 0 ] || note_failures "$name"
	add "$name" "$p" "$f" "${s:-0}"
}

# A program that is one test: its exit status decides.
run_one() {
	local name=$1
	shift
	stage_begins
	if timed "$@"; then
		add "$name" 1 0
	else
		echo "$name: (see its output above)" >>"$failures"
		add "$name" 0 1
	fi
}

# A VM run: kselftest totals, "ok:"/"not ok" lines of scripts, and the run
# itself (boot, kernel log, time limit) as one more test.
run_vm() {
	local name=$1 rc p f s ok nok
	shift
	stage_begins
	timed scripts/vm-run.sh "$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	note_skips
	p=0 f=0 s=0
	while read -r tp tf ts; do
		p=$((p + tp)) f=$((f + tf)) s=$((s + ts))
	done < <(sed -nE 's/^# Totals: pass:([0-9]+) fail:([0-9]+) xfail:[0-9]+ xpass:[0-9]+ skip:([0-9]+) error:([0-9]+).*/\1 \2 \3/p' "$log")
	ok=$(grep -c '^ok: ' "$log")
	nok=$(grep -c '^not ok: ' "$log")
	p=$((p + ok + (rc == 0 ? 1 : 0)))
	f=$((f + nok + (rc != 0 ? 1 : 0)))
	[ "$f" -eq 0 ] || note_failures "$name"
	add "$name" "$p" "$f" "$s"
}

# The stages, the skips by reason, and the last line of a run; the exit
# status says whether anything failed.
summary() {
	echo
	echo "== Summary"
	awk -F '\t' '
	{ name[NR] = $1; row[NR] = $0; if (length($1) > w) w = length($1) }
	END {
		printf "%-*s %7s %7s %8s %8s %8s\n", w, "stage", "passed", "failed", "skipped", "seconds", "CPU-s"
		for (i = 1; i <= NR; i++) {
			split(row[i], f, "\t")
			printf "%-*s %7d %7d %8d %8d %8d\n", w, f[1], f[2], f[3], f[4], f[5], f[6]
		}
	}' "$stages"
	if [ -s "$skip_reasons" ]; then
		echo
		echo "== Skipped, by reason"
		sort "$skip_reasons" | uniq -c | sort -rn
	fi
	if [ -s "$failures" ]; then
		echo
		echo "== Failed, by stage"
		cat "$failures"
	fi
	echo
	children_cpu
	echo "== $((SECONDS - run_start)) s in all, $((children_cpu_ms / 1000)) CPU-s"
	awk -F '\t' '{ p += $2; f += $3; s += $4 }
	END {
		printf "%d passed, %d failed%s\n", p, f, s ? ", " s " skipped" : ""
		exit f > 0
	}' "$stages"
}
