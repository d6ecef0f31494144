/* SPDX-License-Identifier: MIT */
/*
 * Description: UM_ADVISE_READ_MOSTLY on TIERED regions. A restore under
 * the advice keeps the host copy, so the next eviction (asked for, or
 * chosen by the budget) copies nothing: evict_clean_count/bytes count it,
 * evict_count/evict_bytes/migrated_bytes do not, and the bytes come back
 * intact. UNSET drops a kept copy of a resident region (a write after it
 * is copied out by the next eviction) and only clears the flag on a host
 * region; the advice set on a resident region without a host copy waits
 * for the next eviction, which copies. Freeing a region with a kept copy
 * gives the pool block back. A failed copy under the advice leaves no
 * kept copy behind that would make a later eviction skip its copy. Bad
 * handles and advice values are refused.
 */
#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

#define SZ (4 * MiB)

FIXTURE(rm) {
	struct um_context *ctx;
	um_region_t r;
	uint64_t pool_base;	/* pool_used with r never on the host */
};

static struct um_stats stats(struct um_context *ctx)
{
	struct um_stats s = { .size = sizeof(s) };

	if (um_stats_get(ctx, &s))
		memset(&s, 0xff, sizeof(s));
	return s;
}

static int evict_wait(struct um_context *ctx, um_region_t r)
{
	int ret = um_evict(ctx, r, UM_TIER_HOST_ANY);

	return ret ? ret : um_wait(ctx, r);
}

static int advise(struct um_context *ctx, um_region_t r, int advice)
{
	return um_advise(ctx, r, advice, UM_TIER_HOST_ANY);
}

/* r written with seed 1, evicted (a copy), advised, restored (kept copy) */
static int kept_copy(struct um_context *ctx, um_region_t r)
{
	int ret = put_pattern(ctx, r, SZ, 1);

	if (!ret)
		ret = evict_wait(ctx, r);
	if (!ret)
		ret = advise(ctx, r, UM_ADVISE_READ_MOSTLY);
	if (!ret)
		ret = get_pattern(ctx, r, SZ, 1);
	return ret;
}

/*
 * Evict r, then: the evictions that copied and the clean ones so far, and
 * r's bytes still seed's pattern.
 */
static void evict_expect(struct __test_metadata *_metadata,
			 struct um_context *ctx, um_region_t r,
			 uint64_t copied, uint64_t clean, uint64_t seed)
{
	struct um_stats s;

	ASSERT_EQ(0, evict_wait(ctx, r));
	s = stats(ctx);
	EXPECT_EQ(copied, s.evict_count);
	EXPECT_EQ(clean, s.evict_clean_count);
	EXPECT_EQ(0, get_pattern(ctx, r, SZ, seed));
}

FIXTURE_SETUP(rm)
{
	self->ctx = ctx_sim(0, 64 * MiB);
	ASSERT_NONNULL(self->ctx);
	self->pool_base = stats(self->ctx).pool_used;
	self->r = region(self->ctx, UM_KIND_PARAM, 0, SZ, "w");
	ASSERT_NE(0, self->r);
}

FIXTURE_TEARDOWN(rm)
{
	if (self->r)
		EXPECT_EQ(0, um_free(self->ctx, self->r));
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

TEST_F(rm, clean_eviction_moves_nothing)
{
	struct um_stats a, b;
	char json[8192];

	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	a = stats(self->ctx);
	/* the restore kept the block the eviction filled */
	EXPECT_LT(self->pool_base, a.pool_used);
	EXPECT_EQ(1, a.evict_count);
	EXPECT_EQ(0, a.evict_clean_count);

	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	b = stats(self->ctx);
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, self->r)));
	EXPECT_EQ(a.evict_count, b.evict_count);
	EXPECT_EQ(a.evict_bytes, b.evict_bytes);
	EXPECT_EQ(a.migrations, b.migrations);
	EXPECT_EQ(a.migrated_bytes, b.migrated_bytes);
	EXPECT_EQ(1, b.evict_clean_count);
	EXPECT_EQ(SZ, b.evict_clean_bytes);
	EXPECT_EQ(0, b.device[0].current);
	EXPECT_EQ(a.pool_used, b.pool_used);
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, SZ, 1));

	ASSERT_LT(0, um_stats_json(self->ctx, json, sizeof(json)));
	EXPECT_NONNULL(strstr(json, "\"evict_clean_count\":1,"));
	EXPECT_NONNULL(strstr(json, "\"evict_clean_bytes\":4194304,"));
}

