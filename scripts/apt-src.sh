#!/bin/bash
# Private apt configuration with deb-src entries derived from this machine's
# own apt sources, so that source packages can be fetched without editing
# /etc/apt and without naming any mirror in this repository.
#
# Usage: scripts/apt-src.sh <cache-dir> apt-get|apt-cache <arguments...>
set -euo pipefail

cache=$1
shift
conf=$cache/apt-src
mkdir -p "$conf/lists/partial" "$conf/sources.list.d"

# deb822 files: turn every "Types: deb" stanza into "Types: deb-src".
for f in /etc/apt/sources.list.d/*.sources; do
	[ -e "$f" ] || continue
	sed -E 's/^Types:.*\bdeb\b.*$/Types: deb-src/' "$f" \
		>"$conf/sources.list.d/$(basename "$f")"
done
# One-line format: "deb [opts] uri suite comp" becomes "deb-src ...".
: >"$conf/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -e "$f" ] || continue
	sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$conf/sources.list"
done

opts=(-o "Dir::Etc::SourceList=$conf/sources.list"
      -o "Dir::Etc::SourceParts=$conf/sources.list.d"
      -o "Dir::State::Lists=$conf/lists"
      -o "APT::Sandbox::User=root")
# Refresh the source indexes at most once a day.
stamp=$conf/updated
if [ -z "$(find "$stamp" -mmin -1440 2>/dev/null)" ]; then
	apt-get "${opts[@]}" -q update >&2
	touch "$stamp"
fi
tool=$1
shift
exec "$tool" "${opts[@]}" "$@"
