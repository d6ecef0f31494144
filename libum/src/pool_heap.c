// SPDX-License-Identifier: MIT
/*
 * pool_heap.c - the pool's heaps: chunks, page spans and slabs.
 *
 * All metadata lives in ordinary malloc'ed memory beside the chunks (a page
 * map points every page at its span), so pinned memory is never written by
 * the pool and blocks can be page-aligned without headers.
 *
 * Free spans are indexed by a two-level segregated fit: the first level is
 * the power of two of the page count, the second splits it in 16. A search
 * rounds the request up to the next second-level step, so any span found in
 * a non-empty list fits: O(1) with two bitmap scans, no list walk. Freeing
 * coalesces with both neighbours through the page map, also O(1).
 *
 * Small blocks come from slabs: spans cut into same-sized slots, a bitmap
 * of slots in use, the bytes asked per slot (for fragmentation figures).
 * One empty slab per class is kept against alloc/free ping-pong.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool_internal.h"
#include "um_numa.h"

/*
 * Four classes per doubling up to 4 KiB (all multiples of 64 bytes, so slots
 * are 64-byte aligned), then multiples of 4 KiB (so slots of 4 KiB or more
 * are page aligned) up to UM_POOL_SMALL_MAX.
 */
const uint32_t um__pool_class_size[NCLASSES] = {
	64, 128, 192, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
	1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
	8192, 12288, 16384, 20480, 24576, 28672, 32768,
};

/* class of sizes 1..4096, indexed by (size + 63) / 64; filled at create */
uint8_t um__pool_class_of_64[65];
uint64_t um__pool_class_recip[NCLASSES];

#define class_size um__pool_class_size

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

void um__pool_lock_slow(struct um_pool *pool)
{
	unsigned int spins = 0;

	do {
		while (__atomic_load_n(&pool->lk, __ATOMIC_RELAXED)) {
			if (++spins < 200)
				cpu_relax();
			else
				sched_yield();
		}
	} while (__atomic_exchange_n(&pool->lk, 1, __ATOMIC_ACQUIRE));
}

/* Slab of at least 64 KiB and at least 8 slots, whole pages. */
size_t um__pool_slab_pages(unsigned int k)
{
	size_t b = (size_t)class_size[k] * 8;

	if (b < (64u << 10))
		b = 64u << 10;
	return b >> POOL_PAGE_SHIFT;
}

static inline unsigned int fls64(uint64_t x)	/* x != 0 */
{
	return 63u - (unsigned int)__builtin_clzll(x);
}

static inline unsigned int ffs64(uint64_t x)	/* x != 0 */
{
	return (unsigned int)__builtin_ctzll(x);
}

/* Sequence count around changes of a span lock-free readers may see. */
static inline void seq_begin(struct span *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void seq_end(struct span *s)
{
	__atomic_store_n(&s->seq, s->seq + 1, __ATOMIC_RELEASE);
}

/* ---- page map ------------------------------------------------------------ */

int um__pool_pm_prepare(struct um_pool *pool, const char *p, size_t len)
{
	uintptr_t first = (uintptr_t)p >> POOL_PAGE_SHIFT;
	uintptr_t last = ((uintptr_t)p + len - 1) >> POOL_PAGE_SHIFT;

	if (last >> (PM_L1_BITS + PM_L2_BITS))
		return -ENOMEM;
	for (uintptr_t i = first >> PM_L2_BITS; i <= last >> PM_L2_BITS; i++) {
		struct span **l2;

		if (pool->pm[i])
			continue;
		l2 = calloc(PM_L2_SIZE, sizeof(*l2));
		if (!l2)
			return -ENOMEM;
		__atomic_store_n(&pool->pm[i], l2, __ATOMIC_RELEASE);
	}
	return 0;
}

static inline void pm_set(struct um_pool *pool, const char *p, struct span *s)
{
	uintptr_t pn = (uintptr_t)p >> POOL_PAGE_SHIFT;

	__atomic_store_n(&pool->pm[pn >> PM_L2_BITS][pn & (PM_L2_SIZE - 1)], s,
			 __ATOMIC_RELEASE);
}

void um__pool_pm_clear(struct um_pool *pool, const char *p, size_t len)
{
	for (size_t o = 0; o < len; o += UM_POOL_PAGE)
		pm_set(pool, p + o, NULL);
}

/* ---- span structs and slab metadata -------------------------------------- */

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
	/* a lock-free reader may still hold this struct from its last life */
	seq_begin(s);
	seq_end(s);
	return s;
}

