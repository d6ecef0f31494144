/* SPDX-License-Identifier: MIT */
/*
 * Description: libumtorch's allocator functions on the sim backend, as
 * torch's CUDAPluggableAllocator would call them: round trips with usable
 * memory, bad sizes and devices, double, foreign, interior and wrong-size
 * frees (refused, recorded, nothing lost), attach/detach rules, a context
 * created from the environment, and eviction of released optimizer state
 * when an allocation needs its room. Built with ASan+UBSan by the Makefile.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
