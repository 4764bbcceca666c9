"""Misuse: the right exception, never a crash (docs/python.md, "Errors":
library failures raise accel.AccelError (a RuntimeError) with code and
code_name; wrong Python types TypeError; bad values ValueError)."""
import gc

import numpy as np
import pytest

import accel
from accel_testutil import (ACCEL_ERROR_OUT_OF_MEMORY, outcome,
                            raises_any, raises_bad_value)


# ------------------------------------------------------------ AccelError

def test_accel_error_class():
    assert issubclass(accel.AccelError, RuntimeError)


def _oom():
    dev = accel.get_current_device()
    free, total = dev.mem_info()
    with pytest.raises(accel.AccelError) as ei:
        accel.device_array(total + free + (1 << 30), dtype=np.uint8)
    return ei.value


def test_out_of_memory_is_an_accel_error():
    e = _oom()
    assert e.code == ACCEL_ERROR_OUT_OF_MEMORY
    assert type(e.code) is int
    assert e.code_name == "ACCEL_ERROR_OUT_OF_MEMORY"
    msg = str(e)
    assert msg and msg != e.code_name
    assert isinstance(e, RuntimeError)


def test_process_recovers_after_out_of_memory(collect):
    for _ in range(3):
        _oom()
    d = accel.to_device(np.arange(10))
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10))


def test_exhaust_then_free_then_allocate_again(collect):
    dev = accel.get_current_device()
    collect()
    free, total = dev.mem_info()
    # the pool's idle chunks count as used in mem_info(), and a pool gives
    # them back when short: they are free for this test too
    stats = dev.pool_stats()
    free += stats["reserved"] - stats["allocated"]
    size = int(free * 0.6) & ~0xFFFFF
    a = accel.device_array(size, dtype=np.uint8)
    with pytest.raises(accel.AccelError) as ei:
        accel.device_array(size, dtype=np.uint8)
    assert ei.value.code_name == "ACCEL_ERROR_OUT_OF_MEMORY"
    del a
    collect()
    b = accel.device_array(size, dtype=np.uint8)   # the memory came back
    del b
    collect()


def test_a_mapped_views_refusal_says_why():
    """A library failure raises the library's message."""
    m = accel.mapped_array(8)
    with pytest.raises(ValueError, match="negative"):
        m[::-1].__dlpack__()


# ------------------------------------------------------------ constructors

@pytest.mark.parametrize("fn", [accel.device_array, accel.pinned_array,
                                accel.mapped_array],
                         ids=["device", "pinned", "mapped"])
def test_constructor_bad_values(fn):
    with pytest.raises(ValueError):
        fn(-1)
    with pytest.raises(ValueError):
        fn((3, -2))
    for order in ('X', 'K', '', 'CF', 'c '):
        with pytest.raises(ValueError):
            fn((2, 2), order=order)
    with pytest.raises(ValueError):
        fn((2, 3), strides=(8,))
    with pytest.raises(ValueError):
        fn((2, 3), strides=(8, 8, 8))
    with raises_bad_value():
        fn(3, strides=(-8,))
    with raises_bad_value():
        fn(3, dtype=np.float64, strides=(4,))        # misaligned entries
    with raises_bad_value():
        fn((1,) * 33)                                # past ACCEL_MAX_DIMS


@pytest.mark.parametrize("shape", [(1 << 62,), (1 << 32, 1 << 32, 1 << 32),
                                   (1 << 33, 1 << 31), (1 << 63,),
                                   (3, 1 << 61)])
def test_overflowing_shapes_are_refused(shape):
    # the byte count wraps around size_t: it must be refused, not made
    # into a tiny allocation with a huge shape
    # (shapes whose bytes fit a ptrdiff_t may fail as out of memory instead)
    for fn in (accel.device_array, accel.mapped_array, accel.pinned_array):
        with raises_any(ValueError, OverflowError, MemoryError,
                        accel.AccelError):
            fn(shape, dtype=np.uint8)


@pytest.mark.parametrize("dtype", ["no-such-type", "complex64", np.complex128,
                                   object, "U3", "f2", "datetime64[s]"])
def test_unsupported_dtypes(dtype):
    for fn in (accel.device_array, accel.mapped_array, accel.pinned_array):
        with raises_any(TypeError, ValueError):
            fn(3, dtype=dtype)


def test_structured_dtype_no_crash():
    dt = np.dtype([("a", np.int32), ("b", np.float64)])
    ok, d = outcome(accel.device_array, 3, dtype=dt)
    if ok:
        assert d.shape == (3,)
    else:
        assert isinstance(d, (TypeError, ValueError)), d
    ok, d = outcome(accel.to_device, np.zeros(3, dtype=dt))
    if ok:
        np.testing.assert_array_equal(d.copy_to_host(), np.zeros(3, dtype=dt))


