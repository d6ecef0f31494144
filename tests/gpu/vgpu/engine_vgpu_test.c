// SPDX-License-Identifier: MIT
/*
 * Description: libum on the virtual GPU, what only its fidelity shows and
 * libum already does right: a region on the GPU is device memory the CPU
 * cannot touch (TIERED always, MANAGED while on the device), and readable
 * again once evicted (MANAGED); libum's own copies never go through
 * pageable memory; regions on two devices move, each on its own device's
 * queues, with fences on the right device; a sticky error mid-migration is
 * reported as the loss of the regions named, not as bytes kept; with two
 * holders on two streams, the eviction waits for both; um_evict pins no
 * host memory under the context lock, nor do the evictions an acquire,
 * a budget cut or a shed start; the device memory of an eviction comes
 * back without another libum call; a restore overlaps an eviction (both
 * ways at once on the link) whether or not mapping waits for the
 * device's work in flight; the clean eviction of a READ_MOSTLY region
 * copies nothing and unmaps only after the holder's queued kernel.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include <sys/syscall.h>

#include "harness.h"
#include "engine_vgpu_common.h"
#include "internal.h"

#define MiB EV_MiB

FIXTURE(ev) {
	struct um_context *ctx;
	void *s;
};

FIXTURE_SETUP(ev)
{
	self->ctx = NULL;
	self->s = NULL;
	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&self->s));
	ASSERT_EQ(0, ev_ctx(&self->ctx, 256 * MiB));
}

FIXTURE_TEARDOWN(ev)
{
	if (self->s)
		gu_stream_sync(self->s);
	if (self->ctx) {
		um_wait_all(self->ctx);
		um_context_destroy(self->ctx);
	}
	if (self->s)
		gu_stream_destroy(self->s);
}

TEST_F(ev, cpu_touch_of_a_region_on_the_gpu_faults)
{
	um_region_t t = 0, m = 0;
	void *tp = NULL, *mp = NULL;

	ASSERT_EQ(0, ev_region(self->ctx, 8 * MiB, UM_BACKING_TIERED, "t",
			       &t, &tp));
	ASSERT_EQ(0, ev_region(self->ctx, 8 * MiB, UM_BACKING_MANAGED, "m",
			       &m, &mp));
	ASSERT_EQ(0, um_acquire(self->ctx, t, UM_TIER_GPU(0), self->s));
	ASSERT_EQ(0, um_acquire(self->ctx, m, UM_TIER_GPU(0), self->s));
	ASSERT_EQ(0, gu_fill(tp, 8 * MiB, 3, self->s));
	ASSERT_EQ(0, gu_fill(mp, 8 * MiB, 4, self->s));
	ASSERT_EQ(0, gu_stream_sync(self->s));
	/* A trainer's (or libum's) CPU read here crashes on a real GPU. */
	ASSERT_EQ(1, vgpu_touch_faults(tp));
	ASSERT_EQ(1, vgpu_touch_faults(mp));
	ASSERT_EQ(0, um_release(self->ctx, t));
	ASSERT_EQ(0, um_release(self->ctx, m));
	ASSERT_EQ(0, um_evict(self->ctx, m, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, m));
	/* Evicted managed pages are the host's to read. */
	ASSERT_EQ(0, vgpu_touch_faults(mp));
	ASSERT_EQ(0, gu_host_check(mp, 8 * MiB, 4, 4));
	ASSERT_EQ(0, um_free(self->ctx, t));
	ASSERT_EQ(0, um_free(self->ctx, m));
}

