// SPDX-License-Identifier: MIT
/*
 * gpu_util.cu - pattern kernels and memory figures for the GPU tests.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <string.h>

#include "gpu_util.h"

static const char *last_err = "no error";

static int gu_err(cudaError_t e)
{
	if (e == cudaSuccess)
		return 0;
	(void)cudaGetLastError();
	last_err = cudaGetErrorString(e);
	switch (e) {
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorInvalidValue:
		return -EINVAL;
	default:
		return -EIO;
	}
}

extern "C" const char *gu_last_error(void)
{
	return last_err;
}

__host__ __device__ static inline uint32_t gu_word(uint64_t i, uint32_t salt)
{
	return (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 32) * 40503u ^
	       salt;
}

__host__ __device__ static inline uint8_t gu_byte(uint64_t off, uint32_t salt)
{
	return (uint8_t)((off * 31u + salt * 17u) >> 3);
}

__global__ static void k_fill(uint32_t *w, uint64_t nw, uint8_t *tail,
			      uint64_t tail_off, uint32_t ntail, uint32_t salt)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;

	for (; i < nw; i += st)
		w[i] = gu_word(i, salt);
	i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	if (i < ntail)
		tail[i] = gu_byte(tail_off + i, salt);
}

__global__ static void k_check(const uint32_t *w, uint64_t nw,
			       const uint8_t *tail, uint64_t tail_off,
			       uint32_t ntail, uint32_t salt,
			       unsigned long long *bad)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;
	unsigned long long b = 0;

	for (; i < nw; i += st)
		b += w[i] != gu_word(i, salt);
	i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	if (i < ntail)
		b += tail[i] != gu_byte(tail_off + i, salt);
	if (b)
		atomicAdd(bad, b);
}

extern "C" int gu_device_count(const char **why)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		if (why)
			*why = cudaGetErrorString(e);
		return 0;
	}
	if (n <= 0 && why)
		*why = "no CUDA device";
	return n > 0 ? n : 0;
}

extern "C" int gu_stream_create(void **stream)
{
	cudaStream_t s;
	int ret = gu_err(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	if (!ret)
		*stream = (void *)s;
	return ret;
}

extern "C" void gu_stream_destroy(void *stream)
{
	if (stream)
		(void)gu_err(cudaStreamDestroy((cudaStream_t)stream));
}

extern "C" int gu_stream_sync(void *stream)
{
	return gu_err(cudaStreamSynchronize((cudaStream_t)stream));
}

static void gu_split(void *p, size_t bytes, uint32_t **w, uint64_t *nw,
		     uint8_t **tail, uint32_t *ntail)
{
	/* Regions start page aligned; words from p, bytes after the last. */
	*w = (uint32_t *)p;
	*nw = bytes / 4;
	*tail = (uint8_t *)p + *nw * 4;
	*ntail = (uint32_t)(bytes % 4);
}

extern "C" int gu_fill(void *p, size_t bytes, uint32_t salt, void *stream)
{
	uint32_t *w, ntail;
	uint8_t *tail;
	uint64_t nw;

	if (!p || (uintptr_t)p % 4)
		return -EINVAL;
	gu_split(p, bytes, &w, &nw, &tail, &ntail);
	k_fill<<<1056, 256, 0, (cudaStream_t)stream>>>(w, nw, tail, nw * 4,
						       ntail, salt);
	return gu_err(cudaGetLastError());
}

/* One counter for every check, made once (before any memory baseline). */
static unsigned long long *gu_counter(void)
{
	static unsigned long long *dbad;

	if (!dbad && gu_err(cudaMalloc((void **)&dbad, sizeof(*dbad))))
		dbad = NULL;
	return dbad;
}

