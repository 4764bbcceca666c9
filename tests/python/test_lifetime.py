"""Lifetime: reference counts, memory that comes back, and processes that
exit with objects still alive."""
import gc
import sys

import numpy as np
import pytest

import accel
from accel_testutil import check_isolated, pool_allocated


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_to_device_does_not_keep_the_source(collect):
    x = np.arange(1000.0)
    collect()
    rc = sys.getrefcount(x)
    ds = [accel.to_device(x) for _ in range(20)]
    s = accel.stream()
    ds += [accel.to_device(x, stream=s) for _ in range(5)]
    s.synchronize()
    del ds
    collect()
    assert sys.getrefcount(x) == rc


def test_copy_to_host_into_does_not_leak_the_target(collect):
    d = accel.to_device(np.arange(10))
    out = np.empty(10, dtype=d.dtype)
    collect()
    rc = sys.getrefcount(out)
    for _ in range(100):
        d.copy_to_host(out)
    collect()
    assert sys.getrefcount(out) == rc


def test_failed_calls_do_not_leak_arguments(collect):
    d = accel.to_device(np.arange(10, dtype=np.int32))
    bad = np.empty(3, dtype=np.int32)
    x = np.zeros(4)
    collect()
    rb, rx, rd = sys.getrefcount(bad), sys.getrefcount(x), sys.getrefcount(d)
    for _ in range(100):
        try:
            d.copy_to_host(bad)
        except Exception:  # noqa: BLE001
            pass
        try:
            accel.to_device(x, to=d)
        except Exception:  # noqa: BLE001
            pass
        try:
            d.reshape(7)
        except Exception:  # noqa: BLE001
            pass
    collect()
    assert sys.getrefcount(bad) == rb
    assert sys.getrefcount(x) == rx
    assert sys.getrefcount(d) == rd


def test_attribute_access_does_not_leak(collect):
    d = accel.device_array((3, 4), dtype=np.float32)
    dt = np.dtype(np.float32)
    collect()
    rc_dt = sys.getrefcount(dt)
    rc_d = sys.getrefcount(d)
    for _ in range(2000):
        d.dtype, d.shape, d.strides, d.size, d.nbytes, d.ndim, d.device
        d.stream
        d.__dlpack_device__()
        d.is_c_contiguous()
    collect()
    assert sys.getrefcount(dt) - rc_dt < 5
    assert sys.getrefcount(d) == rc_d


def test_dlpack_exports_do_not_leak_the_array(collect):
    d = accel.device_array(64, dtype=np.int32)
    m = accel.mapped_array(64, dtype=np.int32)
    collect()
    rd, rm = sys.getrefcount(d), sys.getrefcount(m)
    for _ in range(200):
        c = d.__dlpack__()
        del c
        c = m.__dlpack__()
        del c
        np.from_dlpack(m)
        if d.__dlpack_device__()[0] == 1:
            np.from_dlpack(d)
    collect()
    assert sys.getrefcount(d) == rd
    assert sys.getrefcount(m) == rm


def test_views_release_their_base(collect):
    import weakref
    d = accel.to_device(np.arange(24.0))
    collect()
    rc = sys.getrefcount(d)
    vs = [d.reshape(4, 6), d.ravel(), d.reshape(2, 3, 4), accel.to_device(d),
          accel.as_cuda_array(d)]
    del vs
    collect()
    assert sys.getrefcount(d) == rc
    try:
        ref = weakref.ref(d)
    except TypeError:
        return     # no weak references to device arrays: nothing more here
    v = d.reshape(6, 4)
    del d, v
    collect()
    assert ref() is None


def test_pool_memory_returns_after_many_cycles(collect):
    collect()
    before = pool_allocated()
    if before is None:
        pytest.skip("pool_stats() has no 'allocated'")
    x = np.ones(1 << 18, dtype=np.float32)          # 1 MiB
    for i in range(300):
        d = accel.to_device(x)
        v = d.reshape(512, 512)
        if i % 3 == 0 and d.__dlpack_device__()[0] == 1:
            np.from_dlpack(v)
        del d, v
    collect()
    tmp = accel.device_array(16)
    del tmp
    collect()
    after = pool_allocated()
    assert after - before < (1 << 20), (before, after)


