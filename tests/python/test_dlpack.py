"""DLPack with real consumers: NumPy 1.24 and PyTorch 1.13 (docs/python.md,
"The protocols each array speaks"; accel/dlpack.h)."""
import gc
import threading

import numpy as np
import pytest

import accel
from accel_testutil import (DLPACK_DTYPES, TORCH_DTYPES, DLPackWrapper,
                            capsule_named, expected_device_dlpack,
                            expected_mapped_dlpack, is_capsule, kDLCPU,
                            outcome, pool_allocated, raises_any, sample)


def _churn(n=16, size=256, value=-9):
    """Allocate and fill other memory, to expose reuse of freed memory."""
    keep = [accel.to_device(np.full(size, value, dtype=np.int64))
            for _ in range(n)]
    keep += [accel.mapped_array(size, dtype=np.int64) for _ in range(4)]
    for m in keep[-4:]:
        m[:] = value
    return keep


# ------------------------------------------------------------ device values

def test_dlpack_device_of_device_arrays_on_every_device(devices):
    for dev in devices:
        accel.select_device(dev)
        try:
            d = accel.device_array(4)
            dd = d.__dlpack_device__()
            assert isinstance(dd, tuple) and len(dd) == 2
            assert tuple(int(v) for v in dd) == expected_device_dlpack(dev)
        finally:
            accel.select_device(devices[0])


def test_dlpack_device_of_mapped_and_pinned(backend):
    dev = accel.get_current_device()
    m = accel.mapped_array(4)
    assert tuple(int(v) for v in m.__dlpack_device__()) == \
        expected_mapped_dlpack(dev)
    p = accel.pinned_array(4)
    assert tuple(int(v) for v in p.__dlpack_device__()) == (kDLCPU, 0)


def test_dlpack_of_views_and_zero_d_device():
    d = accel.to_device(np.arange(12.0))
    exp = expected_device_dlpack(accel.get_current_device())
    assert tuple(d.reshape(3, 4).__dlpack_device__()) == exp
    assert tuple(d.ravel().__dlpack_device__()) == exp


# ------------------------------------------------------------ capsules

@pytest.mark.parametrize("kind", ["device", "mapped"])
def test_dlpack_returns_a_dltensor_capsule(kind):
    a = accel.device_array(8) if kind == "device" else accel.mapped_array(8)
    cap = a.__dlpack__()
    assert is_capsule(cap)
    assert capsule_named(cap, b"dltensor")
    cap2 = a.__dlpack__(stream=None)
    assert capsule_named(cap2, b"dltensor")
    del cap, cap2
    gc.collect()
    a.copy_to_host()     # the array is unharmed by dropped capsules


@pytest.mark.device_only
def test_dlpack_stream_minus_one_on_device_memory():
    d = accel.to_device(np.arange(5.0))
    cap = d.__dlpack__(stream=-1)
    assert capsule_named(cap, b"dltensor")
    del cap
    v = accel.as_cuda_array(DLPackWrapper(d))
    np.testing.assert_array_equal(v.copy_to_host(), np.arange(5.0))


def test_dlpack_stream_minus_one_never_crashes():
    # -1 asks for no synchronization; for kDLCPU memory the stream must be
    # None, so either answer is accepted there, but not a crash
    for a in (accel.device_array(3), accel.mapped_array(3)):
        ok, r = outcome(lambda: a.__dlpack__(stream=-1))
        if ok:
            assert capsule_named(r, b"dltensor")
        elif tuple(a.__dlpack_device__())[0] != kDLCPU:
            pytest.fail("stream=-1 refused on non-kDLCPU memory: %r" % (r,))


@pytest.mark.parametrize("stream", [1, 2, 7])
def test_non_none_stream_refused_for_kdlcpu_memory(stream):
    arrays = [accel.mapped_array(3)]
    if accel.get_current_device().backend == "cpu":
        arrays.append(accel.device_array(3))
    for a in arrays:
        if tuple(a.__dlpack_device__())[0] != kDLCPU:
            continue
        with raises_any(RuntimeError, ValueError, BufferError, TypeError):
            a.__dlpack__(stream=stream)


