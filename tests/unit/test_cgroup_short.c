/* SPDX-License-Identifier: MIT */
/*
 * Description: while the context's memory cgroup is near its limit (the
 * pressure loop's cgroup_hot), a call that finds the pinned pool short of
 * a block spills a released host copy and takes its block instead of
 * growing the pool (which would charge the cgroup for a new chunk); never
 * the copy of the region the call is for; it grows as before when there
 * is nothing to spill, and when the cgroup is not hot. Bytes are checked
 * throughout. The first fails on a libum that grows the pool then too.
 */
#include "harness.h"
#include "helpers.h"
#include "internal.h"

#define SZ (4 * MiB)

FIXTURE(cg) {
	struct um_context *ctx;
	um_region_t a, b, c;
	char root[200];
};

FIXTURE_SETUP(cg)
{
	struct um_config cfg;
	const char *base = getenv("UM_TEST_DIR");
	char dir[300];

	snprintf(self->root, sizeof(self->root), "%s/um-cgshort-XXXXXX",
		 base ? base : "/var/tmp");
	ASSERT_NONNULL(mkdtemp(self->root));
	snprintf(dir, sizeof(dir), "%s/spill", self->root);
	logcap_reset();
	/* the device holds one region; a pool chunk is one host copy */
	cfg_sim(&cfg, SZ, SZ);
	cfg.pool_chunk = SZ;
	cfg.spill_dir = dir;
	setenv("LIBUM_PRESSURE", "0", 0);
	ASSERT_EQ(0, um_context_create(&cfg, &self->ctx));
	self->a = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	self->b = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "b");
	self->c = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "c");
	ASSERT_NE(0, self->c);
	/* a, b on the host (b the newer), c on the device */
	ASSERT_EQ(0, put_pattern(self->ctx, self->a, SZ, 1));
	ASSERT_EQ(0, put_pattern(self->ctx, self->b, SZ, 2));
	ASSERT_EQ(0, put_pattern(self->ctx, self->c, SZ, 3));
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_TRUE(on_gpu(self->ctx, self->c));
}

FIXTURE_TEARDOWN(cg)
{
	char cmd[300];

	atomic_store(&self->ctx->cgroup_hot, false);
	EXPECT_EQ(0, um_free(self->ctx, self->a));
	EXPECT_EQ(0, um_free(self->ctx, self->b));
	EXPECT_EQ(0, um_free(self->ctx, self->c));
	EXPECT_EQ(0, um_context_destroy(self->ctx));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->root);
	EXPECT_EQ(0, system(cmd));
}

static uint64_t pool_bytes(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	return um_stats_get(ctx, &st) ? UINT64_MAX : st.pool_bytes;
}

/* No free block left in the pool: the next eviction to the host is short. */
static void pool_full(struct __test_metadata *_metadata, struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	um_pool_trim(ctx);
	ASSERT_EQ(0, um_stats_get(ctx, &st));
	ASSERT_EQ(st.pool_used, st.pool_bytes)
		TH_LOG("the pool keeps %llu free bytes after a trim",
		       (unsigned long long)(st.pool_bytes - st.pool_used));
}

/* a back on the device: c's eviction needs a block, b's is taken. */
TEST_F(cg, hot_cgroup_spills_instead_of_growing)
{
	uint64_t before;

	atomic_store(&self->ctx->cgroup_hot, true);
	pool_full(_metadata, self->ctx);
	before = pool_bytes(self->ctx);
	ASSERT_EQ(0, put_pattern(self->ctx, self->a, SZ, 4));
	EXPECT_EQ(UM_TIER_DISK, residency(self->ctx, self->b))
		TH_LOG("b was not spilled");
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, self->c)));
	EXPECT_EQ(before, pool_bytes(self->ctx)) TH_LOG("the pool grew");
	EXPECT_TRUE(logcap_has(UM_LOG_DEBUG, "instead of growing", NULL));
	EXPECT_EQ(0, get_pattern(self->ctx, self->b, SZ, 2));
	EXPECT_EQ(0, get_pattern(self->ctx, self->c, SZ, 3));
	EXPECT_EQ(0, get_pattern(self->ctx, self->a, SZ, 4));
}

/* Only a's own copy is on the host: it is not spilled; the pool grows. */
TEST_F(cg, never_the_copy_the_call_is_for)
{
	uint64_t before;

	ASSERT_EQ(0, um_evict(self->ctx, self->b, UM_TIER_DISK));
	atomic_store(&self->ctx->cgroup_hot, true);
	pool_full(_metadata, self->ctx);
	before = pool_bytes(self->ctx);
	ASSERT_EQ(0, put_pattern(self->ctx, self->a, SZ, 4));
	EXPECT_FALSE(logcap_has(UM_LOG_DEBUG, "instead of growing", NULL));
	EXPECT_LT(before, pool_bytes(self->ctx));
	EXPECT_EQ(0, get_pattern(self->ctx, self->c, SZ, 3));
	EXPECT_EQ(0, get_pattern(self->ctx, self->a, SZ, 4));
	EXPECT_EQ(0, get_pattern(self->ctx, self->b, SZ, 2));
}

/* Not hot: the pool grows and b stays on the host, as ever. */
TEST_F(cg, cool_cgroup_grows)
{
	uint64_t before;

	pool_full(_metadata, self->ctx);
	before = pool_bytes(self->ctx);
	ASSERT_EQ(0, put_pattern(self->ctx, self->a, SZ, 4));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, self->b)));
	EXPECT_LT(before, pool_bytes(self->ctx));
	EXPECT_FALSE(logcap_has(UM_LOG_DEBUG, "instead of growing", NULL));
	EXPECT_EQ(0, get_pattern(self->ctx, self->a, SZ, 4));
}

TEST_HARNESS_MAIN
