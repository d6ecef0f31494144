/* SPDX-License-Identifier: MIT */
/*
 * Description: the pinned host pool (libum/src/pool*.c) on a counting fake
 * backend (and once on the sim): alignment and sizes, random alloc/free
 * with pattern checks and an overlap check, all memory returned after the
 * last free, trim handing whole chunks back (and keeping what it is told),
 * the figures and both fragmentation values on a known sequence, growth
 * failures and caps, reserve, thread caches (cross-thread frees, thread
 * exit, trim while another thread holds a cache), bad input of every kind,
 * and four threads at once.
 */
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "backend_sim.h"
#include "pool.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024)

/* ---- a fake backend that counts host chunks and can refuse ------------- */

struct fake {
	pthread_mutex_t lock;
	int live;		/* chunks not yet freed */
	int allocs, frees;
	uint64_t live_bytes;
	int refuse;		/* host_alloc fails with -ENOMEM */
	int bad_free;		/* host_free of something never given */
	int mode_seen;		/* the thread's memory policy in host_alloc */
	void *given[256];
	size_t given_len[256];
};

static struct fake g_fake = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int fake_host_alloc(struct um_backend *be, size_t len, int node,
			   void **out)
{
	struct fake *f = be->priv;
	void *p = NULL;
	int ret = 0, mode = -1;

	if (get_mempolicy(&mode, NULL, 0, NULL, 0))
		mode = -1;
	pthread_mutex_lock(&f->lock);
	f->mode_seen = mode;
	if (f->refuse) {
		ret = -ENOMEM;
	} else if (posix_memalign(&p, 4096, len)) {
		ret = -ENOMEM;
	} else {
		for (int i = 0; i < 256; i++)
			if (!f->given[i]) {
				f->given[i] = p;
				f->given_len[i] = len;
				break;
			}
		f->live++;
		f->allocs++;
		f->live_bytes += len;
		*out = p;
	}
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static void fake_host_free(struct um_backend *be, void *p, size_t len)
{
	struct fake *f = be->priv;
	int i;

	pthread_mutex_lock(&f->lock);
	for (i = 0; i < 256; i++)
		if (f->given[i] == p && f->given_len[i] == len)
			break;
	if (i == 256) {
		f->bad_free++;
	} else {
		f->given[i] = NULL;
		f->live--;
		f->frees++;
		f->live_bytes -= len;
		free(p);
	}
	pthread_mutex_unlock(&f->lock);
}

static struct um_backend_ops fake_ops = {
	.name = "fake",
	.host_alloc = fake_host_alloc,
	.host_free = fake_host_free,
};

static struct um_backend g_be = { .ops = &fake_ops, .priv = &g_fake };

/* A pool on the fake backend; chunk in bytes (0: default). */
static struct um_pool *new_pool(uint64_t chunk, uint64_t max)
{
	struct um_pool_config cfg = { .chunk_bytes = chunk, .max_bytes = max };
	struct um_pool *pool = NULL;

	if (um__pool_create(&g_be, &cfg, &pool))
		return NULL;
	return pool;
}

static struct um_pool_stats stats(struct um_pool *pool)
{
	struct um_pool_stats st;

	memset(&st, 0xa5, sizeof(st));
	if (um__pool_stats(pool, UM_POOL_NODE_ALL, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Sizes spread over every path: classes, pages, chunk-sized and beyond. */
static size_t random_size(uint64_t *rng, size_t max)
{
	unsigned int bits = (unsigned int)(rng_next(rng) % 23);	/* 1..4 MiB */
	size_t sz = (size_t)(rng_next(rng) & ((1ull << bits) - 1)) + 1;

	return sz > max ? max : sz;
}

static void fill(void *p, size_t len, uint32_t seed)
{
	uint32_t *w = p;
	size_t n = len / 4;

	for (size_t i = 0; i < n; i++)
		w[i] = seed * 2654435761u + (uint32_t)i;
	for (size_t i = n * 4; i < len; i++)
		((unsigned char *)p)[i] = (unsigned char)seed;
}

static int check(const void *p, size_t len, uint32_t seed)
{
	const uint32_t *w = p;
	size_t n = len / 4;

	for (size_t i = 0; i < n; i++)
		if (w[i] != seed * 2654435761u + (uint32_t)i)
			return 0;
	for (size_t i = n * 4; i < len; i++)
		if (((const unsigned char *)p)[i] != (unsigned char)seed)
			return 0;
	return 1;
}

struct blk {
	char *p;
	size_t len;
	uint32_t seed;
};

static int cmp_blk(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;

	return (x->p > y->p) - (x->p < y->p);
}

/* ---- sizes and alignment ---------------------------------------------- */

TEST(alignment_and_sizes)
{
	static const size_t sizes[] = {
		1, 63, 64, 65, 255, 256, 257, 1000, 4095, 4096, 4097, 8191,
		32767, 32768, 32769, 65536, 1 * MiB, 3 * MiB + 1, 9 * MiB,
	};
	struct um_pool *pool = new_pool(4 * MiB, 0);
	void *p[sizeof(sizes) / sizeof(sizes[0])];

	ASSERT_NONNULL(pool);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t usable = 0, req = 0;
		int node = 7;

		ASSERT_EQ(0, um__pool_alloc(pool, sizes[i], UM_POOL_NODE_ANY,
					    0, &p[i]));
		EXPECT_EQ(0, (uintptr_t)p[i] % 64) TH_LOG("size %zu", sizes[i]);
		if (sizes[i] >= 4096)
			EXPECT_EQ(0, (uintptr_t)p[i] % 4096)
				TH_LOG("size %zu", sizes[i]);
		ASSERT_EQ(0, um__pool_block_info(pool, p[i], &usable, &node,
						 &req));
		EXPECT_GE(usable, sizes[i]);
		EXPECT_EQ(sizes[i], req);
		EXPECT_EQ(UM_POOL_NODE_ANY, node);
		/* rounding stays modest: 25% + 64 B, or up to a page */
		EXPECT_LE(usable, sizes[i] / 4 + 64 > 4096 ?
				  sizes[i] + sizes[i] / 4 + 64 :
				  sizes[i] + 4096);
		memset(p[i], 0x5a, sizes[i]);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		ASSERT_EQ(0, um__pool_free(pool, p[i]));
	EXPECT_EQ(0, um__pool_destroy(pool));
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(0, g_fake.bad_free);
}

TEST(zero_flag)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	unsigned char *p, *q;

	ASSERT_NONNULL(pool);
	for (size_t sz = 100; sz <= 300 * KiB; sz *= 7) {
		ASSERT_EQ(0, um__pool_alloc(pool, sz, UM_POOL_NODE_ANY, 0,
					    (void **)&p));
		memset(p, 0xff, sz);
		ASSERT_EQ(0, um__pool_free(pool, p));
		ASSERT_EQ(0, um__pool_alloc(pool, sz, UM_POOL_NODE_ANY,
					    UM_POOL_ZERO, (void **)&q));
		EXPECT_EQ(p, q);	/* same block came back: a real test */
		for (size_t i = 0; i < sz; i++)
			if (q[i]) {
				ASSERT_EQ(0, q[i]) TH_LOG("byte %zu", i);
			}
		ASSERT_EQ(0, um__pool_free(pool, q));
	}
	um__pool_destroy(pool);
}

/* ---- random use with patterns ------------------------------------------ */

TEST(random_patterns_no_overlap)
{
	enum { LIVE = 300, OPS = 6000 };
	struct um_pool *pool = new_pool(8 * MiB, 0);
	struct blk b[LIVE] = { { 0 } }, sorted[LIVE];
	uint64_t rng = 0x1234567;
	struct um_pool_stats st;

	ASSERT_NONNULL(pool);
	for (int op = 0; op < OPS; op++) {
		int i = (int)(rng_next(&rng) % LIVE);

		if (b[i].p) {
			ASSERT_TRUE(check(b[i].p, b[i].len, b[i].seed))
				TH_LOG("op %d block %d corrupted", op, i);
			ASSERT_EQ(0, um__pool_free(pool, b[i].p));
			b[i].p = NULL;
			continue;
		}
		b[i].len = random_size(&rng, 12 * MiB);
		b[i].seed = (uint32_t)op;
		ASSERT_EQ(0, um__pool_alloc(pool, b[i].len, UM_POOL_NODE_ANY, 0,
					    (void **)&b[i].p));
		fill(b[i].p, b[i].len, b[i].seed);

		if (op % 1000 == 999) {
			int n = 0;

			for (int j = 0; j < LIVE; j++)
				if (b[j].p) {
					size_t u = 0;

					ASSERT_EQ(0, um__pool_block_info(pool,
						  b[j].p, &u, NULL, NULL));
					sorted[n] = b[j];
					sorted[n++].len = u;
				}
			qsort(sorted, (size_t)n, sizeof(sorted[0]), cmp_blk);
			for (int j = 1; j < n; j++)
				ASSERT_LE(sorted[j - 1].p + sorted[j - 1].len,
					  sorted[j].p)
					TH_LOG("blocks %p and %p overlap",
					       sorted[j - 1].p, sorted[j].p);
		}
	}
	for (int i = 0; i < LIVE; i++)
		if (b[i].p) {
			ASSERT_TRUE(check(b[i].p, b[i].len, b[i].seed));
			ASSERT_EQ(0, um__pool_free(pool, b[i].p));
		}
	st = stats(pool);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.requested);
	EXPECT_EQ(0, st.blocks);
	EXPECT_EQ(st.allocs, st.frees);
	EXPECT_EQ(st.bytes, st.free_bytes);
	EXPECT_EQ((uint64_t)g_fake.live_bytes, st.bytes);
	/* everything free: trim gives every chunk back */
	EXPECT_EQ((int64_t)st.bytes, um__pool_trim(pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(0, g_fake.live);
	st = stats(pool);
	EXPECT_EQ(0, st.chunks);
	EXPECT_EQ(0, st.bytes);
	EXPECT_EQ(0, um__pool_destroy(pool));
	EXPECT_EQ(0, g_fake.bad_free);
}

/* ---- figures on a known sequence ---------------------------------------- */

TEST(stats_known_sequence)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats st;
	void *a, *b, *c;
	uint64_t used, req, free_b, largest;

	ASSERT_NONNULL(pool);
	ASSERT_EQ(0, um__pool_alloc(pool, 100, UM_POOL_NODE_ANY, 0, &a));
	ASSERT_EQ(0, um__pool_alloc(pool, 5000, UM_POOL_NODE_ANY, 0, &b));
	ASSERT_EQ(0, um__pool_alloc(pool, 40000, UM_POOL_NODE_ANY, 0, &c));
	st = stats(pool);
	/*
	 * 100 B -> the 128 B class, 5000 B -> the 8 KiB class, each in a
	 * 64 KiB slab; 40000 B -> 10 pages. One 2 MiB chunk.
	 */
	used = 128 + 8192 + 10 * 4096;
	req = 100 + 5000 + 40000;
	free_b = 2 * MiB - used;
	largest = 2 * MiB - (16 + 16 + 10) * 4096;
	EXPECT_EQ(1, st.chunks);
	EXPECT_EQ(2 * MiB, st.bytes);
	EXPECT_EQ(used, st.used);
	EXPECT_EQ(req, st.requested);
	EXPECT_EQ(3, st.blocks);
	EXPECT_EQ(free_b, st.free_bytes);
	EXPECT_EQ(largest, st.largest_free);
	EXPECT_EQ((used - req) * 10000 / used, st.internal_frag_bp);
	EXPECT_EQ(10000 - largest * 10000 / free_b, st.external_frag_bp);
	EXPECT_EQ(3, st.allocs);
	EXPECT_EQ(0, st.frees);

	/*
	 * The freed large block waits in this thread's cache (it no longer
	 * counts as used); trim flushes the cache, and the block merges back
	 * into the free span.
	 */
	ASSERT_EQ(0, um__pool_free(pool, c));
	st = stats(pool);
	used = 128 + 8192;
	req = 5100;
	EXPECT_EQ(used, st.used);
	EXPECT_EQ(req, st.requested);
	EXPECT_EQ(0, um__pool_trim(pool, UM_POOL_NODE_ALL, UINT64_MAX));
	st = stats(pool);
	EXPECT_EQ(used, st.used);
	EXPECT_EQ(2 * MiB - 32 * 4096, st.largest_free);
	EXPECT_EQ((used - req) * 10000 / used, st.internal_frag_bp);
	ASSERT_EQ(0, um__pool_free(pool, a));
	ASSERT_EQ(0, um__pool_free(pool, b));
	st = stats(pool);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.internal_frag_bp);
	EXPECT_EQ(3, st.frees);
	/* trim drops the empty slabs too, so the whole chunk goes */
	EXPECT_EQ((int64_t)(2 * MiB), um__pool_trim(pool, UM_POOL_NODE_ALL, 0));
	st = stats(pool);
	EXPECT_EQ(0, st.bytes);
	EXPECT_EQ(0, st.external_frag_bp);
	EXPECT_EQ(0, g_fake.live);
	um__pool_destroy(pool);
}

/* ---- chunks: dedicated, trim, keep --------------------------------------- */

TEST(trim_returns_whole_chunks)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats st;
	void *p[3];

	ASSERT_NONNULL(pool);
	/* 1.5 MiB each: one chunk apiece */
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, um__pool_alloc(pool, 1536 * KiB, UM_POOL_NODE_ANY,
					    0, &p[i]));
	EXPECT_EQ(3, g_fake.live);
	/* nothing is whole-free yet */
	EXPECT_EQ(0, um__pool_trim(pool, UM_POOL_NODE_ALL, 0));
	ASSERT_EQ(0, um__pool_free(pool, p[0]));
	ASSERT_EQ(0, um__pool_free(pool, p[1]));
	/* keep 2 MiB free: one of the two free chunks stays */
	EXPECT_EQ((int64_t)(2 * MiB),
		  um__pool_trim(pool, UM_POOL_NODE_ALL, 2 * MiB));
	EXPECT_EQ(2, g_fake.live);
	EXPECT_EQ((int64_t)(2 * MiB), um__pool_trim(pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(1, g_fake.live);
	st = stats(pool);
	EXPECT_EQ(1, st.chunks);
	EXPECT_EQ(2, st.trimmed_chunks);
	EXPECT_EQ(4 * MiB, st.trimmed_bytes);
	/* the live block is intact and still freeable */
	memset(p[2], 1, 1536 * KiB);
	ASSERT_EQ(0, um__pool_free(pool, p[2]));
	EXPECT_EQ((int64_t)(2 * MiB), um__pool_trim(pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(0, um__pool_destroy(pool));
}

/* A grower held inside its growth until released. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool in_growth, release;
} g_hold = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
};

static void hold_growth(void)
{
	pthread_mutex_lock(&g_hold.mu);
	g_hold.in_growth = true;
	pthread_cond_broadcast(&g_hold.cv);
	while (!g_hold.release)
		pthread_cond_wait(&g_hold.cv, &g_hold.mu);
	pthread_mutex_unlock(&g_hold.mu);
}

static void *grow_4m(void *pool)
{
	return (void *)(intptr_t)um__pool_reserve(pool, UM_POOL_NODE_ANY,
						  4 * MiB);
}

/*
 * The pressure loop's trim does not wait for a growth in progress (whose
 * grower may be stalled in the kernel on the node being freed): -EBUSY at
 * once, and a trim like any other once the growth is done.
 */
TEST(trim_try_skips_a_growth_in_progress)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	void *p, *ret = (void *)1;
	pthread_t t;

	ASSERT_NONNULL(pool);
	ASSERT_EQ(0, um__pool_alloc(pool, 1536 * KiB, UM_POOL_NODE_ANY, 0, &p));
	ASSERT_EQ(0, um__pool_free(pool, p));	/* one whole free chunk */
	g_hold.in_growth = g_hold.release = false;
	um__pool_grow_hook = hold_growth;
	ASSERT_EQ(0, pthread_create(&t, NULL, grow_4m, pool));
	pthread_mutex_lock(&g_hold.mu);
	while (!g_hold.in_growth)
		pthread_cond_wait(&g_hold.cv, &g_hold.mu);
	pthread_mutex_unlock(&g_hold.mu);

	EXPECT_EQ(-EBUSY, um__pool_trim_try(pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(1, g_fake.live) TH_LOG("the free chunk is still there");

	pthread_mutex_lock(&g_hold.mu);
	g_hold.release = true;
	pthread_cond_broadcast(&g_hold.cv);
	pthread_mutex_unlock(&g_hold.mu);
	pthread_join(t, &ret);
	um__pool_grow_hook = NULL;
	EXPECT_EQ(NULL, ret);
	/* the first chunk and the grown one are both free now */
	EXPECT_EQ((int64_t)(2 * MiB + 4 * MiB),
		  um__pool_trim_try(pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(-EINVAL, um__pool_trim_try(NULL, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(0, um__pool_destroy(pool));
}

TEST(large_block_gets_its_own_chunk)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats st;
	size_t usable = 0;
	void *big, *p[5];

	ASSERT_NONNULL(pool);
	ASSERT_EQ(0, um__pool_alloc(pool, 5 * MiB + 3, UM_POOL_NODE_ANY, 0,
				    &big));
	st = stats(pool);
	EXPECT_EQ(1, st.chunks);
	EXPECT_EQ(6 * MiB, st.bytes);	/* rounded to UM_POOL_MIN_CHUNK */
	ASSERT_EQ(0, um__pool_block_info(pool, big, &usable, NULL, NULL));
	EXPECT_EQ(5 * MiB + 4096, usable);
	ASSERT_EQ(0, um__pool_free(pool, big));
	/* once free, the big chunk serves smaller blocks without growing */
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, um__pool_alloc(pool, 1 * MiB, UM_POOL_NODE_ANY,
					    UM_POOL_NOGROW, &p[i]));
	st = stats(pool);
	EXPECT_EQ(1, st.grows);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, um__pool_free(pool, p[i]));
	um__pool_destroy(pool);
	EXPECT_EQ(0, g_fake.live);
}

TEST(reserve_grows_ahead)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats st;
	void *p;

	ASSERT_NONNULL(pool);
	EXPECT_EQ(-EAGAIN, um__pool_alloc(pool, 8 * MiB, UM_POOL_NODE_ANY,
					  UM_POOL_NOGROW, &p));
	ASSERT_EQ(0, um__pool_reserve(pool, UM_POOL_NODE_ANY, 8 * MiB));
	st = stats(pool);
	EXPECT_EQ(1, st.grows);
	EXPECT_EQ(8 * MiB, st.bytes);
	/* reserving what is already there does not grow again */
	ASSERT_EQ(0, um__pool_reserve(pool, UM_POOL_NODE_ANY, 8 * MiB));
	ASSERT_EQ(0, um__pool_reserve(pool, UM_POOL_NODE_ANY, 0));
	EXPECT_EQ(1, stats(pool).grows);
	ASSERT_EQ(0, um__pool_alloc(pool, 8 * MiB, UM_POOL_NODE_ANY,
				    UM_POOL_NOGROW, &p));
	EXPECT_EQ(1, stats(pool).grows);
	ASSERT_EQ(0, um__pool_free(pool, p));
	um__pool_destroy(pool);
}

TEST(growth_failures_and_cap)
{
	struct um_pool *pool = new_pool(2 * MiB, 5 * MiB);
	struct um_pool_stats st;
	void *a, *b, *c;

	ASSERT_NONNULL(pool);
	g_fake.refuse = 1;
	EXPECT_EQ(-ENOMEM, um__pool_alloc(pool, 100, UM_POOL_NODE_ANY, 0, &a));
	EXPECT_EQ(-ENOMEM, um__pool_alloc(pool, MiB, UM_POOL_NODE_ANY, 0, &a));
	EXPECT_EQ(-ENOMEM, um__pool_reserve(pool, UM_POOL_NODE_ANY, MiB));
	st = stats(pool);
	EXPECT_EQ(3, st.grow_failures);
	EXPECT_EQ(0, st.bytes);
	EXPECT_EQ(0, g_fake.live);
	g_fake.refuse = 0;

	/* the cap: 2 + 2 MiB fit, then only a 1 MiB chunk is left */
	ASSERT_EQ(0, um__pool_alloc(pool, 2 * MiB, UM_POOL_NODE_ANY, 0, &a));
	ASSERT_EQ(0, um__pool_alloc(pool, 2 * MiB, UM_POOL_NODE_ANY, 0, &b));
	EXPECT_EQ(-ENOMEM, um__pool_alloc(pool, 2 * MiB, UM_POOL_NODE_ANY, 0,
					  &c));
	ASSERT_EQ(0, um__pool_alloc(pool, MiB, UM_POOL_NODE_ANY, 0, &c));
	st = stats(pool);
	EXPECT_LE(st.bytes, 5 * MiB);
	EXPECT_EQ(-ENOMEM, um__pool_alloc(pool, 64 * KiB, UM_POOL_NODE_ANY, 0,
					  &c));
	um__pool_destroy(pool);
	EXPECT_EQ(0, g_fake.live);
}

/* ---- bad input ----------------------------------------------------------- */

TEST(bad_input)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats st;
	struct um_backend nobe = { 0 };
	struct um_pool *other;
	char on_stack[64];
	void *p, *q, *heap = malloc(64);
	size_t u;

	ASSERT_NONNULL(pool);
	ASSERT_NONNULL(heap);
	EXPECT_EQ(-EINVAL, um__pool_create(NULL, NULL, &other));
	EXPECT_EQ(-EINVAL, um__pool_create(&nobe, NULL, &other));
	EXPECT_EQ(-EINVAL, um__pool_create(&g_be, NULL, NULL));

	EXPECT_EQ(-EINVAL, um__pool_alloc(NULL, 64, UM_POOL_NODE_ANY, 0, &p));
	EXPECT_EQ(-EINVAL, um__pool_alloc(pool, 64, UM_POOL_NODE_ANY, 0, NULL));
	EXPECT_EQ(-EINVAL, um__pool_alloc(pool, 0, UM_POOL_NODE_ANY, 0, &p));
	EXPECT_EQ(-EINVAL, um__pool_alloc(pool, 64, UM_POOL_MAX_NODES, 0, &p));
	EXPECT_EQ(-EINVAL, um__pool_alloc(pool, 64, -5, 0, &p));
	EXPECT_EQ(-EINVAL, um__pool_alloc(pool, 64, UM_POOL_NODE_ANY, 0x80,
					  &p));
	EXPECT_EQ(-ENOMEM, um__pool_alloc(pool, SIZE_MAX, UM_POOL_NODE_ANY, 0,
					  &p));
	EXPECT_EQ(-ENOMEM, um__pool_alloc(pool, 1ull << 47, UM_POOL_NODE_ANY,
					  0, &p));
	EXPECT_EQ(0, g_fake.live);	/* nothing was allocated for those */

	EXPECT_EQ(-EINVAL, um__pool_free(NULL, heap));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, NULL));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, heap));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, on_stack));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, (void *)(uintptr_t)-4096));

	/* small: interior pointer, double free, info after free */
	ASSERT_EQ(0, um__pool_alloc(pool, 200, UM_POOL_NODE_ANY, 0, &p));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, (char *)p + 64));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, (char *)p + 1));
	ASSERT_EQ(0, um__pool_free(pool, p));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, p));
	EXPECT_EQ(-EINVAL, um__pool_block_info(pool, p, &u, NULL, NULL));
	/* large: interior pointer, double free */
	ASSERT_EQ(0, um__pool_alloc(pool, 300 * KiB, UM_POOL_NODE_ANY, 0, &q));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, (char *)q + 4096));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, (char *)q + 100));
	ASSERT_EQ(0, um__pool_free(pool, q));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, q));
	/* a block bigger than the thread cache keeps: locked path */
	ASSERT_EQ(0, um__pool_alloc(pool, 40 * MiB, UM_POOL_NODE_ANY, 0, &q));
	ASSERT_EQ(0, um__pool_free(pool, q));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, q));
	/* a pointer into a chunk trim gave back */
	EXPECT_GT(um__pool_trim(pool, UM_POOL_NODE_ALL, 0), 0);
	EXPECT_EQ(-EINVAL, um__pool_free(pool, q));
	EXPECT_EQ(-EINVAL, um__pool_free(pool, p));

	EXPECT_EQ(-EINVAL, um__pool_reserve(NULL, UM_POOL_NODE_ANY, MiB));
	EXPECT_EQ(-EINVAL, um__pool_reserve(pool, 99, MiB));
	EXPECT_EQ(-ENOMEM, um__pool_reserve(pool, UM_POOL_NODE_ANY,
					    UINT64_MAX));
	EXPECT_EQ(-EINVAL, um__pool_trim(NULL, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(-EINVAL, um__pool_trim(pool, 99, 0));
	EXPECT_EQ(-EINVAL, um__pool_stats(pool, 99, &st));
	EXPECT_EQ(-EINVAL, um__pool_stats(pool, UM_POOL_NODE_ALL, NULL));
	EXPECT_EQ(-EINVAL, um__pool_block_info(pool, NULL, &u, NULL, NULL));
	EXPECT_EQ(0, um__pool_destroy(NULL));

	st = stats(pool);
	EXPECT_EQ(0, st.blocks);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, um__pool_destroy(pool));
	EXPECT_EQ(0, g_fake.live);
	free(heap);
}

