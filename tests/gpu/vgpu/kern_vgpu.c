// SPDX-License-Identifier: MIT
/*
 * kern_vgpu.c - the kernels of gpu_util.cu for the virtual GPU: the same
 * pattern loops, run as "kernels" on the stream (vgpu_launch), in order with
 * everything else there, reading and writing device memory through the
 * vGPU's private view (the program's own address of device memory faults).
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdint.h>

#include "../gpu_util.h"
#include "vgpu.h"

struct kfill {
	void *p;
	size_t bytes;
	uint32_t salt;
	int64_t *bad;		/* gu_check: where the count goes (host) */
};

static int k_fill(void *arg)
{
	struct kfill *k = arg;
	void *d = vgpu_kptr(k->p, k->bytes);

	if (!d)
		return -1;
	gu_host_fill(d, k->bytes, k->salt);
	return 0;
}

static int k_check(void *arg)
{
	struct kfill *k = arg;
	void *d = vgpu_kptr(k->p, k->bytes);

	if (!d)
		return -1;
	*k->bad = gu_host_check(d, k->bytes, k->salt, 4);
	return 0;
}

int gu_fill(void *p, size_t bytes, uint32_t salt, void *stream)
{
	struct kfill k = { p, bytes, salt, NULL };
	struct vgpu_range r = { p, bytes };

	if (!p || (uintptr_t)p % 4)
		return -EINVAL;
	return gu__err(vgpu_launch(stream, k_fill, &k, sizeof(k), &r, 1,
				   bytes));
}

int64_t gu_check(void *p, size_t bytes, uint32_t salt, void *stream)
{
	int64_t bad = -1;
	struct kfill k = { p, bytes, salt, &bad };
	struct vgpu_range r = { p, bytes };
	int ret;

	if (!p || (uintptr_t)p % 4)
		return -EINVAL;
	ret = gu__err(vgpu_launch(stream, k_check, &k, sizeof(k), &r, 1,
				  bytes));
	if (!ret)
		ret = gu__err(cudaStreamSynchronize((cudaStream_t)stream));
	return ret ? ret : bad;
}

int gu_warmup(void)
{
	void *p = NULL;
	int64_t bad;
	int ret;

	ret = gu__err(cudaMalloc(&p, 4096 + 3));
	if (ret)
		return ret;
	ret = gu_fill(p, 4096 + 3, 1, NULL);
	if (!ret) {
		bad = gu_check(p, 4096 + 3, 1, NULL);
		ret = bad < 0 ? (int)bad : bad ? -EIO : 0;
	}
	(void)gu__err(cudaFree(p));
	return ret;
}
