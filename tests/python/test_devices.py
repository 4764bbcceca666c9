"""Devices (docs/python.md, "Devices"; accel/accel.h)."""
import os
import re
import sys
import threading

import numpy as np
import pytest

import accel
from accel_testutil import raises_any


def test_devices_list(devices):
    devs = accel.devices()
    assert isinstance(devs, list) and len(devs) >= 1
    assert all(isinstance(d, accel.Device) for d in devs)
    assert [d.id for d in devs] == list(range(len(devs)))
    for d in devs:
        assert type(d.id) is int
        assert d.backend in ("cpu", "accel", "cuda")
        assert re.fullmatch(r"(cpu|accel|cuda):\d+", d.name), d.name
        assert d.name.split(":")[0] == d.backend
    assert len({d.name for d in devs}) == len(devs)


def test_devices_follow_the_environment():
    vis = os.environ.get("ACCEL_VISIBLE_DEVICES")
    if vis != "cpu":
        pytest.skip("ACCEL_VISIBLE_DEVICES is not 'cpu'")
    n = int(os.environ.get("ACCEL_CPU_DEVICES", "1"))
    assert [d.name for d in accel.devices()] == ["cpu:%d" % i
                                                  for i in range(n)]


def test_first_visible_device_is_current():
    assert accel.get_current_device().id == accel.devices()[0].id
    out = []
    t = threading.Thread(target=lambda: out.append(
        accel.get_current_device().id))
    t.start()
    t.join()
    assert out == [accel.devices()[0].id]


def test_mem_info(devices):
    for d in devices:
        info = d.mem_info()
        assert isinstance(info, tuple) and len(info) == 2
        free, total = info
        assert type(free) is int and type(total) is int
        assert 0 <= free <= total and total > 0
    if os.environ.get("ACCEL_VISIBLE_DEVICES") == "cpu" and \
            os.environ.get("ACCEL_CPU_MEMORY") == "1G":
        assert devices[0].mem_info()[1] == 1 << 30


