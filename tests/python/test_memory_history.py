"""The pools' allocation history and snapshots as torch.cuda.memory shows
its own (docs/python.md, "Memory history and snapshots"):
_record_memory_history(), memory_snapshot() in PyTorch 2's format, and
_dump_snapshot(), whose legacy list PyTorch 1.13's _memory_viz reads."""
import contextlib
import gc
import io
import pickle
import pprint
import runpy
import sys
import warnings

import numpy as np
import pytest

import accel

MIB = 1 << 20
STATES = {"active_allocated", "active_pending_free", "inactive"}
ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc",
           "segment_free"}


@pytest.fixture
def recording(collect):
    """History on for every device's pool; off (and dropped) afterwards."""
    collect()
    accel._record_memory_history(max_entries=1000)
    yield
    accel._record_memory_history(enabled=False)


def totals(devices):
    """allocated and reserved bytes of every device's pool, in all."""
    stats = [accel.memory_stats(d) for d in devices]
    return (sum(s["allocated_bytes.all.current"] for s in stats),
            sum(s["reserved_bytes.all.current"] for s in stats))


def memory_viz_command(*args):
    """What `python3 -m torch.cuda._memory_viz ARGS` prints."""
    out = io.StringIO()
    argv = sys.argv
    sys.argv = ["_memory_viz", *args]
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            # runpy warns that the test has imported the module already, and
            # the command leaves its input file to the end of its process
            warnings.filterwarnings("ignore", "'torch.cuda._memory_viz' found",
                                    RuntimeWarning)
            warnings.filterwarnings("ignore", "unclosed file", ResourceWarning)
            runpy.run_module("torch.cuda._memory_viz", run_name="__main__")
            gc.collect()
    finally:
        sys.argv = argv
    return out.getvalue()


def allocate_in_a_named_function():
    return accel.device_array(3 * MIB + 5, dtype=np.uint8)


def frame_names(frames):
    return [f["name"] for f in frames]


def test_snapshot_agrees_with_memory_stats(devices, collect):
    keep = [accel.device_array(n, dtype=np.uint8) for n in (100, MIB, 9 * MIB)]
    collect()
    snap = accel.memory_snapshot()
    assert set(snap) == {"segments", "device_traces"}
    assert len(snap["device_traces"]) == len(devices)
    allocated = reserved = 0
    for seg in snap["segments"]:
        sizes = [b["size"] for b in seg["blocks"]]
        assert sum(sizes) == seg["total_size"]
        assert seg["segment_type"] in ("small", "large")
        assert {b["state"] for b in seg["blocks"]} <= STATES
        assert seg["allocated_size"] == sum(
            b["size"] for b in seg["blocks"] if b["state"] == "active_allocated")
        reserved += seg["total_size"]
        allocated += seg["allocated_size"]
    assert (allocated, reserved) == totals(devices)
    del keep


def test_history_names_the_python_frames(recording, collect):
    a = allocate_in_a_named_function()
    addr = a.__cuda_array_interface__["data"][0] \
        if hasattr(a, "__cuda_array_interface__") else None
    snap = accel.memory_snapshot()
    trace = snap["device_traces"][accel.get_current_device().id]
    allocs = [e for e in trace if e["action"] == "alloc"
              and e["requested_size"] == 3 * MIB + 5]
    assert allocs, trace
    e = allocs[-1]
    assert set(e) >= {"action", "addr", "size", "stream", "frames"}
    names = frame_names(e["frames"])
    assert names[:2] == ["allocate_in_a_named_function",
                         "test_history_names_the_python_frames"]
    assert e["frames"][0]["filename"] == __file__
    assert addr is None or e["addr"] == addr
    # the live block carries the allocation's frames, in both formats
    blocks = [b for s in snap["segments"] for b in s["blocks"]
              if b["address"] == e["addr"]]
    assert len(blocks) == 1 and blocks[0]["state"] == "active_allocated"
    assert frame_names(blocks[0]["frames"]) == names
    assert blocks[0]["history"] == [{"addr": e["addr"], "real_size": 3 * MIB + 5,
                                     "frames": e["frames"]}]
    del a
    collect()
    trace = accel.memory_snapshot()["device_traces"][accel.get_current_device().id]
    after = [x["action"] for x in trace if x["addr"] == e["addr"]
             and x["action"] in ("free_requested", "free_completed")]
    assert after[-2:] == ["free_requested", "free_completed"]
    assert {x["action"] for x in trace} <= ACTIONS


