// SPDX-License-Identifier: MIT
/*
 * Description: the cuda backend's operations, one by one, on a real GPU:
 * probe and init, TIERED map/copy/unmap with device memory given back,
 * MANAGED prefetch and discard, pinned host chunks (with and without a NUMA
 * node), fences with device time, and refusals of bad input. Below the core
 * on purpose: when a libum-level GPU test fails, this one says whether the
 * backend or the engine is to blame. Skips (exit 4) without a GPU.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend.h"
#include "harness.h"
#include "gpu_util.h"

/* Divided by 16 on the virtual GPU (see um_gpu_test.c). */
#define MiB ((1ull << 20) / (gu_is_vgpu() ? 16 : 1))

static void be_log(void *arg, int level, const char *fmt, ...)
{
	va_list ap;

	(void)arg;
	printf("# [be %d] ", level);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

FIXTURE(be) {
	struct um_backend be;
	struct um_queue *q;
	void *s;
	int ready;
};

FIXTURE_SETUP(be)
{
	const char *why = NULL;

	memset(&self->be, 0, sizeof(self->be));
	self->ready = 0;
	if (um__backend_cuda.probe(&why) <= 0)
		SKIP(return, "no GPU: %s", why ? why : "?");
	self->be.ops = &um__backend_cuda;
	self->be.log = be_log;
	{
		struct um_backend_config bc = { .sim_capacity = 0, .device = 0 };

		ASSERT_EQ(0, um__backend_cuda.init(&self->be, &bc));
	}
	ASSERT_EQ(0, um__backend_cuda.queue_create(&self->be, 0, &self->q));
	ASSERT_EQ(0, gu_stream_create(&self->s));
	ASSERT_EQ(0, gu_warmup()) TH_LOG("%s", gu_last_error());
	self->ready = 1;
}

FIXTURE_TEARDOWN(be)
{
	if (self->q)
		um__backend_cuda.queue_destroy(&self->be, self->q);
	if (self->s)
		gu_stream_destroy(self->s);
	if (self->be.priv)
		um__backend_cuda.fini(&self->be);
}

TEST_F(be, probe_and_info)
{
	uint64_t f = 0, t = 0;
	size_t g;

	ASSERT_LE(1, um__backend_cuda.device_count(&self->be));
	ASSERT_EQ(0, um__backend_cuda.mem_info(&self->be, 0, &f, &t));
	ASSERT_LT(0, t);
	ASSERT_LE(f, t);
	g = um__backend_cuda.granularity(&self->be, 0);
	ASSERT_LE(4096, g);
	ASSERT_EQ(0, g & (g - 1)) TH_LOG("granularity %zu", g);
	TH_LOG("device 0: %llu MiB free of %llu, granularity %zu KiB",
	       (unsigned long long)(f >> 20), (unsigned long long)(t >> 20),
	       g >> 10);
	/* Bad device numbers are refused, not passed to CUDA. */
	ASSERT_EQ(-ENODEV, um__backend_cuda.mem_info(&self->be, 4096, &f, &t));
	ASSERT_EQ(-ENODEV, um__backend_cuda.mem_info(&self->be, -1, &f, &t));
}

/* Map, fill on the GPU, copy out and back through pinned memory, unmap. */
TEST_F(be, tiered_roundtrip_gives_memory_back)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	const size_t len = 512 * MiB + 12345;	/* not a granule multiple */
	uint64_t f0, f1, f2, t, df0, df1, df2;
	void *va = NULL, *h = NULL, *host = NULL;
	size_t g = o->granularity(&self->be, 0);

	ASSERT_EQ(0, o->va_reserve(&self->be, 0, len, &va));
	ASSERT_EQ(0, (uintptr_t)va % g);
	ASSERT_EQ(0, o->host_alloc(&self->be, len, -1, &host));
	ASSERT_EQ(0, gu_mem_info(&f0, &t));
	ASSERT_EQ(0, gu_drv_mem_info(&df0, &t));

	ASSERT_EQ(0, o->phys_map(&self->be, 0, va, len, &h));
	ASSERT_EQ(0, gu_mem_info(&f1, &t));
	ASSERT_EQ(0, gu_drv_mem_info(&df1, &t));
	EXPECT_GE(f0 - f1, len) TH_LOG("mapping took %llu bytes",
				       (unsigned long long)(f0 - f1));
	EXPECT_GE(df0 - df1, len);

	ASSERT_EQ(0, gu_fill(va, len, 7, self->s));
	ASSERT_EQ(0, gu_stream_sync(self->s));
	ASSERT_EQ(0, o->copy(&self->be, self->q, host, va, len));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_host_check(host, len, 7, 4));
	o->phys_unmap(&self->be, 0, va, len, h);
	ASSERT_EQ(0, gu_mem_info(&f2, &t));
	ASSERT_EQ(0, gu_drv_mem_info(&df2, &t));
	/* The memory really went back: free is where it was before the map. */
	EXPECT_GE(f2 + 16 * MiB, f0) TH_LOG("free before %llu after %llu",
					    (unsigned long long)f0,
					    (unsigned long long)f2);
	EXPECT_GE(f2 - f1, len);
	EXPECT_GE(df2 - df1, len);

	/* Map again at the same VA: the pointer is stable, content restored. */
	ASSERT_EQ(0, o->phys_map(&self->be, 0, va, len, &h));
	ASSERT_EQ(0, o->copy(&self->be, self->q, va, host, len));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_check(va, len, 7, self->s));
	o->phys_unmap(&self->be, 0, va, len, h);
	o->va_release(&self->be, va, len);
	o->host_free(&self->be, host, len);
}