/* Modeled: a pageable copy would run at 8.6 GB/s, far below 55. */
TEST_F(ev, evict_and_restore_run_at_pinned_speed)
{
	struct um_stats st;
	um_region_t t = 0;
	void *tp = NULL;
	int i;

	ASSERT_EQ(0, ev_region(self->ctx, 64 * MiB, UM_BACKING_TIERED, "t",
			       &t, &tp));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, um_acquire(self->ctx, t, UM_TIER_GPU(0),
					self->s));
		ASSERT_EQ(0, gu_fill(tp, 64 * MiB, 9 + i, self->s));
		ASSERT_EQ(0, um_release(self->ctx, t));
		ASSERT_EQ(0, um_evict(self->ctx, t, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, um_wait(self->ctx, t));
	}
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	ASSERT_LT(0, st.evict_ns);
	ASSERT_LT(0, st.restore_ns);
	EXPECT_LT(50.0, (double)st.evict_bytes / (double)st.evict_ns);
	EXPECT_LT(50.0, (double)st.restore_bytes / (double)st.restore_ns);
	ASSERT_EQ(0, um_acquire(self->ctx, t, UM_TIER_GPU(0), self->s));
	ASSERT_EQ(0, gu_check(tp, 64 * MiB, 11, self->s));
	ASSERT_EQ(0, um_release(self->ctx, t));
	ASSERT_EQ(0, um_free(self->ctx, t));
}

/* Regions on two devices, each moved by its own queues, data intact. */
/* Up to UM_HOLD_STREAMS (8) distinct streams hold a region; a ninth: -EBUSY. */
TEST_F(ev, a_ninth_holder_stream_is_refused)
{
	void *s[9] = { NULL }, *p = NULL;
	um_region_t h = 0;
	int i;

	ASSERT_EQ(0, ev_region(self->ctx, 4 * MiB, UM_BACKING_TIERED, "held",
			       &h, &p));
	for (i = 0; i < 9; i++)
		ASSERT_EQ(0, gu_stream_create(&s[i]));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, um_acquire(self->ctx, h, UM_TIER_GPU(0), s[i]));
	/* The same stream again is no new holder stream. */
	ASSERT_EQ(0, um_acquire(self->ctx, h, UM_TIER_GPU(0), s[3]));
	ASSERT_EQ(-EBUSY, um_acquire(self->ctx, h, UM_TIER_GPU(0), s[8]));
	for (i = 0; i < 9; i++)
		ASSERT_EQ(0, um_release(self->ctx, h));
	ASSERT_EQ(-EPERM, um_release(self->ctx, h));
	ASSERT_EQ(0, um_evict(self->ctx, h, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, h));
	/* A new first holder starts a new set. */
	ASSERT_EQ(0, um_acquire(self->ctx, h, UM_TIER_GPU(0), s[8]));
	ASSERT_EQ(0, um_release(self->ctx, h));
	ASSERT_EQ(0, um_free(self->ctx, h));
	for (i = 0; i < 9; i++)
		gu_stream_destroy(s[i]);
}

TEST(regions_on_two_devices)
{
	struct um_region_desc d;
	struct um_context *ctx = NULL;
	um_region_t h[2] = { 0, 0 };
	void *p[2] = { NULL, NULL }, *s[2] = { NULL, NULL };
	int dev, c;

	setenv("UM_VGPU_DEVICES", "2", 1);
	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, ev_ctx(&ctx, 256 * MiB));
	for (dev = 0; dev < 2; dev++) {
		ASSERT_EQ(cudaSuccess, cudaSetDevice(dev));
		ASSERT_EQ(0, gu_stream_create(&s[dev]));
		memset(&d, 0, sizeof(d));
		d.size = sizeof(d);
		d.kind = UM_KIND_OPTIMIZER_STATE;
		d.backing = UM_BACKING_TIERED;
		d.device = (uint32_t)dev;
		d.bytes = 16 * MiB;
		d.name = dev ? "on-1" : "on-0";
		ASSERT_EQ(0, um_alloc(ctx, &d, &h[dev]));
		ASSERT_EQ(0, um_ptr(ctx, h[dev], &p[dev]));
	}
	ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
	for (c = 0; c < 4; c++) {
		for (dev = 0; dev < 2; dev++) {
			ASSERT_EQ(0, um_acquire(ctx, h[dev], UM_TIER_GPU(dev),
						s[dev])) TH_LOG("%s", ev_logbuf);
			if (c)
				ASSERT_EQ(0, gu_check(p[dev], 16 * MiB,
						      (uint32_t)(c - 1) * 2 + dev,
						      s[dev]));
			ASSERT_EQ(0, gu_fill(p[dev], 16 * MiB,
					     (uint32_t)c * 2 + dev, s[dev]));
			ASSERT_EQ(0, um_release(ctx, h[dev]));
			ASSERT_EQ(0, um_evict(ctx, h[dev], UM_TIER_HOST_ANY))
				TH_LOG("%s", ev_logbuf);
		}
		ASSERT_EQ(0, um_wait_all(ctx)) TH_LOG("%s", ev_logbuf);
	}
	for (dev = 0; dev < 2; dev++)
		ASSERT_EQ(0, um_free(ctx, h[dev]));
	um_context_destroy(ctx);
}