TEST_F(rm, many_cycles_stay_clean)
{
	struct um_stats a, b;
	int i;

	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	a = stats(self->ctx);
	for (i = 0; i < 40; i++) {
		ASSERT_EQ(0, evict_wait(self->ctx, self->r));
		ASSERT_EQ(0, get_pattern(self->ctx, self->r, SZ, 1));
	}
	b = stats(self->ctx);
	EXPECT_EQ(40, b.evict_clean_count);
	EXPECT_EQ(40 * SZ, b.evict_clean_bytes);
	EXPECT_EQ(a.evict_bytes, b.evict_bytes);
	/* only the restores copied */
	EXPECT_EQ(a.migrated_bytes + 40 * SZ, b.migrated_bytes);
	EXPECT_EQ(a.restore_count + 40, b.restore_count);
	EXPECT_EQ(a.pool_used, b.pool_used);
}

TEST_F(rm, unset_on_resident_region_then_write_copies_back)
{
	struct um_stats a, b;
	void *p;

	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	/* the trainer's order: held, unset, then written */
	ASSERT_EQ(0, acquire_ptr(self->ctx, self->r, &p));
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_UNSET_READ_MOSTLY));
	a = stats(self->ctx);
	EXPECT_EQ(self->pool_base, a.pool_used);	/* kept copy dropped */
	pattern_fill(p, SZ, 2);
	ASSERT_EQ(0, um_release(self->ctx, self->r));

	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	b = stats(self->ctx);
	EXPECT_EQ(a.evict_count + 1, b.evict_count);
	EXPECT_EQ(a.evict_bytes + SZ, b.evict_bytes);
	EXPECT_EQ(0, b.evict_clean_count);
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, SZ, 2));
	/* restored without the advice: no copy kept */
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
}

TEST_F(rm, unset_on_host_region_only_clears_the_flag)
{
	struct um_stats a, b;
	um_tier_t where;

	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	where = residency(self->ctx, self->r);
	a = stats(self->ctx);
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_UNSET_READ_MOSTLY));
	EXPECT_EQ(where, residency(self->ctx, self->r));
	EXPECT_EQ(a.pool_used, stats(self->ctx).pool_used);

	/* the next restore drops the host copy, the next eviction copies */
	ASSERT_EQ(0, get_pattern(self->ctx, self->r, SZ, 1));
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	b = stats(self->ctx);
	EXPECT_EQ(a.evict_count + 1, b.evict_count);
	EXPECT_EQ(a.evict_clean_count, b.evict_clean_count);
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, SZ, 1));
}

TEST_F(rm, advice_on_resident_region_waits_for_next_eviction)
{
	struct um_stats a, b;

	ASSERT_EQ(0, put_pattern(self->ctx, self->r, SZ, 3));
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY));
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);

	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	a = stats(self->ctx);
	EXPECT_EQ(1, a.evict_count);
	EXPECT_EQ(SZ, a.evict_bytes);
	EXPECT_EQ(0, a.evict_clean_count);

	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, get_pattern(self->ctx, self->r, SZ, 3));
		ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	}
	b = stats(self->ctx);
	EXPECT_EQ(a.evict_count, b.evict_count);
	EXPECT_EQ(a.evict_bytes, b.evict_bytes);
	EXPECT_EQ(3, b.evict_clean_count);
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, SZ, 3));
}

TEST_F(rm, free_with_kept_copy_gives_the_block_back)
{
	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	EXPECT_LT(self->pool_base, stats(self->ctx).pool_used);
	EXPECT_EQ(0, um_free(self->ctx, self->r));
	self->r = 0;
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
	EXPECT_EQ(0, dev_current(self->ctx));
}

TEST_F(rm, free_after_clean_eviction_in_flight)
{
	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	ASSERT_EQ(0, um_evict(self->ctx, self->r, UM_TIER_HOST_ANY));
	EXPECT_EQ(0, um_free(self->ctx, self->r));
	self->r = 0;
	EXPECT_EQ(0, dev_current(self->ctx));
}

TEST_F(rm, reacquire_during_clean_eviction_keeps_bytes)
{
	ASSERT_EQ(0, kept_copy(self->ctx, self->r));
	ASSERT_EQ(0, um_evict(self->ctx, self->r, UM_TIER_HOST_ANY));
	/* superseded or landed, the bytes are whole either way */
	ASSERT_EQ(0, get_pattern(self->ctx, self->r, SZ, 1));
	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	EXPECT_LE(1, stats(self->ctx).evict_clean_count);
	EXPECT_EQ(1, stats(self->ctx).evict_count);
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, SZ, 1));
}

TEST_F(rm, failed_copying_eviction_keeps_no_copy)
{
	ASSERT_EQ(0, put_pattern(self->ctx, self->r, SZ, 6));
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY));
	ASSERT_EQ(0, um__sim_fail_next(&self->ctx->be, -EIO, 1));
	ASSERT_EQ(0, um_evict(self->ctx, self->r, UM_TIER_HOST_ANY));
	EXPECT_EQ(-EIO, um_wait(self->ctx, self->r));
	EXPECT_TRUE(on_gpu(self->ctx, self->r));
	/* the half-filled block went: it must not pass for a kept copy */
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
	evict_expect(_metadata, self->ctx, self->r, 1, 0, 6);
}

