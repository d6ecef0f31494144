/* SPDX-License-Identifier: MIT */
/*
 * pool_internal.h - structures shared by pool.c, pool_heap.c and
 * pool_cache.c. Not used outside the pool.
 *
 * Layers, each calling only the one below, so the fast paths never reach
 * the backend and only the heap knows how blocks sit in chunks:
 *
 *   pool.c        um__pool_* API: argument checks, fast path, slow path
 *   pool_cache.c  per-thread caches of small slots (no lock, no atomics)
 *   pool_heap.c   heaps: size-class slabs, TLSF index of free page spans,
 *                 the page map, chunks from be->ops->host_alloc
 *
 * Lock-free readers: the per-thread free path looks a pointer up without the
 * pool lock. That is safe because (1) the page map's second-level arrays
 * and every span struct and slab_meta are only freed at pool destroy, so a
 * racing reader never touches freed memory, and (2) a SLAB span's fields
 * are bracketed by a sequence count (odd while changing): a reader that
 * sees it change, or odd, falls back to the locked path.
 */
#ifndef UM_POOL_INTERNAL_H
#define UM_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "pool.h"
#include "util.h"

#define POOL_PAGE_SHIFT	12
#define SL_BITS		4
#define SL_COUNT	(1u << SL_BITS)
#define FL_COUNT	52
#define POOL_MAX_BYTES	(1ull << 46)	/* refuse larger requests outright */
#define HEAP_COUNT	(UM_POOL_MAX_NODES + 1)
#define SPAN_BATCH	256
#define NCLASSES	27
#define SLAB_MAX_SLOTS	1024

/* Page map: page number (addr >> 12, 35 bits) split 17 + 18. */
#define PM_L2_BITS	18
#define PM_L1_BITS	17
#define PM_L2_SIZE	(1u << PM_L2_BITS)

/* Per-thread cache: slots per class, and how many move per refill/flush. */
#define TC_MAX		16
#define TC_BATCH	8

enum span_state {
	SPAN_UNUSED = 0,	/* on the span-struct free list */
	SPAN_FREE,		/* free pages, in a TLSF list */
	SPAN_LARGE,		/* one block of whole pages */
	SPAN_SLAB,		/* slots of one size class */
};

enum slot_state {
	SLOT_FREE = 0,
	SLOT_LIVE = 1,
	SLOT_CACHED = 2,		/* free, waiting in a thread cache */
	SLOT_LIVE_USER = 3,		/* live, allocated with UM_POOL_USER */
};

static inline uint8_t slot_live(bool user)
{
	return user ? SLOT_LIVE_USER : SLOT_LIVE;
}

struct slab_meta {
	struct slab_meta *next;		/* free list */
	uint64_t bits[SLAB_MAX_SLOTS / 64];	/* slot not free (locked) */
	uint16_t req[SLAB_MAX_SLOTS];	/* bytes asked (<= 32 KiB) */
	/*
	 * enum slot_state. A byte each, so a thread cache can flip its own
	 * slots LIVE <-> CACHED with plain stores while others hold the lock.
	 */
	uint8_t state[SLAB_MAX_SLOTS];
};

struct chunk;

struct span {
	unsigned int seq;	/* SLAB changes: odd while in progress */
	uint8_t state;
	uint8_t klass;		/* SLAB */
	uint8_t user;		/* LARGE: allocated with UM_POOL_USER */
	uint16_t hint;		/* SLAB: first bitmap word with a free bit */
	int hi;			/* heap index */
	struct chunk *chunk;
	char *base;		/* first byte */
	size_t page;		/* first page, within the chunk */
	size_t npages;
	struct span *next, *prev;	/* TLSF list or class partial list */
	uint32_t nslots;	/* SLAB */
	uint32_t nused;		/* SLAB: slots handed out (users + caches) */
	size_t requested;	/* LARGE */
	struct slab_meta *meta;	/* SLAB */
};

struct chunk {
	char *base;
	size_t bytes;
	size_t npages;
	int hi;
	struct chunk *next, *prev;	/* heap's chunk list */
};

struct heap {
	int node;
	uint64_t fl_bitmap;
	uint32_t sl_bitmap[FL_COUNT];
	struct span *free[FL_COUNT][SL_COUNT];
	struct span *partial[NCLASSES];	/* slabs with a free slot */
	uint32_t nempty[NCLASSES];	/* empty slabs kept */
	struct chunk *chunks;
	uint64_t free_pages;		/* in TLSF lists */
	/* used counts slots held by thread caches too; see pool_cache.c */
	struct um_pool_stats st;
};

