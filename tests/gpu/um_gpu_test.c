// SPDX-License-Identifier: MIT
/*
 * Description: libum on a real GPU through its public API. 200 random
 * evict/restore cycles of random sizes (1 MiB .. 256 MiB) over TIERED,
 * MANAGED and MANAGED discard-evict regions with a kernel writing and
 * checking a pattern each time; pointers stable; the budget never exceeded
 * by our books nor, for TIERED, by the driver's free-memory figures; device
 * memory given back after TIERED eviction; bad input (acquire of a freed
 * region, a budget below one region, foreign pointers) refused with the
 * documented errno and nothing lost. Skips (exit 4) without a GPU.
 *
 * Managed memory in use stays at a few GiB (never ask for more managed
 * memory than the card has free: it can hang the GPU, design.rst).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "um.h"
#include "harness.h"
#include "gpu_util.h"

/*
 * Sizes in "MiB" and "GiB" are divided by 16 on the CPU stand-in for CUDA
 * (mock/cudart_mock.c), which copies with memcpy: same logic, CI-sized.
 */
static uint64_t unit_scale(void)
{
	static uint64_t div;

	if (!div)
		div = gu_is_mock() ? 16 : 1;
	return div;
}

#define MiB ((1ull << 20) / unit_scale())
#define GiB ((1ull << 30) / unit_scale())