TEST_F(rm, failed_restore_then_clean_cycle)
{
	ASSERT_EQ(0, put_pattern(self->ctx, self->r, SZ, 7));
	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY));
	ASSERT_EQ(0, um__sim_fail_next(&self->ctx->be, -EIO, 1));
	EXPECT_EQ(-EIO, um_acquire(self->ctx, self->r, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-EIO, um_wait_all(self->ctx));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, self->r)));
	EXPECT_EQ(0, dev_current(self->ctx));
	/* the host copy is the region's bytes: restored, then kept */
	ASSERT_EQ(0, get_pattern(self->ctx, self->r, SZ, 7));
	evict_expect(_metadata, self->ctx, self->r, 1, 1, 7);
}

TEST_F(rm, unset_while_restore_in_flight)
{
	void *p;

	ASSERT_EQ(0, put_pattern(self->ctx, self->r, SZ, 8));
	ASSERT_EQ(0, evict_wait(self->ctx, self->r));
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY));
	ASSERT_EQ(0, um_acquire(self->ctx, self->r, UM_TIER_GPU(0), NULL));
	/* the copy may still read the block: it goes once reaped */
	ASSERT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_UNSET_READ_MOSTLY));
	ASSERT_EQ(0, um_wait(self->ctx, self->r));
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
	ASSERT_EQ(0, um_ptr(self->ctx, self->r, &p));
	EXPECT_EQ(-1, pattern_check(p, SZ, 8));
	pattern_fill(p, SZ, 9);
	ASSERT_EQ(0, um_release(self->ctx, self->r));
	evict_expect(_metadata, self->ctx, self->r, 2, 0, 9);
}

TEST_F(rm, bad_input)
{
	um_region_t gone = region(self->ctx, UM_KIND_PARAM, 0, SZ, "gone");

	ASSERT_NE(0, gone);
	ASSERT_EQ(0, um_free(self->ctx, gone));
	EXPECT_EQ(-EINVAL, advise(self->ctx, 0, UM_ADVISE_READ_MOSTLY));
	EXPECT_EQ(-ENOENT, advise(self->ctx, gone, UM_ADVISE_READ_MOSTLY));
	EXPECT_EQ(-ENOENT,
		  advise(self->ctx, gone, UM_ADVISE_UNSET_READ_MOSTLY));
	EXPECT_EQ(-EINVAL, advise(self->ctx, self->r, 0));
	EXPECT_EQ(-EINVAL,
		  advise(self->ctx, self->r, UM_ADVISE_UNSET_READ_MOSTLY + 1));
	EXPECT_EQ(-EINVAL, um_advise(NULL, self->r, UM_ADVISE_READ_MOSTLY,
				     UM_TIER_HOST_ANY));
	/* twice in a row, or unset when never set: accepted, no change */
	EXPECT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_UNSET_READ_MOSTLY));
	EXPECT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY));
	EXPECT_EQ(0, advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY));
	EXPECT_EQ(self->pool_base, stats(self->ctx).pool_used);
}

/* Under a budget of one region, an acquire evicts the other: clean too. */
TEST(budget_eviction_of_read_mostly_victim_is_clean)
{
	struct um_context *ctx = ctx_sim(SZ, 64 * MiB);
	um_region_t w, x;
	struct um_stats a, b;

	ASSERT_NONNULL(ctx);
	w = region(ctx, UM_KIND_PARAM, 0, SZ, "w");
	x = region(ctx, UM_KIND_ACTIVATION, 0, SZ, "x");
	ASSERT_NE(0, w);
	ASSERT_NE(0, x);
	ASSERT_EQ(0, kept_copy(ctx, w));
	a = stats(ctx);

	ASSERT_EQ(0, put_pattern(ctx, x, SZ, 5));	/* w makes room */
	ASSERT_EQ(0, um_wait_all(ctx));
	b = stats(ctx);
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(ctx, w)));
	EXPECT_EQ(1, b.evict_clean_count);
	EXPECT_EQ(a.evict_bytes, b.evict_bytes);
	EXPECT_EQ(a.events[UM_EVENT_EVICTED] + 1, b.events[UM_EVENT_EVICTED]);

	/* and back: x (written, no advice) is copied out for w */
	ASSERT_EQ(0, get_pattern(ctx, w, SZ, 1));
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(b.evict_bytes + SZ, stats(ctx).evict_bytes);
	EXPECT_EQ(0, get_pattern(ctx, x, SZ, 5));
	EXPECT_EQ(0, um_free(ctx, w));
	EXPECT_EQ(0, um_free(ctx, x));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
