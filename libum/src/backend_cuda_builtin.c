// SPDX-License-Identifier: MIT
/*
 * backend_cuda_builtin.c - the CUDA backend linked in: the tree's static
 * libum.a (its programs and tests link the CUDA runtime statically) takes
 * this in place of backend_load.c.
 */
#include "backend.h"

const struct um_backend_ops *um__backend_cuda_ops(const char **why)
{
	(void)why;
	return &um__backend_cuda;
}
