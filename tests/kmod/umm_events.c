// SPDX-License-Identifier: GPL-2.0
/*
 * Description: who gets which event, driven by the inject file. A node's
 * PRESSURE goes to the clients holding bytes on that node (lowest priority
 * first, asked for exactly what brings the node back above its low
 * watermark plus hysteresis), for information to clients that asked for all
 * pressure events, and to nobody else; RELIEF only to clients that asked for
 * it; SHRINK only to holders of reclaimable bytes on the node; OOM to every
 * holder of reclaimable host memory. Nothing is sent while disabled, and
 * elevated levels are announced again once enabled.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define MiB (1ull << 20)

struct cli {
	const char *name;
	int prio;
	uint64_t features;
	struct umm_tier_report t;	/* tier_type 0: reports nothing */
};

/* node 0 holder, node 1 holder, nothing, nothing but wants everything */
static const struct cli four[4] = {
	{ "n0", 0, 0, { UMM_TIER_HOST_NODE, 0, 64 * MiB, 32 * MiB } },
	{ "n1", 0, 0, { UMM_TIER_HOST_NODE, 1, 64 * MiB, 32 * MiB } },
	{ "none", 0, 0, { 0 } },
	{ "all", 0, UMM_FEATURE_ALL_PRESSURE | UMM_FEATURE_RELIEF, { 0 } },
};

FIXTURE(clients) {
	int fd[4];
};

FIXTURE_SETUP(clients)
{
	ASSERT_EQ(0, attr_write("enabled", "1"));
	for (int i = 0; i < 4; i++) {
		self->fd[i] = umm_client(four[i].name, four[i].prio,
					 four[i].features, 0);
		ASSERT_LE(0, self->fd[i]);
		if (four[i].t.tier_type)
			ASSERT_EQ(0, umm_report(self->fd[i], &four[i].t, 1, 0));
	}
}

FIXTURE_TEARDOWN(clients)
{
	umm_inject("node 0 clear");
	umm_inject("node 1 clear");
	attr_write("enabled", "1");
	for (int i = 0; i < 4; i++)
		close(self->fd[i]);
}

/* Records queued for @fd now (the inject path queues synchronously). */
static int pending(int fd)
{
	return umm_drain(fd);
}

/* What an injected level asks for: from its watermark up to low + hyst. */
static uint64_t injected_ask(int nid, const char *wm)
{
	uint64_t total = node_attr_u64(nid, "total_bytes");
	uint64_t low = node_attr_u64(nid, "low_bp");
	uint64_t w = node_attr_u64(nid, wm), hyst;

	attr_read_u64("hysteresis_bp", &hyst);
	return total * (low + hyst) / 10000 - total * w / 10000;
}

TEST_F(clients, pressure_reaches_holders_of_that_node_only)
{
	uint64_t total = node_attr_u64(0, "total_bytes");
	uint64_t crit = node_attr_u64(0, "critical_bp");
	struct umm_event ev;

	ASSERT_EQ(0, umm_inject("node 0 critical"));
	ASSERT_EQ(1, umm_next_event(self->fd[0], &ev, 0));
	EXPECT_EQ(UMM_EVENT_PRESSURE, ev.type);
	EXPECT_EQ(UMM_TIER_HOST_NODE, ev.tier_type);
	EXPECT_EQ(0, ev.tier_id);
	EXPECT_EQ(UMM_LEVEL_CRITICAL, ev.level);
	EXPECT_EQ(UMM_EVENT_F_ACK | UMM_EVENT_F_INJECTED, ev.flags);
	/* the ask exceeds what it declared reclaimable: all it holds */
	EXPECT_EQ(64 * MiB, ev.bytes_to_free);
	EXPECT_GE(total * crit / 10000, ev.bytes_free);
	EXPECT_EQ(1, ev.dest_node) TH_LOG("node 1 has headroom");
	EXPECT_EQ(UMM_ETA_UNKNOWN, ev.eta_ms);

	ASSERT_EQ(1, umm_next_event(self->fd[3], &ev, 0));
	EXPECT_EQ(UMM_EVENT_PRESSURE, ev.type);
	EXPECT_EQ(0, ev.tier_id);
	EXPECT_EQ(0, ev.bytes_to_free) TH_LOG("information only");
	EXPECT_EQ(UMM_EVENT_F_INJECTED, ev.flags);

	EXPECT_EQ(0, pending(self->fd[1])) TH_LOG("holds node 1 only");
	EXPECT_EQ(0, pending(self->fd[2])) TH_LOG("holds nothing");
	EXPECT_EQ(0, pending(self->fd[0]));
	EXPECT_EQ(0, pending(self->fd[3]));
}

