# SPDX-License-Identifier: MIT
"""libaccel's caching allocator as Numba's device memory: an External
Memory Management (EMM) plugin for numba-cuda.

    NUMBA_CUDA_MEMORY_MANAGER=accel_numba python3 program.py

or, before Numba makes its first CUDA context:

    import numba.cuda, accel_numba
    numba.cuda.set_memory_manager(accel_numba.AccelNumbaManager)

Every device allocation Numba makes (cuda.device_array, cuda.to_device,
the arrays of its kernels' launches) then comes from the device's default
libaccel pool, the one the library's other users in the process share.
Host memory (pinned and mapped) stays Numba's own.

Frees. Numba does not say which stream a buffer was last used on, so a
freed block is returned to the pool behind CUDA's legacy default stream:
the pool gives it out again only once the work queued before the free on
that stream, and so on every blocking stream (Numba's streams and its
default stream are blocking), has completed. Work on a non-blocking stream
of another library that still uses the buffer is not waited for: keep the
array alive until that work is done.

defer_cleanup() defers nothing of the device's: blocks go back to the pool
at once, which is cheap and never synchronizes. IPC handles come from the
driver (GetIpcHandleMixin): the pool's chunks are cuMemAlloc allocations,
and a handle names the chunk and the block's offset in it.
"""
import ctypes
import itertools
import os
import threading

from numba.cuda import (GetIpcHandleMixin, HostOnlyCUDAMemoryManager,
                        MemoryInfo, MemoryPointer)

__all__ = ["AccelNumbaManager"]

_LEGACY_STREAM = ctypes.c_void_p(1)    # CU_STREAM_LEGACY


class _Device(ctypes.Structure):
    """accel_device_t's struct accel_device_id"""
    _fields_ = [("id", ctypes.c_int)]


def _load_libaccel():
    """
    libaccel.so.1 beside this file (the build tree), else the one the
    module accel loaded through its run path (a wheel installed anywhere),
    which the dynamic linker hands out again by its soname, else installed.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.join(here, "..", "lib", "libaccel.so.1")
    if not os.path.exists(beside):
        try:
            import accel  # noqa: F401
        except ImportError:
            pass
    lib = ctypes.CDLL(beside if os.path.exists(beside) else "libaccel.so.1")
    vp, sz, cp = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
    dev = ctypes.POINTER(_Device)
    for name, args in (
            ("accel_find_device", (cp, ctypes.POINTER(ctypes.c_int))),
            ("accel_device_pool", (dev, ctypes.POINTER(vp))),
            ("accel_pool_allocate", (vp, vp, ctypes.POINTER(vp), sz)),
            ("accel_pool_deallocate", (vp, vp, vp, sz)),
            ("accel_stream_create_external", (dev, vp, ctypes.POINTER(vp))),
            ("accel_device_memory_stats",
             (dev, ctypes.POINTER(sz), ctypes.POINTER(sz)))):
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = ctypes.c_int
    lib.accel_get_last_error.restype = cp
    lib.accel_get_last_error.argtypes = ()
    lib.accel_peek_last_error_code.restype = ctypes.c_int
    lib.accel_peek_last_error_code.argtypes = ()
    return lib


_ACCEL_ERROR_OUT_OF_MEMORY = 2    # enum accel_error


def _out_of_memory(size, why):
    """Numba's own out-of-memory error, with the code its binding uses."""
    from numba.cuda.cudadrv.driver import CudaAPIError
    try:
        from cuda.bindings.driver import CUresult
        code = CUresult.CUDA_ERROR_OUT_OF_MEMORY
    except ImportError:
        code = 2    # CUDA_ERROR_OUT_OF_MEMORY
    return CudaAPIError(code, "accel_numba: allocating %d bytes: %s"
                        % (size, why.decode(errors="replace")))


def _error(what):
    """libaccel's last error, about @what, as a RuntimeError"""
    msg = _libaccel().accel_get_last_error().decode(errors="replace")
    return RuntimeError(f"accel_numba: {what}: {msg}")


_lib = None

