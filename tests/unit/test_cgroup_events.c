/* SPDX-License-Identifier: MIT */
/*
 * Description: the pressure loop's answer to umm.ko's memory-cgroup events
 * (UMM_TIER_CGROUP, libum/src/pressure_shed.c), on a sim context. There is
 * no fake /dev/umm (its handshake, REPORT and ACK are ioctls of a character
 * device), so the events are handed to um__pressure_answer(), the function
 * that the loop calls for each event read and whose result it ACKs: released
 * host copies go to the spill, never to another node, the application hears
 * of it as a PRESSURE event of UM_TIER_HOST_ANY, the figures name the
 * cgroup, and an ask that cannot be met is said once, as an ERR line; and,
 * beside them, a node's SHRINK at level normal keeps copies off the node
 * as LOW would (the kernel's reclaim runs there, whatever was sampled); an
 * event that asks nothing still gives the pool's free chunks back. The
 * module's side (handshake, events, ACK) is tested in the VM (tests/e2e).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"
#include "pressure_internal.h"

#define NREG	4
#define RBYTES	(4 * MiB)
#define CG_ID	4242u

struct seen {
	int n;
	struct um_event ev;
};

static void on_event(void *arg, const struct um_event *ev)
{
	struct seen *s = arg;

	if (ev->type != UM_EVENT_PRESSURE)
		return;
	s->n++;
	s->ev = *ev;
}

static int lines(const char *needle)
{
	const char *p = g_log.text;
	int n = 0;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

/*
 * A sim context with the loop on (no module: /dev/null refuses the
 * handshake) and, with spill, a spill directory of its own.
 */
static struct um_context *cg_ctx(char *dir, size_t len, bool spill)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;

	setenv("LIBUM_PRESSURE", "1", 1);
	setenv("LIBUM_UMM_DEV", "/dev/null", 1);
	setenv("LIBUM_PSI_PATH", "/nonexistent/pressure", 1);
	dir[0] = '\0';
	cfg_sim(&cfg, 0, 64 * MiB);
	if (spill) {
		snprintf(dir, len, "/var/tmp/um-test-cg.XXXXXX");
		if (!mkdtemp(dir))
			return NULL;
		cfg.spill_dir = dir;
	} else {
		cfg.spill_dir = "off";
	}
	logcap_reset();
	if (um_context_create(&cfg, &ctx))
		return NULL;
	return ctx;
}

static void rm_dir(const char *dir)
{
	char cmd[512];

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return;
}

/* NREG released regions with host copies only, each its own pattern. */
static int host_copies(struct um_context *ctx, um_region_t *r)
{
	for (int i = 0; i < NREG; i++) {
		void *p;

		r[i] = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, RBYTES, "cg");
		if (!r[i] || um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL) ||
		    um_ptr(ctx, r[i], &p))
			return -1;
		pattern_fill(p, RBYTES, 100 + (uint64_t)i);
		if (um_release(ctx, r[i]) ||
		    um_evict(ctx, r[i], UM_TIER_HOST_NODE(0)) ||
		    um_wait_all(ctx))
			return -1;
		if (!um__tier_is_host(residency(ctx, r[i])))
			return -1;
	}
	/* the pool's free chunks go first: none, so the ask takes copies */
	return um_pool_trim(ctx) < 0 ? -1 : 0;
}

static int free_all(struct um_context *ctx, um_region_t *r)
{
	for (int i = 0; i < NREG; i++)
		if (um_free(ctx, r[i]))
			return -1;
	return 0;
}

static struct umm_event cg_event(uint64_t ask, uint64_t room)
{
	return (struct umm_event){
		.size = sizeof(struct umm_event),
		.type = UMM_EVENT_PRESSURE,
		.seq = 1,
		.tier_type = UMM_TIER_CGROUP,
		.tier_id = CG_ID,
		.level = UMM_LEVEL_MEDIUM,
		.flags = UMM_EVENT_F_ACK,
		.dest_node = UMM_NODE_NONE,
		.bytes_to_free = ask,
		.bytes_free = room,
		.eta_ms = 900,
	};
}