static void log_cb(void *arg, int level, const char *msg)
{
	(void)arg;
	printf("# [libum %d] %s\n", level, msg);
	fflush(stdout);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the seed printed by the test. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

FIXTURE(gpu) {
	struct um_context *ctx;
	void *s;
	uint64_t budget;
};

static int make_ctx(struct um_context **ctx, uint64_t budget)
{
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_CUDA;
	cfg.device_budget = budget;
	cfg.log = log_cb;
	cfg.log_level = UM_LOG_WARN;
	return um_context_create(&cfg, ctx);
}

FIXTURE_SETUP(gpu)
{
	const char *why = NULL;

	self->ctx = NULL;
	self->s = NULL;
	self->budget = GiB;
	if (gu_device_count(&why) <= 0)
		SKIP(return, "no GPU: %s", why ? why : "?");
	ASSERT_EQ(0, gu_warmup()) TH_LOG("%s", gu_last_error());
	ASSERT_EQ(0, gu_stream_create(&self->s));
	ASSERT_EQ(0, make_ctx(&self->ctx, self->budget));
	ASSERT_EQ(UM_BACKEND_CUDA, um_context_backend(self->ctx));
}

FIXTURE_TEARDOWN(gpu)
{
	/* Kernels of a failed test may still run on the region: let them end. */
	if (self->s)
		gu_stream_sync(self->s);
	if (self->ctx) {
		um_wait_all(self->ctx);
		um_context_destroy(self->ctx);
	}
	if (self->s)
		gu_stream_destroy(self->s);
}

static int alloc_region(struct um_context *ctx, uint64_t bytes,
			uint32_t backing, uint32_t flags, um_region_t *h)
{
	struct um_region_desc d = {
		.size = sizeof(d),
		.kind = UM_KIND_OPTIMIZER_STATE,
		.backing = backing,
		.flags = flags,
		.device = 0,
		.bytes = bytes,
		.name = "gpu-test",
	};

	return um_alloc(ctx, &d, h);
}

static uint64_t dev_current(struct um_context *ctx, uint64_t *peak)
{
	struct um_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (um_stats_get(ctx, &st))
		return UINT64_MAX;
	if (peak)
		*peak = st.device[0].peak;
	return st.device[0].current;
}

static um_tier_t residency(struct um_context *ctx, um_region_t h)
{
	struct um_region_info in;

	memset(&in, 0, sizeof(in));
	in.size = sizeof(in);
	if (um_region_info(ctx, h, &in))
		return (um_tier_t)~0u;
	return in.residency;
}

struct treg {
	um_region_t h;
	void *ptr;
	uint64_t bytes;
	uint32_t salt;
	uint32_t backing, flags;
	int has;
};

static const char *bk_name(const struct treg *r)
{
	if (r->backing == UM_BACKING_TIERED)
		return "tiered";
	return r->flags & UM_REGION_DISCARD_EVICT ? "managed-discard" :
						    "managed";
}

#define NREG 12

/* Acquire, check the last pattern, write a new one, release. */
static int use_region(struct __test_metadata *_metadata, struct um_context *ctx,
		      void *s, struct treg *r, uint32_t salt)
{
	void *p = NULL;
	int64_t bad;

	ASSERT_EQ(0, um_acquire(ctx, r->h, UM_TIER_GPU(0), s))
		TH_LOG("%s region of %llu bytes", bk_name(r),
		       (unsigned long long)r->bytes);
	ASSERT_EQ(0, um_ptr(ctx, r->h, &p));
	ASSERT_EQ(r->ptr, p) TH_LOG("pointer moved");
	if (r->has) {
		bad = gu_check(p, r->bytes, r->salt, s);
		ASSERT_EQ(0, bad) TH_LOG("%s region of %llu bytes: %lld bad words (%s)",
					 bk_name(r),
					 (unsigned long long)r->bytes,
					 (long long)bad, gu_last_error());
	}
	ASSERT_EQ(0, gu_fill(p, r->bytes, salt, s));
	r->salt = salt;
	r->has = 1;
	ASSERT_EQ(0, um_release(ctx, r->h));
	return 0;
}

TEST_F(gpu, cycles_200_random_sizes_both_backings)
{
	struct treg regs[NREG];
	uint64_t seed, peak = 0, cur;
	int i, c;

	seed = getenv("UM_GPU_SEED") ? strtoull(getenv("UM_GPU_SEED"), NULL, 0) :
				       0x5eedu;
	rng_state = seed ? seed : 1;
	TH_LOG("seed %#llx, budget %llu MiB", (unsigned long long)seed,
	       (unsigned long long)(self->budget / MiB));
	memset(regs, 0, sizeof(regs));
	for (i = 0; i < NREG; i++) {
		struct treg *r = &regs[i];

		r->bytes = MiB + rnd() % (255 * MiB);
		r->backing = i % 3 == 0 ? UM_BACKING_TIERED : UM_BACKING_MANAGED;
		r->flags = i % 3 == 2 ? UM_REGION_DISCARD_EVICT : 0;
		ASSERT_EQ(0, alloc_region(self->ctx, r->bytes, r->backing,
					  r->flags, &r->h));
		ASSERT_EQ(0, um_ptr(self->ctx, r->h, &r->ptr));
		ASSERT_NONNULL(r->ptr);
	}
	for (c = 0; c < 200; c++) {
		struct treg *r = &regs[rnd() % NREG];
		int64_t shed;

		if (use_region(_metadata, self->ctx, self->s, r,
			       (uint32_t)(c * 131 + 7)))
			return;
		switch (rnd() % 4) {
		case 0:
			ASSERT_EQ(0, um_evict(self->ctx, r->h, UM_TIER_HOST_ANY))
				TH_LOG("cycle %d", c);
			break;
		case 1:
			shed = um_shed(self->ctx, UM_TIER_GPU(0),
				       rnd() % (512 * MiB) + 1, UM_TIER_NONE);
			ASSERT_LE(0, shed) TH_LOG("cycle %d", c);
			break;
		case 2:
			ASSERT_EQ(0, um_wait(self->ctx, r->h));
			break;
		default:
			break;
		}
		cur = dev_current(self->ctx, &peak);
		ASSERT_LE(cur, self->budget) TH_LOG("cycle %d", c);
		ASSERT_LE(peak, self->budget) TH_LOG("cycle %d", c);
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	/* Every region, wherever it is now, still holds its last pattern. */
	for (i = 0; i < NREG; i++) {
		if (!regs[i].has)
			continue;
		if (use_region(_metadata, self->ctx, self->s, &regs[i],
			       regs[i].salt + 1))
			return;
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, gu_stream_sync(self->s));
	for (i = 0; i < NREG; i++)
		ASSERT_EQ(0, um_free(self->ctx, regs[i].h));
	ASSERT_EQ(0, dev_current(self->ctx, NULL));
}

/* TIERED only: the driver's own free-memory figure obeys the budget too. */
TEST_F(gpu, tiered_budget_seen_by_the_driver)
{
	const uint64_t budget = 512 * MiB, slack = 64 * MiB;
	struct treg regs[8];
	uint64_t f0, df0, f, df, t;
	int i, c;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, budget));
	rng_state = 0x7e57u;
	memset(regs, 0, sizeof(regs));
	for (i = 0; i < 8; i++) {
		regs[i].bytes = 128 * MiB + rnd() % MiB;
		regs[i].backing = UM_BACKING_TIERED;
		ASSERT_EQ(0, alloc_region(self->ctx, regs[i].bytes,
					  UM_BACKING_TIERED, 0, &regs[i].h));
		ASSERT_EQ(0, um_ptr(self->ctx, regs[i].h, &regs[i].ptr));
	}
	/* Baseline: no region mapped yet, kernels loaded, queues made. */
	ASSERT_EQ(0, gu_mem_info(&f0, &t));
	ASSERT_EQ(0, gu_drv_mem_info(&df0, &t));
	for (c = 0; c < 60; c++) {
		struct treg *r = &regs[rnd() % 8];

		if (use_region(_metadata, self->ctx, self->s, r,
			       (uint32_t)(c + 1000)))
			return;
		ASSERT_EQ(0, gu_mem_info(&f, &t));
		ASSERT_EQ(0, gu_drv_mem_info(&df, &t));
		ASSERT_LE(f0 > f ? f0 - f : 0, budget + slack)
			TH_LOG("cycle %d: runtime sees %llu MiB taken", c,
			       (unsigned long long)((f0 - f) / MiB));
		ASSERT_LE(df0 > df ? df0 - df : 0, budget + slack)
			TH_LOG("cycle %d: driver sees %llu MiB taken", c,
			       (unsigned long long)((df0 - df) / MiB));
		ASSERT_LE(dev_current(self->ctx, NULL), budget);
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, gu_stream_sync(self->s));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, um_free(self->ctx, regs[i].h));
}