def test_constructor_wrong_types():
    for fn in (accel.device_array, accel.pinned_array, accel.mapped_array):
        for shape in ("abc", 2.5, (2.5,), (2, "x"), None, object()):
            with pytest.raises(TypeError):
                fn(shape)
        with pytest.raises(TypeError):
            fn(3, order=1)
        with pytest.raises(TypeError):
            fn(3, strides=("a",))
        with pytest.raises(TypeError):
            fn(3, strides=5.5)
        with pytest.raises(TypeError):
            fn(3, strides=(8.0,))
    with pytest.raises(TypeError):
        accel.device_array(3, bogus=1)
    with pytest.raises(TypeError):
        accel.mapped_array(3, nonsense=True)


def test_order_with_a_nul_is_refused():
    """An order is 'C' or 'F', the whole string: 'C\\0' and '\\0' are
    refused, not read up to their first NUL."""
    with pytest.raises(ValueError, match="order"):
        accel.device_array(3, order="C\0")
    with pytest.raises(ValueError, match="order"):
        accel.device_array(3, order="\0")
    with pytest.raises(ValueError, match="order"):
        accel.device_array(6).reshape(2, 3, order="F\0")


def test_to_device_unsupported_objects():
    for obj in (np.zeros(3, dtype=np.complex64), np.array(["a", "b"]),
                np.array([object()]), None, {"a": 1}, "text"):
        with raises_any(TypeError, ValueError):
            accel.to_device(obj)


def test_to_device_to_wrong_type():
    with raises_any(TypeError, ValueError):
        accel.to_device(np.zeros(3), to=np.zeros(3))
    with raises_any(TypeError, ValueError):
        accel.to_device(np.zeros(3), to="x")


def test_to_device_to_wrong_dtype_or_shape():
    d = accel.device_array((2, 3), dtype=np.float32)
    d.copy_to_device(np.ones((2, 3), dtype=np.float32))
    with raises_bad_value(TypeError):
        accel.to_device(np.zeros((3, 2), dtype=np.float32), to=d)
    with raises_bad_value(TypeError):
        accel.to_device(np.zeros((2, 3), dtype=np.int32), to=d)
    np.testing.assert_array_equal(d.copy_to_host(), 1)


# ------------------------------------------------------------ transfers

def test_copy_to_host_wrong_shape_or_dtype():
    d = accel.to_device(np.arange(10, dtype=np.int32))
    with raises_bad_value():
        d.copy_to_host(np.empty(5, dtype=np.int32))
    with raises_bad_value():
        d.copy_to_host(np.empty(20, dtype=np.int32))
    with raises_bad_value():
        d.copy_to_host(np.empty((2, 3), dtype=np.int32))
    with raises_bad_value(TypeError):
        d.copy_to_host(np.empty(10, dtype=np.float32))
    with raises_bad_value(TypeError):
        d.copy_to_host(np.empty(10, dtype=np.int64))
    with pytest.raises(TypeError):
        d.copy_to_host("x")
    with pytest.raises(TypeError):
        d.copy_to_host([0] * 10)


def test_copy_to_host_into_readonly_is_refused():
    d = accel.to_device(np.arange(10, dtype=np.int32))
    ro = np.zeros(10, dtype=np.int32)
    ro.setflags(write=False)
    with raises_any(ValueError, TypeError, BufferError, accel.AccelError):
        d.copy_to_host(ro)
    np.testing.assert_array_equal(ro, 0)          # untouched


def test_copy_to_device_wrong_shape_or_dtype():
    d = accel.to_device(np.zeros(10, dtype=np.int32))
    with raises_bad_value():
        d.copy_to_device(np.ones(11, dtype=np.int32))
    with raises_bad_value():
        d.copy_to_device(np.ones(9, dtype=np.int32))
    with raises_bad_value(TypeError):
        d.copy_to_device(np.ones(10, dtype=np.float64))
    with raises_bad_value(TypeError):
        d.copy_to_device(accel.device_array(10, dtype=np.int64))
    with raises_bad_value():
        d.copy_to_device(accel.device_array(7, dtype=np.int32))
    np.testing.assert_array_equal(d.copy_to_host(), 0)
    with raises_any(TypeError, ValueError):
        d.copy_to_device("not an array")
    with raises_any(TypeError, ValueError):
        d.copy_to_device(None)