struct xfree_u {
	struct um_pool *pool;
	void *p;
	int plain, user;
};

static void *free_user(void *arg)
{
	struct xfree_u *x = arg;

	x->plain = um__pool_free(x->pool, x->p);
	x->user = um__pool_free_flags(x->pool, x->p, UM_POOL_USER);
	return NULL;
}

TEST(user_blocks_are_kept_apart)
{
	static const size_t sizes[] = { 24, 3000, 32768, 100 * KiB, 3 * MiB };
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct xfree_u x;
	pthread_t th;
	void *u, *r;

	ASSERT_NONNULL(pool);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ASSERT_EQ(0, um__pool_alloc(pool, sizes[i], UM_POOL_NODE_ANY,
					    UM_POOL_USER, &u));
		ASSERT_EQ(0, um__pool_alloc(pool, sizes[i], UM_POOL_NODE_ANY,
					    0, &r));
		/* each kind is refused by the other's free */
		EXPECT_EQ(-EINVAL, um__pool_free(pool, u))
			TH_LOG("%zu", sizes[i]);
		EXPECT_EQ(-EINVAL, um__pool_free_flags(pool, r, UM_POOL_USER));
		EXPECT_EQ(-EINVAL, um__pool_free_flags(pool, r, 0x40));
		EXPECT_EQ(0, um__pool_block_info(pool, u, NULL, NULL, NULL));
		EXPECT_EQ(0, um__pool_free_flags(pool, u, UM_POOL_USER));
		EXPECT_EQ(-EINVAL, um__pool_free_flags(pool, u, UM_POOL_USER));
		EXPECT_EQ(0, um__pool_free(pool, r));
		/* same through the locked path of a thread without a cache */
		ASSERT_EQ(0, um__pool_alloc(pool, sizes[i], UM_POOL_NODE_ANY,
					    UM_POOL_USER, &u));
		x.pool = pool;
		x.p = u;
		ASSERT_EQ(0, pthread_create(&th, NULL, free_user, &x));
		pthread_join(th, NULL);
		EXPECT_EQ(-EINVAL, x.plain);
		EXPECT_EQ(0, x.user);
	}
	EXPECT_EQ(0, stats(pool).blocks);
	EXPECT_EQ(0, um__pool_destroy(pool));
}

