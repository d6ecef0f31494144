/* SPDX-License-Identifier: MIT */
/*
 * entry.c - the way into and out of every public call.
 *
 * Every public call goes through um__enter() (validate the pointer, lock,
 * reap finished migrations) and um__exit() (unlock, then deliver the events
 * queued meanwhile, so callbacks run with no lock held).
 *
 * A context pointer is checked against a registry of live contexts before
 * it is dereferenced, so a destroyed or foreign pointer gives -EBADF rather
 * than undefined behaviour (destroying a context while another thread still
 * uses it remains the caller's bug). context.c adds and removes contexts.
 *
 * fork(): a child gets a copy of every context but none of the threads
 * that drive them (pressure loop, backend queues) and maybe a copy of a
 * lock some parent thread held. Its contexts are inert: every call is
 * -ECHILD before any lock of the context is touched, and destroy only
 * forgets them (context.c). The registry lock is held across fork() by an
 * atfork handler, so the child's copy of it is consistent and free.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* ---- registry of live contexts ---------------------------------------- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct um__ptrset reg;
static uint16_t reg_serial;
/* bumped on every add/del, so a thread's cached answer can be trusted */
static _Atomic uint64_t reg_gen = 1;
/* bumped in the child at every fork(): contexts of an older one are copies */
static _Atomic uint32_t fork_gen;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
	pthread_mutex_lock(&reg_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&reg_lock);
}

static void fork_child(void)
{
	atomic_fetch_add(&fork_gen, 1);
	atomic_fetch_add(&reg_gen, 1);	/* no cached check survives */
	pthread_mutex_unlock(&reg_lock);
}

static void atfork_install(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* ctx was created before this process was forked from its creator. */
static bool um__inherited(const struct um_context *ctx)
{
	return ctx->fork_gen != atomic_load(&fork_gen);
}

static bool reg_has(const struct um_context *ctx)
{
	bool found;

	pthread_mutex_lock(&reg_lock);
	found = um__ptrset_has(&reg, ctx);
	pthread_mutex_unlock(&reg_lock);
	return found;
}

int um__registry_add(struct um_context *ctx)
{
	int ret = 0;

	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&reg_lock);
	ret = um__ptrset_add(&reg, ctx);
	if (ret)
		goto out;
	ctx->fork_gen = atomic_load(&fork_gen);
	ctx->creator_pid = getpid();
	if (++reg_serial == 0)
		reg_serial = 1;
	ctx->serial = reg_serial;
out:
	atomic_fetch_add(&reg_gen, 1);
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

void um__registry_del(struct um_context *ctx)
{
	pthread_mutex_lock(&reg_lock);
	um__ptrset_del(&reg, ctx);
	atomic_fetch_add(&reg_gen, 1);
	pthread_mutex_unlock(&reg_lock);
}

/* ---- entry / exit ----------------------------------------------------- */

/*
 * ECHILD's own text, "No child processes", misleads: the first call on an
 * inherited context names what happened, once per context.
 */
static int refuse_inherited(const struct um_context *ctx)
{
	struct um_context *copy = (struct um_context *)ctx; /* the child's own */

	if (!atomic_exchange(&copy->fork_told, true))
		um__log(copy, UM_LOG_ERR,
			"fork: context created by pid %d used in pid %d, a child of fork(): its threads and device are not here; create a context in the child",
			(int)ctx->creator_pid, (int)getpid());
	return -ECHILD;
}

/* um__enter_const() without the ERR line: destroy in a child is right. */
int um__enter_destroy(const struct um_context *ctx)
{
	if (!ctx)
		return -EINVAL;
	if (!reg_has(ctx) || ctx->magic != UM_CTX_MAGIC)
		return -EBADF;
	return um__inherited(ctx) ? -ECHILD : 0;
}

int um__enter_const(const struct um_context *ctx)
{
	int ret = um__enter_destroy(ctx);

	return ret == -ECHILD ? refuse_inherited(ctx) : ret;
}

/*
 * Hot calls (um_host_alloc/free) skip the registry lock when this thread
 * already checked ctx and no context was created or destroyed since.
 */
int um__check_fast(const struct um_context *ctx)
{
	static UM_TLS const struct um_context *seen;
	static UM_TLS uint64_t seen_gen;
	uint64_t gen = atomic_load_explicit(&reg_gen, memory_order_acquire);
	int ret;

	if (ctx && ctx == seen && gen == seen_gen)
		return 0;
	ret = um__enter_const(ctx);
	if (!ret) {
		seen = ctx;
		seen_gen = gen;
	}
	return ret;
}

int um__enter(struct um_context *ctx)
{
	int ret = um__enter_const(ctx);

	if (ret)
		return ret;
	pthread_mutex_lock(&ctx->lock);
	um__reap(ctx);
	return 0;
}

void um__exit(struct um_context *ctx)
{
	struct um_event *q = ctx->evq;
	uint32_t n = ctx->evq_n;
	um_event_fn fn = ctx->ev_fn;
	void *arg = ctx->ev_arg;

	ctx->evq = NULL;
	ctx->evq_n = 0;
	ctx->evq_cap = 0;
	/* any call may have made room (room.c): waiters look again */
	if (ctx->room_waiters)
		pthread_cond_broadcast(&ctx->room);
	pthread_mutex_unlock(&ctx->lock);
	for (uint32_t i = 0; fn && i < n; i++)
		fn(arg, &q[i]);
	free(q);
}
