/* SPDX-License-Identifier: MIT */
/*
 * Description: the simulated device backend (libum/src/backend_sim.c):
 * capacity and mem_info, stable VAs, phys_map beyond capacity (-ENOMEM)
 * and coalescing of freed extents, data surviving a copy out, unmap, map
 * and copy in, faults on an evicted or never-mapped VA (SIGSEGV), queue
 * FIFO order, fences (order, elapsed time, reuse, never recorded), waits
 * across two queues, the caller-stream hooks, injected copy failures
 * (-EIO, destination untouched), bad input, pinned host allocations, and
 * 3,000 reservations found from any address inside them (phys_map, unmap
 * and release against a model that walks them all).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "backend_sim.h"

#define MiB (1024ull * 1024)
#define GRAN (2 * MiB)

static const struct um_backend_ops *ops = &um__backend_sim;

struct logbook {
	int warn, err;
};

static void logfn(void *arg, int level, const char *fmt, ...)
{
	struct logbook *lb = arg;

	(void)fmt;
	if (level <= UM_LOG_ERR)
		lb->err++;
	else if (level == UM_LOG_WARN)
		lb->warn++;
}

FIXTURE(sim) {
	struct um_backend be;
	struct logbook log;
	struct um_queue *q;
};

FIXTURE_SETUP(sim)
{
	struct um_backend_config bc = { .sim_capacity = 32 * MiB };

	memset(&self->log, 0, sizeof(self->log));
	self->be = (struct um_backend){ .ops = ops, .log = logfn,
					.log_arg = &self->log };
	ASSERT_EQ(0, ops->init(&self->be, &bc));
	ASSERT_EQ(0, ops->queue_create(&self->be, 0, &self->q));
}

FIXTURE_TEARDOWN(sim)
{
	ops->queue_destroy(&self->be, self->q);
	ops->fini(&self->be);
}

static void pattern(void *p, size_t len, uint32_t seed)
{
	uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		w[i] = ((uint64_t)seed << 32) ^ (i * 0x9e3779b97f4a7c15ull);
}

static int pattern_ok(const void *p, size_t len, uint32_t seed)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < len / 8; i++)
		if (w[i] != (((uint64_t)seed << 32) ^
			     (i * 0x9e3779b97f4a7c15ull)))
			return 0;
	return 1;
}

TEST(probe_and_defaults)
{
	struct um_backend be = { .ops = ops };
	uint64_t free_b = 0, total = 0;
	const char *why = "x";

	EXPECT_EQ(1, ops->probe(&why));
	EXPECT_NULL(why);
	ASSERT_EQ(0, ops->init(&be, NULL));
	EXPECT_EQ(1, ops->device_count(&be));
	EXPECT_EQ(GRAN, ops->granularity(&be, 0));
	ASSERT_EQ(0, ops->mem_info(&be, 0, &free_b, &total));
	EXPECT_EQ(1024 * MiB, total);		/* the default capacity */
	EXPECT_EQ(total, free_b);
	EXPECT_EQ(-ENODEV, ops->mem_info(&be, 1, &free_b, &total));
	EXPECT_NULL(ops->managed_alloc);	/* MANAGED maps to TIERED */
	ops->fini(&be);
}

TEST(capacity_rounds_up)
{
	struct um_backend be = { .ops = ops };
	struct um_backend_config bc = { .sim_capacity = 5 * MiB + 1 };
	uint64_t free_b, total;

	ASSERT_EQ(0, ops->init(&be, &bc));
	ASSERT_EQ(0, ops->mem_info(&be, 0, &free_b, &total));
	EXPECT_EQ(6 * MiB, total);
	ops->fini(&be);
	bc.device = 1;
	EXPECT_EQ(-ENODEV, ops->init(&be, &bc));
	bc.device = 0;
	bc.sim_capacity = 1ull << 62;
	EXPECT_EQ(-EINVAL, ops->init(&be, &bc));
}

