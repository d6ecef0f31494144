// SPDX-License-Identifier: MIT
/*
 * Description: the engine defects found by reading the code against the
 * CUDA documentation whose fix is not in yet, each as a test on the virtual
 * GPU that fails until it lands (built by `make -C tests/gpu`, left out of
 * `make check` until then):
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
