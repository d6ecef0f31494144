// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the umm shrinker under real reclaim. Clients declare
 * reclaimable bytes per node; a child bound to node 0 allocates until the
 * kernel reclaims on node 0 (kswapd wakes below the zones' low watermark).
 * The shrinker (which counts no objects: it has none the kernel could
 * free) must have a SHRINK event for node 0 queued to the client that
 * declared reclaimable bytes there, asking for no more than it declared,
 * and to nobody else; it must not wait for userspace (the allocation keeps
 * going while the event sits unread). Shrinker calls on nodes that are not
 * short -- drop_caches, proactive reclaim through memory.reclaim -- ask
 * nobody.
 *
 * vm.watermark_scale_factor is raised for the test so that kswapd starts
 * reclaiming while tens of MiB are still free: reclaim happens for real, far
 * from the OOM killer.
 *
 * Order matters: after 16 kswapd runs that reclaim nothing (anonymous
 * memory and no swap: this test, or an OOM) the kernel marks the node
 * unreclaimable and stops waking kswapd for it until direct reclaim makes
 * progress, so no shrinker is asked. The test must run before anything that
 * leaves node 0 in that state (the OOM test); it checks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

TEST_TIMEOUT_SET(reclaim_on_node0_asks_node0_holders, 300);

FIXTURE(reclaim) {
	char old_wsf[32];
	uint64_t old_wm[3];
	struct hog hog;
	int a, b, c;
};

FIXTURE_SETUP(reclaim)
{
	/* a: node 0, reclaimable; b: node 1 only; c: node 0, none of it
	 * reclaimable. The declared sizes exceed the node: only what is
	 * asked depends on them. */
	struct umm_tier_report ta = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 2 * GiB, .reclaimable_bytes = 2 * GiB,
	};
	struct umm_tier_report tb = ta, tc = ta;

	tb.tier_id = 1;
	tc.reclaimable_bytes = 0;
	self->hog.pid = 0;
	ASSERT_LT(0, sysctl_read("vm/watermark_scale_factor", self->old_wsf,
				 sizeof(self->old_wsf)));
	ASSERT_EQ(0, sysctl_write("vm/watermark_scale_factor", "1000"));
	/* keep node-0 PRESSURE out of the way: this test is about reclaim */
	node_wm_save(0, self->old_wm);
	ASSERT_EQ(0, attr_write("nodes/node0/critical_bp", "2"));
	ASSERT_EQ(0, attr_write("nodes/node0/medium_bp", "3"));
	ASSERT_EQ(0, attr_write("nodes/node0/low_bp", "4"));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(0, set_oom_score_adj(-1000));
	self->a = umm_client("a-node0", 0, 0, 0);
	self->b = umm_client("b-node1", 0, 0, 0);
	self->c = umm_client("c-none", 0, UMM_FEATURE_ALL_PRESSURE, 0);
	ASSERT_LE(0, self->a);
	ASSERT_LE(0, self->b);
	ASSERT_LE(0, self->c);
	ASSERT_EQ(0, umm_report(self->a, &ta, 1, 0));
	ASSERT_EQ(0, umm_report(self->b, &tb, 1, 0));
	ASSERT_EQ(0, umm_report(self->c, &tc, 1, 0));
	ASSERT_EQ(0, hog_start(&self->hog, 0, 1000));
}

FIXTURE_TEARDOWN(reclaim)
{
	if (self->hog.pid > 0)
		hog_stop(&self->hog);
	sysctl_write("vm/watermark_scale_factor", self->old_wsf);
	node_wm_restore(0, self->old_wm);
	close(self->a);
	close(self->b);
	close(self->c);
}