TEST_F(gpu, tiered_eviction_gives_memory_back)
{
	const uint64_t bytes = GiB;
	struct treg r = { .bytes = bytes, .backing = UM_BACKING_TIERED };
	uint64_t f1, f2, f3, t;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 4 * GiB));
	ASSERT_EQ(0, alloc_region(self->ctx, bytes, UM_BACKING_TIERED, 0,
				  &r.h));
	ASSERT_EQ(0, um_ptr(self->ctx, r.h, &r.ptr));
	if (use_region(_metadata, self->ctx, self->s, &r, 42))
		return;
	ASSERT_EQ(0, gu_stream_sync(self->s));
	ASSERT_EQ(0, um_wait(self->ctx, r.h));
	ASSERT_EQ(UM_TIER_GPU(0), residency(self->ctx, r.h));
	ASSERT_EQ(0, gu_mem_info(&f1, &t));

	ASSERT_EQ(0, um_evict(self->ctx, r.h, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, r.h));
	ASSERT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r.h)));
	ASSERT_EQ(0, gu_mem_info(&f2, &t));
	ASSERT_LE(bytes - 16 * MiB, f2 > f1 ? f2 - f1 : 0)
		TH_LOG("free grew by %llu MiB only",
		       (unsigned long long)((f2 > f1 ? f2 - f1 : 0) / MiB));
	TH_LOG("eviction gave back %llu MiB",
	       (unsigned long long)((f2 - f1) / MiB));

	if (use_region(_metadata, self->ctx, self->s, &r, 43))
		return;
	ASSERT_EQ(0, gu_stream_sync(self->s));
	ASSERT_EQ(0, gu_mem_info(&f3, &t));
	ASSERT_LE(bytes - 16 * MiB, f2 > f3 ? f2 - f3 : 0);
	ASSERT_EQ(0, um_free(self->ctx, r.h));
}