def test_mem_info_tracks_a_large_allocation(collect):
    dev = accel.get_current_device()
    collect()
    free0, total = dev.mem_info()
    size = min(total // 4, free0 // 2) & ~0xFFFFF
    d = accel.device_array(size, dtype=np.uint8)
    free1, _ = dev.mem_info()
    assert free1 <= free0 - size + (1 << 20), (free0, free1, size)
    del d
    collect()
    tmp = accel.device_array(16)         # lets a lazy pool settle
    del tmp
    collect()
    free2, _ = dev.mem_info()
    assert free2 >= free0 - (size // 2), (free0, free2, size)


def test_pool_stats(devices):
    for d in devices:
        st = d.pool_stats()
        assert isinstance(st, dict) and st
        for k, v in st.items():
            assert isinstance(k, str)
            assert isinstance(v, int), (k, v)
    st = accel.get_current_device().pool_stats()
    # the fields of struct accel_pool_stats
    for key in ("reserved", "allocated", "requested", "blocks"):
        assert key in st, sorted(st)


def test_pool_stats_see_allocations(collect):
    collect()
    dev = accel.get_current_device()
    a0 = dev.pool_stats()["allocated"]
    d = accel.device_array(1 << 20, dtype=np.uint8)
    a1 = dev.pool_stats()["allocated"]
    assert a1 >= a0 + (1 << 20)
    del d
    collect()
    tmp = accel.device_array(16)         # lets a lazy pool settle
    del tmp
    collect()
    assert dev.pool_stats()["allocated"] <= a0 + 4096


def test_synchronize_functions(devices):
    assert accel.synchronize() is None
    for d in devices:
        assert d.synchronize() is None


def test_select_device_forms(devices):
    for d in devices:
        r = accel.select_device(d)
        assert isinstance(r, accel.Device) and r.id == d.id
        assert accel.get_current_device().id == d.id
        assert accel.get_current_device().name == d.name
        assert accel.device_array(3).device.id == d.id
        assert accel.stream() is not None
        r = accel.select_device(d.id)
        assert r.id == d.id and accel.get_current_device().id == d.id
        r = accel.select_device(d.name)
        assert r.id == d.id and accel.get_current_device().id == d.id
    accel.select_device(devices[0])
    assert accel.get_current_device().id == devices[0].id


def test_select_device_bare_backend_name(devices):
    b = devices[0].backend
    try:
        r = accel.select_device(b)
    except (ValueError, accel.AccelError):
        return
    first = [d for d in devices if d.backend == b][0]
    assert r.id == first.id and accel.get_current_device().id == first.id
    accel.select_device(devices[0])


def test_select_device_bad_values(devices):
    n = len(devices)
    for bad in (-1, n, n + 100, 1 << 40, "nope", "nope:0",
                devices[0].backend + ":999", "", "cpu:-1", "cpu:x"):
        with raises_any(ValueError, accel.AccelError, OverflowError):
            accel.select_device(bad)
        assert accel.get_current_device().id == devices[0].id


def test_select_device_wrong_types():
    for bad in (1.0, None, object(), [0], b"cpu:0"):
        with pytest.raises(TypeError):
            accel.select_device(bad)


@pytest.mark.two_devices
def test_current_device_is_per_thread(devices):
    started = threading.Event()
    release = threading.Event()
    seen = {}

    def worker():
        seen["initial"] = accel.get_current_device().id
        accel.select_device(devices[1])
        seen["after"] = accel.get_current_device().id
        seen["alloc"] = accel.device_array(4).device.id
        started.set()
        release.wait(10)
        seen["end"] = accel.get_current_device().id

    t = threading.Thread(target=worker)
    t.start()
    assert started.wait(10)
    assert accel.get_current_device().id == devices[0].id
    assert accel.device_array(4).device.id == devices[0].id
    release.set()
    t.join()
    assert seen == {"initial": devices[0].id, "after": devices[1].id,
                    "alloc": devices[1].id, "end": devices[1].id}
    assert accel.get_current_device().id == devices[0].id


@pytest.mark.two_devices
def test_new_thread_starts_on_first_device_whatever_main_chose(devices):
    accel.select_device(devices[1])
    try:
        out = []
        t = threading.Thread(target=lambda: out.append(
            accel.get_current_device().id))
        t.start()
        t.join()
        assert out == [devices[0].id]
        assert accel.get_current_device().id == devices[1].id
    finally:
        accel.select_device(devices[0])


@pytest.mark.two_devices
def test_arrays_of_two_devices(devices):
    x = np.arange(100, dtype=np.float64)
    accel.select_device(devices[1])
    try:
        d1 = accel.to_device(x)
        s1 = accel.stream()
        assert d1.device.id == devices[1].id
        h = d1.copy_to_host(stream=s1)
        s1.synchronize()
        np.testing.assert_array_equal(h, x)
    finally:
        accel.select_device(devices[0])
    # device 1's array is used from device 0: copies still work
    np.testing.assert_array_equal(d1.copy_to_host(), x)
    d0 = accel.to_device(d1)            # not the current device's: a copy
    assert d0.device.id == devices[0].id
    np.testing.assert_array_equal(d0.copy_to_host(), x)
    d0.copy_to_device(np.zeros(100))
    np.testing.assert_array_equal(d1.copy_to_host(), x)
    d1.copy_to_device(d0)               # peer to peer
    np.testing.assert_array_equal(d1.copy_to_host(), 0)
    assert tuple(d1.__dlpack_device__())[1] == (
        0 if devices[1].backend == "cpu" else
        int(devices[1].name.split(":")[1]))


def test_device_refcounts_do_not_leak():
    dev = accel.devices()[0]
    rc = sys.getrefcount(dev)
    for _ in range(1000):
        accel.get_current_device()
        accel.devices()
        accel.device_array(1).device
    assert sys.getrefcount(dev) - rc < 5