extern "C" int64_t gu_check(void *p, size_t bytes, uint32_t salt,
			    void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;
	unsigned long long *dbad = gu_counter(), hbad = 0;
	uint32_t *w, ntail;
	uint8_t *tail;
	uint64_t nw;
	int ret;

	if (!p || (uintptr_t)p % 4)
		return -EINVAL;
	if (!dbad)
		return -ENOMEM;
	gu_split(p, bytes, &w, &nw, &tail, &ntail);
	ret = gu_err(cudaMemsetAsync(dbad, 0, sizeof(*dbad), s));
	if (!ret) {
		k_check<<<1056, 256, 0, s>>>(w, nw, tail, nw * 4, ntail, salt,
					     dbad);
		ret = gu_err(cudaGetLastError());
	}
	if (!ret)
		ret = gu_err(cudaMemcpyAsync(&hbad, dbad, sizeof(hbad),
					     cudaMemcpyDeviceToHost, s));
	if (!ret)
		ret = gu_err(cudaStreamSynchronize(s));
	return ret ? ret : (int64_t)hbad;
}

/*
 * Load the kernels and make the counter now: the runtime loads modules
 * lazily and that takes device memory, which would otherwise show up in
 * the first free-memory delta a test measures.
 */
extern "C" int gu_warmup(void)
{
	void *p = NULL;
	int64_t bad;
	int ret;

	ret = gu_err(cudaMalloc(&p, 4096 + 3));
	if (ret)
		return ret;
	ret = gu_fill(p, 4096 + 3, 1, NULL);
	if (!ret) {
		bad = gu_check(p, 4096 + 3, 1, NULL);
		ret = bad < 0 ? (int)bad : bad ? -EIO : 0;
	}
	if (!ret)
		ret = gu_err(cudaDeviceSynchronize());
	(void)gu_err(cudaFree(p));
	return ret;
}

extern "C" void gu_host_fill(void *p, size_t bytes, uint32_t salt)
{
	uint32_t *w = (uint32_t *)p;
	uint8_t *b = (uint8_t *)p;
	uint64_t nw = bytes / 4;

	for (uint64_t i = 0; i < nw; i++)
		w[i] = gu_word(i, salt);
	for (uint64_t off = nw * 4; off < bytes; off++)
		b[off] = gu_byte(off, salt);
}

extern "C" int64_t gu_host_check(const void *p, size_t bytes, uint32_t salt,
				 size_t stride)
{
	const uint32_t *w = (const uint32_t *)p;
	const uint8_t *b = (const uint8_t *)p;
	uint64_t nw = bytes / 4, step = stride >= 4 ? stride / 4 : 1;
	int64_t bad = 0;

	for (uint64_t i = 0; i < nw; i += step)
		bad += w[i] != gu_word(i, salt);
	if (nw)
		bad += w[nw - 1] != gu_word(nw - 1, salt);
	for (uint64_t off = nw * 4; off < bytes; off++)
		bad += b[off] != gu_byte(off, salt);
	return bad;
}

extern "C" int gu_mem_info(uint64_t *free_b, uint64_t *total_b)
{
	size_t f = 0, t = 0;
	int ret = gu_err(cudaMemGetInfo(&f, &t));

	if (!ret) {
		*free_b = f;
		*total_b = t;
	}
	return ret;
}

typedef CUresult (*gu_pfn_mem_info)(size_t *free_b, size_t *total_b);

extern "C" int gu_drv_mem_info(uint64_t *free_b, uint64_t *total_b)
{
	static gu_pfn_mem_info fn;
	enum cudaDriverEntryPointQueryResult st;
	size_t f = 0, t = 0;
	void *sym = NULL;
	int ret;

	if (!fn) {
		ret = gu_err(cudaGetDriverEntryPointByVersion("cuMemGetInfo",
				&sym, 12000, cudaEnableDefault, &st));
		if (ret)
			return ret;
		if (st != cudaDriverEntryPointSuccess || !sym) {
			last_err = "cuMemGetInfo entry point not found";
			return -ENOSYS;
		}
		memcpy(&fn, &sym, sizeof(fn));
	}
	/* The runtime made the primary context current on this thread. */
	ret = gu_err(cudaFree(NULL));
	if (ret)
		return ret;
	if (fn(&f, &t) != CUDA_SUCCESS) {
		last_err = "cuMemGetInfo failed";
		return -EIO;
	}
	*free_b = f;
	*total_b = t;
	return 0;
}

extern "C" int gu_malloc(void **p, size_t bytes)
{
	return gu_err(cudaMalloc(p, bytes));
}

extern "C" void gu_free(void *p)
{
	if (p)
		(void)gu_err(cudaFree(p));
}
