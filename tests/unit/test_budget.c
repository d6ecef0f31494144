/* SPDX-License-Identifier: MIT */
/*
 * Description: the device budget is never exceeded, in our books or in the
 * sim's own mapped bytes, through random acquire/release/evict/shed; a
 * region larger than the budget, or one that cannot fit beside what is
 * acquired, fails with -ENOMEM, one ERR line naming region, size, budget
 * and what is held, a NOMEM event, and no region's bytes changed or moved;
 * lowering the budget evicts released regions, and below what is acquired
 * returns -EBUSY, keeps the new budget and evicts as regions are released.
 */
#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

#define SLOT (2 * MiB)

struct watch {
	struct um_context *ctx;
	uint64_t budget;
	int over;		/* times the books were seen above budget */
	int nomem;
};

static void on_event(void *arg, const struct um_event *ev)
{
	struct watch *w = arg;

	/* no lock is held here: calling back into libum must work */
	if (dev_current(w->ctx) > w->budget)
		w->over++;
	if (ev->type == UM_EVENT_NOMEM) {
		w->nomem++;
		if (ev->error != -ENOMEM || !ev->region)
			w->over += 1000;
	}
}

static uint64_t sim_mapped(struct um_context *ctx)
{
	return um__sim_mapped_bytes(&ctx->be);
}

