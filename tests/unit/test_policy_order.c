/* SPDX-License-Identifier: MIT */
/*
 * Description: the victim order on thousands of regions, against a
 * brute-force model. 3000 regions of every kind, four priorities and
 * several sizes, a device budget of 48 granules; a fixed random sequence
 * of acquires (some nested, so that several regions share a recency
 * epoch) and releases, once over the whole set and once mostly on a hot
 * set smaller than the device (hits, which leave their victim nodes
 * linked and stale until an eviction's walk meets them, and acquired
 * regions parked in the order while a nested acquire evicts). Before each
 * acquire the test computes by a linear
 * scan the region the documented order names (kind, lower priority, least
 * recently acquired, larger, older) among the released regions on the
 * device, and the EVICTED events of that acquire must name exactly it.
 * At the end every region's bytes are checked.
 */
#include <stdbool.h>

#include "harness.h"
#include "helpers.h"

#define NREG 3000
#define SLOTS 48
#define STEPS 1500

static const uint64_t sizes[] = { 4 * KiB, 8 * KiB, 16 * KiB, 8 * KiB };
static const int prios[] = { -1, 0, 0, 3 };

/* The model: what the policy knows of each region. */
struct mreg {
	um_region_t h;
	int kind, prio;
	uint64_t bytes, lru;
	bool resident, acquired;
};

struct model {
	struct mreg r[NREG];
	uint64_t tick;
	int resident;
	int hits;			/* acquires of a resident region */
	/* EVICTED events of the current call */
	int nev;
	um_region_t ev[8];
	uint64_t seed;
};

static void on_event(void *arg, const struct um_event *ev)
{
	struct model *m = arg;

	if (ev->type == UM_EVENT_EVICTED && m->nev < 8)
		m->ev[m->nev++] = ev->region;
}

static unsigned int rnd(struct model *m)
{
	m->seed ^= m->seed << 13;
	m->seed ^= m->seed >> 7;
	m->seed ^= m->seed << 17;
	return (unsigned int)(m->seed >> 33);
}

static int kind_rank(int kind)
{
	static const int rank[UM_KIND_COUNT] = {
		[UM_KIND_OPTIMIZER_STATE] = 0, [UM_KIND_GRAD] = 1,
		[UM_KIND_ACTIVATION] = 2, [UM_KIND_GENERIC] = 3,
		[UM_KIND_PARAM] = 4,
	};
	return rank[kind];
}

/* a before b in the documented order; i < j is allocation order */
static bool before(const struct mreg *a, int i, const struct mreg *b, int j)
{
	if (kind_rank(a->kind) != kind_rank(b->kind))
		return kind_rank(a->kind) < kind_rank(b->kind);
	if (a->prio != b->prio)
		return a->prio < b->prio;
	if (a->lru != b->lru)
		return a->lru < b->lru;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes;
	return i < j;
}

/* The next victim by a linear scan, or -1. */
static int expected_victim(const struct model *m)
{
	int best = -1;

	for (int i = 0; i < NREG; i++) {
		const struct mreg *r = &m->r[i];

		if (!r->resident || r->acquired)
			continue;
		if (best < 0 || before(r, i, &m->r[best], best))
			best = i;
	}
	return best;
}

static int find(const struct model *m, um_region_t h)
{
	for (int i = 0; i < NREG; i++)
		if (m->r[i].h == h)
			return i;
	return -1;
}

FIXTURE(order) {
	struct um_context *ctx;
	struct model *m;
};

FIXTURE_SETUP(order)
{
	uint64_t gran = 0;

	logcap_reset();
	self->m = calloc(1, sizeof(*self->m));
	ASSERT_NONNULL(self->m);
	self->m->seed = 0x2545f4914f6cdd1dull;
	self->ctx = ctx_sim(0, SLOTS * 2 * MiB);
	ASSERT_NONNULL(self->ctx);
	ASSERT_EQ(0, um_granularity(self->ctx, 0, &gran));
	ASSERT_EQ(2 * MiB, gran);
	ASSERT_EQ(0, um_budget_set(self->ctx, 0, SLOTS * gran));
	ASSERT_EQ(0, um_set_event_callback(self->ctx, on_event, self->m));
	for (int i = 0; i < NREG; i++) {
		struct mreg *r = &self->m->r[i];

		r->kind = (int)(rnd(self->m) % UM_KIND_COUNT);
		r->prio = prios[rnd(self->m) % 4];
		r->bytes = sizes[rnd(self->m) % 4];
		r->h = region(self->ctx, r->kind, r->prio, r->bytes, "o");
		ASSERT_NE(0, r->h) TH_LOG("region %d", i);
	}
}

