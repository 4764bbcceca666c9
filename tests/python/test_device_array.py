"""DeviceNDArray: attributes, transfers, layouts, views (docs/python.md,
"Arrays"; Numba's DeviceNDArray in seed 004)."""
import gc
import sys

import numpy as np
import pytest

import accel
from accel_testutil import (ALL_DTYPES, outcome, raises_bad_value, sample)


# ---------------------------------------------------------------- attributes

@pytest.mark.parametrize("shape,order", [
    ((5,), 'C'), ((2, 3), 'C'), ((2, 3), 'F'), ((2, 3, 4), 'F'),
    ((), 'C'), ((0,), 'C'), ((3, 0, 2), 'C'), ((1, 1, 1, 1), 'C'),
])
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.float32,
                                   np.float64, np.uint64, np.bool_])
def test_device_array_attributes_match_numpy(shape, order, dtype):
    ref = np.empty(shape, dtype=dtype, order=order)
    d = accel.device_array(shape, dtype=dtype, order=order)
    assert isinstance(d, accel.DeviceNDArray)
    assert d.shape == ref.shape and isinstance(d.shape, tuple)
    assert all(type(s) is int for s in d.shape)
    assert d.dtype == ref.dtype and isinstance(d.dtype, np.dtype)
    assert d.size == ref.size and type(d.size) is int
    assert d.nbytes == ref.nbytes
    assert d.ndim == ref.ndim
    if ref.size > 0:
        assert d.strides == ref.strides
    assert isinstance(d.strides, tuple) and len(d.strides) == d.ndim
    assert d.device.id == accel.get_current_device().id


def test_shape_given_as_int_list_and_numpy_int():
    assert accel.device_array(7).shape == (7,)
    assert accel.device_array([2, 3]).shape == (2, 3)
    ok, r = outcome(accel.device_array, np.int64(4))  # Numba refuses it
    assert not ok or r.shape == (4,)
    assert accel.device_array((np.int32(2), np.uint8(3))).shape == (2, 3)


def test_default_dtype_is_float64():
    assert accel.device_array(3).dtype == np.float64
    assert accel.pinned_array(3).dtype == np.float64
    assert accel.mapped_array(3).dtype == np.float64


@pytest.mark.parametrize("spec", ["float32", "f4", np.float32,
                                  np.dtype("float32"), "<f4"])
def test_dtype_spellings(spec):
    assert accel.device_array(3, dtype=spec).dtype == np.dtype(np.float32)


def test_explicit_strides_are_kept():
    d = accel.device_array((2, 3), dtype=np.float64, strides=(8, 16))
    assert d.strides == (8, 16)
    assert d.is_f_contiguous() and not d.is_c_contiguous()
    g = accel.device_array((4,), dtype=np.int32, strides=(8,))
    assert g.strides == (8,)
    assert not g.is_c_contiguous() and not g.is_f_contiguous()


def test_contiguity_predicates():
    c = accel.device_array((3, 4), order='C')
    f = accel.device_array((3, 4), order='F')
    assert c.is_c_contiguous() and not c.is_f_contiguous()
    assert f.is_f_contiguous() and not f.is_c_contiguous()
    one = accel.device_array(5)
    assert one.is_c_contiguous() and one.is_f_contiguous()
    zero_d = accel.device_array(())
    assert zero_d.is_c_contiguous() and zero_d.is_f_contiguous()


# ---------------------------------------------------------------- roundtrips

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(17,), (3, 5), (2, 3, 4), (), (0,),
                                   (4, 0)])
def test_to_device_copy_to_host_roundtrip(dtype, shape):
    x = sample(dtype, shape, seed=hash((np.dtype(dtype).name, shape)) & 0xff)
    d = accel.to_device(x)
    assert d.shape == x.shape and d.dtype == x.dtype
    h = d.copy_to_host()
    assert isinstance(h, np.ndarray)
    assert h.shape == x.shape and h.dtype == x.dtype
    np.testing.assert_array_equal(h, x)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_copy_to_device_then_host_into_given_array(dtype):
    x = sample(dtype, (6, 7), seed=3)
    d = accel.device_array((6, 7), dtype=dtype)
    d.copy_to_device(x)
    out = np.zeros((6, 7), dtype=dtype)
    r = d.copy_to_host(out)
    assert r is out
    np.testing.assert_array_equal(out, x)