# The adopted legacy default stream of each device (by libaccel id): one
# for the process, not one per Numba context, which cuda.close() and a
# new context would otherwise leak into the device's streams for good.
_legacy_streams = {}
_tokens = itertools.count(1)
_adopt_lock = threading.Lock()


def _libaccel():
    global _lib
    if _lib is None:
        _lib = _load_libaccel()
    return _lib


def _device_pointer(address):
    """A device address as this Numba's CUDA binding takes it."""
    try:
        from cuda.bindings.driver import CUdeviceptr
    except ImportError:
        try:
            from cuda.cuda import CUdeviceptr
        except ImportError:
            return ctypes.c_uint64(address)
    from numba.cuda.cudadrv import driver
    if getattr(driver, "USE_NV_BINDING", True):
        return CUdeviceptr(address)
    return ctypes.c_uint64(address)


class AccelNumbaManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """Numba's device allocations from libaccel's pool of the context's
    device (cuda:N for the context's device N)."""

    def initialize(self):
        # Numba may call this more than once: keep what is there
        if getattr(self, "_pool", None) is not None:
            return
        lib = _libaccel()
        self._device = _Device()
        name = f"cuda:{self.context.device.id}".encode()
        pool, stream, ident = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_int()
        self._check(lib.accel_find_device(name, ctypes.byref(ident)),
                    f"finding {name.decode()}")
        self._device.id = ident.value
        self._check(lib.accel_device_pool(ctypes.byref(self._device),
                                          ctypes.byref(pool)),
                    "opening the device's pool")
        with _adopt_lock:
            if ident.value not in _legacy_streams:
                self._check(lib.accel_stream_create_external(
                    ctypes.byref(self._device), _LEGACY_STREAM,
                    ctypes.byref(stream)),
                    "adopting the legacy default stream")
                _legacy_streams[ident.value] = stream
            stream = _legacy_streams[ident.value]
        # live blocks by a token of their own, not by address: a block that
        # reset() took back may be handed out again at the same address
        # while the old MemoryPointer lives on, and its finalizer must not
        # free the new one
        self._live = {}
        self._pool, self._stream = pool, stream

    @staticmethod
    def _check(status, what):
        if status != 0:
            raise _error(what)

    def memalloc(self, size):
        """A block of the pool, with no stream: reusable by any."""
        lib = _libaccel()
        ptr = ctypes.c_void_p()
        if lib.accel_pool_allocate(self._pool, None, ctypes.byref(ptr),
                                   size) != 0:
            if lib.accel_peek_last_error_code() == _ACCEL_ERROR_OUT_OF_MEMORY:
                raise _out_of_memory(size, lib.accel_get_last_error())
            raise _error(f"allocating {size} bytes")
        address = ptr.value or 0
        token = next(_tokens)
        if address:
            self._live[token] = (address, size)
        return MemoryPointer(self.context, _device_pointer(address), size,
                             finalizer=self._finalizer(token))

    def _finalizer(self, token):
        live, pool, stream = self._live, self._pool, self._stream

        def free():
            # after reset() took it back, or a 0-byte block: nothing to do
            block = live.pop(token, None)
            if block is not None:
                _libaccel().accel_pool_deallocate(pool, stream, *block)
        return free

    def get_memory_info(self):
        """The device's free and total bytes, for all processes."""
        total, free = ctypes.c_size_t(), ctypes.c_size_t()
        self._check(_libaccel().accel_device_memory_stats(
            ctypes.byref(self._device), ctypes.byref(total),
            ctypes.byref(free)), "reading the device's memory")
        return MemoryInfo(free=free.value, total=total.value)

    def reset(self):
        """Every block of this context back to the pool, then Numba's
        host allocations (HostOnlyCUDAMemoryManager's part)."""
        live = getattr(self, "_live", {})
        while live:
            _, (address, size) = live.popitem()
            _libaccel().accel_pool_deallocate(self._pool, self._stream,
                                              address, size)
        super().reset()

    @property
    def interface_version(self):
        return 1


# What NUMBA_CUDA_MEMORY_MANAGER=accel_numba loads
_numba_memory_manager = AccelNumbaManager
