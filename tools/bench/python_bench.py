"""The Python module's costs next to references measured in the same run:

- transfers: accel.to_device() + copy_to_host() of a NumPy array against
  numpy.copyto() of the same bytes twice (host memcpy), at 4 KiB and 64 MiB;
- DLPack: numpy.from_dlpack() and torch.from_dlpack() of an accel array
  against the same consumers given a NumPy array (the producer's own cost);
- calls: accel.device_array() of 8 bytes against numpy.empty().

Run with the module built: PYTHONPATH=build/python /usr/bin/python3
tools/bench/python_bench.py (ACCEL_VISIBLE_DEVICES chooses the device).
Each figure is the median of its runs; ratios are what to compare.
"""
import statistics
import sys
import time

import numpy as np

import accel


def median_seconds(fn, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def transfers(nbytes, runs):
    host = np.ones(nbytes // 8)
    out = np.empty_like(host)
    back = np.empty_like(host)

    def through_accel():
        d = accel.to_device(host)
        d.copy_to_host(out)

    def memcpy_twice():
        np.copyto(back, host)
        np.copyto(out, back)

    ref = median_seconds(memcpy_twice, runs)
    got = median_seconds(through_accel, runs)
    assert (out == host).all()
    return got, ref


def dlpack(consume, runs):
    d = accel.device_array(1024)
    if accel.get_current_device().backend != "cpu":
        d = accel.mapped_array(1024)    # host-accessible on every backend
    n = np.zeros(1024)
    got = median_seconds(lambda: consume(d), runs)
    ref = median_seconds(lambda: consume(n), runs)
    return got, ref


def row(what, got, ref, ref_name):
    print(f"{what:<44} {got * 1e6:10.1f} us {ref * 1e6:10.1f} us  "
          f"{got / ref:6.2f}x {ref_name}")


def main():
    dev = accel.get_current_device()
    print(f"device {dev.name}; medians; the last column is accel / reference")
    for nbytes, runs in ((4096, 2000), (64 << 20, 10)):
        got, ref = transfers(nbytes, runs)
        row(f"to_device + copy_to_host, {nbytes >> 10} KiB", got, ref,
            "numpy.copyto twice")
    got, ref = dlpack(np.from_dlpack, 20000)
    row("numpy.from_dlpack of 1024 float64", got, ref, "of a NumPy array")
    try:
        import torch
    except ImportError:
        print("torch: not installed", file=sys.stderr)
    else:
        got, ref = dlpack(torch.from_dlpack, 20000)
        row("torch.from_dlpack of 1024 float64", got, ref, "of a NumPy array")
    got = median_seconds(lambda: accel.device_array(1), 20000)
    ref = median_seconds(lambda: np.empty(1), 20000)
    row("device_array(1) (a pool block)", got, ref, "numpy.empty(1)")


if __name__ == "__main__":
    main()