TEST(destroy_reports_leaks)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	void *p;

	ASSERT_NONNULL(pool);
	ASSERT_EQ(0, um__pool_alloc(pool, 10, UM_POOL_NODE_ANY, 0, &p));
	ASSERT_EQ(0, um__pool_alloc(pool, 100 * KiB, UM_POOL_NODE_ANY, 0, &p));
	ASSERT_EQ(0, um__pool_alloc(pool, 3 * MiB, UM_POOL_NODE_ANY, 0, &p));
	EXPECT_EQ(3, um__pool_destroy(pool));
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(0, g_fake.bad_free);
}

TEST(two_pools_and_pool_reuse)
{
	struct um_pool *a = new_pool(2 * MiB, 0), *b = new_pool(2 * MiB, 0);
	struct um_pool_stats st;
	void *pa, *pb, *la;

	ASSERT_NONNULL(a);
	ASSERT_NONNULL(b);
	/* this thread's cache binds to a; b takes the locked path */
	ASSERT_EQ(0, um__pool_alloc(a, 500, UM_POOL_NODE_ANY, 0, &pa));
	ASSERT_EQ(0, um__pool_alloc(b, 500, UM_POOL_NODE_ANY, 0, &pb));
	ASSERT_EQ(0, um__pool_alloc(a, 200 * KiB, UM_POOL_NODE_ANY, 0, &la));
	EXPECT_EQ(-EINVAL, um__pool_free(b, pa));
	EXPECT_EQ(-EINVAL, um__pool_free(a, pb));
	EXPECT_EQ(-EINVAL, um__pool_free(b, la));
	EXPECT_EQ(0, um__pool_free(a, pa));
	EXPECT_EQ(0, um__pool_free(b, pb));
	EXPECT_EQ(0, um__pool_free(a, la));
	EXPECT_EQ(0, stats(a).blocks);
	EXPECT_EQ(0, stats(b).blocks);
	/* a goes while this thread's cache holds its slots and a block */
	EXPECT_EQ(0, um__pool_destroy(a));
	/* a new pool (perhaps at a's address) starts with a clean cache */
	a = new_pool(2 * MiB, 0);
	ASSERT_NONNULL(a);
	ASSERT_EQ(0, um__pool_alloc(a, 500, UM_POOL_NODE_ANY, 0, &pa));
	st = stats(a);
	EXPECT_EQ(1, st.blocks);
	EXPECT_EQ(512, st.used);
	EXPECT_EQ(500, st.requested);
	EXPECT_EQ(0, um__pool_free(a, pa));
	EXPECT_EQ(0, um__pool_destroy(a));
	EXPECT_EQ(0, um__pool_destroy(b));
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(0, g_fake.bad_free);
}

