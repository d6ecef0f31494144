// SPDX-License-Identifier: MIT
/*
 * gpu_util_host.c - the host side of the GPU tests' helpers: device count,
 * streams, free-memory figures (runtime and driver), the pattern on the CPU.
 * Plain C over the CUDA runtime; the kernels are in gpu_util.cu.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <string.h>

#include "gpu_util.h"

static const char *last_err = "no error";

int gu__err(int code)
{
	cudaError_t e = (cudaError_t)code;

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

const char *gu_last_error(void)
{
	return last_err;
}

#define gu_err(e) gu__err((int)(e))

int gu_device_count(const char **why)
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


int gu_stream_create(void **stream)
{
	cudaStream_t s;
	int ret = gu_err(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	if (!ret)
		*stream = (void *)s;
	return ret;
}

void gu_stream_destroy(void *stream)
{
	if (stream)
		(void)gu_err(cudaStreamDestroy((cudaStream_t)stream));
}

int gu_stream_sync(void *stream)
{
	return gu_err(cudaStreamSynchronize((cudaStream_t)stream));
}


void gu_host_fill(void *p, size_t bytes, uint32_t salt)
{
	uint32_t *w = (uint32_t *)p;
	uint8_t *b = (uint8_t *)p;
	uint64_t nw = bytes / 4;

	for (uint64_t i = 0; i < nw; i++)
		w[i] = gu_word(i, salt);
	for (uint64_t off = nw * 4; off < bytes; off++)
		b[off] = gu_byte(off, salt);
}

int64_t gu_host_check(const void *p, size_t bytes, uint32_t salt,
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


int gu_mem_info(uint64_t *free_b, uint64_t *total_b)
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

int gu_drv_mem_info(uint64_t *free_b, uint64_t *total_b)
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

int gu_malloc(void **p, size_t bytes)
{
	return gu_err(cudaMalloc(p, bytes));
}

void gu_free(void *p)
{
	if (p)
		(void)gu_err(cudaFree(p));
}

/* Defined by tests/gpu/vgpu only. */
extern int um_vgpu __attribute__((weak));

int gu_is_vgpu(void)
{
	return &um_vgpu && um_vgpu;
}
