"""Pinned and mapped memory (docs/python.md; seed 004, "Pinned memory",
"Mapped memory")."""
import gc

import numpy as np
import pytest

import accel
from accel_testutil import outcome, raises_any


# ------------------------------------------------------------ pinned

def test_pinned_array_is_numpy():
    p = accel.pinned_array((3, 4), dtype=np.int32)
    assert isinstance(p, np.ndarray)
    assert p.shape == (3, 4) and p.dtype == np.int32
    assert p.flags.writeable and p.flags.c_contiguous
    p[...] = np.arange(12).reshape(3, 4)
    assert p.sum() == 66
    f = accel.pinned_array((3, 4), order='F')
    assert f.flags.f_contiguous and f.dtype == np.float64
    s = accel.pinned_array((2, 3), dtype=np.float32, strides=(4, 8))
    assert s.strides == (4, 8)
    assert accel.pinned_array(()).shape == ()
    assert accel.pinned_array(0).shape == (0,)


def test_pinned_array_like():
    x = np.zeros((5, 2), dtype=np.uint8)
    p = accel.pinned_array_like(x)
    assert isinstance(p, np.ndarray)
    assert p.shape == (5, 2) and p.dtype == np.uint8
    pf = accel.pinned_array_like(np.asfortranarray(np.zeros((3, 4))))
    assert pf.flags.f_contiguous
    pd = accel.pinned_array_like(accel.device_array((2, 2), dtype=np.int16))
    assert pd.shape == (2, 2) and pd.dtype == np.int16


def test_pinned_array_transfers_and_outlives_views(collect):
    p = accel.pinned_array(1000, dtype=np.float64)
    p[:] = np.arange(1000)
    d = accel.to_device(p)
    out = accel.pinned_array_like(p)
    d.copy_to_host(out)
    np.testing.assert_array_equal(out, np.arange(1000))
    v = p[10:20]
    del p
    collect()
    np.testing.assert_array_equal(v, np.arange(10, 20))


def test_pinned_context_manager():
    a = np.arange(100, dtype=np.int32)
    b = np.zeros((4, 4))
    with accel.pinned(a, b):
        d = accel.to_device(a)
        s = accel.stream()
        h = d.copy_to_host(stream=s)
        s.synchronize()
        np.testing.assert_array_equal(h, a)
        d.copy_to_host(a)
    np.testing.assert_array_equal(a, np.arange(100))
    # after the block the arrays are ordinary arrays again, usable as ever
    a[:] = 1
    with accel.pinned(a):
        pass
    with accel.pinned():
        pass


def test_pinned_arrays_usable_by_device_inside_block():
    a = np.arange(8, dtype=np.float64)
    with accel.pinned(a):
        v = accel.as_cuda_array(a)    # pinned memory the device uses
        np.testing.assert_array_equal(v.copy_to_host(), a)
        del v
    gc.collect()


def test_pinned_block_exception_unpins():
    a = np.zeros(64)
    with pytest.raises(KeyError):
        with accel.pinned(a):
            raise KeyError("inside")
    with accel.pinned(a):     # registering again works: it was undone
        pass


def test_pinned_same_array_twice_no_crash():
    a = np.zeros(64)
    for arys in ((a, a), (a, a[:32])):
        try:
            with accel.pinned(*arys):
                pass
        except (accel.AccelError, ValueError):
            pass
    with accel.pinned(a):     # nothing stayed registered
        pass
    try:
        with accel.pinned(a):
            with accel.pinned(a):
                pass
    except (accel.AccelError, ValueError):
        pass
    with accel.pinned(a):
        pass


def test_pinned_wrong_types():
    with raises_any(TypeError, ValueError):
        with accel.pinned([1, 2, 3]):
            pass
    with raises_any(TypeError, ValueError):
        with accel.pinned("abc"):
            pass


# ------------------------------------------------------------ mapped arrays

@pytest.mark.parametrize("portable,wc", [(False, False), (True, False),
                                         (False, True), (True, True)])