/* MANAGED evicted by prefetch, and by copy + discard. */
static int managed_cycles(struct __test_metadata *_metadata,
			  struct um_context *ctx, void *s, uint32_t flags,
			  int host_readable)
{
	struct treg r = { .bytes = 512 * MiB + 4099,
			  .backing = UM_BACKING_MANAGED, .flags = flags };
	int c;

	ASSERT_EQ(0, alloc_region(ctx, r.bytes, UM_BACKING_MANAGED, flags,
				  &r.h));
	ASSERT_EQ(0, um_ptr(ctx, r.h, &r.ptr));
	for (c = 0; c < 10; c++) {
		if (use_region(_metadata, ctx, s, &r, (uint32_t)(500 + c)))
			return -1;
		ASSERT_EQ(0, um_evict(ctx, r.h, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, um_wait(ctx, r.h));
		ASSERT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(ctx, r.h)));
		/* Managed pages evicted by prefetch are the host's to read. */
		if (host_readable)
			ASSERT_EQ(0, gu_host_check(r.ptr, r.bytes, r.salt,
						   4096));
	}
	if (use_region(_metadata, ctx, s, &r, 600))
		return -1;
	ASSERT_EQ(0, gu_stream_sync(s));
	ASSERT_EQ(0, um_free(ctx, r.h));
	return 0;
}

TEST_F(gpu, managed_prefetch_evict_intact)
{
	managed_cycles(_metadata, self->ctx, self->s, 0, 1);
}

TEST_F(gpu, managed_discard_evict_intact)
{
	managed_cycles(_metadata, self->ctx, self->s, UM_REGION_DISCARD_EVICT,
		       0);
}

