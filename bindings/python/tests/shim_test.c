/* SPDX-License-Identifier: MIT */
/*
 * Description: libumtorch's allocator functions on the sim backend, as
 * torch's CUDAPluggableAllocator would call them: round trips with usable
 * memory, bad sizes and devices, double, foreign, interior and wrong-size
 * frees (refused, recorded, nothing lost), attach/detach rules, a context
 * created from the environment, and eviction of released optimizer state
 * when an allocation needs its room; small requests packed into shared
 * segments (bad frees of blocks refused, cached segments given back when a
 * region needs the room) and 10,000 live 4 KiB allocations within 1.2
 * times their bytes plus a granule on the device. Built with ASan+UBSan by
 * the Makefile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "umtorch.h"

#define MiB (1ull << 20)

FIXTURE(shim) {
	struct um_context *ctx;
};

FIXTURE_SETUP(shim)
{
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_SIM;
	cfg.device_budget = 8 * MiB;
	cfg.sim_capacity = 64 * MiB;
	ASSERT_EQ(0, um_context_create(&cfg, &self->ctx));
	ASSERT_EQ(0, um_torch_attach(self->ctx));
}

FIXTURE_TEARDOWN(shim)
{
	EXPECT_EQ(0, um_torch_live());
	EXPECT_EQ(0, um_torch_detach());
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

static uint32_t regions_of(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	return um_stats_get(ctx, &st) == 0 ? st.regions : UINT32_MAX;
}

TEST_F(shim, round_trip_memory_usable)
{
	unsigned char *p = um_torch_malloc(3 * MiB + 5, 0, NULL);

	ASSERT_NONNULL(p);
	EXPECT_EQ(0, um_torch_last_error());
	EXPECT_EQ(1, um_torch_live());
	EXPECT_EQ(1, regions_of(self->ctx));
	memset(p, 0xa5, 3 * MiB + 5);
	EXPECT_EQ(0xa5, p[3 * MiB + 4]);
	um_torch_free(p, 3 * MiB + 5, 0, NULL);
	EXPECT_EQ(0, um_torch_last_error());
	EXPECT_EQ(0, regions_of(self->ctx));
	EXPECT_EQ(0, um_torch_error_count());
}

TEST_F(shim, bad_sizes_and_devices)
{
	EXPECT_NULL(um_torch_malloc(0, 0, NULL));
	EXPECT_EQ(0, um_torch_last_error());
	EXPECT_NULL(um_torch_malloc(-1, 0, NULL));
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	EXPECT_NULL(um_torch_malloc(4096, -1, NULL));
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	EXPECT_NULL(um_torch_malloc((ssize_t)1 << 50, 0, NULL));
	EXPECT_EQ(-E2BIG, um_torch_last_error());
	/* larger than the budget: libum refuses the acquire */
	EXPECT_NULL(um_torch_malloc(16 * MiB, 0, NULL));
	EXPECT_EQ(-ENOMEM, um_torch_last_error());
	EXPECT_EQ(4, um_torch_error_count());
	EXPECT_EQ(0, regions_of(self->ctx));
	um_torch_free(NULL, 0, 0, NULL);
	EXPECT_EQ(0, um_torch_last_error());
}

TEST_F(shim, bad_frees_refused_and_kept)
{
	unsigned char *p = um_torch_malloc(MiB, 0, NULL);
	int local;

	ASSERT_NONNULL(p);
	p[0] = 42;
	um_torch_free(p + 64, MiB, 0, NULL);	/* interior */
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	um_torch_free(p, MiB + 1, 0, NULL);	/* wrong size */
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	um_torch_free(p, -5, 0, NULL);		/* negative size */
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	um_torch_free(&local, 4, 0, NULL);	/* never allocated */
	EXPECT_EQ(-ENOENT, um_torch_last_error());
	EXPECT_EQ(1, um_torch_live());
	EXPECT_EQ(42, p[0]);
	um_torch_free(p, MiB, 0, NULL);
	EXPECT_EQ(0, um_torch_last_error());
	um_torch_free(p, MiB, 0, NULL);		/* double free */
	EXPECT_EQ(-ENOENT, um_torch_last_error());
	EXPECT_EQ(5, um_torch_error_count());
}

