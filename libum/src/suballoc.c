/* SPDX-License-Identifier: MIT */
/*
 * suballoc.c - small blocks packed into region-backed segments
 * (um_suballoc_*).
 *
 * A region takes whole granules (2 MiB on sim) on the device however small
 * it is, so a trainer's many small buffers, one region each, would count
 * hundreds of times their bytes against the budget. A sub-allocator carves
 * blocks out of segments instead: each segment is an ordinary region of
 * segment_bytes, made with um_alloc (and, with UM_SUBALLOC_HOLD, acquired
 * on the device until trimmed), so the policy evicts and restores it like
 * any other region. This file is a client of the public entry points; it
 * touches the context only to check it (um__check_fast) and to reach the
 * backend's fences.
 *
 * Blocks: 512-byte units, best fit. Free blocks sit in bins: one per size
 * below 32 KiB, then 16 per power of two (the TLSF layout), with a bitmap
 * of the non-empty ones, so a cached block is found in a few instructions.
 * A block larger than asked is split; a freed block merges with the free
 * neighbours of its bins.
 *
 * Streams: a block freed on stream S is S's until the work queued on S at
 * the free is done: it sits in S's bins, with a fence recorded on S
 * (stream_record_fence), and only allocations on S see it. An allocation
 * that finds nothing polls the pending fences: a block whose fence was
 * reached moves to the shared bins, which every stream uses. On sim the
 * caller's work is done when its call returns (the backend records "now"),
 * so a freed block goes straight to the shared bins.
 *
 * Locking: each sub-allocator has its own mutex and never calls into libum
 * (which would take ctx->lock) while it holds it: a segment is made or
 * given back with the mutex dropped. The registry lock (live
 * sub-allocators) is taken before a sub-allocator's mutex, never after.
 * stats.c reads the figures under ctx->lock (ctx->lock, then the registry,
 * then each mutex).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "suballoc.h"

#define SA_MAGIC	0x756d2d7375626121ull	/* "um-sub!!" */
#define SA_SHIFT	9
#define SA_ALIGN	(1ull << SA_SHIFT)
#define SA_EXACT	64		/* units below this: a bin per size */
#define SA_SUB		16		/* bins per power of two above */
#define SA_MAX_LOG	39		/* units: segments up to 256 TiB */
#define SA_NBINS	(SA_EXACT + (SA_MAX_LOG - 5) * SA_SUB)
#define SA_WORDS	((SA_NBINS + 63) / 64)
/* blocks of a shared bin looked at for the best fit before the next bin */
#define SA_FIT_SCAN	32
#define SA_DEFAULT_NAME	"um.suballoc"
/* pending fences looked at by every allocation (all of them on a miss) */
#define SA_POLL		2

struct sa_bins;
struct sa_seg;

struct sa_block {
	struct sa_block *prev, *next;	/* address order in the segment */
	/* free: the bin's list; allocated: the hash chain (fnext) */
	struct sa_block *fprev, *fnext;
	struct sa_block *pprev, *pnext;	/* sa->pending, while fenced */
	struct sa_seg *seg;
	uint64_t off, size;		/* in the segment, bytes */
	uint64_t req;			/* allocated: bytes asked */
	struct sa_bins *bins;		/* free: where; NULL: allocated */
	struct um_fence *fence;		/* free on a stream: its fence */
	uint32_t bin;
};

struct sa_seg {
	um_region_t region;
	char *base;
	uint64_t bytes;
	uint64_t used;			/* bytes of its live blocks */
	uint32_t nlive;
	struct sa_block *first;
};

/* The free blocks one stream may use (or, shared, every stream). */
struct sa_bins {
	void *stream;
	struct sa_block *head[SA_NBINS];
	uint64_t map[SA_WORDS];
	uint64_t bytes;
};

struct um_suballoc {
	uint64_t magic;
	pthread_mutex_t lock;
	struct um_context *ctx;
	uint32_t device, kind, flags;
	int32_t priority;
	uint64_t seg_bytes, max_block;
	char name[UM_NAME_MAX];
	bool fenced;			/* a free records a fence */

	struct sa_bins shared;
	struct sa_bins **streams;	/* one per stream that freed a block */
	uint32_t nstreams, streams_cap;

