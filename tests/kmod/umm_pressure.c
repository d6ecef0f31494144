// SPDX-License-Identifier: GPL-2.0
/*
 * Description: real memory pressure on a NUMA node, no inject file. A child
 * bound to node 0 allocates and touches memory in steps; the client that
 * holds bytes on node 0 gets PRESSURE events as free memory crosses the
 * low, medium and critical watermarks, in that order, each with the node's
 * free bytes below the watermark, a destination node with headroom, and a
 * time-to-critical estimate while memory declines; the critical event comes
 * while the kernel still has room (no OOM kill happens, the child is alive
 * when it arrives). Node 1 holders hear nothing.
 *
 * A node full of clean page cache is not short of memory: its holder hears
 * nothing and the level stays NORMAL. A fill of page cache and then
 * anonymous memory is warned only once the anonymous part alone brings the
 * node to its low watermark.
 *
 * The watermarks are set to 30/20/12 % for the test: in a 512 MiB node the
 * kernel's own min watermark is about 5 % (22 MiB), the default critical
 * watermark, so with the defaults the OOM killer and CRITICAL would race.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)
#define INTERVAL_MS 20

TEST_TIMEOUT_SET(node0_fills_up, 300);
TEST_TIMEOUT_SET(node0_page_cache_reads_normal, 300);
TEST_TIMEOUT_SET(mixed_fill_warned_by_its_anon_part, 300);

FIXTURE(fill) {
	uint64_t old_interval, old_wm[3];
	struct hog hog;
	int fd, other;
};

FIXTURE_SETUP(fill)
{
	struct umm_tier_report t0 = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 32 * MiB, .reclaimable_bytes = 32 * MiB,
	};
	struct umm_tier_report t1 = t0;

	t1.tier_id = 1;
	self->hog.pid = 0;
	ASSERT_EQ(0, attr_read_u64("interval_ms", &self->old_interval));
	ASSERT_EQ(0, attr_write_u64("interval_ms", INTERVAL_MS));
	node_wm_save(0, self->old_wm);
	/* raise low first, lower critical last: always ordered */
	ASSERT_EQ(0, attr_write("nodes/node0/low_bp", "3000"));
	ASSERT_EQ(0, attr_write("nodes/node0/medium_bp", "2000"));
	ASSERT_EQ(0, attr_write("nodes/node0/critical_bp", "1200"));
	ASSERT_EQ(0, attr_write("enabled", "1"));
	/* if the OOM killer runs after all, it must not pick the test */
	ASSERT_EQ(0, set_oom_score_adj(-1000));
	self->fd = umm_client("trainer", 0, 0, 0);
	self->other = umm_client("node1", 0, 0, 0);
	ASSERT_LE(0, self->fd);
	ASSERT_LE(0, self->other);
	ASSERT_EQ(0, umm_report(self->fd, &t0, 1, 0));
	ASSERT_EQ(0, umm_report(self->other, &t1, 1, 0));
	ASSERT_EQ(0, hog_start(&self->hog, 0, 1000));
}

FIXTURE_TEARDOWN(fill)
{
	if (self->hog.pid > 0)
		hog_stop(&self->hog);
	attr_write_u64("interval_ms", self->old_interval);
	node_wm_restore(0, self->old_wm);
	close(self->fd);
	close(self->other);
}