/* ---- heaps per node ---------------------------------------------------- */

TEST(node_heaps_are_separate)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats s0, sa;
	void *a, *b;
	int node = -9;

	ASSERT_NONNULL(pool);
	ASSERT_EQ(0, um__pool_alloc(pool, 1000, 0, 0, &a));
	ASSERT_EQ(0, um__pool_alloc(pool, 1000, UM_POOL_NODE_ANY, 0, &b));
	ASSERT_EQ(0, um__pool_block_info(pool, a, NULL, &node, NULL));
	EXPECT_EQ(0, node);
	ASSERT_EQ(0, um__pool_block_info(pool, b, NULL, &node, NULL));
	EXPECT_EQ(UM_POOL_NODE_ANY, node);
	ASSERT_EQ(0, um__pool_stats(pool, 0, &s0));
	ASSERT_EQ(0, um__pool_stats(pool, UM_POOL_NODE_ANY, &sa));
	EXPECT_EQ(1, s0.chunks);
	EXPECT_EQ(1, sa.chunks);
	EXPECT_EQ(1024, s0.used);
	EXPECT_EQ(1, s0.blocks);
	EXPECT_EQ(2, stats(pool).chunks);
	/* trimming node 0 leaves the other heap alone */
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ((int64_t)(2 * MiB), um__pool_trim(pool, 0, 0));
	EXPECT_EQ(1, stats(pool).chunks);
	ASSERT_EQ(0, um__pool_free(pool, b));
	um__pool_destroy(pool);
}

