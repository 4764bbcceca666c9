#!/bin/sh
# After the debug-kernel run: kmemleak must find no leak that involves
# the driver (simaccel.ko) or DRM's objects (a syncobj or fence its users
# hold), and the DMA-API debugging must have counted no error. Also says
# how many allocation failures were injected (at least: the kernel
# rate-limits the message).
dbg=/sys/kernel/debug
echo scan >"$dbg/kmemleak"
sleep 5
echo scan >"$dbg/kmemleak"
# the driver, or the DRM objects (syncobjs, fences) that its users hold
leaks=$(grep -c -E "simaccel|drm_" "$dbg/kmemleak")
if [ "$leaks" -eq 0 ]; then
	echo "ok: kmemleak finds no leak in the driver"
else
	cat "$dbg/kmemleak"
	echo "not ok: kmemleak finds leaks in the driver"
fi
errors=$(cat "$dbg/dma-api/error_count")
if [ "$errors" -eq 0 ]; then
	echo "ok: DMA-API debugging counts no error"
else
	echo "not ok: DMA-API debugging counts $errors errors"
fi
echo "faults injected: at least $(dmesg | grep -c 'FAULT_INJECTION: forcing a failure')"