TEST(budget_smaller_than_one_region)
{
	struct um_context *ctx;
	struct watch w = { 0 };
	struct um_stats st = { .size = sizeof(st) };
	um_region_t small, big;

	logcap_reset();
	ctx = ctx_sim(4 * MiB, 64 * MiB);
	ASSERT_NONNULL(ctx);
	w.ctx = ctx;
	w.budget = 4 * MiB;
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &w));
	small = region(ctx, UM_KIND_PARAM, 0, 2 * MiB, "small");
	big = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 6 * MiB, "adam.big");
	ASSERT_NE(0, big);
	ASSERT_EQ(0, put_pattern(ctx, small, 2 * MiB, 5));
	ASSERT_EQ(-ENOMEM, um_acquire(ctx, big, UM_TIER_GPU(0), NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "adam.big", "(6 MiB)", "budget 4 MiB",
			       "larger than the budget", NULL));
	EXPECT_EQ(1, w.nomem);
	EXPECT_EQ(0, w.over);
	/* nothing moved for a request that could never succeed */
	EXPECT_TRUE(on_gpu(ctx, small));
	EXPECT_EQ(UM_TIER_NONE, residency(ctx, big));
	ASSERT_EQ(0, um_stats_get(ctx, &st));
	EXPECT_EQ(1, st.nomem);
	EXPECT_EQ(1, st.events[UM_EVENT_NOMEM]);
	EXPECT_EQ(0, st.evict_count);
	EXPECT_EQ(0, get_pattern(ctx, small, 2 * MiB, 5));
	/* host acquire of the big one still works: it never needs the device */
	ASSERT_EQ(0, um_acquire(ctx, big, UM_TIER_HOST_ANY, NULL));
	ASSERT_EQ(0, um_release(ctx, big));
	ASSERT_EQ(0, um_free(ctx, big));
	ASSERT_EQ(0, um_free(ctx, small));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(all_acquired_nomem_nothing_lost)
{
	struct um_context *ctx = ctx_sim(3 * SLOT, 64 * MiB);
	um_region_t r[4];
	um_tier_t before[3];

	ASSERT_NONNULL(ctx);
	logcap_reset();
	for (int i = 0; i < 4; i++) {
		r[i] = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SLOT, "held");
		ASSERT_NE(0, r[i]);
	}
	for (int i = 0; i < 3; i++) {
		void *p;

		ASSERT_EQ(0, um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL));
		ASSERT_EQ(0, um_ptr(ctx, r[i], &p));
		pattern_fill(p, SLOT, (uint64_t)i);
		before[i] = residency(ctx, r[i]);
	}
	ASSERT_EQ(-ENOMEM, um_acquire(ctx, r[3], UM_TIER_GPU(0), NULL));
	/* an expected refusal: an info line (hidden by default), no error */
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "held by 3 acquired", NULL));
	EXPECT_FALSE(logcap_has(UM_LOG_ERR, "held by 3 acquired", NULL));
	EXPECT_FALSE(logcap_has(UM_LOG_WARN, "held by 3 acquired", NULL));
	for (int i = 0; i < 3; i++) {
		void *p;

		EXPECT_EQ(before[i], residency(ctx, r[i]));
		ASSERT_EQ(0, um_ptr(ctx, r[i], &p));
		EXPECT_EQ(-1, pattern_check(p, SLOT, (uint64_t)i));
	}
	EXPECT_EQ(3 * SLOT, dev_current(ctx));
	/* release one: now it fits, by evicting exactly that one */
	ASSERT_EQ(0, um_release(ctx, r[1]));
	ASSERT_EQ(0, um_acquire(ctx, r[3], UM_TIER_GPU(0), NULL));
	EXPECT_FALSE(on_gpu(ctx, r[1]));
	ASSERT_EQ(0, um_release(ctx, r[3]));
	ASSERT_EQ(0, um_release(ctx, r[0]));
	ASSERT_EQ(0, um_release(ctx, r[2]));
	for (int i = 0; i < 3; i++)
		EXPECT_EQ(0, get_pattern(ctx, r[i], SLOT, (uint64_t)i));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, um_free(ctx, r[i]));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(lower_budget_evicts_and_busy)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	um_region_t r[6];
	uint64_t b;

	ASSERT_NONNULL(ctx);
	for (int i = 0; i < 6; i++) {
		r[i] = region(ctx, UM_KIND_GRAD, 0, SLOT, "g");
		ASSERT_EQ(0, put_pattern(ctx, r[i], SLOT, 50 + (uint64_t)i));
	}
	EXPECT_EQ(6 * SLOT, dev_current(ctx));
	ASSERT_EQ(0, um_budget_set(ctx, 0, 4 * SLOT));
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(4 * SLOT, dev_current(ctx));
	EXPECT_EQ(4 * SLOT, sim_mapped(ctx));
	/* acquired regions above a lowered budget: -EBUSY, budget kept */
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL));
	ASSERT_EQ(-EBUSY, um_budget_set(ctx, 0, 2 * SLOT));
	ASSERT_EQ(0, um_budget_get(ctx, 0, &b));
	EXPECT_EQ(2 * SLOT, b);
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(3 * SLOT, dev_current(ctx));	/* the 3 acquired */
	/* nothing new fits meanwhile */
	EXPECT_EQ(-ENOMEM, um_acquire(ctx, r[4], UM_TIER_GPU(0), NULL));
	/* each release brings the device back toward the budget */
	ASSERT_EQ(0, um_release(ctx, r[0]));
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(2 * SLOT, dev_current(ctx));
	ASSERT_EQ(0, um_release(ctx, r[1]));
	ASSERT_EQ(0, um_release(ctx, r[2]));
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(2 * SLOT, dev_current(ctx));
	/* budget 0: everything released leaves the device */
	ASSERT_EQ(0, um_budget_set(ctx, 0, 0));
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(0, dev_current(ctx));
	EXPECT_EQ(0, sim_mapped(ctx));
	EXPECT_EQ(-ENOMEM, um_acquire(ctx, r[0], UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_budget_set(ctx, 0, 64 * MiB));
	for (int i = 0; i < 6; i++) {
		EXPECT_EQ(0, get_pattern(ctx, r[i], SLOT, 50 + (uint64_t)i));
		ASSERT_EQ(0, um_free(ctx, r[i]));
	}
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* Random operations; the books and the sim never exceed the budget. */
TEST(random_ops_never_exceed)
{
	enum { N = 24, OPS = 3000 };
	const uint64_t budget = 10 * SLOT;
	struct um_context *ctx = ctx_sim(budget, 64 * MiB);
	struct watch w = { .ctx = ctx, .budget = budget };
	um_region_t r[N];
	uint64_t sz[N], seed[N];
	int held[N] = { 0 };
	uint64_t x = 12345;
	struct um_stats st = { .size = sizeof(st) };

	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &w));
	for (int i = 0; i < N; i++) {
		sz[i] = (1 + i % 3) * SLOT - (uint64_t)(i * 37);
		seed[i] = 1000 + (uint64_t)i;
		r[i] = region(ctx, i % UM_KIND_COUNT, i % 4, sz[i], "rnd");
		ASSERT_NE(0, r[i]);
	}
	for (int op = 0; op < OPS; op++) {
		int i, ret;
		void *p;

		x = mix64(x);
		i = (int)(x % N);
		switch ((x >> 8) % 5) {
		case 0:
		case 1:
			if (held[i])
				break;
			ret = um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL);
			if (ret == -ENOMEM)
				break;
			ASSERT_EQ(0, ret);
			held[i] = 1;
			ASSERT_EQ(0, um_ptr(ctx, r[i], &p));
			/* first time: write; later: check, then rewrite */
			if (seed[i] >= 2000)
				ASSERT_EQ(-1, pattern_check(p, sz[i], seed[i]))
					TH_LOG("op %d region %d", op, i);
			seed[i] = 2000 + (uint64_t)op;
			pattern_fill(p, sz[i], seed[i]);
			break;
		case 2:
			if (!held[i])
				break;
			ASSERT_EQ(0, um_release(ctx, r[i]));
			held[i] = 0;
			break;
		case 3:
			ret = um_evict(ctx, r[i], UM_TIER_HOST_ANY);
			ASSERT_EQ(held[i] ? -EBUSY : 0, ret);
			break;
		case 4:
			ASSERT_LE(0, um_shed(ctx, UM_TIER_GPU(0), (x >> 20) % (4 * SLOT),
					     UM_TIER_NONE));
			break;
		}
		ASSERT_GE(budget, dev_current(ctx)) TH_LOG("op %d", op);
		ASSERT_GE(budget, sim_mapped(ctx)) TH_LOG("op %d", op);
	}
	EXPECT_EQ(0, w.over);
	ASSERT_EQ(0, um_stats_get(ctx, &st));
	EXPECT_GE(budget, st.device[0].peak);
	EXPECT_LT(0, st.evict_count);
	for (int i = 0; i < N; i++)
		if (held[i])
			ASSERT_EQ(0, um_release(ctx, r[i]));
	for (int i = 0; i < N; i++) {
		if (seed[i] >= 2000)
			EXPECT_EQ(0, get_pattern(ctx, r[i], sz[i], seed[i]));
		ASSERT_EQ(0, um_free(ctx, r[i]));
	}
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* Evictions in flight count until reaped: acquire waits, never overshoots. */
TEST(inflight_evictions_still_count)
{
	struct um_context *ctx = ctx_sim(2 * SLOT, 64 * MiB);
	um_region_t a, b, c;

	ASSERT_NONNULL(ctx);
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SLOT, "a");
	b = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SLOT, "b");
	c = region(ctx, UM_KIND_PARAM, 0, SLOT, "c");
	ASSERT_EQ(0, put_pattern(ctx, a, SLOT, 1));
	ASSERT_EQ(0, put_pattern(ctx, b, SLOT, 2));
	ASSERT_EQ(0, um__sim_hold(&ctx->be, true));
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	/* a is on its way out but still mapped: still on the books */
	EXPECT_EQ(2 * SLOT, dev_current(ctx));
	EXPECT_EQ(2 * SLOT, sim_mapped(ctx));
	ASSERT_EQ(0, um__sim_hold(&ctx->be, false));
	/* c fits only once a's eviction is reaped: acquire waits for it */
	ASSERT_EQ(0, um_acquire(ctx, c, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(2 * SLOT, dev_current(ctx));
	EXPECT_FALSE(on_gpu(ctx, a));
	ASSERT_EQ(0, um_release(ctx, c));
	EXPECT_EQ(0, get_pattern(ctx, a, SLOT, 1));
	EXPECT_EQ(0, get_pattern(ctx, b, SLOT, 2));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_free(ctx, b));
	ASSERT_EQ(0, um_free(ctx, c));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* A device shared with others: it refuses memory our books still allow. */
static struct um_backend_ops shared_dev;
static uint64_t phys_limit, phys_used;

static int limited_phys_map(struct um_backend *be, int dev, void *va,
			    size_t len, void **handle)
{
	int ret;

	if (phys_used + len > phys_limit)
		return -ENOMEM;
	ret = um__backend_sim.phys_map(be, dev, va, len, handle);
	if (!ret)
		phys_used += len;
	return ret;
}

static void limited_phys_unmap(struct um_backend *be, int dev, void *va,
			       size_t len, void *handle)
{
	um__backend_sim.phys_unmap(be, dev, va, len, handle);
	phys_used -= len;
}

TEST(device_refuses_below_budget)
{
	struct um_context *ctx = ctx_sim(8 * SLOT, 64 * MiB);
	um_region_t r[5];

	ASSERT_NONNULL(ctx);
	shared_dev = um__backend_sim;
	shared_dev.phys_map = limited_phys_map;
	shared_dev.phys_unmap = limited_phys_unmap;
	phys_limit = 3 * SLOT;	/* others hold the rest of the device */
	ctx->be.ops = &shared_dev;
	for (int i = 0; i < 5; i++) {
		r[i] = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SLOT, "s");
		/* the 4th and 5th only fit by evicting beyond the budget */
		ASSERT_EQ(0, put_pattern(ctx, r[i], SLOT, 70 + (uint64_t)i));
		EXPECT_GE(3 * SLOT, phys_used);
	}
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(0, get_pattern(ctx, r[i], SLOT, 70 + (uint64_t)i));
	/* all acquired up to the physical limit: the next one is refused */
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL));
	logcap_reset();
	EXPECT_EQ(-ENOMEM, um_acquire(ctx, r[3], UM_TIER_GPU(0), NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "device refused", NULL));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, um_release(ctx, r[i]));
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(0, get_pattern(ctx, r[i], SLOT, 70 + (uint64_t)i));
		ASSERT_EQ(0, um_free(ctx, r[i]));
	}
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/*
 * A budget lowered under an acquired region, its release
 * (an eviction toward the budget starts) and a re-acquire at once. The
 * re-acquire must not keep the region on the device by superseding that
 * eviction while the books are over budget: it is -ENOMEM (the region alone
 * is larger than the budget), whether or not the eviction was reaped by
 * then. Repeated, since which of the two it meets depends on timing
 * (superseding there failed 294 of 300 rounds).
 */