FIXTURE_TEARDOWN(order)
{
	for (int i = 0; i < NREG; i++) {
		EXPECT_EQ(0, get_pattern(self->ctx, self->m->r[i].h,
					 self->m->r[i].bytes, (uint64_t)i + 7))
			TH_LOG("region %d", i);
		EXPECT_EQ(0, um_free(self->ctx, self->m->r[i].h));
	}
	EXPECT_EQ(0, um_context_destroy(self->ctx));
	free(self->m);
}

/*
 * Acquire region i on the device: the model says which region must go
 * (none while the device has a free slot, or when i is already there).
 */
static int acquire_checked(struct um_context *ctx, struct model *m, int i)
{
	struct mreg *r = &m->r[i];
	int want = -1, ret;

	if (!r->resident && m->resident == SLOTS)
		want = expected_victim(m);
	m->hits += r->resident;
	m->nev = 0;
	ret = um_acquire(ctx, r->h, UM_TIER_GPU(0), NULL);
	if (!ret)
		ret = um_wait_all(ctx);
	if (ret)
		return ret;
	if (want < 0 ? m->nev != 0 : m->nev != 1 || m->ev[0] != m->r[want].h) {
		int got = m->nev ? find(m, m->ev[0]) : -1;

		fprintf(stderr, "# acquire of %d: expected victim %d, got %d "
			"(%d events)\n", i, want, got, m->nev);
		return -EPROTO;
	}
	if (want >= 0) {
		m->r[want].resident = false;
		m->resident--;
	}
	if (!r->resident)
		m->resident++;
	r->resident = true;
	r->acquired = true;
	r->lru = m->tick;
	return 0;
}

static int release_checked(struct um_context *ctx, struct model *m, int i)
{
	m->r[i].acquired = false;
	m->tick++;
	return um_release(ctx, m->r[i].h);
}

/* Every region written once, through the device: fills it, in order. */
static int write_all(struct um_context *ctx, struct model *m)
{
	for (int i = 0; i < NREG; i++) {
		void *p;
		int ret = acquire_checked(ctx, m, i);

		if (!ret)
			ret = um_ptr(ctx, m->r[i].h, &p);
		if (ret)
			return ret;
		pattern_fill(p, m->r[i].bytes, (uint64_t)i + 7);
		ret = release_checked(ctx, m, i);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * STEPS acquire+release pairs; hot_of_4 of each 4 acquires land on one of
 * the nhot regions of hot[], the rest anywhere. A fifth of them hold a
 * second region meanwhile (the first is parked: acquired, still linked).
 */
static void run_steps(struct __test_metadata *_metadata, struct um_context *ctx,
		      struct model *m, const int *hot, int nhot,
		      unsigned int hot_of_4)
{
	int nested = 0;

	ASSERT_EQ(0, write_all(ctx, m));
	for (int s = 0; s < STEPS; s++) {
		bool to_hot = rnd(m) % 4 < hot_of_4;
		int i = to_hot ? hot[rnd(m) % (unsigned int)nhot] :
				 (int)(rnd(m) % NREG);
		int j = (int)(rnd(m) % NREG);

		ASSERT_EQ(0, acquire_checked(ctx, m, i)) TH_LOG("step %d", s);
		if (j != i && rnd(m) % 5 == 0) {
			/* j acquired in i's epoch: equal recency */
			ASSERT_EQ(0, acquire_checked(ctx, m, j))
				TH_LOG("step %d, nested", s);
			ASSERT_EQ(0, release_checked(ctx, m, j));
			nested++;
		}
		ASSERT_EQ(0, release_checked(ctx, m, i));
	}
	/* the sequence exercised both ties and the device's turnover */
	EXPECT_LT(100, nested);
	EXPECT_EQ(SLOTS, m->resident);
}

TEST_F(order, victims_match_brute_force_on_thousands)
{
	static int hot[NREG / 10];

	/* half the acquires land on the first tenth */
	for (int i = 0; i < NREG / 10; i++)
		hot[i] = i;
	run_steps(_metadata, self->ctx, self->m, hot, NREG / 10, 2);
}

TEST_F(order, hits_keep_the_order_exact)
{
	int hot[40], nhot = 0;

	/*
	 * Three of four acquires on 40 parameters of the top priority,
	 * fewer than the device holds: what every other region goes
	 * before, so they stay resident and are hit, while the rest of
	 * the sequence still evicts through the stale and parked nodes
	 * the hits leave.
	 */
	for (int i = 0; i < NREG && nhot < 40; i++)
		if (self->m->r[i].kind == UM_KIND_PARAM &&
		    self->m->r[i].prio == 3)
			hot[nhot++] = i;
	ASSERT_EQ(40, nhot);
	run_steps(_metadata, self->ctx, self->m, hot, nhot, 3);
	EXPECT_LT(STEPS / 2, self->m->hits);
}

TEST_HARNESS_MAIN