void um__pool_span_put(struct um_pool *pool, struct span *s)
{
	seq_begin(s);
	s->state = SPAN_UNUSED;
	s->chunk = NULL;
	seq_end(s);
	s->next = pool->spare;
	pool->spare = s;
}

static struct slab_meta *meta_get(struct um_pool *pool)
{
	struct slab_meta *m = pool->spare_meta;

	if (!m) {
		struct meta_batch *b = malloc(sizeof(*b));
		int n = (int)(sizeof(b->metas) / sizeof(b->metas[0]));

		if (!b)
			return NULL;
		b->next = pool->meta_batches;
		pool->meta_batches = b;
		for (int i = n - 1; i >= 0; i--) {
			b->metas[i].next = pool->spare_meta;
			pool->spare_meta = &b->metas[i];
		}
		m = pool->spare_meta;
	}
	pool->spare_meta = m->next;
	return m;
}

static void meta_put(struct um_pool *pool, struct slab_meta *m)
{
	m->next = pool->spare_meta;
	pool->spare_meta = m;
}

static inline void span_map(struct um_pool *pool, struct span *s)
{
	pm_set(pool, s->base, s);
	pm_set(pool, s->base + ((s->npages - 1) << POOL_PAGE_SHIFT), s);
}

/* ---- TLSF index of free spans -------------------------------------------- */

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

static void tlsf_insert(struct um_pool *pool, struct heap *h, struct span *s)
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
	span_map(pool, s);
}

void um__pool_tlsf_remove(struct heap *h, struct span *s)
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

	if (n >= SL_COUNT)
		n += ((size_t)1 << (fls64(n) - SL_BITS)) - 1;
	tlsf_mapping(n, &fl, &sl);
	if (fl >= FL_COUNT)
		return NULL;
	smap = h->sl_bitmap[fl] & (~0u << sl);
	if (!smap) {
		fmap = h->fl_bitmap & (~0ull << (fl + 1));
		if (!fmap)
			return NULL;
		fl = ffs64(fmap);
		smap = h->sl_bitmap[fl];
	}
	sl = ffs64(smap);
	return h->free[fl][sl];
}

/* Largest free span's page count (walks one list; for stats). */
size_t um__pool_largest_free(const struct heap *h)
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

/* Take n pages: split the found span, put the tail back. */
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
	seq_begin(s);
	um__pool_tlsf_remove(h, s);
	if (rest) {
		rest->chunk = s->chunk;
		rest->hi = s->hi;
		rest->page = s->page + n;
		rest->npages = s->npages - n;
		rest->base = s->base + (n << POOL_PAGE_SHIFT);
		s->npages = n;
		tlsf_insert(pool, h, rest);
	}
	span_map(pool, s);
	seq_end(s);
	return s;
}

/* Return a span's pages to the free index, merging with free neighbours. */
static void span_release(struct um_pool *pool, struct heap *h, struct span *s)
{
	struct chunk *c = s->chunk;
	struct span *n;

	seq_begin(s);
	if (s->page > 0) {
		n = pm_get(pool, s->base - UM_POOL_PAGE);
		if (n && n->state == SPAN_FREE && n->chunk == c &&
		    n->page + n->npages == s->page) {
			um__pool_tlsf_remove(h, n);
			s->page = n->page;
			s->base = n->base;
			s->npages += n->npages;
			um__pool_span_put(pool, n);
		}
	}
	if (s->page + s->npages < c->npages) {
		n = pm_get(pool, s->base + (s->npages << POOL_PAGE_SHIFT));
		if (n && n->state == SPAN_FREE && n->chunk == c &&
		    n->page == s->page + s->npages) {
			um__pool_tlsf_remove(h, n);
			s->npages += n->npages;
			um__pool_span_put(pool, n);
		}
	}
	tlsf_insert(pool, h, s);
	seq_end(s);
}

/* ---- slabs --------------------------------------------------------------- */

