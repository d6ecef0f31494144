// SPDX-License-Identifier: GPL-2.0
/*
 * Description: GPU budgets. Clients report what they hold on a GPU id; when
 * the sum exceeds gpus/gpu<N>/budget_bytes the GPU goes CRITICAL and the
 * excess is asked of the lowest-priority clients first (their reclaimable
 * bytes, then the rest of what they hold), with GPU_BUDGET events; the
 * higher-priority client is asked only for what is left. Back within budget
 * the level drops (RELIEF for clients that asked for it). No budget, no
 * events. Each test uses its own GPU id, so the per-source rate limit of
 * one test does not delay the next (nor send its RELIEF to the next test's
 * clients).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)

static int set_budget(int gpu, uint64_t bytes)
{
	char p[64];

	snprintf(p, sizeof(p), "gpus/gpu%d/budget_bytes", gpu);
	return attr_write_u64(p, bytes);
}

static int gpu_level(int gpu, char *buf, size_t len)
{
	char p[64];

	snprintf(p, sizeof(p), "gpus/gpu%d/level", gpu);
	return attr_read(p, buf, len);
}

FIXTURE(pair) {
	int lo, hi, gpu;
};

FIXTURE_VARIANT(pair) {
	int gpu;
	uint64_t lo_res, lo_rec, hi_res, hi_rec, budget;
	uint64_t want_lo, want_hi;	/* asked of each */
};

/* excess 40: the low-priority client's reclaimable bytes cover it */
FIXTURE_VARIANT_ADD(pair, low_covers_excess) {
	.gpu = 2, .lo_res = 80 * MiB, .lo_rec = 80 * MiB,
	.hi_res = 60 * MiB, .hi_rec = 60 * MiB, .budget = 100 * MiB,
	.want_lo = 40 * MiB, .want_hi = 0,
};

/* excess 110: all 80 of the low one, then 30 of the high one */
FIXTURE_VARIANT_ADD(pair, low_exhausted_then_high) {
	.gpu = 4, .lo_res = 80 * MiB, .lo_rec = 80 * MiB,
	.hi_res = 60 * MiB, .hi_rec = 60 * MiB, .budget = 30 * MiB,
	.want_lo = 80 * MiB, .want_hi = 30 * MiB,
};

/* excess 60: the low one declared only 10 reclaimable, but holds 50: its
 * reclaimable first, then the high one's reclaimable (40), then 10 more of
 * what the low one holds */
FIXTURE_VARIANT_ADD(pair, reclaimable_before_resident) {
	.gpu = 6, .lo_res = 50 * MiB, .lo_rec = 10 * MiB,
	.hi_res = 60 * MiB, .hi_rec = 40 * MiB, .budget = 50 * MiB,
	.want_lo = 20 * MiB, .want_hi = 40 * MiB,
};

FIXTURE_SETUP(pair)
{
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_GPU, .tier_id = (uint32_t)variant->gpu,
	};

	/* one GPU id per variant and test (see the top of the file) */
	self->gpu = variant->gpu +
		!!strcmp(_metadata->name, "lower_priority_asked_first");
	t.tier_id = (uint32_t)self->gpu;
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(0, set_budget(self->gpu, 0));
	/* opened high first: the order of opens must not matter */
	self->hi = umm_client("hi", 100, UMM_FEATURE_RELIEF, 0);
	self->lo = umm_client("lo", -100, UMM_FEATURE_RELIEF, 0);
	ASSERT_LE(0, self->hi);
	ASSERT_LE(0, self->lo);
	t.resident_bytes = variant->hi_res;
	t.reclaimable_bytes = variant->hi_rec;
	ASSERT_EQ(0, umm_report(self->hi, &t, 1, 0));
	t.resident_bytes = variant->lo_res;
	t.reclaimable_bytes = variant->lo_rec;
	ASSERT_EQ(0, umm_report(self->lo, &t, 1, 0));
	/* (a RELIEF of an earlier test's GPU may be queued: other tiers) */
	EXPECT_EQ(0, umm_drain_tier(self->lo, UMM_TIER_GPU, self->gpu))
		TH_LOG("no budget, no event");
	EXPECT_EQ(0, umm_drain_tier(self->hi, UMM_TIER_GPU, self->gpu));
}