static int thread_mode(void)
{
	int mode = -1;

	return get_mempolicy(&mode, NULL, 0, NULL, 0) ? -1 : mode;
}

/*
 * A thread bound to a node (the application's numa_set_membind) grows a
 * node's heap with its binding turned into a preference for that node, so
 * that the page tables of the chunk's fault-in do not wait on the bound
 * node when it is full; the binding is back afterwards. The heap of any
 * node, and a thread that does not bind, keep their policy.
 */
TEST(growth_does_not_wait_on_the_threads_bound_node)
{
	unsigned long mask[16] = { 1 };
	struct um_pool *pool = new_pool(2 * MiB, 0);
	void *a, *b;

	ASSERT_NONNULL(pool);
	if (set_mempolicy(MPOL_BIND, mask, 1024 + 1))
		SKIP(um__pool_destroy(pool); return, "no NUMA policy here");
	g_fake.mode_seen = -1;
	ASSERT_EQ(0, um__pool_alloc(pool, 1000, 0, 0, &a));
	EXPECT_EQ(MPOL_PREFERRED, g_fake.mode_seen)
		TH_LOG("node 0's chunk grew under the thread's binding");
	EXPECT_EQ(MPOL_BIND, thread_mode()) TH_LOG("the binding is back");

	g_fake.mode_seen = -1;
	ASSERT_EQ(0, um__pool_alloc(pool, 1000, UM_POOL_NODE_ANY, 0, &b));
	EXPECT_EQ(MPOL_BIND, g_fake.mode_seen) TH_LOG("any node: left alone");
	ASSERT_EQ(0, um__pool_free(pool, b));
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ((int64_t)(4 * MiB), um__pool_trim(pool, UM_POOL_NODE_ALL, 0));

	ASSERT_EQ(0, set_mempolicy(MPOL_DEFAULT, NULL, 0));
	g_fake.mode_seen = -1;
	ASSERT_EQ(0, um__pool_alloc(pool, 1000, 0, 0, &a));
	EXPECT_EQ(MPOL_DEFAULT, g_fake.mode_seen) TH_LOG("no binding: left alone");
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ(0, um__pool_destroy(pool));
}