TEST_F(fill, node0_fills_up)
{
	uint64_t total = node_attr_u64(0, "total_bytes");
	uint64_t wm[5] = { 0 }, target, hyst = 0;
	uint64_t kmin = node_min_wmark_bytes(0);
	uint32_t max_level = UMM_LEVEL_NORMAL;
	long long ooms = vmstat("oom_kill");
	int events = 0, with_eta = 0, alive = 0;
	struct umm_event ev;

	ASSERT_LT(0, total);
	ASSERT_LE(0, ooms);
	wm[UMM_LEVEL_LOW] = total * node_attr_u64(0, "low_bp") / 10000;
	wm[UMM_LEVEL_MEDIUM] = total * node_attr_u64(0, "medium_bp") / 10000;
	wm[UMM_LEVEL_CRITICAL] = total * node_attr_u64(0, "critical_bp") /
				 10000;
	ASSERT_EQ(0, attr_read_u64("hysteresis_bp", &hyst));
	target = total * (node_attr_u64(0, "low_bp") + hyst) / 10000;
	ASSERT_LT(kmin + 24 * MiB, wm[UMM_LEVEL_CRITICAL])
		TH_LOG("critical must sit above the kernel's min watermark");
	printf("# node0: %llu MiB, watermarks low %llu medium %llu critical %llu MiB free; kernel min %llu MiB\n",
	       (unsigned long long)(total / MiB),
	       (unsigned long long)(wm[2] / MiB),
	       (unsigned long long)(wm[3] / MiB),
	       (unsigned long long)(wm[4] / MiB),
	       (unsigned long long)(kmin / MiB));

	while (max_level < UMM_LEVEL_CRITICAL) {
		uint64_t free = node_free_bytes(0), next = wm[max_level + 1];
		uint64_t step = free > next + 64 * MiB ? 16 * MiB : 4 * MiB;

		/* safety stop well above what the kernel needs */
		ASSERT_LT(kmin + 12 * MiB, free)
			TH_LOG("%llu MiB free on node 0 and no CRITICAL event",
			       (unsigned long long)(free / MiB));
		ASSERT_EQ(0, hog_step(&self->hog, step));
		usleep(3 * INTERVAL_MS * 1000);
		while (umm_next_event(self->fd, &ev, 0) == 1) {
			if (ev.type != UMM_EVENT_PRESSURE)
				continue;
			events++;
			printf("# PRESSURE %s: %llu MiB allocated, event says %llu MiB free, asks %llu MiB, dest node %d, eta %d ms\n",
			       ev.level == UMM_LEVEL_LOW ? "low" :
			       ev.level == UMM_LEVEL_MEDIUM ? "medium" :
			       ev.level == UMM_LEVEL_CRITICAL ? "critical" :
			       "?", (unsigned long long)(self->hog.bytes / MiB),
			       (unsigned long long)(ev.bytes_free / MiB),
			       (unsigned long long)(ev.bytes_to_free / MiB),
			       ev.dest_node, ev.eta_ms == UMM_ETA_UNKNOWN ?
			       -1 : (int)ev.eta_ms);
			EXPECT_EQ(UMM_TIER_HOST_NODE, ev.tier_type);
			EXPECT_EQ(0, ev.tier_id);
			EXPECT_EQ(UMM_EVENT_F_ACK, ev.flags)
				TH_LOG("asks to free, not injected");
			/* back above low + hysteresis, at most what it has */
			EXPECT_EQ(target > ev.bytes_free ?
				  (target - ev.bytes_free < 32 * MiB ?
				   target - ev.bytes_free : 32 * MiB) : 0,
				  ev.bytes_to_free);
			EXPECT_EQ(1, ev.dest_node);
			EXPECT_GE(ev.level, max_level) TH_LOG("levels only rise");
			EXPECT_EQ(max_level + (ev.level > max_level), ev.level)
				TH_LOG("no level skipped (4 MiB steps)");
			if (ev.level >= UMM_LEVEL_LOW && ev.level <= 4)
				EXPECT_GE(wm[ev.level], ev.bytes_free);
			if (ev.eta_ms != UMM_ETA_UNKNOWN && ev.eta_ms > 0)
				with_eta++;
			if (ev.level > max_level)
				max_level = ev.level;
		}
	}
	alive = kill(self->hog.pid, 0) == 0;
	printf("# lead: CRITICAL with %llu MiB free on node 0, kernel min watermark %llu MiB, %llu MiB allocated\n",
	       (unsigned long long)(node_free_bytes(0) / MiB),
	       (unsigned long long)(node_min_wmark_bytes(0) / MiB),
	       (unsigned long long)(self->hog.bytes / MiB));
	EXPECT_TRUE(alive) TH_LOG("the hog died before the CRITICAL event");
	EXPECT_EQ(ooms, vmstat("oom_kill")) TH_LOG("an OOM kill happened");
	EXPECT_LE(3, events);
	EXPECT_LE(1, with_eta) TH_LOG("no time-to-critical while declining");
	EXPECT_EQ(0, umm_drain_tier(self->other, UMM_TIER_HOST_NODE, 0))
		TH_LOG("node 1's holder is not asked about node 0");
}