	struct sa_seg **segs;		/* sorted by base */
	uint32_t nsegs, segs_cap;

	struct sa_block **hash;		/* live blocks by pointer */
	uint32_t hash_mask;
	struct sa_block *spare;		/* unused block structs */
	/* free blocks with a fence, newest first */
	struct sa_block *pending, *pending_tail;
	struct um_fence **fences;	/* unused fences */
	uint32_t nfences, fences_cap;

	/* figures (um_stats) */
	uint64_t reserved, allocated, requested, blocks, pending_bytes;
	uint64_t allocs, grows;
};

/* ---- registry of live sub-allocators ---------------------------------- */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct um__ptrset reg;
static _Atomic uint64_t reg_gen = 1;

static int reg_add(struct um_suballoc *sa)
{
	int ret;

	pthread_mutex_lock(&reg_lock);
	ret = um__ptrset_add(&reg, sa);
	atomic_fetch_add(&reg_gen, 1);
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

static void reg_del(struct um_suballoc *sa)
{
	pthread_mutex_lock(&reg_lock);
	um__ptrset_del(&reg, sa);
	atomic_fetch_add(&reg_gen, 1);
	pthread_mutex_unlock(&reg_lock);
}

/*
 * sa is live (-EBADF otherwise) and so is its context; a thread's repeat
 * calls skip the registry lock, as um__check_fast does for contexts.
 */
static int sa_check(struct um_suballoc *sa)
{
	static UM_TLS const struct um_suballoc *seen;
	static UM_TLS uint64_t seen_gen;
	uint64_t gen = atomic_load_explicit(&reg_gen, memory_order_acquire);
	bool found = false;

	if (!sa)
		return -EINVAL;
	if (sa != seen || gen != seen_gen) {
		pthread_mutex_lock(&reg_lock);
		found = um__ptrset_has(&reg, sa);
		pthread_mutex_unlock(&reg_lock);
		if (!found || sa->magic != SA_MAGIC)
			return -EBADF;
		seen = sa;
		seen_gen = gen;
	}
	return um__check_fast(sa->ctx);
}

/* ---- bins ------------------------------------------------------------- */

static uint32_t bin_of(uint64_t size)
{
	uint64_t u = size >> SA_SHIFT;
	uint32_t e;

	if (u < SA_EXACT)
		return (uint32_t)u;
	e = 63u - (uint32_t)__builtin_clzll(u);
	return SA_EXACT + (e - 6) * SA_SUB + (uint32_t)((u >> (e - 4)) & 15);
}

static void bin_put(struct sa_bins *bs, struct sa_block *b)
{
	uint32_t i = bin_of(b->size);

	b->bin = i;
	b->bins = bs;
	b->fprev = NULL;
	b->fnext = bs->head[i];
	if (b->fnext)
		b->fnext->fprev = b;
	bs->head[i] = b;
	bs->map[i / 64] |= 1ull << (i % 64);
	bs->bytes += b->size;
}

static void bin_take(struct sa_block *b)
{
	struct sa_bins *bs = b->bins;

	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else
		bs->head[b->bin] = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
	if (!bs->head[b->bin])
		bs->map[b->bin / 64] &= ~(1ull << (b->bin % 64));
	bs->bytes -= b->size;
	b->bins = NULL;
	b->fprev = b->fnext = NULL;
}

/* First non-empty bin at or above i, or SA_NBINS. */
static uint32_t bin_next(const struct sa_bins *bs, uint32_t i)
{
	for (uint32_t w = i / 64; w < SA_WORDS; w++) {
		uint64_t m = bs->map[w];

		if (w == i / 64)
			m &= ~0ull << (i % 64);
		if (m)
			return w * 64 + (uint32_t)__builtin_ctzll(m);
	}
	return SA_NBINS;
}

/* The best fitting free block of at least size in bs, or NULL. */
static struct sa_block *bin_fit(const struct sa_bins *bs, uint64_t size)
{
	uint32_t i = bin_of(size);
	struct sa_block *best = NULL;

	if (!bs)
		return NULL;
	i = bin_next(bs, i);
	if (i == SA_NBINS)
		return NULL;
	if (i < SA_EXACT || i != bin_of(size))
		return bs->head[i];	/* every block there is large enough */
	/* the request's own bin holds sizes either side of it */
	int n = 0;

	for (struct sa_block *b = bs->head[i]; b && n < SA_FIT_SCAN;
	     b = b->fnext, n++) {
		if (b->size >= size && (!best || b->size < best->size))
			best = b;
		if (best && best->size == size)
			break;
	}
	if (best)
		return best;
	i = bin_next(bs, i + 1);
	return i == SA_NBINS ? NULL : bs->head[i];
}

static struct sa_bins *bins_of(struct um_suballoc *sa, void *stream)
{
	for (uint32_t i = 0; i < sa->nstreams; i++)
		if (sa->streams[i]->stream == stream)
			return sa->streams[i];
	return NULL;
}

static struct sa_bins *bins_make(struct um_suballoc *sa, void *stream)
{
	struct sa_bins *bs = bins_of(sa, stream);

	if (bs)
		return bs;
	if (sa->nstreams == sa->streams_cap) {
		uint32_t cap = sa->streams_cap ? sa->streams_cap * 2 : 4;
		struct sa_bins **n = realloc(sa->streams, cap * sizeof(*n));

		if (!n)
			return NULL;
		sa->streams = n;
		sa->streams_cap = cap;
	}
	bs = calloc(1, sizeof(*bs));
	if (!bs)
		return NULL;
	bs->stream = stream;
	sa->streams[sa->nstreams++] = bs;
	return bs;
}

/* ---- blocks, fences, the hash of live blocks --------------------------- */

static struct sa_block *block_new(struct um_suballoc *sa)
{
	struct sa_block *b = sa->spare;

	if (b)
		sa->spare = b->next;
	else
		b = malloc(sizeof(*b));
	if (b)
		memset(b, 0, sizeof(*b));
	return b;
}

static void block_put(struct um_suballoc *sa, struct sa_block *b)
{
	b->next = sa->spare;
	sa->spare = b;
}

static void pending_add(struct um_suballoc *sa, struct sa_block *b)
{
	b->pprev = NULL;
	b->pnext = sa->pending;
	if (b->pnext)
		b->pnext->pprev = b;
	else
		sa->pending_tail = b;
	sa->pending = b;
	sa->pending_bytes += b->size;
}

static void pending_del(struct um_suballoc *sa, struct sa_block *b)
{
	if (b->pprev)
		b->pprev->pnext = b->pnext;
	else
		sa->pending = b->pnext;
	if (b->pnext)
		b->pnext->pprev = b->pprev;
	else
		sa->pending_tail = b->pprev;
	b->pprev = b->pnext = NULL;
	sa->pending_bytes -= b->size;
}

static struct um_fence *fence_get(struct um_suballoc *sa)
{
	struct um_backend *be = &sa->ctx->be;
	struct um_fence *f = NULL;

	if (sa->nfences)
		return sa->fences[--sa->nfences];
	if (be->ops->fence_create(be, &f))
		return NULL;
	return f;
}

static void fence_put(struct um_suballoc *sa, struct um_fence *f)
{
	struct um_backend *be = &sa->ctx->be;

	if (sa->nfences == sa->fences_cap) {
		uint32_t cap = sa->fences_cap ? sa->fences_cap * 2 : 16;
		struct um_fence **n = realloc(sa->fences, cap * sizeof(*n));

		if (!n) {
			be->ops->fence_destroy(be, f);
			return;
		}
		sa->fences = n;
		sa->fences_cap = cap;
	}
	sa->fences[sa->nfences++] = f;
}

/* b's fence is no longer needed (b is taken, merged or reached). */
static void block_unfence(struct um_suballoc *sa, struct sa_block *b)
{
	if (!b->fence)
		return;
	pending_del(sa, b);
	fence_put(sa, b->fence);
	b->fence = NULL;
}

static uint32_t hash_of(const struct um_suballoc *sa, const void *p)
{
	uint64_t k = (uint64_t)(uintptr_t)p >> SA_SHIFT;

	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 32) & sa->hash_mask;
}

