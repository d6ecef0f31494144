/* SPDX-License-Identifier: MIT */
/*
 * refill.c - pinned host memory for evictions, never pinned under the
 * context lock.
 *
 * Every eviction to the host needs a pool block, and growing the pool pins
 * memory (cudaHostAlloc: 1-2 s per 2 GiB on the H200; the sim's mlock
 * zeroes pages). Under the context lock that would stall every libum call
 * of the process. Two parts keep it off:
 *
 *   - the refill thread keeps the pool ahead of need: a watermark of free
 *     bytes that follows what the regions on the devices would need if
 *     evicted (see refill_want()), grown a chunk at a time with no lock of
 *     the API held. It holds off after a trim (pressure gives host memory
 *     back; pinning it again at once would undo that) and after the host
 *     refused (no retry at every call), and refills only
 *     once the pool fell a quarter below the mark (hysteresis);
 *   - the fallback: under the context lock a host copy is only taken from
 *     what the pool holds (UM_POOL_NOGROW). When that is short,
 *     um__host_block() notes the need and the operation unwinds with
 *     UM__POOL_SHORT; the public entry point then grows the pool with the
 *     lock dropped (um__pool_short_grow()), takes it again and starts the
 *     operation over, so nothing is half done and no byte is lost.
 *
 * Lock order: ctx->lock, then refill.mu (kicks). The thread takes refill.mu
 * and ctx->lock never together, and calls the pool with neither.
 *
 * fork(): the child has no refill thread; its contexts are inert (-ECHILD)
 * and destroying one only forgets it (context.c), so nothing waits for the
 * thread there.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "um_numa.h"
#include "util.h"

/* No refill for this long after a trim gave host memory back, or after
 * the host refused to pin more. */
#define REFILL_HOLDOFF_NS	(5ull * 1000000000u)
/* Look again at least this often without a kick (regions come and go). */
#define REFILL_POLL_NS		(1000000000ull)
/* and at most this often, however often kicked */
#define REFILL_GAP_NS		(20000000ull)
/* Grow-and-retry rounds of one public call before it gives up. */
#define SHORT_RETRIES		8

/*
 * The watermark, under ctx->lock. One eviction round of an acquire evicts
 * victims until the newcomer (at most the largest region) fits; the last
 * victim may overshoot by up to a region: 2x the largest region covers it,
 * and never more than every region on the devices would need. Larger
 * sheds and budget cuts take the fallback.
 */
static void refill_want(struct um_context *ctx, uint64_t *free_b,
			uint64_t *span)
{
	uint64_t total, largest;

	um__hostneed_figures(ctx, &total, &largest);
	*span = largest;
	*free_b = total < 2 * largest ? total : 2 * largest;
}

/* Below the mark by more than a quarter, or no span for the largest. */
static bool refill_due(struct um_pool *pool, int node, uint64_t free_b,
		       uint64_t span)
{
	struct um_pool_stats st;

	if (!free_b || um__pool_stats(pool, node, &st))
		return false;
	return st.largest_free < span || st.free_bytes < free_b - free_b / 4;
}

static void refill_round(struct um_context *ctx)
{
	struct um_refill *rf = &ctx->refill;
	uint64_t free_b, span, trimmed = um__pool_trimmed_at(ctx->pool);
	int node, ret;

	if (trimmed && um__now_ns() - trimmed < REFILL_HOLDOFF_NS)
		return;
	/* the host refused: not again at every kick */
	if (rf->failed_at_ns && um__now_ns() - rf->failed_at_ns < REFILL_HOLDOFF_NS)
		return;
	pthread_mutex_lock(&ctx->lock);
	refill_want(ctx, &free_b, &span);
	node = ctx->home_node;
	pthread_mutex_unlock(&ctx->lock);
	if (!refill_due(ctx->pool, node, free_b, span))
		return;
	ret = um__pool_top_up(ctx->pool, node, free_b, span, trimmed,
			      &rf->stop);
	__atomic_fetch_add(&rf->rounds, 1, __ATOMIC_RELAXED);
	rf->failed_at_ns = ret < 0 ? um__now_ns() : 0;
	if (ret < 0) {
		__atomic_fetch_add(&rf->failures, 1, __ATOMIC_RELAXED);
		um__log(ctx, UM_LOG_DEBUG,
			"pool: refill to %s free failed: %s",
			UM_SIZE(free_b), strerror(-ret));
	}
}

