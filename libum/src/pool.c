// SPDX-License-Identifier: MIT
/*
 * pool.c - the pinned host pool's entry points (pool.h).
 *
 * Small blocks go through the calling thread's cache (pool_cache.c) when
 * it can serve; everything else takes the pool lock and works on the heap
 * (pool_heap.c). Growing and trimming call the backend with no lock held.
 * See Documentation/design/pool.rst for the design and its measurements.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pool_internal.h"

#define class_size um__pool_class_size

static pthread_once_t class_once = PTHREAD_ONCE_INIT;

static void class_init(void)
{
	unsigned int c = 0;

	for (unsigned int i = 1; i <= 64; i++) {
		while (class_size[c] < i * 64)
			c++;
		um__pool_class_of_64[i] = (uint8_t)c;
	}
	for (unsigned int k = 0; k < NCLASSES; k++)
		um__pool_class_recip[k] =
			((uint64_t)1 << 40) / class_size[k] + 1;
}

static inline int heap_index(int node)
{
	if (node == UM_POOL_NODE_ANY)
		return 0;
	if (node < 0 || node >= UM_POOL_MAX_NODES)
		return -1;
	return node + 1;
}

/* First and last heap index named by node (or UM_POOL_NODE_ALL). */
static int heap_range(int node, int *first, int *last)
{
	if (node == UM_POOL_NODE_ALL) {
		*first = 0;
		*last = HEAP_COUNT - 1;
		return 0;
	}
	*first = *last = heap_index(node);
	return *first < 0 ? -EINVAL : 0;
}

int um__pool_create(struct um_backend *be, const struct um_pool_config *cfg,
		    struct um_pool **out)
{
	struct um_pool *pool;
	uint64_t chunk = UM_POOL_DEFAULT_CHUNK;

	if (!be || !be->ops || !be->ops->host_alloc || !be->ops->host_free ||
	    !out)
		return -EINVAL;
	if (cfg && cfg->chunk_bytes) {
		if (cfg->chunk_bytes > POOL_MAX_BYTES)
			return -EINVAL;
		chunk = (cfg->chunk_bytes + UM_POOL_MIN_CHUNK - 1) &
			~(UM_POOL_MIN_CHUNK - 1);
	}
	pthread_once(&class_once, class_init);
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->pm = calloc((size_t)1 << PM_L1_BITS, sizeof(*pool->pm));
	if (!pool->pm) {
		free(pool);
		return -ENOMEM;
	}
	pool->be = be;
	pool->chunk_bytes = chunk;
	pool->max_bytes = cfg ? cfg->max_bytes : 0;
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
	pool_lock(pool);
	live = um__pool_cache_orphan_all(pool);
	pool_unlock(pool);
	for (int i = 0; i < HEAP_COUNT; i++) {
		struct heap *h = &pool->heaps[i];

		live += (int64_t)h->st.blocks;
		while (h->chunks) {
			struct chunk *c = h->chunks;

			h->chunks = c->next;
			pool->be->ops->host_free(pool->be, c->base, c->bytes);
			free(c);
		}
	}
	for (size_t i = 0; i < ((size_t)1 << PM_L1_BITS); i++)
		free(pool->pm[i]);
	free(pool->pm);
	while (pool->batches) {
		struct span_batch *b = pool->batches;

		pool->batches = b->next;
		free(b);
	}
	while (pool->meta_batches) {
		struct meta_batch *b = pool->meta_batches;

		pool->meta_batches = b->next;
		free(b);
	}
	pthread_mutex_destroy(&pool->grow_mu);
	free(pool);
	return live;
}

/* ---- lock-free fast paths (caches: pool_cache.c) ------------------------- */

#define TC_SET(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static inline struct tcache *tc_get(struct um_pool *pool, int hi)
{
	struct tcache *tc = um__pool_tc;

	if (__builtin_expect(tc && tc->pool == pool && tc->hi == hi &&
			     tc->gen == LOAD(pool->gen), 1))
		return tc;
	return um__pool_tc_slow(pool, hi, true);
}