def test_bool_arrays_are_not_exported():
    d = accel.to_device(np.array([True, False, True]))
    with raises_any(BufferError, TypeError, ValueError, RuntimeError):
        d.__dlpack__()
    np.testing.assert_array_equal(d.copy_to_host(), [True, False, True])


def test_dlpack_max_version_keyword_is_harmless():
    d = accel.device_array(3)
    ok, r = outcome(lambda: d.__dlpack__(max_version=(1, 0)))
    if ok:
        assert capsule_named(r, b"dltensor") or \
            capsule_named(r, b"dltensor_versioned")
    else:
        assert isinstance(r, TypeError), r


def test_unconsumed_capsules_release_memory(collect):
    collect()
    before = pool_allocated()
    if before is None:
        pytest.skip("pool_stats() has no 'allocated'")
    d = accel.device_array(1 << 20, dtype=np.uint8)
    caps = [d.__dlpack__() for _ in range(10)]
    del d
    collect()
    during = pool_allocated()
    del caps
    collect()
    after = pool_allocated()
    assert during >= before + (1 << 20)   # the capsules hold the memory
    assert after <= before + 4096, (before, during, after)


# ------------------------------------------------------------ NumPy consumer

@pytest.mark.host_readable
@pytest.mark.parametrize("dtype", DLPACK_DTYPES,
                         ids=lambda d: np.dtype(d).name)
def test_numpy_from_dlpack_device_array_is_zero_copy(dtype):
    # NumPy 1.24 marks imported arrays read-only: writes go through accel
    x = sample(dtype, (4, 5), seed=7)
    d = accel.to_device(x)
    a = np.from_dlpack(d)
    assert a.shape == x.shape and a.dtype == x.dtype
    np.testing.assert_array_equal(a, x)
    y = sample(dtype, (4, 5), seed=8)
    d.copy_to_device(y)
    np.testing.assert_array_equal(a, y)
    t = np.from_dlpack(d)
    assert t.ctypes.data == a.ctypes.data


@pytest.mark.parametrize("dtype", DLPACK_DTYPES,
                         ids=lambda d: np.dtype(d).name)
def test_numpy_from_dlpack_mapped_array_is_zero_copy(dtype):
    m = accel.mapped_array((3, 4), dtype=dtype)
    m[...] = sample(dtype, (3, 4), seed=1)
    a = np.from_dlpack(m)
    assert a.ctypes.data == m.ctypes.data
    np.testing.assert_array_equal(a, m)
    m[...] = sample(dtype, (3, 4), seed=2)
    np.testing.assert_array_equal(a, sample(dtype, (3, 4), seed=2))
    m.copy_to_device(sample(dtype, (3, 4), seed=3))
    np.testing.assert_array_equal(a, sample(dtype, (3, 4), seed=3))
    np.testing.assert_array_equal(m.copy_to_host(), sample(dtype, (3, 4),
                                                           seed=3))


@pytest.mark.host_readable
def test_numpy_from_dlpack_keeps_layouts():
    f = accel.to_device(np.asfortranarray(np.arange(12.0).reshape(3, 4)))
    a = np.from_dlpack(f)
    assert a.strides == f.strides
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4))
    g = accel.device_array((5,), dtype=np.int32, strides=(8,))
    ag = np.from_dlpack(g)
    assert ag.strides == (8,) and ag.shape == (5,)
    z = accel.to_device(np.float32(2.5))
    az = np.from_dlpack(z)
    assert az.shape == () and az == 2.5
    e = accel.device_array((0, 3), dtype=np.float32)
    assert np.from_dlpack(e).shape == (0, 3)
    r = accel.to_device(np.arange(10)).reshape(2, 5, order='F')
    np.testing.assert_array_equal(np.from_dlpack(r),
                                  np.arange(10).reshape(2, 5, order='F'))


@pytest.mark.host_readable
def test_numpy_export_outlives_the_device_array(collect):
    x = np.arange(1000, dtype=np.int64) * 3
    d = accel.to_device(x)
    a = np.from_dlpack(d)
    del d
    collect()
    junk = _churn()
    np.testing.assert_array_equal(a, x)
    del junk


def test_numpy_export_of_mapped_outlives_it(collect):
    m = accel.mapped_array(1000, dtype=np.int64)
    m[:] = np.arange(1000)
    a = np.from_dlpack(m)
    del m
    collect()
    junk = _churn()
    np.testing.assert_array_equal(a, np.arange(1000))
    del junk