static void *block_ptr(const struct sa_block *b)
{
	return b->seg->base + b->off;
}

static int hash_grow(struct um_suballoc *sa)
{
	uint32_t n = (sa->hash_mask + 1) * 2;
	struct sa_block **h = calloc(n, sizeof(*h));
	struct sa_block **old = sa->hash;
	uint32_t old_n = sa->hash_mask + 1;

	if (!h)
		return -ENOMEM;
	sa->hash = h;
	sa->hash_mask = n - 1;
	for (uint32_t i = 0; i < old_n; i++) {
		for (struct sa_block *b = old[i], *nx; b; b = nx) {
			uint32_t k = hash_of(sa, block_ptr(b));

			nx = b->fnext;
			b->fnext = h[k];
			h[k] = b;
		}
	}
	free(old);
	return 0;
}

static void hash_add(struct um_suballoc *sa, struct sa_block *b)
{
	uint32_t k = hash_of(sa, block_ptr(b));

	b->fnext = sa->hash[k];
	sa->hash[k] = b;
}

/* Takes the live block starting at p out of the hash; NULL if none. */
static struct sa_block *hash_take(struct um_suballoc *sa, const void *p)
{
	struct sa_block **pp = &sa->hash[hash_of(sa, p)];

	for (; *pp; pp = &(*pp)->fnext) {
		struct sa_block *b = *pp;

		if (block_ptr(b) == p) {
			*pp = b->fnext;
			b->fnext = NULL;
			return b;
		}
	}
	return NULL;
}

