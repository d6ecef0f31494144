/* SPDX-License-Identifier: MIT */
/*
 * Description: the victim order of the policy. With the device full of
 * released regions, each new acquire must evict exactly the next region in
 * the documented order: kind (optimizer state, grad, activation, generic,
 * param), then lower priority, then least recently acquired (release
 * epochs), then larger. Acquired regions are never victims. The order is
 * read from EVICTED events, and every region's bytes are checked after.
 */
#include "harness.h"
#include "helpers.h"

#define SLOT (4 * MiB)
#define MAXR 16

struct evlog {
	int n;
	um_region_t r[64];
};

static void on_event(void *arg, const struct um_event *ev)
{
	struct evlog *e = arg;

	if (ev->type == UM_EVENT_EVICTED && e->n < 64)
		e->r[e->n++] = ev->region;
}

FIXTURE(pol) {
	struct um_context *ctx;
	struct evlog ev;
	um_region_t r[MAXR];
	uint64_t bytes[MAXR];
	int n;
};

FIXTURE_SETUP(pol)
{
	logcap_reset();
	memset(&self->ev, 0, sizeof(self->ev));
	self->n = 0;
	self->ctx = ctx_sim(5 * SLOT, 128 * MiB);
	ASSERT_NONNULL(self->ctx);
	ASSERT_EQ(0, um_set_event_callback(self->ctx, on_event, &self->ev));
}

FIXTURE_TEARDOWN(pol)
{
	for (int i = 0; i < self->n; i++) {
		EXPECT_EQ(0, get_pattern(self->ctx, self->r[i], self->bytes[i],
					 (uint64_t)i + 100)) TH_LOG("region %d", i);
		EXPECT_EQ(0, um_free(self->ctx, self->r[i]));
	}
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

/* New region, written with its pattern (acquired, then released). */
static um_region_t mk(FIXTURE_DATA(pol) *self, int kind, int prio,
		      uint64_t bytes)
{
	int i = self->n++;

	self->bytes[i] = bytes;
	self->r[i] = region(self->ctx, kind, prio, bytes, "p");
	ASSERT_NE(0, self->r[i]);
	ASSERT_EQ(0, put_pattern(self->ctx, self->r[i], bytes, (uint64_t)i + 100));
	return self->r[i];
}

/* Acquire (and keep) a fresh region, so the policy must make room. */
static um_region_t press(FIXTURE_DATA(pol) *self)
{
	int i = self->n++;
	void *p;

	self->bytes[i] = SLOT;
	self->r[i] = region(self->ctx, UM_KIND_PARAM, 100, SLOT, "press");
	ASSERT_NE(0, self->r[i]);
	ASSERT_EQ(0, um_acquire(self->ctx, self->r[i], UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, um_ptr(self->ctx, self->r[i], &p));
	pattern_fill(p, SLOT, (uint64_t)i + 100);
	return self->r[i];
}

#define MK(k, prio, n) mk(self, (k), (prio), (n))
#define PRESS() press(self)

/* Release the pressing regions (acquired from index from on). */
static void release_all(struct um_context *ctx, um_region_t *r, int n,
			int from)
{
	for (int i = from; i < n; i++)
		um_release(ctx, r[i]);
}

TEST_F(pol, kind_order)
{
	um_region_t param = MK(UM_KIND_PARAM, 0, SLOT);
	um_region_t gen = MK(UM_KIND_GENERIC, 0, SLOT);
	um_region_t act = MK(UM_KIND_ACTIVATION, 0, SLOT);
	um_region_t grad = MK(UM_KIND_GRAD, 0, SLOT);
	um_region_t opt = MK(UM_KIND_OPTIMIZER_STATE, 0, SLOT);
	um_region_t want[5] = { opt, grad, act, gen, param };
	int first = self->n;

	ASSERT_EQ(5 * SLOT, dev_current(self->ctx));
	for (int i = 0; i < 5; i++) {
		um_region_t x = PRESS();

		ASSERT_EQ(i + 1, self->ev.n);
		EXPECT_EQ(want[i], self->ev.r[i]) TH_LOG("eviction %d", i);
		EXPECT_FALSE(on_gpu(self->ctx, want[i]));
		EXPECT_TRUE(on_gpu(self->ctx, x));
		EXPECT_GE(5 * SLOT, dev_current(self->ctx));
	}
	/* the pressing regions were acquired: one more cannot fit */
	{
		um_region_t y = region(self->ctx, UM_KIND_PARAM, 0, SLOT, "y");

		EXPECT_EQ(-ENOMEM, um_acquire(self->ctx, y, UM_TIER_GPU(0), NULL));
		EXPECT_EQ(5, self->ev.n);
		EXPECT_EQ(0, um_free(self->ctx, y));
	}
	release_all(self->ctx, self->r, self->n, first);
}

TEST_F(pol, priority_then_recency_then_size)
{
	/* same kind: priority first */
	um_region_t hi;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 3 * SLOT));
	hi = MK(UM_KIND_OPTIMIZER_STATE, 5, SLOT);
	um_region_t lo = MK(UM_KIND_OPTIMIZER_STATE, -1, SLOT);
	um_region_t mid = MK(UM_KIND_OPTIMIZER_STATE, 2, SLOT);
	int first;

	(void)mid;
	first = self->n;
	PRESS();
	PRESS();
	PRESS();
	ASSERT_EQ(3, self->ev.n);
	EXPECT_EQ(lo, self->ev.r[0]);
	EXPECT_EQ(self->r[2], self->ev.r[1]);
	EXPECT_EQ(hi, self->ev.r[2]);
	release_all(self->ctx, self->r, self->n, first);
}

