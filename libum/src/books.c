/* SPDX-License-Identifier: MIT */
/*
 * books.c - the context's books: byte counters per tier and kind, kept as
 * regions move. um__books_changed() is how a change is signalled upward:
 * it calls the hook a higher layer installed (pressure.c's wakeup), so
 * nothing here knows who listens.
 */
#include "internal.h"

void um__counter_add(struct um_counter *c, uint64_t bytes)
{
	c->current += bytes;
	if (c->current > c->peak)
		c->peak = c->current;
	c->total += bytes;
}

void um__counter_sub(struct um_counter *c, uint64_t bytes)
{
	c->current = c->current > bytes ? c->current - bytes : 0;
}

static void tier_add(struct um_context *ctx, um_tier_t t, uint64_t b, bool add)
{
	void (*op)(struct um_counter *, uint64_t) =
		add ? um__counter_add : um__counter_sub;
	struct um_books *k = &ctx->books;

	switch (UM_TIER_TYPE(t)) {
	case UM_TIER_HOST:
		op(&k->host_total, b);
		if (UM_TIER_ID(t) < UM_STATS_MAX_NODES)
			op(&k->host[UM_TIER_ID(t)], b);
		break;
	case UM_TIER_SPILL:
		op(&k->spill, b);
		break;
	default:
		break;	/* device bytes follow the books (counted) */
	}
}

void um__books_residency(struct um_context *ctx, struct um_region *r,
			 um_tier_t from, um_tier_t to)
{
	if (from == to)
		return;
	tier_add(ctx, from, r->bytes, false);
	tier_add(ctx, to, r->bytes, true);
	um__books_changed(ctx);
}

/* The pressure loop REPORTs what we hold on change (cheap, lock-free). */
void um__books_changed(struct um_context *ctx)
{
	if (ctx->books_changed)
		ctx->books_changed(ctx);
}
