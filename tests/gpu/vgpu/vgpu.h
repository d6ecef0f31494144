/* SPDX-License-Identifier: MIT */
/*
 * vgpu.h - what the virtual GPU offers beyond the CUDA entry points it
 * implements: "kernels" (host functions run on a stream's worker, in order,
 * with the device memory they touch checked and seen through the workers'
 * private view), and a few read-outs for tests of the vGPU and of libum.
 * Programs built for a real GPU never include this: only the kernel stand-ins
 * (kern_vgpu.c, bench_kern_vgpu.cpp) and tests of the vGPU itself do.
 */
#ifndef UM_TESTS_VGPU_H
#define UM_TESTS_VGPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device memory a kernel reads or writes, checked when it runs. */
struct vgpu_range {
	const void *p;
	size_t len;
};

#define VGPU_MAX_RANGES 6

/*
 * Enqueue fn(arg) on stream (a cudaStream_t, NULL = the current device's
 * legacy stream) after everything queued there before. arg is copied
 * (argsize bytes). When it runs, every range must be device memory mapped
 * for the stream's device (or managed or pinned host memory): otherwise the
 * device takes a sticky illegal-address error, as a real kernel would.
 * fn returns 0, or nonzero for "illegal address". hbm_bytes is the device
 * memory traffic the virtual clock charges. Returns a cudaError_t.
 */
int vgpu_launch(void *stream, int (*fn)(void *arg), const void *arg,
		size_t argsize, const struct vgpu_range *ranges, int nranges,
		uint64_t hbm_bytes);

/*
 * Inside a kernel only: where the worker reads and writes [p, p + len)
 * (device memory is PROT_NONE at the address the program sees). NULL when
 * the range is not device-accessible.
 */
void *vgpu_kptr(const void *p, size_t len);

/* Bit d set: device d has a primary context. */
unsigned vgpu_context_mask(void);

/* Calls of cudaHostAlloc so far (tests of "not on this path"). */
uint64_t vgpu_host_alloc_calls(void);

/* The host's position on the virtual clock, in ms. */
double vgpu_host_now_ms(void);

/*
 * Set by a test: called (from the calling thread) at the start of every
 * call that pins host memory (cudaHostAlloc, cudaHostRegister), e.g. to
 * see whether some lock is held there.
 */
extern void (*vgpu_pin_hook)(void);

#ifdef __cplusplus
}
#endif

#endif /* UM_TESTS_VGPU_H */