static void *refill_main(void *arg)
{
	struct um_context *ctx = arg;
	struct um_refill *rf = &ctx->refill;
	struct timespec until;

	um__thread_name("um-refill");
	/* a growth's page tables: not to wait on a full bound node */
	(void)um__numa_thread_prefer();
	pthread_mutex_lock(&rf->mu);
	while (!rf->stop) {
		if (!rf->kicked) {
			um__room_deadline(REFILL_POLL_NS, &until);
			pthread_cond_timedwait(&rf->cv, &rf->mu, &until);
		}
		if (rf->stop)
			break;
		rf->kicked = false;
		pthread_mutex_unlock(&rf->mu);
		refill_round(ctx);
		pthread_mutex_lock(&rf->mu);
		um__room_deadline(REFILL_GAP_NS, &until);
		while (!rf->stop &&
		       pthread_cond_timedwait(&rf->cv, &rf->mu, &until) !=
		       ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&rf->mu);
	return NULL;
}

void um__refill_start(struct um_context *ctx)
{
	struct um_refill *rf = &ctx->refill;
	pthread_condattr_t attr;

	if (!ctx->set.pool_refill) {
		um__log(ctx, UM_LOG_DEBUG,
			"pool: LIBUM_POOL_REFILL=0; host copies grow the pool with the context lock dropped");
		return;
	}
	if (pthread_condattr_init(&attr))
		return;
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (pthread_cond_init(&rf->cv, &attr)) {
		pthread_condattr_destroy(&attr);
		return;
	}
	pthread_condattr_destroy(&attr);
	pthread_mutex_init(&rf->mu, NULL);
	rf->stop = false;
	rf->kicked = true;	/* a first look */
	rf->on = !pthread_create(&rf->thread, NULL, refill_main, ctx);
	if (rf->on)
		return;
	pthread_mutex_destroy(&rf->mu);
	pthread_cond_destroy(&rf->cv);
	um__log(ctx, UM_LOG_WARN,
		"pool: no refill thread: the first evictions wait for pinned memory (with the context lock dropped)");
}

void um__refill_stop(struct um_context *ctx)
{
	struct um_refill *rf = &ctx->refill;

	if (!rf->on)
		return;
	pthread_mutex_lock(&rf->mu);
	__atomic_store_n(&rf->stop, true, __ATOMIC_RELEASE);
	pthread_cond_signal(&rf->cv);
	pthread_mutex_unlock(&rf->mu);
	pthread_join(rf->thread, NULL);
	rf->on = false;
	pthread_mutex_destroy(&rf->mu);
	pthread_cond_destroy(&rf->cv);
}

/* Something may have changed what evictions will need: look again. */
static void um__refill_kick(struct um_context *ctx)
{
	struct um_refill *rf = &ctx->refill;

	if (!rf->on)
		return;
	pthread_mutex_lock(&rf->mu);
	if (!rf->kicked) {
		rf->kicked = true;
		pthread_cond_signal(&rf->cv);
	}
	pthread_mutex_unlock(&rf->mu);
}

bool um__pool_short_retry(struct um_context *ctx, int *rounds)
{
	uint64_t bytes = ctx->pool_need_bytes;
	int node = ctx->pool_need_node, ret;

	ctx->pool_need_bytes = 0;
	if (!bytes) {
		ctx->pool_grow_failed = false;
		return false;
	}
	if (++*rounds > SHORT_RETRIES) {
		/* others keep taking what we grow: answer -ENOMEM */
		ctx->pool_grow_failed = true;
		return true;
	}
	pthread_mutex_unlock(&ctx->lock);
	ret = um__pool_reserve(ctx->pool, node, bytes);
	pthread_mutex_lock(&ctx->lock);
	um__reap(ctx);
	if (ret) {
		/* host memory is short: the retry sees -ENOMEM (spill, refuse) */
		ctx->pool_grow_failed = true;
		um__log(ctx, UM_LOG_DEBUG,
			"pool: cannot grow by %s on node %d: %s",
			UM_SIZE(bytes), node, strerror(-ret));
	}
	um__refill_kick(ctx);
	return true;
}

int64_t um__pool_short_end(struct um_context *ctx, int64_t ret)
{
	ctx->pool_need_bytes = 0;
	ctx->pool_grow_failed = false;
	um__refill_kick(ctx);	/* the call may have taken host copies */
	return ret == UM__POOL_SHORT ? -ENOMEM : ret;
}
