/* SPDX-License-Identifier: MIT */
/*
 * Description: events and failed migrations. Callbacks run with no libum
 * lock held (they call back into libum, including calls that take the
 * lock and move bytes); MIGRATED carries tiers, bytes and a device-timed
 * duration; setting the callback to NULL stops delivery. A copy that fails
 * on the (sim) device gives an ERROR event and the error from um_wait or
 * um_acquire, and the region keeps its bytes where they were: an eviction
 * that failed leaves them on the device, a restore that failed leaves them
 * on the host; the next attempt succeeds.
 */
#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

#define SZ (4 * MiB)

struct rec {
	struct um_context *ctx;
	um_region_t other;
	int n;
	struct um_event ev[64];
	int reentered;
};

static void on_event(void *arg, const struct um_event *ev)
{
	struct rec *r = arg;
	struct um_stats st = { .size = sizeof(st) };
	char buf[256];

	if (r->n < 64)
		r->ev[r->n] = *ev;
	r->n++;
	/* all of these take the context lock: they would hang if held */
	if (um_stats_get(r->ctx, &st) == 0 &&
	    um_stats_json(r->ctx, buf, sizeof(buf)) > 0)
		r->reentered++;
	if (r->other && ev->type == UM_EVENT_MIGRATED) {
		um_region_t o = r->other;

		r->other = 0;	/* once */
		if (!um_acquire(r->ctx, o, UM_TIER_GPU(0), NULL))
			um_release(r->ctx, o);
	}
}

static int find(struct rec *r, int type)
{
	for (int i = 0; i < r->n && i < 64; i++)
		if ((int)r->ev[i].type == type)
			return i;
	return -1;
}

TEST(callbacks_without_lock)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	struct rec rec = { .ctx = ctx };
	um_region_t a, b;
	int i;

	ASSERT_NONNULL(ctx);
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	b = region(ctx, UM_KIND_PARAM, 0, SZ, "b");
	ASSERT_EQ(0, put_pattern(ctx, a, SZ, 1));
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &rec));
	rec.other = b;
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, a));
	ASSERT_LE(1, rec.n);
	EXPECT_EQ(rec.n, rec.reentered);
	i = find(&rec, UM_EVENT_MIGRATED);
	ASSERT_LE(0, i);
	EXPECT_EQ(sizeof(struct um_event), rec.ev[i].size);
	EXPECT_EQ(a, rec.ev[i].region);
	EXPECT_EQ(UM_TIER_GPU(0), rec.ev[i].from);
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(rec.ev[i].to));
	EXPECT_EQ(SZ, rec.ev[i].bytes);
	EXPECT_LT(0, rec.ev[i].ns);
	EXPECT_EQ(0, rec.ev[i].error);
	/* the callback acquired b from inside: it is on the device now */
	EXPECT_EQ(0, rec.other);
	EXPECT_TRUE(on_gpu(ctx, b));

	/* off: no more deliveries */
	ASSERT_EQ(0, um_set_event_callback(ctx, NULL, NULL));
	i = rec.n;
	ASSERT_EQ(0, get_pattern(ctx, a, SZ, 1));
	EXPECT_EQ(i, rec.n);
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_free(ctx, b));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/*
 * A PRESSURE event's level reaches the callback as queued (the pressure
 * loop posts it through um__event), and other events carry level 0.
 */