def test_copy_to_host_returns_a_copy_not_the_device_memory():
    x = np.arange(10.0)
    d = accel.to_device(x)
    h = d.copy_to_host()
    h[:] = -1
    np.testing.assert_array_equal(d.copy_to_host(), x)
    h2 = d.copy_to_host()
    assert h2.ctypes.data != h.ctypes.data


def test_to_device_copies_the_source():
    # a plain NumPy array is not device memory: to_device copies it, even
    # on the cpu backend where any host memory is usable
    x = np.arange(8, dtype=np.int32)
    d = accel.to_device(x)
    x[:] = 99
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(8))


def test_zero_d_scalar_and_numpy_scalar():
    d = accel.to_device(np.float64(3.5))
    assert d.shape == () and d.size == 1 and d.ndim == 0
    h = d.copy_to_host()
    assert h.shape == () and h == 3.5
    d2 = accel.to_device(np.array(-7, dtype=np.int16))
    assert d2.copy_to_host() == -7 and d2.dtype == np.int16


def test_to_device_of_python_lists_and_scalars():
    d = accel.to_device([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(d.copy_to_host(), [[1, 2, 3], [4, 5, 6]])
    assert d.dtype == np.asarray([[1, 2, 3]]).dtype
    assert accel.to_device(2.25).copy_to_host() == 2.25
    assert accel.to_device([True, False]).dtype == np.bool_


@pytest.mark.parametrize("make", [
    lambda: np.arange(40, dtype=np.int64)[::3],
    lambda: np.arange(40, dtype=np.float32)[::-1],
    lambda: np.arange(60, dtype=np.int16).reshape(6, 10)[1:5, 2:9:2],
    lambda: np.arange(60, dtype=np.float64).reshape(6, 10).T,
    lambda: np.asfortranarray(np.arange(24, dtype=np.uint32).reshape(2, 3, 4)),
    lambda: np.broadcast_to(np.arange(5, dtype=np.int32), (4, 5)),
    lambda: np.arange(24, dtype=np.uint8).reshape(2, 3, 4).transpose(1, 0, 2),
    lambda: np.arange(10, dtype='>i4'),
    lambda: np.frombuffer(bytearray(8 * 9 + 1), dtype=np.float64, count=9,
                          offset=1),
], ids=["step3", "reversed", "2d-slice", "transposed", "fortran3d",
        "broadcast", "permuted", "big-endian", "misaligned"])
def test_to_device_of_awkward_numpy_layouts(make):
    x = make()
    ok, d = outcome(accel.to_device, x)
    if not ok and x.dtype.byteorder == '>':
        # a byte order the device has no type for may be refused cleanly
        assert isinstance(d, (TypeError, ValueError)), d
        return
    assert ok, d
    assert d.shape == x.shape
    h = d.copy_to_host()
    np.testing.assert_array_equal(h, x)
    if x.dtype.isnative:
        assert d.dtype == x.dtype


def test_to_device_keeps_fortran_layout():
    x = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    d = accel.to_device(x)
    assert d.is_f_contiguous()
    assert d.strides == x.strides
    np.testing.assert_array_equal(d.copy_to_host(), x)


def test_fortran_device_array_roundtrip_values():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    d = accel.device_array((3, 4), dtype=np.int32, order='F')
    d.copy_to_device(x)       # a C-ordered source into an F-ordered array
    np.testing.assert_array_equal(d.copy_to_host(), x)
    ok, r = outcome(d.copy_to_host, np.zeros((3, 4), dtype=np.int32))
    if ok:                    # a C-ordered destination: values, not bytes
        np.testing.assert_array_equal(r, x)


def test_strided_device_array_roundtrip():
    # a device array with gaps between its entries
    d = accel.device_array((3, 4), dtype=np.float64, strides=(64, 8))
    x = np.arange(12.0).reshape(3, 4)
    ok, e = outcome(d.copy_to_device, x)
    if ok:
        np.testing.assert_array_equal(d.copy_to_host(), x)
    else:
        assert isinstance(e, (ValueError, accel.AccelError)), e


def test_copy_to_host_into_strided_destination_respects_gaps():
    x = np.arange(10, dtype=np.int64)
    d = accel.to_device(x)
    big = np.full(20, -1, dtype=np.int64)
    ok, e = outcome(d.copy_to_host, big[::2])
    if not ok:
        assert isinstance(e, (ValueError, TypeError, accel.AccelError)), e
        np.testing.assert_array_equal(big, -1)
        return
    np.testing.assert_array_equal(big[::2], x)
    np.testing.assert_array_equal(big[1::2], -1)   # the gaps are untouched


def test_copy_to_device_from_device_array():
    a = accel.to_device(np.arange(9.0))
    b = accel.device_array(9)
    b.copy_to_device(a)
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(9.0))
    a.copy_to_device(np.zeros(9))
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(9.0))


