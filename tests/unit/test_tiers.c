/* SPDX-License-Identifier: MIT */
/*
 * Description: the host and spill tiers as the core drives them. um_evict
 * to UM_TIER_DISK from the device or the host, back by acquire; um_shed
 * from the device straight to disk and from the host to disk; NO_SPILL
 * regions refused with -EPERM and left alone; a spill that fails (its
 * directory removed under it) leaves the bytes on the host; stats of the
 * spill tier; host node moves. Every move is checked byte for byte. The
 * names um_tier_name gives every tier type, and its refusals.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define SZ (3 * MiB + 333)

FIXTURE(tier) {
	struct um_context *ctx;
	char dir[300];
	char root[200];
};

FIXTURE_SETUP(tier)
{
	struct um_config cfg;
	const char *base = getenv("UM_TEST_DIR");

	snprintf(self->root, sizeof(self->root), "%s/um-tiers-XXXXXX",
		 base ? base : "/var/tmp");
	ASSERT_NONNULL(mkdtemp(self->root));
	snprintf(self->dir, sizeof(self->dir), "%s/spill", self->root);
	logcap_reset();
	cfg_sim(&cfg, 0, 64 * MiB);
	cfg.spill_dir = self->dir;
	setenv("LIBUM_PRESSURE", "0", 0);
	ASSERT_EQ(0, um_context_create(&cfg, &self->ctx));
}

FIXTURE_TEARDOWN(tier)
{
	char cmd[600];

	EXPECT_EQ(0, um_context_destroy(self->ctx));
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->root);
	EXPECT_EQ(0, system(cmd));
}

static int count_files(const char *dir)
{
	char cmd[400];
	FILE *f;
	int n = -1;

	snprintf(cmd, sizeof(cmd), "ls -1 '%s' 2>/dev/null | wc -l", dir);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &n) != 1)
		n = -1;
	pclose(f);
	return n;
}

TEST_F(tier, evict_to_disk_and_back)
{
	struct um_stats st = { .size = sizeof(st) };
	um_region_t r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "m");

	ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 11));
	/* device -> disk in one call (through the host) */
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_DISK));
	EXPECT_EQ(UM_TIER_DISK, residency(self->ctx, r));
	EXPECT_EQ(0, dev_current(self->ctx));
	EXPECT_EQ(1, count_files(self->dir));
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	EXPECT_EQ(SZ, st.spill.current);
	EXPECT_EQ(0, st.host_total.current);
	EXPECT_EQ(0, st.pool_requested);
	/* back to the device */
	ASSERT_EQ(0, get_pattern(self->ctx, r, SZ, 11));
	EXPECT_EQ(0, count_files(self->dir));
	/* host -> disk -> host */
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, r));
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_DISK));
	EXPECT_EQ(UM_TIER_DISK, residency(self->ctx, r));
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_DISK));	/* no-op */
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_HOST_ANY, NULL));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
	ASSERT_EQ(0, um_release(self->ctx, r));
	EXPECT_EQ(0, get_pattern(self->ctx, r, SZ, 11));
	/* a spilled region freed: its file goes */
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_DISK));
	EXPECT_EQ(1, count_files(self->dir));
	ASSERT_EQ(0, um_free(self->ctx, r));
	EXPECT_EQ(0, count_files(self->dir));
}

TEST_F(tier, no_spill_flag)
{
	struct um_region_desc d = {
		.size = sizeof(d), .kind = UM_KIND_OPTIMIZER_STATE,
		.flags = UM_REGION_NO_SPILL, .bytes = SZ, .name = "pinned",
	};
	um_region_t r, o;
	int64_t n;

	ASSERT_EQ(0, um_alloc(self->ctx, &d, &r));
	o = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "free");
	ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 1));
	ASSERT_EQ(0, put_pattern(self->ctx, o, SZ, 2));
	EXPECT_EQ(-EPERM, um_evict(self->ctx, r, UM_TIER_DISK));
	EXPECT_TRUE(on_gpu(self->ctx, r));
	/* shed from the device to disk: only the other one goes to disk */
	n = um_shed(self->ctx, UM_TIER_GPU(0), 100 * MiB, UM_TIER_DISK);
	EXPECT_EQ(2 * 4 * MiB, n);
	ASSERT_EQ(0, um_wait_all(self->ctx));
	EXPECT_EQ(UM_TIER_DISK, residency(self->ctx, o));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
	EXPECT_EQ(-EPERM, um_evict(self->ctx, r, UM_TIER_DISK));
	/* shed from the host: nothing may go */
	EXPECT_EQ(0, um_shed(self->ctx, UM_TIER_HOST_ANY, SZ, UM_TIER_NONE));
	EXPECT_EQ(0, get_pattern(self->ctx, r, SZ, 1));
	EXPECT_EQ(0, get_pattern(self->ctx, o, SZ, 2));
	ASSERT_EQ(0, um_free(self->ctx, r));
	ASSERT_EQ(0, um_free(self->ctx, o));
}

