// SPDX-License-Identifier: MIT
/*
 * backend_load.c - find the CUDA backend plugin (backend_plugin.h).
 *
 * Looked for once per process: beside the object holding this code (the
 * directory of libum.so.0, so a tree's build/ or the package's libdir),
 * then by name through the dynamic loader's search path. Never unloaded:
 * the CUDA runtime keeps threads and handlers. Its absence, or a CUDA
 * runtime it cannot load, is not an error here: the caller decides (auto
 * falls back to sim, cuda fails) and reports *why.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend_plugin.h"
#include "um_numa.h"

static const struct um_plugin_core core = {
	.size = sizeof(struct um_plugin_core),
	.ops_size = sizeof(struct um_backend_ops),
	.numa_available = um__numa_available,
	.numa_node_valid = um__numa_node_valid,
	.numa_pci_node = um__numa_pci_node,
	.numa_alloc = um__numa_alloc,
	.numa_free = um__numa_free,
};

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct um_backend_ops *cuda_ops;
static char load_why[4096 + 512];	/* a path and dlerror() */

/* dlopen() of the plugin beside this object, else by name. */
static void *open_plugin(void)
{
	char path[4096];
	Dl_info self;
	const char *slash, *at = UM_CUDA_PLUGIN;
	void *h;

	if (dladdr((void *)open_plugin, &self) && self.dli_fname &&
	    (slash = strrchr(self.dli_fname, '/')) &&
	    snprintf(path, sizeof(path), "%.*s/%s",
		     (int)(slash - self.dli_fname), self.dli_fname,
		     UM_CUDA_PLUGIN) < (int)sizeof(path) &&
	    access(path, F_OK) == 0)
		at = path;
	h = dlopen(at, RTLD_NOW | RTLD_LOCAL);
	if (!h)		/* the plugin, or the CUDA runtime it needs */
		snprintf(load_why, sizeof(load_why), "%s%s%s",
			 at == path ? path : "", at == path ? ": " : "",
			 dlerror());
	return h;
}

static void load(void)
{
	um_cuda_plugin_fn entry;
	void *h = open_plugin();

	if (!h)
		return;
	*(void **)&entry = dlsym(h, UM_CUDA_PLUGIN_ENTRY);
	if (!entry) {
		snprintf(load_why, sizeof(load_why), "%s: no %s", UM_CUDA_PLUGIN,
			 UM_CUDA_PLUGIN_ENTRY);
		return;
	}
	cuda_ops = entry(&core);
	if (!cuda_ops)
		snprintf(load_why, sizeof(load_why),
			 "%s was built from another libum version", UM_CUDA_PLUGIN);
}

const struct um_backend_ops *um__backend_cuda_ops(const char **why)
{
	pthread_once(&load_once, load);
	if (!cuda_ops && why)
		*why = load_why;
	return cuda_ops;
}