def test_empty_arrays_transfer():
    d = accel.device_array((0, 5), dtype=np.int32)
    assert d.size == 0 and d.nbytes == 0
    h = d.copy_to_host()
    assert h.shape == (0, 5) and h.dtype == np.int32
    d.copy_to_device(np.empty((0, 5), dtype=np.int32))
    assert d.reshape(5, 0).shape == (5, 0)


# ---------------------------------------------------------------- to_device

def test_to_device_to_argument_returns_the_target():
    d = accel.device_array((4, 2), dtype=np.int16)
    x = np.arange(8, dtype=np.int16).reshape(4, 2)
    r = accel.to_device(x, to=d)
    assert r is d
    np.testing.assert_array_equal(d.copy_to_host(), x)


def test_to_device_to_with_stream():
    s = accel.stream()
    d = accel.device_array(1000, dtype=np.int64)
    r = accel.to_device(np.arange(1000), stream=s, to=d)
    s.synchronize()
    assert r is d
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(1000))


def test_to_device_to_wrong_shape_is_refused():
    d = accel.device_array(4, dtype=np.float64)
    d.copy_to_device(np.zeros(4))
    with raises_bad_value():
        accel.to_device(np.ones(5), to=d)
    np.testing.assert_array_equal(d.copy_to_host(), np.zeros(4))


def test_to_device_copy_false_allocates_only():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = accel.to_device(x, copy=False)
    assert isinstance(d, accel.DeviceNDArray)
    assert d.shape == x.shape and d.dtype == x.dtype
    # a new allocation, not the source's memory
    d.copy_to_device(np.zeros((3, 4), dtype=np.float32))
    np.testing.assert_array_equal(x, np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("copy", [True, False])
def test_to_device_of_device_array_shares_memory(copy):
    d = accel.to_device(np.arange(6, dtype=np.int32))
    r = accel.to_device(d, copy=copy)
    assert isinstance(r, accel.DeviceNDArray)
    assert r.shape == d.shape and r.dtype == d.dtype
    r.copy_to_device(np.full(6, 7, dtype=np.int32))
    np.testing.assert_array_equal(d.copy_to_host(), 7)
    d.copy_to_device(np.full(6, 3, dtype=np.int32))
    np.testing.assert_array_equal(r.copy_to_host(), 3)


def test_to_device_of_pinned_array_copies():
    p = accel.pinned_array(8, dtype=np.int64)
    p[:] = np.arange(8)
    d = accel.to_device(p)
    p[:] = -1
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(8))


def test_to_device_of_readonly_array():
    x = np.arange(5.0)
    x.setflags(write=False)
    np.testing.assert_array_equal(accel.to_device(x).copy_to_host(), x)


class _LyingDtype(np.ndarray):
    """A subclass whose dtype property claims 8-byte entries over 1-byte ones."""

    @property
    def dtype(self):
        return np.dtype(np.float64)


def _lying_array():
    # strides of 8 bytes pass the alignment test of float64; the entries
    # claimed run 7 bytes past the end of the memory
    n = 1 << 17
    return np.zeros(8 * (n - 1) + 1, dtype=np.int8)[::8].view(_LyingDtype)


def test_lying_dtype_property_is_refused_not_read_past_the_memory():
    """A subclass's dtype property may claim larger entries than its
    memory holds: to_device() refuses the array rather than read past the
    memory with the buffer's layout (heap-buffer-overflow READ in
    accel_array_copy_to_device under ASan)."""
    with pytest.raises(ValueError, match="8-byte entries"):
        accel.to_device(_lying_array())