static struct sa_block *hash_find(struct um_suballoc *sa, const void *p)
{
	for (struct sa_block *b = sa->hash[hash_of(sa, p)]; b; b = b->fnext)
		if (block_ptr(b) == p)
			return b;
	return NULL;
}

/* ---- segments ---------------------------------------------------------- */

/* Index of the segment holding p, or -1. */
static int seg_find(const struct um_suballoc *sa, const void *p)
{
	uint32_t lo = 0, hi = sa->nsegs;
	const char *c = p;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const struct sa_seg *s = sa->segs[mid];

		if (c < s->base)
			hi = mid;
		else if (c >= s->base + s->bytes)
			lo = mid + 1;
		else
			return (int)mid;
	}
	return -1;
}

/* Make a segment (no lock held: this calls into libum). */
static int seg_make(struct um_suballoc *sa, void *stream,
		    struct sa_seg **out)
{
	struct um_context *ctx = sa->ctx;
	struct um_region_desc d = {
		.size = sizeof(d),
		.kind = sa->kind,
		.priority = sa->priority,
		.device = sa->device,
		.bytes = sa->seg_bytes,
		.name = sa->name,
	};
	struct sa_seg *s = calloc(1, sizeof(*s));
	void *base;
	int ret;

	if (!s)
		return -ENOMEM;
	ret = um_alloc(ctx, &d, &s->region);
	if (ret)
		goto fail;
	if (sa->flags & UM_SUBALLOC_HOLD) {
		ret = um_acquire(ctx, s->region, UM_TIER_GPU(sa->device),
				 stream);
		/*
		 * The first touch (a fill) is ordered on stream only; blocks
		 * of the segment go to other streams too.
		 */
		if (!ret)
			ret = um_wait(ctx, s->region);
		if (ret)
			goto release;
	}
	ret = um_ptr(ctx, s->region, &base);
	if (ret)
		goto release;
	s->base = base;
	s->bytes = sa->seg_bytes;
	*out = s;
	return 0;
release:
	if (sa->flags & UM_SUBALLOC_HOLD)
		um_release(ctx, s->region);
	um_free(ctx, s->region);
fail:
	free(s);
	return ret;
}

static void seg_drop(struct um_suballoc *sa, struct sa_seg *s)
{
	if (um__check_fast(sa->ctx) == 0) {
		if (sa->flags & UM_SUBALLOC_HOLD)
			um_release(sa->ctx, s->region);
		um_free(sa->ctx, s->region);
	}
	free(s);
}