/* 0 done, 1 not for the cache (locked path), -EAGAIN grow, -ENOMEM. */
static inline int cache_alloc(struct um_pool *pool, int hi, size_t bytes,
			      bool user, void **out)
{
	struct tcache *tc = tc_get(pool, hi);
	struct tc_bin *b;
	uint32_t n;
	int ret;

	if (!tc)
		return 1;
	if (bytes > UM_POOL_SMALL_MAX) {
		size_t len = (bytes + UM_POOL_PAGE - 1) &
			     ~(size_t)(UM_POOL_PAGE - 1);

		if (!tc->large_p || tc->large_bytes != len)
			return 1;
		*out = tc->large_p;
		/* the block is ours: no one else touches its span */
		TC_SET(tc->large_s->requested, bytes);
		TC_SET(tc->large_s->user, (uint8_t)user);
		tc->large_p = NULL;
		TC_SET(tc->large_bytes, 0);
	} else {
		b = &tc->bin[pool_size_class(bytes)];
		if (!b->n) {
			ret = um__pool_tc_refill(pool, tc,
						 pool_size_class(bytes));
			if (ret)
				return ret;
		}
		n = b->n - 1;
		TC_SET(b->n, n);
		/* the slot is ours: its slab, and so its meta, stays */
		TC_SET(b->s[n]->meta->req[b->idx[n]], (uint16_t)bytes);
		TC_SET(b->s[n]->meta->state[b->idx[n]], slot_live(user));
		*out = b->p[n];
	}
	TC_SET(tc->req_delta, tc->req_delta + (int64_t)bytes);
	TC_SET(tc->allocs, tc->allocs + 1);
	return 0;
}

/*
 * Free into the calling thread's cache: 0 done, -EINVAL already in the
 * cache, 1 anything else (the locked path decides). The span is read under
 * its sequence count; any change or doubt sends us to the locked path.
 */
