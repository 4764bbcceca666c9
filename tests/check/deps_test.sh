#!/bin/bash
# scripts/deps.sh against its contract, with apt-get, dpkg-query and id
# replaced on PATH by stand-ins that log what they were asked: missing
# packages install as root, or the user is told the command to run as
# root and nothing installs; --say installs nothing and names every missing
# package of every group at once, the backports' too; --beside installs
# while its command runs (each waits for the other to start), waits for
# both whatever either does, Ctrl-C included, shows apt-get's output after
# the command's, and fails if either fails; a deps.sh started while
# another installs (by the command of --beside, say) waits for it, then
# installs nothing more, and a daemon that a package starts does not hold
# the next one up; with nothing missing, apt-get is not run.
# Prints "ok: ..." or "not ok: ..." per check, and "N passed, N failed" last.
#
#   tests/check/deps_test.sh   (from the top of the tree)
set -uo pipefail
deps=$(pwd)/scripts/deps.sh
tmp=$(mktemp -d /tmp/accel-deps-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../checks.sh"

mkdir -p "$tmp/bin"
# installed: the packages listed in $tmp/installed
cat >"$tmp/bin/dpkg-query" <<'EOF'
#!/bin/bash
pkg=${!#}
if grep -qx "$pkg" "$FAKE/installed"; then
	case $* in
	*Version*) printf 'installed %s' "${FAKE_VERSION:-99}" ;;
	*) printf 'installed' ;;
	esac
else
	exit 1
fi
EOF
# install: logs its packages, says so on stdout, marks that it started and
# that it ended, then has them installed; fails with $FAKE_APT_RC (update
# with $FAKE_UPDATE_RC). With $FAKE_APT_WAITS it ends only once the file
# it names is there (10 s at most); with $FAKE_DAEMON it leaves a process
# behind, as a package's script that starts a daemon does. It ignores
# Ctrl-C, as apt-get does while dpkg runs.
cat >"$tmp/bin/apt-get" <<'EOF'
#!/bin/bash
trap '' INT
echo "apt-get $*" >>"$FAKE/apt.log"
[ "$2" = install ] || exit "${FAKE_UPDATE_RC:-0}"
touch "$FAKE/apt-started"
echo "apt-get: unpacking"
for i in $(seq 100); do
	[ -n "${FAKE_APT_WAITS-}" ] && [ ! -e "$FAKE_APT_WAITS" ] || break
	sleep 0.1
done
[ -z "${FAKE_DAEMON-}" ] || { sleep 30 </dev/null >/dev/null 2>&1 & echo $! >"$FAKE/daemon"; }
touch "$FAKE/apt-ended"
pkgs=() skip=0
for a in "${@:2}"; do
	case $skip$a in
	0-o) skip=1 ;;
	1*) skip=0 ;;
	0-*|0install) ;;
	*) pkgs+=("$a") ;;
	esac
