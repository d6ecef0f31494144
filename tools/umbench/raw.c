// SPDX-License-Identifier: MIT
/*
 * raw.c - what the pinned pool replaces: one pinned allocation per request.
 *
 * On sim the backend's chunks are locked anonymous memory, so the raw path
 * is mmap + mlock + munmap of the same size (mlock faults every page in, as
 * pinning does). With the cuda backend it is cudaHostAlloc/cudaFreeHost,
 * which umbench reaches through its GPU part (gpu.h); without that, it
 * says so and times mmap+mlock instead.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "bench.h"
#include "gpu.h"
#include "um.h"

static int try_mlock(struct raw_pinned *rp)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	if (p == MAP_FAILED)
		return -errno;
	ok = !mlock(p, 4096);
	munmap(p, 4096);
	rp->populate = !ok;
	rp->method = ok ? "mmap+mlock+munmap" : "mmap(MAP_POPULATE)+munmap";
	return 0;
}

int raw_init(struct raw_pinned *rp, int backend)
{
	memset(rp, 0, sizeof(*rp));
	rp->backend = backend;
	if (backend == UM_BACKEND_CUDA) {
		const char *why;

		rp->gpu = umbench_gpu_load(&why);
		if (rp->gpu) {
			rp->method = "cudaHostAlloc+cudaFreeHost";
			return 0;
		}
		ut_warn("pool: raw cudaHostAlloc unavailable, timing "
			"mmap+mlock instead: %s", why);
	}
	return try_mlock(rp);
}

int raw_alloc(struct raw_pinned *rp, size_t len, void **out)
{
	int flags = MAP_PRIVATE | MAP_ANONYMOUS;
	void *p;

	if (rp->gpu)
		return rp->gpu->host_alloc(len, out);
	if (rp->populate)
		flags |= MAP_POPULATE;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (!rp->populate && mlock(p, len)) {
		int err = -errno;

		munmap(p, len);
		return err;
	}
	*out = p;
	return 0;
}

void raw_free(struct raw_pinned *rp, void *p, size_t len)
{
	if (rp->gpu) {
		rp->gpu->host_free(p);
		return;
	}
	munmap(p, len);	/* unlocks too */
}