TEST_F(tier, shed_host_to_disk_in_policy_order)
{
	um_region_t p = region(self->ctx, UM_KIND_PARAM, 0, SZ, "p");
	um_region_t m = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "m");
	int64_t n;

	ASSERT_EQ(0, put_pattern(self->ctx, p, SZ, 3));
	ASSERT_EQ(0, put_pattern(self->ctx, m, SZ, 4));
	ASSERT_LT(0, um_shed(self->ctx, UM_TIER_GPU(0), 100 * MiB, UM_TIER_NONE));
	ASSERT_EQ(0, um_wait_all(self->ctx));
	n = um_shed(self->ctx, UM_TIER_HOST_ANY, 1, UM_TIER_NONE);
	EXPECT_EQ(SZ, n);
	EXPECT_EQ(UM_TIER_DISK, residency(self->ctx, m));	/* optimizer first */
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, p)));
	EXPECT_EQ(0, get_pattern(self->ctx, p, SZ, 3));
	EXPECT_EQ(0, get_pattern(self->ctx, m, SZ, 4));
	ASSERT_EQ(0, um_free(self->ctx, p));
	ASSERT_EQ(0, um_free(self->ctx, m));
}

TEST_F(tier, spill_failure_keeps_bytes_on_host)
{
	char cmd[600];
	um_region_t r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "m");

	ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 5));
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, r));
	/* the directory vanishes under the store */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
	ASSERT_EQ(0, system(cmd));
	EXPECT_GT(0, um_evict(self->ctx, r, UM_TIER_DISK));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "spill", "\"m\"", "stays on the host",
			       NULL));
	EXPECT_EQ(0, get_pattern(self->ctx, r, SZ, 5));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(tier, host_nodes)
{
	um_region_t r = region(self->ctx, UM_KIND_GRAD, 0, SZ, "g");

	ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 6));
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_NODE(0)));
	ASSERT_EQ(0, um_wait(self->ctx, r));
	EXPECT_EQ(UM_TIER_HOST_NODE(0), residency(self->ctx, r));
	/* any node: already there */
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
	EXPECT_EQ(UM_TIER_HOST_NODE(0), residency(self->ctx, r));
	EXPECT_EQ(-EINVAL, um_evict(self->ctx, r, UM_TIER_HOST_NODE(200)));
	EXPECT_EQ(0, get_pattern(self->ctx, r, SZ, 6));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

/* One name per tier; a type past the last, or an id its type lacks: none. */
TEST(tier_names)
{
	char buf[16];

	EXPECT_EQ(4, um_tier_name(UM_TIER_NONE, buf, sizeof(buf)));
	EXPECT_STREQ("none", buf);
	EXPECT_EQ(4, um_tier_name(UM_TIER_GPU(3), buf, sizeof(buf)));
	EXPECT_STREQ("gpu3", buf);
	EXPECT_EQ(5, um_tier_name(UM_TIER_HOST_NODE(1), buf, sizeof(buf)));
	EXPECT_STREQ("node1", buf);
	EXPECT_EQ(4, um_tier_name(UM_TIER_HOST_ANY, buf, sizeof(buf)));
	EXPECT_STREQ("host", buf);
	EXPECT_EQ(5, um_tier_name(UM_TIER_DISK, buf, sizeof(buf)));
	EXPECT_STREQ("spill", buf);
	/* snprintf's rule: the length of the whole name */
	EXPECT_EQ(5, um_tier_name(UM_TIER_HOST_NODE(2), NULL, 0));
	EXPECT_EQ(-EINVAL, um_tier_name(UM_TIER_GPU(0), NULL, 4));
	EXPECT_EQ(-EINVAL, um_tier_name(UM_TIER_MAKE(UM_TIER_NONE, 1), buf,
					 sizeof(buf)));
	EXPECT_EQ(-EINVAL, um_tier_name(UM_TIER_MAKE(UM_TIER_SPILL, 1), buf,
					 sizeof(buf)));
	EXPECT_EQ(-EINVAL, um_tier_name(UM_TIER_MAKE(UM_TIER_TYPE_COUNT, 0),
					 buf, sizeof(buf)));
}

TEST_HARNESS_MAIN