static struct span *slab_new(struct um_pool *pool, struct heap *h,
			     unsigned int k)
{
	size_t np = um__pool_slab_pages(k);
	uint32_t nslots = (uint32_t)((np << POOL_PAGE_SHIFT) / class_size[k]);
	size_t words = (nslots + 63) / 64;
	struct slab_meta *m;
	struct span *s;

	m = meta_get(pool);
	if (!m)
		return NULL;
	s = span_take(pool, h, np);
	if (!s) {
		meta_put(pool, m);
		return NULL;
	}
	memset(m->bits, 0, sizeof(m->bits));
	memset(m->state, SLOT_FREE, sizeof(m->state));
	/* bits past nslots read as used so the scan never picks them */
	for (size_t w = words; w < SLAB_MAX_SLOTS / 64; w++)
		m->bits[w] = ~0ull;
	if (nslots % 64)
		m->bits[words - 1] = ~0ull << (nslots % 64);
	seq_begin(s);
	s->state = SPAN_SLAB;
	s->klass = (uint8_t)k;
	s->nslots = nslots;
	s->nused = 0;
	s->hint = 0;
	s->meta = m;
	seq_end(s);
	for (size_t i = 0; i < np; i++)
		pm_set(pool, s->base + (i << POOL_PAGE_SHIFT), s);
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

static void slab_release(struct um_pool *pool, struct heap *h, struct span *s)
{
	partial_remove(h, s);
	seq_begin(s);
	meta_put(pool, s->meta);
	s->meta = NULL;
	s->state = SPAN_FREE;
	seq_end(s);
	span_release(pool, h, s);
}

/* Hand out one slot of class k (bits set, heap used counted). */
static void *slot_take(struct um_pool *pool, struct heap *h, unsigned int k,
		       uint8_t state, struct span **sp, uint32_t *idx)
{
	struct span *s = h->partial[k];
	uint64_t *bits;
	unsigned int w;
	uint32_t i;

	if (!s) {
		s = slab_new(pool, h, k);
		if (!s)
			return NULL;
	}
	bits = s->meta->bits;
	for (w = s->hint; !~bits[w]; w++)
		;
	i = w * 64 + ffs64(~bits[w]);
	__atomic_store_n(&bits[w], bits[w] | (1ull << (i & 63)),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->meta->state[i], state, __ATOMIC_RELAXED);
	s->hint = (uint16_t)w;
	if (s->nused++ == 0)
		h->nempty[k]--;
	if (s->nused == s->nslots)
		partial_remove(h, s);
	h->st.used += class_size[k];
	*sp = s;
	*idx = i;
	return s->base + (size_t)i * class_size[k];
}

/* Take a slot back (bits cleared, heap used uncounted). */
static void slot_put(struct um_pool *pool, struct heap *h, struct span *s,
		     uint32_t i)
{
	unsigned int k = s->klass;
	uint64_t *bits = s->meta->bits;

	__atomic_store_n(&bits[i / 64], bits[i / 64] & ~(1ull << (i & 63)),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&s->meta->state[i], SLOT_FREE, __ATOMIC_RELAXED);
	if (i / 64 < s->hint)
		s->hint = (uint16_t)(i / 64);
	h->st.used -= class_size[k];
	if (s->nused-- == s->nslots) {
		s->prev = NULL;
		s->next = h->partial[k];
		if (s->next)
			s->next->prev = s;
		h->partial[k] = s;
	}
	if (s->nused == 0) {
		if (h->nempty[k])
			slab_release(pool, h, s);
		else
			h->nempty[k]++;
	}
}

int um__pool_slot_take(struct um_pool *pool, struct heap *h, unsigned int k,
		       struct span **sp, uint16_t *idx, void **out)
{
	uint32_t i;
	void *p;

	if (!h->partial[k] && !tlsf_find(h, um__pool_slab_pages(k)))
		return -EAGAIN;
	p = slot_take(pool, h, k, SLOT_CACHED, sp, &i);
	if (!p)
		return -ENOMEM;
	*idx = (uint16_t)i;
	*out = p;
	return 0;
}

void um__pool_slot_put(struct um_pool *pool, struct span *s, uint16_t idx)
{
	slot_put(pool, &pool->heaps[s->hi], s, idx);
}

void um__pool_drop_empty_slabs(struct um_pool *pool, struct heap *h)
{
	for (unsigned int k = 0; k < NCLASSES; k++) {
		struct span *s = h->partial[k], *next;

		for (; s; s = next) {
			next = s->next;
			if (!s->nused)
				slab_release(pool, h, s);
		}
		h->nempty[k] = 0;
	}
}

/* ---- blocks -------------------------------------------------------------- */

int um__pool_heap_alloc(struct um_pool *pool, struct heap *h, size_t bytes,
			bool user, size_t *npages_out, void **out)
{
	struct span *s;
	void *p;

	if (bytes <= UM_POOL_SMALL_MAX) {
		unsigned int k = pool_size_class(bytes);
		uint32_t i;

		*npages_out = um__pool_slab_pages(k);
		if (!h->partial[k] && !tlsf_find(h, *npages_out))
			return -EAGAIN;
		p = slot_take(pool, h, k, slot_live(user), &s, &i);
		if (!p)
			return -ENOMEM;
		s->meta->req[i] = (uint16_t)bytes;
	} else {
		size_t n = (bytes + UM_POOL_PAGE - 1) >> POOL_PAGE_SHIFT;

		*npages_out = n;
		if (!tlsf_find(h, n))
			return -EAGAIN;
		s = span_take(pool, h, n);
		if (!s)
			return -ENOMEM;
		seq_begin(s);
		s->state = SPAN_LARGE;
		s->requested = bytes;
		s->user = user;
		seq_end(s);
		h->st.used += n << POOL_PAGE_SHIFT;
		p = s->base;
	}
	h->st.requested += bytes;
	h->st.blocks++;
	h->st.allocs++;
	*out = p;
	return 0;
}

int um__pool_block_lookup(struct um_pool *pool, const void *p, int user,
			  struct span **sp, uint32_t *idx)
{
	struct span *s = pm_get(pool, p);
	const char *cp = p;

	/* entries of interior pages may be stale: check the span agrees */
	if (!s || !s->chunk || cp < s->base ||
	    cp >= s->base + (s->npages << POOL_PAGE_SHIFT))
		return -EINVAL;
	if (s->state == SPAN_LARGE) {
		if (cp != s->base || (user >= 0 && s->user != user))
			return -EINVAL;
		*idx = 0;
	} else if (s->state == SPAN_SLAB) {
		size_t off = (size_t)(cp - s->base);
		uint32_t i = slot_index(off, s->klass);

		uint8_t st;

		if ((size_t)i * class_size[s->klass] != off || i >= s->nslots)
			return -EINVAL;
		/* a CACHED slot is free as far as its user knows */
		st = s->meta->state[i];
		if (user >= 0 ? st != slot_live(user) :
				(st != SLOT_LIVE && st != SLOT_LIVE_USER))
			return -EINVAL;
		*idx = i;
	} else {
		return -EINVAL;
	}
	*sp = s;
	return 0;
}

void um__pool_block_free(struct um_pool *pool, struct span *s, uint32_t idx)
{
	struct heap *h = &pool->heaps[s->hi];

	if (s->state == SPAN_SLAB) {
		h->st.requested -= s->meta->req[idx];
		slot_put(pool, h, s, idx);
	} else {
		h->st.used -= s->npages << POOL_PAGE_SHIFT;
		h->st.requested -= s->requested;
		span_release(pool, h, s);
	}
	h->st.blocks--;
	h->st.frees++;
}

/* ---- growth -------------------------------------------------------------- */

/*
 * Add a chunk of at least need_pages to heap hi. Called with no lock held;
 * takes grow_mu, and the pool lock only around bookkeeping, never around
 * host_alloc. Returns 0 when the heap (now, or thanks to another grower)
 * has a span of need_pages, else -errno.
 */
void (*um__pool_grow_hook)(void);

int um__pool_heap_grow(struct um_pool *pool, int hi, size_t need_pages,
		       const uint64_t *top_up_since)
{
	struct heap *h = &pool->heaps[hi];
	uint64_t need = (uint64_t)need_pages << POOL_PAGE_SHIFT;
	uint64_t size = pool->chunk_bytes;
	struct um_numa_saved_policy pol;
	struct chunk *c = NULL;
	struct span *s;
	void *mem = NULL;
	uint64_t t0;
	int ret;

	pthread_mutex_lock(&pool->grow_mu);
	pool_lock(pool);
	if (top_up_since &&
	    __atomic_load_n(&pool->trimmed_at_ns, __ATOMIC_RELAXED) !=
	    *top_up_since) {
		ret = -ECANCELED;	/* trims set it under grow_mu */
		goto out_unlock;
	}
	if (!top_up_since && tlsf_find(h, need_pages)) {
		ret = 0;
		goto out_unlock;
	}
	if (need > size)
		size = (need + UM_POOL_MIN_CHUNK - 1) &
		       ~(UM_POOL_MIN_CHUNK - 1);
	if (pool->max_bytes) {
		uint64_t room = pool->max_bytes > pool->bytes ?
				pool->max_bytes - pool->bytes : 0;

		/* else a smaller chunk that still fits under the cap */
		if (size > room)
			size = need;
		if (size > room) {
			ret = -ENOMEM;
			h->st.grow_failures++;
			goto out_unlock;
		}
	}
	pool_unlock(pool);

	ret = -ENOMEM;
	c = calloc(1, sizeof(*c));
	/*
	 * Reachable from the pool while the backend pins: a fork() child,
	 * which has no copy of this thread, keeps it with the pool.
	 */
	pool->growing = c;
	/*
	 * Whoever grows (often the application's own thread, in an eviction)
	 * may be bound to the node that is filling, and the chunk is for
	 * another: the page tables its fault-in needs must not wait for the
	 * full node (seen in the VM rig: the trainer's thread OOM-killed in
	 * a huge page's page-table allocation on node 0 while populating a
	 * chunk for node 1).
	 */
	um__numa_thread_place(h->node, &pol);
	if (um__pool_grow_hook)
		um__pool_grow_hook();
	t0 = um__now_ns();
	if (c)
		ret = pool->be->ops->host_alloc(pool->be, size, h->node, &mem);
	um__numa_thread_restore(&pol);
	if (!ret && ((uintptr_t)mem & (UM_POOL_PAGE - 1))) {
		/* every backend gives page-aligned memory; refuse others */
		pool->be->ops->host_free(pool->be, mem, size);
		ret = -EINVAL;
	}

	pool_lock(pool);
	h->st.grow_ns += um__now_ns() - t0;
	s = NULL;
	if (!ret) {
		s = span_get(pool);
		if (!s || um__pool_pm_prepare(pool, mem, size)) {
			if (s)
				um__pool_span_put(pool, s);
			pool_unlock(pool);
			pool->be->ops->host_free(pool->be, mem, size);
			pool_lock(pool);
			ret = -ENOMEM;
		}
	}
	if (ret) {
		h->st.grow_failures++;
		goto out_unlock;
	}
	c->base = mem;
	c->bytes = size;
	c->npages = size >> POOL_PAGE_SHIFT;
	um__pool_chunk_link(h, c, hi);
	pool->bytes += size;
	h->st.chunks++;
	h->st.bytes += size;
	h->st.grows++;
	s->chunk = c;
	s->hi = hi;
	s->page = 0;
	s->npages = c->npages;
	s->base = c->base;
	tlsf_insert(pool, h, s);
	c = NULL;
out_unlock:
	pool->growing = NULL;
	pool_unlock(pool);
	pthread_mutex_unlock(&pool->grow_mu);
	free(c);
	return ret;
}

/* ---- chunks between heaps ----------------------------------------------- */

void um__pool_chunk_link(struct heap *h, struct chunk *c, int hi)
{
	c->hi = hi;
	c->prev = NULL;
	c->next = h->chunks;
	if (c->next)
		c->next->prev = c;
	h->chunks = c;
}

void um__pool_chunk_unlink(struct heap *h, struct chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		h->chunks = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

void um__pool_chunk_rehome(struct um_pool *pool, struct span *s, int to)
{
	struct chunk *c = s->chunk;
	struct heap *a = &pool->heaps[c->hi], *b = &pool->heaps[to];
	uint64_t used = (uint64_t)s->npages << POOL_PAGE_SHIFT;

	um__pool_chunk_unlink(a, c);
	um__pool_chunk_link(b, c, to);
	/* read without the lock by cache_free, which then takes the lock */
	__atomic_store_n(&s->hi, to, __ATOMIC_RELAXED);
	a->st.chunks--;
	b->st.chunks++;
	a->st.bytes -= c->bytes;
	b->st.bytes += c->bytes;
	a->st.used -= used;
	b->st.used += used;
	/* may wrap while a thread cache of a holds the allocation's share */
	a->st.requested -= s->requested;
	b->st.requested += s->requested;
	a->st.blocks--;
	b->st.blocks++;
}
