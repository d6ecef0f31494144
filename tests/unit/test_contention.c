/* SPDX-License-Identifier: MIT */
/*
 * Description: um_acquire_timeout(), waiting for room on the device instead
 * of -ENOMEM while other threads hold the budget. Eight
 * threads share a budget of three regions: with the waiting call none of
 * them sees an error and the books never go above the budget (the same
 * load with um_acquire is measured beside it: its -ENOMEM count is
 * printed). What can never be met returns at once: a region larger than
 * the budget (-ENOMEM), a budget held by the caller itself or by threads
 * that all wait too (-EDEADLK); a wait past its timeout is -ETIMEDOUT; a
 * budget raised by another thread wakes the waiter.
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define THREADS 8
#define OWN 2
#define SZ (2 * MiB)	/* the sim's granularity */
#define ROUNDS 150
#define BUDGET (3 * SZ)

TEST_TIMEOUT_SET(eight_threads_wait_for_room, 120);

struct crowd {
	struct um_context *ctx;
	int waiting;		/* use um_acquire_timeout, else um_acquire */
	int enomem;		/* atomic: -ENOMEM seen */
	int other;		/* atomic: any other failure */
	int over;		/* atomic: books above the budget */
};

struct member {
	struct crowd *c;
	int id;
};

static void *crowd_member(void *arg)
{
	struct member *m = arg;
	struct crowd *c = m->c;
	um_region_t own[OWN];
	uint64_t seed[OWN] = { 0 };

	for (int i = 0; i < OWN; i++)
		own[i] = region(c->ctx, UM_KIND_GENERIC, 0, SZ, "own");
	for (int n = 0; n < ROUNDS; n++) {
		int i = n % OWN, ret;
		void *p;

		ret = c->waiting ?
		      um_acquire_timeout(c->ctx, own[i], UM_TIER_GPU(0), NULL,
					 UM_WAIT_FOREVER) :
		      um_acquire(c->ctx, own[i], UM_TIER_GPU(0), NULL);
		if (dev_current(c->ctx) > BUDGET)
			__atomic_add_fetch(&c->over, 1, __ATOMIC_RELAXED);
		if (ret) {
			__atomic_add_fetch(ret == -ENOMEM ? &c->enomem :
					   &c->other, 1, __ATOMIC_RELAXED);
			continue;
		}
		um_ptr(c->ctx, own[i], &p);
		if (seed[i] && pattern_check(p, SZ, seed[i]) >= 0)
			__atomic_add_fetch(&c->other, 1, __ATOMIC_RELAXED);
		seed[i] = ((uint64_t)m->id << 32) | (uint64_t)(n + 1);
		pattern_fill(p, SZ, seed[i]);
		if (um_release(c->ctx, own[i]))
			__atomic_add_fetch(&c->other, 1, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < OWN; i++)
		if (um_free(c->ctx, own[i]))
			__atomic_add_fetch(&c->other, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void crowd_run(struct crowd *c)
{
	struct member m[THREADS];
	pthread_t t[THREADS];

	for (int i = 0; i < THREADS; i++) {
		m[i] = (struct member){ .c = c, .id = i };
		if (pthread_create(&t[i], NULL, crowd_member, &m[i]))
			__atomic_add_fetch(&c->other, 1000, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
}

TEST(eight_threads_wait_for_room)
{
	struct crowd plain = { .ctx = ctx_sim(BUDGET, 64 * MiB) };
	struct crowd waiting = { .ctx = ctx_sim(BUDGET, 64 * MiB),
				 .waiting = 1 };

	ASSERT_NONNULL(plain.ctx);
	ASSERT_NONNULL(waiting.ctx);
	crowd_run(&plain);
	crowd_run(&waiting);
	TH_LOG("%d threads, %d acquires each, budget of 3 regions: um_acquire -ENOMEM %d, um_acquire_timeout -ENOMEM %d",
	       THREADS, ROUNDS, plain.enomem, waiting.enomem);
	EXPECT_EQ(0, plain.other);
	EXPECT_EQ(0, plain.over);
	EXPECT_EQ(0, waiting.enomem);
	EXPECT_EQ(0, waiting.other);
	EXPECT_EQ(0, waiting.over);
	EXPECT_EQ(0, dev_current(waiting.ctx));
	ASSERT_EQ(0, um_context_destroy(plain.ctx));
	ASSERT_EQ(0, um_context_destroy(waiting.ctx));
}

TEST(never_satisfiable_returns_at_once)
{
	struct um_context *ctx = ctx_sim(BUDGET, 64 * MiB);
	um_region_t big, a, b;

	ASSERT_NONNULL(ctx);
	big = region(ctx, UM_KIND_GENERIC, 0, BUDGET + SZ, "big");
	a = region(ctx, UM_KIND_GENERIC, 0, BUDGET, "a");
	b = region(ctx, UM_KIND_GENERIC, 0, SZ, "b");
	logcap_reset();
	EXPECT_EQ(-ENOMEM, um_acquire_timeout(ctx, big, UM_TIER_GPU(0), NULL,
					      UM_WAIT_FOREVER));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "\"big\"", "larger than the budget",
			       NULL));
	/* the caller holds the whole budget: only it could release */
	ASSERT_EQ(0, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	logcap_reset();
	EXPECT_EQ(-EDEADLK, um_acquire_timeout(ctx, b, UM_TIER_GPU(0), NULL,
					       UM_WAIT_FOREVER));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "\"b\"", "waiting would never end",
			       NULL));
	EXPECT_EQ(BUDGET, dev_current(ctx));
	ASSERT_EQ(0, um_release(ctx, a));
	EXPECT_EQ(0, um_acquire_timeout(ctx, b, UM_TIER_GPU(0), NULL,
					UM_WAIT_FOREVER));
	EXPECT_TRUE(on_gpu(ctx, b));
	EXPECT_GE(BUDGET, dev_current(ctx));
	ASSERT_EQ(0, um_release(ctx, b));
	ASSERT_EQ(0, um_free(ctx, big));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_free(ctx, b));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* Two threads each hold half the budget and each wait for more. */
struct pair {
	struct um_context *ctx;
	pthread_barrier_t both_hold;
	um_region_t hold[2], want[2];
	int ret[2];
};

struct pair_arg {
	struct pair *p;
	int i;
};

static void *pair_member(void *arg)
{
	struct pair_arg *a = arg;
	struct pair *p = a->p;
	int i = a->i;

	p->ret[i] = um_acquire(p->ctx, p->hold[i], UM_TIER_GPU(0), NULL);
	pthread_barrier_wait(&p->both_hold);
	if (p->ret[i])
		return NULL;
	p->ret[i] = um_acquire_timeout(p->ctx, p->want[i], UM_TIER_GPU(0),
				       NULL, UM_WAIT_FOREVER);
	/* the one told -EDEADLK lets go, so the other one gets its room */
	um_release(p->ctx, p->hold[i]);
	if (!p->ret[i])
		um_release(p->ctx, p->want[i]);
	return NULL;
}

TEST(holders_all_waiting_is_edeadlk)
{
	struct pair p = { .ctx = ctx_sim(2 * SZ, 64 * MiB) };
	struct pair_arg a[2];
	pthread_t t[2];

	ASSERT_NONNULL(p.ctx);
	ASSERT_EQ(0, pthread_barrier_init(&p.both_hold, NULL, 2));
	for (int i = 0; i < 2; i++) {
		p.hold[i] = region(p.ctx, UM_KIND_GENERIC, 0, SZ, "hold");
		p.want[i] = region(p.ctx, UM_KIND_GENERIC, 0, SZ, "want");
		a[i] = (struct pair_arg){ .p = &p, .i = i };
	}
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&t[i], NULL, pair_member, &a[i]));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* exactly one closed the cycle; the other one waited and got room */
	EXPECT_EQ(-EDEADLK, p.ret[0] + p.ret[1]);
	EXPECT_TRUE(p.ret[0] == 0 || p.ret[1] == 0);
	pthread_barrier_destroy(&p.both_hold);
	EXPECT_EQ(0, dev_current(p.ctx) > 2 * SZ);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, um_free(p.ctx, p.hold[i]));
		ASSERT_EQ(0, um_free(p.ctx, p.want[i]));
	}
	ASSERT_EQ(0, um_context_destroy(p.ctx));
}