TEST(cgroup_pressure_spills_host_copies)
{
	struct um_pressure_stats st;
	struct umm_event ev = cg_event(2 * RBYTES, 9 * MiB);
	struct seen seen = { 0 };
	struct um_context *ctx;
	um_region_t r[NREG];
	uint64_t freed = 0;
	int home, on_disk = 0;
	char dir[64];

	ctx = cg_ctx(dir, sizeof(dir), true);
	ASSERT_NONNULL(ctx);
	ASSERT_NONNULL(ctx->pressure);
	ASSERT_NONNULL(ctx->spill);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &seen));
	home = ctx->home_node;

	ASSERT_TRUE(um__pressure_answer(ctx->pressure, &ev, &freed));
	ASSERT_GE(freed, 2 * RBYTES);
	TH_LOG("freed %llu MiB", (unsigned long long)(freed >> 20));
	for (int i = 0; i < NREG; i++) {
		um_tier_t t = residency(ctx, r[i]);

		/* to the spill or left where it was: never another node */
		if (t == UM_TIER_DISK)
			on_disk++;
		else
			ASSERT_EQ(UM_TIER_HOST_NODE(0), t);
	}
	ASSERT_GE(on_disk, 2);
	/* no steering, no hot node: bytes on another node are charged too */
	ASSERT_EQ(home, ctx->home_node);
	ASSERT_EQ(-1, ctx->pressure->home_orig);
	ASSERT_EQ(0u, ctx->pressure->hot);

	ASSERT_EQ(1, seen.n);
	ASSERT_EQ(UM_TIER_HOST_ANY, seen.ev.from);
	ASSERT_EQ(UM_TIER_DISK, seen.ev.to);
	ASSERT_EQ(2 * RBYTES, seen.ev.bytes);
	ASSERT_EQ(2u, seen.ev.level);

	ASSERT_EQ(0, um__pressure_stats(ctx, &st));
	ASSERT_EQ(1, st.cgroup_events);
	ASSERT_EQ(CG_ID, st.cgroup_id);
	ASSERT_EQ(9 * MiB, st.cgroup_room);
	ASSERT_EQ(freed, st.cgroup_freed);
	ASSERT_EQ(0u, st.cgroup_unmet);
	ASSERT_EQ(900u, st.first_eta_ms);
	ASSERT_NE(0, st.first_event_ns);
	ASSERT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);

	/* the spilled bytes come back checked */
	for (int i = 0; i < NREG; i++) {
		void *p;

		ASSERT_EQ(0, um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL));
		ASSERT_EQ(0, um_ptr(ctx, r[i], &p));
		ASSERT_EQ(-1, pattern_check(p, RBYTES, 100 + (uint64_t)i));
		ASSERT_EQ(0, um_release(ctx, r[i]));
	}
	ASSERT_EQ(0, free_all(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_dir(dir);
}

/* r back on the host from the device (a trainer's step). */
static int step_back(struct um_context *ctx, um_region_t r)
{
	if (um_acquire(ctx, r, UM_TIER_GPU(0), NULL) || um_release(ctx, r) ||
	    um_evict(ctx, r, UM_TIER_HOST_NODE(0)) || um_wait_all(ctx))
		return -1;
	return um__tier_is_host(residency(ctx, r)) ? 0 : -1;
}

/* r's residency becomes want within ms. */
static bool becomes(struct um_context *ctx, um_region_t r, um_tier_t want,
		    int ms)
{
	for (int i = 0; i < ms; i++) {
		if (residency(ctx, r) == want)
			return true;
		usleep(1000);
	}
	return residency(ctx, r) == want;
}

/*
 * Until the cgroup's RELIEF, host copies that come back between events
 * go back to the spill; after it, they stay.
 */
TEST(cgroup_hot_keeps_copies_spilled_until_relief)
{
	struct umm_event ev = cg_event(RBYTES, 9 * MiB);
	struct um_context *ctx;
	um_region_t r[NREG];
	uint64_t freed = 0;
	char dir[64];

	setenv("LIBUM_PRESSURE_REPORT_MS", "5", 1);
	ctx = cg_ctx(dir, sizeof(dir), true);
	unsetenv("LIBUM_PRESSURE_REPORT_MS");
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_TRUE(um__pressure_answer(ctx->pressure, &ev, &freed));
	/* the loop spills the rest, then what a step brings back */
	for (int i = 0; i < NREG; i++)
		ASSERT_TRUE(becomes(ctx, r[i], UM_TIER_DISK, 3000))
			TH_LOG("region %d still on %#x", i,
			       residency(ctx, r[i]));
	ASSERT_EQ(0, step_back(ctx, r[0]));
	ASSERT_TRUE(becomes(ctx, r[0], UM_TIER_DISK, 3000));

	ev.type = UMM_EVENT_RELIEF;
	ev.level = UMM_LEVEL_NORMAL;
	ev.bytes_to_free = 0;
	um__pressure_steer_back(ctx->pressure, &ev);
	usleep(20000);	/* a pass of the loop in flight ends */
	ASSERT_EQ(0, step_back(ctx, r[1]));
	usleep(100000);	/* 20 report intervals */
	ASSERT_EQ(UM_TIER_HOST_NODE(0), residency(ctx, r[1]));
	ASSERT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, free_all(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_dir(dir);
}

static int64_t pool_free_bytes(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	if (um_stats_get(ctx, &st))
		return -1;
	return (int64_t)(st.pool_bytes - st.pool_used);
}

/*
 * Nothing asked of us (the module saw nothing reclaimable: every copy in
 * the spill), but the pool holds chunks the spills left free, charged to
 * the cgroup: they go back all the same.
 */
TEST(cgroup_event_with_nothing_asked_trims_the_pool)
{
	struct umm_event ev = cg_event(0, 9 * MiB);
	struct um_context *ctx;
	um_region_t r[NREG];
	uint64_t freed = 0;
	char dir[64];

	ctx = cg_ctx(dir, sizeof(dir), true);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, host_copies(ctx, r));
	for (int i = 0; i < NREG; i++)
		ASSERT_EQ(0, um_evict(ctx, r[i], UM_TIER_DISK));
	ASSERT_LT(0, pool_free_bytes(ctx));
	EXPECT_FALSE(um__pressure_answer(ctx->pressure, &ev, &freed));
	EXPECT_EQ(0, pool_free_bytes(ctx))
		TH_LOG("%lld free bytes left in the pool",
		       (long long)pool_free_bytes(ctx));
	for (int i = 0; i < NREG; i++)
		EXPECT_EQ(0, get_pattern(ctx, r[i], RBYTES, 100 + (uint64_t)i));
	ASSERT_EQ(0, free_all(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_dir(dir);
}

/* No spill tier: nothing can go; said once, naming the room and the ask. */
TEST(cgroup_ask_unmet_said_once)
{
	struct um_pressure_stats st;
	struct umm_event ev = cg_event(3 * RBYTES, 5 * MiB);
	struct um_context *ctx;
	um_region_t r[NREG];
	uint64_t freed = 1;
	char dir[64];

	ctx = cg_ctx(dir, sizeof(dir), false);
	ASSERT_NONNULL(ctx);
	ASSERT_NULL(ctx->spill);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_TRUE(um__pressure_answer(ctx->pressure, &ev, &freed));
	ASSERT_LT(freed, 3 * RBYTES);
	ev.seq = 2;
	ASSERT_TRUE(um__pressure_answer(ctx->pressure, &ev, &freed));
	for (int i = 0; i < NREG; i++)
		ASSERT_EQ(UM_TIER_HOST_NODE(0), residency(ctx, r[i]));
	ASSERT_TRUE(logcap_has(UM_LOG_ERR, "memory cgroup 4242",
			       "5 MiB of room", "of the 12 MiB asked",
			       "16 MiB of host copies", "no spill tier", NULL))
		TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(1, lines("memory cgroup 4242"));
	ASSERT_EQ(0, um__pressure_stats(ctx, &st));
	ASSERT_EQ(2, st.cgroup_events);
	ASSERT_EQ(2u, st.cgroup_unmet);
	ASSERT_EQ(0, free_all(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* Only PRESSURE (and SHRINK) ask; the cgroup is the host tier, all nodes. */
TEST(cgroup_other_events_and_tier)
{
	struct umm_event ev = cg_event(RBYTES, 5 * MiB);
	struct um_context *ctx;
	uint64_t freed = 0;
	char dir[64];

	ctx = cg_ctx(dir, sizeof(dir), true);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(UM_TIER_HOST_ANY, um__pressure_event_tier(&ev));
	ev.type = UMM_EVENT_OOM;
	ASSERT_FALSE(um__pressure_answer(ctx->pressure, &ev, &freed));
	ev.type = UMM_EVENT_GPU_BUDGET;
	ASSERT_FALSE(um__pressure_answer(ctx->pressure, &ev, &freed));
	/* nothing asked of us: told, not answered */
	ev.type = UMM_EVENT_PRESSURE;
	ev.bytes_to_free = 0;
	ASSERT_FALSE(um__pressure_answer(ctx->pressure, &ev, &freed));
	ev.tier_type = UMM_TIER_GPU;
	ev.tier_id = 1;
	ASSERT_EQ(UM_TIER_GPU(1), um__pressure_event_tier(&ev));
	ev.tier_type = UMM_TIER_HOST_NODE;
	ASSERT_EQ(UM_TIER_HOST_NODE(1), um__pressure_event_tier(&ev));
	ASSERT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_dir(dir);
}

/*
 * The kernel's reclaim on node 0 (a SHRINK) while the module's last sample
 * still read normal: node 0 is kept off from then on, so that a step that
 * evicts does not grow the pool there again right after the trim; without
 * another node, the spill is where its copies go.
 */
TEST(node_shrink_at_level_normal_keeps_copies_off)
{
	struct umm_event ev = {
		.size = sizeof(struct umm_event),
		.type = UMM_EVENT_SHRINK,
		.seq = 1,
		.tier_type = UMM_TIER_HOST_NODE,
		.tier_id = 0,
		.level = UMM_LEVEL_NORMAL,
		.flags = UMM_EVENT_F_ACK,
		.dest_node = UMM_NODE_NONE,
		.bytes_to_free = RBYTES,
		.bytes_free = 200 * MiB,
		.eta_ms = 600,
	};
	struct um_context *ctx;
	um_region_t r[NREG];
	uint64_t freed = 0;
	char dir[64];

	ctx = cg_ctx(dir, sizeof(dir), true);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_EQ(0u, ctx->pressure->hot);
	ASSERT_TRUE(um__pressure_answer(ctx->pressure, &ev, &freed));
	ASSERT_GE(freed, RBYTES);
	EXPECT_EQ(1u, ctx->pressure->hot & 1u) TH_LOG("node 0 is not kept off");
	/* a level's low mark is not learnt from a SHRINK */
	EXPECT_EQ(0, ctx->pressure->low_mark[0]);
	ASSERT_EQ(0, free_all(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_dir(dir);
}

TEST_HARNESS_MAIN