/* A region the trainer owns is not the allocator's to free. */
TEST_F(shim, foreign_region_not_freed)
{
	struct um_region_desc d = {
		.size = sizeof(d), .kind = UM_KIND_OPTIMIZER_STATE,
		.bytes = MiB, .name = "opt",
	};
	um_region_t r;
	void *p;

	ASSERT_EQ(0, um_alloc(self->ctx, &d, &r));
	ASSERT_EQ(0, um_ptr(self->ctx, r, &p));
	um_torch_free(p, MiB, 0, NULL);
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	EXPECT_EQ(0, um_free(self->ctx, r));
}

TEST_F(shim, attach_detach_busy_while_live)
{
	struct um_context *other;
	void *p = um_torch_malloc(MiB, 0, NULL);

	ASSERT_NONNULL(p);
	ASSERT_EQ(0, um_context_create(NULL, &other));
	EXPECT_EQ(-EBUSY, um_torch_attach(other));
	EXPECT_EQ(-EBUSY, um_torch_detach());
	EXPECT_EQ(0, um_torch_attach(self->ctx));	/* same: no-op */
	EXPECT_EQ(-EINVAL, um_torch_attach(NULL));
	um_torch_free(p, MiB, 0, NULL);
	EXPECT_EQ(0, um_context_destroy(other));
}

/* Released optimizer state makes room for an allocation. */
TEST_F(shim, allocation_evicts_released_state)
{
	struct um_region_desc d = {
		.size = sizeof(d), .kind = UM_KIND_OPTIMIZER_STATE,
		.bytes = 6 * MiB, .name = "exp_avg",
	};
	struct um_stats st = { .size = sizeof(st) };
	unsigned char *s, *p;
	um_region_t r;

	ASSERT_EQ(0, um_alloc(self->ctx, &d, &r));
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_ptr(self->ctx, r, (void **)&s));
	memset(s, 7, 6 * MiB);
	ASSERT_EQ(0, um_release(self->ctx, r));
	p = um_torch_malloc(4 * MiB, 0, NULL);
	ASSERT_NONNULL(p) TH_LOG("error %d", um_torch_last_error());
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	EXPECT_EQ(1, st.evict_count);
	um_torch_free(p, 4 * MiB, 0, NULL);
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(7, s[6 * MiB - 1]);
	EXPECT_EQ(0, um_release(self->ctx, r));
	EXPECT_EQ(0, um_free(self->ctx, r));
}

/* Small requests share segments; bad frees of blocks are refused too. */
TEST_F(shim, small_blocks_share_a_segment)
{
	struct um_stats st = { .size = sizeof(st) };
	unsigned char *p, *q;

	p = um_torch_malloc(4096, 0, NULL);
	q = um_torch_malloc(1000, 0, NULL);
	ASSERT_NONNULL(p);
	ASSERT_NONNULL(q);
	EXPECT_EQ(2, um_torch_live());
	EXPECT_EQ(1, regions_of(self->ctx));	/* one segment */
	memset(p, 3, 4096);
	memset(q, 4, 1000);
	um_torch_free(p + 512, 4096, 0, NULL);	/* interior */
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	um_torch_free(p, 4095, 0, NULL);	/* wrong size */
	EXPECT_EQ(-EINVAL, um_torch_last_error());
	EXPECT_EQ(3, p[4095]);
	um_torch_free(p, 4096, 0, NULL);
	EXPECT_EQ(0, um_torch_last_error());
	um_torch_free(p, 4096, 0, NULL);	/* double free */
	EXPECT_EQ(-ENOENT, um_torch_last_error());
	um_torch_free(q, 1000, 0, NULL);
	EXPECT_EQ(0, um_torch_last_error());
	EXPECT_EQ(3, um_torch_error_count());
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	EXPECT_EQ(1, st.suballoc_segments);	/* cached until detach */
	EXPECT_EQ(0, st.suballoc_blocks);
	EXPECT_EQ(1, st.suballoc_grows);
}