/* ---- moving a block's chunk to another heap ------------------------------ */

static struct {
	int calls, ret, node, from;
	void *base;
	size_t len;
} g_mv;

static int fake_mover(void *base, size_t len, int node, int from)
{
	g_mv.calls++;
	g_mv.base = base;
	g_mv.len = len;
	g_mv.node = node;
	g_mv.from = from;
	return g_mv.ret;
}

static struct um_pool_stats node_stats(struct um_pool *pool, int node)
{
	struct um_pool_stats st;

	if (um__pool_stats(pool, node, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

TEST(move_lone_block_takes_its_chunk_along)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct um_pool_stats s0, s3;
	int node = -9;
	void *a;

	ASSERT_NONNULL(pool);
	memset(&g_mv, 0, sizeof(g_mv));
	ASSERT_EQ(0, um__pool_alloc(pool, 2 * MiB - 100, 0, 0, &a));
	fill(a, 2 * MiB - 100, 7);
	ASSERT_EQ(0, um__pool_move(pool, a, 3, fake_mover));
	EXPECT_EQ(1, g_mv.calls);
	EXPECT_EQ(a, g_mv.base);
	EXPECT_EQ(2 * MiB, g_mv.len);
	EXPECT_EQ(3, g_mv.node);
	EXPECT_EQ(0, g_mv.from);
	ASSERT_EQ(0, um__pool_block_info(pool, a, NULL, &node, NULL));
	EXPECT_EQ(3, node);
	s0 = node_stats(pool, 0);
	s3 = node_stats(pool, 3);
	EXPECT_EQ(0, s0.chunks);
	EXPECT_EQ(0, s0.bytes);
	EXPECT_EQ(0, s0.used);
	EXPECT_EQ(0, s0.requested);
	EXPECT_EQ(0, s0.blocks);
	EXPECT_EQ(1, s3.chunks);
	EXPECT_EQ(2 * MiB, s3.bytes);
	EXPECT_EQ(2 * MiB, s3.used);
	EXPECT_EQ(2 * MiB - 100, s3.requested);
	EXPECT_EQ(1, s3.blocks);
	EXPECT_TRUE(check(a, 2 * MiB - 100, 7));
	/* already there: nothing to move */
	ASSERT_EQ(0, um__pool_move(pool, a, 3, fake_mover));
	EXPECT_EQ(1, g_mv.calls);
	/* freed and trimmed from its new heap */
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ(0, node_stats(pool, 3).blocks);
	EXPECT_EQ(0, um__pool_trim(pool, 0, 0));
	EXPECT_EQ((int64_t)(2 * MiB), um__pool_trim(pool, 3, 0));
	EXPECT_EQ(0, stats(pool).chunks);
	EXPECT_EQ(0, um__pool_destroy(pool));
}

TEST(move_refused_when_the_chunk_is_shared)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	void *a, *b, *c;

	ASSERT_NONNULL(pool);
	memset(&g_mv, 0, sizeof(g_mv));
	ASSERT_EQ(0, um__pool_alloc(pool, MiB, 0, 0, &a));
	ASSERT_EQ(0, um__pool_alloc(pool, 64 * 1024, 0, 0, &b));
	ASSERT_EQ(0, um__pool_alloc(pool, 100, 0, 0, &c));
	/* a large block with a neighbour, a page run, a slab slot */
	EXPECT_EQ(-EBUSY, um__pool_move(pool, a, 1, fake_mover));
	EXPECT_EQ(-EBUSY, um__pool_move(pool, b, 1, fake_mover));
	EXPECT_EQ(-EBUSY, um__pool_move(pool, c, 1, fake_mover));
	EXPECT_EQ(0, g_mv.calls);
	EXPECT_EQ(0, node_stats(pool, 1).chunks);
	ASSERT_EQ(0, um__pool_free(pool, b));
	ASSERT_EQ(0, um__pool_free(pool, c));
	/* a block alone in a chunk with free space around it still shares */
	EXPECT_EQ(-EBUSY, um__pool_move(pool, a, 1, fake_mover));
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ(0, um__pool_destroy(pool));
}

TEST(move_failure_leaves_the_block_in_its_heap)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	int node = -9;
	void *a;

