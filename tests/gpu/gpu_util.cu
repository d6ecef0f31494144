// SPDX-License-Identifier: MIT
/*
 * gpu_util.cu - pattern kernels and memory figures for the GPU tests.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <string.h>

#include "gpu_util.h"

/* Errors are recorded and turned into -errno by gpu_util_host.c. */
#define gu_err(e) gu__err((int)(e))

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

