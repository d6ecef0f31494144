// SPDX-License-Identifier: MIT
/*
 * umtorch_alloc.c - the CUDAPluggableAllocator functions (see umtorch.h).
 *
 * Locking: malloc and free hold g_lock for reading while they use the
 * context, attach and detach hold it for writing, so a context is never
 * destroyed or swapped under a call in flight. libum itself is thread-safe,
 * so concurrent allocations only share the read lock.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "umtorch.h"

#define UMT_EXPORT __attribute__((visibility("default")))
#define UMT_NAME "umtorch.alloc"

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct um_context *g_ctx;
static int g_owned;			/* g_ctx was created here */
static atomic_int_fast64_t g_live;
static atomic_uint_fast64_t g_errors;
static _Thread_local int t_last;

/* Records the outcome of a call; returns rc. */
static int note(int rc)
{
	t_last = rc;
	if (rc < 0)
		atomic_fetch_add(&g_errors, 1);
	return rc;
}

/*
 * The context for an allocation, created from the environment when none
 * was attached. Called with the read lock held; upgrading would deadlock,
 * so creation happens under the write lock and the caller retries.
 */
static int ctx_get(struct um_context **out)
{
	int rc = 0;

	if (g_ctx) {
		*out = g_ctx;
		return 0;
	}
	pthread_rwlock_unlock(&g_lock);
	pthread_rwlock_wrlock(&g_lock);
	if (!g_ctx) {
		rc = um_context_create(NULL, &g_ctx);
		g_owned = rc == 0;
	}
	pthread_rwlock_unlock(&g_lock);
	pthread_rwlock_rdlock(&g_lock);
	if (rc == 0 && !g_ctx)		/* detached meanwhile */
		rc = -EAGAIN;
	*out = g_ctx;
	return rc;
}

static int alloc_region(struct um_context *ctx, size_t size, int device,
			void *stream, void **ptr)
{
	struct um_region_desc d = {
		.size = sizeof(d),
		.kind = UM_KIND_GENERIC,
		.device = (uint32_t)device,
		.bytes = size,
		.name = UMT_NAME,
	};
	um_region_t r;
	int rc;

	rc = um_alloc(ctx, &d, &r);
	if (rc < 0)
		return rc;
	/* Acquired for its whole life: torch may touch it at any time. */
	rc = um_acquire(ctx, r, UM_TIER_GPU((unsigned int)device), stream);
	if (rc < 0)
		goto free_region;
	rc = um_ptr(ctx, r, ptr);
	if (rc < 0)
		goto release;
	return 0;
release:
	um_release(ctx, r);
free_region:
	um_free(ctx, r);
	return rc;
}

UMT_EXPORT void *um_torch_malloc(ssize_t size, int device, void *stream)
{
	struct um_context *ctx;
	void *ptr = NULL;
	int rc;

	if (size == 0) {		/* torch's own allocators: nullptr */
		note(0);
		return NULL;
	}
	if (size < 0 || device < 0) {
		note(-EINVAL);
		return NULL;
	}
	pthread_rwlock_rdlock(&g_lock);
	rc = ctx_get(&ctx);
	if (rc == 0)
		rc = alloc_region(ctx, (size_t)size, device, stream, &ptr);
	if (rc == 0)
		atomic_fetch_add(&g_live, 1);
	pthread_rwlock_unlock(&g_lock);
	note(rc);
	return rc == 0 ? ptr : NULL;
}

/* r must be an allocation of ours that starts at ptr and has size bytes. */
static int check_owned(struct um_context *ctx, um_region_t r, void *ptr,
		       ssize_t size)
{
	struct um_region_info info = { .size = sizeof(info) };
	void *base;
	int rc;

	rc = um_region_info(ctx, r, &info);
	if (rc == 0)
		rc = um_ptr(ctx, r, &base);
	if (rc < 0)
		return rc;
	if (strcmp(info.name, UMT_NAME) != 0 || base != ptr)
		return -EINVAL;
	if (size >= 0 && info.bytes != (uint64_t)size)
		return -EINVAL;
	return 0;
}

static int free_region(struct um_context *ctx, void *ptr, ssize_t size)
{
	um_region_t r;
	int rc;

	rc = um_lookup(ctx, ptr, &r);
	if (rc == 0)
		rc = check_owned(ctx, r, ptr, size);
	if (rc == 0)
		rc = um_release(ctx, r);
	if (rc == 0)
		rc = um_free(ctx, r);
	return rc;
}

UMT_EXPORT void um_torch_free(void *ptr, ssize_t size, int device,
			      void *stream)
{
	int rc = -ENOENT;

	if (!ptr) {
		note(0);
		return;
	}
	if (size < 0) {
		note(-EINVAL);
		return;
	}
	pthread_rwlock_rdlock(&g_lock);
	if (g_ctx)
		rc = free_region(g_ctx, ptr, size);
	if (rc == 0)
		atomic_fetch_sub(&g_live, 1);
	pthread_rwlock_unlock(&g_lock);
	note(rc);
}

UMT_EXPORT int um_torch_attach(struct um_context *ctx)
{
	int rc = 0;

	if (!ctx)
		return -EINVAL;
	pthread_rwlock_wrlock(&g_lock);
	if (ctx == g_ctx)
		goto out;
	if (atomic_load(&g_live) > 0) {
		rc = -EBUSY;
		goto out;
	}
	if (g_owned)
		um_context_destroy(g_ctx);
	g_ctx = ctx;
	g_owned = 0;
out:
	pthread_rwlock_unlock(&g_lock);
	return rc;
}

UMT_EXPORT int um_torch_detach(void)
{
	int rc = 0;

	pthread_rwlock_wrlock(&g_lock);
	if (atomic_load(&g_live) > 0) {
		rc = -EBUSY;
	} else {
		if (g_owned)
			um_context_destroy(g_ctx);
		g_ctx = NULL;
		g_owned = 0;
	}
	pthread_rwlock_unlock(&g_lock);
	return rc;
}

UMT_EXPORT int um_torch_last_error(void)
{
	return t_last;
}

UMT_EXPORT uint64_t um_torch_error_count(void)
{
	return atomic_load(&g_errors);
}

UMT_EXPORT int64_t um_torch_live(void)
{
	return atomic_load(&g_live);
}
