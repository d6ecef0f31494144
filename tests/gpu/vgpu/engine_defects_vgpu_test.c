// SPDX-License-Identifier: MIT
/*
 * Description: the engine and policy defects of issue 9, each as a test on
 * the virtual GPU that fails until its fix lands (phase 2; this program is
 * built by `make -C tests/gpu` but left out of `make check` until then):
 *   - GPU memory comes back only at the next libum call;
 *   - a restore maps its whole region before its copies start, so when
 *     mapping waits for work in flight (UM_VGPU_MAP_WAITS=1) it stalls
 *     behind the eviction running at the same time.
 * Each test sets the vGPU's environment before its process's first CUDA
 * call (the harness forks each test).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "engine_vgpu_common.h"

#define MiB EV_MiB

TEST(gpu_memory_comes_back_without_another_libum_call)
{
	struct um_context *ctx = NULL;
	uint64_t f0 = 0, f = 0, t = 0;
	void *s = NULL, *p = NULL;
	um_region_t h = 0;
	int i;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(0, ev_ctx(&ctx, 512 * MiB));
	ASSERT_EQ(0, ev_filled(ctx, s, 64 * MiB, "back", 5, &h, &p));
	ASSERT_EQ(0, gu_stream_sync(s));
	ASSERT_EQ(0, gu_mem_info(&f0, &t));
	ASSERT_EQ(0, um_evict(ctx, h, UM_TIER_HOST_ANY));
	/* A trainer that allocates through PyTorch calls no libum here. */
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, gu_mem_info(&f, &t));
		if (f >= f0 + 64 * MiB)
			break;
		usleep(10000);
	}
	EXPECT_LE(f0 + 64 * MiB, f) TH_LOG("free grew by %llu MiB in 2 s",
					   (unsigned long long)((f - f0) >> 20));
	ASSERT_EQ(0, um_wait(ctx, h));
	ASSERT_EQ(0, um_free(ctx, h));
	um_context_destroy(ctx);
}

TEST(restore_overlaps_eviction_when_mapping_waits)
{
	const uint64_t n = 128 * MiB;
	struct um_context *ctx = NULL;
	void *s = NULL, *pa = NULL, *pb = NULL;
	um_region_t a = 0, b = 0;
	cudaEvent_t e0, e1;
	float ms = 0;
	double gbps;

	setenv("UM_VGPU_MAP_WAITS", "1", 1);
	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&e0));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&e1));
	ASSERT_EQ(0, ev_ctx(&ctx, 1024 * MiB));
	ASSERT_EQ(0, ev_filled(ctx, s, n, "a", 1, &a, &pa));
	ASSERT_EQ(0, ev_filled(ctx, s, n, "b", 2, &b, &pb));
	ASSERT_EQ(0, um_evict(ctx, b, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait_all(ctx));
	/* a out, b in, at once: the link carries both ways. */
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e0, s));
	ASSERT_EQ(0, um_evict(ctx, a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_acquire(ctx, b, UM_TIER_GPU(0), s));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e1, s));
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(e1));
	ASSERT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, e0, e1));
	gbps = 2.0 * (double)n / ((double)ms * 1e6);
	TH_LOG("both ways: %.1f GB/s modeled, %.2f of 95", gbps, gbps / 95);
	EXPECT_LE(0.85, gbps / 95);
	ASSERT_EQ(0, gu_check(pb, n, 2, s));
	ASSERT_EQ(0, um_release(ctx, b));
	ASSERT_EQ(0, gu_stream_sync(s));
	um_context_destroy(ctx);
}


TEST_HARNESS_MAIN
