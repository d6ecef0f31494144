// SPDX-License-Identifier: MIT
/*
 * cuda_entry.c - the entry point of libum-cuda.so.0 (backend_plugin.h),
 * and the core services the CUDA backend calls, reached through the table
 * libum lends it: the plugin has no libum symbols of its own to bind to.
 */
#include <stddef.h>

#include "backend_plugin.h"
#include "um_numa.h"

const struct um_backend_ops *um_cuda_plugin_v1(const struct um_plugin_core *c);

static const struct um_plugin_core *core;

int um__numa_available(void)
{
	return core->numa_available();
}

int um__numa_node_valid(int node)
{
	return core->numa_node_valid(node);
}

int um__numa_pci_node(const char *bdf)
{
	return core->numa_pci_node(bdf);
}

int um__numa_alloc(size_t len, int node, void **out)
{
	return core->numa_alloc(len, node, out);
}

void um__numa_free(void *p, size_t len)
{
	core->numa_free(p, len);
}

const struct um_backend_ops *um_cuda_plugin_v1(const struct um_plugin_core *c)
{
	if (!c || c->size != sizeof(*c) ||
	    c->ops_size != sizeof(struct um_backend_ops))
		return NULL;
	core = c;
	return &um__backend_cuda;
}
