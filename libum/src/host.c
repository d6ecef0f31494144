/* SPDX-License-Identifier: MIT */
/*
 * host.c - um_host_alloc/um_host_free/um_pool_trim: thin wrappers on the
 * pinned pool.
 *
 * The pool also holds regions' host copies, so um_host_free must only ever
 * free what um_host_alloc handed out: those blocks are kept in a small hash
 * set, and any other pointer (a region's copy, a foreign or freed pointer)
 * is refused with -EINVAL instead of corrupting a region.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

static uint32_t slot_of(const void *p, uint32_t cap)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & (cap - 1);
}

static int set_grow(struct um_context *ctx)
{
	uint32_t cap = ctx->uhost_cap ? ctx->uhost_cap * 2 : 64;
	void **n = calloc(cap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < ctx->uhost_cap; i++) {
		void *p = ctx->uhost[i];
		uint32_t s;

		if (!p)
			continue;
		for (s = slot_of(p, cap); n[s]; s = (s + 1) & (cap - 1))
			;
		n[s] = p;
	}
	free(ctx->uhost);
	ctx->uhost = n;
	ctx->uhost_cap = cap;
	return 0;
}

static int set_add(struct um_context *ctx, void *p)
{
	uint32_t s;

	if ((ctx->uhost_n + 1) * 4 > ctx->uhost_cap * 3) {
		int ret = set_grow(ctx);

		if (ret)
			return ret;
	}
	for (s = slot_of(p, ctx->uhost_cap); ctx->uhost[s];
	     s = (s + 1) & (ctx->uhost_cap - 1))
		;
	ctx->uhost[s] = p;
	ctx->uhost_n++;
	return 0;
}

/* Linear probing with backward-shift deletion (no tombstones). */
static bool set_del(struct um_context *ctx, const void *p)
{
	uint32_t mask = ctx->uhost_cap - 1, s, j;

	if (!ctx->uhost_cap)
		return false;
	for (s = slot_of(p, ctx->uhost_cap); ctx->uhost[s] != p;
	     s = (s + 1) & mask)
		if (!ctx->uhost[s])
			return false;
	ctx->uhost[s] = NULL;
	for (j = (s + 1) & mask; ctx->uhost[j]; j = (j + 1) & mask) {
		uint32_t home = slot_of(ctx->uhost[j], ctx->uhost_cap);

		/* move j back to s if its home is not in (s, j] */
		if (((j - home) & mask) >= ((j - s) & mask)) {
			ctx->uhost[s] = ctx->uhost[j];
			ctx->uhost[j] = NULL;
			s = j;
		}
	}
	ctx->uhost_n--;
	return true;
}

int um_host_alloc(struct um_context *ctx, size_t bytes, void **ptr)
{
	void *p = NULL;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!ptr || !bytes) {
		ret = -EINVAL;
		goto out;
	}
	if (bytes > UM_MAX_REGION_BYTES) {
		ret = -ENOMEM;
		goto out;
	}
	ret = um__pool_alloc(ctx->pool, bytes, ctx->home_node, 0, &p);
	if (ret)
		goto out;
	ret = set_add(ctx, p);
	if (ret) {
		um__pool_free(ctx->pool, p);
		goto out;
	}
	*ptr = p;
out:
	um__exit(ctx);
	return ret;
}

int um_host_free(struct um_context *ctx, void *ptr)
{
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!ptr || !set_del(ctx, ptr))
		ret = -EINVAL;
	else
		ret = um__pool_free(ctx->pool, ptr);
	um__exit(ctx);
	return ret;
}

int64_t um_pool_trim(struct um_context *ctx)
{
	int ret = um__enter(ctx);
	int64_t n;

	if (ret)
		return ret;
	n = um__pool_trim(ctx->pool, UM_POOL_NODE_ALL, 0);
	um__exit(ctx);
	return n;
}

/* At destroy: report and free what the caller still holds. */
int um__uhost_fini(struct um_context *ctx)
{
	int n = 0;

	for (uint32_t i = 0; i < ctx->uhost_cap; i++) {
		if (!ctx->uhost[i])
			continue;
		if (ctx->pool)
			um__pool_free(ctx->pool, ctx->uhost[i]);
		n++;
	}
	if (n)
		um__log(ctx, UM_LOG_WARN,
			"leak: %d pinned host block(s) from um_host_alloc still live at destroy",
			n);
	free(ctx->uhost);
	ctx->uhost = NULL;
	ctx->uhost_n = ctx->uhost_cap = 0;
	return n;
}
