// SPDX-License-Identifier: MIT
/*
 * gpu_load.c - find umbench's GPU part, umbench-gpu.so (gpu.h).
 *
 * Looked for once per process: beside the executable (the tree's build/),
 * then in UMBENCH_GPU_DIR, where `make install` and the package um-tools-cuda
 * put it. Never unloaded: the CUDA runtime keeps threads and handlers.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gpu.h"

#ifndef UMBENCH_GPU_DIR
#error "UMBENCH_GPU_DIR (where umbench-gpu.so is installed) must be defined"
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const struct umbench_gpu *gpu;
static char load_why[2 * PATH_MAX + 512];	/* two paths and dlerror() */

/* The directory of the executable, "" when unknown. */
static void exe_dir(char *dir, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", dir, size - 1);
	char *slash;

	dir[n > 0 ? n : 0] = '\0';
	slash = strrchr(dir, '/');
	*(slash ? slash : dir) = '\0';
}

/* Into path the first of the two places that has the plugin; 0 if none. */
static int find_plugin(char *path, size_t size)
{
	char dir[PATH_MAX];

	exe_dir(dir, sizeof(dir));
	if (dir[0] && snprintf(path, size, "%s/%s", dir, UMBENCH_GPU_PLUGIN) <
		      (int)size && access(path, F_OK) == 0)
		return 1;
	snprintf(path, size, "%s/%s", UMBENCH_GPU_DIR, UMBENCH_GPU_PLUGIN);
	if (access(path, F_OK) == 0)
		return 1;
	snprintf(load_why, sizeof(load_why),
		 "%s is neither in %s nor in %s (the GPU part of umbench: built "
		 "where the CUDA toolkit is, packaged as um-tools-cuda)",
		 UMBENCH_GPU_PLUGIN, dir[0] ? dir : "the executable's directory",
		 UMBENCH_GPU_DIR);
	return 0;
}

static void load(void)
{
	char path[PATH_MAX];
	umbench_gpu_fn entry;
	void *h;

	if (!find_plugin(path, sizeof(path)))
		return;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {	/* most often the CUDA runtime it needs */
		snprintf(load_why, sizeof(load_why), "%s: %s", path, dlerror());
		return;
	}
	*(void **)&entry = dlsym(h, UMBENCH_GPU_ENTRY);
	if (!entry) {
		snprintf(load_why, sizeof(load_why), "%s: no %s", path,
			 UMBENCH_GPU_ENTRY);
		return;
	}
	gpu = entry();
	if (!gpu || gpu->size != sizeof(*gpu)) {
		gpu = NULL;
		snprintf(load_why, sizeof(load_why),
			 "%s was built from another umbench", path);
	}
}

const struct umbench_gpu *umbench_gpu_load(const char **why)
{
	pthread_once(&load_once, load);
	if (!gpu && why)
		*why = load_why;
	return gpu;
}
