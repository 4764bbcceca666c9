"""Real CUDA frameworks and accel's arrays, both ways, on a GPU: CuPy,
PyTorch and Numba take accel's device arrays through the CUDA array
interface and DLPack without a copy, accel takes theirs, and Numba's
kernels run on memory from libaccel's pool through the accel_numba EMM
plugin (its own process: a plugin must be set before Numba's context).

Everything here runs on the cuda backend only, and skips a framework that
is not installed or sees no GPU.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import accel

pytestmark = pytest.mark.cuda_only

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def cupy():
    cp = pytest.importorskip("cupy")
    if cp.cuda.runtime.getDeviceCount() < 1:
        pytest.skip("CuPy sees no GPU")
    return cp


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    return torch


@pytest.fixture
def numba_cuda():
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("Numba sees no GPU")
    return cuda


def address(obj):
    return obj.__cuda_array_interface__["data"][0]


def filled(n=1000, dtype=np.float32):
    return accel.to_device(np.arange(n, dtype=dtype))


# ------------------------------------------------------------------ CuPy

def test_cupy_takes_accel_arrays_without_a_copy(cupy):
    d = filled()
    c = cupy.asarray(d)                         # the CUDA array interface
    assert c.data.ptr == address(d)
    c *= 2                                      # written through CuPy ...
    cupy.cuda.get_current_stream().synchronize()
    assert np.array_equal(d.copy_to_host(),     # ... read through accel
                          2 * np.arange(1000, dtype=np.float32))
    x = cupy.from_dlpack(d)                     # DLPack, kDLCUDA
    assert x.data.ptr == address(d)


def test_accel_takes_cupy_arrays_without_a_copy(cupy):
    c = cupy.arange(12, dtype=cupy.int64).reshape(3, 4)[:, 1:]
    v = accel.as_cuda_array(c)
    assert address(v) == c.data.ptr
    assert v.shape == (3, 3) and v.strides == c.strides
    assert np.array_equal(v.copy_to_host(), cupy.asnumpy(c))
    w = accel.to_device(c, copy=False)
    assert address(w) == c.data.ptr


# --------------------------------------------------------------- PyTorch

def test_torch_takes_accel_arrays_without_a_copy(torch_cuda):
    torch = torch_cuda
    d = filled()
    t = torch.as_tensor(d, device="cuda")       # the CUDA array interface
    assert t.data_ptr() == address(d)
    t.add_(1)
    torch.cuda.synchronize()
    assert np.array_equal(d.copy_to_host(),
                          np.arange(1000, dtype=np.float32) + 1)
    u = torch.from_dlpack(d)
    assert u.data_ptr() == address(d) and u.device.type == "cuda"


def test_accel_takes_torch_tensors_without_a_copy(torch_cuda):
    torch = torch_cuda
    t = torch.arange(20, device="cuda", dtype=torch.float64).view(4, 5).t()
    v = accel.as_cuda_array(t)
    assert address(v) == t.data_ptr()
    assert v.strides == tuple(s * 8 for s in t.stride())
    assert np.array_equal(v.copy_to_host(), t.cpu().numpy())


def test_torch_interface_carries_no_stream(torch_cuda):
    """PyTorch's CUDA array interface is version 2, without "stream": a
    consumer cannot wait for PyTorch's work through it, so with PyTorch the
    caller synchronizes (or uses DLPack, whose producer does)."""
    t = torch_cuda.zeros(4, device="cuda")
    cai = t.__cuda_array_interface__
    assert "stream" not in cai or cai["stream"] is None
    v = accel.as_cuda_array(t, sync=True)
    assert address(v) == t.data_ptr()


def test_interface_stream_is_waited_for(cupy):
    """An array written on a side stream of CuPy's, whose CUDA array
    interface (version 3) names that stream, taken with sync=True: accel
    sees the written values."""
    side = cupy.cuda.Stream(non_blocking=True)
    with side:
        x = cupy.zeros(1 << 24, dtype=cupy.float32)
        for _ in range(20):
            x += 1
        assert x.__cuda_array_interface__.get("stream") == side.ptr
        v = accel.as_cuda_array(x, sync=True)
        host = v.copy_to_host()
    assert (host == 20).all()


# ----------------------------------------------------------------- Numba

def test_numba_takes_accel_arrays_without_a_copy(numba_cuda):
    cuda = numba_cuda
    d = filled()
    n = cuda.as_cuda_array(d)
    assert n.device_ctypes_pointer.value == address(d)

    @cuda.jit
    def double(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= 2

    double[4, 256](n)
    cuda.synchronize()
    assert np.array_equal(d.copy_to_host(),
                          2 * np.arange(1000, dtype=np.float32))


# Its own process: the plugin is set before Numba makes its context. A
# spawned process (IPC) imports this again, hence main().
NUMBA_EMM = textwrap.dedent("""
    import gc, multiprocessing
    import numpy as np
    from numba import cuda


    def read_ipc(handle):
        with handle as arr:
            return arr.copy_to_host()


    def main():
        import accel_numba
        ctx = cuda.current_context()
        mm = ctx.memory_manager
        assert isinstance(mm, accel_numba.AccelNumbaManager), type(mm)

        @cuda.jit
        def axpy(a, x, y, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = a * x[i] + y[i]

        n = 1 << 20
        x = np.arange(n, dtype=np.float32)
        y = np.ones(n, dtype=np.float32)
        dx, dy = cuda.to_device(x), cuda.to_device(y)
        out = cuda.device_array_like(dx)
        axpy[(n + 255) // 256, 256](np.float32(2), dx, dy, out)
        assert np.array_equal(out.copy_to_host(), 2 * x + y)
        assert len(mm._live) == 3, mm._live
        del dx, dy, out
        gc.collect()
        assert not mm._live, mm._live

        info = ctx.get_memory_info()
        assert 0 < info.free <= info.total, info

        # blocks freed behind work still queued on a stream: reused safely
        s = cuda.stream()
        for i in range(300):
            a = cuda.to_device(np.full(4096 + i, i, dtype=np.int32), stream=s)
            axpy[(a.size + 255) // 256, 256, s](np.int32(1), a, a, a)
            b = a.copy_to_host(stream=s)
            s.synchronize()
            assert (b == 2 * i).all(), i
            del a

        # IPC: another process opens the block through the driver's handle
        d = cuda.to_device(np.arange(4096, dtype=np.int64))
        handle = d.get_ipc_handle()
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            got = pool.apply(read_ipc, (handle,))
        assert np.array_equal(got, np.arange(4096)), got[:8]
        print("numba emm ok")


    if __name__ == "__main__":
        main()
    """)


def test_numba_kernels_on_memory_of_the_pool(numba_cuda, tmp_path):
    build_python = os.path.dirname(os.path.abspath(accel.__file__))
    if not os.path.exists(os.path.join(build_python, "accel_numba.py")):
        pytest.skip("accel_numba.py is not beside the accel module")
    script = tmp_path / "emm.py"
    script.write_text(NUMBA_EMM)
    # the caller's path too: it may hold what makes Numba import at all
    path = [build_python, str(tmp_path)] + [
        p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, NUMBA_CUDA_MEMORY_MANAGER="accel_numba",
               PYTHONPATH=os.pathsep.join(path))
    res = subprocess.run([sys.executable, str(script)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "numba emm ok" in res.stdout