	ASSERT_NONNULL(pool);
	memset(&g_mv, 0, sizeof(g_mv));
	g_mv.ret = -EBUSY;
	ASSERT_EQ(0, um__pool_alloc(pool, 2 * MiB, 0, 0, &a));
	EXPECT_EQ(-EBUSY, um__pool_move(pool, a, 1, fake_mover));
	EXPECT_EQ(1, g_mv.calls);
	ASSERT_EQ(0, um__pool_block_info(pool, a, NULL, &node, NULL));
	EXPECT_EQ(0, node);
	EXPECT_EQ(1, node_stats(pool, 0).blocks);
	EXPECT_EQ(0, node_stats(pool, 1).chunks);
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ(0, um__pool_destroy(pool));
}

TEST(move_bad_input)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	char stack[64];
	void *a;

	ASSERT_NONNULL(pool);
	memset(&g_mv, 0, sizeof(g_mv));
	ASSERT_EQ(0, um__pool_alloc(pool, 2 * MiB, 0, 0, &a));
	EXPECT_EQ(-EINVAL, um__pool_move(NULL, a, 1, fake_mover));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, NULL, 1, fake_mover));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, a, 1, NULL));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, a, UM_POOL_MAX_NODES, fake_mover));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, a, -5, fake_mover));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, stack, 1, fake_mover));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, (char *)a + 4096, 1,
					 fake_mover));
	ASSERT_EQ(0, um__pool_free(pool, a));
	EXPECT_EQ(-EINVAL, um__pool_move(pool, a, 1, fake_mover));
	EXPECT_EQ(0, g_mv.calls);
	EXPECT_EQ(0, um__pool_destroy(pool));
}

/* ---- threads ------------------------------------------------------------- */

struct thr {
	struct um_pool *pool;
	uint64_t seed;
	int ops;
	int failures;
	/* blocks handed to the next thread to free */
	pthread_mutex_t *xlock;
	struct blk *xfer;
	int nxfer;
};

static void *worker(void *arg)
{
	enum { LIVE = 64 };
	struct thr *t = arg;
	struct blk b[LIVE] = { { 0 } };
	uint64_t rng = t->seed;

	for (int op = 0; op < t->ops; op++) {
		int i = (int)(rng_next(&rng) % LIVE);

		if (b[i].p) {
			if (!check(b[i].p, b[i].len, b[i].seed))
				t->failures++;
			/* every 8th block is freed by another thread */
			if (op % 8 == 0) {
				pthread_mutex_lock(t->xlock);
				if (t->xfer[op % 128].p) {
					struct blk o = t->xfer[op % 128];

					if (!check(o.p, o.len, o.seed) ||
					    um__pool_free(t->pool, o.p))
						t->failures++;
				}
				t->xfer[op % 128] = b[i];
				pthread_mutex_unlock(t->xlock);
			} else if (um__pool_free(t->pool, b[i].p)) {
				t->failures++;
			}
			b[i].p = NULL;
			continue;
		}
		b[i].len = random_size(&rng, 2 * MiB);
		b[i].seed = (uint32_t)(t->seed + (uint64_t)op);
		if (um__pool_alloc(t->pool, b[i].len, UM_POOL_NODE_ANY, 0,
				   (void **)&b[i].p)) {
			t->failures++;
			b[i].p = NULL;
			continue;
		}
		fill(b[i].p, b[i].len, b[i].seed);
	}
	for (int i = 0; i < LIVE; i++)
		if (b[i].p && (!check(b[i].p, b[i].len, b[i].seed) ||
			       um__pool_free(t->pool, b[i].p)))
			t->failures++;
	return NULL;
}

TEST(four_threads)
{
	enum { N = 4 };
	struct um_pool *pool = new_pool(4 * MiB, 0);
	pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
	struct blk xfer[128] = { { 0 } };
	struct thr t[N];
	pthread_t th[N];
	struct um_pool_stats st;

	ASSERT_NONNULL(pool);
	for (int i = 0; i < N; i++) {
		t[i] = (struct thr){ .pool = pool,
				     .seed = 0x9e3779b9ull * (i + 1),
				     .ops = 20000, .xlock = &xlock,
				     .xfer = xfer };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker, &t[i]));
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, t[i].failures) TH_LOG("thread %d", i);
	}
	for (int i = 0; i < 128; i++)
		if (xfer[i].p) {
			EXPECT_TRUE(check(xfer[i].p, xfer[i].len,
					  xfer[i].seed));
			ASSERT_EQ(0, um__pool_free(pool, xfer[i].p));
		}
	/* the workers exited: their caches went back to the heap */
	st = stats(pool);
	EXPECT_EQ(0, st.blocks);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, st.requested);
	EXPECT_EQ(st.allocs, st.frees);
	EXPECT_EQ((int64_t)st.bytes, um__pool_trim(pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(0, um__pool_destroy(pool));
}
TEST_TIMEOUT_SET(four_threads, 120);

struct trimmer {
	struct um_pool *pool;
	int stop;
	int rounds;
	int bad;
};

static void *trim_loop(void *arg)
{
	struct trimmer *t = arg;

	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		struct um_pool_stats st = { 0 };

		if (um__pool_trim(t->pool, UM_POOL_NODE_ALL, 0) < 0 ||
		    um__pool_stats(t->pool, UM_POOL_NODE_ALL, &st))
			t->bad++;
		/* figures may be approximate while others run, never absurd */
		if (st.used > st.bytes + (64ull << 20))
			t->bad++;
		t->rounds++;
	}
	return NULL;
}

/*
 * Trim (which releases slabs and whole chunks) and stats run in a loop
 * while four threads allocate and free through their caches: the lock-free
 * lookups must never act on a span that changed under them.
 */
TEST(trim_and_stats_race_with_workers)
{
	enum { N = 4 };
	struct um_pool *pool = new_pool(2 * MiB, 0);
	pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
	struct blk xfer[128] = { { 0 } };
	struct trimmer tr = { 0 };
	struct thr t[N];
	pthread_t th[N], tt;

	ASSERT_NONNULL(pool);
	tr.pool = pool;
	ASSERT_EQ(0, pthread_create(&tt, NULL, trim_loop, &tr));
	for (int i = 0; i < N; i++) {
		t[i] = (struct thr){ .pool = pool, .seed = 77 + (uint64_t)i,
				     .ops = 15000, .xlock = &xlock,
				     .xfer = xfer };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker, &t[i]));
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		EXPECT_EQ(0, t[i].failures) TH_LOG("thread %d", i);
	}
	__atomic_store_n(&tr.stop, 1, __ATOMIC_RELEASE);
	pthread_join(tt, NULL);
	EXPECT_EQ(0, tr.bad);
	EXPECT_GT(tr.rounds, 0);
	for (int i = 0; i < 128; i++)
		if (xfer[i].p) {
			EXPECT_TRUE(check(xfer[i].p, xfer[i].len,
					  xfer[i].seed));
			ASSERT_EQ(0, um__pool_free(pool, xfer[i].p));
		}
	EXPECT_EQ(0, stats(pool).blocks);
	EXPECT_EQ(0, stats(pool).used);
	um__pool_trim(pool, UM_POOL_NODE_ALL, 0);
	EXPECT_EQ(0, g_fake.live);
	EXPECT_EQ(0, um__pool_destroy(pool));
	EXPECT_EQ(0, g_fake.bad_free);
}
TEST_TIMEOUT_SET(trim_and_stats_race_with_workers, 120);