/* Insert s, with one free block over it, under sa->lock. */
static int seg_insert(struct um_suballoc *sa, struct sa_seg *s)
{
	struct sa_block *b;
	uint32_t i = 0;

	if (sa->nsegs == sa->segs_cap) {
		uint32_t cap = sa->segs_cap ? sa->segs_cap * 2 : 16;
		struct sa_seg **n = realloc(sa->segs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		sa->segs = n;
		sa->segs_cap = cap;
	}
	b = block_new(sa);
	if (!b)
		return -ENOMEM;
	b->seg = s;
	b->size = s->bytes;
	s->first = b;
	while (i < sa->nsegs && sa->segs[i]->base < s->base)
		i++;
	memmove(&sa->segs[i + 1], &sa->segs[i],
		(sa->nsegs - i) * sizeof(*sa->segs));
	sa->segs[i] = s;
	sa->nsegs++;
	sa->reserved += s->bytes;
	sa->grows++;
	bin_put(&sa->shared, b);
	return 0;
}

/* ---- allocation and free ----------------------------------------------- */

/* b absorbs n, its free neighbour after it (out of the bins, unfenced). */
static void block_join(struct um_suballoc *sa, struct sa_block *b,
		       struct sa_block *n)
{
	b->size += n->size;
	b->next = n->next;
	if (n->next)
		n->next->prev = b;
	block_put(sa, n);
}

/*
 * A free block merges with the free neighbours of the same bins: shared
 * with shared, a stream's with that stream's (whose fences b's covers:
 * same stream, recorded later). Never a shared one into a stream's, which
 * would hide it from the other streams until the stream's fence.
 */
static bool mergeable(const struct sa_block *n, const struct sa_bins *to)
{
	return n && n->bins == to;
}

/* Put free b (out of the bins, its fence not yet pending) into bs. */
static void block_settle(struct um_suballoc *sa, struct sa_block *b,
			 struct sa_bins *bs)
{
	struct sa_block *n = b->next, *p = b->prev;

	if (mergeable(n, bs)) {
		block_unfence(sa, n);
		bin_take(n);
		block_join(sa, b, n);
	}
	if (mergeable(p, bs)) {
		block_unfence(sa, p);
		bin_take(p);
		p->fence = b->fence;
		b->fence = NULL;
		block_join(sa, p, b);
		b = p;
	}
	if (b->fence)
		pending_add(sa, b);
	bin_put(bs, b);
}

/*
 * Move the blocks whose fence was reached to the shared bins (merging
 * with shared neighbours only, which are never pending), looking at the
 * oldest up to max.
 */
static void poll_pending(struct um_suballoc *sa, unsigned int max)
{
	struct um_backend *be = &sa->ctx->be;

	for (struct sa_block *b = sa->pending_tail, *nx; b && max; b = nx) {
		int q = be->ops->fence_query(be, b->fence);

		max--;
		nx = b->pprev;
		if (q == -EAGAIN)
			continue;
		block_unfence(sa, b);
		/* a failed stream (device gone): the block stays its own */
		if (q)
			continue;
		bin_take(b);
		block_settle(sa, b, &sa->shared);
	}
}

/* Split size bytes off the front of free b and take them out of the bins. */
static int block_take(struct um_suballoc *sa, struct sa_block *b,
		      uint64_t size)
{
	struct sa_bins *from = b->bins;
	struct sa_block *r = NULL;

	if (sa->blocks + 1 > (uint64_t)sa->hash_mask + 1 && hash_grow(sa))
		return -ENOMEM;
	if (b->size - size >= SA_ALIGN) {
		r = block_new(sa);
		if (!r)
			return -ENOMEM;
	}
	bin_take(b);
	if (r) {
		r->seg = b->seg;
		r->off = b->off + size;
		r->size = b->size - size;
		r->prev = b;
		r->next = b->next;
		if (b->next)
			b->next->prev = r;
		b->next = r;
		/* the rest keeps b's place: its stream, its fence */
		if (b->fence) {
			pending_del(sa, b);
			r->fence = b->fence;
			b->fence = NULL;
			pending_add(sa, r);
		}
		b->size = size;
		bin_put(from, r);
	}
	block_unfence(sa, b);
	return 0;
}

int um_suballoc_alloc(struct um_suballoc *sa, size_t bytes, void *stream,
		      void **ptr)
{
	int ret = sa_check(sa);
	uint64_t size;

	if (ret)
		return ret;
	if (!ptr || !bytes)
		return -EINVAL;
	if (bytes > sa->max_block)
		return -E2BIG;
	size = ((uint64_t)bytes + SA_ALIGN - 1) & ~(SA_ALIGN - 1);
	pthread_mutex_lock(&sa->lock);
	/* a few at each call, so freed blocks do not wait for a miss */
	if (sa->pending)
		poll_pending(sa, SA_POLL);
	for (;;) {
		struct sa_block *b = bin_fit(bins_of(sa, stream), size);
		struct sa_block *s = bin_fit(&sa->shared, size);
		struct sa_seg *seg;

		if (!b || (s && s->size < b->size))
			b = s;
		if (!b && sa->pending) {
			poll_pending(sa, UINT_MAX);
			b = bin_fit(&sa->shared, size);
		}
		if (b) {
			ret = block_take(sa, b, size);
			if (ret)
				break;
			b->req = bytes;
			b->seg->nlive++;
			b->seg->used += b->size;
			hash_add(sa, b);
			sa->allocated += b->size;
			sa->requested += bytes;
			sa->blocks++;
			sa->allocs++;
			*ptr = block_ptr(b);
			break;
		}
		pthread_mutex_unlock(&sa->lock);
		ret = seg_make(sa, stream, &seg);
		pthread_mutex_lock(&sa->lock);
		if (ret)
			break;
		ret = seg_insert(sa, seg);
		if (ret) {
			pthread_mutex_unlock(&sa->lock);
			seg_drop(sa, seg);
			return ret;
		}
	}
	pthread_mutex_unlock(&sa->lock);
	return ret;
}

/* The live block holding p, under sa->lock; NULL if none. */
static struct sa_block *block_at(struct um_suballoc *sa, const void *p)
{
	int i = seg_find(sa, p);
	const char *c = p;

	if (i < 0)
		return NULL;
	for (struct sa_block *b = sa->segs[i]->first; b; b = b->next) {
		char *start = block_ptr(b);

		if (c >= start && c < start + b->size)
			return b->bins ? NULL : b;
	}
	return NULL;
}

/* The error for p, in no live block of sa (sa->lock not held). */
static int foreign(struct um_suballoc *sa, const void *p)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < reg.n && ret == -ENOENT; i++) {
		struct um_suballoc *o = reg.v[i];

		if (o == sa)
			continue;
		pthread_mutex_lock(&o->lock);
		if (hash_find(o, p) || block_at(o, p))
			ret = -EXDEV;
		pthread_mutex_unlock(&o->lock);
	}
	pthread_mutex_unlock(&reg_lock);
	return ret;
}

