/* SPDX-License-Identifier: MIT */
/*
 * hostneed.c - what evicting every region on the devices would take from
 * the pool: the total and the largest host copy, kept as regions change so
 * that the refill thread's watermark (refill.c) costs O(1) under the
 * context lock instead of a walk over every region.
 *
 * The total is a running sum; the largest is the top of a binary max-heap
 * of the regions that need a copy (each knows its place in it), O(log n)
 * per change. The heap's array always has room for every region (reserved
 * at um_alloc), so keeping it up to date never fails.
 *
 * Whoever changes what the need depends on (residency, the host copy)
 * calls um__hostneed_sync() afterwards.
 */
#include <errno.h>
#include <stdlib.h>

#include "internal.h"

/* The bytes of r an eviction would put in a pool block, 0 if none. */
static uint64_t block_need(const struct um_region *r)
{
	if (!um__tier_is_dev(r->residency) || r->host)
		return 0;
	if (r->backing != UM_BACKING_TIERED &&
	    !(r->flags & UM_REGION_DISCARD_EVICT))
		return 0;
	return r->bytes;
}

static void heap_set(struct um_context *ctx, uint32_t i, struct um_region *r)
{
	ctx->need_heap[i] = r;
	r->need_at = i + 1;
}

static void sift_up(struct um_context *ctx, uint32_t i)
{
	struct um_region *r = ctx->need_heap[i];

	while (i > 0) {
		uint32_t up = (i - 1) / 2;

		if (ctx->need_heap[up]->need >= r->need)
			break;
		heap_set(ctx, i, ctx->need_heap[up]);
		i = up;
	}
	heap_set(ctx, i, r);
}

static void sift_down(struct um_context *ctx, uint32_t i)
{
	struct um_region *r = ctx->need_heap[i];
	uint32_t n = ctx->need_n;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n &&
		    ctx->need_heap[c + 1]->need > ctx->need_heap[c]->need)
			c++;
		if (ctx->need_heap[c]->need <= r->need)
			break;
		heap_set(ctx, i, ctx->need_heap[c]);
		i = c;
	}
	heap_set(ctx, i, r);
}

static void heap_remove(struct um_context *ctx, struct um_region *r)
{
	uint32_t i = r->need_at - 1, last = --ctx->need_n;
	struct um_region *moved = ctx->need_heap[last];

	r->need_at = 0;
	if (i == last)
		return;
	/* the last entry fills the hole, then finds its place either way */
	heap_set(ctx, i, moved);
	sift_up(ctx, i);
	sift_down(ctx, moved->need_at - 1);
}

int um__hostneed_reserve(struct um_context *ctx, uint32_t regions)
{
	struct um_region **n;
	uint32_t cap = ctx->need_cap ? ctx->need_cap : 64;

	if (regions <= ctx->need_cap)
		return 0;
	while (cap < regions)
		cap *= 2;
	n = realloc(ctx->need_heap, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	ctx->need_heap = n;
	ctx->need_cap = cap;
	return 0;
}

void um__hostneed_sync(struct um_context *ctx, struct um_region *r)
{
	uint64_t need = block_need(r);

	if (need == r->need)
		return;
	if (r->need_at)
		heap_remove(ctx, r);
	ctx->need_total += need - r->need;
	r->need = need;
	if (!need)
		return;
	heap_set(ctx, ctx->need_n++, r);
	sift_up(ctx, r->need_at - 1);
}

void um__hostneed_drop(struct um_context *ctx, struct um_region *r)
{
	if (r->need_at)
		heap_remove(ctx, r);
	ctx->need_total -= r->need;
	r->need = 0;
}

void um__hostneed_figures(const struct um_context *ctx, uint64_t *total,
			  uint64_t *largest)
{
	*total = ctx->need_total;
	*largest = ctx->need_n ? ctx->need_heap[0]->need : 0;
}

void um__hostneed_fini(struct um_context *ctx)
{
	free(ctx->need_heap);
	ctx->need_heap = NULL;
	ctx->need_n = ctx->need_cap = 0;
	ctx->need_total = 0;
}