/* A thread that holds the budget and is busy elsewhere. */
struct holder {
	struct um_context *ctx;
	um_region_t r;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int state;		/* 1 holding, 2 let go */
	int ret;
};

static void holder_set(struct holder *h, int state)
{
	pthread_mutex_lock(&h->mu);
	h->state = state;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void holder_until(struct holder *h, int state)
{
	pthread_mutex_lock(&h->mu);
	while (h->state < state)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
}

static void *hold_until_told(void *arg)
{
	struct holder *h = arg;

	h->ret = um_acquire(h->ctx, h->r, UM_TIER_GPU(0), NULL);
	holder_set(h, 1);
	holder_until(h, 2);
	if (!h->ret)
		h->ret = um_release(h->ctx, h->r);
	return NULL;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST(timeout_then_release)
{
	struct holder h = { .ctx = ctx_sim(BUDGET, 64 * MiB),
			    .mu = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER };
	uint64_t t0, waited;
	um_region_t b;
	pthread_t t;

	ASSERT_NONNULL(h.ctx);
	h.r = region(h.ctx, UM_KIND_GENERIC, 0, BUDGET, "held");
	b = region(h.ctx, UM_KIND_GENERIC, 0, SZ, "b");
	ASSERT_EQ(0, pthread_create(&t, NULL, hold_until_told, &h));
	holder_until(&h, 1);
	ASSERT_EQ(0, h.ret);
	/* 0 is um_acquire: no waiting */
	EXPECT_EQ(-ENOMEM, um_acquire_timeout(h.ctx, b, UM_TIER_GPU(0), NULL, 0));
	logcap_reset();
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, um_acquire_timeout(h.ctx, b, UM_TIER_GPU(0), NULL,
						 50 * 1000 * 1000));
	waited = now_ns() - t0;
	EXPECT_LE(50ull * 1000 * 1000, waited);
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "\"b\"", "timeout", NULL))
		TH_LOG("a timeout is an expected refusal: info, not error");
	EXPECT_FALSE(logcap_has(UM_LOG_ERR, "\"b\"", "timeout", NULL));
	EXPECT_FALSE(on_gpu(h.ctx, b));
	holder_set(&h, 2);
	/* the release wakes the waiter */
	EXPECT_EQ(0, um_acquire_timeout(h.ctx, b, UM_TIER_GPU(0), NULL,
					UM_WAIT_FOREVER));
	pthread_join(t, NULL);
	EXPECT_EQ(0, h.ret);
	EXPECT_GE(BUDGET, dev_current(h.ctx));
	ASSERT_EQ(0, um_release(h.ctx, b));
	ASSERT_EQ(0, um_free(h.ctx, h.r));
	ASSERT_EQ(0, um_free(h.ctx, b));
	ASSERT_EQ(0, um_context_destroy(h.ctx));
}