int um_suballoc_free(struct um_suballoc *sa, void *ptr, void *stream)
{
	struct sa_bins *bs = &sa->shared;
	struct sa_block *b;
	int ret = sa_check(sa);

	if (ret)
		return ret;
	if (!ptr)
		return -EINVAL;
	pthread_mutex_lock(&sa->lock);
	if (sa->fenced) {
		bs = bins_make(sa, stream);
		if (!bs) {
			pthread_mutex_unlock(&sa->lock);
			return -ENOMEM;
		}
	}
	b = hash_take(sa, ptr);
	if (!b) {
		/* inside a live block of ours: not its start */
		ret = block_at(sa, ptr) ? -EINVAL : -ENOENT;
		pthread_mutex_unlock(&sa->lock);
		return ret == -ENOENT ? foreign(sa, ptr) : ret;
	}
	b->seg->nlive--;
	b->seg->used -= b->size;
	sa->allocated -= b->size;
	sa->requested -= b->req;
	sa->blocks--;
	b->req = 0;
	if (sa->fenced) {
		struct um_backend *be = &sa->ctx->be;

		b->fence = fence_get(sa);
		if (b->fence &&
		    be->ops->stream_record_fence(be, stream, b->fence)) {
			fence_put(sa, b->fence);
			b->fence = NULL;
		}
		/*
		 * Without a fence the block stays the stream's for good:
		 * nothing would tell when the stream is done with it.
		 */
	}
	block_settle(sa, b, bs);
	pthread_mutex_unlock(&sa->lock);
	return 0;
}

int um_suballoc_lookup(struct um_suballoc *sa, const void *ptr,
		       struct um_suballoc_block *info)
{
	struct um_suballoc_block out;
	struct sa_block *b;
	uint32_t size;
	int ret = sa_check(sa);