def test_lying_dtype_property_is_refused_as_a_destination():
    """... nor does copy_to_host(ary) write past it (heap-buffer-overflow
    WRITE under ASan)."""
    d = accel.to_device(np.arange(float(1 << 17)))
    with pytest.raises(ValueError, match="8-byte entries"):
        d.copy_to_host(_lying_array())


# what a subclass's __buffer__ exports instead of its own memory
_OTHER = np.full(1 << 10, 5.0)


class _OtherBuffer(np.ndarray):
    def __buffer__(self, flags):
        return memoryview(_OTHER)


@pytest.mark.skipif(sys.version_info < (3, 12),
                    reason="__buffer__ in Python classes is Python 3.12's")
def test_ndarray_subclass_buffer_is_not_used_instead_of_its_memory():
    """A subclass's __buffer__ may answer the buffer protocol with any
    memory, released at once (a temporary's): the module reads NumPy arrays
    through NumPy's own slot, as NumPy itself does, so that it copies from
    and into the array's memory and uses no memory freed under it."""
    src = np.zeros(1 << 10).view(_OtherBuffer)
    assert (accel.to_device(src).copy_to_host() == 0).all()
    dst = np.zeros(1 << 10).view(_OtherBuffer)
    accel.to_device(np.arange(float(1 << 10))).copy_to_host(dst)
    assert (np.asarray(dst) == np.arange(float(1 << 10))).all()
    assert (_OTHER == 5.0).all()


# ---------------------------------------------------------------- *_like

def test_device_array_like_numpy_and_device():
    x = np.zeros((3, 4), dtype=np.uint16)
    d = accel.device_array_like(x)
    assert d.shape == (3, 4) and d.dtype == np.uint16 and d.is_c_contiguous()
    d2 = accel.device_array_like(d)
    assert d2.shape == (3, 4) and d2.dtype == np.uint16
    s = accel.stream()
    d3 = accel.device_array_like(x, stream=s)
    assert d3.shape == (3, 4)


def test_device_array_like_follows_fortran_and_drops_gaps():
    f = np.asfortranarray(np.zeros((3, 4), dtype=np.float32))
    df = accel.device_array_like(f)
    assert df.is_f_contiguous() and df.strides == f.strides
    g = np.zeros(20, dtype=np.int64)[::2]
    dg = accel.device_array_like(g)
    assert dg.shape == (10,) and dg.strides == (8,)
    assert dg.is_c_contiguous()


def test_like_of_zero_d_and_empty():
    assert accel.device_array_like(np.float32(1)).shape == ()
    assert accel.device_array_like(np.zeros((0, 3))).shape == (0, 3)


# ---------------------------------------------------------------- views

def test_reshape_is_a_view():
    d = accel.to_device(np.arange(12, dtype=np.int32))
    r = d.reshape(3, 4)
    assert isinstance(r, accel.DeviceNDArray)
    assert r.shape == (3, 4) and r.dtype == np.int32
    np.testing.assert_array_equal(r.copy_to_host(),
                                  np.arange(12).reshape(3, 4))
    r.copy_to_device(np.full((3, 4), 5, dtype=np.int32))
    np.testing.assert_array_equal(d.copy_to_host(), np.full(12, 5))
    d.copy_to_device(np.arange(12, dtype=np.int32)[::-1].copy())
    np.testing.assert_array_equal(r.copy_to_host(),
                                  np.arange(12)[::-1].reshape(3, 4))


def test_reshape_forms():
    d = accel.to_device(np.arange(24.0))
    assert d.reshape((2, 3, 4)).shape == (2, 3, 4)
    assert d.reshape(-1).shape == (24,)
    assert d.reshape(4, -1).shape == (4, 6)
    assert d.reshape((-1, 2, 3)).shape == (4, 2, 3)
    assert d.reshape([6, 4]).shape == (6, 4)
    np.testing.assert_array_equal(d.reshape(4, 6, order='F').copy_to_host(),
                                  np.arange(24.0).reshape(4, 6, order='F'))
    z = accel.to_device(np.float64(2.0))
    assert z.reshape(1).shape == (1,)
    assert z.reshape(()).shape == ()
    assert d.shape == (24,)   # the original is untouched