TEST_F(sim, map_unmap_capacity_and_coalescing)
{
	struct um_backend *be = &self->be;
	void *va[3], *h[3], *big, *hb;
	uint64_t free_b, total;

	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, ops->va_reserve(be, 0, 10 * MiB, &va[i]));
	ASSERT_EQ(0, ops->va_reserve(be, 0, 32 * MiB, &big));
	EXPECT_EQ(0, (uintptr_t)big % GRAN);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(0, (uintptr_t)va[i] % GRAN);
		ASSERT_EQ(0, ops->phys_map(be, 0, va[i], 10 * MiB, &h[i]));
	}
	ASSERT_EQ(0, ops->mem_info(be, 0, &free_b, &total));
	EXPECT_EQ(2 * MiB, free_b);
	EXPECT_EQ(30 * MiB, um__sim_mapped_bytes(be));
	/* more than the capacity left: refused, nothing changes */
	EXPECT_EQ(-ENOMEM, ops->phys_map(be, 0, big, 4 * MiB, &hb));
	EXPECT_EQ(30 * MiB, um__sim_mapped_bytes(be));
	/* free the two outer extents: 22 MiB free but not in one piece */
	ops->phys_unmap(be, 0, va[0], 10 * MiB, h[0]);
	ops->phys_unmap(be, 0, va[2], 10 * MiB, h[2]);
	EXPECT_EQ(-ENOMEM, ops->phys_map(be, 0, big, 22 * MiB, &hb));
	/* free the middle one: everything merges back into one extent */
	ops->phys_unmap(be, 0, va[1], 10 * MiB, h[1]);
	EXPECT_EQ(0, um__sim_mapped_bytes(be));
	ASSERT_EQ(0, ops->phys_map(be, 0, big, 32 * MiB, &hb));
	memset(big, 0x11, 32 * MiB);
	ops->phys_unmap(be, 0, big, 32 * MiB, hb);
	for (int i = 0; i < 3; i++)
		ops->va_release(be, va[i], 10 * MiB);
	ops->va_release(be, big, 32 * MiB);
	EXPECT_EQ(0, self->log.warn + self->log.err);
}

TEST_F(sim, data_survives_evict_and_restore)
{
	struct um_backend *be = &self->be;
	size_t len = 12 * MiB + 4096;
	struct um_fence *f;
	void *va, *va2, *h, *h2, *host;

	ASSERT_EQ(0, ops->fence_create(be, &f));
	ASSERT_EQ(0, ops->va_reserve(be, 0, len, &va));
	ASSERT_EQ(0, ops->va_reserve(be, 0, 16 * MiB, &va2));
	ASSERT_EQ(0, ops->host_alloc(be, len, -1, &host));
	ASSERT_EQ(0, ops->phys_map(be, 0, va, len, &h));
	pattern(va, len, 7);
	/* evict: copy out, unmap */
	ASSERT_EQ(0, ops->copy(be, self->q, host, va, len));
	ASSERT_EQ(0, ops->fence_record(be, f, self->q));
	ASSERT_EQ(0, ops->fence_wait(be, f));
	ops->phys_unmap(be, 0, va, len, h);
	/* someone else uses (and scribbles on) the device memory meanwhile */
	ASSERT_EQ(0, ops->phys_map(be, 0, va2, 16 * MiB, &h2));
	memset(va2, 0xee, 16 * MiB);
	ops->phys_unmap(be, 0, va2, 16 * MiB, h2);
	/* restore at the same VA */
	ASSERT_EQ(0, ops->phys_map(be, 0, va, len, &h));
	ASSERT_EQ(0, ops->copy(be, self->q, va, host, len));
	ASSERT_EQ(0, ops->queue_sync(be, self->q));
	EXPECT_TRUE(pattern_ok(va, len, 7));
	ops->phys_unmap(be, 0, va, len, h);
	ops->va_release(be, va, len);
	ops->va_release(be, va2, 16 * MiB);
	ops->host_free(be, host, len);
	ops->fence_destroy(be, f);
}

