// SPDX-License-Identifier: MIT
/*
 * pool_cache.c - per-thread caches: binding, refills, flushes, figures.
 * The lock-free fast paths that use them are in pool.c.
 *
 * Once a process has a second thread (the sim's queues, CUDA's own), every
 * locked instruction counts: on the dev VM a glibc mutex pair costs ~40 ns
 * against ~6 ns for a whole malloc+free. So a thread keeps, per size class,
 * up to TC_MAX slots it hands out and takes back with no lock and no atomic
 * read-modify-write, plus the last large block (<= TC_LARGE_MAX) it freed.
 * A cached slot or block is "in use" for its heap, so nobody else can hand
 * it out.
 *
 * A cache is bound to one pool and one heap (the first it serves); other
 * pools and heaps take the locked path. Freeing into the cache looks the
 * pointer up lock-free (see pool_internal.h) and checks it: a pointer the
 * pool never handed out, or one already in this thread's cache, is -EINVAL.
 * Not caught: a block freed by two different threads while the first
 * copy still waits in the other thread's cache.
 *
 * Figures: each cache keeps, with stores only its owner makes, the
 * requested bytes and alloc/free counts of its fast-path operations; the
 * heap counts cached slots and blocks as used. um__pool_stats adds them up
 * under the lock, reading the caches with relaxed loads.
 *
 * Trim bumps pool->gen; a cache flushes itself at its next call. A thread
 * that never calls again keeps its cache until it exits (a thread-exit
 * destructor flushes it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pool_internal.h"

#define class_size um__pool_class_size

UM_TLS struct tcache *um__pool_tc;

static pthread_key_t tc_key;
static pthread_once_t tc_once = PTHREAD_ONCE_INIT;
static bool tc_key_ok;

#define TC_SET(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* Give the oldest n entries of bin k back to their slabs. Under the lock. */
static void bin_flush(struct um_pool *pool, struct tc_bin *b, uint32_t n)
{
	uint32_t keep = b->n - n;

	for (uint32_t i = 0; i < n; i++)
		um__pool_slot_put(pool, b->s[i], b->idx[i]);
	memmove(b->p, b->p + n, keep * sizeof(b->p[0]));
	memmove(b->s, b->s + n, keep * sizeof(b->s[0]));
	memmove(b->idx, b->idx + n, keep * sizeof(b->idx[0]));
	TC_SET(b->n, keep);
}

/* Under the lock: the kept large block goes back to its heap. */
static void large_flush(struct um_pool *pool, struct tcache *tc)
{
	struct span *s = tc->large_s;

	if (!tc->large_p)
		return;
	/* the heap frees it for real; the cache's figures undo the free */
	TC_SET(tc->req_delta, tc->req_delta + (int64_t)s->requested);
	TC_SET(tc->frees, tc->frees - 1);
	um__pool_block_free(pool, s, 0);
	tc->large_p = NULL;
	tc->large_s = NULL;
	TC_SET(tc->large_bytes, 0);
}

/* Under the lock. */
static void tc_flush_all(struct um_pool *pool, struct tcache *tc)
{
	for (unsigned int k = 0; k < NCLASSES; k++)
		if (tc->bin[k].n)
			bin_flush(pool, &tc->bin[k], tc->bin[k].n);
	large_flush(pool, tc);
	tc->gen = pool->gen;
}

/* Under the lock: flush, fold the figures into the heap, unlink. */
static void tc_unbind(struct um_pool *pool, struct tcache *tc)
{
	struct heap *h = &pool->heaps[tc->hi];

	tc_flush_all(pool, tc);
	h->st.requested += (uint64_t)tc->req_delta;
	h->st.blocks += tc->allocs - tc->frees;
	h->st.allocs += tc->allocs;
	h->st.frees += tc->frees;
	tc->req_delta = 0;
	tc->allocs = tc->frees = 0;
	if (tc->prev)
		tc->prev->next = tc->next;
	else
		pool->tcaches = tc->next;
	if (tc->next)
		tc->next->prev = tc->prev;
	tc->next = tc->prev = NULL;
	TC_SET(tc->pool, NULL);
}

/*
 * Thread exit. A pool destroyed while one of its threads exits is a
 * caller bug we cannot catch (destroy orphans every cache under the lock;
 * before that, no thread may be using the pool).
 */
static void tc_thread_exit(void *arg)
{
	struct tcache *tc = arg;
	struct um_pool *pool = tc->pool;

	if (pool) {
		pool_lock(pool);
		if (tc->pool == pool)
			tc_unbind(pool, tc);
		pool_unlock(pool);
	}
	um__pool_tc = NULL;
	free(tc);
}

static void tc_key_init(void)
{
	tc_key_ok = !pthread_key_create(&tc_key, tc_thread_exit);
}

static struct tcache *tc_new(void)
{
	struct tcache *tc;