TEST_F(pol, least_recently_acquired)
{
	um_region_t a;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 3 * SLOT));
	a = MK(UM_KIND_GRAD, 0, SLOT);
	um_region_t b = MK(UM_KIND_GRAD, 0, SLOT);
	um_region_t c = MK(UM_KIND_GRAD, 0, SLOT);
	int first;

	/* touch a again: it becomes the most recent */
	ASSERT_EQ(0, get_pattern(self->ctx, a, SLOT, 100));
	first = self->n;
	PRESS();
	PRESS();
	PRESS();
	ASSERT_EQ(3, self->ev.n);
	EXPECT_EQ(b, self->ev.r[0]);
	EXPECT_EQ(c, self->ev.r[1]);
	EXPECT_EQ(a, self->ev.r[2]);
	release_all(self->ctx, self->r, self->n, first);
}

TEST_F(pol, larger_first_when_equally_recent)
{
	um_region_t small, big;
	void *p;
	int first;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 3 * SLOT));
	self->bytes[0] = SLOT;
	small = self->r[0] = region(self->ctx, UM_KIND_GRAD, 0, SLOT, "s");
	self->bytes[1] = 2 * SLOT;
	big = self->r[1] = region(self->ctx, UM_KIND_GRAD, 0, 2 * SLOT, "b");
	self->n = 2;
	/* acquired together, no release in between: equally recent */
	ASSERT_EQ(0, um_acquire(self->ctx, small, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_acquire(self->ctx, big, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, um_ptr(self->ctx, small, &p));
	pattern_fill(p, SLOT, 100);
	ASSERT_EQ(0, um_ptr(self->ctx, big, &p));
	pattern_fill(p, 2 * SLOT, 101);
	ASSERT_EQ(0, um_release(self->ctx, small));
	ASSERT_EQ(0, um_release(self->ctx, big));
	first = self->n;
	PRESS();
	PRESS();
	PRESS();	/* big (2 slots) goes first, then small */
	ASSERT_EQ(2, self->ev.n);
	EXPECT_EQ(big, self->ev.r[0]);
	EXPECT_EQ(small, self->ev.r[1]);
	release_all(self->ctx, self->r, self->n, first);
}

TEST_F(pol, acquired_never_victims)
{
	um_region_t opt, param, y;
	int first;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 3 * SLOT));
	opt = MK(UM_KIND_OPTIMIZER_STATE, -100, SLOT);
	param = MK(UM_KIND_PARAM, 100, SLOT);
	ASSERT_EQ(0, um_acquire(self->ctx, opt, UM_TIER_GPU(0), NULL));
	first = self->n;
	PRESS();
	PRESS();	/* only param can go */
	y = region(self->ctx, UM_KIND_PARAM, 0, SLOT, "y");
	EXPECT_EQ(-ENOMEM, um_acquire(self->ctx, y, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(0, um_free(self->ctx, y));
	ASSERT_EQ(1, self->ev.n);
	EXPECT_EQ(param, self->ev.r[0]);
	EXPECT_TRUE(on_gpu(self->ctx, opt));
	ASSERT_EQ(0, um_release(self->ctx, opt));
	release_all(self->ctx, self->r, self->n, first);
}

TEST_F(pol, shed_in_policy_order)
{
	um_region_t param = MK(UM_KIND_PARAM, 0, SLOT);
	um_region_t opt = MK(UM_KIND_OPTIMIZER_STATE, 0, SLOT);
	um_region_t grad = MK(UM_KIND_GRAD, 0, SLOT);
	int64_t n;

	n = um_shed(self->ctx, UM_TIER_GPU(0), SLOT + 1, UM_TIER_NONE);
	EXPECT_EQ(2 * SLOT, n);
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(2, self->ev.n);
	EXPECT_EQ(opt, self->ev.r[0]);
	EXPECT_EQ(grad, self->ev.r[1]);
	EXPECT_TRUE(on_gpu(self->ctx, param));
	EXPECT_EQ(SLOT, dev_current(self->ctx));
	/* more than there is: what there is */
	n = um_shed(self->ctx, UM_TIER_GPU(0), 100 * SLOT, UM_TIER_HOST_ANY);
	EXPECT_EQ(SLOT, n);
	n = um_shed(self->ctx, UM_TIER_GPU(0), SLOT, UM_TIER_NONE);
	EXPECT_EQ(0, n);
	ASSERT_EQ(0, um_wait_all(self->ctx));
	EXPECT_EQ(0, dev_current(self->ctx));
}

/*
 * With a home node (LIBUM_HOME_NODE, or a machine with several nodes),
 * host copies are victims of that node's set: restoring one onto a full
 * device still evicts the released region there.
 */
TEST(restore_onto_full_device_with_a_home_node)
{
	struct um_context *ctx;
	um_region_t a, b;

	setenv("LIBUM_HOME_NODE", "0", 1);
	ctx = ctx_sim(16 * MiB, 16 * MiB);
	unsetenv("LIBUM_HOME_NODE");
	ASSERT_NONNULL(ctx);
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 16 * MiB, "a");
	b = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 16 * MiB, "b");
	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(ctx, a));
	ASSERT_EQ(0, um_acquire(ctx, b, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(ctx, b));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(UM_TIER_HOST_NODE(0), residency(ctx, a));
	/* a comes back from node 0, b goes there */
	ASSERT_EQ(0, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(ctx, a));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_TRUE(on_gpu(ctx, a));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_free(ctx, b));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
