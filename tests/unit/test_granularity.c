/* SPDX-License-Identifier: MIT */
/*
 * Description: the device unit. um_granularity() says 2 MiB on the sim
 * backend and refuses a NULL or foreign context, a NULL result and a device
 * the context does not have; a region takes its size rounded up to the
 * unit on the device and in the budget (a 1-byte region and a 1 MiB one
 * fill a 4 MiB budget) while its host copy takes its own bytes only; the
 * log line of an acquire that does not fit shows the size asked, the
 * size on the device and the unit, in units.
 */
#include <stdbool.h>

#include "harness.h"
#include "helpers.h"

#define UNIT (2 * MiB)

TEST(query_and_bad_input)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB), *dead;
	uint64_t junk[512], b = 7;

	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, um_granularity(ctx, 0, &b));
	EXPECT_EQ(UNIT, b);
	b = 7;
	EXPECT_EQ(-EINVAL, um_granularity(ctx, 1, &b));
	EXPECT_EQ(-EINVAL, um_granularity(ctx, 4096, &b));
	EXPECT_EQ(-EINVAL, um_granularity(ctx, (unsigned int)-1, &b));
	EXPECT_EQ(7, b);
	EXPECT_EQ(-EINVAL, um_granularity(ctx, 0, NULL));
	EXPECT_EQ(-EINVAL, um_granularity(NULL, 0, &b));
	memset(junk, 0x5a, sizeof(junk));
	EXPECT_EQ(-EBADF, um_granularity((struct um_context *)junk, 0, &b));
	dead = ctx_sim(0, 16 * MiB);
	ASSERT_NONNULL(dead);
	ASSERT_EQ(0, um_context_destroy(dead));
	EXPECT_EQ(-EBADF, um_granularity(dead, 0, &b));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* Bytes on device 0 now, or on the host when host is true. */
static uint64_t held(struct um_context *ctx, bool host)
{
	struct um_stats st = { .size = sizeof(st) };

	if (um_stats_get(ctx, &st))
		return UINT64_MAX;
	return host ? st.host_total.current : st.device[0].current;
}

TEST(regions_count_in_units)
{
	struct um_context *ctx = ctx_sim(4 * MiB, 16 * MiB);
	um_region_t tiny, a, b;

	ASSERT_NONNULL(ctx);
	tiny = region(ctx, UM_KIND_PARAM, 0, 1, "tiny");
	a = region(ctx, UM_KIND_PARAM, 0, MiB, "a");
	b = region(ctx, UM_KIND_PARAM, 0, UNIT + 1, "b");
	ASSERT_NE(0, tiny);
	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, um_acquire(ctx, tiny, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(UNIT, held(ctx, false));	/* 1 byte, one unit */
	ASSERT_EQ(0, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(2 * UNIT, held(ctx, false));	/* the budget is full */
	logcap_reset();
	/* 2 MiB + 1 takes two units: no room with both acquired */
	EXPECT_EQ(-ENOMEM, um_acquire(ctx, b, UM_TIER_GPU(0), NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "\"b\" (2 MiB, 4 MiB on the device, whose memory comes in 2 MiB units)",
			       "budget 4 MiB, 4 MiB held by 2", NULL))
		TH_LOG("log: %s", g_log.text);
	/* once released and evicted, the host copy is the region's bytes */
	ASSERT_EQ(0, um_release(ctx, a));
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(UNIT, held(ctx, false));
	EXPECT_EQ(MiB, held(ctx, true));
	EXPECT_EQ(0, um_release(ctx, tiny));
	EXPECT_EQ(0, um_free(ctx, tiny));
	EXPECT_EQ(0, um_free(ctx, a));
	EXPECT_EQ(0, um_free(ctx, b));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
