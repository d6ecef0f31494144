// SPDX-License-Identifier: MIT
/*
 * pool.c - the pinned host pool: heaps, chunks, spans and slabs.
 *
 * Layers, each calling only the one below (mimalloc's shape):
 *
 *   um__pool_alloc/free   -> heap (one per NUMA node)
 *   heap                  -> slab (size classes) or span (page runs)
 *   span                  -> chunk (pinned memory from the backend)
 *   chunk                 -> be->ops->host_alloc / host_free
 *
 * All metadata lives in ordinary malloc'ed memory beside the chunks (a page
 * map per chunk points every page at its span), so pinned memory is never
 * written by the pool and blocks can be page-aligned without headers.
 *
 * Free spans are indexed by a two-level segregated fit: the first level is
 * the power of two of the page count, the second splits it in 16. A search
 * rounds the request up to the next second-level step, so any span found in
 * a non-empty list fits: O(1) with two bitmap scans, no list walk. Freeing
 * coalesces with both neighbours through the page map, also O(1).
 *
 * See Documentation/design/pool.rst for measurements and limits.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool.h"

#define PAGE_SHIFT	12
#define SL_BITS		4
#define SL_COUNT	(1u << SL_BITS)
#define FL_COUNT	52		/* up to 2^55 pages: no real limit */
#define MAX_BYTES	(1ull << 46)	/* refuse larger requests outright */
#define HEAP_COUNT	(UM_POOL_MAX_NODES + 1)
#define SPAN_BATCH	256

enum span_state {
	SPAN_UNUSED = 0,	/* on the span-struct free list */
	SPAN_FREE,		/* free pages, in a TLSF list */
	SPAN_LARGE,		/* one block of whole pages */
	SPAN_SLAB,		/* slots of one size class */
};

struct chunk;

struct span {
	struct chunk *chunk;
	size_t page;		/* first page, within the chunk */
	size_t npages;
	struct span *next, *prev;	/* TLSF list or class partial list */
	uint8_t state;
	uint8_t klass;		/* SLAB */
	uint16_t hint;		/* SLAB: first bitmap word with a free bit */
	uint32_t nslots;	/* SLAB */
	uint32_t nused;		/* SLAB */
	size_t requested;	/* LARGE */
	uint64_t *bits;		/* SLAB: slot in use */
	uint32_t *req;		/* SLAB: bytes asked per slot */
};

struct chunk {
	char *base;
	size_t bytes;
	size_t npages;
	int heap;
	struct chunk *next, *prev;	/* heap's chunk list */
	struct span **map;		/* page -> span (first/last page kept) */
};

struct heap {
	int node;
	uint64_t fl_bitmap;
	uint32_t sl_bitmap[FL_COUNT];
	struct span *free[FL_COUNT][SL_COUNT];
	struct span *partial[64];	/* per class: slabs with a free slot */
	uint32_t nempty[64];		/* per class: empty slabs kept */
	struct chunk *chunks;
	uint64_t free_pages;		/* in TLSF lists */
	struct um_pool_stats st;
};

struct span_batch {
	struct span_batch *next;
	struct span spans[SPAN_BATCH];
};

struct um_pool {
	struct um_backend *be;
	uint64_t chunk_bytes;
	uint64_t max_bytes;
	pthread_mutex_t mu;		/* everything below */
	pthread_mutex_t grow_mu;	/* one grower at a time */
	uint64_t bytes;			/* chunk bytes, all heaps */
	uint64_t pending;		/* bytes being obtained by a grower */
	struct chunk **index;		/* sorted by base */
	size_t nchunks, index_cap;
	struct chunk *last;		/* last chunk looked up */
	struct span *spare;		/* free span structs */
	struct span_batch *batches;
	struct heap heaps[HEAP_COUNT];
};

/* ---- size classes ------------------------------------------------------ */

/*
 * Four classes per doubling up to 4 KiB (all multiples of 64 bytes, so slots
 * are 64-byte aligned), then multiples of 4 KiB (so slots of 4 KiB or more
 * are page aligned) up to UM_POOL_SMALL_MAX.
 */