def test_large_allocations_come_back(collect):
    dev = accel.get_current_device()
    collect()
    free0, total = dev.mem_info()
    size = (min(free0, total) // 5) & ~0xFFFFF
    for _ in range(12):                 # 12 x 1/5 of the device: must free
        d = accel.device_array(size, dtype=np.uint8)
        del d
    collect()
    tmp = accel.device_array(16)
    del tmp
    collect()
    free1, _ = dev.mem_info()
    assert free1 >= free0 - size, (free0, free1, size)


def test_mapped_and_pinned_cycles_do_not_grow_rss(collect):
    def cycle():
        for _ in range(100):
            m = accel.mapped_array(1 << 16, dtype=np.float64)   # 512 KiB
            m[:] = 1
            p = accel.pinned_array(1 << 16, dtype=np.float64)
            p[:] = 1
            e = np.from_dlpack(m)
            del m, p, e
        collect()
    cycle()
    r0 = _rss()
    for _ in range(3):
        cycle()
    r1 = _rss()
    # 300 leaked cycles would be 300 MiB
    assert r1 - r0 < (64 << 20), (r0, r1)


@pytest.mark.host_readable
def test_exported_cycles_do_not_grow_rss(collect, torch):
    x = np.ones(1 << 16, dtype=np.float64)          # 512 KiB

    def cycle():
        for i in range(100):
            d = accel.to_device(x)
            e = np.from_dlpack(d) if i % 2 else torch.from_dlpack(d)
            del d, e
        collect()
    cycle()
    r0 = _rss()
    for _ in range(3):
        cycle()
    r1 = _rss()
    assert r1 - r0 < (64 << 20), (r0, r1)


class _InterfaceTuple(tuple):
    """An object lending memory through the CUDA array interface, which
    the garbage collector cannot clear itself (a tuple)."""
    __slots__ = ()

    @property
    def __cuda_array_interface__(self):
        a = self[1]
        return {"shape": a.shape, "typestr": a.dtype.str,
                "data": (a.ctypes.data, False), "version": 3}


@pytest.mark.skipif("accel.get_current_device().backend != 'cpu'",
                    reason="the cpu device takes any host memory")
def test_a_cycle_through_a_view_does_not_free_memory_under_a_copy():
    """as_cuda_array keeps obj alive: a collected cycle must not free the
    lender's bytes while a queued copy still writes them."""
    n = 16 << 20
    s = accel.stream()
    src = accel.to_device(np.ones(n))
    gc.disable()
    try:
        for _ in range(3):
            d = {}
            lender = _InterfaceTuple((d, np.zeros(n)))
            v = accel.as_cuda_array(lender)
            d["v"] = v
            v.copy_to_device(src, stream=s)
            del v, lender, d
            gc.collect()
            s.synchronize()
    finally:
        gc.enable()


# ------------------------------------------------------------ process exit

def test_exit_with_live_objects():
    check_isolated('''
        import threading
        import numpy as np
        import accel
        keep = []
        s = accel.stream()
        d = accel.to_device(np.arange(1 << 20, dtype=np.float64), stream=s)
        keep.append(d.copy_to_host(stream=s))       # not synchronized
        keep.append(accel.mapped_array(100))
        keep.append(np.from_dlpack(accel.mapped_array(100)))
        keep.append(accel.pinned_array(100))
        keep.append(d.reshape(1024, 1024))
        keep.append(d.__dlpack__())                 # never consumed
        if d.__dlpack_device__()[0] == 1:
            keep.append(np.from_dlpack(d))
        cm = accel.mapped(np.zeros(10))
        keep.append(cm.__enter__())                 # never exited
        keep.append(cm)
        def t():
            keep.append(accel.to_device(np.arange(10)))
            keep.append(accel.stream())
        th = threading.Thread(target=t); th.start(); th.join()
        print("ok")
    ''')


def test_exit_with_torch_holding_exports(torch):
    check_isolated('''
        import numpy as np, torch
        import accel
        dev = accel.get_current_device()
        m = accel.mapped_array(16, dtype=np.float32)
        m[:] = 1
        held = []
        if dev.backend != "cuda":
            held.append(torch.from_dlpack(m))
        if dev.backend == "cpu":
            held.append(torch.from_dlpack(accel.to_device(np.arange(5.0))))
        del m
        print("ok")
    ''')


def test_exit_from_a_thread_holding_arrays():
    check_isolated('''
        import threading, numpy as np, accel
        ev = threading.Event()
        def hold():
            d = accel.to_device(np.arange(100))
            ev.set()
            threading.Event().wait(0.5)
            d.copy_to_host()
        th = threading.Thread(target=hold, daemon=True); th.start()
        ev.wait(5)
        print("ok")
    ''')


def test_fresh_process_import_and_gc_cycles():
    # an accel array inside a reference cycle is collected by the GC
    check_isolated('''
        import gc, numpy as np, accel
        class Holder: pass
        for _ in range(200):
            h = Holder(); h.self = h
            h.d = accel.to_device(np.arange(1000.0))
            h.m = accel.mapped_array(10)
            del h
        gc.collect()
        accel.synchronize()
        st = accel.get_current_device().pool_stats()
        print(st.get("allocated"))
    ''')
