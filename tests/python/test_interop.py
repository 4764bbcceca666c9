"""as_cuda_array, is_cuda_array, the CUDA array interface and NumPy's
protocols (docs/python.md, "Arrays" and "The protocols each array speaks")."""
import gc
import sys
import weakref

import numpy as np
import pytest

import accel
from accel_testutil import (CAIWrapper, DLPackWrapper, check_isolated, outcome,
                            raises_any)


# ------------------------------------------------------------ NumPy protocols

@pytest.mark.host_readable
def test_cpu_device_array_speaks_numpy_protocols():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    d = accel.to_device(x)
    a = np.asarray(d)
    assert a.shape == (3, 4) and a.dtype == np.int32
    np.testing.assert_array_equal(a, x)
    a[1, 2] = 99                              # host memory: zero-copy
    assert d.copy_to_host()[1, 2] == 99
    ai = d.__array_interface__
    assert ai["shape"] == (3, 4)
    assert ai["typestr"] == np.dtype(np.int32).str
    assert ai["data"][0] == a.ctypes.data
    mv = memoryview(d)
    assert mv.shape == (3, 4) and mv.itemsize == 4
    assert mv.format in ("i", "<i", "=i", "l") or np.dtype(mv.format) == \
        np.int32
    mv.release()


@pytest.mark.host_readable
def test_cpu_numpy_view_of_strided_and_fortran_arrays():
    f = accel.to_device(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    np.testing.assert_array_equal(np.asarray(f),
                                  np.arange(6.0).reshape(2, 3))
    g = accel.device_array(4, dtype=np.int64, strides=(16,))
    ag = np.asarray(g)
    assert ag.strides == (16,)
    ag[:] = [1, 2, 3, 4]
    np.testing.assert_array_equal(g.copy_to_host(), [1, 2, 3, 4])
    z = accel.to_device(np.float32(1.5))
    assert np.asarray(z).shape == () and np.asarray(z) == 1.5


@pytest.mark.host_readable
def test_cpu_numpy_view_keeps_memory_alive(collect):
    d = accel.to_device(np.arange(256, dtype=np.int64))
    a = np.asarray(d)
    del d
    collect()
    junk = [accel.to_device(np.full(256, -1, dtype=np.int64))
            for _ in range(16)]
    np.testing.assert_array_equal(a, np.arange(256))
    del junk


@pytest.mark.device_only
def test_device_only_memory_is_refused_to_numpy():
    d = accel.to_device(np.arange(10.0))
    with pytest.raises(BufferError):
        np.asarray(d)
    with pytest.raises(BufferError):
        np.array(d)
    with pytest.raises(BufferError):
        memoryview(d)
    with raises_any(BufferError, AttributeError):
        d.__array_interface__
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10.0))


def test_mapped_array_is_a_numpy_array_everywhere():
    m = accel.mapped_array((2, 3), dtype=np.int16)
    m[...] = np.arange(6).reshape(2, 3)
    a = np.asarray(m)
    assert a.ctypes.data == m.ctypes.data
    mv = memoryview(m)
    assert mv.shape == (2, 3)
    mv.release()
    assert m.__array_interface__["data"][0] == m.ctypes.data