FIXTURE_TEARDOWN(pair)
{
	set_budget(self->gpu, 0);
	close(self->lo);
	close(self->hi);
}

static void check_budget_event(struct __test_metadata *_metadata,
			       const struct umm_event *ev, int gpu,
			       uint64_t want)
{
	EXPECT_EQ(UMM_EVENT_GPU_BUDGET, ev->type);
	EXPECT_EQ(UMM_TIER_GPU, ev->tier_type);
	EXPECT_EQ((uint32_t)gpu, ev->tier_id);
	EXPECT_EQ(UMM_LEVEL_CRITICAL, ev->level);
	EXPECT_EQ(UMM_EVENT_F_ACK, ev->flags);
	EXPECT_EQ(want, ev->bytes_to_free);
	EXPECT_EQ(0, ev->bytes_free) TH_LOG("over budget: none left");
	EXPECT_LE(0, ev->dest_node);
}

TEST_F(pair, lower_priority_asked_first)
{
	struct umm_event ev;
	char level[32];
	uint64_t used;
	char p[64];

	/* the budget write itself checks the GPU */
	ASSERT_EQ(0, set_budget(self->gpu, variant->budget));
	ASSERT_EQ(1, umm_wait_tier(self->lo, UMM_EVENT_GPU_BUDGET,
				   UMM_TIER_GPU, self->gpu, &ev, 10000));
	check_budget_event(_metadata, &ev, self->gpu, variant->want_lo);
	if (variant->want_hi) {
		ASSERT_EQ(1, umm_wait_tier(self->hi, UMM_EVENT_GPU_BUDGET,
					   UMM_TIER_GPU, self->gpu, &ev, 0));
		check_budget_event(_metadata, &ev, self->gpu,
				   variant->want_hi);
	} else {
		EXPECT_EQ(0, umm_drain_tier(self->hi, UMM_TIER_GPU,
					    self->gpu))
			TH_LOG("the low-priority client covered it");
	}
	ASSERT_LE(0, gpu_level(self->gpu, level, sizeof(level)));
	EXPECT_STREQ("critical", level);
	snprintf(p, sizeof(p), "gpus/gpu%d/used_bytes", self->gpu);
	ASSERT_EQ(0, attr_read_u64(p, &used));
	EXPECT_EQ(variant->lo_res + variant->hi_res, used);
}

TEST_F(pair, back_within_budget_relieves)
{
	struct umm_tier_report t = {
		.tier_type = UMM_TIER_GPU, .tier_id = (uint32_t)self->gpu,
	};
	struct umm_event ev;
	uint64_t lat = 0;
	char level[32];

	ASSERT_EQ(0, set_budget(self->gpu, variant->budget));
	ASSERT_EQ(1, umm_wait_tier(self->lo, UMM_EVENT_GPU_BUDGET,
				   UMM_TIER_GPU, self->gpu, &ev, 10000));
	/* the low one sheds everything it holds there and says so */
	ASSERT_EQ(0, umm_report(self->lo, &t, 1, 0));
	ASSERT_EQ(0, umm_ack(self->lo, ev.seq, variant->lo_res, &lat));
	EXPECT_LT(0, lat);
	if (variant->hi_res > variant->budget) {
		/* still over: the high one must shed too */
		t.resident_bytes = variant->budget / 2;
		ASSERT_EQ(0, umm_report(self->hi, &t, 1, 0));
	}
	/* RELIEF may wait for the rate limit: the next sample sends it */
	ASSERT_EQ(1, umm_wait_tier(self->lo, UMM_EVENT_RELIEF, UMM_TIER_GPU,
				   self->gpu, &ev, 10000));
	EXPECT_EQ(UMM_TIER_GPU, ev.tier_type);
	EXPECT_EQ((uint32_t)self->gpu, ev.tier_id);
	EXPECT_EQ(UMM_LEVEL_NORMAL, ev.level);
	EXPECT_EQ(0, ev.bytes_to_free);
	EXPECT_LT(0, ev.bytes_free);
	ASSERT_LE(0, gpu_level(self->gpu, level, sizeof(level)));
	EXPECT_STREQ("normal", level);
}