/*
 * The first copy the device runs is the eviction's: it poisons the device.
 * The error surfaces at the next call (the issue or the wait), as the loss
 * of the region named, never as bytes kept.
 */
static void sticky_eviction_is_loss(uint64_t bytes)
{
	struct um_context *ctx = NULL;
	void *s = NULL, *p = NULL;
	um_region_t h = 0;
	int ret;

	setenv("UM_VGPU_STICKY_AFTER", "0", 1);
	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(0, ev_ctx(&ctx, 256 * MiB));
	ASSERT_EQ(0, ev_filled(ctx, s, bytes, "adam-state-7", 5, &h, &p));
	ASSERT_EQ(0, gu_stream_sync(s));
	ret = um_evict(ctx, h, UM_TIER_HOST_ANY);
	if (!ret)
		ret = um_wait(ctx, h);
	EXPECT_EQ(-ENOTRECOVERABLE, ret);
	EXPECT_EQ(NULL, strstr(ev_logbuf, "kept where they were"))
		TH_LOG("%s", ev_logbuf);
	EXPECT_NE(NULL, strstr(ev_logbuf, "adam-state-7"));
	EXPECT_NE(NULL, strstr(ev_logbuf, "lost")) TH_LOG("%s", ev_logbuf);
	um_context_destroy(ctx);
}

TEST(sticky_error_mid_migration_is_data_loss_of_named_regions)
{
	sticky_eviction_is_loss(16 * MiB);
}

/* Pieces issued after the device died: their issue fails, same loss. */
TEST(sticky_error_mid_paced_eviction_is_data_loss)
{
	sticky_eviction_is_loss(96 * MiB);
}

/*
 * Evict h to the host while the gate holds back a kernel queued on stream
 * (ev_gate_close()): the gate opens 0.3 s later, from another thread, and
 * stream is synchronised after the eviction. 0, or the first failure: a
 * libum -errno, or gu_stream_sync()'s (gu_last_error() names it).
 */
static int evict_past_gate(struct um_context *ctx, um_region_t h,
			   void *stream)
{
	pthread_t opener;
	int rc;

	ev_gate_open_in(300000, &opener);
	rc = um_evict(ctx, h, UM_TIER_HOST_ANY);
	if (!rc)
		rc = um_wait(ctx, h);
	pthread_join(opener, NULL);
	return rc ? rc : gu_stream_sync(stream);
}