TEST_F(sim, big_copies_split_across_helpers)
{
	struct um_backend *be = &self->be;
	size_t len = 40 * MiB + 12345;
	char *a = malloc(len), *b = malloc(len);

	ASSERT_NONNULL(a);
	ASSERT_NONNULL(b);
	pattern(a, len, 3);
	memset(b, 0, len);
	um__sim_set_split_min(be, 1 * MiB);
	ASSERT_EQ(0, ops->copy(be, self->q, b, a, len));
	ASSERT_EQ(0, ops->fill(be, self->q, a, 0x5c, len));
	ASSERT_EQ(0, ops->queue_sync(be, self->q));
	EXPECT_TRUE(pattern_ok(b, len, 3));
	for (size_t i = 0; i < len; i += 4093)
		if (a[i] != 0x5c) {
			ASSERT_EQ(0x5c, a[i]) TH_LOG("at %zu", i);
		}
	EXPECT_EQ(0x5c, a[len - 1]);
	free(a);
	free(b);
}

TEST_SIGNAL(touch_after_unmap_faults, SIGSEGV)
{
	struct um_backend be = { .ops = ops };
	struct um_backend_config bc = { .sim_capacity = 8 * MiB };
	volatile char *v;
	void *va, *h;

	/* the fault must kill us, even where a sanitizer catches SIGSEGV */
	signal(SIGSEGV, SIG_DFL);
	ASSERT_EQ(0, ops->init(&be, &bc));
	ASSERT_EQ(0, ops->va_reserve(&be, 0, 4 * MiB, &va));
	ASSERT_EQ(0, ops->phys_map(&be, 0, va, 4 * MiB, &h));
	memset(va, 1, 4 * MiB);
	ops->phys_unmap(&be, 0, va, 4 * MiB, h);
	v = va;
	v[12345] = 2;		/* an evicted region: must fault */
	TH_LOG("no fault after unmap");
}

TEST_SIGNAL(touch_never_mapped_faults, SIGSEGV)
{
	struct um_backend be = { .ops = ops };
	volatile char *v;
	void *va;

	signal(SIGSEGV, SIG_DFL);
	ASSERT_EQ(0, ops->init(&be, NULL));
	ASSERT_EQ(0, ops->va_reserve(&be, 0, 1, &va));
	v = va;
	v[0] = 1;		/* reserved, never mapped: must fault */
	TH_LOG("no fault on a reserved, never mapped VA");
}

TEST_F(sim, fifo_order)
{
	enum { N = 64 };
	struct um_backend *be = &self->be;
	uint64_t *buf = calloc(N + 1, sizeof(uint64_t));

	ASSERT_NONNULL(buf);
	buf[0] = 0xfeedface;
	/* a chain: each copy reads what the previous one wrote */
	ASSERT_EQ(0, um__sim_hold(be, true));
	for (int i = 0; i < N; i++)
		ASSERT_EQ(0, ops->copy(be, self->q, &buf[i + 1], &buf[i], 8));
	EXPECT_EQ(0, buf[N]);	/* held: nothing ran yet */
	ASSERT_EQ(0, um__sim_hold(be, false));
	ASSERT_EQ(0, ops->queue_sync(be, self->q));
	for (int i = 0; i <= N; i++)
		EXPECT_EQ(0xfeedface, buf[i]) TH_LOG("i=%d", i);
	free(buf);
}