struct span_batch {
	struct span_batch *next;
	struct span spans[SPAN_BATCH];
};

struct meta_batch {
	struct meta_batch *next;
	struct slab_meta metas[16];
};

struct tc_bin {
	uint32_t n;			/* owner writes, stats read */
	void *p[TC_MAX];
	struct span *s[TC_MAX];
	uint16_t idx[TC_MAX];
};

/* Blocks above UM_POOL_SMALL_MAX up to this may wait in a thread cache. */
#define TC_LARGE_MAX	(32ull << 20)

struct tcache {
	struct um_pool *pool;		/* bound pool; NULL: orphaned */
	int hi;				/* bound heap */
	unsigned int gen;		/* pool->gen when last flushed */
	struct tcache *next, *prev;	/* pool->tcaches, under the lock */
	/*
	 * Figures, written by the owner only, read by stats (relaxed):
	 * requested and blocks (allocs - frees) of fast-path operations.
	 */
	int64_t req_delta;
	uint64_t allocs, frees;
	/* one large block kept back (the last freed), still LARGE */
	void *large_p;
	struct span *large_s;
	size_t large_bytes;
	struct tc_bin bin[NCLASSES];
};

extern UM_TLS struct tcache *um__pool_tc;

struct um_pool {
	struct um_backend *be;
	uint64_t chunk_bytes;
	uint64_t max_bytes;
	int lk;				/* spinlock: everything below */
	unsigned int gen;		/* bumped to make caches flush */
	pthread_mutex_t grow_mu;	/* one grower at a time */
	struct chunk *growing;		/* grow_mu: the chunk being made */
	uint64_t bytes;			/* chunk bytes, all heaps */
	struct span * **pm;		/* page map, PM_L1 entries */
	struct span *spare;		/* free span structs */
	struct span_batch *batches;
	struct slab_meta *spare_meta;
	struct meta_batch *meta_batches;
	struct tcache *tcaches;
	uint64_t trimmed_at_ns;		/* last trim that gave bytes back */
	struct heap heaps[HEAP_COUNT];
};

extern const uint32_t um__pool_class_size[NCLASSES];
extern uint8_t um__pool_class_of_64[65];
/* floor(2^40 / size) + 1: off / size == (off * recip) >> 40, exactly, for
 * off < 2^18 (every slab offset) */
extern uint64_t um__pool_class_recip[NCLASSES];

static inline uint32_t slot_index(size_t off, unsigned int k)
{
	return (uint32_t)((off * um__pool_class_recip[k]) >> 40);
}

#define CLASS_4K 19

static inline unsigned int pool_size_class(size_t bytes)
{
	if (bytes <= 4096)
		return um__pool_class_of_64[(bytes + 63) >> 6];
	return CLASS_4K - 1 + (unsigned int)((bytes + 4095) >> 12);
}

/* ---- lock ------------------------------------------------------------ */

void um__pool_lock_slow(struct um_pool *pool);

/*
 * A test-and-set lock: one atomic exchange to take, a plain release store
 * to drop. Hold times are short and never include a system call (host
 * memory is obtained and freed outside it), and where a process has
 * threads glibc's mutex pays two locked instructions per pair.
 */
static inline void pool_lock(struct um_pool *pool)
{
	if (__atomic_exchange_n(&pool->lk, 1, __ATOMIC_ACQUIRE))
		um__pool_lock_slow(pool);
}

static inline void pool_unlock(struct um_pool *pool)
{
	__atomic_store_n(&pool->lk, 0, __ATOMIC_RELEASE);
}

/* ---- page map ------------------------------------------------------- */

/* Span owning the page of p, possibly stale; NULL if none. No lock. */
static inline struct span *pm_get(const struct um_pool *pool, const void *p)
{
	uintptr_t pn = (uintptr_t)p >> POOL_PAGE_SHIFT;
	struct span **l2;

	if (pn >> (PM_L1_BITS + PM_L2_BITS))
		return NULL;
	l2 = __atomic_load_n(&pool->pm[pn >> PM_L2_BITS], __ATOMIC_ACQUIRE);
	if (!l2)
		return NULL;
	return __atomic_load_n(&l2[pn & (PM_L2_SIZE - 1)], __ATOMIC_RELAXED);
}