def test_mapped_array_type_and_host_access(portable, wc):
    m = accel.mapped_array((4, 5), dtype=np.float32, portable=portable,
                           wc=wc)
    assert type(m) is accel.MappedNDArray
    assert isinstance(m, np.ndarray)
    assert issubclass(accel.MappedNDArray, np.ndarray)
    assert m.shape == (4, 5) and m.dtype == np.float32
    assert m.flags.writeable
    m[...] = np.arange(20, dtype=np.float32).reshape(4, 5)
    assert float(m.sum()) == 190.0
    h = m.copy_to_host()
    assert isinstance(h, np.ndarray)
    np.testing.assert_array_equal(h, np.arange(20).reshape(4, 5))
    h[...] = 0            # a copy
    assert float(m.sum()) == 190.0


def test_mapped_array_layouts_and_like():
    f = accel.mapped_array((3, 4), dtype=np.int64, order='F')
    assert f.flags.f_contiguous
    s = accel.mapped_array((2, 3), dtype=np.float64, strides=(8, 16))
    assert s.strides == (8, 16)
    assert accel.mapped_array(()).shape == ()
    assert accel.mapped_array((0, 2)).shape == (0, 2)
    x = np.zeros((6,), dtype=np.uint16)
    ml = accel.mapped_array_like(x)
    assert type(ml) is accel.MappedNDArray
    assert ml.shape == (6,) and ml.dtype == np.uint16
    s = accel.stream()
    ml2 = accel.mapped_array_like(x, stream=s, portable=True, wc=False)
    assert ml2.shape == (6,)
    ml3 = accel.mapped_array_like(ml)
    assert type(ml3) is accel.MappedNDArray


def test_mapped_array_takes_the_place_of_a_device_array():
    m = accel.mapped_array(10, dtype=np.int32)
    m[:] = np.arange(10)
    d = accel.to_device(m)            # usable as it is: no copy
    m[:] = 42
    np.testing.assert_array_equal(d.copy_to_host(), 42)
    d.copy_to_device(np.arange(10, dtype=np.int32))
    np.testing.assert_array_equal(m, np.arange(10))
    d2 = accel.to_device(m, copy=False)
    m[0] = -1
    assert d2.copy_to_host()[0] == -1
    # copies into it and out of it as into a device array
    m.copy_to_device(np.full(10, 3, dtype=np.int32))
    np.testing.assert_array_equal(m, 3)
    src = accel.to_device(np.arange(10, dtype=np.int32) * 2)
    accel.to_device(src.copy_to_host(), to=m)
    np.testing.assert_array_equal(m, np.arange(10) * 2)
    out = np.empty(10, dtype=np.int32)
    assert m.copy_to_host(out) is out
    np.testing.assert_array_equal(out, np.arange(10) * 2)


def test_mapped_array_async_copies():
    s = accel.stream()
    m = accel.mapped_array(1 << 16, dtype=np.float64, stream=s)
    d = accel.to_device(np.arange(1 << 16, dtype=np.float64), stream=s)
    d.copy_to_host(m, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(m, np.arange(1 << 16))


def test_copies_of_mapped_arrays_are_not_mapped_memory():
    m = accel.mapped_array(16, dtype=np.int64)
    m[:] = 7
    c = m.copy()                  # NumPy memory, whatever its class says
    ok, d = outcome(accel.to_device, c)
    assert ok, d
    c[:] = 9
    np.testing.assert_array_equal(d.copy_to_host(), 7)
    for derived in (m + 1, m[::2], m.reshape(4, 4).T, m.astype(np.int32)):
        ok, dd = outcome(accel.to_device, derived)
        assert ok, dd
        np.testing.assert_array_equal(dd.copy_to_host(), np.asarray(derived))


def test_mapped_slice_views_and_lifetime(collect):
    m = accel.mapped_array(100, dtype=np.int32)
    m[:] = np.arange(100)
    v = m[50:]
    plain = m.view(np.ndarray)
    del m
    collect()
    np.testing.assert_array_equal(v, np.arange(50, 100))
    np.testing.assert_array_equal(plain, np.arange(100))
    v[:] = 0
    assert plain[50:].sum() == 0


def test_direct_construction_of_mapped_class_is_not_mapped_memory():
    ok, m = outcome(lambda: accel.MappedNDArray((4,), dtype=np.float64))
    if not ok:
        return
    ok, r = outcome(lambda: np.asarray(m).fill(2.0))
    ok, d = outcome(accel.to_device, m)
    if ok:
        np.testing.assert_array_equal(d.copy_to_host(), np.asarray(m))
    outcome(lambda: m.copy_to_host())
    outcome(lambda: m.__dlpack__())


# ------------------------------------------------------------ mapped()

def test_mapped_context_one_array():
    a = np.arange(32, dtype=np.float32)
    with accel.mapped(a) as d:
        assert isinstance(d, accel.DeviceNDArray)
        assert d.shape == (32,) and d.dtype == np.float32
        np.testing.assert_array_equal(d.copy_to_host(), a)
        a[:] = 5                              # the host writes, device sees
        np.testing.assert_array_equal(d.copy_to_host(), 5)
        d.copy_to_device(np.arange(32, dtype=np.float32))
        np.testing.assert_array_equal(a, np.arange(32))


def test_mapped_context_several_arrays():
    a = np.zeros(4, dtype=np.int32)
    b = np.ones((2, 2), dtype=np.float64)
    s = accel.stream()
    with accel.mapped(a, b, stream=s) as ds:
        assert isinstance(ds, list) and len(ds) == 2
        assert all(isinstance(x, accel.DeviceNDArray) for x in ds)
        assert ds[0].shape == (4,) and ds[1].shape == (2, 2)
        ds[0].copy_to_device(np.arange(4, dtype=np.int32), stream=s)
        s.synchronize()
        np.testing.assert_array_equal(a, np.arange(4))
        np.testing.assert_array_equal(ds[1].copy_to_host(), 1)


def test_mapped_context_keeps_its_arrays_alive(collect):
    with accel.mapped(np.arange(1000, dtype=np.int64)) as d:
        collect()
        junk = [np.full(1000, -3, dtype=np.int64) for _ in range(50)]
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(1000))
        del junk


