"""Helpers shared by the accel test files (not a test file itself)."""
import contextlib
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import accel

# DLPack device types (dlpack.h, DLPack 0.6)
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLExtDev = 12
kDLCUDAManaged = 13

# enum accel_error (accel/accel.h): the values are stable across versions
ACCEL_ERROR_INVALID_VALUE = 1
ACCEL_ERROR_OUT_OF_MEMORY = 2
ACCEL_ERROR_INVALID_HANDLE = 3

ALL_DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
              np.int64, np.uint64, np.float32, np.float64, np.bool_]
# DLPack 0.6 has no bool; the library refuses to export it
DLPACK_DTYPES = [d for d in ALL_DTYPES if d is not np.bool_]
# PyTorch 1.13 has no uint16/32/64
TORCH_DTYPES = [np.int8, np.uint8, np.int16, np.int32, np.int64,
                np.float32, np.float64]

_PyCapsule_IsValid = ctypes.pythonapi.PyCapsule_IsValid
_PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_PyCapsule_IsValid.restype = ctypes.c_int


def is_capsule(obj):
    return type(obj).__name__ == "PyCapsule"


def capsule_named(cap, name):
    """Whether cap is a valid capsule called name (bytes)."""
    return bool(_PyCapsule_IsValid(cap, name))


def sample(dtype, shape, seed=0):
    """Deterministic data of dtype and shape with varied bit patterns."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) if shape != () else 1
    if dtype == np.bool_:
        a = rng.integers(0, 2, n).astype(np.bool_)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        a = (rng.standard_normal(n) * 1000).astype(dtype)
    return a.reshape(shape)


def host_readable():
    """Device arrays of the current device are host memory (cpu)."""
    return accel.get_current_device().backend == "cpu"


def expected_device_dlpack(dev):
    """__dlpack_device__ of a device array of dev (docs/python.md table)."""
    index = int(dev.name.split(":")[1])
    if dev.backend == "cpu":
        return (kDLCPU, 0)
    if dev.backend == "accel":
        return (kDLExtDev, index)
    if dev.backend == "cuda":
        return (kDLCUDA, index)
    raise AssertionError("unknown backend %r" % dev.backend)


def expected_mapped_dlpack(dev):
    if dev.backend == "cuda":
        return (kDLCUDAHost, 0)
    return (kDLCPU, 0)


def assert_not_system_error(exc):
    assert not isinstance(exc, SystemError), (
        "SystemError: the C code returned NULL without a proper exception: %r"
        % (exc,))


def outcome(fn, *args, **kwargs):
    """(True, result) or (False, exception); a SystemError fails the test."""
    try:
        return True, fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        assert_not_system_error(e)
        return False, e


@contextlib.contextmanager
def raises_bad_value(*extra):
    """A bad value: ValueError, or the library's own refusal of it
    (accel.AccelError with ACCEL_ERROR_INVALID_VALUE), or one of extra."""
    try:
        yield
    except ValueError:
        return
    except accel.AccelError as e:
        assert e.code == ACCEL_ERROR_INVALID_VALUE or (
            e.code_name in ("ACCEL_ERROR_INVALID_VALUE",)), (
            "bad value reported as %s: %s" % (e.code_name, e))
        return
    except extra as e:  # type: ignore[misc]
        assert_not_system_error(e)
        return
    pytest.fail("no exception for a bad value")


@contextlib.contextmanager
def raises_any(*types):
    """Some exception (of types, if given), never SystemError."""
    types = types or (Exception,)
    try:
        yield
    except types as e:
        assert_not_system_error(e)
        return
    pytest.fail("no exception raised (wanted one of %s)" %
                ", ".join(t.__name__ for t in types))


# A child's time limit is a guard against a hang, not a speed check: in the
# VM (TCG, 9p) on a machine busy with other tests, importing torch alone
# took over two minutes.
CHILD_TIMEOUT_S = 600


def run_isolated(code, timeout=CHILD_TIMEOUT_S, env_extra=None):
    """Run code in a fresh /usr/bin/python3 with this process's environment
    (PYTHONPATH, ACCEL_*); returns (returncode, stdout, stderr)."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.abspath(__file__))
    mod = os.path.dirname(os.path.abspath(accel.__file__))
    env["PYTHONPATH"] = os.pathsep.join([mod, here] + [
        p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONFAULTHANDLER"] = "1"
    if env_extra:
        env.update(env_extra)
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                       env=env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def check_isolated(code, timeout=CHILD_TIMEOUT_S, env_extra=None):
    rc, out, err = run_isolated(code, timeout, env_extra)
    assert rc == 0, "child failed (rc %d)\nstdout:\n%s\nstderr:\n%s" % (
        rc, out[-4000:], err[-4000:])
    return out


def pool_allocated(dev=None):
    dev = dev or accel.get_current_device()
    st = dev.pool_stats()
    return st.get("allocated")


class DLPackWrapper:
    """An object with only the DLPack protocol, forwarding to a capsule
    source (a fixed capsule, or a producer's __dlpack__)."""

    def __init__(self, producer=None, capsule=None, device=None):
        self.producer = producer
        self.capsule = capsule
        self.device = device
        self.calls = []

    def __dlpack__(self, stream=None, **kw):
        self.calls.append(stream)
        if self.capsule is not None:
            return self.capsule
        if stream is None:
            return self.producer.__dlpack__()
        return self.producer.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        if self.device is not None:
            return self.device
        return self.producer.__dlpack_device__()


class CAIWrapper:
    """An object exposing a NumPy array's memory through the CUDA array
    interface, as a CUDA library would (for the cpu backend, where any host
    memory is the device's)."""

    def __init__(self, arr, **override):
        self.arr = arr
        ai = arr.__array_interface__
        cai = {
            "shape": tuple(arr.shape),
            "typestr": arr.dtype.str,
            "data": (ai["data"][0], False),
            "version": 3,
            "strides": ai.get("strides"),
            "stream": None,
        }
        cai.update(override)
        self.__cuda_array_interface__ = cai
