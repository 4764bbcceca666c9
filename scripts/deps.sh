#!/bin/bash
# Install the Debian packages a part of the build needs, or say how to.
#
# Usage: scripts/deps.sh <group>...
#        scripts/deps.sh --say <group>...
#        scripts/deps.sh --beside COMMAND <group>...
# Groups: qemu vm driver tests lib python python-tests smi tools debug fuzz,
# and check: what make check needs beyond make all.
# --say installs nothing: where the user is not root and a package is
# missing, it says what to run as root and fails. --beside installs the
# groups' packages while COMMAND (a shell command line) runs, apt-get's
# output after COMMAND's; it fails if either does.
#
# A few packages must be newer than the release has them: those come from its
# backports suite (scripts/apt-derived.sh), downloaded and installed as files,
# so that the machine's apt configuration stays as it is.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}

declare -A group=(
	[qemu]="build-essential dpkg-dev ninja-build meson pkg-config python3 python3-venv
		libglib2.0-dev libpixman-1-dev zlib1g-dev libfdt-dev seabios qemu-system-data"
	[vm]="busybox-static cpio kmod bc dpkg-dev"
	[driver]="build-essential kmod dwarves xz-utils"
	[tests]="build-essential xz-utils pkg-config libdrm-dev"
	[lib]="build-essential pkg-config libdrm-dev libdlpack-dev"
	[python]="python3-dev libdlpack-dev python3-venv python3-pip python3-setuptools
		python3-wheel"
	[python-tests]="python3-numpy python3-pytest python3-torch debootstrap"
	[smi]="build-essential pkg-config libpci-dev pci.ids"
	[tools]="build-essential pkg-config libpci-dev pci.ids dkms man-db groff-base sparse"
	[debug]="build-essential bc bison flex libssl-dev libelf-dev dwarves xz-utils rsync cpio"
	[fuzz]="clang-14 libclang-rt-14-dev lld-14 llvm-14"
)
group[check]="${group[python-tests]} ${group[tools]} ${group[fuzz]}"

# Without the packages these recommend: a third of what make check would
# fetch (desktop themes, systemd, GTK and Qt through PyTorch, the release's
# own kernel headers through dkms), none of it used. What a recommendation
# gave that the build does use is named above: llvm-14, whose
# llvm-symbolizer puts file:line in the sanitizers' reports.
no_recommends=--no-install-recommends
# dpkg's lock may be held a while by another installer (a fresh machine's
# unattended upgrades, say): waited for, not failed on at once
dpkg_wait="-o DPkg::Lock::Timeout=600"
# where the backports' packages are downloaded to be installed as files
backports_debs=$cache/backports-debs

# package=minimum version, from the backports suite. QEMU 10.0 wants meson
# 1.5 or later, and its tests pycotap; configure's venv would take them from
# bundled wheels, which Debian's repacked source does not have.
declare -A backports=(
	[qemu]="meson=1.5 python3-pycotap=0"
)

