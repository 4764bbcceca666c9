"""Fixtures and markers for the accel Python module's suite.

Run from the repository root, for example:

    ACCEL_VISIBLE_DEVICES=cpu ACCEL_CPU_DEVICES=2 ACCEL_CPU_MEMORY=1G \
        PYTHONPATH=build/python /usr/bin/python3 -m pytest -q tests/python

The suite never hard-codes a backend: it reads the current device's backend
and branches on it. Backend-specific tests carry markers:

    cpu_only           device arrays are host memory (cpu backend)
    not_cpu            device arrays are not plain host memory
    accel_only         the accel backend (kDLExtDev device memory)
    cuda_only          the cuda backend (CUDA array interface, kDLCUDA)
    two_devices        needs at least two visible devices
    host_readable      device arrays readable by NumPy (the cpu backend)
    device_only        device arrays not host-readable (accel, cuda)
    backend_neutral    the module's own bookkeeping, which no backend
                       changes: run on cpu only, where the CPU is not
                       emulated (a VM's accel run would take minutes)
"""
import gc
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import accel  # noqa: E402

_MARKERS = {
    "cpu_only": "runs only on the cpu backend",
    "not_cpu": "runs only where device memory is not plain host memory",
    "accel_only": "runs only on the accel backend",
    "cuda_only": "runs only on the cuda backend",
    "two_devices": "needs at least two visible devices",
    "host_readable": "device arrays are host memory (cpu backend)",
    "device_only": "device arrays are device-only memory (accel, cuda)",
    "torch": "needs PyTorch",
    "backend_neutral": "tests the module's own bookkeeping: runs on cpu",
}


def _backend():
    return accel.get_current_device().backend


BACKEND = _backend()
DEVICES = accel.devices()


def pytest_configure(config):
    for name, doc in _MARKERS.items():
        config.addinivalue_line("markers", "%s: %s" % (name, doc))


def pytest_report_header(config):
    return "accel backend: %s; devices: %s; module: %s" % (
        BACKEND, [d.name for d in DEVICES], getattr(accel, "__file__", "?"))


def pytest_collection_modifyitems(config, items):
    try:
        import torch  # noqa: F401
        have_torch = True
    except Exception:
        have_torch = False
    for item in items:
        why = None
        if item.get_closest_marker("cpu_only") and BACKEND != "cpu":
            why = "cpu backend only (backend is %s)" % BACKEND
        elif item.get_closest_marker("host_readable") and BACKEND != "cpu":
            why = "device arrays are host-readable only on cpu"
        elif item.get_closest_marker("backend_neutral") and BACKEND != "cpu":
            why = "the module's own bookkeeping, the same on every backend: tested on cpu"
        elif item.get_closest_marker("not_cpu") and BACKEND == "cpu":
            why = "not on the cpu backend"
        elif item.get_closest_marker("device_only") and BACKEND == "cpu":
            why = "device arrays are host memory on cpu"
        elif item.get_closest_marker("accel_only") and BACKEND != "accel":
            why = "accel backend only (backend is %s)" % BACKEND
        elif item.get_closest_marker("cuda_only") and BACKEND != "cuda":
            why = "cuda backend only (backend is %s)" % BACKEND
        elif item.get_closest_marker("two_devices") and len(DEVICES) < 2:
            why = "needs two visible devices"
        elif item.get_closest_marker("torch") and not have_torch:
            why = "PyTorch is not installed"
        if why:
            item.add_marker(pytest.mark.skip(reason=why))


@pytest.fixture(scope="session")
def backend():
    """The backend of the current device: "cpu", "accel" or "cuda"."""
    return BACKEND


@pytest.fixture(scope="session")
def devices():
    return list(DEVICES)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _restore_current_device():
    """Every test starts and ends on the first visible device."""
    first = DEVICES[0]
    if accel.get_current_device().id != first.id:
        accel.select_device(first)
    yield
    cur = accel.get_current_device()
    if cur.id != first.id:
        accel.select_device(first)
        pytest.fail("test left the current device at %s" % cur.name)


@pytest.fixture
def collect():
    """Full garbage collection plus a device synchronization."""
    def _collect():
        for _ in range(3):
            gc.collect()
        accel.synchronize()
    return _collect


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