TEST_TIMEOUT_SET(reacquire_during_budget_eviction, 120);
TEST(reacquire_during_budget_eviction)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	um_region_t r;
	int ret;

	ASSERT_NONNULL(ctx);
	r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 10 * MiB, "big");
	ASSERT_NE(0, r);
	ASSERT_EQ(0, put_pattern(ctx, r, 10 * MiB, 9));
	for (int i = 0; i < 100; i++) {
		ASSERT_EQ(0, um_acquire(ctx, r, UM_TIER_GPU(0), NULL));
		ASSERT_EQ(10 * MiB, dev_current(ctx));
		ASSERT_EQ(-EBUSY, um_budget_set(ctx, 0, 4 * MiB));
		ASSERT_EQ(0, um_release(ctx, r));
		ret = um_acquire(ctx, r, UM_TIER_GPU(0), NULL);
		EXPECT_EQ(-ENOMEM, ret);
		EXPECT_GE(4 * MiB, dev_current(ctx));
		if (!ret)
			ASSERT_EQ(0, um_release(ctx, r));
		ASSERT_EQ(0, um_wait_all(ctx));
		ASSERT_EQ(0, dev_current(ctx));
		ASSERT_EQ(0, sim_mapped(ctx));
		ASSERT_EQ(0, um_budget_set(ctx, 0, 64 * MiB));
	}
	EXPECT_EQ(0, get_pattern(ctx, r, 10 * MiB, 9));
	ASSERT_EQ(0, um_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