def test_segments_and_events_name_the_stream(recording):
    s = accel.stream()
    a = accel.device_array(1000, dtype=np.uint8, stream=s)
    # past the max chunk size of a cpu device: a block from the device
    big_size = min(300 * MIB, accel.get_current_device().mem_info()[0] // 4)
    big = accel.device_array(big_size, dtype=np.uint8, stream=s)
    snap = accel.memory_snapshot()
    trace = snap["device_traces"][accel.get_current_device().id]
    allocs = {e["requested_size"]: e for e in trace if e["action"] == "alloc"}
    for size in (1000, big_size):
        e = allocs[size]
        seg = [g for g in snap["segments"]
               if g["address"] <= e["addr"] < g["address"] + g["total_size"]]
        assert len(seg) == 1
        assert seg[0]["stream"] == e["stream"] != 0
    del a, big
    s.synchronize()


def test_history_off_records_nothing(recording):
    accel._record_memory_history(enabled=False)
    a = accel.device_array(1000, dtype=np.uint8)
    snap = accel.memory_snapshot()
    assert all(t == [] for t in snap["device_traces"])
    assert all(b["history"] == [] and b["frames"] == []
               for s in snap["segments"] for b in s["blocks"])
    del a


def test_history_keeps_the_last_max_entries(recording):
    accel._record_memory_history(max_entries=5)
    for n in range(1, 20):
        accel.device_array(n * 1000, dtype=np.uint8)
    trace = accel.memory_snapshot()["device_traces"][accel.get_current_device().id]
    assert len(trace) == 5
    times = [e["time_us"] for e in trace]
    assert times == sorted(times)


@pytest.mark.backend_neutral
def test_stacks_no_event_refers_to_are_dropped(recording):
    """A program whose stacks never repeat keeps what the rings refer to, not
    every stack it ever had: 20,000 stacks kept would take over 10 MB."""
    import tracemalloc
    accel._record_memory_history(max_entries=10)
    env = {"accel": accel, "np": np}
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(20000):
            exec(compile("accel.device_array(10, dtype=np.uint8)",
                         "<stack %d>" % i, "exec"), env)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 10 * MIB
    trace = accel.memory_snapshot()["device_traces"][accel.get_current_device().id]
    assert [e["frames"][0]["filename"] for e in trace[-3:]] == ["<stack 19999>"] * 3


def test_record_history_checks_its_arguments():
    with pytest.raises(ValueError):
        accel._record_memory_history(max_entries=0)
    accel._record_memory_history(enabled=None, max_entries=0)  # off: any size
    with pytest.raises((ValueError, TypeError, IndexError)):
        accel._record_memory_history(device=len(accel.devices()))
    with pytest.raises(TypeError):
        accel._dump_snapshot(3)
    # torch.cuda.memory's values: "all", "state", None, or a bool
    for word in ("all", "state"):
        accel._record_memory_history(word, max_entries=10)
    accel._record_memory_history(None)
    with pytest.raises(ValueError, match="bogus"):
        accel._record_memory_history("bogus")


def test_dump_snapshot_writes_both_formats(recording, tmp_path):
    a = allocate_in_a_named_function()
    accel._dump_snapshot(tmp_path / "new.pickle")  # a path-like object too
    accel._dump_snapshot(str(tmp_path / "old.pickle"), legacy=True)
    with open(tmp_path / "new.pickle", "rb") as f:
        new = pickle.load(f)
    with open(tmp_path / "old.pickle", "rb") as f:
        old = pickle.load(f)
    assert isinstance(new, dict) and isinstance(old, list)
    assert [s["address"] for s in old] == [s["address"] for s in new["segments"]]
    with pytest.raises(OSError):
        accel._dump_snapshot(str(tmp_path / "no" / "such" / "dir"))
    del a


@pytest.mark.torch
def test_torch_113_memory_viz_reads_the_legacy_dump(devices, recording,
                                                    collect, tmp_path, torch):
    from torch.cuda import _memory_viz
    keep = [allocate_in_a_named_function(),
            accel.device_array(100, dtype=np.uint8)]
    dropped = accel.device_array(MIB, dtype=np.uint8)
    del dropped
    collect()
    allocated, reserved = totals(devices)
    path = tmp_path / "legacy.pickle"
    accel._dump_snapshot(str(path), legacy=True)
    assert totals(devices) == (allocated, reserved)
    with open(path, "rb") as f:
        data = pickle.load(f)

    stats = _memory_viz.stats(data)
    assert stats["total_size"].value == reserved
    assert stats.get("active_allocated", _memory_viz.Bytes(0)).value == allocated
    # the command line says the same: its __main__, in this process, which
    # has imported torch already (a new one would take a minute in the VM)
    assert memory_viz_command("stats", str(path)) == pprint.pformat(stats) + "\n"

    # the flamegraphs' input, with no flamegraph.pl: "frames;... bytes" lines
    for fmt in (_memory_viz.segments, _memory_viz.memory):
        lines = fmt(data, format_flamegraph=lambda text: text).splitlines()
        assert lines
        for line in lines:
            stack, count = line.rsplit(" ", 1)
            assert int(count) > 0 and stack.startswith("stream_"), line
        assert any("allocate_in_a_named_function" in line for line in lines)
    out = io.StringIO()
    _memory_viz._write_blocks(out, "p", data[0]["blocks"])
    assert out.getvalue()
    del keep