TEST_F(sim, fences_order_and_elapsed)
{
	struct um_backend *be = &self->be;
	size_t len = 16 * MiB;
	struct um_fence *f0, *f1, *fresh;
	char *a = malloc(len), *b = malloc(len);
	uint64_t ns = 0;

	ASSERT_NONNULL(a);
	ASSERT_NONNULL(b);
	memset(a, 1, len);
	memset(b, 2, len);
	ASSERT_EQ(0, ops->fence_create(be, &f0));
	ASSERT_EQ(0, ops->fence_create(be, &f1));
	ASSERT_EQ(0, ops->fence_create(be, &fresh));
	/* never recorded: reached (like a fresh CUDA event), no interval */
	EXPECT_EQ(0, ops->fence_query(be, fresh));
	EXPECT_EQ(0, ops->fence_wait(be, fresh));
	EXPECT_EQ(-EINVAL, ops->fence_elapsed_ns(be, fresh, f1, &ns));

	ASSERT_EQ(0, um__sim_hold(be, true));
	ASSERT_EQ(0, ops->fence_record(be, f0, self->q));
	ASSERT_EQ(0, ops->copy(be, self->q, b, a, len));
	ASSERT_EQ(0, ops->fence_record(be, f1, self->q));
	EXPECT_EQ(-EAGAIN, ops->fence_query(be, f0));
	EXPECT_EQ(-EAGAIN, ops->fence_query(be, f1));
	EXPECT_EQ(-EAGAIN, ops->fence_elapsed_ns(be, f0, f1, &ns));
	ASSERT_EQ(0, um__sim_hold(be, false));
	ASSERT_EQ(0, ops->fence_wait(be, f1));
	/* FIFO: f1 reached means f0 was too, and the copy is done */
	EXPECT_EQ(0, ops->fence_query(be, f0));
	EXPECT_EQ(1, b[0]);
	EXPECT_EQ(1, b[len - 1]);
	ASSERT_EQ(0, ops->fence_elapsed_ns(be, f0, f1, &ns));
	EXPECT_GT(ns, 0);
	EXPECT_LT(ns, 60ull * 1000000000);
	/* the wrong way round */
	EXPECT_EQ(-EINVAL, ops->fence_elapsed_ns(be, f1, f0, &ns));
	/* reuse: record again, the later record is what counts */
	ASSERT_EQ(0, ops->fence_record(be, f0, self->q));
	ASSERT_EQ(0, ops->fence_wait(be, f0));
	EXPECT_EQ(-EINVAL, ops->fence_elapsed_ns(be, f0, f1, &ns));
	ops->fence_destroy(be, f0);
	ops->fence_destroy(be, f1);
	ops->fence_destroy(be, fresh);
	free(a);
	free(b);
}

TEST_F(sim, wait_fence_across_two_queues)
{
	struct um_backend *be = &self->be;
	size_t len = 32 * MiB;
	struct um_queue *q2;
	struct um_fence *f, *done;
	char *x = malloc(len), *y = malloc(len), *z = malloc(len);

	ASSERT_NONNULL(x);
	ASSERT_NONNULL(y);
	ASSERT_NONNULL(z);
	pattern(x, len, 11);
	memset(y, 0, len);
	memset(z, 0, len);
	ASSERT_EQ(0, ops->queue_create(be, 0, &q2));
	ASSERT_EQ(0, ops->fence_create(be, &f));
	ASSERT_EQ(0, ops->fence_create(be, &done));
	/* q2 must not copy y -> z before q1 has filled y */
	ASSERT_EQ(0, um__sim_hold(be, true));
	ASSERT_EQ(0, ops->copy(be, self->q, y, x, len));
	ASSERT_EQ(0, ops->fence_record(be, f, self->q));
	ASSERT_EQ(0, ops->queue_wait_fence(be, q2, f));
	ASSERT_EQ(0, ops->copy(be, q2, z, y, len));
	ASSERT_EQ(0, ops->fence_record(be, done, q2));
	ASSERT_EQ(0, um__sim_hold(be, false));
	ASSERT_EQ(0, ops->fence_wait(be, done));
	EXPECT_EQ(0, ops->fence_query(be, f));
	EXPECT_TRUE(pattern_ok(z, len, 11));
	/* waiting on a reached or never-recorded fence adds no wait */
	ASSERT_EQ(0, ops->queue_wait_fence(be, q2, f));
	ASSERT_EQ(0, ops->queue_sync(be, q2));
	ops->fence_destroy(be, f);
	ops->fence_destroy(be, done);
	ops->queue_destroy(be, q2);
	free(x);
	free(y);
	free(z);
}

struct waiter {
	struct um_backend *be;
	struct um_fence *f;
	int ret;
	int done;
};