@pytest.mark.host_readable
def test_array_protocol_same_dtype_copy_none_does_not_copy():
    """__array__(dtype, copy=None) copies only where needed, as NumPy 2's
    protocol says (and the docstring: "a copy for another dtype or
    copy=True"): not for the array's own dtype."""
    d = accel.to_device(np.arange(6.0))
    own = np.asarray(d)
    assert np.shares_memory(d.__array__(np.float64), own)
    assert np.shares_memory(d.__array__(dtype=np.float64, copy=None), own)
    assert not np.shares_memory(d.__array__(np.float64, copy=True), own)
    assert d.__array__(np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        d.__array__(np.float32, copy=False)


# ------------------------------------------------------------ CAI

def test_is_cuda_array_follows_the_interface(backend):
    d = accel.device_array(3)
    m = accel.mapped_array(3)
    assert accel.is_cuda_array(d) is (backend == "cuda")
    assert hasattr(d, "__cuda_array_interface__") is (backend == "cuda")
    assert accel.is_cuda_array(m) is (backend == "cuda")
    assert accel.is_cuda_array(np.zeros(3)) is False
    assert accel.is_cuda_array(accel.pinned_array(3)) is False
    assert accel.is_cuda_array(5) is False
    assert accel.is_cuda_array(None) is False

    class Fake:
        __cuda_array_interface__ = "not checked further"
    assert accel.is_cuda_array(Fake()) is True


@pytest.mark.cuda_only
def test_cuda_array_interface_v3():
    d = accel.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3
    assert tuple(cai["shape"]) == (3, 4)
    assert cai["typestr"] == "<f4"
    assert isinstance(cai["data"][0], int) and cai["data"][1] is False
    assert cai.get("strides") in (None, (16, 4))
    assert "stream" in cai
    f = accel.device_array((3, 4), order='F')
    assert tuple(f.__cuda_array_interface__["strides"]) == (8, 24)
    m = accel.mapped_array(4)
    assert m.__cuda_array_interface__["version"] == 3
    v = accel.as_cuda_array(d)
    assert v.__cuda_array_interface__["data"][0] == cai["data"][0]


@pytest.mark.cpu_only
def test_as_cuda_array_of_a_cai_object_on_cpu():
    x = np.arange(20, dtype=np.float64)
    w = CAIWrapper(x)
    v = accel.as_cuda_array(w)
    assert isinstance(v, accel.DeviceNDArray)
    assert v.shape == (20,) and v.dtype == np.float64
    x[5] = -5
    assert v.copy_to_host()[5] == -5
    v.copy_to_device(np.zeros(20))
    np.testing.assert_array_equal(x, 0)
    st = np.arange(40, dtype=np.int32).reshape(5, 8)[:, ::2]
    vs = accel.as_cuda_array(CAIWrapper(st))
    assert vs.strides == st.strides
    np.testing.assert_array_equal(vs.copy_to_host(), st)


@pytest.mark.cpu_only
def test_as_cuda_array_bad_cai_dicts():
    x = np.arange(4, dtype=np.float32)
    for override in ({"typestr": "<c8"}, {"typestr": "garbage"},
                     {"shape": (-1,)}, {"shape": "abc"},
                     {"data": "nope"}, {"version": "x"},
                     {"strides": (4, 4)}):
        w = CAIWrapper(x, **override)
        with raises_any(ValueError, TypeError):
            accel.as_cuda_array(w)

    class NotADict:
        __cuda_array_interface__ = 42
    with raises_any(ValueError, TypeError):
        accel.as_cuda_array(NotADict())


def test_interface_errors_are_raised_at_once():
    """No Python code runs with an exception set: a bad version is a
    ValueError, not a SystemError."""
    buf = np.arange(4.0)

    class Truthy:
        def __bool__(self):
            raise AssertionError("called with an exception set")

    class Bad:
        @property
        def __cuda_array_interface__(self):
            return {"shape": (4,), "typestr": "<f8",
                    "data": (buf.ctypes.data, Truthy()), "version": "3"}
    with pytest.raises(ValueError):
        accel.as_cuda_array(Bad())


@pytest.mark.parametrize("version", [0, 4, 2**32 + 3, -2**32 + 3])
def test_interface_versions_out_of_range(version):
    buf = np.arange(4.0)

    class Bad:
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f8",
                                    "data": (buf.ctypes.data, False),
                                    "version": version}
    with pytest.raises(ValueError):
        accel.as_cuda_array(Bad())


@pytest.mark.parametrize("entry", [{"stream": 0}, {"stream": "1"},
                                   {"typestr": "<f8\0zz"},
                                   {"data": (2**64 - 8, False)}])
def test_interface_malformed_entries(entry):
    """CAI v3: stream None or a number other than 0; a typestr; data that
    fits in the address space."""
    buf = np.arange(4.0)
    cai = {"shape": (4,), "typestr": "<f8", "data": (buf.ctypes.data, False),
           "version": 3}
    cai.update(entry)

    class Bad:
        __cuda_array_interface__ = cai
    with pytest.raises(ValueError):
        accel.as_cuda_array(Bad())


def test_cai_dict_emptied_while_read_is_not_used_after_free():
    """Reading __cuda_array_interface__'s entries runs the producer's code
    (a shape entry's __index__), which may empty the producer's dict: the
    module reads a copy of the entries, so that none is freed under it (a
    borrowed one would be: heap-use-after-free in parse_cai under ASan)."""
    if accel.get_current_device().backend == "accel":
        pytest.skip("accel's device arrays have no interface to take a pointer from")
    out = check_isolated("""
        import accel, numpy as np
        backend = accel.get_current_device().backend
        d = accel.device_array((2, 2))
        ptr = (d.__cuda_array_interface__ if backend == "cuda"
               else d.__array_interface__)["data"][0]

        class Index:
            def __index__(self):
                producer.cai.clear()
                # reuse what clear() freed: strings and tuples of the same sizes
                producer.junk = [("|b%d" % (i % 2 + 1), (i, i)) for i in range(10000)]
                return 2

        class Producer:
            def __init__(self):
                self.cai = {"shape": (Index(), 2), "typestr": "".join(["<", "f8"]),
                            "data": (int(str(ptr)), False), "version": 3,
                            "strides": None}

            @property
            def __cuda_array_interface__(self):
                return self.cai

        producer = Producer()
        v = accel.as_cuda_array(producer)
        print(v.shape, v.dtype, v.__cuda_array_interface__["data"][0] == ptr
              if backend == "cuda" else v.__array_interface__["data"][0] == ptr)
    """)
    assert out.split() == ["(2,", "2)", "float64", "True"], out


# ------------------------------------------------------------ as_cuda_array