TEST(event_level_delivered)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	struct rec rec = { .ctx = ctx };
	um_region_t a;
	int i;

	ASSERT_NONNULL(ctx);
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	ASSERT_EQ(0, put_pattern(ctx, a, SZ, 3));
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &rec));
	for (unsigned int level = 1; level <= 3; level++) {
		ASSERT_EQ(0, um__enter(ctx));
		um__event(ctx, UM_EVENT_PRESSURE, level, NULL,
			  UM_TIER_HOST_NODE(0), UM_TIER_DISK, level * MiB, 0,
			  0);
		um__exit(ctx);
	}
	ASSERT_EQ(3, rec.n);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ((uint32_t)UM_EVENT_PRESSURE, rec.ev[i].type);
		EXPECT_EQ((uint32_t)(i + 1), rec.ev[i].level);
		EXPECT_EQ((uint64_t)(i + 1) * MiB, rec.ev[i].bytes);
	}
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, a));
	i = find(&rec, UM_EVENT_MIGRATED);
	ASSERT_LE(3, i);
	EXPECT_EQ(0u, rec.ev[i].level);
	ASSERT_EQ(0, get_pattern(ctx, a, SZ, 3));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(failed_eviction_keeps_bytes_on_device)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	struct rec rec = { .ctx = ctx };
	struct um_stats st = { .size = sizeof(st) };
	um_region_t a;
	int i;

	ASSERT_NONNULL(ctx);
	logcap_reset();
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &rec));
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	ASSERT_EQ(0, put_pattern(ctx, a, SZ, 7));
	ASSERT_EQ(0, um__sim_fail_next(&ctx->be, -EIO, 1));
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	EXPECT_EQ(-EIO, um_wait(ctx, a));
	EXPECT_EQ(0, um_wait(ctx, a));		/* reported once */
	EXPECT_TRUE(on_gpu(ctx, a));
	EXPECT_EQ(SZ, dev_current(ctx));
	i = find(&rec, UM_EVENT_ERROR);
	ASSERT_LE(0, i);
	EXPECT_EQ(-EIO, rec.ev[i].error);
	EXPECT_EQ(a, rec.ev[i].region);
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "eviction", "\"a\"", "failed", NULL));
	ASSERT_EQ(0, um_stats_get(ctx, &st));
	EXPECT_EQ(0, st.host_total.current);
	EXPECT_EQ(0, st.pool_requested);	/* the host copy was dropped */
	EXPECT_EQ(1, st.events[UM_EVENT_ERROR]);
	EXPECT_EQ(0, get_pattern(ctx, a, SZ, 7));
	/* and the next eviction works */
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, a));
	EXPECT_FALSE(on_gpu(ctx, a));
	EXPECT_EQ(0, get_pattern(ctx, a, SZ, 7));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(failed_restore_keeps_bytes_on_host)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	struct rec rec = { .ctx = ctx };
	struct um_region_info info = { .size = sizeof(info) };
	um_region_t a;

	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &rec));
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	ASSERT_EQ(0, put_pattern(ctx, a, SZ, 8));
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, a));
	ASSERT_EQ(0, um__sim_fail_next(&ctx->be, -EIO, 1));
	/* on sim the acquire waits for the copy, so it sees the failure */
	EXPECT_EQ(-EIO, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-EIO, um_wait_all(ctx));	/* the first error, once */
	EXPECT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(0, um_region_info(ctx, a, &info));
	EXPECT_EQ(0, info.acquired);
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(info.residency));
	EXPECT_EQ(0, dev_current(ctx));		/* device memory given back */
	EXPECT_LE(0, find(&rec, UM_EVENT_ERROR));
	EXPECT_EQ(0, get_pattern(ctx, a, SZ, 8));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(policy_events_and_nomem)
{
	struct um_context *ctx = ctx_sim(2 * SZ, 64 * MiB);
	struct rec rec = { .ctx = ctx };
	um_region_t a, b, c;
	int i;

	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &rec));
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	b = region(ctx, UM_KIND_PARAM, 0, SZ, "b");
	c = region(ctx, UM_KIND_PARAM, 0, 3 * SZ, "c");
	ASSERT_EQ(0, put_pattern(ctx, a, SZ, 1));
	ASSERT_EQ(0, um_acquire(ctx, b, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-ENOMEM, um_acquire(ctx, c, UM_TIER_GPU(0), NULL));
	i = find(&rec, UM_EVENT_NOMEM);
	ASSERT_LE(0, i);
	EXPECT_EQ(c, rec.ev[i].region);
	EXPECT_EQ(-ENOMEM, rec.ev[i].error);
	EXPECT_EQ(3 * SZ, rec.ev[i].bytes);
	ASSERT_EQ(0, um_release(ctx, b));
	ASSERT_EQ(0, um_budget_set(ctx, 0, SZ));
	ASSERT_EQ(0, um_wait_all(ctx));
	i = find(&rec, UM_EVENT_EVICTED);
	ASSERT_LE(0, i);
	EXPECT_EQ(a, rec.ev[i].region);
	EXPECT_EQ(0, get_pattern(ctx, a, SZ, 1));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_free(ctx, b));
	ASSERT_EQ(0, um_free(ctx, c));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
