"""Streams (docs/python.md, "Streams"; seed 004)."""
import gc
import sys

import numpy as np
import pytest

import accel
from accel_testutil import outcome, raises_any


def test_stream_object():
    s = accel.stream()
    assert isinstance(s, accel.Stream)
    assert s.synchronize() is None
    assert accel.stream() is not s


def test_auto_synchronize():
    s = accel.stream()
    src = np.arange(1 << 18, dtype=np.int64)
    with s.auto_synchronize():
        d = accel.to_device(src, stream=s)
        h = d.copy_to_host(stream=s)
    np.testing.assert_array_equal(h, src)


def test_auto_synchronize_synchronizes_on_exception():
    s = accel.stream()
    src = np.arange(1 << 16, dtype=np.float64)
    out = np.empty_like(src)
    with pytest.raises(KeyError):
        with s.auto_synchronize():
            d = accel.to_device(src, stream=s)
            d.copy_to_host(out, stream=s)
            raise KeyError("x")
    # whether or not it synchronized, a synchronize now gives the data
    s.synchronize()
    np.testing.assert_array_equal(out, src)


def test_async_roundtrip_many_streams():
    streams = [accel.stream() for _ in range(16)]
    srcs = [np.arange(4096, dtype=np.int32) * (i + 1) for i in range(16)]
    devs = [accel.to_device(x, stream=s) for x, s in zip(srcs, streams)]
    outs = [d.copy_to_host(stream=s) for d, s in zip(devs, streams)]
    for s in streams:
        s.synchronize()
    for x, o in zip(srcs, outs):
        np.testing.assert_array_equal(o, x)


def test_async_to_device_of_a_temporary(collect):
    # the source goes away right after the call; the copy must not read
    # freed memory
    s = accel.stream()
    devs = [accel.to_device(np.full(1 << 16, i, dtype=np.int64), stream=s)
            for i in range(8)]
    collect()
    junk = [np.full(1 << 16, -1, dtype=np.int64) for _ in range(8)]
    s.synchronize()
    for i, d in enumerate(devs):
        np.testing.assert_array_equal(d.copy_to_host(), i)
    del junk


def test_async_copy_then_drop_the_device_array(collect):
    s = accel.stream()
    x = np.arange(1 << 16, dtype=np.float32)
    d = accel.to_device(x, stream=s)
    out = np.empty_like(x)
    d.copy_to_host(out, stream=s)
    del d
    collect()
    s.synchronize()
    np.testing.assert_array_equal(out, x)


def test_drop_a_stream_with_queued_work(collect):
    s = accel.stream()
    x = np.arange(1 << 16, dtype=np.int32)
    d = accel.to_device(x, stream=s)
    out = np.empty_like(x)
    d.copy_to_host(out, stream=s)
    del s
    collect()
    np.testing.assert_array_equal(d.copy_to_host(), x)
    np.testing.assert_array_equal(out, x)


def test_sync_calls_wait_for_queued_stream_work():
    s = accel.stream()
    d = accel.device_array(1 << 18, dtype=np.int64)
    d.copy_to_device(np.arange(1 << 18, dtype=np.int64), stream=s)
    h = d.copy_to_host()              # stream=0: synchronous
    np.testing.assert_array_equal(h, np.arange(1 << 18))


def test_array_stream_attribute(collect):
    s = accel.stream()
    d = accel.device_array(4, stream=s)
    assert d.stream is s or d.stream == s
    d0 = accel.device_array(4)
    assert d0.stream in (0, None)
    collect()
    rc = sys.getrefcount(s)
    ds = [accel.device_array(4, stream=s) for _ in range(20)]
    del ds
    collect()
    assert sys.getrefcount(s) == rc


def test_stream_keyword_everywhere():
    s = accel.stream()
    x = np.arange(10.0)
    d = accel.device_array(10, stream=s)
    d.copy_to_device(x, stream=s)
    d2 = accel.device_array_like(d, stream=s)
    d2.copy_to_device(d, stream=s)
    h = d2.copy_to_host(stream=s)
    r = d2.ravel(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(h, x)
    np.testing.assert_array_equal(r.copy_to_host(), x)


def test_stream_wrong_types():
    x = np.arange(3.0)
    for bad in ("s", 1.5, object(), [0]):
        with pytest.raises(TypeError):
            accel.to_device(x, stream=bad)
        with pytest.raises(TypeError):
            accel.device_array(3, stream=bad)
    d = accel.to_device(x)
    with pytest.raises(TypeError):
        d.copy_to_host(stream="s")
    with pytest.raises(TypeError):
        d.copy_to_device(x, stream=object())


@pytest.mark.two_devices
def test_stream_of_another_device_is_refused(devices):
    accel.select_device(devices[1])
    try:
        s1 = accel.stream()
    finally:
        accel.select_device(devices[0])
    x = np.arange(5.0)
    with raises_any(ValueError, accel.AccelError):
        accel.to_device(x, stream=s1)
    d = accel.to_device(x)
    ok, r = outcome(d.copy_to_host, stream=s1)
    if ok:               # if taken, the data must still be right
        s1.synchronize()
        np.testing.assert_array_equal(r, x)
    s1.synchronize()
    del s1
    gc.collect()


def test_many_streams_created_and_dropped(collect):
    for _ in range(200):
        s = accel.stream()
        s.synchronize()
        del s
    collect()