def test_reshape_and_ravel_of_fortran_array():
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    d = accel.to_device(np.asfortranarray(x))
    with pytest.raises(ValueError):
        d.reshape(12)                 # order 'C' would need a copy
    with pytest.raises(ValueError):
        d.ravel()
    flat = d.ravel(order='F')
    np.testing.assert_array_equal(flat.copy_to_host(), x.ravel(order='F'))
    flat_a = d.ravel(order='A')
    np.testing.assert_array_equal(flat_a.copy_to_host(), x.ravel(order='F'))
    r = d.reshape(4, 3, order='F')
    np.testing.assert_array_equal(r.copy_to_host(),
                                  x.reshape(4, 3, order='F'))
    # the view shares the memory
    flat.copy_to_device(np.zeros(12, dtype=np.int64))
    np.testing.assert_array_equal(d.copy_to_host(), 0)


def test_reshape_refuses_where_a_copy_is_needed():
    g = accel.device_array((3, 4), dtype=np.float64, strides=(64, 8))
    with pytest.raises(ValueError):
        g.reshape(12)
    with pytest.raises(ValueError):
        g.reshape(4, 3)
    with pytest.raises(ValueError):
        g.reshape(12, order='F')
    # its own shape keeps its strides
    same = g.reshape(3, 4)
    assert same.shape == (3, 4) and same.strides == (64, 8)


def test_ravel_refuses_arrays_with_gaps():
    g = accel.device_array(5, dtype=np.int32, strides=(8,))
    with pytest.raises(ValueError):
        g.ravel()
    with pytest.raises(ValueError):
        g.ravel(order='A')
    g2 = accel.device_array((3, 4), dtype=np.float64, strides=(64, 8))
    with pytest.raises(ValueError):
        g2.ravel()


def test_ravel_view_shares_memory():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    d = accel.to_device(x)
    f = d.ravel()
    assert f.shape == (6,)
    f.copy_to_device(np.arange(6, dtype=np.float32)[::-1].copy())
    np.testing.assert_array_equal(d.copy_to_host(),
                                  np.arange(6)[::-1].reshape(2, 3))
    z = accel.to_device(np.float32(4.0)).ravel()
    assert z.shape == (1,)
    np.testing.assert_array_equal(z.copy_to_host(), [4.0])


@pytest.mark.parametrize("bad", [(5,), (2, 7), (-1, -1), (-2, 6), (0,)])
def test_reshape_bad_shapes(bad):
    d = accel.device_array(12)
    with pytest.raises(ValueError):
        d.reshape(*bad)


@pytest.mark.parametrize("order", ['X', 'c ', '', 'K'])
def test_reshape_ravel_bad_order(order):
    d = accel.device_array(12)
    with pytest.raises(ValueError):
        d.reshape(3, 4, order=order)
    if order == 'K':      # NumPy's ravel takes 'K'; Numba's does not
        return
    with pytest.raises(ValueError):
        d.ravel(order=order)


def test_views_keep_the_memory_alive(collect):
    x = np.arange(100, dtype=np.int64)
    d = accel.to_device(x)
    r = d.reshape(10, 10)
    f = r.ravel()
    del d, r
    collect()
    junk = [accel.to_device(np.full(100, -5, dtype=np.int64))
            for _ in range(20)]
    np.testing.assert_array_equal(f.copy_to_host(), x)
    del junk


def test_repr_and_str_do_not_crash():
    for obj in (accel.device_array((2, 2)), accel.device_array(()),
                accel.get_current_device(), accel.stream(),
                accel.mapped_array(3)):
        assert isinstance(repr(obj), str)
        assert isinstance(str(obj), str)
    gc.collect()


# ---------------------------------------------------------------- the class
def test_device_ndarray_constructor():
    """DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None)"""
    d = accel.DeviceNDArray((3, 4), None, np.float32)
    assert d.shape == (3, 4) and d.strides == (16, 4) and d.is_c_contiguous()
    d.copy_to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(d.copy_to_host(),
                                  np.arange(12).reshape(3, 4))
    f = accel.DeviceNDArray((3, 4), (4, 12), np.float32)
    assert f.strides == (4, 12) and f.is_f_contiguous()
    s = accel.stream()
    a = accel.DeviceNDArray((2,), None, np.int64, stream=s)
    assert a.stream is s
    with pytest.raises(TypeError):
        accel.DeviceNDArray((2,), None, np.int64, gpu_data=object())