/* A large allocation that does not fit takes the cached segments back. */
TEST_F(shim, cached_segments_given_back_for_a_region)
{
	struct um_stats st = { .size = sizeof(st) };
	void *p[3], *big;

	for (int i = 0; i < 3; i++) {
		p[i] = um_torch_malloc(MiB - 1, 0, NULL);
		ASSERT_NONNULL(p[i]);
	}
	for (int i = 0; i < 3; i++)
		um_torch_free(p[i], MiB - 1, 0, NULL);
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	EXPECT_EQ(2, st.suballoc_segments);
	big = um_torch_malloc(6 * MiB, 0, NULL);	/* 8 MiB budget */
	ASSERT_NONNULL(big) TH_LOG("error %d", um_torch_last_error());
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	EXPECT_EQ(0, st.suballoc_segments);
	um_torch_free(big, 6 * MiB, 0, NULL);
	EXPECT_EQ(0, um_torch_error_count());
}

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/*
 * 10,000 live allocations of 4 KiB take at most 1.2 times their bytes plus
 * a granule on the device (a region each took 2 MiB each: 20.97 GB).
 */
TEST(ten_thousand_small)
{
	enum { N = 10000, PAIRS = 100000 };
	struct um_stats st = { .size = sizeof(st) };
	struct um_context *ctx;
	struct um_config cfg;
	static void *p[N];
	double t0, pair_us;
	uint64_t dev;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_SIM;
	cfg.device_budget = 128 * MiB;
	cfg.sim_capacity = 128 * MiB;
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	ASSERT_EQ(0, um_torch_attach(ctx));
	for (int i = 0; i < N; i++) {
		p[i] = um_torch_malloc(4096, 0, NULL);
		ASSERT_NONNULL(p[i]) TH_LOG("error %d", um_torch_last_error());
	}
	t0 = now_us();
	for (int i = 0; i < PAIRS; i++) {
		void *x = um_torch_malloc(4096, 0, NULL);

		um_torch_free(x, 4096, 0, NULL);
	}
	pair_us = (now_us() - t0) / PAIRS;
	ASSERT_EQ(0, um_stats_get(ctx, &st));
	dev = st.device[0].current;
	printf("# %d live x 4 KiB: %llu bytes on the device (%.3fx their "
	       "%llu), %llu segments; malloc+free pair %.3f us\n", N,
	       (unsigned long long)dev, (double)dev / (N * 4096.0),
	       (unsigned long long)N * 4096,
	       (unsigned long long)st.suballoc_segments, pair_us);
	EXPECT_LE(dev, (uint64_t)(1.2 * N * 4096) + 2 * MiB);
	EXPECT_EQ(N, st.suballoc_blocks);
	EXPECT_EQ(st.suballoc_segments, st.regions);
	EXPECT_EQ(0, um_torch_error_count());
	for (int i = 0; i < N; i++)
		um_torch_free(p[i], 4096, 0, NULL);
	EXPECT_EQ(0, um_torch_error_count());
	EXPECT_EQ(0, um_torch_live());
	EXPECT_EQ(0, um_torch_detach());
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* Without attach, the first allocation creates a context from LIBUM_*. */
TEST(context_from_environment)
{
	void *p;

	setenv("LIBUM_BACKEND", "sim", 1);
	setenv("LIBUM_SIM_CAPACITY", "32M", 1);
	p = um_torch_malloc(MiB, 0, NULL);
	ASSERT_NONNULL(p) TH_LOG("error %d", um_torch_last_error());
	EXPECT_EQ(-EBUSY, um_torch_detach());
	um_torch_free(p, MiB, 0, NULL);
	EXPECT_EQ(0, um_torch_last_error());
	EXPECT_EQ(0, um_torch_detach());
	um_torch_free(p, MiB, 0, NULL);		/* no context any more */
	EXPECT_EQ(-ENOENT, um_torch_last_error());
}

TEST_HARNESS_MAIN