TEST_F(clients, other_node_other_clients)
{
	struct umm_event ev;

	ASSERT_EQ(0, umm_inject("node 1 medium"));
	ASSERT_EQ(1, umm_next_event(self->fd[1], &ev, 0));
	EXPECT_EQ(UMM_EVENT_PRESSURE, ev.type);
	EXPECT_EQ(1, ev.tier_id);
	EXPECT_EQ(UMM_LEVEL_MEDIUM, ev.level);
	EXPECT_EQ(0, ev.dest_node);
	EXPECT_LT(0, ev.bytes_to_free);
	EXPECT_EQ(0, pending(self->fd[0]));
	EXPECT_EQ(0, pending(self->fd[2]));
	EXPECT_EQ(1, pending(self->fd[3]));
}

TEST_F(clients, relief_only_when_asked_for)
{
	struct umm_event ev;

	ASSERT_EQ(0, umm_inject("node 0 low"));
	ASSERT_EQ(1, pending(self->fd[0]));
	ASSERT_EQ(1, pending(self->fd[3]));
	ASSERT_EQ(0, umm_inject("node 0 clear"));
	EXPECT_EQ(0, pending(self->fd[0])) TH_LOG("no RELIEF feature");
	ASSERT_EQ(1, umm_next_event(self->fd[3], &ev, 0));
	EXPECT_EQ(UMM_EVENT_RELIEF, ev.type);
	EXPECT_EQ(0, ev.tier_id);
	EXPECT_EQ(UMM_LEVEL_NORMAL, ev.level);
	EXPECT_EQ(0, ev.bytes_to_free);
}

TEST_F(clients, same_level_injected_again_is_announced_again)
{
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, umm_inject("node 0 medium"));
	EXPECT_EQ(3, pending(self->fd[0]));
}

TEST_F(clients, shrink_goes_to_reclaimable_holders_of_that_node)
{
	struct umm_event ev;

	ASSERT_EQ(0, umm_inject("node 0 shrink 4194304"));
	ASSERT_EQ(1, umm_next_event(self->fd[0], &ev, 0));
	EXPECT_EQ(UMM_EVENT_SHRINK, ev.type);
	EXPECT_EQ(UMM_TIER_HOST_NODE, ev.tier_type);
	EXPECT_EQ(0, ev.tier_id);
	EXPECT_TRUE(ev.flags & UMM_EVENT_F_ACK);
	EXPECT_TRUE(ev.flags & UMM_EVENT_F_INJECTED);
	EXPECT_LE(4 * MiB, ev.bytes_to_free);
	EXPECT_GE(32 * MiB, ev.bytes_to_free) TH_LOG("<= its reclaimable");
	EXPECT_EQ(0, pending(self->fd[1]));
	EXPECT_EQ(0, pending(self->fd[2]));
	EXPECT_EQ(0, pending(self->fd[3])) TH_LOG("holds nothing there");
}

TEST_F(clients, oom_goes_to_every_reclaimable_host_holder)
{
	struct umm_event ev;

	ASSERT_EQ(0, umm_inject("oom"));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(1, umm_next_event(self->fd[i], &ev, 0));
		EXPECT_EQ(UMM_EVENT_OOM, ev.type);
		EXPECT_EQ(UMM_TIER_NONE, ev.tier_type);
		EXPECT_EQ(UMM_LEVEL_CRITICAL, ev.level);
		EXPECT_EQ(32 * MiB, ev.bytes_to_free);
		EXPECT_EQ(UMM_EVENT_F_ACK | UMM_EVENT_F_INJECTED, ev.flags);
		EXPECT_EQ(0, ev.eta_ms);
	}
	EXPECT_EQ(0, pending(self->fd[2]));
	EXPECT_EQ(0, pending(self->fd[3]));
}