TEST(second_holders_stream_is_fenced_at_the_last_release)
{
	struct um_context *ctx = NULL;
	void *a = NULL, *b = NULL, *p = NULL;
	um_region_t h = 0;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&a));
	ASSERT_EQ(0, gu_stream_create(&b));
	ASSERT_EQ(0, ev_ctx(&ctx, 256 * MiB));
	ASSERT_EQ(0, ev_region(ctx, 16 * MiB, UM_BACKING_TIERED, "shared",
			       &h, &p));
	ASSERT_EQ(0, um_acquire(ctx, h, UM_TIER_GPU(0), a));
	ASSERT_EQ(0, gu_fill(p, 16 * MiB, 1, a));
	/* Second holder, on stream b, whose kernel is held back a while. */
	ASSERT_EQ(0, um_acquire(ctx, h, UM_TIER_GPU(0), b));
	ASSERT_EQ(cudaSuccess, ev_gate_close(b));
	ASSERT_EQ(0, gu_fill(p, 16 * MiB, 2, b));
	ASSERT_EQ(0, um_release(ctx, h));
	ASSERT_EQ(0, um_release(ctx, h));
	/* The eviction must wait for b's kernel, not only for a. */
	ASSERT_EQ(0, evict_past_gate(ctx, h, b)) TH_LOG("%s", gu_last_error());
	ASSERT_EQ(0, um_acquire(ctx, h, UM_TIER_GPU(0), a));
	ASSERT_EQ(0, gu_check(p, 16 * MiB, 2, a)) TH_LOG("stale bytes");
	ASSERT_EQ(0, um_release(ctx, h));
	ASSERT_EQ(0, gu_stream_sync(a));
	ASSERT_EQ(0, um_free(ctx, h));
	um_context_destroy(ctx);
}

/*
 * Pinning hook: does the pinning thread hold the context lock? Read from
 * the lock itself (glibc keeps the owner's thread id in it): exact, where a
 * probe that times another thread's call also counts a lock held a while
 * by some other thread on this loaded machine.
 */
static struct um_context *hook_ctx;
static int hook_calls, hook_under_lock;

static void lock_probe_hook(void)
{
	struct um_context *ctx = __atomic_load_n(&hook_ctx, __ATOMIC_ACQUIRE);

	__atomic_fetch_add(&hook_calls, 1, __ATOMIC_RELAXED);
	if (ctx && __atomic_load_n(&ctx->lock.__data.__owner,
				   __ATOMIC_RELAXED) ==
		   (int)syscall(SYS_gettid))
		__atomic_fetch_add(&hook_under_lock, 1, __ATOMIC_RELAXED);
}