# Packages of the backports list older than their minimum, by name.
outdated_backports() {
	local entry name min have

	for entry in ${backports[$1]-}; do
		name=${entry%=*} min=${entry#*=}
		have=$(dpkg-query -W -f='${db:Status-Status} ${Version}' "$name" 2>/dev/null || true)
		if [ "${have%% *}" != installed ] ||
		   dpkg --compare-versions "${have#* }" lt "$min"; then
			echo "$name"
		fi
	done
}

# What to run as root, for a user who is not: every missing package at once.
say_backports() {
	echo "Packages needed from $(. /etc/os-release && echo "$VERSION_CODENAME")-backports. Run as root:" >&2
	echo "  mkdir -p $backports_debs && cd $backports_debs && $top/scripts/apt-derived.sh $cache backports apt-get download $* &&" >&2
	echo "  apt-get install -y $no_recommends $(printf './%s_*.deb ' "$@")" >&2
}

say_packages() {
	echo "Missing packages. Run as root:" >&2
	echo "  apt-get update && apt-get install -y $no_recommends $*" >&2
}

install_backports() {
	echo "deps: installing $* from backports with apt-get (under a minute)" >&2
	rm -rf "$backports_debs"
	mkdir -p "$backports_debs"
	(cd "$backports_debs" && "$top/scripts/apt-derived.sh" "$cache" backports \
		apt-get -q download "$@" >&2 9>&-) &&
	DEBIAN_FRONTEND=noninteractive apt-get -q install -y $no_recommends $dpkg_wait \
		"$backports_debs"/*.deb >&2 9>&- &&
	rm -rf "$backports_debs"
}

install_packages() {
	echo "deps: installing $# packages and what they need with apt-get (a minute or two for a few hundred MB): $*" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get -q update >&2 9>&- &&
	apt-get -q install -y $no_recommends $dpkg_wait "$@" >&2 9>&-
}

# The exit status of a child, waited for through the signals this shell
# traps (wait returns early, above 128, when one comes)
wait_for() {	# pid
	local rc

	while :; do
		wait "$1"
		rc=$?
		[ $rc -gt 128 ] && kill -0 "$1" 2>/dev/null || return $rc
	done
}

# apt-get's work is mostly dpkg's, on one core: COMMAND keeps the other
# busy. apt-get holds the lock (fd 9), COMMAND does not: a deps.sh that
# COMMAND runs waits for apt-get, then finds the packages installed.
# Ctrl-C stops COMMAND; apt-get (which ignores it, as does anything run in
# the background here) is waited for, its output shown, and the signal
# passed on, so that nothing is left installing unseen.
install_beside() {	# command, packages
	local command=$1 log apt rc_apt=0 rc_command=0 signal=
	shift

	log=$(mktemp /tmp/accel-deps.XXXXXX)
	echo "deps: installing $# packages with apt-get while the build runs; apt-get's output follows the build's: $*" >&2
	install_packages "$@" </dev/null >"$log" 2>&1 &
	apt=$!
	exec 9>&-
	trap 'signal=INT' INT
	trap 'signal=TERM' TERM
	bash -c "$command" || rc_command=$?
	wait_for $apt || rc_apt=$?
	echo "deps: apt-get's output:" >&2
	cat "$log" >&2
	rm -f "$log"
	[ $rc_apt -eq 0 ] || echo "deps: apt-get failed (above)" >&2
	trap - INT TERM
	[ -z "$signal" ] || kill -s "$signal" $$
	[ $rc_command -eq 0 ] && [ $rc_apt -eq 0 ]
}

missing() {	# groups: the packages not installed, into want and newer
	local g p status

	want=() newer=()
	for g in "$@"; do
		for p in ${group[$g]}; do
			status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
			[ "$status" = installed ] || want+=("$p")
		done
		mapfile -t -O ${#newer[@]} newer < <(outdated_backports "$g")
	done
}

# One deps.sh installs at a time; one that waited sees what the other
# installed. apt-get does not hold the lock itself (9>&-): a daemon that a
# package's script starts would keep it.
lock_installs() {
	mkdir -p "$cache"
	exec 9>"$cache/deps.lock"
	flock 9
}

mode=install command=
case ${1-} in
--say) mode=say; shift ;;
--beside) mode=beside command=${2:?deps.sh: --beside needs a command}; shift 2 ;;
esac
for g in "$@"; do
	[ -n "${group[$g]+x}" ] || { echo "deps.sh: unknown group $g" >&2; exit 2; }
done

missing "$@"
if [ "$(id -u)" -ne 0 ]; then
	[ ${#want[@]} -eq 0 ] || say_packages "${want[@]}"
	[ ${#newer[@]} -eq 0 ] || say_backports "${newer[@]}"
	[ ${#want[@]} -eq 0 ] && [ ${#newer[@]} -eq 0 ] || exit 1
fi
[ $mode != say ] || exit 0
if [ ${#want[@]} -gt 0 ] || [ ${#newer[@]} -gt 0 ]; then
	lock_installs
	missing "$@"
fi
if [ $mode = beside ] && [ ${#want[@]} -gt 0 ]; then
	install_beside "$command" "${want[@]}" || exit
elif [ $mode = beside ]; then
	exec 9>&-
	bash -c "$command" || exit
elif [ ${#want[@]} -gt 0 ]; then
	install_packages "${want[@]}" || exit
fi
[ ${#newer[@]} -eq 0 ] || install_backports "${newer[@]}"
