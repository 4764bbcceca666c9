#!/bin/bash
# libaccel's layers call one way (docs/libaccel.md, "Layers"): core <-
# backends <- memory <- pool <- objects, each calling only its own and the
# layers below. From the built objects: a symbol an object of one layer
# needs must not be defined by a layer above it. The one exception is the
# core's list of the backends it probes, in order (data, not calls).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
obj=$top/build/lib/obj
layers=(core backends memory pool objects)
declare -A rank owner
for i in "${!layers[@]}"; do
	rank[${layers[$i]}]=$i
done
for L in "${layers[@]}"; do
	for o in "$obj/$L"/*.o; do
		while read -r s; do
			owner[$s]=$L
		done < <(nm --defined-only "$o" | awk '$2 ~ /[TDBR]/ { print $3 }')
	done
done
bad=0
for L in "${layers[@]}"; do
	for o in "$obj/$L"/*.o; do
		name=$L/$(basename "$o" .o)
		while read -r s; do
			U=${owner[$s]:-}
			[ -n "$U" ] && [ "${rank[$U]}" -gt "${rank[$L]}" ] || continue
			[ "$name" = core/device ] && [[ $s == accel_backend_* ]] && continue
			echo "check-layers: $name calls up into $U: $s"
			bad=1
		done < <(nm -u "$o" | awk '{ print $2 }')
	done
done
[ $bad -eq 0 ] && echo "check-layers: ok: ${layers[*]}, each calling only down"
exit $bad