TEST(no_pinning_under_the_context_lock)
{
	void *s = NULL, *p = NULL;
	um_region_t h = 0;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(0, ev_ctx(&hook_ctx, 256 * MiB));	/* pool_size 0 */
	ASSERT_EQ(0, ev_filled(hook_ctx, s, 64 * MiB, "first", 5, &h, &p));
	vgpu_pin_hook = lock_probe_hook;
	ASSERT_EQ(0, um_evict(hook_ctx, h, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(hook_ctx, h));
	vgpu_pin_hook = NULL;
	TH_LOG("pinning calls in um_evict: %d, under the lock: %d",
	       hook_calls, hook_under_lock);
	EXPECT_EQ(0, hook_under_lock);
	ASSERT_EQ(0, um_free(hook_ctx, h));
	um_context_destroy(hook_ctx);
}

/*
 * Evictions the policy starts inside other calls pin nothing under the lock
 * either, from an empty pool (pool_size 0): two 64 MiB regions fill a
 * 128 MiB budget, then a third region's acquire, a budget cut or a shed
 * evicts. The pool grows ahead (refill thread) or in the call with the lock
 * dropped; the evicted bytes come back intact.
 */
enum forced_by { BY_ACQUIRE, BY_BUDGET, BY_SHED };

static void evict_forced(struct __test_metadata *_metadata,
			 enum forced_by by)
{
	void *s = NULL, *pa = NULL, *pb = NULL, *pc = NULL;
	um_region_t a = 0, b = 0, c = 0;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(0, ev_ctx(&hook_ctx, 128 * MiB));	/* pool_size 0 */
	ASSERT_EQ(0, ev_filled(hook_ctx, s, 64 * MiB, "a", 5, &a, &pa));
	ASSERT_EQ(0, ev_filled(hook_ctx, s, 64 * MiB, "b", 6, &b, &pb));
	ASSERT_EQ(0, ev_region(hook_ctx, 64 * MiB, UM_BACKING_TIERED, "c",
			       &c, &pc));
	hook_calls = hook_under_lock = 0;
	vgpu_pin_hook = lock_probe_hook;
	if (by == BY_ACQUIRE) {
		ASSERT_EQ(0, um_acquire(hook_ctx, c, UM_TIER_GPU(0), s));
		ASSERT_EQ(0, um_release(hook_ctx, c));
	} else if (by == BY_BUDGET) {
		ASSERT_EQ(0, um_budget_set(hook_ctx, 0, 0));
	} else {
		ASSERT_EQ((int64_t)(128 * MiB),
			  um_shed(hook_ctx, UM_TIER_GPU(0), 128 * MiB,
				  UM_TIER_NONE));
	}
	ASSERT_EQ(0, um_wait_all(hook_ctx));
	vgpu_pin_hook = NULL;
	TH_LOG("pinning calls: %d, under the context lock: %d", hook_calls,
	       hook_under_lock);
	EXPECT_EQ(0, hook_under_lock);
	ASSERT_EQ(0, um_budget_set(hook_ctx, 0, 128 * MiB));
	ASSERT_EQ(0, um_acquire(hook_ctx, a, UM_TIER_GPU(0), s));
	ASSERT_EQ(0, gu_check(pa, 64 * MiB, 5, s)) TH_LOG("a lost bytes");
	ASSERT_EQ(0, um_release(hook_ctx, a));
	ASSERT_EQ(0, um_acquire(hook_ctx, b, UM_TIER_GPU(0), s));
	ASSERT_EQ(0, gu_check(pb, 64 * MiB, 6, s)) TH_LOG("b lost bytes");
	ASSERT_EQ(0, um_release(hook_ctx, b));
	ASSERT_EQ(0, gu_stream_sync(s));
	ASSERT_EQ(0, um_free(hook_ctx, a));
	ASSERT_EQ(0, um_free(hook_ctx, b));
	ASSERT_EQ(0, um_free(hook_ctx, c));
	um_context_destroy(hook_ctx);
	hook_ctx = NULL;
	gu_stream_destroy(s);
}

TEST(no_pinning_under_the_lock_when_acquire_needs_room)
{
	evict_forced(_metadata, BY_ACQUIRE);
}

TEST(no_pinning_under_the_lock_when_the_budget_is_cut)
{
	evict_forced(_metadata, BY_BUDGET);
}

TEST(no_pinning_under_the_lock_when_shedding)
{
	evict_forced(_metadata, BY_SHED);
}

/*
 * A trainer that evicts and then allocates through its framework (PyTorch's
 * allocator retrying cudaMalloc) makes no further libum call: the device
 * memory must come back anyway. vGPU of 640 MiB: 256 MiB of context, 256 MiB
 * of region, so a 256 MiB cudaMalloc fits only once the region is unmapped.
 */
TEST(gpu_memory_comes_back_without_another_libum_call)
{
	struct um_context *ctx = NULL;
	void *s = NULL, *p = NULL, *mine = NULL;
	um_region_t h = 0;
	cudaError_t e = cudaErrorMemoryAllocation;
	int i;

	setenv("UM_VGPU_BYTES", "640M", 1);
	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(0, ev_ctx(&ctx, 512 * MiB));
	ASSERT_EQ(0, ev_filled(ctx, s, 256 * MiB, "back", 5, &h, &p));
	ASSERT_EQ(0, gu_stream_sync(s));
	ASSERT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&mine, 256 * MiB));
	(void)cudaGetLastError();
	ASSERT_EQ(0, um_evict(ctx, h, UM_TIER_HOST_ANY));
	/* Each try moves the host's clock on (and time passes for real). */
	for (i = 0; i < 500 && e != cudaSuccess; i++) {
		e = cudaMalloc(&mine, 256 * MiB);
		if (e != cudaSuccess) {
			(void)cudaGetLastError();
			usleep(2000);
		}
	}
	EXPECT_EQ(cudaSuccess, e) TH_LOG("no memory back after %d tries", i);
	if (e == cudaSuccess)
		ASSERT_EQ(cudaSuccess, cudaFree(mine));
	ASSERT_EQ(0, um_wait(ctx, h));
	ASSERT_EQ(0, um_free(ctx, h));
	um_context_destroy(ctx);
}