static const uint32_t class_size[] = {
	64, 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
	1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
	8192, 12288, 16384, 20480, 24576, 28672, 32768,
};
#define NCLASSES (sizeof(class_size) / sizeof(class_size[0]))
#define CLASS_4K 19

/* class of sizes 1..4096, indexed by (size + 63) / 64 */
static uint8_t class_of_64[65];
static pthread_once_t class_once = PTHREAD_ONCE_INIT;

static void class_init(void)
{
	unsigned int c = 0;

	for (unsigned int i = 1; i <= 64; i++) {
		while (class_size[c] < i * 64)
			c++;
		class_of_64[i] = (uint8_t)c;
	}
}

static inline unsigned int size_class(size_t bytes)
{
	if (bytes <= 4096)
		return class_of_64[(bytes + 63) >> 6];
	return CLASS_4K - 1 + (unsigned int)((bytes + 4095) >> 12);
}

/* Slab of at least 64 KiB and at least 8 slots, whole pages. */
static inline size_t class_slab_pages(unsigned int c)
{
	size_t b = (size_t)class_size[c] * 8;

	if (b < (64u << 10))
		b = 64u << 10;
	return b >> PAGE_SHIFT;
}

/* ---- helpers ------------------------------------------------------------ */

static inline unsigned int fls64(uint64_t x)	/* x != 0; index of top bit */
{
	return 63u - (unsigned int)__builtin_clzll(x);
}

static inline unsigned int ffs64(uint64_t x)	/* x != 0 */
{
	return (unsigned int)__builtin_ctzll(x);
}

