/* SPDX-License-Identifier: MIT */
/*
 * libaccel arrays as DLPack tensors, both ways: how NumPy, PyTorch, JAX,
 * CuPy and Paddle exchange memory without copying.
 *
 * The tensors are DLPack 0.6's DLManagedTensor (the unversioned struct that
 * NumPy 1.24 and PyTorch 1.13 speak), from <dlpack/dlpack.h> (Debian's
 * libdlpack-dev). The device type tells the truth about the memory:
 *
 *   kDLCPU          host-accessible memory: pinned, mapped and host arrays,
 *                   unified memory on cpu and accel, and every array of a
 *                   cpu device (its device memory is host memory)
 *   kDLCUDA         device memory of the cuda backend
 *   kDLCUDAHost     pinned and mapped memory of the cuda backend
 *   kDLCUDAManaged  unified memory of the cuda backend
 *   kDLExtDev       device memory of the accel backend, which the host
 *                   cannot read: only libaccel itself imports it
 *
 * device_id is 0 for kDLCPU and kDLCUDAHost, else the device's index in its
 * backend: N of "cuda:N" (the CUDA ordinal) or of "accel:N".
 */
#ifndef ACCEL_DLPACK_H
#define ACCEL_DLPACK_H

#include <dlpack/dlpack.h>

#include <accel/memory.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * accel_array_dlpack_device - the DLPack device of @ary's memory into
 * *@device, as accel_array_to_dlpack() would give it (__dlpack_device__)
 */
ACCEL_EXPORT accel_status_t accel_array_dlpack_device(accel_array_t ary,
						DLDevice *device);

/*
 * accel_array_to_dlpack - @ary as a DLPack tensor, without copying
 * @sync: 1 to wait for the work queued on the stream the array was made
 *	for first, so that a consumer on any stream sees its data; 0 when
 *	the consumer orders itself after that stream
 * @tensor: set to a new tensor; its deleter gives it back
 *
 * The tensor holds a reference to the array's memory: the memory lives
 * until the deleter is called, after @ary and every other handle on it are
 * released (accel_memory_free() on a handle still frees it at once). The
 * deleter may be called from any thread. Strides are given in entries.
 * Read-only arrays (DLPack cannot say they are), arrays of bool or of a
 * registered dtype (DLPack 0.6 has no type for them) and arrays whose
 * strides are not multiples of their dtype's size are refused.
 */
ACCEL_EXPORT accel_status_t accel_array_to_dlpack(accel_array_t ary, int sync,
					    DLManagedTensor **tensor);

/*
 * accel_array_from_dlpack - an array viewing a DLPack tensor's memory,
 * without copying
 * @device: NULL for a host array (the tensor's memory must be
 *	host-accessible: kDLCPU, kDLCUDAHost or kDLCUDAManaged), else the
 *	device whose memory it must be, as accel_array_from_interface() says:
 *	kDLCPU memory only on a cpu device, or if pinned or registered for
 *	@device; kDLCUDA, kDLCUDAHost and kDLCUDAManaged memory on the cuda
 *	device of that index; kDLExtDev memory on the accel device of that index
 * @tensor: the producer's tensor: on success the array owns it (its
 *	deleter is called once the array's memory is released: when its last
 *	handle goes, or at accel_memory_free(), after the transfers queued on
 *	it); on failure the caller keeps it
 *
 * A tensor whose data lies in the library's own memory shares that memory
 * instead, as accel_array_from_interface() does (without @device, the view
 * is of the memory's own kind: a cpu device's memory is a device array),
 * and is given back at once.
 * Types are signed and unsigned integers of 8 to 64 bits and floats of 32
 * and 64, in one lane; strides must not be negative, and the data and every
 * stride must be aligned for the type.
 */
ACCEL_EXPORT accel_status_t accel_array_from_dlpack(const accel_device_t device,
					      DLManagedTensor *tensor,
					      accel_array_t *ary);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_DLPACK_H */
