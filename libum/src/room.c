/* SPDX-License-Identifier: MIT */
/*
 * room.c - waiting for room on a device, for um_acquire_timeout().
 *
 * A waiter sleeps on ctx->room with the context lock dropped; um__exit()
 * wakes every waiter after any public call, since a release, a free, a
 * budget change or a reaped eviction may have made room (a waiter that
 * finds none sleeps again). Waiting is refused up front when it could
 * never end: when every region holding the device's budget is held by the
 * caller's own thread or by threads that wait here too (-EDEADLK, like a
 * lock's deadlock check: the thread that would close the cycle is told).
 * A region acquired by more than one thread counts as one that may be
 * released.
 */
#include <errno.h>
#include <time.h>

#include "internal.h"

int um__room_init(struct um_context *ctx)
{
	pthread_condattr_t attr;
	int ret;

	ret = pthread_condattr_init(&attr);
	if (ret)
		return -ret;
	ret = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	if (!ret)
		ret = pthread_cond_init(&ctx->room, &attr);
	pthread_condattr_destroy(&attr);
	if (ret)
		return -ret;
	ctx->room_ready = true;
	return 0;
}

void um__room_fini(struct um_context *ctx)
{
	if (ctx->room_ready)
		pthread_cond_destroy(&ctx->room);
	ctx->room_ready = false;
}

void um__room_hold(struct um_region *r)
{
	pthread_t self = pthread_self();

	if (!r->acquired) {
		r->holder = self;
		r->held_by_many = false;
	} else if (!pthread_equal(r->holder, self)) {
		r->held_by_many = true;
	}
}

static bool is_waiting(const struct um_context *ctx, pthread_t t)
{
	for (const struct um_room_waiter *w = ctx->room_waiters; w; w = w->next)
		if (pthread_equal(w->thread, t))
			return true;
	return false;
}

/* No holder of dev's budget could release while the caller waits. */
static bool wait_is_endless(const struct um_context *ctx, uint32_t dev)
{
	pthread_t self = pthread_self();

	for (const struct um_region *r = ctx->regions.next;
	     r != &ctx->regions; r = r->next) {
		if (r->device != dev || !r->counted || !r->acquired)
			continue;
		if (r->held_by_many)
			return false;
		if (!pthread_equal(r->holder, self) &&
		    !is_waiting(ctx, r->holder))
			return false;
	}
	return true;
}

void um__room_deadline(uint64_t timeout_ns, struct timespec *deadline)
{
	clock_gettime(CLOCK_MONOTONIC, deadline);
	deadline->tv_sec += (time_t)(timeout_ns / 1000000000u);
	deadline->tv_nsec += (long)(timeout_ns % 1000000000u);
	if (deadline->tv_nsec >= 1000000000L) {
		deadline->tv_sec++;
		deadline->tv_nsec -= 1000000000L;
	}
}

static bool passed(const struct timespec *deadline)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > deadline->tv_sec ||
	       (now.tv_sec == deadline->tv_sec &&
		now.tv_nsec >= deadline->tv_nsec);
}

int um__room_wait(struct um_context *ctx, const struct um_region *r,
		  const struct timespec *deadline)
{
	struct um_room_waiter me = { .thread = pthread_self() };
	struct um_room_waiter **p;

	if (deadline && passed(deadline))
		return -ETIMEDOUT;
	if (wait_is_endless(ctx, r->device))
		return -EDEADLK;
	me.next = ctx->room_waiters;
	ctx->room_waiters = &me;
	if (deadline)
		pthread_cond_timedwait(&ctx->room, &ctx->lock, deadline);
	else
		pthread_cond_wait(&ctx->room, &ctx->lock);
	for (p = &ctx->room_waiters; *p != &me; p = &(*p)->next)
		;
	*p = me.next;
	um__reap(ctx);
	return 0;
}
