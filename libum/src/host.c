/* SPDX-License-Identifier: MIT */
/*
 * host.c - um_host_alloc/um_host_free/um_pool_trim: thin wrappers on the
 * pinned pool.
 *
 * The pool also holds regions' host copies, so um_host_free must only ever
 * free what um_host_alloc handed out: the pool marks those blocks
 * (UM_POOL_USER) and refuses any other pointer (a region's copy, a foreign
 * or freed pointer) with -EINVAL instead of corrupting a region. None of
 * these takes the context lock: the pool is thread-safe on its own and its
 * per-thread caches make small blocks as cheap as malloc (umbench pool).
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

int um_host_alloc(struct um_context *ctx, size_t bytes, void **ptr)
{
	void *p = NULL;
	int ret = um__check_fast(ctx);

	if (ret)
		return ret;
	if (!ptr || !bytes)
		return -EINVAL;
	if (bytes > UM_MAX_REGION_BYTES)
		return -ENOMEM;
	ret = um__pool_alloc(ctx->pool, bytes, ctx->home_node, UM_POOL_USER,
			     &p);
	if (!ret)
		*ptr = p;
	return ret;
}

int um_host_free(struct um_context *ctx, void *ptr)
{
	int ret = um__check_fast(ctx);

	if (ret)
		return ret;
	if (!ptr)
		return -EINVAL;
	return um__pool_free_flags(ctx->pool, ptr, UM_POOL_USER);
}

/*
 * Without the context lock too: a trim waits for a growth in progress (the
 * refill thread pinning a chunk), which must not hold up other calls.
 */
int64_t um_pool_trim(struct um_context *ctx)
{
	int ret = um__check_fast(ctx);

	if (ret)
		return ret;
	return um__pool_trim(ctx->pool, UM_POOL_NODE_ALL, 0);
}