TEST_F(be, tiered_pieces_and_bad_input)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	size_t g = o->granularity(&self->be, 0);
	void *va = NULL, *h[4] = { 0 }, *bad = NULL;
	int i;

	ASSERT_EQ(0, o->va_reserve(&self->be, 0, 4 * g, &va));
	/* Four pieces mapped separately, each unmapped on its own. */
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, o->phys_map(&self->be, 0, (char *)va + i * g, g,
					 &h[i]));
	ASSERT_EQ(0, gu_fill(va, 4 * g, 3, self->s));
	ASSERT_EQ(0, gu_check(va, 4 * g, 3, self->s));
	/* A misaligned map is refused before the driver sees it. */
	ASSERT_EQ(-EINVAL, o->phys_map(&self->be, 0, (char *)va + 4096, g,
				       &bad));
	ASSERT_EQ(-EINVAL, o->phys_map(&self->be, 0, va, 0, &bad));
	ASSERT_EQ(-ENODEV, o->phys_map(&self->be, 99, va, g, &bad));
	ASSERT_EQ(-EINVAL, o->va_reserve(&self->be, 0, 0, &bad));
	for (i = 0; i < 4; i++)
		o->phys_unmap(&self->be, 0, (char *)va + i * g, g, h[i]);
	o->va_release(&self->be, va, 4 * g);
}

TEST_F(be, managed_prefetch_and_discard)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	const size_t len = 256 * MiB;
	void *m = NULL, *host = NULL;

	ASSERT_EQ(0, o->managed_alloc(&self->be, 0, len, &m));
	ASSERT_EQ(0, o->host_alloc(&self->be, len, -1, &host));
	ASSERT_EQ(0, o->advise(&self->be, m, len, UM_ADVISE_PREFERRED_LOCATION,
			       UM_TIER_GPU(0)));
	ASSERT_EQ(0, o->advise(&self->be, m, len, UM_ADVISE_ACCESSED_BY,
			       UM_TIER_HOST_NODE(0)));
	ASSERT_EQ(0, o->advise(&self->be, m, len, UM_ADVISE_READ_MOSTLY,
			       UM_TIER_NONE));
	ASSERT_EQ(0, o->advise(&self->be, m, len,
			       UM_ADVISE_UNSET_READ_MOSTLY, UM_TIER_NONE));
	ASSERT_EQ(0, o->advise(&self->be, m, len,
			       UM_ADVISE_UNSET_PREFERRED_LOCATION,
			       UM_TIER_NONE));
	ASSERT_EQ(-EINVAL, o->advise(&self->be, m, len, 77, UM_TIER_GPU(0)));
	ASSERT_EQ(-EINVAL, o->advise(&self->be, m, len,
				     UM_ADVISE_PREFERRED_LOCATION,
				     UM_TIER_DISK));

	/* Prefetch path: to the GPU, fill, to host node 0, check on CPU. */
	ASSERT_EQ(0, o->prefetch(&self->be, self->q, m, len, UM_TIER_GPU(0)));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_fill(m, len, 11, self->s));
	ASSERT_EQ(0, gu_stream_sync(self->s));
	ASSERT_EQ(0, o->prefetch(&self->be, self->q, m, len,
				 UM_TIER_HOST_NODE(0)));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_host_check(m, len, 11, 4096));

	/* Discard path: copy out, discard, prefetch back, copy in, check. */
	ASSERT_EQ(0, o->prefetch(&self->be, self->q, m, len, UM_TIER_GPU(0)));
	ASSERT_EQ(0, o->copy(&self->be, self->q, host, m, len));
	ASSERT_EQ(0, o->discard(&self->be, self->q, m, len));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_host_check(host, len, 11, 4));
	ASSERT_EQ(0, o->prefetch(&self->be, self->q, m, len, UM_TIER_GPU(0)));
	ASSERT_EQ(0, o->copy(&self->be, self->q, m, host, len));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_check(m, len, 11, self->s));

	ASSERT_EQ(-EINVAL, o->prefetch(&self->be, self->q, m, len,
				       UM_TIER_DISK));
	o->host_free(&self->be, host, len);
	o->managed_free(&self->be, m, len);
}

