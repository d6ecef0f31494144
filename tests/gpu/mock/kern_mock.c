// SPDX-License-Identifier: MIT
/*
 * kern_mock.c - the kernels of gpu_util.cu as host loops, for the mock
 * programs (see cudart_mock.c): device memory is host memory there, and
 * every operation completes when issued, so a loop in place is the kernel.
 */
#include <errno.h>
#include <stdint.h>

#include "../gpu_util.h"

int gu_fill(void *p, size_t bytes, uint32_t salt, void *stream)
{
	(void)stream;
	if (!p || (uintptr_t)p % 4)
		return -EINVAL;
	gu_host_fill(p, bytes, salt);
	return 0;
}

int64_t gu_check(void *p, size_t bytes, uint32_t salt, void *stream)
{
	(void)stream;
	if (!p || (uintptr_t)p % 4)
		return -EINVAL;
	return gu_host_check(p, bytes, salt, 4);
}

int gu_warmup(void)
{
	return 0;
}