TEST_F(clients, nothing_while_disabled_and_announced_after)
{
	struct umm_event ev;

	ASSERT_EQ(0, attr_write("enabled", "0"));
	ASSERT_EQ(1, umm_next_event(self->fd[0], &ev, 0));
	EXPECT_EQ(UMM_EVENT_DISABLED, ev.type);
	ASSERT_EQ(0, umm_inject("node 0 critical"));
	ASSERT_EQ(0, umm_inject("oom"));
	ASSERT_EQ(0, umm_inject("node 0 shrink 4096"));
	EXPECT_EQ(0, pending(self->fd[0]));
	EXPECT_EQ(1, pending(self->fd[3])) TH_LOG("DISABLED only");
	/* the level did change, and is announced once enabled again */
	ASSERT_EQ(0, attr_write("enabled", "1"));
	ASSERT_EQ(1, umm_next_event(self->fd[0], &ev, 0));
	EXPECT_EQ(UMM_EVENT_ENABLED, ev.type);
	ASSERT_EQ(1, umm_wait_type(self->fd[0], UMM_EVENT_PRESSURE, &ev,
				   10000));
	EXPECT_EQ(0, ev.tier_id);
	EXPECT_EQ(UMM_LEVEL_CRITICAL, ev.level);
}

TEST(lowest_priority_asked_first)
{
	uint64_t ask = injected_ask(0, "critical_bp");
	struct umm_tier_report big = { UMM_TIER_HOST_NODE, 0, 2 * ask,
				       2 * ask };
	struct umm_tier_report small = { UMM_TIER_HOST_NODE, 0, 64 * MiB,
					 64 * MiB };
	struct umm_event ev;
	int lo, hi, mid;

	ASSERT_LT(64 * MiB, ask) TH_LOG("defaults: low 20%%, critical 5%%");
	/* opened in an order that differs from the priority order */
	hi = umm_client("hi", 10, 0, 0);
	mid = umm_client("mid", 0, 0, 0);
	lo = umm_client("lo", -10, 0, 0);
	ASSERT_LE(0, hi);
	ASSERT_LE(0, mid);
	ASSERT_LE(0, lo);
	ASSERT_EQ(0, umm_report(hi, &big, 1, 0));
	ASSERT_EQ(0, umm_report(mid, &big, 1, 0));
	ASSERT_EQ(0, umm_report(lo, &small, 1, 0));

	ASSERT_EQ(0, umm_inject("node 0 critical"));
	umm_inject("node 0 clear");
	ASSERT_EQ(1, umm_next_event(lo, &ev, 0));
	EXPECT_EQ(64 * MiB, ev.bytes_to_free) TH_LOG("all it can give");
	ASSERT_EQ(1, umm_next_event(mid, &ev, 0));
	EXPECT_EQ(ask - 64 * MiB, ev.bytes_to_free) TH_LOG("the rest");
	EXPECT_EQ(0, umm_drain(hi)) TH_LOG("nothing left to ask of it");
	close(hi);
	close(mid);
	close(lo);
}

TEST(ask_takes_reclaimable_before_resident)
{
	uint64_t ask = injected_ask(1, "medium_bp");
	/* a: lower priority, holds a lot, none reclaimable; b: reclaimable */
	struct umm_tier_report ra = { UMM_TIER_HOST_NODE, 1, 2 * ask, 0 };
	struct umm_tier_report rb = { UMM_TIER_HOST_NODE, 1, ask / 2,
				      ask / 2 };
	struct umm_event ev;
	int a, b;

	a = umm_client("a", -1, 0, 0);
	b = umm_client("b", 1, 0, 0);
	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	ASSERT_EQ(0, umm_report(a, &ra, 1, 0));
	ASSERT_EQ(0, umm_report(b, &rb, 1, 0));
	ASSERT_EQ(0, umm_inject("node 1 medium"));
	umm_inject("node 1 clear");
	ASSERT_EQ(1, umm_next_event(b, &ev, 0));
	EXPECT_EQ(ask / 2, ev.bytes_to_free) TH_LOG("its reclaimable first");
	ASSERT_EQ(1, umm_next_event(a, &ev, 0));
	EXPECT_EQ(ask - ask / 2, ev.bytes_to_free) TH_LOG("then resident");
	close(a);
	close(b);
}

TEST_HARNESS_MAIN
