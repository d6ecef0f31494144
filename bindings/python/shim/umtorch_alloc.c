// SPDX-License-Identifier: MIT
/*
 * umtorch_alloc.c - the CUDAPluggableAllocator functions (see umtorch.h).
 *
 * Requests under UMT_SMALL go to a sub-allocator per device
 * (um_suballoc_create(3), segments held on the device as torch's small
 * blocks are), as torch's caching allocator packs its small pool into
 * 2 MiB blocks; larger ones are a region each.
 *
 * Locking: malloc and free hold g_lock for reading while they use the
 * context, attach and detach hold it for writing, so a context (and its
 * sub-allocators) is never destroyed or swapped under a call in flight.
 * libum itself is thread-safe, so concurrent allocations only share the
 * read lock; g_sa_lock only orders the making of a sub-allocator.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "umtorch.h"

#define UMT_EXPORT __attribute__((visibility("default")))
#define UMT_NAME "umtorch.alloc"
/* torch's small pool: requests up to 1 MiB share 2 MiB blocks */
#define UMT_SMALL (1 << 20)
#define UMT_SMALL_NAME "umtorch.small"	/* the segments' regions */
#define UMT_DEVICES UM_STATS_MAX_DEVICES

static pthread_rwlock_t g_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct um_context *g_ctx;
static int g_owned;			/* g_ctx was created here */
static atomic_int_fast64_t g_live;
static atomic_uint_fast64_t g_errors;
static _Thread_local int t_last;
static struct um_suballoc *_Atomic g_sa[UMT_DEVICES];
static pthread_mutex_t g_sa_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* Called with g_lock held for writing: no call is in flight. */
static void sa_drop_all(void)
{
	for (int i = 0; i < UMT_DEVICES; i++) {
		struct um_suballoc *sa = atomic_exchange(&g_sa[i], NULL);

		if (sa)
			um_suballoc_destroy(sa);
	}
}

/* The device's sub-allocator, made on first use (read lock held). */
static int sa_get(struct um_context *ctx, int device, struct um_suballoc **out)
{
	struct um_suballoc_desc d = {
		.size = sizeof(d),
		.device = (uint32_t)device,
		.kind = UM_KIND_GENERIC,
		.flags = UM_SUBALLOC_HOLD,
		.name = UMT_SMALL_NAME,
	};
	struct um_suballoc *sa;
	int rc = 0;

	if (device >= UMT_DEVICES)
		return -EINVAL;
	sa = atomic_load(&g_sa[device]);
	if (sa) {
		*out = sa;
		return 0;
	}
	pthread_mutex_lock(&g_sa_lock);
	sa = atomic_load(&g_sa[device]);
	if (!sa) {
		rc = um_suballoc_create(ctx, &d, &sa);
		if (rc == 0)
			atomic_store(&g_sa[device], sa);
	}
	pthread_mutex_unlock(&g_sa_lock);
	*out = sa;
	return rc;
}

/* Give the cached empty segments back (torch empties its cache on OOM). */
static int64_t sa_trim_all(void)
{
	int64_t freed = 0;

	for (int i = 0; i < UMT_DEVICES; i++) {
		struct um_suballoc *sa = atomic_load(&g_sa[i]);
		int64_t n = sa ? um_suballoc_trim(sa) : 0;

		if (n > 0)
			freed += n;
	}
	return freed;
}

/*
 * size more bytes fit the budget beside what the device holds now (so the
 * cached segments need not be given back first, nor an acquire refused
 * with its ERR line before they are).
 */
static bool fits(struct um_context *ctx, unsigned int device, size_t size)
{
	struct um_stats st = { .size = sizeof(st) };
	uint64_t gran;

	if (um_stats_get(ctx, &st) || um_granularity(ctx, device, &gran))
		return true;
	size = (size + gran - 1) / gran * gran;
	return st.device[device].current + size <= st.budget[device];
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
	if (device < UMT_DEVICES && atomic_load(&g_sa[device]) &&
	    !fits(ctx, (unsigned int)device, size))
		sa_trim_all();
	rc = um_acquire(ctx, r, UM_TIER_GPU((unsigned int)device), stream);
	if (rc == -ENOMEM && sa_trim_all() > 0)
		rc = um_acquire(ctx, r, UM_TIER_GPU((unsigned int)device),
				stream);
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
	if (rc == 0 && size < UMT_SMALL) {
		struct um_suballoc *sa;

		rc = sa_get(ctx, device, &sa);
		if (rc == 0)
			rc = um_suballoc_alloc(sa, (size_t)size, stream, &ptr);
		/* a device whose granule is under 2 MiB: regions then */
		if (rc == -E2BIG)
			rc = 1;
	} else if (rc == 0) {
		rc = 1;
	}
	if (rc == 1)
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
	/* a segment of the small blocks: what was asked is freed already */
	if (strcmp(info.name, UMT_SMALL_NAME) == 0)
		return -ENOENT;
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

/* -ENOENT: not a block of the device's sub-allocator. */
static int free_small(void *ptr, ssize_t size, int device, void *stream)
{
	struct um_suballoc_block info = { .size = sizeof(info) };
	struct um_suballoc *sa;
	int rc;

	if (size >= UMT_SMALL || device < 0 || device >= UMT_DEVICES)
		return -ENOENT;
	sa = atomic_load(&g_sa[device]);
	if (!sa)
		return -ENOENT;
	rc = um_suballoc_lookup(sa, ptr, &info);
	if (rc == -EXDEV)
		rc = -ENOENT;
	if (rc < 0)
		return rc;
	if (info.ptr != ptr || info.bytes != (uint64_t)size)
		return -EINVAL;
	return um_suballoc_free(sa, ptr, stream);
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
		rc = free_small(ptr, size, device, stream);
	if (g_ctx && rc == -ENOENT)
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
	sa_drop_all();
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
		sa_drop_all();
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
