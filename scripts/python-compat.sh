#!/bin/bash
# The Python module's portability: its suite (tests/python) on the cpu
# backend, with the very build/python/accel.abi3.so built here against
# bookworm's Python 3.11 and NumPy 1.24, under a newer Python and NumPy 2:
# Debian trixie's (3.13 and 2.2), in a chroot. trixie's PyTorch (some 600
# MB of packages) is left out: the tests that need it skip there, and run
# with bookworm's in the suite's other runs.
#
# The chroot is made once, by debootstrap, into the cache (from the mirror
# of this machine's own apt sources), and reused; it takes root. The tree
# is bind-mounted into it at its own path, in a mount namespace of the run
# alone: no mount outlives the run, and removing the chroot never reaches
# through one.
#
# Usage: scripts/python-compat.sh [pytest arguments]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${ACCEL_CACHE:-$HOME/.cache/accel}
suite=trixie
packages=python3,python3-numpy,python3-pytest
root=$cache/python-$suite
# what the chroot was made with, written once it is complete
stamp=$root/.accel-python-compat

# The second part, in the run's own mount namespace: the tree, /proc and
# /dev in the chroot, and the suite there, in an environment of its own.
if [ "${1-}" = --inside ]; then
	shift
	mkdir -p "$root$top"
	mount --bind "$top" "$root$top"
	mount -t proc proc "$root/proc"
	mount --rbind /dev "$root/dev"
	env=(env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
	     PYTHONDONTWRITEBYTECODE=1 PYTHON=/usr/bin/python3
	     ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G)
	chroot "$root" "${env[@]}" python3 -c 'import sys, numpy
print("python-compat: Python", sys.version.split()[0], "and NumPy", numpy.__version__)'
	exec chroot "$root" "${env[@]}" "$top/scripts/pytest-suite.sh" "$@"
fi

# counted as a skipped test (scripts/suites.sh), as the cuda runs without a GPU
if [ "$(id -u)" -ne 0 ]; then
	echo "python-compat: skipped: debootstrap and chroot need root (sudo $0)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 0
fi
[ -e "$top/build/python/accel.abi3.so" ] ||
	{ echo "python-compat: no build/python/accel.abi3.so: make python first" >&2; exit 1; }
"$top/scripts/deps.sh" python python-tests

# The URI of the machine's own entries for its release (bookworm): the
# same archive serves the other suites.
mirror() {
	local codename

	# shellcheck source=/dev/null
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	# shellcheck disable=SC2016 # apt's own $(FIELD) notation
	apt-get indextargets --format '$(REPO_URI)' "Codename: $codename" \
		'Identifier: Packages' | head -n 1
}

if [ "$(cat "$stamp" 2>/dev/null)" != "$suite $packages" ]; then
	uri=$(mirror)
	[ -n "$uri" ] || { echo "python-compat: no apt entry for this release" >&2; exit 1; }
	echo "python-compat: making the $suite chroot ($packages) in $root" >&2
	rm -rf "$root"
	# in a mount namespace too: the mounts of its second stage go with it
	unshare --mount --propagation private \
		debootstrap --variant=minbase --include="$packages" "$suite" \
		"$root" "$uri" >&2
	echo "$suite $packages" >"$stamp"
fi

exec unshare --mount --propagation private "$0" --inside "$@"