/* A waiter woken by a budget raised from another thread. */
struct raiser {
	struct um_context *ctx;
	um_region_t r;
	int ret;
};

static void *wait_for_b(void *arg)
{
	struct raiser *w = arg;

	w->ret = um_acquire_timeout(w->ctx, w->r, UM_TIER_GPU(0), NULL,
				    UM_WAIT_FOREVER);
	if (!w->ret)
		w->ret = um_release(w->ctx, w->r);
	return NULL;
}

TEST(budget_raise_wakes_waiter)
{
	struct raiser w = { .ctx = ctx_sim(BUDGET, 64 * MiB) };
	um_region_t a;
	pthread_t t;

	ASSERT_NONNULL(w.ctx);
	a = region(w.ctx, UM_KIND_GENERIC, 0, BUDGET, "a");
	w.r = region(w.ctx, UM_KIND_GENERIC, 0, SZ, "b");
	ASSERT_EQ(0, um_acquire(w.ctx, a, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, pthread_create(&t, NULL, wait_for_b, &w));
	/* whether the waiter sleeps yet or not, it finds room */
	usleep(20 * 1000);
	ASSERT_EQ(0, um_budget_set(w.ctx, 0, BUDGET + SZ));
	pthread_join(t, NULL);
	EXPECT_EQ(0, w.ret);
	ASSERT_EQ(0, um_release(w.ctx, a));
	ASSERT_EQ(0, um_free(w.ctx, a));
	ASSERT_EQ(0, um_free(w.ctx, w.r));
	ASSERT_EQ(0, um_context_destroy(w.ctx));
}

TEST(bad_arguments)
{
	struct um_context *ctx = ctx_sim(BUDGET, 64 * MiB);
	um_region_t r;

	ASSERT_NONNULL(ctx);
	r = region(ctx, UM_KIND_GENERIC, 0, SZ, "r");
	EXPECT_EQ(-EINVAL, um_acquire_timeout(NULL, r, UM_TIER_GPU(0), NULL, 1));
	EXPECT_EQ(-EINVAL, um_acquire_timeout(ctx, 0, UM_TIER_GPU(0), NULL, 1));
	EXPECT_EQ(-ENOENT, um_acquire_timeout(ctx, r + 1, UM_TIER_GPU(0), NULL,
					      1));
	EXPECT_EQ(-EINVAL, um_acquire_timeout(ctx, r, UM_TIER_GPU(1), NULL, 1));
	EXPECT_EQ(-EINVAL, um_acquire_timeout(ctx, r, UM_TIER_DISK, NULL, 1));
	/* the host tier: as um_acquire */
	EXPECT_EQ(0, um_acquire_timeout(ctx, r, UM_TIER_HOST_ANY, NULL,
					UM_WAIT_FOREVER));
	EXPECT_EQ(-EBUSY, um_acquire_timeout(ctx, r, UM_TIER_GPU(0), NULL, 1));
	ASSERT_EQ(0, um_release(ctx, r));
	ASSERT_EQ(0, um_free(ctx, r));
	EXPECT_EQ(-ENOENT, um_acquire_timeout(ctx, r, UM_TIER_GPU(0), NULL, 1));
	ASSERT_EQ(0, um_context_destroy(ctx));
	EXPECT_EQ(-EBADF, um_acquire_timeout(ctx, r, UM_TIER_GPU(0), NULL, 1));
}

TEST_HARNESS_MAIN
