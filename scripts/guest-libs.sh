#!/bin/bash
# The vm-run.sh --file options that give the guest (busybox, no C library)
# the system libraries of dynamic programs, one option or path a line.
#
# Usage: mapfile -t opts < <(scripts/guest-libs.sh PROGRAM...)
set -euo pipefail
for lib in $(ldd "$@" | awk '$3 ~ /^\/(usr\/)?lib/ { print $3 } $1 ~ /^\/lib/ { print $1 }' | sort -u); do
	printf '%s\n' --file "$(readlink -f "$lib"):$lib"
done