	pthread_once(&tc_once, tc_key_init);
	if (!tc_key_ok)
		return NULL;
	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return NULL;
	if (pthread_setspecific(tc_key, tc)) {
		free(tc);
		return NULL;
	}
	um__pool_tc = tc;
	return tc;
}

struct tcache *um__pool_tc_slow(struct um_pool *pool, int hi, bool bind)
{
	struct tcache *tc = um__pool_tc;

	if (!tc) {
		if (!bind)
			return NULL;
		tc = tc_new();
		if (!tc)
			return NULL;
	}
	if (tc->pool == pool) {
		if (tc->hi != hi)
			return NULL;
		pool_lock(pool);
		if (tc->gen != pool->gen)
			tc_flush_all(pool, tc);
		pool_unlock(pool);
		return tc;
	}
	if (tc->pool || !bind)
		return NULL;
	memset(tc->bin, 0, sizeof(tc->bin));
	pool_lock(pool);
	tc->pool = pool;
	tc->hi = hi;
	tc->gen = pool->gen;
	tc->prev = NULL;
	tc->next = pool->tcaches;
	if (tc->next)
		tc->next->prev = tc;
	pool->tcaches = tc;
	pool_unlock(pool);
	return tc;
}

int um__pool_tc_refill(struct um_pool *pool, struct tcache *tc,
		       unsigned int k)
{
	struct heap *h = &pool->heaps[tc->hi];
	struct tc_bin *b = &tc->bin[k];
	uint32_t n = b->n;
	int ret = 0;

	pool_lock(pool);
	while (n < TC_BATCH) {
		ret = um__pool_slot_take(pool, h, k, &b->s[n], &b->idx[n],
					 &b->p[n]);
		if (ret)
			break;
		n++;
	}
	pool_unlock(pool);
	TC_SET(b->n, n);
	return n ? 0 : ret;
}

void um__pool_tc_trim_bin(struct um_pool *pool, struct tcache *tc,
			  unsigned int k)
{
	pool_lock(pool);
	bin_flush(pool, &tc->bin[k], TC_BATCH);
	pool_unlock(pool);
}

void um__pool_tc_drop_large(struct um_pool *pool, struct tcache *tc)
{
	pool_lock(pool);
	large_flush(pool, tc);
	pool_unlock(pool);
}

bool um__pool_tc_give_back(struct um_pool *pool)
{
	struct tcache *tc = um__pool_tc;
	bool any = false;

	if (!tc || tc->pool != pool)
		return false;
	pool_lock(pool);
	if (tc->pool == pool) {
		any = tc->large_p != NULL;
		for (unsigned int k = 0; k < NCLASSES && !any; k++)
			any = tc->bin[k].n != 0;
		tc_flush_all(pool, tc);
	}
	pool_unlock(pool);
	return any;
}

void um__pool_cache_flush_self(struct um_pool *pool)
{
	struct tcache *tc = um__pool_tc;

	if (tc && tc->pool == pool)
		tc_flush_all(pool, tc);
}

bool um__pool_cache_holds(struct um_pool *pool, const void *p)
{
	struct tcache *tc = um__pool_tc;

	if (!tc || tc->pool != pool)
		return false;
	if (tc->large_p == p)
		return true;
	for (unsigned int k = 0; k < NCLASSES; k++)
		for (uint32_t j = 0; j < tc->bin[k].n; j++)
			if (tc->bin[k].p[j] == p)
				return true;
	return false;
}

void um__pool_cache_stats(struct um_pool *pool, int first, int last,
			  struct um_pool_stats *st)
{
	for (struct tcache *tc = pool->tcaches; tc; tc = tc->next) {
		uint64_t allocs = LOAD(tc->allocs), frees = LOAD(tc->frees);

		if (tc->hi < first || tc->hi > last)
			continue;
		for (unsigned int k = 0; k < NCLASSES; k++)
			st->used -= (uint64_t)LOAD(tc->bin[k].n) *
				    class_size[k];
		st->used -= LOAD(tc->large_bytes);
		st->requested += (uint64_t)LOAD(tc->req_delta);
		st->blocks += allocs - frees;
		st->allocs += allocs;
		st->frees += frees;
	}
}

int64_t um__pool_cache_orphan_all(struct um_pool *pool)
{
	int64_t blocks = 0;

	while (pool->tcaches) {
		struct tcache *tc = pool->tcaches;

		/* a kept large block counts as freed already */
		blocks += (int64_t)(tc->allocs - tc->frees);
		pool->tcaches = tc->next;
		memset(tc->bin, 0, sizeof(tc->bin));
		tc->large_p = NULL;
		tc->large_s = NULL;
		tc->large_bytes = 0;
		tc->req_delta = 0;
		tc->allocs = tc->frees = 0;
		tc->next = tc->prev = NULL;
		TC_SET(tc->pool, NULL);
	}
	return blocks;
}