	if (ret)
		return ret;
	if (!ptr || !info)
		return -EINVAL;
	size = info->size;
	if (size < offsetof(struct um_suballoc_block, offset) ||
	    size > 65536)
		return -EINVAL;
	pthread_mutex_lock(&sa->lock);
	b = hash_find(sa, ptr);
	if (!b)
		b = block_at(sa, ptr);
	if (b) {
		memset(&out, 0, sizeof(out));
		out.size = size;
		out.segment = b->seg->region;
		out.offset = b->off;
		out.ptr = block_ptr(b);
		out.bytes = b->req;
		out.rounded = b->size;
	}
	pthread_mutex_unlock(&sa->lock);
	if (!b)
		return foreign(sa, ptr);
	if (size > sizeof(out))
		memset((char *)info + sizeof(out), 0, size - sizeof(out));
	memcpy(info, &out, size < sizeof(out) ? size : sizeof(out));
	return 0;
}

int64_t um_suballoc_trim(struct um_suballoc *sa)
{
	struct sa_seg **gone = NULL;
	uint32_t ngone = 0;
	int64_t bytes = 0;
	bool short_mem;
	int ret = sa_check(sa);

	if (ret)
		return ret;
	pthread_mutex_lock(&sa->lock);
	if (sa->pending)
		poll_pending(sa, UINT_MAX);
	if (sa->nsegs)
		gone = malloc(sa->nsegs * sizeof(*gone));
	for (uint32_t i = 0; gone && i < sa->nsegs;) {
		struct sa_seg *s = sa->segs[i];
		struct sa_block *b = s->first;

		/* whole and shared: no stream may still be using it */
		if (s->nlive || b->next || b->bins != &sa->shared) {
			i++;
			continue;
		}
		bin_take(b);
		block_put(sa, b);
		memmove(&sa->segs[i], &sa->segs[i + 1],
			(sa->nsegs - i - 1) * sizeof(*sa->segs));
		sa->nsegs--;
		sa->reserved -= s->bytes;
		gone[ngone++] = s;
	}
	short_mem = !gone && sa->nsegs;
	pthread_mutex_unlock(&sa->lock);
	for (uint32_t i = 0; i < ngone; i++) {
		bytes += (int64_t)gone[i]->bytes;
		seg_drop(sa, gone[i]);
	}
	free(gone);
	return short_mem ? -ENOMEM : bytes;
}

/* ---- create and destroy ------------------------------------------------ */

int um_suballoc_create(struct um_context *ctx,
		       const struct um_suballoc_desc *desc,
		       struct um_suballoc **out)
{
	struct um_suballoc *sa;
	uint64_t gran, seg, max;
	int ret;

	if (!desc || !out)
		return -EINVAL;
	ret = um__check_fast(ctx);
	if (ret)
		return ret;
	if (desc->size < offsetof(struct um_suballoc_desc, name) +
			 sizeof(desc->name) || desc->size > 65536 ||
	    desc->reserved || (desc->flags & ~(uint32_t)UM_SUBALLOC_HOLD) ||
	    desc->kind >= UM_KIND_COUNT)
		return -EINVAL;
	if (desc->device >= UM_MAX_DEVICES || (int)desc->device >= ctx->ndev)
		return -EINVAL;
	/* fixed at creation, like ndev: no lock needed to read it */
	gran = ctx->dev[desc->device].gran;
	seg = desc->segment_bytes ? desc->segment_bytes : gran;
	if (seg % gran || seg > (SA_ALIGN << SA_MAX_LOG))
		return -EINVAL;
	max = desc->max_block ? desc->max_block : seg / 2;
	if (max > seg)
		return -EINVAL;
	sa = calloc(1, sizeof(*sa));
	if (!sa)
		return -ENOMEM;
	sa->hash = calloc(64, sizeof(*sa->hash));
	if (!sa->hash) {
		free(sa);
		return -ENOMEM;
	}
	sa->hash_mask = 63;
	sa->magic = SA_MAGIC;
	pthread_mutex_init(&sa->lock, NULL);
	sa->ctx = ctx;
	sa->device = desc->device;
	sa->kind = desc->kind;
	sa->priority = desc->priority;
	sa->flags = desc->flags;
	sa->seg_bytes = seg;
	sa->max_block = max;
	snprintf(sa->name, sizeof(sa->name), "%s",
		 desc->name ? desc->name : SA_DEFAULT_NAME);
	/* sim records "now": its caller's work is done at the call */
	sa->fenced = ctx->be.ops->stream_record_fence &&
		     ctx->be.ops->id != UM_BACKEND_SIM;
	ret = reg_add(sa);
	if (ret) {
		pthread_mutex_destroy(&sa->lock);
		free(sa->hash);
		free(sa);
		return ret;
	}
	*out = sa;
	return 0;
}