def test_as_cuda_array_of_device_array_shares_memory():
    d = accel.to_device(np.arange(6, dtype=np.int32))
    v = accel.as_cuda_array(d)
    assert isinstance(v, accel.DeviceNDArray)
    v.copy_to_device(np.full(6, 2, dtype=np.int32))
    np.testing.assert_array_equal(d.copy_to_host(), 2)
    v2 = accel.as_cuda_array(d, sync=False)
    np.testing.assert_array_equal(v2.copy_to_host(), 2)


def test_as_cuda_array_of_mapped_and_pinned_is_zero_copy():
    m = accel.mapped_array(8, dtype=np.int64)
    m[:] = np.arange(8)
    vm = accel.as_cuda_array(m)
    np.testing.assert_array_equal(vm.copy_to_host(), np.arange(8))
    m[:] = 5
    np.testing.assert_array_equal(vm.copy_to_host(), 5)
    vm.copy_to_device(np.full(8, 6, dtype=np.int64))
    np.testing.assert_array_equal(m, 6)

    p = accel.pinned_array((2, 4), dtype=np.float32)
    p[...] = 1.0
    vp = accel.as_cuda_array(p)
    assert vp.shape == (2, 4)
    p[...] = 3.0
    np.testing.assert_array_equal(vp.copy_to_host(), 3.0)
    vp.copy_to_device(np.full((2, 4), 4.0, dtype=np.float32))
    np.testing.assert_array_equal(p, 4.0)


def test_as_cuda_array_of_plain_host_memory(backend, torch):
    x = np.arange(10, dtype=np.int64)[2:]
    t = torch.arange(10, dtype=torch.float32)[3:]
    if backend == "cpu":
        # on a cpu device any host memory is the device's
        vx = accel.as_cuda_array(x)
        np.testing.assert_array_equal(vx.copy_to_host(), x)
        x[0] = 77
        assert vx.copy_to_host()[0] == 77
        vt = accel.as_cuda_array(t)
        np.testing.assert_array_equal(vt.copy_to_host(), t.numpy())
        vt.copy_to_device(np.zeros(7, dtype=np.float32))
        assert float(t.sum()) == 0.0
        r = accel.to_device(vx)      # a device array of the current device
        r.copy_to_device(np.full(8, 1, dtype=np.int64))
        np.testing.assert_array_equal(x, 1)
    else:
        with pytest.raises(ValueError):
            accel.as_cuda_array(x)
        with pytest.raises(ValueError):
            accel.as_cuda_array(t)


def test_as_cuda_array_wrong_types():
    for obj in (5, "abc", [1, 2, 3], None, object()):
        with pytest.raises(TypeError):
            accel.as_cuda_array(obj)


def test_as_cuda_array_of_readonly_numpy_does_not_crash():
    x = np.arange(4.0)
    x.setflags(write=False)
    ok, r = outcome(accel.as_cuda_array, x)
    if not ok:
        assert isinstance(r, (ValueError, BufferError, TypeError)), r


def test_as_cuda_array_keeps_obj_alive(collect):
    # "it keeps obj alive"
    p = accel.pinned_array(16, dtype=np.int32)
    p[:] = np.arange(16)
    w = DLPackWrapper(producer=p)
    ref = weakref.ref(w)
    rc = sys.getrefcount(w)
    v = accel.as_cuda_array(w)
    assert sys.getrefcount(w) > rc
    del w, p
    collect()
    assert ref() is not None
    np.testing.assert_array_equal(v.copy_to_host(), np.arange(16))
    del v
    collect()
    assert ref() is None


def test_as_cuda_array_refcount_returns(collect):
    p = accel.pinned_array(16, dtype=np.int32)
    collect()
    rc = sys.getrefcount(p)
    for _ in range(50):
        v = accel.as_cuda_array(p)
        del v
    collect()
    assert sys.getrefcount(p) == rc


@pytest.mark.two_devices
def test_as_cuda_array_of_another_devices_memory(devices, backend):
    accel.select_device(devices[1])
    try:
        d1 = accel.to_device(np.arange(5.0))
    finally:
        accel.select_device(devices[0])
    if backend == "cpu" and devices[1].backend == "cpu":
        v = accel.as_cuda_array(d1)    # host memory: any cpu device uses it
        np.testing.assert_array_equal(v.copy_to_host(), np.arange(5.0))
    elif devices[1].backend == backend:
        with pytest.raises(ValueError):
            accel.as_cuda_array(d1)


@pytest.mark.cpu_only
def test_as_cuda_array_of_torch_outlives_the_tensor(torch, collect):
    t = torch.arange(1000, dtype=torch.int64) * 7
    v = accel.as_cuda_array(t)
    w = v.reshape(10, 100)
    del t
    collect()
    junk = [torch.full((1000,), -1, dtype=torch.int64) for _ in range(20)]
    np.testing.assert_array_equal(v.copy_to_host(), np.arange(1000) * 7)
    np.testing.assert_array_equal(w.copy_to_host().ravel(),
                                  np.arange(1000) * 7)
    e = np.from_dlpack(w)           # re-exported from the imported view
    del v, w
    collect()
    np.testing.assert_array_equal(e.ravel(), np.arange(1000) * 7)
    del junk
