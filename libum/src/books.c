/* SPDX-License-Identifier: MIT */
/*
 * books.c - the context's books: byte counters per tier and kind, kept as
 * regions move; which counters a tier feeds, and whether residency or the
 * device budget feeds them, is its row's (tier.c). um__books_changed() is
 * how a change is signalled upward: it calls the hook a higher layer
 * installed (pressure.c's wakeup), so nothing here knows who listens.
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

/* Add or take b bytes on the counters t's row names. */
static void tier_count(struct um_context *ctx, um_tier_t t, uint64_t b,
		       bool add)
{
	struct um_counter *c[2];
	int n = um__tier_counters(&ctx->books.tier, t, c);

	for (int i = 0; i < n; i++) {
		if (add)
			um__counter_add(c[i], b);
		else
			um__counter_sub(c[i], b);
	}
}

/* Residency feeds the counters of the tiers the budget does not. */
static void residency_count(struct um_context *ctx, um_tier_t t, uint64_t b,
			    bool add)
{
	const struct um__tier_desc *d = um__tier(t);

	if (d && !d->budget)
		tier_count(ctx, t, b, add);
}

void um__books_residency(struct um_context *ctx, struct um_region *r,
			 um_tier_t from, um_tier_t to)
{
	if (from == to)
		return;
	residency_count(ctx, from, r->bytes, false);
	residency_count(ctx, to, r->bytes, true);
	um__books_changed(ctx);
}

void um__books_budget(struct um_context *ctx, struct um_region *r, bool add)
{
	struct um_dev *d = &ctx->dev[r->device];

	if (add)
		d->used += r->dev_len;
	else
		d->used -= r->dev_len;
	tier_count(ctx, UM_TIER_GPU(r->device), r->dev_len, add);
}

/* The pressure loop REPORTs what we hold on change (cheap, lock-free). */
void um__books_changed(struct um_context *ctx)
{
	if (ctx->books_changed)
		ctx->books_changed(ctx);
}
