#!/bin/bash
# scripts/deps.sh against its contract, with apt-get, dpkg-query and id
# replaced on PATH by stand-ins that log what they were asked: missing
# packages install as root, or the user is told the command to run as
# root and nothing installs; --say installs nothing and names every missing
# package of every group at once; --beside installs while its command runs
# (each waits for the other to start), waits for both whatever either
# does, shows apt-get's output after the command's, and fails if either
# fails; with nothing missing, apt-get is not run.
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
	*Version*) printf 'installed 99' ;;
	*) printf 'installed' ;;
	esac
else
	exit 1
fi
EOF
# install: logs its packages, says so on stdout, marks that it started and
# that it ended, fails with $FAKE_APT_RC; with $FAKE_APT_WAITS, it ends
# once --beside's command has run (10 s at most)
cat >"$tmp/bin/apt-get" <<'EOF'
#!/bin/bash
echo "apt-get $*" >>"$FAKE/apt.log"
[ "$2" = install ] || exit 0
touch "$FAKE/apt-started"
echo "apt-get: unpacking"
for i in $(seq 100); do
	[ -n "${FAKE_APT_WAITS-}" ] && [ ! -e "$FAKE/command-ran" ] || break
	sleep 0.1
done
touch "$FAKE/apt-ended"
exit "${FAKE_APT_RC:-0}"
EOF
cat >"$tmp/bin/id" <<'EOF'
#!/bin/bash
echo "${FAKE_UID:-0}"
EOF
chmod +x "$tmp/bin"/*

# A run of deps.sh; its output (both streams) in $tmp/out, its status in $rc
run() {
	rm -f "$tmp/apt.log" "$tmp/apt-started" "$tmp/apt-ended" "$tmp/command-ran"
	env PATH="$tmp/bin:$PATH" FAKE="$tmp" timeout 20 "$deps" "$@" >"$tmp/out" 2>&1
	rc=$?
}
installed() { printf '%s\n' "$@" >"$tmp/installed"; }
apt_asked() { grep -q -- "$1" "$tmp/apt.log" 2>/dev/null; }
apt_not_run() { [ ! -e "$tmp/apt.log" ]; }
said() { grep -q -- "$1" "$tmp/out"; }
line_of() { grep -n -m1 -- "$1" "$tmp/out" | cut -d: -f1; }
before() { [ -n "$(line_of "$1")" ] && [ -n "$(line_of "$2")" ] && [ "$(line_of "$1")" -lt "$(line_of "$2")" ]; }

# fuzz's packages are clang-14 libclang-rt-14-dev lld-14 llvm-14
installed clang-14 lld-14

run fuzz
check "a missing package installs, as root" \
	eval '[ $rc -eq 0 ] && apt_asked "install -y --no-install-recommends libclang-rt-14-dev llvm-14"'
check "an installed package is not asked for" eval '! apt_asked "lld-14"'

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
check "deps.sh refuses an unknown group" eval 'run nosuch; [ $rc -eq 2 ] && said "unknown group nosuch"'

# --beside: its command waits for apt-get to start, and apt-get for the
# command to have run: either in turn would see the other not started, or over
installed clang-14 lld-14
wait_for_apt="for i in \$(seq 100); do [ -e $tmp/apt-started ] && break; sleep 0.1; done; [ -e $tmp/apt-started ] && [ ! -e $tmp/apt-ended ] && touch $tmp/command-ran && echo 'command: compiled'"
FAKE_APT_WAITS=1 run --beside "$wait_for_apt" fuzz
check "--beside installs while its command runs" \
	eval '[ $rc -eq 0 ] && [ -e "$tmp/command-ran" ] && apt_asked "install -y --no-install-recommends libclang-rt-14-dev llvm-14"'
check "--beside waits for apt-get to end" test -e "$tmp/apt-ended"
check "--beside shows apt-get's output after its command's" before "command: compiled" "apt-get: unpacking"

FAKE_APT_WAITS=1 run --beside "$wait_for_apt; exit 3" fuzz
check "--beside fails when its command fails" eval '[ $rc -ne 0 ] && [ -e "$tmp/command-ran" ]'
check "--beside waits for apt-get though its command failed" test -e "$tmp/apt-ended"

FAKE_APT_WAITS=1 FAKE_APT_RC=100 run --beside "$wait_for_apt" fuzz
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

# what make check installs beside make all is what make all does not need
check "make all's groups leave make check's test packages out" \
	eval '! make -s -p FORCE 2>/dev/null | grep -E "^DEPS_GROUPS :?=" | grep -qwE "python-tests|fuzz|tools"'

checks_done
