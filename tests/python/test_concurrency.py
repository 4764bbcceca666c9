"""Many threads at once: creating, exporting and releasing arrays
(accel/accel.h "Threads"; accel/dlpack.h: the deleter may be called from
any thread; docs/python.md: the GIL is released around waits)."""
import queue
import threading

import numpy as np
import pytest

import accel
from accel_testutil import host_readable

N_THREADS = 8


def _run_threads(target, n=N_THREADS, timeout=60):
    errors = []
    barrier = threading.Barrier(n)

    def wrap(i):
        try:
            barrier.wait(10)
            target(i)
        except BaseException as e:  # noqa: BLE001
            errors.append((i, repr(e)))

    ts = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout)
        assert not t.is_alive(), "a thread hung"
    assert not errors, errors[:5]


def _export(d, torch=None):
    """A host view through DLPack of a device array, or None where the
    backend's device memory is not host-readable."""
    if not host_readable():
        return None
    if torch is not None:
        return torch.from_dlpack(d).numpy()
    return np.from_dlpack(d)


def test_threads_create_transfer_release():
    def work(i):
        rng = np.random.default_rng(i)
        for k in range(40):
            x = rng.integers(-1000, 1000, size=257 + k, dtype=np.int64)
            d = accel.to_device(x)
            np.testing.assert_array_equal(d.copy_to_host(), x)
            r = d.reshape(-1)
            del d
            np.testing.assert_array_equal(r.copy_to_host(), x)
    _run_threads(work)


def test_threads_export_dlpack(torch):
    use_torch_on_mapped = accel.get_current_device().backend != "cuda"

    def work(i):
        for k in range(40):
            x = np.arange(100 + k, dtype=np.float64) * (i + 1)
            d = accel.to_device(x)
            a = _export(d, torch if k % 2 else None)
            if a is not None:
                del d
                np.testing.assert_array_equal(a, x)
            m = accel.mapped_array(x.shape, dtype=x.dtype)
            m[:] = x
            b = np.from_dlpack(m)
            if use_torch_on_mapped:
                t = torch.from_dlpack(m)
                del m
                np.testing.assert_array_equal(t.numpy(), x)
            else:
                del m
            np.testing.assert_array_equal(b, x)
    _run_threads(work)


def test_release_in_one_thread_consume_in_others(torch):
    """The producer drops its accel arrays at once; consumers hold only the
    exported tensors and release them in their own threads (the DLPack
    deleter runs there); a churn thread reuses freed memory meanwhile."""
    q = queue.Queue(maxsize=64)
    stop = threading.Event()
    errors = []
    n_items = 200
    n_consumers = 4
    backend = accel.get_current_device().backend

    def produce():
        try:
            for k in range(n_items):
                x = np.full(512, k, dtype=np.int64)
                if backend == "cpu":
                    d = accel.to_device(x)
                    e = torch.from_dlpack(d) if k % 2 else np.from_dlpack(d)
                    del d
                else:
                    m = accel.mapped_array(512, dtype=np.int64)
                    m[:] = x
                    e = np.from_dlpack(m) if (k % 2 or backend == "cuda") \
                        else torch.from_dlpack(m)
                    del m
                q.put((k, e))
            for _ in range(n_consumers):
                q.put(None)
        except BaseException as ex:  # noqa: BLE001
            errors.append(repr(ex))
            for _ in range(n_consumers):
                q.put(None)

    def consume():
        try:
            while True:
                item = q.get(timeout=30)
                if item is None:
                    return
                k, e = item
                arr = e.numpy() if hasattr(e, "numpy") else e
                assert (arr == k).all(), (k, arr[:4])
                del item, e, arr
        except BaseException as ex:  # noqa: BLE001
            errors.append(repr(ex))

    def churn():
        try:
            while not stop.is_set():
                ds = [accel.to_device(np.full(512, -1, dtype=np.int64))
                      for _ in range(8)]
                ms = [accel.mapped_array(512, dtype=np.int64)
                      for _ in range(2)]
                for m in ms:
                    m[:] = -1
                del ds, ms
        except BaseException as ex:  # noqa: BLE001
            errors.append(repr(ex))

    ts = [threading.Thread(target=consume) for _ in range(n_consumers)]
    ts.append(threading.Thread(target=churn))
    tp = threading.Thread(target=produce)
    for t in ts:
        t.start()
    tp.start()
    tp.join(60)
    for t in ts[:-1]:
        t.join(60)
    stop.set()
    ts[-1].join(60)
    assert not any(t.is_alive() for t in ts + [tp])
    assert not errors, errors[:5]


def test_threads_share_one_array():
    x = np.arange(1 << 14, dtype=np.int32)
    d = accel.to_device(x)

    def work(i):
        for _ in range(30):
            if i == 0:
                d.copy_to_device(x)
            np.testing.assert_array_equal(d.copy_to_host(), x)
            v = d.reshape(128, 128)
            assert v.shape == (128, 128)
    _run_threads(work)


def test_threads_own_streams():
    def work(i):
        s = accel.stream()
        for k in range(20):
            x = np.full(4096, i * 100 + k, dtype=np.int32)
            d = accel.to_device(x, stream=s)
            h = d.copy_to_host(stream=s)
            s.synchronize()
            np.testing.assert_array_equal(h, x)
    _run_threads(work)


@pytest.mark.two_devices
def test_threads_select_devices_concurrently(devices):
    def work(i):
        dev = devices[i % len(devices)]
        accel.select_device(dev)
        for _ in range(30):
            assert accel.get_current_device().id == dev.id
            d = accel.to_device(np.arange(64) + i)
            assert d.device.id == dev.id
            np.testing.assert_array_equal(d.copy_to_host(), np.arange(64) + i)
    _run_threads(work)
    assert accel.get_current_device().id == devices[0].id


def test_threads_pinned_and_mapped_contexts():
    def work(i):
        for _ in range(20):
            a = np.full(256, i, dtype=np.float64)
            with accel.mapped(a) as d:
                np.testing.assert_array_equal(d.copy_to_host(), a)
            with accel.pinned(a):
                np.testing.assert_array_equal(
                    accel.to_device(a).copy_to_host(), a)
    _run_threads(work)


def test_gil_is_released_during_synchronous_copies():
    # a second thread runs Python code while big copies are under way
    x = np.ones(16 << 20, dtype=np.uint8)
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=ticker)
    t.start()
    try:
        for _ in range(6):
            d = accel.to_device(x)
            d.copy_to_host()
    finally:
        stop.set()
        t.join()
    assert ticks