/* A kernel that only reads: its mismatches land in *bad when it runs. */
struct kread {
	const void *p;
	size_t bytes;
	uint32_t salt;
	int64_t *bad;
};

static int k_read(void *arg)
{
	struct kread *k = arg;
	const void *d = vgpu_kptr(k->p, k->bytes);

	if (!d)
		return -1;
	*k->bad = gu_host_check(d, k->bytes, k->salt, 4);
	return 0;
}

TEST(clean_eviction_unmaps_after_the_holders_kernel)
{
	struct um_stats a = { .size = sizeof(a) }, b = { .size = sizeof(b) };
	struct um_context *ctx = NULL;
	void *s = NULL, *p = NULL;
	um_region_t h = 0;
	int64_t bad = -1;
	struct kread k;
	struct vgpu_range rg;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&s));
	ASSERT_EQ(0, ev_ctx(&ctx, 256 * MiB));
	ASSERT_EQ(0, ev_filled(ctx, s, 16 * MiB, "frozen", 4, &h, &p));
	ASSERT_EQ(0, um_evict(ctx, h, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, h));
	ASSERT_EQ(0, um_advise(ctx, h, UM_ADVISE_READ_MOSTLY,
			       UM_TIER_HOST_ANY));
	/* restored under the advice: the host copy stays */
	ASSERT_EQ(0, um_acquire(ctx, h, UM_TIER_GPU(0), s));
	ASSERT_EQ(0, gu_check(p, 16 * MiB, 4, s));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(0, um_stats_get(ctx, &a));

	/* a reading kernel held back on the holder's stream */
	k = (struct kread){ p, 16 * MiB, 4, &bad };
	rg = (struct vgpu_range){ p, 16 * MiB };
	ASSERT_EQ(cudaSuccess, ev_gate_close(s));
	ASSERT_EQ(cudaSuccess, vgpu_launch(s, k_read, &k, sizeof(k), &rg, 1,
					   16 * MiB));
	ASSERT_EQ(0, um_release(ctx, h));
	/* an unmap under the kernel would have made the device sticky */
	ASSERT_EQ(0, evict_past_gate(ctx, h, s)) TH_LOG("%s", gu_last_error());
	EXPECT_EQ(0, bad);
	ASSERT_EQ(0, um_stats_get(ctx, &b));
	EXPECT_EQ(a.evict_clean_count + 1, b.evict_clean_count);
	EXPECT_EQ(a.evict_count, b.evict_count);
	EXPECT_EQ(a.evict_bytes, b.evict_bytes);
	EXPECT_EQ(0, b.device[0].current);

	ASSERT_EQ(0, um_acquire(ctx, h, UM_TIER_GPU(0), s));
	EXPECT_EQ(0, gu_check(p, 16 * MiB, 4, s)) TH_LOG("bytes not back");
	ASSERT_EQ(0, um_release(ctx, h));
	ASSERT_EQ(0, gu_stream_sync(s));
	ASSERT_EQ(0, um_free(ctx, h));
	um_context_destroy(ctx);
	gu_stream_destroy(s);
}

/* A context whose pool holds pinned memory for two 128 MiB host copies. */
static int ctx_with_pool(struct um_context **ctx)
{
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_CUDA;
	cfg.device_budget = 1024 * MiB;
	cfg.pool_size = 256 * MiB;
	cfg.log = ev_log;
	cfg.log_level = UM_LOG_WARN;
	return um_context_create(&cfg, ctx);
}