done
[ "${FAKE_APT_RC:-0}" -ne 0 ] || printf '%s\n' "${pkgs[@]}" >>"$FAKE/installed"
exit "${FAKE_APT_RC:-0}"
EOF
cat >"$tmp/bin/id" <<'EOF'
#!/bin/bash
echo "${FAKE_UID:-0}"
EOF
chmod +x "$tmp/bin"/*

# A run of deps.sh; its output (both streams) in $tmp/out, its status in $rc
run() {
	clean
	env PATH="$tmp/bin:$PATH" FAKE="$tmp" ACCEL_CACHE="$tmp/cache" timeout 20 "$deps" "$@" \
		>"$tmp/out" 2>&1
	rc=$?
}
clean() {
	rm -f "$tmp/apt.log" "$tmp/apt-started" "$tmp/apt-ended" "$tmp/command-ran" "$tmp/go"
	cp "$tmp/installed.start" "$tmp/installed"
}
# what is installed at the start of each run (the stand-in adds to it)
installed() { printf '%s\n' "$@" >"$tmp/installed.start"; }
apt_asked() { grep -q -- "$1" "$tmp/apt.log" 2>/dev/null; }
apt_not_run() { [ ! -e "$tmp/apt.log" ]; }
said() { grep -q -- "$1" "$tmp/out"; }
line_of() { grep -n -m1 -- "$1" "$tmp/out" | cut -d: -f1; }
before() { [ -n "$(line_of "$1")" ] && [ -n "$(line_of "$2")" ] && [ "$(line_of "$1")" -lt "$(line_of "$2")" ]; }

# fuzz's packages are clang-14 libclang-rt-14-dev lld-14 llvm-14
installed clang-14 lld-14

run fuzz
check "a missing package installs, as root" \
	eval '[ $rc -eq 0 ] && apt_asked "install -y --no-install-recommends -o DPkg::Lock::Timeout=600 libclang-rt-14-dev llvm-14"'
check "an installed package is not asked for" eval '! apt_asked "lld-14"'
check "apt-get waits for dpkg's lock rather than fail at once" apt_asked "DPkg::Lock::Timeout="

FAKE_UID=1000 run fuzz
check "a user not root is told the command to run as root, and it fails" \
	eval '[ $rc -ne 0 ] && said "Run as root" && said "apt-get install -y --no-install-recommends libclang-rt-14-dev llvm-14"'
check "a user not root installs nothing" apt_not_run

installed clang-14 libclang-rt-14-dev lld-14 llvm-14
run fuzz
check "nothing missing runs no apt-get" eval '[ $rc -eq 0 ] && apt_not_run'

installed clang-14 lld-14 sparse
FAKE_UID=1000 run --say fuzz tools
check "--say names every group's missing packages at once, and fails" \
	eval '[ $rc -ne 0 ] && said "llvm-14" && said "dkms man-db groff-base" && ! said " sparse"'
check "--say installs nothing for a user" apt_not_run
run --say fuzz tools
check "--say installs nothing as root, and succeeds" eval '[ $rc -eq 0 ] && apt_not_run'
installed clang-14 libclang-rt-14-dev lld-14 llvm-14
FAKE_UID=1000 run --say fuzz
check "--say with nothing missing succeeds for a user" eval '[ $rc -eq 0 ]'
installed
FAKE_UID=1000 run --say check
check "the group check is make check's own packages" \
	eval 'said "python3-torch" && said "sparse" && said "clang-14" && ! said "python3-dev"'
check "deps.sh refuses an unknown group" eval 'run nosuch; [ $rc -eq 2 ] && said "unknown group nosuch"'

installed clang-14 lld-14
FAKE_UPDATE_RC=100 run fuzz
check "a failed apt-get update fails, and installs nothing" \
	eval '[ $rc -ne 0 ] && ! apt_asked " install "'

# two at once: the second waits for the first's install (the stand-in
# ends once the file go is there), then finds the packages installed
installed clang-14 lld-14
clean
start() { env PATH="$tmp/bin:$PATH" FAKE="$tmp" ACCEL_CACHE="$tmp/cache" "$@" >>"$tmp/out" 2>&1 & }
FAKE_APT_WAITS=$tmp/go start "$deps" fuzz
first=$!
for _ in $(seq 100); do [ -e "$tmp/apt-started" ] && break; sleep 0.1; done
start "$deps" fuzz
second=$!
sleep 1
check "a deps.sh started while another installs waits for it" \
	eval 'kill -0 $second 2>/dev/null && [ "$(grep -c " install " "$tmp/apt.log")" -eq 1 ]'
touch "$tmp/go"
wait $first
rc_first=$?
wait $second
rc_second=$?
check "then it finds the packages installed, and installs nothing more" \
	eval '[ $rc_first -eq 0 ] && [ $rc_second -eq 0 ] && [ "$(grep -c " install " "$tmp/apt.log")" -eq 1 ]'

# a daemon that a package's script starts outlives apt-get
installed clang-14 lld-14
FAKE_DAEMON=1 run fuzz
installed clang-14 lld-14
run fuzz
check "a daemon that apt-get left running holds no later deps.sh up" \
	eval '[ $rc -eq 0 ] && apt_asked " install "'
kill "$(cat "$tmp/daemon")" 2>/dev/null

# --beside: its command waits for apt-get to start, and apt-get for the
# command to have run: either in turn would see the other not started, or over
installed clang-14 lld-14
wait_for_apt="for i in \$(seq 100); do [ -e $tmp/apt-started ] && break; sleep 0.1; done; [ -e $tmp/apt-started ] && [ ! -e $tmp/apt-ended ] && touch $tmp/command-ran && echo 'command: compiled'"
FAKE_APT_WAITS=$tmp/command-ran run --beside "$wait_for_apt" fuzz
check "--beside installs while its command runs" \
	eval '[ $rc -eq 0 ] && [ -e "$tmp/command-ran" ] && apt_asked "install -y --no-install-recommends -o DPkg::Lock::Timeout=600 libclang-rt-14-dev llvm-14"'
check "--beside waits for apt-get to end" test -e "$tmp/apt-ended"
check "--beside shows apt-get's output after its command's" before "command: compiled" "apt-get: unpacking"

FAKE_APT_WAITS=$tmp/command-ran run --beside "$wait_for_apt; exit 3" fuzz
check "--beside fails when its command fails" eval '[ $rc -ne 0 ] && [ -e "$tmp/command-ran" ]'
check "--beside waits for apt-get though its command failed" test -e "$tmp/apt-ended"

FAKE_APT_WAITS=$tmp/command-ran FAKE_APT_RC=100 run --beside "$wait_for_apt" fuzz
check "--beside fails when apt-get fails, and says so" \
	eval '[ $rc -ne 0 ] && [ -e "$tmp/command-ran" ] && said "apt-get failed"'

FAKE_UID=1000 run --beside "touch $tmp/command-ran" fuzz
check "--beside tells a user not root what to run, before its command" \
	eval '[ $rc -ne 0 ] && said "Run as root" && [ ! -e "$tmp/command-ran" ] && apt_not_run'

installed clang-14 libclang-rt-14-dev lld-14 llvm-14
run --beside "touch $tmp/command-ran; exit 4" fuzz
check "--beside with nothing missing runs its command alone, and keeps its failure" \
	eval '[ $rc -ne 0 ] && [ -e "$tmp/command-ran" ] && apt_not_run'
run --beside "touch $tmp/command-ran" fuzz
check "--beside with nothing missing succeeds when its command does" \
	eval '[ $rc -eq 0 ] && [ -e "$tmp/command-ran" ]'

installed clang-14 lld-14
FAKE_UPDATE_RC=100 run --beside "true" fuzz
check "--beside fails when apt-get update fails" eval '[ $rc -ne 0 ] && said "apt-get failed"'

# a deps.sh run by --beside's command, for what is being installed: it
# waits for the install to end (the stand-in ends once it has started),
# then finds the packages there
installed clang-14 lld-14
child="env FAKE_APT_WAITS=$tmp/go $deps fuzz & sleep 1; touch $tmp/go $tmp/command-ran; wait \$!"
FAKE_APT_WAITS=$tmp/go run --beside "$child" fuzz
check "a deps.sh that --beside's command runs waits for its install, and installs nothing more" \
	eval '[ $rc -eq 0 ] && [ "$(grep -c " install " "$tmp/apt.log")" -eq 1 ]'

# Ctrl-C: the process group gets SIGINT, as from a terminal
installed clang-14 lld-14
clean
env --default-signal=INT,TERM PATH="$tmp/bin:$PATH" FAKE="$tmp" ACCEL_CACHE="$tmp/cache" \
	FAKE_APT_WAITS="$tmp/go" setsid "$deps" --beside "touch $tmp/command-ran; sleep 30" fuzz \
	>"$tmp/out" 2>&1 &
deps_pid=$!
for _ in $(seq 100); do [ -e "$tmp/command-ran" ] && [ -e "$tmp/apt-started" ] && break; sleep 0.1; done
kill -INT -- -$deps_pid
sleep 1
check "Ctrl-C during --beside: deps.sh waits for apt-get" kill -0 $deps_pid
touch "$tmp/go"
wait $deps_pid
rc=$?
check "Ctrl-C during --beside: apt-get's output is shown, and deps.sh ends by the signal" \
	eval '[ -e "$tmp/apt-ended" ] && said "apt-get: unpacking" && [ $rc -eq 130 ]'

# the backports (group qemu: meson at least 1.5, python3-pycotap)
qemu_group=$(bash -c '. <(sed -n "/^declare -A group=(/,/^)/p" "$1"); echo ${group[qemu]}' _ "$deps")
installed $qemu_group python3-pycotap
FAKE_UID=1000 FAKE_VERSION=1.0 run --say qemu
check "--say names the backports a user must install" \
	eval '[ $rc -ne 0 ] && said "backports" && said "download meson" && ! said "Missing packages"'
installed
FAKE_UID=1000 run --say qemu
check "--say names the packages and the backports at once" \
	eval '[ $rc -ne 0 ] && said "Missing packages" && said "download meson python3-pycotap"'
installed $qemu_group python3-pycotap
FAKE_UID=1000 FAKE_VERSION=1.0 run qemu
check "a user not root with only a backport missing is told, and it fails" \
	eval '[ $rc -ne 0 ] && said "backports" && apt_not_run'

# make all installs no package of make check's own: they install beside it
all_groups=$(make -s -p FORCE 2>/dev/null | sed -n 's/^DEPS_GROUPS :\?= //p')
check "make all's groups leave make check's test packages out" \
	eval '[[ " $all_groups " == *" python "* ]] && [[ ! " $all_groups " =~ " "(python-tests|tools|fuzz|check)" " ]]'

checks_done