TEST_F(reclaim, reclaim_on_node0_asks_node0_holders)
{
	uint64_t calls0 = 0, calls1 = 0, kmin = node_min_wmark_bytes(0);
	long long ooms = vmstat("oom_kill");
	struct umm_event ev;
	int got = 0;

	ASSERT_EQ(0, node_unreclaimable(0))
		TH_LOG("kswapd gave up on node 0 before this test (an earlier "
		       "test exhausted it): run this one first");
	ASSERT_EQ(0, attr_read_u64("shrinker_calls", &calls0));
	while (!got) {
		uint64_t free = node_free_bytes(0);

		ASSERT_LT(kmin + 12 * MiB, free)
			TH_LOG("%llu MiB free on node 0, still no SHRINK "
			       "(node_unreclaimable %d, kswapd runs %lld)",
			       (unsigned long long)(free / MiB),
			       node_unreclaimable(0), vmstat("pageoutrun"));
		ASSERT_EQ(0, hog_step(&self->hog, 4 * MiB));
		/* kswapd runs on its own: give it a moment */
		for (int i = 0; i < 5 && !got; i++) {
			got = umm_wait_tier(self->a, UMM_EVENT_SHRINK,
					    UMM_TIER_HOST_NODE, 0, &ev, 20);
			ASSERT_LE(0, got);
		}
	}
	printf("# SHRINK for node 0 after %llu MiB allocated, %llu MiB free (kernel min %llu MiB): asks %llu MiB\n",
	       (unsigned long long)(self->hog.bytes / MiB),
	       (unsigned long long)(node_free_bytes(0) / MiB),
	       (unsigned long long)(kmin / MiB),
	       (unsigned long long)(ev.bytes_to_free / MiB));
	EXPECT_EQ(UMM_EVENT_F_ACK, ev.flags) TH_LOG("real, asks to free");
	EXPECT_LT(0, ev.bytes_to_free);
	EXPECT_GE(2 * GiB, ev.bytes_to_free);
	EXPECT_EQ(1, ev.dest_node);
	EXPECT_EQ(0, kill(self->hog.pid, 0)) TH_LOG("the hog is alive");
	EXPECT_EQ(ooms, vmstat("oom_kill"));
	ASSERT_EQ(0, attr_read_u64("shrinker_calls", &calls1));
	EXPECT_LT(calls0, calls1);
	/* the event was answered after the fact: reclaim did not wait */
	EXPECT_EQ(0, umm_ack(self->a, ev.seq, ev.bytes_to_free, NULL));

	hog_stop(&self->hog);
	/* nobody else was asked about node 0 */
	while (umm_next_event(self->b, &ev, 0) == 1)
		EXPECT_FALSE(ev.type == UMM_EVENT_SHRINK && ev.tier_id == 0);
	while (umm_next_event(self->c, &ev, 0) == 1)
		EXPECT_NE(UMM_EVENT_SHRINK, ev.type)
			TH_LOG("declared nothing reclaimable");
}

/*
 * drop_caches calls every shrinker, outside reclaim: nobody is short of
 * memory, and the clients' bytes are no cache. No SHRINK goes out.
 */
TEST(drop_caches_asks_nobody)
{
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 64 * MiB, .reclaimable_bytes = 64 * MiB,
	};
	uint64_t gap_ms;
	struct umm_event ev;
	int fd = umm_client("dropper", 0, 0, 0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(0, umm_report(fd, &t, 1, 0));
	/* past the rate limit of the test before, so a SHRINK could go out */
	ASSERT_EQ(0, attr_read_u64("event_min_interval_ms", &gap_ms));
	usleep((gap_ms + 20) * 1000);
	ASSERT_EQ(0, sysctl_write("vm/drop_caches", "3"));
	EXPECT_EQ(0, umm_wait_type(fd, UMM_EVENT_SHRINK, &ev, 300))
		TH_LOG("SHRINK for node %u asking %llu bytes", ev.tier_id,
		       (unsigned long long)ev.bytes_to_free);
	close(fd);
}

/*
 * Proactive reclaim (memory.reclaim of the root cgroup, as senpai-like
 * agents write it all day long) calls every shrinker on every node while
 * nobody is short: no SHRINK goes out.
 */
TEST(proactive_reclaim_asks_nobody)
{
	struct umm_tier_report t[2] = {
		{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		  .resident_bytes = 64 * MiB, .reclaimable_bytes = 64 * MiB },
		{ .tier_type = UMM_TIER_HOST_NODE, .tier_id = 1,
		  .resident_bytes = 64 * MiB, .reclaimable_bytes = 64 * MiB },
	};
	uint64_t gap_ms, calls0 = 0, calls1 = 0;
	struct umm_event ev;
	int fd = umm_client("proactive", 0, 0, 0);

	ASSERT_LE(0, fd);
	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK))
		ASSERT_EQ(0, mount("none", "/sys/fs/cgroup", "cgroup2", 0,
				   NULL));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(0, umm_report(fd, t, 2, 0));
	ASSERT_EQ(0, attr_read_u64("event_min_interval_ms", &gap_ms));
	usleep((gap_ms + 20) * 1000);
	ASSERT_EQ(0, attr_read_u64("shrinker_calls", &calls0));
	/* -EAGAIN when it found too little to take: shrinkers ran anyway */
	attr_write("/sys/fs/cgroup/memory.reclaim", "32M");
	ASSERT_EQ(0, attr_read_u64("shrinker_calls", &calls1));
	EXPECT_EQ(0, umm_wait_type(fd, UMM_EVENT_SHRINK, &ev, 300))
		TH_LOG("SHRINK for node %u asking %llu bytes", ev.tier_id,
		       (unsigned long long)ev.bytes_to_free);
	printf("# memory.reclaim: %llu shrinker calls\n",
	       (unsigned long long)(calls1 - calls0));
	close(fd);
}

TEST_HARNESS_MAIN