TEST(over_budget_by_report_alone)
{
	struct umm_tier_report t = { UMM_TIER_GPU, 9, 64 * MiB, 64 * MiB };
	struct umm_event ev;
	int fd, info;

	ASSERT_EQ(0, set_budget(9, 48 * MiB));
	fd = umm_client("grower", 0, 0, 0);
	info = umm_client("watcher", 0, UMM_FEATURE_ALL_PRESSURE, 0);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, info);
	/* the REPORT that crosses the budget raises the event at once */
	ASSERT_EQ(0, umm_report(fd, &t, 1, 0));
	ASSERT_EQ(1, umm_next_event(fd, &ev, 0));
	EXPECT_EQ(UMM_EVENT_GPU_BUDGET, ev.type);
	EXPECT_EQ(16 * MiB, ev.bytes_to_free);
	ASSERT_EQ(1, umm_next_event(info, &ev, 0));
	EXPECT_EQ(UMM_EVENT_GPU_BUDGET, ev.type);
	EXPECT_EQ(0, ev.bytes_to_free) TH_LOG("information only");
	EXPECT_EQ(0, ev.flags & UMM_EVENT_F_ACK);
	set_budget(9, 0);
	close(fd);
	close(info);
}

TEST(no_budget_no_event)
{
	struct umm_tier_report t = { UMM_TIER_GPU, 11, 1ull << 40, 0 };
	char level[32];
	int fd;

	ASSERT_EQ(0, set_budget(11, 0));
	fd = umm_client("huge", 0, UMM_FEATURE_ALL_PRESSURE, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_report(fd, &t, 1, 0));
	EXPECT_EQ(0, umm_drain(fd));
	ASSERT_LE(0, gpu_level(11, level, sizeof(level)));
	EXPECT_STREQ("normal", level);
	close(fd);
}

TEST(budget_freed_by_close)
{
	struct umm_tier_report t = { UMM_TIER_GPU, 13, 64 * MiB, 0 };
	char level[32];
	int fd, w;

	ASSERT_EQ(0, set_budget(13, 32 * MiB));
	w = umm_client("watcher", 0, UMM_FEATURE_RELIEF, 0);
	fd = umm_client("leaver", 0, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_LE(0, w);
	ASSERT_EQ(0, umm_report(fd, &t, 1, 0));
	ASSERT_LE(0, gpu_level(13, level, sizeof(level)));
	EXPECT_STREQ("critical", level);
	close(fd);	/* what it held is gone with it */
	ASSERT_EQ(1, umm_wait_tier(w, UMM_EVENT_RELIEF, UMM_TIER_GPU, 13,
				   &(struct umm_event){ 0 }, 10000));
	ASSERT_LE(0, gpu_level(13, level, sizeof(level)));
	EXPECT_STREQ("normal", level);
	set_budget(13, 0);
	close(w);
}

TEST(injected_gpu_level)
{
	struct umm_tier_report t = { UMM_TIER_GPU, 14, 64 * MiB, 64 * MiB };
	struct umm_event ev;
	int fd;

	fd = umm_client("inj", 0, 0, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umm_report(fd, &t, 1, 0));
	ASSERT_EQ(0, umm_inject("gpu 14 medium"));
	ASSERT_EQ(1, umm_next_event(fd, &ev, 0));
	EXPECT_EQ(UMM_EVENT_GPU_BUDGET, ev.type);
	EXPECT_EQ(14, ev.tier_id);
	EXPECT_EQ(UMM_LEVEL_MEDIUM, ev.level);
	EXPECT_EQ(UMM_EVENT_F_ACK | UMM_EVENT_F_INJECTED, ev.flags);
	EXPECT_EQ(16 * MiB, ev.bytes_to_free) TH_LOG("a quarter of usage");
	ASSERT_EQ(0, umm_inject("gpu 14 clear"));
	close(fd);
}

TEST_HARNESS_MAIN