/* ---- pool_heap.c: all under the lock unless said otherwise ------------- */

/* Ready the page map for [p, p+len): -ENOMEM. */
int um__pool_pm_prepare(struct um_pool *pool, const char *p, size_t len);
void um__pool_pm_clear(struct um_pool *pool, const char *p, size_t len);

/*
 * Allocate bytes from heap h. -EAGAIN: nothing fits (grow by *npages_out
 * pages, retry); -ENOMEM: no memory for metadata.
 */
int um__pool_heap_alloc(struct um_pool *pool, struct heap *h, size_t bytes,
			bool user, size_t *npages_out, void **out);
/* Take one slot of class k for a thread cache (no requested/blocks). */
int um__pool_slot_take(struct um_pool *pool, struct heap *h, unsigned int k,
		       struct span **sp, uint16_t *idx, void **out);
/* Give back a slot a thread cache held. */
void um__pool_slot_put(struct um_pool *pool, struct span *s, uint16_t idx);
/* The live block at p (user: 0 unmarked, 1 UM_POOL_USER, -1 either). */
int um__pool_block_lookup(struct um_pool *pool, const void *p, int user,
			  struct span **sp, uint32_t *idx);
/* Free the block found by block_lookup. */
void um__pool_block_free(struct um_pool *pool, struct span *s, uint32_t idx);
/* Slab pages of class k's slabs. */
size_t um__pool_slab_pages(unsigned int k);
void um__pool_drop_empty_slabs(struct um_pool *pool, struct heap *h);
size_t um__pool_largest_free(const struct heap *h);
/*
 * Grow heap hi by a chunk of at least need_pages; no lock held. Without
 * top_up_since, nothing is done when a free span of need_pages exists;
 * with it, the chunk is added anyway unless a trim gave bytes back after
 * *top_up_since (then -ECANCELED: trims win over a refill).
 */
int um__pool_heap_grow(struct um_pool *pool, int hi, size_t need_pages,
		       const uint64_t *top_up_since);
/* Put a detached chunk's span struct back, under the lock. */
void um__pool_span_put(struct um_pool *pool, struct span *s);
void um__pool_tlsf_remove(struct heap *h, struct span *s);
/* Chunk c joins heap h (index hi) / leaves it. */
void um__pool_chunk_link(struct heap *h, struct chunk *c, int hi);
void um__pool_chunk_unlink(struct heap *h, struct chunk *c);
/*
 * Give the chunk of LARGE span s, which it fills alone, to heap to with
 * its figures (um__pool_move).
 */
void um__pool_chunk_rehome(struct um_pool *pool, struct span *s, int to);

/* ---- pool_cache.c ----------------------------------------------------- */

/*
 * The calling thread's cache for (pool, hi), binding it when free and bind
 * is set, flushing it when pool->gen moved; NULL: take the locked path.
 */
struct tcache *um__pool_tc_slow(struct um_pool *pool, int hi, bool bind);
/* Fill bin k: 0, -EAGAIN (grow) or -ENOMEM. Takes the lock. */
int um__pool_tc_refill(struct um_pool *pool, struct tcache *tc,
		       unsigned int k);
/* Give back the older part of a full bin / the kept large block. Lock. */
void um__pool_tc_trim_bin(struct um_pool *pool, struct tcache *tc,
			  unsigned int k);
void um__pool_tc_drop_large(struct um_pool *pool, struct tcache *tc);
/* Give back what the calling thread's cache of pool holds, before the
 * pool grows for want of it; true if there was anything. Takes the lock. */
bool um__pool_tc_give_back(struct um_pool *pool);
/* Under the lock: empty the calling thread's cache if bound to pool. */
void um__pool_cache_flush_self(struct um_pool *pool);
/* Is p in the calling thread's cache of pool? (double-free check) */
bool um__pool_cache_holds(struct um_pool *pool, const void *p);
/* Under the lock: add caches' figures for heaps first..last into st. */
void um__pool_cache_stats(struct um_pool *pool, int first, int last,
			  struct um_pool_stats *st);
/* Under the lock: orphan every cache (pool destroy); returns their blocks. */
int64_t um__pool_cache_orphan_all(struct um_pool *pool);

#endif /* UM_POOL_INTERNAL_H */
