// SPDX-License-Identifier: MIT
/*
 * gpu_entry.cu - the entry point of umbench-gpu.so (gpu.h), and the raw
 * pinned allocation of umbench's pool section with the cuda backend.
 */
#include <errno.h>

#include <cuda_runtime_api.h>

#include "gpu.h"

static int host_alloc(size_t len, void **out)
{
	return cudaHostAlloc(out, len, cudaHostAllocDefault) == cudaSuccess ?
	       0 : -ENOMEM;
}

static void host_free(void *p)
{
	cudaFreeHost(p);
}

static const struct umbench_gpu ops = {
	sizeof(struct umbench_gpu),
	umbench_gpu_main,
	host_alloc,
	host_free,
};

extern "C" const struct umbench_gpu *umbench_gpu_v1(void);

extern "C" const struct umbench_gpu *umbench_gpu_v1(void)
{
	return &ops;
}
