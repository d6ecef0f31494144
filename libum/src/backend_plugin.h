/* SPDX-License-Identifier: MIT */
/*
 * backend_plugin.h - the CUDA backend as a plugin, libum-cuda.so.0.
 *
 * libum.so needs no CUDA library: the CUDA backend is a shared object of
 * its own, loaded with dlopen() when a context asks for the cuda (or auto)
 * backend. It exports one function, UM_CUDA_PLUGIN_ENTRY, which receives
 * the few core services the backend calls (NUMA placement of pinned host
 * memory) and returns its operations table. Both sides are built from the
 * same tree, and the package pins libum-cuda0 to the same version as
 * libum0; the sizes in struct um_plugin_core catch a mismatch anyway.
 *
 * Programs linking the tree's libum.a get the backend linked in instead
 * (backend_cuda_builtin.c); libum.so and the installed libum.a load it
 * (backend_load.c).
 */
#ifndef UM_BACKEND_PLUGIN_H
#define UM_BACKEND_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#define UM_CUDA_PLUGIN		"libum-cuda.so.0"
#define UM_CUDA_PLUGIN_ENTRY	"um_cuda_plugin_v1"

/* What libum's core lends the plugin (the functions of um_numa.h). */
struct um_plugin_core {
	uint32_t size;			/* sizeof(struct um_plugin_core) */
	uint32_t ops_size;		/* sizeof(struct um_backend_ops) */
	int (*numa_available)(void);
	int (*numa_node_valid)(int node);
	int (*numa_pci_node)(const char *bdf);
	int (*numa_alloc)(size_t len, int node, void **out);
	void (*numa_free)(void *p, size_t len);
};

/* NULL when core's sizes are not the plugin's own. */
typedef const struct um_backend_ops *
(*um_cuda_plugin_fn)(const struct um_plugin_core *core);

#endif /* UM_BACKEND_PLUGIN_H */
