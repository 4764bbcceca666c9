"""A hostile review of the abi3 rewrite of the module (python/*.c): objects
that lie or change under the module while it reads them, and NumPy 2's
__array__ copy keyword. Each test is a finding; see the commit messages.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import accel


def _data_pointer(d, backend):
    """The address of device array @d's memory, on any backend."""
    if backend == "cuda":
        return d.__cuda_array_interface__["data"][0]
    return d.__array_interface__["data"][0]


def _run_isolated(code):
    """Run @code in a fresh interpreter (a memory error kills it, not the suite)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(accel.__file__), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          env=env, capture_output=True, text=True, timeout=120)


def test_cai_dict_emptied_while_read_is_not_used_after_free():
    """__cuda_array_interface__'s entries were borrowed from the producer's
    dict while reading them ran the producer's code (a shape entry's
    __index__): a producer emptying its dict then had them freed under the
    reader (ASan: heap-use-after-free in parse_cai). The module reads a copy."""
    if accel.get_current_device().backend == "accel":
        pytest.skip("accel's device arrays have no interface to take a pointer from")
    r = _run_isolated("""
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
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["(2,", "2)", "float64", "True"], r.stdout


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
    """The dtype came from the array's dtype attribute and the layout from
    its buffer: a subclass's dtype property with larger entries than its
    memory's made to_device() read past the memory (ASan: heap-buffer-
    overflow READ in accel_array_copy_to_device)."""
    with pytest.raises(ValueError, match="8-byte entries"):
        accel.to_device(_lying_array())


def test_lying_dtype_property_is_refused_as_a_destination():
    """... and copy_to_host(ary) write past it (ASan: heap-buffer-overflow
    WRITE)."""
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
    """The module read NumPy arrays through the buffer protocol, which a
    subclass's __buffer__ answers with any memory, released at once while
    the module kept using it (a temporary's: a use after free): it copied
    from, and into, that memory instead of the array's. NumPy's own slot is
    read now, as NumPy itself does."""
    src = np.zeros(1 << 10).view(_OtherBuffer)
    assert (accel.to_device(src).copy_to_host() == 0).all()
    dst = np.zeros(1 << 10).view(_OtherBuffer)
    accel.to_device(np.arange(float(1 << 10))).copy_to_host(dst)
    assert (np.asarray(dst) == np.arange(float(1 << 10))).all()
    assert (_OTHER == 5.0).all()


@pytest.mark.host_readable
def test_array_protocol_same_dtype_copy_none_does_not_copy():
    """__array__(dtype, copy=None) copied for the array's own dtype, where
    NumPy 2's protocol (and the docstring: "a copy for another dtype or
    copy=True") copies only where needed."""
    d = accel.to_device(np.arange(6.0))
    own = np.asarray(d)
    assert np.shares_memory(d.__array__(np.float64), own)
    assert np.shares_memory(d.__array__(dtype=np.float64, copy=None), own)
    assert not np.shares_memory(d.__array__(np.float64, copy=True), own)
    assert d.__array__(np.float32).dtype == np.float32
    with pytest.raises(ValueError):
        d.__array__(np.float32, copy=False)


def test_order_with_a_nul_is_refused():
    """order was read up to its first NUL: 'C\\0' (and '\\0') passed for an
    order, where it is not one of 'C' and 'F'."""
    with pytest.raises(ValueError, match="order"):
        accel.device_array(3, order="C\0")
    with pytest.raises(ValueError, match="order"):
        accel.device_array(3, order="\0")
    with pytest.raises(ValueError, match="order"):
        accel.device_array(6).reshape(2, 3, order="F\0")
