#!/bin/bash
# The names a man page documents: its NAME line up to "\-", one a line.
set -euo pipefail
sed -n '/^\.SH NAME/{n;p;q}' "$1" | sed 's/ \\-.*//; s/,/ /g' | tr -s ' ' '\n' | sed '/^$/d'
