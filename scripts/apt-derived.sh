#!/bin/bash
# Run apt-get or apt-cache over a private apt configuration derived from this
# machine's own apt sources, so that packages beyond what the machine is set
# up for can be fetched without editing /etc/apt and without naming any
# mirror in this repository.
#
# Usage: scripts/apt-derived.sh <cache-dir> <kind> apt-get|apt-cache <arguments...>
#   kind src:        the machine's "deb" entries as "deb-src" entries
#   kind backports:  the entries of the machine's release suite (bookworm),
#                    pointed at its backports suite (bookworm-backports)
#   kind src-SUITE:  the entries of the machine's release suite as "deb-src"
#                    entries of SUITE (src-trixie: trixie's sources only; a
#                    binary entry would let apt replace the host's packages)
# Only downloads and queries make sense over it: nothing is installed from it.
set -euo pipefail

cache=$1 kind=$2
shift 2
conf=$cache/apt-$kind
mkdir -p "$conf/lists/partial" "$conf/sources.list.d"
# shellcheck source=/dev/null
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")

# The release suite's deb822 stanzas with their Types and Suites replaced.
retarget_deb822() {
	awk -v suite="$codename" -v types="$2" -v target="$3" '
		BEGIN { RS = ""; ORS = "\n\n" }
		$0 ~ "(^|\n)Types:([^\n]* )?deb( |\n|$)" &&
		$0 ~ "(^|\n)Suites:([^\n]* )?" suite "( |\n|$)" {
			sub("(^|\n)Types:[^\n]*", "\nTypes: " types)
			sub("(^|\n)Suites:[^\n]*", "\nSuites: " target)
			sub("^\n", "")
			print
		}' "$1"
}

# deb822 stanzas (paragraphs), one file at a time.
derive_deb822() {
	case $kind in
	src)
		sed -E 's/^Types:.*\bdeb\b.*$/Types: deb-src/' "$1" ;;
	backports)
		retarget_deb822 "$1" deb "$codename-backports" ;;
	src-*)
		retarget_deb822 "$1" deb-src "${kind#src-}" ;;
	esac
}

# The release suite's one-line entries with their type and suite replaced.
retarget_line() {
	sed -nE "s/^[[:space:]]*deb([[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+)[[:space:]]+$codename[[:space:]]/$2\1 $3 /p" "$1"
}

# One-line entries: "deb [opts] uri suite components".
derive_line() {
	case $kind in
	src)
		sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$1" ;;
	backports)
		retarget_line "$1" deb "$codename-backports" ;;
	src-*)
		retarget_line "$1" deb-src "${kind#src-}" ;;
	esac
}

case $kind in
src|backports|src-[a-z]*) ;;
*) echo "apt-derived: unknown kind $kind" >&2; exit 2 ;;
esac

rm -f "$conf/sources.list.d/"*
for f in /etc/apt/sources.list.d/*.sources; do
	[ -e "$f" ] || continue
	derive_deb822 "$f" >"$conf/sources.list.d/$(basename "$f")"
done
: >"$conf/sources.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -e "$f" ] || continue
	derive_line "$f" >>"$conf/sources.list"
done

opts=(-o "Dir::Etc::SourceList=$conf/sources.list"
      -o "Dir::Etc::SourceParts=$conf/sources.list.d"
      -o "Dir::State::Lists=$conf/lists"
      -o "APT::Sandbox::User=root")
# Refresh the indexes at most once a day.
stamp=$conf/updated
if [ -z "$(find "$stamp" -mmin -1440 2>/dev/null)" ]; then
	apt-get "${opts[@]}" -q update >&2
	touch "$stamp"
fi
tool=$1
shift
exec "$tool" "${opts[@]}" "$@"
