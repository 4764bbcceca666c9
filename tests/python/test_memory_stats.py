"""The caching pool as torch.cuda shows its own (docs/python.md, "Memory
statistics"): memory_stats() under PyTorch's key names, empty_cache(),
reset_peak_memory_stats() and set_per_process_memory_fraction()."""
import numpy as np
import pytest

import accel

# the keys whose meaning is torch.cuda.memory_stats()'s
TORCH_KEYS = (
    "allocated_bytes.all.current", "allocated_bytes.all.peak",
    "reserved_bytes.all.current", "reserved_bytes.all.peak",
    "requested_bytes.all.current", "requested_bytes.all.peak",
    "active_bytes.all.current", "inactive_split_bytes.all.current",
    "allocation.all.current", "allocation.all.allocated",
    "allocation.all.freed", "segment.all.current", "segment.all.allocated",
    "segment.all.freed", "num_device_alloc", "num_device_free", "num_ooms",
    "num_alloc_retries",
)
MIB = 1 << 20


def test_memory_stats_has_torchs_keys(devices):
    for d in devices:
        st = accel.memory_stats(d)
        for key in TORCH_KEYS:
            assert type(st[key]) is int and st[key] >= 0, key
    assert accel.memory_stats() == accel.memory_stats(accel.get_current_device())


def test_memory_stats_follow_allocations(collect):
    collect()
    before = accel.memory_stats()
    d = accel.device_array(MIB, dtype=np.uint8)
    st = accel.memory_stats()
    assert st["allocated_bytes.all.current"] >= before["allocated_bytes.all.current"] + MIB
    assert st["allocation.all.allocated"] == before["allocation.all.allocated"] + 1
    assert st["allocated_bytes.all.peak"] >= st["allocated_bytes.all.current"]
    assert st["reserved_bytes.all.current"] >= st["allocated_bytes.all.current"]
    assert st["active_bytes.all.current"] >= st["allocated_bytes.all.current"]
    del d
    collect()
    st = accel.memory_stats()
    assert st["allocation.all.freed"] == before["allocation.all.freed"] + 1


def test_reset_peak_and_empty_cache(collect):
    collect()
    d = accel.device_array(8 * MIB, dtype=np.uint8)
    del d
    collect()
    assert accel.memory_stats()["allocated_bytes.all.peak"] >= 8 * MIB
    accel.reset_peak_memory_stats()
    st = accel.memory_stats()
    assert st["allocated_bytes.all.peak"] == st["allocated_bytes.all.current"]
    accel.empty_cache()
    st = accel.memory_stats()
    # what live blocks hold stays, and no idle chunk
    assert st["reserved_bytes.all.current"] - st["active_bytes.all.current"] \
        <= st["inactive_split_bytes.all.current"]


def test_memory_fraction_caps_the_pools(collect):
    collect()
    accel.empty_cache()
    free, total = accel.get_current_device().mem_info()
    try:
        accel.set_per_process_memory_fraction(16 * MIB / total)
        with pytest.raises(accel.AccelError, match="memory_fraction"):
            accel.device_array(64 * MIB, dtype=np.uint8)
        assert accel.memory_stats()["num_ooms"] >= 1
    finally:
        accel.set_per_process_memory_fraction(1.0)
    d = accel.device_array(64 * MIB, dtype=np.uint8)
    del d
    for bad in (0.0, 1.5, float("nan")):
        with pytest.raises(accel.AccelError):
            accel.set_per_process_memory_fraction(bad)
    with pytest.raises(TypeError):
        accel.set_per_process_memory_fraction("half")


def test_device_arguments_are_checked():
    with pytest.raises((ValueError, TypeError, IndexError)):
        accel.memory_stats(len(accel.devices()))
    with pytest.raises(TypeError):
        accel.empty_cache(object())