/*
 * a out, b in, at once, 128 MiB each: the link carries both ways. The pool
 * has a's host copy ready (registering it in um_evict, 11.5 ms modeled,
 * would hide what is measured). With map_waits, cuMemMap/cuMemSetAccess
 * wait until the device is idle, so the restore's mapping waits for
 * whatever the eviction has in flight. Returns the modeled fraction of 95
 * GB/s (both ways) in *frac; both regions' bytes are checked after.
 */
static int both_ways_fraction(const char *map_waits, double *frac)
{
	const uint64_t n = 128 * MiB;
	struct um_context *ctx = NULL;
	void *s = NULL, *pa = NULL, *pb = NULL;
	um_region_t a = 0, b = 0;
	cudaEvent_t e0, e1;
	float ms = 0;
	int ret;

	setenv("UM_VGPU_MAP_WAITS", map_waits, 1);
	if (gu_warmup() || gu_stream_create(&s) || cudaEventCreate(&e0) ||
	    cudaEventCreate(&e1) || ctx_with_pool(&ctx))
		return -ENODEV;
	ret = ev_filled(ctx, s, n, "a", 1, &a, &pa);
	if (!ret)
		ret = ev_filled(ctx, s, n, "b", 2, &b, &pb);
	if (!ret)
		ret = um_evict(ctx, b, UM_TIER_HOST_ANY);
	if (!ret)
		ret = um_wait_all(ctx);
	if (!ret)
		ret = cudaEventRecord(e0, s) ? -EIO : 0;
	if (!ret)
		ret = um_evict(ctx, a, UM_TIER_HOST_ANY);
	if (!ret)
		ret = um_acquire(ctx, b, UM_TIER_GPU(0), s);
	if (!ret)
		ret = um_wait_all(ctx);
	if (!ret && (cudaEventRecord(e1, s) || cudaEventSynchronize(e1) ||
		     cudaEventElapsedTime(&ms, e0, e1)))
		ret = -EIO;
	*frac = ms > 0 ? 2.0 * (double)n / ((double)ms * 1e6) / 95 : 0;
	if (!ret)
		ret = gu_check(pb, n, 2, s);
	if (!ret)
		ret = um_release(ctx, b);
	if (!ret)
		ret = um_acquire(ctx, a, UM_TIER_GPU(0), s);
	if (!ret)
		ret = gu_check(pa, n, 1, s);
	if (!ret)
		ret = um_release(ctx, a);
	if (!ret)
		ret = gu_stream_sync(s);
	um_context_destroy(ctx);
	return ret;
}

TEST(restore_overlaps_eviction)
{
	double frac = 0;

	ASSERT_EQ(0, both_ways_fraction("0", &frac));
	TH_LOG("both ways: %.2f of 95 GB/s modeled", frac);
	EXPECT_LE(0.85, frac);
}

/*
 * Where mapping waits for the device (what the H200 may do: the
 * map_under_copy probe settles it), the restore's mapping must wait only
 * for the eviction's few pieces in flight, not for the whole eviction.
 */
TEST(restore_overlaps_eviction_when_mapping_waits)
{
	double frac = 0;

	ASSERT_EQ(0, both_ways_fraction("1", &frac));
	TH_LOG("both ways, mapping waits: %.2f of 95 GB/s modeled", frac);
	EXPECT_LE(0.85, frac);
}

TEST_TIMEOUT_SET(second_holders_stream_is_fenced_at_the_last_release, 60);
TEST_TIMEOUT_SET(no_pinning_under_the_lock_when_acquire_needs_room, 60);
TEST_TIMEOUT_SET(no_pinning_under_the_lock_when_the_budget_is_cut, 60);
TEST_TIMEOUT_SET(no_pinning_under_the_lock_when_shedding, 60);
TEST_TIMEOUT_SET(clean_eviction_unmaps_after_the_holders_kernel, 60);

TEST_HARNESS_MAIN