/*
 * Clean page cache bound to node 0, half again the node's size: MemFree
 * ends near the kernel's watermarks (below the low threshold), yet reclaim
 * would give all of it back at once. No event, level NORMAL. The holder
 * reports nothing reclaimable, so the shrinker has nothing to ask it.
 */
TEST(node0_page_cache_reads_normal)
{
	struct umm_tier_report t0 = {
		.tier_type = UMM_TIER_HOST_NODE, .tier_id = 0,
		.resident_bytes = 32 * MiB,
	};
	uint64_t total = node_attr_u64(0, "total_bytes"), low, free;
	char level[32] = "";
	int fd, events;

	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no disk for page cache (runs in the VM rig)");
	ASSERT_EQ(0, attr_write("enabled", "1"));
	fd = umm_client("cache", 0, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_report(fd, &t0, 1, 0));
	ASSERT_EQ(0, cache_fill("/mnt/node0-cache", total + total / 2, 0));
	usleep(300000);	/* samples of the full cache */
	free = node_free_bytes(0);
	low = total * node_attr_u64(0, "low_bp") / 10000;
	events = umm_drain_tier(fd, UMM_TIER_HOST_NODE, 0);
	ASSERT_LE(0, attr_read("nodes/node0/level", level, sizeof(level)));
	printf("# node0 after %llu MiB of page cache: %llu MiB free, %llu MiB available, level %s, %d events\n",
	       (unsigned long long)((total + total / 2) / MiB),
	       (unsigned long long)(free / MiB),
	       (unsigned long long)(node_attr_u64(0, "available_bytes") / MiB),
	       level, events);
	EXPECT_GT(low, free)
		TH_LOG("the cache left node 0 above its low watermark");
	EXPECT_EQ(0, events) TH_LOG("warned of memory the cache lends");
	EXPECT_EQ(0, strncmp(level, "normal", 6));
	close(fd);
	unlink("/mnt/node0-cache");
}

/*
 * Mixed: 256 MiB of clean page cache on node 0, then anonymous memory in
 * 8 MiB steps. The cache alone raises nothing; the first PRESSURE comes
 * once the anonymous part nears the node's free memory before the cache
 * less the low watermark, within 96 MiB: the kernel's reserve (its high
 * watermark, 36 MiB in the VM), the cache it keeps (up to its low
 * watermark, 30 MiB), pages that came and went meanwhile.
 */
TEST_F(fill, mixed_fill_warned_by_its_anon_part)
{
	uint64_t total = node_attr_u64(0, "total_bytes"), free0, low, at;
	int cache_events = 0, first = 0;
	struct umm_event ev;

	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no disk for page cache (runs in the VM rig)");
	free0 = node_free_bytes(0);
	low = total * node_attr_u64(0, "low_bp") / 10000;
	ASSERT_LT(low + 128 * MiB, free0);
	at = free0 - low - 96 * MiB;
	ASSERT_EQ(0, cache_fill("/mnt/node0-mixed", 256 * MiB, 0));
	usleep(3 * INTERVAL_MS * 1000);
	while (umm_next_event(self->fd, &ev, 0) == 1)
		cache_events += ev.type == UMM_EVENT_PRESSURE;
	while (!first && self->hog.bytes + 8 * MiB < free0) {
		ASSERT_EQ(0, hog_step(&self->hog, 8 * MiB));
		usleep(3 * INTERVAL_MS * 1000);
		while (umm_next_event(self->fd, &ev, 0) == 1)
			first |= ev.type == UMM_EVENT_PRESSURE;
	}
	printf("# node0: %llu MiB free before, low watermark %llu MiB; PRESSURE during the cache: %d; first PRESSURE at %llu MiB anonymous (expected from %llu)\n",
	       (unsigned long long)(free0 / MiB),
	       (unsigned long long)(low / MiB), cache_events,
	       (unsigned long long)(self->hog.bytes / MiB),
	       (unsigned long long)(at / MiB));
	EXPECT_EQ(0, cache_events) TH_LOG("the page cache was warned");
	EXPECT_TRUE(first) TH_LOG("the anonymous part was never warned");
	EXPECT_LE(at, self->hog.bytes) TH_LOG("warned before the anonymous part reached low");
	unlink("/mnt/node0-mixed");
}

TEST_HARNESS_MAIN