int um_suballoc_destroy(struct um_suballoc *sa)
{
	int ret = sa_check(sa);
	bool ctx_live = ret == 0;
	struct um_backend *be;
	int live;

	/* a context destroyed first took the segments with it */
	if (ret && ret != -EBADF && ret != -ECHILD)
		return ret;
	if (ret == -EBADF) {
		bool found = false;

		pthread_mutex_lock(&reg_lock);
		found = um__ptrset_has(&reg, sa);
		pthread_mutex_unlock(&reg_lock);
		if (!found)
			return -EBADF;
	}
	reg_del(sa);
	be = ctx_live ? &sa->ctx->be : NULL;
	live = (int)(sa->blocks > INT32_MAX ? INT32_MAX : sa->blocks);
	if (live && ctx_live)
		um__log(sa->ctx, UM_LOG_WARN,
			"leak: sub-allocator \"%s\": %d blocks (%" PRIu64
			" bytes) still alive at destroy", sa->name, live,
			sa->requested);
	/* what still runs on the blocks' streams must end first */
	for (struct sa_block *b = sa->pending; be && b; b = b->pnext) {
		be->ops->fence_wait(be, b->fence);
		be->ops->fence_destroy(be, b->fence);
	}
	for (uint32_t i = 0; be && i < sa->nfences; i++)
		be->ops->fence_destroy(be, sa->fences[i]);
	for (uint32_t i = 0; i < sa->nsegs; i++) {
		struct sa_seg *s = sa->segs[i];

		for (struct sa_block *b = s->first, *nx; b; b = nx) {
			nx = b->next;
			free(b);
		}
		if (ctx_live)
			seg_drop(sa, s);
		else
			free(s);
	}
	for (struct sa_block *b = sa->spare, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	for (uint32_t i = 0; i < sa->nstreams; i++)
		free(sa->streams[i]);
	free(sa->streams);
	free(sa->segs);
	free(sa->fences);
	free(sa->hash);
	pthread_mutex_destroy(&sa->lock);
	sa->magic = 0;
	free(sa);
	return live;
}

/* ---- figures ----------------------------------------------------------- */

static uint64_t largest_in(const struct sa_bins *bs)
{
	uint64_t best = 0;

	for (int w = SA_WORDS - 1; w >= 0; w--) {
		uint32_t i;

		if (!bs->map[w])
			continue;
		i = (uint32_t)w * 64 + 63u -
		    (uint32_t)__builtin_clzll(bs->map[w]);
		for (struct sa_block *b = bs->head[i]; b; b = b->fnext)
			if (b->size > best)
				best = b->size;
		break;
	}
	return best;
}

void um__suballoc_stats(struct um_context *ctx, struct um_stats *st)
{
	pthread_mutex_lock(&reg_lock);
	for (size_t i = 0; i < reg.n; i++) {
		struct um_suballoc *sa = reg.v[i];
		uint64_t big;

		if (sa->ctx != ctx)
			continue;
		pthread_mutex_lock(&sa->lock);
		st->suballoc_segments += sa->nsegs;
		st->suballoc_reserved += sa->reserved;
		st->suballoc_allocated += sa->allocated;
		st->suballoc_requested += sa->requested;
		st->suballoc_blocks += sa->blocks;
		st->suballoc_pending += sa->pending_bytes;
		st->suballoc_allocs += sa->allocs;
		st->suballoc_grows += sa->grows;
		for (uint32_t j = 0; j < sa->nsegs; j++)
			if (sa->segs[j]->nlive)
				st->suballoc_inactive_split +=
					sa->segs[j]->bytes - sa->segs[j]->used;
		big = largest_in(&sa->shared);
		for (uint32_t j = 0; j < sa->nstreams; j++) {
			uint64_t l = largest_in(sa->streams[j]);

			if (l > big)
				big = l;
		}
		if (big > st->suballoc_largest_free)
			st->suballoc_largest_free = big;
		pthread_mutex_unlock(&sa->lock);
	}
	pthread_mutex_unlock(&reg_lock);
}