static void *stream_waiter(void *arg)
{
	struct waiter *w = arg;

	w->ret = ops->stream_wait_fence(w->be, NULL, w->f);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST_F(sim, caller_stream_hooks)
{
	struct um_backend *be = &self->be;
	struct um_fence *f;
	struct waiter w;
	pthread_t th;
	char a[64] = { 1 }, b[64] = { 0 };

	ASSERT_EQ(0, ops->fence_create(be, &f));
	/* recording on the caller's "stream" (the CPU): reached at once */
	ASSERT_EQ(0, ops->stream_record_fence(be, NULL, f));
	EXPECT_EQ(0, ops->fence_query(be, f));
	/* waiting on it blocks the caller until the queue gets there */
	ASSERT_EQ(0, um__sim_hold(be, true));
	ASSERT_EQ(0, ops->copy(be, self->q, b, a, sizeof(a)));
	ASSERT_EQ(0, ops->fence_record(be, f, self->q));
	w = (struct waiter){ .be = be, .f = f, .ret = 1 };
	ASSERT_EQ(0, pthread_create(&th, NULL, stream_waiter, &w));
	usleep(20000);
	EXPECT_EQ(0, __atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
	ASSERT_EQ(0, um__sim_hold(be, false));
	pthread_join(th, NULL);
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(1, b[0]);
	ops->fence_destroy(be, f);
}

TEST_F(sim, injected_failure_reports_eio)
{
	struct um_backend *be = &self->be;
	struct um_fence *start, *end, *next;
	char a[4096], b[4096], c[4096];

	memset(a, 'a', sizeof(a));
	memset(b, 'b', sizeof(b));
	memset(c, 'c', sizeof(c));
	ASSERT_EQ(0, ops->fence_create(be, &start));
	ASSERT_EQ(0, ops->fence_create(be, &end));
	ASSERT_EQ(0, ops->fence_create(be, &next));
	EXPECT_EQ(-EINVAL, um__sim_fail_next(be, 5, 1));
	ASSERT_EQ(0, um__sim_fail_next(be, -EIO, 1));
	ASSERT_EQ(0, ops->fence_record(be, start, self->q));
	ASSERT_EQ(0, ops->copy(be, self->q, b, a, sizeof(a)));	/* fails */
	ASSERT_EQ(0, ops->copy(be, self->q, c, a, sizeof(a)));	/* skipped */
	ASSERT_EQ(0, ops->fence_record(be, end, self->q));
	ASSERT_EQ(0, ops->copy(be, self->q, c, a, 16));	/* healthy again */
	ASSERT_EQ(0, ops->fence_record(be, next, self->q));
	EXPECT_EQ(-EIO, ops->fence_wait(be, end));
	EXPECT_EQ(-EIO, ops->fence_query(be, end));
	EXPECT_EQ(0, ops->fence_query(be, start));
	EXPECT_EQ(0, ops->fence_wait(be, next));
	EXPECT_EQ('b', b[0]);		/* the failed copy wrote nothing */
	EXPECT_EQ('b', b[4095]);
	EXPECT_EQ('a', c[0]);
	EXPECT_EQ('c', c[16]);
	EXPECT_EQ(-EIO, ops->queue_sync(be, self->q));
	EXPECT_EQ(0, ops->queue_sync(be, self->q));
	ops->fence_destroy(be, start);
	ops->fence_destroy(be, end);
	ops->fence_destroy(be, next);
}

TEST_F(sim, bad_input)
{
	struct um_backend *be = &self->be;
	struct um_queue *q;
	struct um_fence *f;
	char buf[256];
	void *va, *va2, *h, *h2, *p;
	uint64_t ns;

	EXPECT_EQ(-ENODEV, ops->queue_create(be, 1, &q));
	EXPECT_EQ(-EINVAL, ops->queue_create(be, 0, NULL));
	EXPECT_EQ(-ENODEV, ops->va_reserve(be, 1, MiB, &va));
	EXPECT_EQ(-EINVAL, ops->va_reserve(be, 0, 0, &va));
	EXPECT_EQ(-EINVAL, ops->va_reserve(be, 0, MiB, NULL));
	EXPECT_EQ(-ENOMEM, ops->va_reserve(be, 0, 1ull << 60, &va));

	ASSERT_EQ(0, ops->va_reserve(be, 0, 4 * MiB, &va));
	EXPECT_EQ(-ENODEV, ops->phys_map(be, 1, va, MiB, &h));
	EXPECT_EQ(-EINVAL, ops->phys_map(be, 0, NULL, MiB, &h));
	EXPECT_EQ(-EINVAL, ops->phys_map(be, 0, va, 0, &h));
	EXPECT_EQ(-EINVAL, ops->phys_map(be, 0, (char *)va + 4096, MiB, &h));
	/* past the end of the reservation, or not ours at all */
	EXPECT_EQ(-EINVAL, ops->phys_map(be, 0, (char *)va + GRAN, 4 * MiB,
					 &h));
	EXPECT_EQ(-EINVAL, ops->phys_map(be, 0, buf, MiB, &h));
	ASSERT_EQ(0, ops->phys_map(be, 0, va, 4 * MiB, &h));
	/* mapped twice */
	EXPECT_EQ(-EBUSY, ops->phys_map(be, 0, va, 2 * MiB, &h2));
	EXPECT_EQ(4 * MiB, um__sim_mapped_bytes(be));
	/* unmapping something unknown only logs */
	ASSERT_EQ(0, ops->va_reserve(be, 0, 2 * MiB, &va2));
	ops->phys_unmap(be, 0, va2, 2 * MiB, &buf);
	EXPECT_EQ(1, self->log.warn);
	EXPECT_EQ(4 * MiB, um__sim_mapped_bytes(be));
	/* releasing a VA still mapped gives its memory back, with a warning */
	ops->va_release(be, va, 4 * MiB);
	EXPECT_EQ(2, self->log.warn);
	EXPECT_EQ(0, um__sim_mapped_bytes(be));
	ops->va_release(be, va2, 2 * MiB);
	ops->va_release(be, buf, 2 * MiB);
	EXPECT_EQ(3, self->log.warn);

	EXPECT_EQ(-EINVAL, ops->copy(be, NULL, buf, buf + 128, 64));
	EXPECT_EQ(-EINVAL, ops->copy(be, self->q, NULL, buf, 64));
	EXPECT_EQ(-EINVAL, ops->copy(be, self->q, buf, NULL, 64));
	EXPECT_EQ(-EINVAL, ops->copy(be, self->q, buf, buf + 32, 64));
	EXPECT_EQ(0, ops->copy(be, self->q, buf, buf + 128, 0));
	EXPECT_EQ(-EINVAL, ops->fill(be, self->q, NULL, 0, 64));
	EXPECT_EQ(-EINVAL, ops->fill(be, NULL, buf, 0, 64));
	EXPECT_EQ(-EINVAL, ops->queue_sync(be, NULL));

	ASSERT_EQ(0, ops->fence_create(be, &f));
	EXPECT_EQ(-EINVAL, ops->fence_create(be, NULL));
	EXPECT_EQ(-EINVAL, ops->fence_record(be, NULL, self->q));
	EXPECT_EQ(-EINVAL, ops->fence_record(be, f, NULL));
	EXPECT_EQ(-EINVAL, ops->fence_query(be, NULL));
	EXPECT_EQ(-EINVAL, ops->fence_wait(be, NULL));
	EXPECT_EQ(-EINVAL, ops->fence_elapsed_ns(be, f, f, NULL));
	EXPECT_EQ(-EINVAL, ops->fence_elapsed_ns(be, NULL, f, &ns));
	EXPECT_EQ(-EINVAL, ops->queue_wait_fence(be, NULL, f));
	EXPECT_EQ(-EINVAL, ops->queue_wait_fence(be, self->q, NULL));
	EXPECT_EQ(-EINVAL, ops->stream_record_fence(be, NULL, NULL));
	ops->fence_destroy(be, f);
	ops->fence_destroy(be, NULL);
	ops->queue_destroy(be, NULL);

	EXPECT_EQ(-EINVAL, ops->host_alloc(be, 0, -1, &p));
	EXPECT_EQ(-EINVAL, ops->host_alloc(be, 4096, -1, NULL));
	EXPECT_EQ(-EINVAL, ops->host_alloc(be, 4096, -2, &p));
	EXPECT_EQ(-EINVAL, ops->host_alloc(be, 4096, 4000, &p));
	EXPECT_EQ(-ENOMEM, ops->host_alloc(be, 1ull << 60, -1, &p));
	EXPECT_EQ(0, self->log.err);
}

TEST_F(sim, host_alloc_is_aligned_and_bound)
{
	struct um_backend *be = &self->be;
	void *p, *q;

	ASSERT_EQ(0, ops->host_alloc(be, 100, -1, &p));
	EXPECT_EQ(0, (uintptr_t)p % 4096);
	memset(p, 1, 100);
	ops->host_free(be, p, 100);
	ASSERT_EQ(0, ops->host_alloc(be, 6 * MiB, -1, &q));
	EXPECT_EQ(0, (uintptr_t)q % GRAN);
	memset(q, 2, 6 * MiB);
	ops->host_free(be, q, 6 * MiB);
	/* node 0 always exists (without NUMA it is the only one) */
	ASSERT_EQ(0, ops->host_alloc(be, 4 * MiB, 0, &q));
	memset(q, 3, 4 * MiB);
	ops->host_free(be, q, 4 * MiB);
}

/* The sim's reservations as the test made them, searched one by one. */
#define MODEL_RESV 3000
#define MODEL_GRANS 4

struct resv_model {
	char *va[MODEL_RESV];
	int grans[MODEL_RESV];
	void *h[MODEL_RESV][MODEL_GRANS];	/* handle per mapped granule */
	int live[32][2];			/* mapped: reservation, granule */
	int nlive;
	uint64_t mapped;
	uint64_t seed;
};

static unsigned int model_rand(struct resv_model *md, unsigned int n)
{
	md->seed ^= md->seed << 13;
	md->seed ^= md->seed >> 7;
	md->seed ^= md->seed << 17;
	return (unsigned int)((md->seed >> 32) % n);
}

/* The reservation holding p, by a walk over all of them; -1 if none. */
static int model_owner(const struct resv_model *md, const char *p)
{
	for (int i = 0; i < MODEL_RESV; i++)
		if (p >= md->va[i] && p < md->va[i] + md->grans[i] * GRAN)
			return i;
	return -1;
}

/* What phys_map of one granule at p must return, by the model. */
static int model_map_result(const struct resv_model *md, const char *p)
{
	int i = model_owner(md, p);

	if (i < 0)
		return -EINVAL;
	if (md->h[i][(p - md->va[i]) / GRAN])
		return -EBUSY;
	return md->mapped + GRAN > 32 * MiB ? -ENOMEM : 0;
}

static void model_unmapped(struct resv_model *md, int i, int g)
{
	for (int k = 0; k < md->nlive; k++)
		if (md->live[k][0] == i && md->live[k][1] == g) {
			md->live[k][0] = md->live[md->nlive - 1][0];
			md->live[k][1] = md->live[md->nlive - 1][1];
			md->nlive--;
			break;
		}
	md->h[i][g] = NULL;
	md->mapped -= GRAN;
}

/* The process's mappings (vm.max_map_count bounds them). */
static int process_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0, c;

	if (!f)
		return -1;
	while ((c = getc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static int model_reserve(struct um_backend *be, struct resv_model *md, int i)
{
	md->grans[i] = 1 + (int)model_rand(md, MODEL_GRANS);
	return ops->va_reserve(be, 0, md->grans[i] * GRAN - 4096,
			       (void **)&md->va[i]);
}

/*
 * 3,000 reservations of 1 to 4 granules, taking a few of the process's
 * mappings, not one each (also after being mapped); 20,000 steps that map a granule
 * at an address taken inside a reservation, just past one or in a hole,
 * unmap one, or release a reservation (mappings and all) for a new one.
 * Every result and the mapped bytes must be what a walk over the model
 * says.
 */
TEST_F(sim, reservations_found_from_any_address)
{
	static struct resv_model md = { .seed = 0x13198a2e03707344ull };
	struct um_backend *be = &self->be;
	int warn = 0, released = 0, maps = process_mappings();

	for (int i = 0; i < MODEL_RESV; i++)
		ASSERT_EQ(0, model_reserve(be, &md, i));
	/* side by side, so the kernel keeps them as a few mappings */
	EXPECT_GT(maps + MODEL_RESV / 10, process_mappings());
	for (int step = 0; step < 20000; step++) {
		int i = (int)model_rand(&md, MODEL_RESV);
		int g = (int)model_rand(&md, MODEL_GRANS + 1);
		unsigned int what = model_rand(&md, 16);
		char *p = md.va[i] + (size_t)g * GRAN;
		void *h = NULL;

		if (what == 0) {
			for (int k = 0; k < md.grans[i]; k++)
				if (md.h[i][k]) {
					model_unmapped(&md, i, k);
					warn++;
				}
			ops->va_release(be, md.va[i], md.grans[i] * GRAN);
			released++;
			ASSERT_EQ(0, model_reserve(be, &md, i));
		} else if (what < 8 && md.nlive) {
			int k = (int)model_rand(&md, (unsigned int)md.nlive);
			int mi = md.live[k][0], mg = md.live[k][1];

			ops->phys_unmap(be, 0, md.va[mi] + (size_t)mg * GRAN,
					GRAN, md.h[mi][mg]);
			model_unmapped(&md, mi, mg);
		} else {
			int want = model_map_result(&md, p);

			ASSERT_EQ(want, ops->phys_map(be, 0, p, GRAN, &h))
				TH_LOG("step %d: %p, granule %d of reservation %d (%d)",
				       step, (void *)p, g, i, md.grans[i]);
			if (!want) {
				int o = model_owner(&md, p);

				g = (int)((p - md.va[o]) / GRAN);
				md.h[o][g] = h;
				md.live[md.nlive][0] = o;
				md.live[md.nlive][1] = g;
				md.nlive++;
				md.mapped += GRAN;
			}
		}
		ASSERT_EQ(md.mapped, um__sim_mapped_bytes(be));
		ASSERT_EQ(warn, self->log.warn);
	}
	/*
	 * ranges mapped and unmapped again merge back with their neighbours:
	 * what stays apart is cut by the holes released ones left
	 */
	EXPECT_GT(maps + released + MODEL_RESV / 10, process_mappings());
	/* a mapping straddling a reservation's end, an interior release */
	ASSERT_EQ(-EINVAL, ops->phys_map(be, 0, md.va[0] + (md.grans[0] - 1) *
					 GRAN, 2 * GRAN, &md.h[0][0]));
	ops->va_release(be, md.va[0] + GRAN, GRAN);
	EXPECT_EQ(warn + 1, self->log.warn);
	for (int i = 0; i < MODEL_RESV; i++)
		ops->va_release(be, md.va[i], md.grans[i] * GRAN);
	EXPECT_EQ(0, um__sim_mapped_bytes(be));
}

TEST_F(sim, destroy_runs_pending_work)
{
	struct um_backend *be = &self->be;
	struct um_queue *q2;
	char a[512], b[512];

	memset(a, 9, sizeof(a));
	memset(b, 0, sizeof(b));
	ASSERT_EQ(0, ops->queue_create(be, 0, &q2));
	ASSERT_EQ(0, um__sim_hold(be, true));
	ASSERT_EQ(0, ops->copy(be, q2, b, a, sizeof(a)));
	ops->queue_destroy(be, q2);	/* held, yet it drains first */
	EXPECT_EQ(9, b[511]);
	ASSERT_EQ(0, um__sim_hold(be, false));
}

TEST_HARNESS_MAIN
