// SPDX-License-Identifier: MIT
/*
 * backend_cuda_none.c - no CUDA backend: the tree's static libum.a where
 * the toolkit is missing (and the static programs of the VM rig, which
 * could not dlopen a plugin anyway) takes this in place of backend_load.c.
 */
#include "backend.h"

const struct um_backend_ops *um__backend_cuda_ops(const char **why)
{
	*why = "this libum was built without the CUDA toolkit";
	return NULL;
}
