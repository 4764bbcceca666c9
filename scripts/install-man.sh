#!/bin/bash
# Install the man pages under MANDIR; each further function a section 3
# page names gets a page of its own that sources it (".so"), as liburing's
# do.
#
# Usage: scripts/install-man.sh MANDIR
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dest=$1
for page in "$top"/man/man*/*.[0-9]; do
	section=$(basename "$(dirname "$page")")
	install -d "$dest/$section"
	install -m 644 "$page" "$dest/$section/"
done
for page in "$top"/man/man3/*.3; do
	main=$(basename "$page")
	for name in $("$top/scripts/man-names.sh" "$page"); do
		[ "$name.3" = "$main" ] || echo ".so man3/$main" >"$dest/man3/$name.3"
	done
done