static inline int cache_free(struct um_pool *pool, void *p, bool user)
{
	struct tcache *tc = um__pool_tc;
	unsigned int seq, state, k = 0;
	size_t req, len = 0;
	struct slab_meta *meta = NULL;
	struct span *s;
	uint32_t idx = 0;
	uint8_t slot = slot_live(user);
	char *base;

	if (!tc || tc->pool != pool)
		return 1;
	if (tc->gen != LOAD(pool->gen) &&
	    !um__pool_tc_slow(pool, tc->hi, false))
		return 1;
	s = pm_get(pool, p);
	if (!s)
		return 1;
	seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
	state = LOAD(s->state);
	base = LOAD(s->base);
	if ((seq & 1) || LOAD(s->hi) != tc->hi || (char *)p < base)
		return 1;
	if (state == SPAN_SLAB) {
		size_t off = (size_t)((char *)p - base);

		meta = LOAD(s->meta);
		k = LOAD(s->klass);
		if (off >> 18 || k >= NCLASSES || !meta)
			return 1;
		idx = slot_index(off, k);
		if (idx >= LOAD(s->nslots) ||
		    (size_t)idx * class_size[k] != off)
			return 1;
		slot = LOAD(meta->state[idx]);
		req = LOAD(meta->req[idx]);
	} else if (state == SPAN_LARGE) {
		len = LOAD(s->npages) << POOL_PAGE_SHIFT;
		if ((char *)p != base || len > TC_LARGE_MAX ||
		    LOAD(s->user) != user)
			return 1;
		req = LOAD(s->requested);
	} else {
		return 1;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (LOAD(s->seq) != seq)
		return 1;
	if (state == SPAN_SLAB && slot != slot_live(user))
		return slot == SLOT_CACHED ? -EINVAL : 1; /* freed twice? */

	if (state == SPAN_LARGE) {
		if (tc->large_p == p)
			return -EINVAL;		/* freed twice */
		if (tc->large_p)
			um__pool_tc_drop_large(pool, tc);
		tc->large_p = p;
		tc->large_s = s;
		TC_SET(tc->large_bytes, len);
	} else {
		struct tc_bin *b = &tc->bin[k];

		TC_SET(meta->state[idx], (uint8_t)SLOT_CACHED);
		if (b->n == TC_MAX)
			um__pool_tc_trim_bin(pool, tc, k);
		b->p[b->n] = p;
		b->s[b->n] = s;
		b->idx[b->n] = (uint16_t)idx;
		TC_SET(b->n, b->n + 1);
	}
	TC_SET(tc->req_delta, tc->req_delta - (int64_t)req);
	TC_SET(tc->frees, tc->frees + 1);
	return 0;
}

/* ---- entry points -------------------------------------------------------- */

int um__pool_alloc(struct um_pool *pool, size_t bytes, int node,
		   unsigned int flags, void **out)
{
	int hi = heap_index(node);
	bool user = flags & UM_POOL_USER;
	struct heap *h;
	size_t need;
	void *p = NULL;
	int ret;

	if (!pool || !out || !bytes || hi < 0 ||
	    (flags & ~(unsigned int)(UM_POOL_NOGROW | UM_POOL_ZERO |
				     UM_POOL_USER)))
		return -EINVAL;
	if (bytes > POOL_MAX_BYTES)
		return -ENOMEM;
	h = &pool->heaps[hi];
	for (;;) {
		if (bytes <= TC_LARGE_MAX) {
			ret = cache_alloc(pool, hi, bytes, user, &p);
			if (!ret)
				break;
			if (ret < 0) {	/* only small blocks refill */
				need = um__pool_slab_pages(
					pool_size_class(bytes));
				goto got;
			}
		}
		pool_lock(pool);
		ret = um__pool_heap_alloc(pool, h, bytes, user, &need, &p);
		pool_unlock(pool);
got:
		if (ret != -EAGAIN)
			break;
		/* what this thread keeps back may be enough */
		if (um__pool_tc_give_back(pool))
			continue;
		if (flags & UM_POOL_NOGROW)
			return -EAGAIN;
		ret = um__pool_heap_grow(pool, hi, need, NULL);
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

int um__pool_free_flags(struct um_pool *pool, void *ptr, unsigned int flags)
{
	bool user = flags & UM_POOL_USER;
	struct span *s;
	uint32_t idx;
	int ret;

	if (!pool || !ptr || (flags & ~(unsigned int)UM_POOL_USER))
		return -EINVAL;
	ret = cache_free(pool, ptr, user);
	if (ret <= 0)
		return ret;
	pool_lock(pool);
	ret = um__pool_block_lookup(pool, ptr, user, &s, &idx);
	if (!ret && um__pool_cache_holds(pool, ptr))
		ret = -EINVAL;			/* freed twice */
	if (!ret)
		um__pool_block_free(pool, s, idx);
	pool_unlock(pool);
	return ret;
}

int um__pool_free(struct um_pool *pool, void *ptr)
{
	return um__pool_free_flags(pool, ptr, 0);
}

int um__pool_block_info(struct um_pool *pool, const void *ptr, size_t *usable,
			int *node, size_t *requested)
{
	struct span *s;
	uint32_t idx;
	int ret;

	if (!pool || !ptr)
		return -EINVAL;
	pool_lock(pool);
	ret = um__pool_block_lookup(pool, ptr, -1, &s, &idx);
	if (!ret && um__pool_cache_holds(pool, ptr))
		ret = -EINVAL;			/* already freed */
	if (!ret) {
		bool slab = s->state == SPAN_SLAB;

		if (usable)
			*usable = slab ? class_size[s->klass] :
					 s->npages << POOL_PAGE_SHIFT;
		if (requested)
			*requested = slab ? s->meta->req[idx] : s->requested;
		if (node)
			*node = pool->heaps[s->hi].node;
	}
	pool_unlock(pool);
	return ret;
}

int um__pool_reserve(struct um_pool *pool, int node, uint64_t bytes)
{
	int hi = heap_index(node);

	if (!pool || hi < 0)
		return -EINVAL;
	if (!bytes)
		return 0;
	if (bytes > POOL_MAX_BYTES)
		return -ENOMEM;
	/* returns at once when a span that large is already free */
	return um__pool_heap_grow(pool, hi,
				  (bytes + UM_POOL_PAGE - 1) >>
				  POOL_PAGE_SHIFT, NULL);
}

int um__pool_top_up(struct um_pool *pool, int node, uint64_t free_bytes,
		    uint64_t span_bytes, uint64_t trimmed_at, const bool *stop)
{
	int hi = heap_index(node), grown = 0;
	struct um_pool_stats st;
	uint64_t want;
	int ret;

	if (!pool || hi < 0 || !stop)
		return -EINVAL;
	if (free_bytes > POOL_MAX_BYTES || span_bytes > POOL_MAX_BYTES)
		return -ENOMEM;
	for (;;) {
		ret = um__pool_stats(pool, node, &st);
		if (ret)
			return ret;
		if ((st.largest_free >= span_bytes &&
		     st.free_bytes >= free_bytes) ||
		    __atomic_load_n(stop, __ATOMIC_ACQUIRE))
			return grown;
		/* the span first; then a chunk at a time, so stop is seen */
		want = st.largest_free < span_bytes ? span_bytes :
		       pool->chunk_bytes;
		ret = um__pool_heap_grow(pool, hi,
					 (want + UM_POOL_PAGE - 1) >>
					 POOL_PAGE_SHIFT, &trimmed_at);
		if (ret == -ECANCELED)
			return grown;	/* a trim meanwhile wins */
		if (ret)
			return ret;
		grown++;
	}
}

uint64_t um__pool_trimmed_at(struct um_pool *pool)
{
	return pool ? __atomic_load_n(&pool->trimmed_at_ns,
				      __ATOMIC_RELAXED) : 0;
}

/* Detach whole free chunks of heap h beyond keep bytes; under the lock. */
static struct chunk *heap_detach_free(struct um_pool *pool, struct heap *h,
				      uint64_t keep, struct chunk *gone)
{
	struct chunk *c, *next;

	for (c = h->chunks; c; c = next) {
		struct span *s = pm_get(pool, c->base);

		next = c->next;
		if (!s || s->state != SPAN_FREE || s->chunk != c ||
		    s->npages != c->npages)
			continue;
		if (((h->free_pages - c->npages) << POOL_PAGE_SHIFT) < keep)
			continue;
		um__pool_tlsf_remove(h, s);
		um__pool_span_put(pool, s);
		um__pool_pm_clear(pool, c->base, c->bytes);
		um__pool_chunk_unlink(h, c);
		pool->bytes -= c->bytes;
		h->st.chunks--;
		h->st.bytes -= c->bytes;
		h->st.trimmed_chunks++;
		h->st.trimmed_bytes += c->bytes;
		c->next = gone;
		gone = c;
	}
	return gone;
}

/* Under grow_mu, which it releases. */
static int64_t trim_grow_locked(struct um_pool *pool, int first, int last,
				uint64_t keep)
{
	struct chunk *gone = NULL, *next;
	int64_t total = 0;

	pool_lock(pool);
	/* other threads' caches flush at their next call */
	__atomic_store_n(&pool->gen, pool->gen + 1, __ATOMIC_RELAXED);
	um__pool_cache_flush_self(pool);
	for (int hi = first; hi <= last; hi++) {
		um__pool_drop_empty_slabs(pool, &pool->heaps[hi]);
		gone = heap_detach_free(pool, &pool->heaps[hi], keep, gone);
	}
	pool_unlock(pool);
	for (; gone; gone = next) {
		next = gone->next;
		pool->be->ops->host_free(pool->be, gone->base, gone->bytes);
		total += (int64_t)gone->bytes;
		free(gone);
	}
	if (total > 0)
		__atomic_store_n(&pool->trimmed_at_ns, um__now_ns(),
				 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&pool->grow_mu);
	return total;
}

int64_t um__pool_trim(struct um_pool *pool, int node, uint64_t keep)
{
	int first, last;

	if (!pool || heap_range(node, &first, &last))
		return -EINVAL;
	pthread_mutex_lock(&pool->grow_mu);
	return trim_grow_locked(pool, first, last, keep);
}

int64_t um__pool_trim_try(struct um_pool *pool, int node, uint64_t keep)
{
	int first, last;

	if (!pool || heap_range(node, &first, &last))
		return -EINVAL;
	if (pthread_mutex_trylock(&pool->grow_mu))
		return -EBUSY;
	return trim_grow_locked(pool, first, last, keep);
}

/* The live LARGE block at ptr, if it fills its chunk alone; under the lock. */
static int lone_block(struct um_pool *pool, const void *ptr, struct span **sp)
{
	struct span *s;
	uint32_t idx;
	int ret = um__pool_block_lookup(pool, ptr, -1, &s, &idx);

	if (!ret && um__pool_cache_holds(pool, ptr))
		ret = -EINVAL;			/* already freed */
	if (ret)
		return ret;
	if (s->state != SPAN_LARGE || s->npages != s->chunk->npages)
		return -EBUSY;
	*sp = s;
	return 0;
}

int um__pool_move(struct um_pool *pool, void *ptr, int node,
		  um_pool_mover move)
{
	int hi = heap_index(node), from, ret;
	struct span *s;
	size_t len;

	if (!pool || !ptr || !move || hi < 0)
		return -EINVAL;
	pool_lock(pool);
	ret = lone_block(pool, ptr, &s);
	from = ret ? -1 : s->hi;
	len = ret ? 0 : s->chunk->bytes;
	pool_unlock(pool);
	if (ret || from == hi)
		return ret;
	/*
	 * Nothing else can land in the chunk meanwhile: the block fills it,
	 * and the caller owns the block.
	 */
	ret = move(ptr, len, node, pool->heaps[from].node);
	if (ret)
		return ret;
	pool_lock(pool);
	ret = lone_block(pool, ptr, &s);
	if (!ret)
		um__pool_chunk_rehome(pool, s, hi);
	pool_unlock(pool);
	return ret;
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
	uint64_t largest = 0;
	int first, last;

	if (!pool || !st || heap_range(node, &first, &last))
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	pool_lock(pool);
	for (int hi = first; hi <= last; hi++) {
		uint64_t l = (uint64_t)um__pool_largest_free(&pool->heaps[hi])
			     << POOL_PAGE_SHIFT;

		stats_add(st, &pool->heaps[hi].st);
		if (l > largest)
			largest = l;
	}
	um__pool_cache_stats(pool, first, last, st);
	pool_unlock(pool);
	st->free_bytes = st->bytes - st->used;
	st->largest_free = largest;
	st->internal_frag_bp = st->used ?
		(uint32_t)((st->used - st->requested) * 10000 / st->used) : 0;
	st->external_frag_bp = st->free_bytes ?
		(uint32_t)(10000 - largest * 10000 / st->free_bytes) : 0;
	return 0;
}