static inline int heap_index(int node)
{
	if (node == UM_POOL_NODE_ANY)
		return 0;
	if (node < 0 || node >= UM_POOL_MAX_NODES)
		return -1;
	return node + 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- span structs --------------------------------------------------------- */

static struct span *span_get(struct um_pool *pool)
{
	struct span *s = pool->spare;

	if (!s) {
		struct span_batch *b = calloc(1, sizeof(*b));

		if (!b)
			return NULL;
		b->next = pool->batches;
		pool->batches = b;
		for (int i = SPAN_BATCH - 1; i >= 0; i--) {
			b->spans[i].next = pool->spare;
			pool->spare = &b->spans[i];
		}
		s = pool->spare;
	}
	pool->spare = s->next;
	s->next = s->prev = NULL;
	return s;
}

static void span_put(struct um_pool *pool, struct span *s)
{
	free(s->bits);
	s->bits = NULL;
	s->req = NULL;
	s->state = SPAN_UNUSED;
	s->chunk = NULL;
	s->next = pool->spare;
	pool->spare = s;
}

static inline void span_map(struct span *s)
{
	s->chunk->map[s->page] = s;
	s->chunk->map[s->page + s->npages - 1] = s;
}

/* ---- TLSF index of free spans ------------------------------------------- */

static inline void tlsf_mapping(size_t n, unsigned int *fl, unsigned int *sl)
{
	if (n < SL_COUNT) {
		*fl = 0;
		*sl = (unsigned int)n;
	} else {
		unsigned int t = fls64(n);

		*sl = (unsigned int)(n >> (t - SL_BITS)) - SL_COUNT;
		*fl = t - SL_BITS + 1;
	}
}

static void tlsf_insert(struct heap *h, struct span *s)
{
	unsigned int fl, sl;

	tlsf_mapping(s->npages, &fl, &sl);
	s->state = SPAN_FREE;
	s->prev = NULL;
	s->next = h->free[fl][sl];
	if (s->next)
		s->next->prev = s;
	h->free[fl][sl] = s;
	h->fl_bitmap |= 1ull << fl;
	h->sl_bitmap[fl] |= 1u << sl;
	h->free_pages += s->npages;
	span_map(s);
}

static void tlsf_remove(struct heap *h, struct span *s)
{
	unsigned int fl, sl;

	tlsf_mapping(s->npages, &fl, &sl);
	if (s->next)
		s->next->prev = s->prev;
	if (s->prev) {
		s->prev->next = s->next;
	} else {
		h->free[fl][sl] = s->next;
		if (!s->next) {
			h->sl_bitmap[fl] &= ~(1u << sl);
			if (!h->sl_bitmap[fl])
				h->fl_bitmap &= ~(1ull << fl);
		}
	}
	s->next = s->prev = NULL;
	h->free_pages -= s->npages;
}

/* A free span of at least n pages, still in its list; NULL if none. */
static struct span *tlsf_find(struct heap *h, size_t n)
{
	unsigned int fl, sl;
	uint64_t fmap;
	uint32_t smap;

	if (n >= SL_COUNT) {
		size_t r = n + ((size_t)1 << (fls64(n) - SL_BITS)) - 1;

		if (r < n)
			return NULL;
		n = r;
	}
	tlsf_mapping(n, &fl, &sl);
	if (fl >= FL_COUNT)
		return NULL;
	smap = h->sl_bitmap[fl] & (~0u << sl);
	if (!smap) {
		fmap = fl + 1 < 64 ? h->fl_bitmap & (~0ull << (fl + 1)) : 0;
		if (!fmap)
			return NULL;
		fl = ffs64(fmap);
		smap = h->sl_bitmap[fl];
	}
	sl = ffs64(smap);
	return h->free[fl][sl];
}

/* Largest free span's page count (walks one list; for stats). */
static size_t tlsf_largest(const struct heap *h)
{
	unsigned int fl, sl;
	size_t best = 0;

	if (!h->fl_bitmap)
		return 0;
	fl = fls64(h->fl_bitmap);
	sl = fls64(h->sl_bitmap[fl]);
	for (const struct span *s = h->free[fl][sl]; s; s = s->next)
		if (s->npages > best)
			best = s->npages;
	return best;
}

/*
 * Take n pages from the heap's free spans: split the found span, put the
 * tail back. Returns the span (state to be set by the caller) or NULL.
 */
static struct span *span_take(struct um_pool *pool, struct heap *h, size_t n)
{
	struct span *s = tlsf_find(h, n);
	struct span *rest = NULL;

	if (!s)
		return NULL;
	if (s->npages > n) {
		rest = span_get(pool);
		if (!rest)
			return NULL;
	}
	tlsf_remove(h, s);
	if (rest) {
		rest->chunk = s->chunk;
		rest->page = s->page + n;
		rest->npages = s->npages - n;
		s->npages = n;
		tlsf_insert(h, rest);
	}
	span_map(s);
	return s;
}

/* Return a span's pages to the free index, merging with free neighbours. */
static void span_release(struct um_pool *pool, struct heap *h, struct span *s)
{
	struct chunk *c = s->chunk;
	struct span *n;

	free(s->bits);
	s->bits = NULL;
	s->req = NULL;
	if (s->page > 0) {
		n = c->map[s->page - 1];
		if (n && n->state == SPAN_FREE && n->chunk == c &&
		    n->page + n->npages == s->page) {
			tlsf_remove(h, n);
			s->page = n->page;
			s->npages += n->npages;
			span_put(pool, n);
		}
	}
	if (s->page + s->npages < c->npages) {
		n = c->map[s->page + s->npages];
		if (n && n->state == SPAN_FREE && n->chunk == c &&
		    n->page == s->page + s->npages) {
			tlsf_remove(h, n);
			s->npages += n->npages;
			span_put(pool, n);
		}
	}
	tlsf_insert(h, s);
}

/* ---- chunk index ---------------------------------------------------------- */

/* Chunk holding p, or NULL. */
static struct chunk *chunk_find(struct um_pool *pool, const void *p)
{
	const char *cp = p;
	struct chunk *c = pool->last;
	size_t lo = 0, hi = pool->nchunks;

	if (c && cp >= c->base && cp < c->base + c->bytes)
		return c;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (pool->index[mid]->base <= cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	c = pool->index[lo - 1];
	if (cp >= c->base + c->bytes)
		return NULL;
	pool->last = c;
	return c;
}

static int index_insert(struct um_pool *pool, struct chunk *c)
{
	size_t i;

	if (pool->nchunks == pool->index_cap) {
		size_t cap = pool->index_cap ? pool->index_cap * 2 : 16;
		struct chunk **ix = realloc(pool->index, cap * sizeof(*ix));

		if (!ix)
			return -ENOMEM;
		pool->index = ix;
		pool->index_cap = cap;
	}
	for (i = pool->nchunks; i > 0 && pool->index[i - 1]->base > c->base;
	     i--)
		pool->index[i] = pool->index[i - 1];
	pool->index[i] = c;
	pool->nchunks++;
	return 0;
}

static void index_remove(struct um_pool *pool, struct chunk *c)
{
	size_t i;

	for (i = 0; i < pool->nchunks && pool->index[i] != c; i++)
		;
	if (i == pool->nchunks)
		return;
	memmove(&pool->index[i], &pool->index[i + 1],
		(pool->nchunks - i - 1) * sizeof(*pool->index));
	pool->nchunks--;
	if (pool->last == c)
		pool->last = NULL;
}

/* ---- growth ---------------------------------------------------------------- */

/*
 * Add a chunk of at least need_pages to heap hi. Called with no lock held;
 * takes grow_mu, and mu only around bookkeeping, never around host_alloc.
 * Returns 0 when the heap (now or thanks to another grower) has a span of
 * need_pages, else -errno.
 */
static int heap_grow(struct um_pool *pool, int hi, size_t need_pages)
{
	struct heap *h = &pool->heaps[hi];
	uint64_t need = (uint64_t)need_pages << PAGE_SHIFT;
	uint64_t size = pool->chunk_bytes;
	struct chunk *c = NULL;
	struct span *s = NULL;
	void *mem = NULL;
	uint64_t t0;
	int ret;

	pthread_mutex_lock(&pool->grow_mu);
	pthread_mutex_lock(&pool->mu);
	if (tlsf_find(h, need_pages)) {
		ret = 0;
		goto out_unlock;
	}
	if (need > size)
		size = (need + UM_POOL_MIN_CHUNK - 1) & ~(UM_POOL_MIN_CHUNK - 1);
	if (pool->max_bytes) {
		uint64_t room = pool->max_bytes > pool->bytes ?
				pool->max_bytes - pool->bytes : 0;

		if (size > room) {
			/* a smaller chunk that still fits under the cap */
			size = (need + UM_POOL_PAGE - 1) & ~(uint64_t)(UM_POOL_PAGE - 1);
			if (size > room) {
				ret = -ENOMEM;
				h->st.grow_failures++;
				goto out_unlock;
			}
		}
	}
	pool->pending += size;
	pthread_mutex_unlock(&pool->mu);

	ret = -ENOMEM;
	c = calloc(1, sizeof(*c));
	if (c)
		c->map = calloc(size >> PAGE_SHIFT, sizeof(*c->map));
	t0 = now_ns();
	if (c && c->map)
		ret = pool->be->ops->host_alloc(pool->be, size, h->node, &mem);
	if (!ret && ((uintptr_t)mem & (UM_POOL_PAGE - 1))) {
		/* every backend returns page-aligned memory; refuse others */
		pool->be->ops->host_free(pool->be, mem, size);
		ret = -EINVAL;
	}

	pthread_mutex_lock(&pool->mu);
	pool->pending -= size;
	h->st.grow_ns += now_ns() - t0;
	if (!ret) {
		s = span_get(pool);
		if (!s || index_insert(pool, c) < 0) {
			if (s)
				span_put(pool, s);
			pthread_mutex_unlock(&pool->mu);
			pool->be->ops->host_free(pool->be, mem, size);
			pthread_mutex_lock(&pool->mu);
			ret = -ENOMEM;
		}
	}
	if (ret) {
		h->st.grow_failures++;
		goto out_unlock;
	}
	c->base = mem;
	c->bytes = size;
	c->npages = size >> PAGE_SHIFT;
	c->heap = hi;
	c->next = h->chunks;
	if (c->next)
		c->next->prev = c;
	h->chunks = c;
	pool->bytes += size;
	h->st.chunks++;
	h->st.bytes += size;
	h->st.grows++;
	s->chunk = c;
	s->page = 0;
	s->npages = c->npages;
	tlsf_insert(h, s);
	c = NULL;
out_unlock:
	pthread_mutex_unlock(&pool->mu);
	pthread_mutex_unlock(&pool->grow_mu);
	if (c) {
		free(c->map);
		free(c);
	}
	return ret;
}

/* ---- slabs ----------------------------------------------------------------- */

static struct span *slab_new(struct um_pool *pool, struct heap *h,
			     unsigned int k)
{
	size_t np = class_slab_pages(k);
	uint32_t nslots = (uint32_t)((np << PAGE_SHIFT) / class_size[k]);
	size_t words = (nslots + 63) / 64;
	uint64_t *bits;
	struct span *s;

	bits = calloc(1, words * sizeof(uint64_t) + nslots * sizeof(uint32_t));
	if (!bits)
		return NULL;
	s = span_take(pool, h, np);
	if (!s) {
		free(bits);
		return NULL;
	}
	s->state = SPAN_SLAB;
	s->klass = (uint8_t)k;
	s->nslots = nslots;
	s->nused = 0;
	s->hint = 0;
	s->bits = bits;
	s->req = (uint32_t *)(bits + words);
	for (size_t i = 0; i < np; i++)
		s->chunk->map[s->page + i] = s;
	/* mark the tail bits past nslots as used so the scan never picks them */
	if (nslots % 64)
		bits[words - 1] = ~0ull << (nslots % 64);
	s->prev = NULL;
	s->next = h->partial[k];
	if (s->next)
		s->next->prev = s;
	h->partial[k] = s;
	h->nempty[k]++;
	return s;
}

static inline void partial_remove(struct heap *h, struct span *s)
{
	if (s->next)
		s->next->prev = s->prev;
	if (s->prev)
		s->prev->next = s->next;
	else
		h->partial[s->klass] = s->next;
	s->next = s->prev = NULL;
}

static void *slab_alloc(struct um_pool *pool, struct heap *h, unsigned int k,
			size_t bytes)
{
	struct span *s = h->partial[k];
	unsigned int w;
	uint32_t i;

	if (!s) {
		s = slab_new(pool, h, k);
		if (!s)
			return NULL;
	}
	for (w = s->hint; !~s->bits[w]; w++)
		;
	i = w * 64 + ffs64(~s->bits[w]);
	s->bits[w] |= 1ull << (i & 63);
	s->hint = (uint16_t)w;
	s->req[i] = (uint32_t)bytes;
	if (s->nused++ == 0)
		h->nempty[k]--;
	if (s->nused == s->nslots)
		partial_remove(h, s);
	h->st.used += class_size[k];
	return s->chunk->base + (s->page << PAGE_SHIFT) +
	       (size_t)i * class_size[k];
}

static int slab_free(struct um_pool *pool, struct heap *h, struct span *s,
		     const char *p)
{
	unsigned int k = s->klass;
	size_t off = (size_t)(p - (s->chunk->base + (s->page << PAGE_SHIFT)));
	uint32_t i = (uint32_t)(off / class_size[k]);
	uint64_t bit = 1ull << (i & 63);

	if ((size_t)i * class_size[k] != off || i >= s->nslots ||
	    !(s->bits[i / 64] & bit))
		return -EINVAL;
	s->bits[i / 64] &= ~bit;
	if (i / 64 < s->hint)
		s->hint = (uint16_t)(i / 64);
	h->st.used -= class_size[k];
	h->st.requested -= s->req[i];
	if (s->nused-- == s->nslots) {
		s->prev = NULL;
		s->next = h->partial[k];
		if (s->next)
			s->next->prev = s;
		h->partial[k] = s;
	}
	if (s->nused == 0) {
		/* keep one empty slab per class against alloc/free ping-pong */
		if (h->nempty[k]) {
			partial_remove(h, s);
			span_release(pool, h, s);
		} else {
			h->nempty[k]++;
		}
	}
	return 0;
}

/* ---- public internal API --------------------------------------------------- */

int um__pool_create(struct um_backend *be, const struct um_pool_config *cfg,
		    struct um_pool **out)
{
	struct um_pool *pool;
	uint64_t chunk = UM_POOL_DEFAULT_CHUNK;

	if (!be || !be->ops || !be->ops->host_alloc || !be->ops->host_free ||
	    !out)
		return -EINVAL;
	if (cfg && cfg->chunk_bytes) {
		if (cfg->chunk_bytes > MAX_BYTES)
			return -EINVAL;
		chunk = (cfg->chunk_bytes + UM_POOL_MIN_CHUNK - 1) &
			~(UM_POOL_MIN_CHUNK - 1);
	}
	pthread_once(&class_once, class_init);
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->be = be;
	pool->chunk_bytes = chunk;
	pool->max_bytes = cfg ? cfg->max_bytes : 0;
	pthread_mutex_init(&pool->mu, NULL);
	pthread_mutex_init(&pool->grow_mu, NULL);
	for (int i = 0; i < HEAP_COUNT; i++)
		pool->heaps[i].node = i - 1;
	*out = pool;
	return 0;
}

int64_t um__pool_destroy(struct um_pool *pool)
{
	int64_t live = 0;

	if (!pool)
		return 0;
	for (int i = 0; i < HEAP_COUNT; i++)
		live += (int64_t)pool->heaps[i].st.blocks;
	for (size_t i = 0; i < pool->nchunks; i++) {
		struct chunk *c = pool->index[i];

		pool->be->ops->host_free(pool->be, c->base, c->bytes);
		free(c->map);
		free(c);
	}
	free(pool->index);
	while (pool->batches) {
		struct span_batch *b = pool->batches;

		pool->batches = b->next;
		/* only slab spans still own metadata */
		for (int i = 0; i < SPAN_BATCH; i++)
			free(b->spans[i].bits);
		free(b);
	}
	pthread_mutex_destroy(&pool->mu);
	pthread_mutex_destroy(&pool->grow_mu);
	free(pool);
	return live;
}

/*
 * Allocate from heap h under mu. -EAGAIN: no free span fits (grow by
 * *npages_out pages and retry); -ENOMEM: no memory for metadata.
 */
static int heap_alloc(struct um_pool *pool, struct heap *h, size_t bytes,
		      size_t *npages_out, void **out)
{
	void *p;

	if (bytes <= UM_POOL_SMALL_MAX) {
		unsigned int k = size_class(bytes);

		*npages_out = class_slab_pages(k);
		if (!h->partial[k] && !tlsf_find(h, *npages_out))
			return -EAGAIN;
		p = slab_alloc(pool, h, k, bytes);
	} else {
		size_t n = (bytes + UM_POOL_PAGE - 1) >> PAGE_SHIFT;
		struct span *s;

		*npages_out = n;
		if (!tlsf_find(h, n))
			return -EAGAIN;
		s = span_take(pool, h, n);
		p = NULL;
		if (s) {
			s->state = SPAN_LARGE;
			s->requested = bytes;
			h->st.used += n << PAGE_SHIFT;
			p = s->chunk->base + (s->page << PAGE_SHIFT);
		}
	}
	if (!p)
		return -ENOMEM;
	h->st.requested += bytes;
	h->st.blocks++;
	h->st.allocs++;
	*out = p;
	return 0;
}

int um__pool_alloc(struct um_pool *pool, size_t bytes, int node,
		   unsigned int flags, void **out)
{
	int hi = heap_index(node);
	struct heap *h;
	size_t need;
	void *p = NULL;
	int ret;

	if (!pool || !out || !bytes || hi < 0 ||
	    (flags & ~(unsigned int)(UM_POOL_NOGROW | UM_POOL_ZERO)))
		return -EINVAL;
	if (bytes > MAX_BYTES)
		return -ENOMEM;
	h = &pool->heaps[hi];
	for (;;) {
		pthread_mutex_lock(&pool->mu);
		ret = heap_alloc(pool, h, bytes, &need, &p);
		pthread_mutex_unlock(&pool->mu);
		if (ret != -EAGAIN)
			break;
		if (flags & UM_POOL_NOGROW)
			return -EAGAIN;
		ret = heap_grow(pool, hi, need);
		if (ret)
			return ret;
	}
	if (ret)
		return ret;
	if (flags & UM_POOL_ZERO)
		memset(p, 0, bytes);
	*out = p;
	return 0;
}

/* The live block at p: its span and heap, or -EINVAL. Called under mu. */
static int block_lookup(struct um_pool *pool, const void *p,
			struct span **sp, struct heap **hp)
{
	struct chunk *c = chunk_find(pool, p);
	size_t pg;
	struct span *s;

	if (!c)
		return -EINVAL;
	pg = (size_t)((const char *)p - c->base) >> PAGE_SHIFT;
	s = c->map[pg];
	/* map entries of interior pages may be stale: check they agree */
	if (!s || s->chunk != c || pg < s->page || pg >= s->page + s->npages)
		return -EINVAL;
	if (s->state == SPAN_LARGE) {
		if (pg != s->page || ((uintptr_t)p & (UM_POOL_PAGE - 1)))
			return -EINVAL;
	} else if (s->state != SPAN_SLAB) {
		return -EINVAL;
	}
	*sp = s;
	*hp = &pool->heaps[c->heap];
	return 0;
}

int um__pool_free(struct um_pool *pool, void *ptr)
{
	struct span *s;
	struct heap *h;
	int ret;

	if (!pool || !ptr)
		return -EINVAL;
	pthread_mutex_lock(&pool->mu);
	ret = block_lookup(pool, ptr, &s, &h);
	if (ret)
		goto out;
	if (s->state == SPAN_SLAB) {
		ret = slab_free(pool, h, s, ptr);
		if (ret)
			goto out;
	} else {
		h->st.used -= s->npages << PAGE_SHIFT;
		h->st.requested -= s->requested;
		span_release(pool, h, s);
	}
	h->st.blocks--;
	h->st.frees++;
out:
	pthread_mutex_unlock(&pool->mu);
	return ret;
}

int um__pool_block_info(struct um_pool *pool, const void *ptr, size_t *usable,
			int *node, size_t *requested)
{
	struct span *s;
	struct heap *h;
	size_t u, r;
	int ret;

	if (!pool || !ptr)
		return -EINVAL;
	pthread_mutex_lock(&pool->mu);
	ret = block_lookup(pool, ptr, &s, &h);
	if (!ret && s->state == SPAN_SLAB) {
		size_t off = (size_t)((const char *)ptr - s->chunk->base) -
			     (s->page << PAGE_SHIFT);
		uint32_t i = (uint32_t)(off / class_size[s->klass]);

		if ((size_t)i * class_size[s->klass] != off ||
		    i >= s->nslots || !(s->bits[i / 64] & (1ull << (i & 63))))
			ret = -EINVAL;
		u = class_size[s->klass];
		r = ret ? 0 : s->req[i];
	} else if (!ret) {
		u = s->npages << PAGE_SHIFT;
		r = s->requested;
	}
	if (!ret) {
		if (usable)
			*usable = u;
		if (requested)
			*requested = r;
		if (node)
			*node = h->node;
	}
	pthread_mutex_unlock(&pool->mu);
	return ret;
}

int um__pool_reserve(struct um_pool *pool, int node, uint64_t bytes)
{
	int hi = heap_index(node);
	size_t n;

	if (!pool || hi < 0)
		return -EINVAL;
	if (!bytes)
		return 0;
	if (bytes > MAX_BYTES)
		return -ENOMEM;
	n = (bytes + UM_POOL_PAGE - 1) >> PAGE_SHIFT;
	/* heap_grow returns at once when a span of n pages is already free */
	return heap_grow(pool, hi, n);
}

/* Release every empty slab of heap h to its free spans. Under mu. */
static void heap_drop_empty_slabs(struct um_pool *pool, struct heap *h)
{
	for (unsigned int k = 0; k < NCLASSES; k++) {
		struct span *s = h->partial[k], *next;

		for (; s; s = next) {
			next = s->next;
			if (s->nused)
				continue;
			partial_remove(h, s);
			span_release(pool, h, s);
		}
		h->nempty[k] = 0;
	}
}

int64_t um__pool_trim(struct um_pool *pool, int node, uint64_t keep)
{
	struct chunk *gone = NULL, *c, *next;
	int64_t total = 0;
	int first, last;

	if (!pool)
		return -EINVAL;
	if (node == UM_POOL_NODE_ALL) {
		first = 0;
		last = HEAP_COUNT - 1;
	} else {
		first = last = heap_index(node);
		if (first < 0)
			return -EINVAL;
	}
	pthread_mutex_lock(&pool->grow_mu);
	pthread_mutex_lock(&pool->mu);
	for (int hi = first; hi <= last; hi++) {
		struct heap *h = &pool->heaps[hi];

		heap_drop_empty_slabs(pool, h);
		for (c = h->chunks; c; c = next) {
			struct span *s = c->map[0];

			next = c->next;
			if (!s || s->state != SPAN_FREE || s->chunk != c ||
			    s->npages != c->npages)
				continue;
			if (((h->free_pages - c->npages) << PAGE_SHIFT) < keep)
				continue;
			tlsf_remove(h, s);
			span_put(pool, s);
			index_remove(pool, c);
			if (c->prev)
				c->prev->next = c->next;
			else
				h->chunks = c->next;
			if (c->next)
				c->next->prev = c->prev;
			pool->bytes -= c->bytes;
			h->st.chunks--;
			h->st.bytes -= c->bytes;
			h->st.trimmed_chunks++;
			h->st.trimmed_bytes += c->bytes;
			total += (int64_t)c->bytes;
			c->next = gone;
			gone = c;
		}
	}
	pthread_mutex_unlock(&pool->mu);
	for (c = gone; c; c = next) {
		next = c->next;
		pool->be->ops->host_free(pool->be, c->base, c->bytes);
		free(c->map);
		free(c);
	}
	pthread_mutex_unlock(&pool->grow_mu);
	return total;
}

static void stats_add(struct um_pool_stats *a, const struct um_pool_stats *b)
{
	a->chunks += b->chunks;
	a->bytes += b->bytes;
	a->used += b->used;
	a->requested += b->requested;
	a->blocks += b->blocks;
	a->allocs += b->allocs;
	a->frees += b->frees;
	a->grows += b->grows;
	a->grow_failures += b->grow_failures;
	a->trimmed_chunks += b->trimmed_chunks;
	a->trimmed_bytes += b->trimmed_bytes;
	a->grow_ns += b->grow_ns;
}

int um__pool_stats(struct um_pool *pool, int node, struct um_pool_stats *st)
{
	int first, last;
	uint64_t largest = 0;

	if (!pool || !st)
		return -EINVAL;
	if (node == UM_POOL_NODE_ALL) {
		first = 0;
		last = HEAP_COUNT - 1;
	} else {
		first = last = heap_index(node);
		if (first < 0)
			return -EINVAL;
	}
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&pool->mu);
	for (int hi = first; hi <= last; hi++) {
		uint64_t l = (uint64_t)tlsf_largest(&pool->heaps[hi])
			     << PAGE_SHIFT;

		stats_add(st, &pool->heaps[hi].st);
		if (l > largest)
			largest = l;
	}
	pthread_mutex_unlock(&pool->mu);
	st->free_bytes = st->bytes - st->used;
	st->largest_free = largest;
	st->internal_frag_bp = st->used ?
		(uint32_t)((st->used - st->requested) * 10000 / st->used) : 0;
	st->external_frag_bp = st->free_bytes ?
		(uint32_t)(10000 - largest * 10000 / st->free_bytes) : 0;
	return 0;
}
