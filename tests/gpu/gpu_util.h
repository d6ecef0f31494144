/* SPDX-License-Identifier: MIT */
/*
 * gpu_util.h - what the GPU tests need from the device beyond libum: a
 * kernel that writes a pattern, one that counts where it is not, and the
 * driver's and runtime's view of free device memory. C interface over
 * gpu_util.cu (built with nvcc).
 *
 * The pattern is a function of (byte offset, salt): 32-bit words at 4-byte
 * aligned offsets, single bytes in the unaligned tail, so any size works and
 * a region's content after n rewrites is known from its salt alone.
 */
#ifndef UM_TESTS_GPU_UTIL_H
#define UM_TESTS_GPU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define GU_HD __host__ __device__
#else
#define GU_HD
#endif

/* The pattern: word i of a region, and the byte at offset off of its tail. */
static inline GU_HD uint32_t gu_word(uint64_t i, uint32_t salt)
{
	return (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 32) * 40503u ^
	       salt;
}

static inline GU_HD uint8_t gu_byte(uint64_t off, uint32_t salt)
{
	return (uint8_t)((off * 31u + salt * 17u) >> 3);
}

#ifdef __cplusplus
extern "C" {
#endif

/* Devices usable (> 0), or 0 with *why set (no driver, no device). */
int gu_device_count(const char **why);

/* Streams are cudaStream_t, passed as void * to stay out of CUDA headers. */
int gu_stream_create(void **stream);
void gu_stream_destroy(void *stream);
int gu_stream_sync(void *stream);

/* Enqueue: write the pattern of salt over [p, p + bytes) on stream. */
int gu_fill(void *p, size_t bytes, uint32_t salt, void *stream);
/*
 * Count the 32-bit words and tail bytes of [p, p + bytes) that differ from
 * salt's pattern, on stream, and wait: >= 0 mismatches, < 0 -errno.
 */
int64_t gu_check(void *p, size_t bytes, uint32_t salt, void *stream);

/* Load kernels, make the check counter: call before memory baselines. */
int gu_warmup(void);

/* The same pattern and check on the CPU (for host-readable memory). */
void gu_host_fill(void *p, size_t bytes, uint32_t salt);
int64_t gu_host_check(const void *p, size_t bytes, uint32_t salt,
		      size_t stride);

/* Free/total device memory: runtime (cudaMemGetInfo) and driver view. */
int gu_mem_info(uint64_t *free_b, uint64_t *total_b);
int gu_drv_mem_info(uint64_t *free_b, uint64_t *total_b);

/* Device memory outside libum (a foreign pointer for um_lookup). */
int gu_malloc(void **p, size_t bytes);
void gu_free(void *p);

/* 1 when linked with the virtual GPU of vgpu/ (sizes scaled down for CI). */
int gu_is_vgpu(void);

/* Last CUDA error string (for messages). */
const char *gu_last_error(void);
/* Internal: record CUDA error code (a cudaError_t), return -errno or 0. */
int gu__err(int code);

#ifdef __cplusplus
}
#endif

#endif /* UM_TESTS_GPU_UTIL_H */