TEST_F(be, managed_cap_refuses_more_than_free)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	uint64_t f = 0, t = 0;
	void *m = NULL;

	ASSERT_EQ(0, o->mem_info(&self->be, 0, &f, &t));
	/* Never ask the driver: the cap refuses it first (H200, performance.rst). */
	ASSERT_EQ(-ENOMEM, o->managed_alloc(&self->be, 0, t + (1ull << 30),
					    &m));
	ASSERT_EQ(NULL, m);
}

TEST_F(be, host_chunks_any_and_node0)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	const size_t len = 64 * MiB;
	void *a = NULL, *b = NULL, *dev = NULL;

	ASSERT_EQ(0, o->host_alloc(&self->be, len, -1, &a));
	ASSERT_EQ(0, o->host_alloc(&self->be, len, 0, &b));
	ASSERT_EQ(0, gu_malloc(&dev, len));
	gu_host_fill(a, len, 5);
	/* Both kinds are pinned: async copies to and from the device work. */
	ASSERT_EQ(0, o->copy(&self->be, self->q, dev, a, len));
	ASSERT_EQ(0, o->copy(&self->be, self->q, b, dev, len));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	ASSERT_EQ(0, gu_host_check(b, len, 5, 4));
	ASSERT_EQ(-EINVAL, o->host_alloc(&self->be, len, 4000, &b));
	ASSERT_EQ(-EINVAL, o->host_alloc(&self->be, 0, -1, &b));
	o->host_free(&self->be, a, len);
	o->host_free(&self->be, b, len);
	gu_free(dev);
}

TEST_F(be, fences_time_a_copy)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	const size_t len = 256 * MiB;
	struct um_fence *f0 = NULL, *f1 = NULL;
	struct um_queue *q2 = NULL;
	void *host = NULL, *dev = NULL;
	uint64_t ns = 0;
	int r;

	ASSERT_EQ(0, o->host_alloc(&self->be, len, -1, &host));
	ASSERT_EQ(0, gu_malloc(&dev, len));
	ASSERT_EQ(0, o->fence_create(&self->be, &f0));
	ASSERT_EQ(0, o->fence_create(&self->be, &f1));
	ASSERT_EQ(0, o->queue_create(&self->be, 0, &q2));
	ASSERT_EQ(0, o->fence_record(&self->be, f0, self->q));
	ASSERT_EQ(0, o->copy(&self->be, self->q, dev, host, len));
	ASSERT_EQ(0, o->fence_record(&self->be, f1, self->q));
	r = o->fence_query(&self->be, f1);
	ASSERT_TRUE(r == 0 || r == -EAGAIN) TH_LOG("query %d", r);
	/* q2 waits on f1; caller's stream too; then everything completes. */
	ASSERT_EQ(0, o->queue_wait_fence(&self->be, q2, f1));
	ASSERT_EQ(0, o->stream_wait_fence(&self->be, self->s, f1));
	ASSERT_EQ(0, o->stream_wait_fence(&self->be, NULL, f1));
	ASSERT_EQ(0, o->queue_sync(&self->be, q2));
	ASSERT_EQ(0, o->fence_wait(&self->be, f1));
	ASSERT_EQ(0, o->fence_query(&self->be, f1));
	ASSERT_EQ(0, o->fence_elapsed_ns(&self->be, f0, f1, &ns));
	ASSERT_LT(0, ns);
	TH_LOG("256 MiB H2D in %.3f ms: %.1f GB/s", ns / 1e6,
	       (double)len / (double)ns);
	/* A copy slower than 1 GB/s means the host chunk is not pinned. */
	if (!gu_is_vgpu())
		EXPECT_LT((double)ns, (double)len);
	ASSERT_EQ(0, o->fill(&self->be, self->q, dev, 0xab, len));
	ASSERT_EQ(0, o->queue_sync(&self->be, self->q));
	o->queue_destroy(&self->be, q2);
	o->fence_destroy(&self->be, f0);
	o->fence_destroy(&self->be, f1);
	o->host_free(&self->be, host, len);
	gu_free(dev);
}

TEST_TIMEOUT_SET(be.tiered_roundtrip_gives_memory_back, 90);
TEST_TIMEOUT_SET(be.managed_prefetch_and_discard, 90);

TEST_HARNESS_MAIN
