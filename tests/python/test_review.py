"""Regressions from the hostile review of 2026-11-24, each derived from the
contract it broke (docs/python.md, <accel/dlpack.h>, the DLPack protocol,
CPython's rules)."""
import gc
import threading

import numpy as np
import pytest

import accel


def test_a_capsule_consumed_by_two_threads_is_taken_once():
    """A consumer takes a "dltensor" capsule once: of two threads racing
    for the same one, exactly one gets it, and its deleter runs once."""
    for _ in range(50):
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
        if accel.get_current_device().backend == "cpu":
            assert len(got) == 1 and len(errors) == 1
        else:
            assert not got      # plain host memory is no accel memory
        got.clear()
        gc.collect()


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


def test_a_mapped_views_refusal_says_why():
    """A library failure raises the library's message."""
    m = accel.mapped_array(8)
    with pytest.raises(ValueError, match="negative"):
        m[::-1].__dlpack__()