struct xfree {
	struct um_pool *pool;
	void *p;
	int ret;
};

static void *free_it(void *arg)
{
	struct xfree *x = arg;

	x->ret = um__pool_free(x->pool, x->p);
	return NULL;
}

TEST(double_free_across_threads)
{
	struct um_pool *pool = new_pool(2 * MiB, 0);
	struct xfree x;
	pthread_t th;
	void *p;

	ASSERT_NONNULL(pool);
	ASSERT_EQ(0, um__pool_alloc(pool, 700, UM_POOL_NODE_ANY, 0, &p));
	/* another thread frees it (into its cache), then we try again */
	x = (struct xfree){ .pool = pool, .p = p, .ret = 1 };
	ASSERT_EQ(0, pthread_create(&th, NULL, free_it, &x));
	pthread_join(th, NULL);
	EXPECT_EQ(0, x.ret);
	EXPECT_EQ(-EINVAL, um__pool_free(pool, p));
	/* and the other way round, while our cache holds it */
	ASSERT_EQ(0, um__pool_alloc(pool, 700, UM_POOL_NODE_ANY, 0, &p));
	ASSERT_EQ(0, um__pool_free(pool, p));
	x = (struct xfree){ .pool = pool, .p = p, .ret = 1 };
	ASSERT_EQ(0, pthread_create(&th, NULL, free_it, &x));
	pthread_join(th, NULL);
	EXPECT_EQ(-EINVAL, x.ret);
	EXPECT_EQ(0, stats(pool).blocks);
	EXPECT_EQ(0, um__pool_destroy(pool));
}

struct holder {
	struct um_pool *pool;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	int stage;
};

static void *hold_cache(void *arg)
{
	struct holder *h = arg;
	void *p[20];

	for (int i = 0; i < 20; i++)
		um__pool_alloc(h->pool, 3000, UM_POOL_NODE_ANY, 0, &p[i]);
	for (int i = 0; i < 20; i++)
		um__pool_free(h->pool, p[i]);
	pthread_mutex_lock(&h->lock);
	h->stage = 1;
	pthread_cond_broadcast(&h->cv);
	while (h->stage != 2)
		pthread_cond_wait(&h->cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
	/* any call flushes a cache that trim asked to flush */
	um__pool_alloc(h->pool, 3000, UM_POOL_NODE_ANY, 0, &p[0]);
	um__pool_free(h->pool, p[0]);
	pthread_mutex_lock(&h->lock);
	h->stage = 3;
	pthread_cond_broadcast(&h->cv);
	while (h->stage != 4)
		pthread_cond_wait(&h->cv, &h->lock);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

TEST(trim_with_a_cache_held_elsewhere)
{
	struct holder h = { .lock = PTHREAD_MUTEX_INITIALIZER,
			    .cv = PTHREAD_COND_INITIALIZER };
	struct um_pool_stats st;
	pthread_t th;

	h.pool = new_pool(2 * MiB, 0);
	ASSERT_NONNULL(h.pool);
	ASSERT_EQ(0, pthread_create(&th, NULL, hold_cache, &h));
	pthread_mutex_lock(&h.lock);
	while (h.stage != 1)
		pthread_cond_wait(&h.cv, &h.lock);
	pthread_mutex_unlock(&h.lock);
	/* the other thread's cache pins slots: the chunk cannot go yet */
	st = stats(h.pool);
	EXPECT_EQ(0, st.blocks);
	EXPECT_EQ(0, st.used);
	EXPECT_EQ(0, um__pool_trim(h.pool, UM_POOL_NODE_ALL, 0));
	pthread_mutex_lock(&h.lock);
	h.stage = 2;
	pthread_cond_broadcast(&h.cv);
	while (h.stage != 3)
		pthread_cond_wait(&h.cv, &h.lock);
	pthread_mutex_unlock(&h.lock);
	/* it flushed at its next call; it only keeps what that call used */
	EXPECT_EQ(0, stats(h.pool).blocks);
	pthread_mutex_lock(&h.lock);
	h.stage = 4;
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.lock);
	pthread_join(th, NULL);
	/* thread exit flushed the rest */
	EXPECT_EQ((int64_t)(2 * MiB),
		  um__pool_trim(h.pool, UM_POOL_NODE_ALL, 0));
	EXPECT_EQ(0, um__pool_destroy(h.pool));
	EXPECT_EQ(0, g_fake.live);
}

/* ---- on the sim backend: pinned memory is real --------------------------- */

TEST(on_sim_backend)
{
	struct um_backend be = { .ops = &um__backend_sim };
	struct um_backend_config bc = { .sim_capacity = 64 * MiB };
	struct um_pool *pool;
	struct um_pool_stats st;
	void *p[8];

	ASSERT_EQ(0, um__backend_sim.init(&be, &bc));
	ASSERT_EQ(0, um__pool_create(&be, NULL, &pool));
	ASSERT_EQ(0, um__pool_reserve(pool, UM_POOL_NODE_ANY, 16 * MiB));
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(0, um__pool_alloc(pool, (size_t)(i + 1) * MiB,
					    UM_POOL_NODE_ANY, 0, &p[i]));
		memset(p[i], i, (size_t)(i + 1) * MiB);
	}
	for (int i = 0; i < 8; i++) {
		unsigned char *c = p[i];

		EXPECT_EQ(i, c[(size_t)(i + 1) * MiB - 1]);
		ASSERT_EQ(0, um__pool_free(pool, p[i]));
	}
	st = stats(pool);
	EXPECT_EQ(0, st.used);
	EXPECT_GE(um__pool_trim(pool, UM_POOL_NODE_ALL, 0), 64 * MiB);
	EXPECT_EQ(0, um__pool_destroy(pool));
	um__backend_sim.fini(&be);
}

TEST_HARNESS_MAIN