def test_reshape_wrong_types():
    d = accel.device_array(12)
    for bad in (("a",), (2.5, 2), (None,), ((2, "x"),)):
        with pytest.raises(TypeError):
            d.reshape(*bad)
    with pytest.raises(TypeError):
        d.reshape(3, 4, bogus=1)
    with pytest.raises(TypeError):
        d.ravel(order=3)


# ------------------------------------------------------------ hostile objects

def test_attributes_are_read_only():
    d = accel.device_array((2, 2))
    for name, value in (("shape", (4,)), ("strides", (8,)),
                        ("dtype", np.int8), ("size", 1), ("device", None)):
        with raises_any(AttributeError, TypeError):
            setattr(d, name, value)
    assert d.shape == (2, 2) and d.dtype == np.float64
    dev = accel.get_current_device()
    with raises_any(AttributeError, TypeError):
        dev.id = 5
    assert accel.get_current_device().id == accel.devices()[0].id


def test_uninitialised_objects_do_not_crash():
    # objects made without their constructor must refuse work, not crash
    for cls in (accel.DeviceNDArray, accel.Device, accel.Stream):
        ok, obj = outcome(lambda: cls.__new__(cls))
        if not ok:
            continue
        for op in (repr, str,
                   lambda o: o.shape, lambda o: o.copy_to_host(),
                   lambda o: o.__dlpack__(), lambda o: o.__dlpack_device__(),
                   lambda o: o.reshape(1), lambda o: o.ravel(),
                   lambda o: o.is_c_contiguous(), lambda o: o.mem_info(),
                   lambda o: o.pool_stats(), lambda o: o.synchronize(),
                   lambda o: accel.to_device(o), lambda o: o.id,
                   lambda o: accel.select_device(o),
                   lambda o: accel.to_device(np.zeros(1), stream=o),
                   lambda o: np.asarray(o)):
            outcome(op, obj)
        del obj
        gc.collect()
    for cls in (accel.DeviceNDArray, accel.Device, accel.Stream):
        outcome(cls)
        outcome(cls, (3,), (8,), np.float64)
    gc.collect()


def test_pickle_and_copy_do_not_crash():
    import copy
    import pickle
    d = accel.to_device(np.arange(4.0))
    for op in (lambda: pickle.loads(pickle.dumps(d)), lambda: copy.copy(d),
               lambda: copy.deepcopy(d),
               lambda: pickle.dumps(accel.get_current_device()),
               lambda: pickle.dumps(accel.stream())):
        ok, r = outcome(op)
        if ok and isinstance(r, accel.DeviceNDArray):
            np.testing.assert_array_equal(r.copy_to_host(), np.arange(4.0))
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(4.0))


def test_error_in_dtype_spec_objects():
    class BadDtype:
        @property
        def dtype(self):
            raise KeyError("boom")
    with raises_any():
        accel.device_array(3, dtype=BadDtype())

    class BadShape:
        def __len__(self):
            raise KeyError("boom")

        def __iter__(self):
            raise KeyError("boom")

        def __getitem__(self, i):
            raise KeyError("boom")
    with raises_any():
        accel.device_array(BadShape())

    class BadIndex:
        def __index__(self):
            raise KeyError("boom")
    with raises_any():
        accel.device_array((2, BadIndex()))
    with raises_any():
        accel.device_array(4).reshape(BadIndex())


# ------------------------------------------------------------ integer truncation

BIG = [1 << 64, (1 << 64) + 4, 1 << 70, -(1 << 64) + 4, (1 << 63)]


@pytest.mark.parametrize("big", BIG, ids=hex)
def test_huge_python_ints_are_not_truncated(big):
    # a Python int past 64 bits must be refused, never wrapped to a small
    # value that happens to be valid
    for fn in (accel.device_array, accel.mapped_array, accel.pinned_array):
        with raises_any(ValueError, OverflowError, MemoryError,
                        accel.AccelError):
            fn(big, dtype=np.uint8)
        with raises_any(ValueError, OverflowError, MemoryError,
                        accel.AccelError):
            fn((2, big), dtype=np.uint8)
        with raises_any(ValueError, OverflowError, accel.AccelError):
            fn(4, dtype=np.uint8, strides=(big + 1,))
    d = accel.device_array(4)
    with raises_any(ValueError, OverflowError):
        d.reshape(big)
    with raises_any(ValueError, OverflowError):
        d.reshape(2, big + 2)


@pytest.mark.parametrize("big", BIG + [1 << 40, (1 << 32), -(1 << 32)],
                         ids=hex)
def test_select_device_huge_ids(big, devices):
    with raises_any(ValueError, OverflowError, accel.AccelError):
        accel.select_device(big)
    assert accel.get_current_device().id == devices[0].id
