/* SPDX-License-Identifier: MIT */
/*
 * Description: the MANAGED code paths of the core (written for CUDA managed
 * memory) on a sim backend given fake managed ops: managed_alloc is plain
 * host memory, prefetch records where the pages were asked to go, and
 * discard really destroys the bytes (fills them with junk on the queue), so
 * an eviction by copy + discard and a restore by discard + prefetch + copy
 * must bring every byte back from the pinned host copy. Also: advice reaches
 * the backend, the budget books count managed regions from restore to
 * reaped eviction, and managed allocations beyond free memory are refused.
 */
#include <sys/mman.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"

#define SZ (5 * MiB + 3)

static struct um_backend_ops fake;
static int prefetches_to_dev, prefetches_to_host, discards, advices;

static int f_managed_alloc(struct um_backend *be, int dev, size_t len,
			   void **out)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -ENOMEM;
	*out = p;
	return 0;
}

static void f_managed_free(struct um_backend *be, void *p, size_t len)
{
	munmap(p, len);
}

static int f_advise(struct um_backend *be, void *p, size_t len, int advice,
		    um_tier_t where)
{
	__atomic_add_fetch(&advices, 1, __ATOMIC_RELAXED);
	return 0;
}

static int f_prefetch(struct um_backend *be, struct um_queue *q, void *p,
		      size_t len, um_tier_t where)
{
	if (UM_TIER_TYPE(where) == UM_TIER_DEVICE)
		__atomic_add_fetch(&prefetches_to_dev, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&prefetches_to_host, 1, __ATOMIC_RELAXED);
	return 0;
}

/* Discarded pages read back as junk: the core must never rely on them. */
static int f_discard(struct um_backend *be, struct um_queue *q, void *p,
		     size_t len)
{
	__atomic_add_fetch(&discards, 1, __ATOMIC_RELAXED);
	return um__backend_sim.fill(be, q, p, 0xa5, len);
}

static struct um_context *ctx_managed(uint64_t budget)
{
	struct um_context *ctx = ctx_sim(budget, 256 * MiB);

	if (!ctx)
		return NULL;
	fake = um__backend_sim;
	fake.managed_alloc = f_managed_alloc;
	fake.managed_free = f_managed_free;
	fake.advise = f_advise;
	fake.prefetch = f_prefetch;
	fake.discard = f_discard;
	ctx->be.ops = &fake;
	return ctx;
}

static um_region_t managed(struct um_context *ctx, uint32_t flags,
			   uint64_t bytes, const char *name)
{
	struct um_region_desc d = {
		.size = sizeof(d), .kind = UM_KIND_OPTIMIZER_STATE,
		.backing = UM_BACKING_MANAGED, .flags = flags, .bytes = bytes,
		.name = name,
	};
	um_region_t r = 0;

	if (um_alloc(ctx, &d, &r))
		return 0;
	return r;
}

FIXTURE(mg) {
	struct um_context *ctx;
};

FIXTURE_VARIANT(mg) {
	uint32_t flags;
};

FIXTURE_VARIANT_ADD(mg, prefetch) { .flags = 0 };
FIXTURE_VARIANT_ADD(mg, discard) { .flags = UM_REGION_DISCARD_EVICT };

FIXTURE_SETUP(mg)
{
	prefetches_to_dev = prefetches_to_host = discards = advices = 0;
	self->ctx = ctx_managed(0);
	ASSERT_NONNULL(self->ctx);
	ASSERT_EQ(0, um_set_event_callback(self->ctx, NULL, NULL));
}

FIXTURE_TEARDOWN(mg)
{
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

TEST_F(mg, evict_restore_cycles_keep_bytes)
{
	struct um_region_info i = { .size = sizeof(i) };
	um_region_t r = managed(self->ctx, variant->flags, SZ, "m");
	void *p0, *p1;

	ASSERT_NE(0, r);
	ASSERT_EQ(0, um_region_info(self->ctx, r, &i));
	EXPECT_EQ(UM_BACKING_MANAGED, i.backing);
	ASSERT_EQ(0, um_ptr(self->ctx, r, &p0));
	ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 31));
	EXPECT_LT(0, prefetches_to_dev);
	for (int n = 0; n < 4; n++) {
		ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, um_wait(self->ctx, r));
		EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
		EXPECT_EQ(0, dev_current(self->ctx));
		ASSERT_EQ(0, get_pattern(self->ctx, r, SZ, 31)) TH_LOG("cycle %d", n);
		ASSERT_EQ(0, um_ptr(self->ctx, r, &p1));
		EXPECT_EQ(p0, p1);
	}
	if (variant->flags & UM_REGION_DISCARD_EVICT) {
		/* per piece: one discard out, one in */
		EXPECT_LE(8, discards);
		EXPECT_EQ(0, prefetches_to_host);
	} else {
		EXPECT_EQ(0, discards);
		EXPECT_LE(4, prefetches_to_host);
	}
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(mg, policy_evicts_managed_within_budget)
{
	um_region_t r[4];

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 2 * 6 * MiB));
	for (int n = 0; n < 4; n++) {
		r[n] = managed(self->ctx, variant->flags, SZ, "m");
		ASSERT_NE(0, r[n]);
		ASSERT_EQ(0, put_pattern(self->ctx, r[n], SZ, 40 + (uint64_t)n));
		EXPECT_GE(2 * 6 * MiB, dev_current(self->ctx));
	}
	for (int n = 0; n < 4; n++) {
		EXPECT_EQ(0, get_pattern(self->ctx, r[n], SZ, 40 + (uint64_t)n));
		EXPECT_GE(2 * 6 * MiB, dev_current(self->ctx));
	}
	for (int n = 0; n < 4; n++)
		ASSERT_EQ(0, um_free(self->ctx, r[n]));
}

TEST_F(mg, reacquire_during_eviction)
{
	um_region_t r = managed(self->ctx, variant->flags, SZ, "m");

	ASSERT_NE(0, r);
	for (int n = 0; n < 10; n++) {
		ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 50 + (uint64_t)n));
		ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, get_pattern(self->ctx, r, SZ, 50 + (uint64_t)n));
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(mg, advice_and_limits)
{
	um_region_t r = managed(self->ctx, variant->flags, SZ, "m");
	um_region_t big;

	ASSERT_NE(0, r);
	ASSERT_EQ(0, um_advise(self->ctx, r, UM_ADVISE_PREFERRED_LOCATION,
			       UM_TIER_HOST_NODE(0)));
	ASSERT_EQ(0, um_advise(self->ctx, r, UM_ADVISE_ACCESSED_BY,
			       UM_TIER_GPU(0)));
	EXPECT_EQ(2, advices);
	/* more managed memory than the device has free: refused */
	logcap_reset();
	big = managed(self->ctx, variant->flags, 255 * MiB, "big");
	EXPECT_EQ(0, big);
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "MANAGED", "big", NULL));
	/* acquire on the host: bytes reachable from the CPU */
	ASSERT_EQ(0, put_pattern(self->ctx, r, SZ, 60));
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_HOST_ANY, NULL));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
	ASSERT_EQ(0, um_release(self->ctx, r));
	EXPECT_EQ(0, get_pattern(self->ctx, r, SZ, 60));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_HARNESS_MAIN
