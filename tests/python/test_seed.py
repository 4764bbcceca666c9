"""Seed 004 (Numba's memory-management page): its memory cells run unchanged
after `import accel as cuda` (docs/python.md, "The seed, side by side").

The @cuda.jit kernel cells are not run (accel runs no kernels); where the
seed's printed output comes from a kernel, the test puts that data on the
device itself.
"""
import numpy as np

import accel
from accel_testutil import check_isolated


def test_cell_1_imports():
    import math  # noqa: F401
    import accel as cuda
    assert cuda is accel


def test_cells_5_to_9_data_transfer():
    import accel as cuda
    # In [5]
    ary = np.arange(10)
    d_ary = cuda.to_device(ary)
    # In [6]
    stream = cuda.stream()
    d_ary = cuda.to_device(ary, stream=stream)
    assert isinstance(d_ary, cuda.DeviceNDArray)
    # In [7]
    hary = d_ary.copy_to_host()
    assert isinstance(hary, np.ndarray)
    np.testing.assert_array_equal(hary, np.arange(10))
    # In [8]
    ary = np.empty(shape=d_ary.shape, dtype=d_ary.dtype)
    out = d_ary.copy_to_host(ary)
    # the seed prints array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert out is ary
    np.testing.assert_array_equal(out, np.arange(10))
    assert repr(out) == "array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])"
    # In [9]
    hary = d_ary.copy_to_host(stream=stream)
    stream.synchronize()
    np.testing.assert_array_equal(hary, np.arange(10))


def test_seed_sync_copy_after_async_to_device_sees_data():
    # In [6] queues the h2d copy on a stream; In [8] copies back with the
    # default (synchronous) stream and prints the data without an explicit
    # synchronization.
    import accel as cuda
    stream = cuda.stream()
    src = np.arange(1 << 16, dtype=np.int64)
    d_ary = cuda.to_device(src, stream=stream)
    out = np.empty(shape=d_ary.shape, dtype=d_ary.dtype)
    d_ary.copy_to_host(out)
    np.testing.assert_array_equal(out, src)


def test_cell_14_and_16_reshape_F():
    import accel as cuda
    arr = np.arange(10)
    d_arr = cuda.to_device(arr)
    # instead of my_kernel[100, 100](d_arr): the kernel's result put there
    d_arr.copy_to_device(arr * 2)
    np.testing.assert_array_equal(
        d_arr.copy_to_host(),
        np.array([0, 2, 4, 6, 8, 10, 12, 14, 16, 18]))
    # In [16]
    d_arr = d_arr.reshape(2, 5, order='F')
    res = d_arr.copy_to_host()
    np.testing.assert_array_equal(res, np.array([[0, 4, 8, 12, 16],
                                                 [2, 6, 10, 14, 18]]))
    assert res.shape == (2, 5)
    assert d_arr.shape == (2, 5)


def test_seed_signatures_accept_documented_keywords():
    import accel as cuda
    d = cuda.device_array((2, 3), dtype=np.float64, strides=None, order='C',
                          stream=0)
    cuda.device_array_like(d, stream=0)
    cuda.to_device(np.zeros(3), stream=0, copy=True, to=None)
    v = cuda.as_cuda_array(d, sync=True)
    assert v.shape == (2, 3)
    assert cuda.is_cuda_array(np.zeros(3)) is False
    p = cuda.pinned_array((2, 3), dtype=np.float64, strides=None, order='C')
    cuda.pinned_array_like(p)
    m = cuda.mapped_array((2, 3), dtype=np.float64, strides=None, order='C',
                          stream=0, portable=False, wc=False)
    cuda.mapped_array_like(m, stream=0, portable=False, wc=False)
    with cuda.pinned(np.zeros(4)):
        pass
    with cuda.mapped(np.zeros(4), stream=0) as dm:
        assert isinstance(dm, cuda.DeviceNDArray)
    assert d.ravel(order='C', stream=0).shape == (6,)
    d.reshape(6, order='C')
    d.copy_to_host(ary=None, stream=0)
    d.copy_to_device(np.zeros((2, 3)), stream=0)


def test_seed_in_a_fresh_process():
    # the whole memory part of the seed, verbatim but for the import line
    # and the kernel launch, in an interpreter that never saw accel before
    out = check_isolated('''
        import numpy as np
        import math
        import accel as cuda

        ary = np.arange(10)
        d_ary = cuda.to_device(ary)

        stream = cuda.stream()
        d_ary = cuda.to_device(ary, stream=stream)

        hary = d_ary.copy_to_host()

        ary = np.empty(shape=d_ary.shape, dtype=d_ary.dtype)
        print(repr(d_ary.copy_to_host(ary)))

        hary = d_ary.copy_to_host(stream=stream)
        stream.synchronize()
        assert (hary == np.arange(10)).all()

        arr = np.arange(10)
        d_arr = cuda.to_device(arr)
        d_arr.copy_to_device(arr * 2)   # my_kernel[100, 100](d_arr)
        print(repr(d_arr.copy_to_host()))

        d_arr = d_arr.reshape(2, 5, order='F')
        print(repr(d_arr.copy_to_host()))
    ''')
    assert out.splitlines() == [
        "array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])",
        "array([ 0,  2,  4,  6,  8, 10, 12, 14, 16, 18])",
        "array([[ 0,  4,  8, 12, 16],",
        "       [ 2,  6, 10, 14, 18]])",
    ]