def test_mapped_array_exports_wait_for_its_stream():
    """__dlpack__(stream=None) waits for the work queued on the array's
    stream; a MappedNDArray takes the place of a device array."""
    n = 1 << 22
    s = accel.stream()
    src = accel.to_device(np.ones(n))
    m = accel.mapped_array(n, stream=s)
    for _ in range(3):
        m[:] = 0
        src.copy_to_host(m, stream=s)
        assert (np.from_dlpack(m) == 1).all()
        s.synchronize()


@pytest.mark.device_only
def test_numpy_refuses_device_only_memory(collect):
    collect()
    before = pool_allocated()
    d = accel.to_device(np.arange(1 << 18, dtype=np.uint8))
    with raises_any():
        np.from_dlpack(d)
    np.testing.assert_array_equal(d.copy_to_host(),
                                  np.arange(1 << 18, dtype=np.uint8))
    del d
    collect()
    after = pool_allocated()
    if before is not None:
        assert after <= before + 4096    # the refused capsule was released


def test_capsule_consumed_twice_by_numpy_is_an_error():
    m = accel.mapped_array(4, dtype=np.int32)
    m[:] = [1, 2, 3, 4]
    cap = m.__dlpack__()
    w = DLPackWrapper(capsule=cap, device=tuple(m.__dlpack_device__()))
    a = np.from_dlpack(w)
    np.testing.assert_array_equal(a, [1, 2, 3, 4])
    assert capsule_named(cap, b"used_dltensor")
    with raises_any():
        np.from_dlpack(w)
    del cap, w
    gc.collect()
    np.testing.assert_array_equal(a, [1, 2, 3, 4])


# ------------------------------------------------------------ torch consumer

@pytest.mark.host_readable
@pytest.mark.parametrize("dtype", TORCH_DTYPES,
                         ids=lambda d: np.dtype(d).name)
def test_torch_from_dlpack_device_array_is_zero_copy(torch, dtype):
    x = sample(dtype, (3, 7), seed=11)
    d = accel.to_device(x)
    t = torch.from_dlpack(d)
    assert tuple(t.shape) == x.shape
    assert t.device.type == "cpu"
    np.testing.assert_array_equal(t.numpy(), x)
    assert t.data_ptr() == np.from_dlpack(d).ctypes.data
    t.fill_(1)
    np.testing.assert_array_equal(d.copy_to_host(), np.ones_like(x))
    d.copy_to_device(x)
    np.testing.assert_array_equal(t.numpy(), x)


@pytest.mark.host_readable
def test_torch_keeps_strides(torch):
    f = accel.to_device(np.asfortranarray(np.arange(12.0).reshape(3, 4)))
    t = torch.from_dlpack(f)
    assert tuple(t.stride()) == (1, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(12.0).reshape(3, 4))


def test_torch_from_dlpack_mapped(torch, backend):
    m = accel.mapped_array((2, 8), dtype=np.float32)
    m[...] = np.arange(16, dtype=np.float32).reshape(2, 8)
    if backend == "cuda":
        # kDLCUDAHost: a CPU-only PyTorch 1.13 cannot import it
        with raises_any():
            torch.from_dlpack(m)
        return
    t = torch.from_dlpack(m)
    assert t.data_ptr() == m.ctypes.data
    t.mul_(2)
    np.testing.assert_array_equal(m, np.arange(16).reshape(2, 8) * 2)
    np.testing.assert_array_equal(m.copy_to_host(),
                                  np.arange(16).reshape(2, 8) * 2)


@pytest.mark.host_readable
def test_torch_export_outlives_the_device_array(torch, collect):
    x = np.arange(4096, dtype=np.float64)
    d = accel.to_device(x)
    t = torch.from_dlpack(d)
    v = torch.from_dlpack(d.reshape(64, 64))
    del d
    collect()
    junk = _churn()
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal(v.numpy(), x.reshape(64, 64))
    del junk


@pytest.mark.device_only
def test_torch_refuses_device_only_memory(torch):
    on_cuda = accel.get_current_device().backend == "cuda"
    if on_cuda and torch.cuda.is_available():
        pytest.skip("PyTorch reaches cuda memory (test_cuda_frameworks.py)")
    d = accel.to_device(np.arange(10.0))
    with raises_any():
        torch.from_dlpack(d)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(10.0))


