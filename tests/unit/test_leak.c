/* SPDX-License-Identifier: MIT */
/*
 * Description: the leak report of um_context_destroy. Regions still alive
 * are reported one WARN line each (name, size, kind, residency, acquired),
 * freed, and counted in the return value; pinned host blocks still held are
 * reported too. Under ASan and valgrind this also proves destroy frees
 * everything, whatever state regions were left in (acquired, on the host,
 * evictions in flight, never touched).
 */
#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

TEST(clean_destroy_reports_nothing)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB);
	um_region_t r;

	ASSERT_NONNULL(ctx);
	logcap_reset();
	r = region(ctx, UM_KIND_PARAM, 0, MiB, "tidy");
	ASSERT_EQ(0, put_pattern(ctx, r, MiB, 1));
	ASSERT_EQ(0, um_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	EXPECT_EQ(0, g_log.warn);
	EXPECT_FALSE(logcap_has(UM_LOG_WARN, "leak", NULL));
}

TEST(live_regions_reported_and_freed)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	um_region_t held, host, fresh, moving;
	void *blk;

	ASSERT_NONNULL(ctx);
	logcap_reset();
	held = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 3 * MiB, "adam.m");
	host = region(ctx, UM_KIND_GRAD, 0, 2 * MiB + 1, "grad.w1");
	fresh = region(ctx, UM_KIND_ACTIVATION, 0, 4096, "act");
	ASSERT_NE(0, fresh);
	moving = region(ctx, UM_KIND_PARAM, 0, 8 * MiB, "w.moving");
	ASSERT_NE(0, moving);
	ASSERT_EQ(0, um_acquire(ctx, held, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, put_pattern(ctx, host, 2 * MiB + 1, 3));
	ASSERT_EQ(0, um_evict(ctx, host, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, host));
	ASSERT_EQ(0, put_pattern(ctx, moving, 8 * MiB, 4));
	/* an eviction still in flight at destroy: destroy waits for it */
	ASSERT_EQ(0, um__sim_hold(&ctx->be, true));
	ASSERT_EQ(0, um_evict(ctx, moving, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um__sim_hold(&ctx->be, false));
	ASSERT_EQ(0, um_host_alloc(ctx, 12345, &blk));

	EXPECT_EQ(4, um_context_destroy(ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "leak", "adam.m", "(3 MiB,",
			       "optimizer_state", "gpu0", "acquired", NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "leak", "grad.w1", "(2 MiB,",
			       "grad", "on host", NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "leak", "act", "(4 KiB,",
			       "activation", "on none", NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "leak", "w.moving", "param", NULL));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "1 pinned host block", NULL));
	EXPECT_EQ(5, g_log.warn);
	/* the context is gone */
	EXPECT_EQ(-EBADF, um_context_destroy(ctx));
}

TEST(many_contexts)
{
	struct um_context *c[8];

	for (int i = 0; i < 8; i++) {
		c[i] = ctx_sim(0, 16 * MiB);
		ASSERT_NONNULL(c[i]);
		ASSERT_NE(0, region(c[i], UM_KIND_GENERIC, 0, 4096, "x"));
	}
	for (int i = 0; i < 8; i += 2)
		EXPECT_EQ(1, um_context_destroy(c[i]));
	for (int i = 1; i < 8; i += 2)
		EXPECT_EQ(UM_BACKEND_SIM, um_context_backend(c[i]));
	for (int i = 1; i < 8; i += 2)
		EXPECT_EQ(1, um_context_destroy(c[i]));
}

TEST_HARNESS_MAIN