/* Evict one region while another comes back: both stay intact. */
TEST_F(gpu, tiered_overlap_evict_and_restore)
{
	struct treg a = { .bytes = 256 * MiB, .backing = UM_BACKING_TIERED };
	struct treg b = { .bytes = 256 * MiB + 1, .backing = UM_BACKING_TIERED };
	int k;

	ASSERT_EQ(0, alloc_region(self->ctx, a.bytes, a.backing, 0, &a.h));
	ASSERT_EQ(0, alloc_region(self->ctx, b.bytes, b.backing, 0, &b.h));
	ASSERT_EQ(0, um_ptr(self->ctx, a.h, &a.ptr));
	ASSERT_EQ(0, um_ptr(self->ctx, b.h, &b.ptr));
	if (use_region(_metadata, self->ctx, self->s, &b, 1) ||
	    use_region(_metadata, self->ctx, self->s, &a, 2))
		return;
	ASSERT_EQ(0, um_evict(self->ctx, b.h, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait_all(self->ctx));
	for (k = 0; k < 10; k++) {
		struct treg *out = k % 2 ? &b : &a, *in = k % 2 ? &a : &b;

		ASSERT_EQ(0, um_evict(self->ctx, out->h, UM_TIER_HOST_ANY));
		if (use_region(_metadata, self->ctx, self->s, in,
			       (uint32_t)(10 + k)))
			return;
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	if (use_region(_metadata, self->ctx, self->s, &a, 99) ||
	    use_region(_metadata, self->ctx, self->s, &b, 98))
		return;
	ASSERT_EQ(0, gu_stream_sync(self->s));
	ASSERT_EQ(0, um_free(self->ctx, a.h));
	ASSERT_EQ(0, um_free(self->ctx, b.h));
}

/* ---- bad input ---------------------------------------------------------- */

TEST_F(gpu, acquire_of_a_freed_region)
{
	um_region_t h = 0;
	void *p = NULL;

	ASSERT_EQ(0, alloc_region(self->ctx, 8 * MiB, UM_BACKING_TIERED, 0,
				  &h));
	ASSERT_EQ(0, um_free(self->ctx, h));
	ASSERT_EQ(-ENOENT, um_acquire(self->ctx, h, UM_TIER_GPU(0), self->s));
	ASSERT_EQ(-ENOENT, um_release(self->ctx, h));
	ASSERT_EQ(-ENOENT, um_evict(self->ctx, h, UM_TIER_HOST_ANY));
	ASSERT_EQ(-ENOENT, um_ptr(self->ctx, h, &p));
	ASSERT_EQ(-ENOENT, um_free(self->ctx, h));
	ASSERT_EQ(-EINVAL, um_acquire(self->ctx, 0, UM_TIER_GPU(0), self->s));
}

TEST_F(gpu, budget_below_one_region)
{
	struct treg r = { .bytes = 128 * MiB, .backing = UM_BACKING_TIERED };
	struct um_stats st;
	int ret;

	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 64 * MiB));
	ASSERT_EQ(0, alloc_region(self->ctx, r.bytes, r.backing, 0, &r.h));
	ASSERT_EQ(0, um_ptr(self->ctx, r.h, &r.ptr));
	ret = um_acquire(self->ctx, r.h, UM_TIER_GPU(0), self->s);
	ASSERT_EQ(-ENOMEM, ret);
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	ASSERT_LE(1, st.nomem);
	ASSERT_EQ(0, st.device[0].current);
	/* Nothing lost: with room again the region works. */
	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 256 * MiB));
	if (use_region(_metadata, self->ctx, self->s, &r, 5))
		return;
	if (use_region(_metadata, self->ctx, self->s, &r, 6))
		return;
	ASSERT_EQ(0, gu_stream_sync(self->s));
	ASSERT_EQ(0, um_free(self->ctx, r.h));
}

TEST_F(gpu, lookup_of_foreign_pointers)
{
	struct treg r = { .bytes = 16 * MiB, .backing = UM_BACKING_TIERED };
	um_region_t h = 0;
	void *dev = NULL;
	int local = 0;

	ASSERT_EQ(0, alloc_region(self->ctx, r.bytes, r.backing, 0, &r.h));
	ASSERT_EQ(0, um_ptr(self->ctx, r.h, &r.ptr));
	ASSERT_EQ(0, um_lookup(self->ctx, r.ptr, &h));
	ASSERT_EQ(r.h, h);
	ASSERT_EQ(0, um_lookup(self->ctx, (char *)r.ptr + r.bytes - 1, &h));
	ASSERT_EQ(r.h, h);
	ASSERT_EQ(-ENOENT, um_lookup(self->ctx, (char *)r.ptr + r.bytes, &h));
	ASSERT_EQ(0, gu_malloc(&dev, MiB));
	ASSERT_EQ(-ENOENT, um_lookup(self->ctx, dev, &h));
	ASSERT_EQ(-ENOENT, um_lookup(self->ctx, &local, &h));
	ASSERT_EQ(-EINVAL, um_lookup(self->ctx, NULL, &h));
	gu_free(dev);
	ASSERT_EQ(0, um_free(self->ctx, r.h));
	ASSERT_EQ(-ENOENT, um_lookup(self->ctx, r.ptr, &h));
}

TEST_TIMEOUT_SET(gpu.cycles_200_random_sizes_both_backings, 240);
TEST_TIMEOUT_SET(gpu.tiered_budget_seen_by_the_driver, 120);
TEST_TIMEOUT_SET(gpu.managed_prefetch_evict_intact, 120);
TEST_TIMEOUT_SET(gpu.managed_discard_evict_intact, 120);

TEST_HARNESS_MAIN