def test_capsule_consumed_twice_by_torch_is_an_error(torch):
    if accel.get_current_device().backend == "cpu":
        a = accel.to_device(np.arange(6, dtype=np.int64))
    elif accel.get_current_device().backend == "accel":
        a = accel.mapped_array(6, dtype=np.int64)
        a[:] = np.arange(6)
    else:
        pytest.skip("a CPU-only PyTorch imports no cuda memory")
    cap = a.__dlpack__()
    t = torch.utils.dlpack.from_dlpack(cap)
    assert capsule_named(cap, b"used_dltensor")
    with raises_any():
        torch.utils.dlpack.from_dlpack(cap)
    del cap
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(6))


# ------------------------------------------------------------ accel consumer

def test_accel_imports_its_own_capsule_without_copy():
    d = accel.to_device(np.arange(8, dtype=np.int32))
    cap = d.__dlpack__()
    w = DLPackWrapper(capsule=cap, device=tuple(d.__dlpack_device__()))
    v = accel.as_cuda_array(w)
    assert capsule_named(cap, b"used_dltensor")
    assert v.shape == (8,) and v.dtype == np.int32
    v.copy_to_device(np.full(8, 4, dtype=np.int32))
    np.testing.assert_array_equal(d.copy_to_host(), 4)
    with raises_any(ValueError, TypeError, BufferError, RuntimeError):
        accel.as_cuda_array(w)          # the capsule is used up
    del cap, w
    gc.collect()
    np.testing.assert_array_equal(v.copy_to_host(), 4)


def test_accel_import_of_producer_views_shares_memory():
    d = accel.to_device(np.arange(12.0).reshape(3, 4))
    w = DLPackWrapper(producer=d)
    v = accel.as_cuda_array(w)
    assert v.shape == (3, 4)
    v.copy_to_device(np.zeros((3, 4)))
    np.testing.assert_array_equal(d.copy_to_host(), 0)
    r = accel.to_device(w)
    np.testing.assert_array_equal(r.copy_to_host(), 0)


def test_accel_consumes_torch_capsule(torch, backend):
    t = torch.arange(10, dtype=torch.int64)
    cap = torch.utils.dlpack.to_dlpack(t)
    w = DLPackWrapper(capsule=cap, device=(kDLCPU, 0))
    if backend == "cpu":
        v = accel.as_cuda_array(w)
        assert capsule_named(cap, b"used_dltensor")
        t[3] = 333
        assert v.copy_to_host()[3] == 333
        with raises_any(ValueError, TypeError, BufferError, RuntimeError):
            accel.as_cuda_array(w)
    else:
        # plain host memory is not the device's: refused, and the capsule
        # stays the producer's, unconsumed
        with pytest.raises(ValueError):
            accel.as_cuda_array(w)
        assert capsule_named(cap, b"dltensor")
        t2 = torch.utils.dlpack.from_dlpack(cap)
        assert t2.data_ptr() == t.data_ptr()


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32",
                                   "int64", "float32", "float64"])
def test_to_device_from_torch_copies(torch, dtype):
    t = torch.arange(24).to(getattr(torch, dtype)).reshape(4, 6)
    d = accel.to_device(t)
    assert d.dtype == np.dtype(dtype) and d.shape == (4, 6)
    np.testing.assert_array_equal(d.copy_to_host(), t.numpy())
    t.zero_()
    assert d.copy_to_host()[3, 5] == 23     # it was a copy


def test_to_device_from_torch_views(torch):
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    for t in (base.t(), base[1:5, 2:9:3], base[2:], torch.tensor(5.0)):
        d = accel.to_device(t)
        np.testing.assert_array_equal(d.copy_to_host(), t.numpy())


def test_to_device_of_dlpack_only_object(torch):
    t = torch.arange(7, dtype=torch.int32)
    w = DLPackWrapper(producer=t)
    d = accel.to_device(w)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(7))
    t.zero_()
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(7))


