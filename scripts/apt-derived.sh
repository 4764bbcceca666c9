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
# Only downloads and queries make sense over it: nothing is installed from it.
set -euo pipefail

cache=$1 kind=$2
shift 2
conf=$cache/apt-$kind
mkdir -p "$conf/lists/partial" "$conf/sources.list.d"
# shellcheck source=/dev/null
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")

# deb822 stanzas (paragraphs), one file at a time.
derive_deb822() {
	case $kind in
	src)
		sed -E 's/^Types:.*\bdeb\b.*$/Types: deb-src/' "$1" ;;
	backports)
		awk -v suite="$codename" -v bpo="$codename-backports" '
			BEGIN { RS = ""; ORS = "\n\n" }
			$0 ~ "(^|\n)Types:([^\n]* )?deb( |\n|$)" &&
			$0 ~ "(^|\n)Suites:([^\n]* )?" suite "( |\n|$)" {
				sub("(^|\n)Suites:[^\n]*", "\nSuites: " bpo)
				sub("^\n", "")
				print
			}' "$1" ;;
	esac
}

# One-line entries: "deb [opts] uri suite components".
derive_line() {
	case $kind in
	src)
		sed -nE 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$1" ;;
	backports)
		sed -nE "s/^[[:space:]]*(deb[[:space:]]+(\[[^]]*\][[:space:]]+)?[^[:space:]]+)[[:space:]]+$codename[[:space:]]/\1 $codename-backports /p" "$1" ;;
	esac
}

case $kind in
src|backports) ;;
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