def test_mapped_context_exception_unmaps():
    a = np.zeros(16)
    with pytest.raises(KeyError):
        with accel.mapped(a):
            raise KeyError("inside")
    with accel.mapped(a) as d:
        d.copy_to_device(np.ones(16))
    np.testing.assert_array_equal(a, 1)


def test_mapped_device_view_after_block_does_not_crash():
    a = np.arange(16, dtype=np.int32)
    with accel.mapped(a) as d:
        pass
    ok, r = outcome(d.copy_to_host)
    if ok:
        np.testing.assert_array_equal(r, np.arange(16))
    else:
        assert isinstance(r, (accel.AccelError, ValueError)), r
    outcome(lambda: d.copy_to_device(np.zeros(16, dtype=np.int32)))
    del d
    gc.collect()


def test_mapped_context_bad_arguments():
    with pytest.raises(TypeError):
        with accel.mapped(np.zeros(3), bogus=1):
            pass
    with raises_any(TypeError, ValueError):
        with accel.mapped([1, 2, 3]):
            pass
    for weird in (accel.mapped_array(4), accel.pinned_array(4),
                  np.zeros(8)[::2]):
        try:
            with accel.mapped(weird) as d:
                d.copy_to_host()
        except (accel.AccelError, ValueError, TypeError):
            pass


# ------------------------------------------------------------ misuse

def test_pinned_and_mapped_bad_values():
    for fn in (accel.pinned_array, accel.mapped_array):
        with pytest.raises(ValueError):
            fn(-1)
        with pytest.raises(ValueError):
            fn((2, -2))
        with pytest.raises(ValueError):
            fn(3, order='X')
        with pytest.raises(ValueError):
            fn((2, 3), strides=(8,))
        with raises_any(TypeError, ValueError):
            fn(3, dtype="no-such-type")
        with pytest.raises(TypeError):
            fn("abc")


def test_huge_pinned_and_mapped_fail_cleanly():
    for fn in (accel.pinned_array, accel.mapped_array):
        with raises_any(accel.AccelError, MemoryError, ValueError):
            fn(1 << 50, dtype=np.uint8)
    # and the process goes on allocating
    accel.mapped_array(10)[:] = 1


def test_mapped_slices_behave_as_device_arrays_or_refuse():
    m = accel.mapped_array(8, dtype=np.float64)
    m[:] = 3
    for view, n in ((m[2:], 6), (m[::2], 4)):
        ok, r = outcome(view.copy_to_device, np.full(n, 5.0))
        if ok:
            np.testing.assert_array_equal(view, 5.0)
        else:
            assert isinstance(r, (ValueError, TypeError)), r
        ok, h = outcome(view.copy_to_host)
        if ok:
            np.testing.assert_array_equal(h, np.asarray(view))
        m[:] = 3
    np.testing.assert_array_equal(m[[0, 1, 3, 5, 7]], 3)