def test_bad_dlpack_producers_raise_cleanly():
    class NotCapsule:
        def __dlpack__(self, stream=None):
            return 5

        def __dlpack_device__(self):
            return (kDLCPU, 0)

    class Raises:
        def __dlpack__(self, stream=None):
            raise KeyError("producer failure")

        def __dlpack_device__(self):
            return (kDLCPU, 0)

    class BadDevice:
        def __dlpack__(self, stream=None):
            return np.arange(3).__dlpack__()

        def __dlpack_device__(self):
            return "nonsense"

    for obj in (NotCapsule(), Raises(), BadDevice()):
        for fn in (accel.as_cuda_array, accel.to_device):
            ok, r = outcome(fn, obj)
            if isinstance(obj, BadDevice) and ok:
                continue   # a consumer may ignore __dlpack_device__
            assert not ok, (obj, fn)


def test_a_capsule_consumed_by_two_threads_is_taken_once():
    """A consumer takes a "dltensor" capsule once: of two threads racing
    for the same one, exactly one gets it, and its deleter runs once."""
    # Only cpu takes host memory: elsewhere both threads are refused, so
    # there is no race to lose, and a few rounds check that a refusal
    # leaves the capsule to its own deleter.
    takes_host_memory = accel.get_current_device().backend == "cpu"
    for _ in range(50 if takes_host_memory else 3):
        cap = np.arange(16.0).__dlpack__()

        class Producer:
            def __dlpack__(self, stream=None):
                return cap

            def __dlpack_device__(self):
                return (1, 0)

        got, errors = [], []
        barrier = threading.Barrier(2)

        def consume():
            barrier.wait()
            try:
                got.append(accel.as_cuda_array(Producer()))
            except (ValueError, accel.AccelError) as e:
                errors.append(e)
        threads = [threading.Thread(target=consume) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if takes_host_memory:
            assert len(got) == 1 and len(errors) == 1
        else:
            assert not got      # plain host memory is no accel memory
        got.clear()
        gc.collect()


@pytest.mark.cuda_only
@pytest.mark.parametrize("consumer", ["legacy", "per-thread", "another"])
def test_dlpack_stream_names_the_consumers_cuda_stream(consumer):
    """__dlpack__(stream=N) on cuda orders the consumer's CUstream N after
    the array's stream, on the device; the data it then reads is the
    array's, whatever was still queued when it was exported."""
    s1, s2 = accel.stream(), accel.stream()
    host = np.arange(1 << 22, dtype=np.float32)
    d = accel.to_device(host, stream=s1)
    other = accel.device_array(1, stream=s2)
    native = {"legacy": 1, "per-thread": 2,
              "another": other.__cuda_array_interface__["stream"]}[consumer]
    assert isinstance(native, int) and native

    class Once:
        def __dlpack__(self, stream=None):
            return d.__dlpack__(stream=native)

        def __dlpack_device__(self):
            return d.__dlpack_device__()

    v = accel.as_cuda_array(Once())
    s1.synchronize()
    s2.synchronize()
    np.testing.assert_array_equal(v.copy_to_host(), host)


@pytest.mark.cuda_only
@pytest.mark.parametrize("stream", [0, -2, -5])
def test_dlpack_stream_that_names_no_cuda_stream_is_refused(stream):
    """DLPack: 0 is ambiguous on CUDA and no stream number is negative
    but -1 (no synchronization)."""
    d = accel.to_device(np.arange(4, dtype=np.int32))
    with pytest.raises(ValueError):
        d.__dlpack__(stream=stream)
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(4))


def test_dlpack_array_api_keywords():
    """The array API's __dlpack__(*, stream, max_version, dl_device, copy):
    any max_version gets a capsule consumers take, the array's own
    dl_device is accepted and another refused, and copy=True, which would
    need a copy, is refused with BufferError."""
    d = accel.to_device(np.arange(6, dtype=np.int16))
    dev = tuple(d.__dlpack_device__())
    for cap in (d.__dlpack__(max_version=(1, 0)),
                d.__dlpack__(max_version=None, dl_device=dev, copy=False),
                d.__dlpack__(copy=None)):
        assert capsule_named(cap, b"dltensor")
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(dev[0] + 100, dev[1]))
    with pytest.raises(BufferError):
        d.__dlpack__(copy=True)
    with pytest.raises(TypeError):
        d.__dlpack__(dl_device="cpu")
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(6))
