/* SPDX-License-Identifier: MIT */
/*
 * Description: the sub-allocator (um_suballoc_*) on the sim backend: 1,000
 * blocks of 4 KiB packed into two segments on the device, a freed block
 * reused by the best fit and merged with its free neighbours (the figures
 * after each step), trim giving empty segments back, 512-byte alignment,
 * bad input of every kind (size 0 and too large, double, foreign and
 * interior frees, a block of another context's sub-allocator, bad
 * descriptors, dead handles), reuse on the freeing stream and (sim: work
 * done at the call) on another at once, segments evicted to the host and
 * restored with their blocks' bytes intact, the JSON, a destroy with live
 * blocks, and four threads at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>

#include "harness.h"
#include "helpers.h"

#define SEG (2 * MiB)
#define S_A ((void *)0x1000)	/* two caller streams (sim ignores them) */
#define S_B ((void *)0x2000)

static struct um_suballoc *sa_new(struct um_context *ctx, uint32_t flags)
{
	struct um_suballoc_desc d = {
		.size = sizeof(d),
		.flags = flags,
		.name = "small",
	};
	struct um_suballoc *sa = NULL;

	if (um_suballoc_create(ctx, &d, &sa))
		return NULL;
	return sa;
}

static struct um_stats stats_of(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	if (um_stats_get(ctx, &st))
		memset(&st, 0xff, sizeof(st));
	return st;
}

static uint64_t off_of(struct um_suballoc *sa, void *p)
{
	struct um_suballoc_block b = { .size = sizeof(b) };

	return um_suballoc_lookup(sa, p, &b) ? UINT64_MAX : b.offset;
}

TEST(packed_into_segments)
{
	struct um_context *ctx = ctx_sim(64 * MiB, 64 * MiB);
	struct um_suballoc *sa;
	static void *p[1000];
	struct um_stats st;

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	for (int i = 0; i < 1000; i++) {
		ASSERT_EQ(0, um_suballoc_alloc(sa, 4 * KiB, NULL, &p[i]));
		pattern_fill(p[i], 4 * KiB, (uint64_t)i);
	}
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(-1, pattern_check(p[i], 4 * KiB, (uint64_t)i))
			TH_LOG("block %d overwritten", i);
	st = stats_of(ctx);
	EXPECT_EQ(2, st.regions);
	EXPECT_EQ(2, st.suballoc_segments);
	EXPECT_EQ(2 * SEG, st.suballoc_reserved);
	EXPECT_EQ(2 * SEG, st.device[0].current);
	EXPECT_EQ(1000 * 4 * KiB, st.suballoc_allocated);
	EXPECT_EQ(1000 * 4 * KiB, st.suballoc_requested);
	EXPECT_EQ(1000, st.suballoc_blocks);
	EXPECT_EQ(1000, st.suballoc_allocs);
	EXPECT_EQ(2, st.suballoc_grows);
	/* the second segment holds 488 blocks: the rest is split off */
	EXPECT_EQ(SEG - 488 * 4 * KiB, st.suballoc_inactive_split);
	EXPECT_EQ(SEG - 488 * 4 * KiB, st.suballoc_largest_free);
	for (int i = 0; i < 1000; i++)
		ASSERT_EQ(0, um_suballoc_free(sa, p[i], NULL));
	st = stats_of(ctx);
	EXPECT_EQ(0, st.suballoc_blocks);
	EXPECT_EQ(0, st.suballoc_allocated);
	EXPECT_EQ(0, st.suballoc_inactive_split);
	EXPECT_EQ(SEG, st.suballoc_largest_free);	/* merged whole again */
	EXPECT_EQ(2, st.suballoc_segments);		/* cached */
	EXPECT_EQ(2 * SEG, um_suballoc_trim(sa));
	st = stats_of(ctx);
	EXPECT_EQ(0, st.suballoc_segments);
	EXPECT_EQ(0, st.regions);
	EXPECT_EQ(0, st.device[0].current);
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(best_fit_split_and_merge)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB);
	struct um_suballoc *sa;
	void *a, *b, *c, *d, *e;
	struct um_stats st;

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	ASSERT_EQ(0, um_suballoc_alloc(sa, 1000, NULL, &a));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 3000, NULL, &b));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 512, NULL, &c));
	EXPECT_EQ(0, off_of(sa, a));
	EXPECT_EQ(1024, off_of(sa, b));
	EXPECT_EQ(4096, off_of(sa, c));
	ASSERT_EQ(0, um_suballoc_free(sa, b, NULL));
	st = stats_of(ctx);
	EXPECT_EQ(SEG - 1536, st.suballoc_inactive_split);
	EXPECT_EQ(SEG - 4608, st.suballoc_largest_free);
	/* the best fit is b's hole, not the rest of the segment */
	ASSERT_EQ(0, um_suballoc_alloc(sa, 2048, NULL, &d));
	EXPECT_EQ(1024, off_of(sa, d));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 1024, NULL, &e));
	EXPECT_EQ(3072, off_of(sa, e));		/* the hole's rest */
	/* a and d merge around nothing; freeing e joins a + d + e */
	ASSERT_EQ(0, um_suballoc_free(sa, a, NULL));
	ASSERT_EQ(0, um_suballoc_free(sa, d, NULL));
	ASSERT_EQ(0, um_suballoc_free(sa, e, NULL));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 4096, NULL, &a));
	EXPECT_EQ(0, off_of(sa, a));		/* one 4 KiB hole again */
	ASSERT_EQ(0, um_suballoc_free(sa, a, NULL));
	ASSERT_EQ(0, um_suballoc_free(sa, c, NULL));
	st = stats_of(ctx);
	EXPECT_EQ(SEG, st.suballoc_largest_free);
	EXPECT_EQ(1, st.suballoc_segments);
	/* a block larger than half a segment gets a segment of its own */
	ASSERT_EQ(0, um_suballoc_alloc(sa, MiB, NULL, &a));
	ASSERT_EQ(0, um_suballoc_alloc(sa, MiB, NULL, &b));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 1, NULL, &c));
	st = stats_of(ctx);
	EXPECT_EQ(2, st.suballoc_segments);
	EXPECT_EQ(0, um_suballoc_free(sa, a, NULL));
	EXPECT_EQ(0, um_suballoc_free(sa, b, NULL));
	EXPECT_EQ(0, um_suballoc_free(sa, c, NULL));
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, stats_of(ctx).regions);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(aligned_to_512)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB);
	struct um_suballoc_block info = { .size = sizeof(info) };
	static const size_t sizes[] = { 1, 7, 511, 512, 513, 1000, 4095,
					 4097, 65536, 100000, MiB };
	struct um_suballoc *sa;
	void *p[11];

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	for (int i = 0; i < 11; i++) {
		ASSERT_EQ(0, um_suballoc_alloc(sa, sizes[i], NULL, &p[i]));
		EXPECT_EQ(0, (uintptr_t)p[i] % 512)
			TH_LOG("size %zu", sizes[i]);
		ASSERT_EQ(0, um_suballoc_lookup(sa, (char *)p[i] + sizes[i] - 1,
						&info));
		EXPECT_EQ((uintptr_t)p[i], (uintptr_t)info.ptr);
		EXPECT_EQ(sizes[i], info.bytes);
		EXPECT_EQ((sizes[i] + 511) / 512 * 512, info.rounded);
		EXPECT_NE(0, info.segment);
		memset(p[i], 0x5a, sizes[i]);
	}
	for (int i = 0; i < 11; i++)
		EXPECT_EQ(0, um_suballoc_free(sa, p[i], NULL));
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(bad_input)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB), *other, *dead;
	struct um_suballoc_desc d = { .size = sizeof(d) };
	struct um_suballoc_block info = { .size = sizeof(info) };
	struct um_suballoc *sa, *osa, *x = NULL;
	uint64_t junk[64];
	int local;
	void *p, *q;

	ASSERT_NONNULL(ctx);
	other = ctx_sim(0, 16 * MiB);
	ASSERT_NONNULL(other);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	osa = sa_new(other, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	ASSERT_NONNULL(osa);

	/* descriptors */
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, NULL, &x));
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, NULL));
	EXPECT_EQ(-EINVAL, um_suballoc_create(NULL, &d, &x));
	memset(junk, 0x5a, sizeof(junk));
	EXPECT_EQ(-EBADF, um_suballoc_create((struct um_context *)junk, &d,
					     &x));
	d.size = 8;
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	d.size = sizeof(d);
	d.flags = 1u << 7;
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	d.flags = 0;
	d.reserved = 1;
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	d.reserved = 0;
	d.device = 1;
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	d.device = 0;
	d.kind = UM_KIND_COUNT;
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	d.kind = 0;
	d.segment_bytes = 3 * MiB;		/* not whole granules */
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	d.segment_bytes = 0;
	d.max_block = SEG + 1;
	EXPECT_EQ(-EINVAL, um_suballoc_create(ctx, &d, &x));
	EXPECT_NULL(x);

	/* allocations */
	EXPECT_EQ(-EINVAL, um_suballoc_alloc(sa, 0, NULL, &p));
	EXPECT_EQ(-EINVAL, um_suballoc_alloc(sa, 64, NULL, NULL));
	EXPECT_EQ(-E2BIG, um_suballoc_alloc(sa, MiB + 1, NULL, &p));
	EXPECT_EQ(-EINVAL, um_suballoc_alloc(NULL, 64, NULL, &p));
	EXPECT_EQ(-EBADF, um_suballoc_alloc((struct um_suballoc *)junk, 64,
					    NULL, &p));

	/* frees */
	ASSERT_EQ(0, um_suballoc_alloc(sa, 4096, NULL, &p));
	ASSERT_EQ(0, um_suballoc_alloc(osa, 4096, NULL, &q));
	memset(p, 1, 4096);
	EXPECT_EQ(-EINVAL, um_suballoc_free(sa, NULL, NULL));
	EXPECT_EQ(-EINVAL, um_suballoc_free(sa, (char *)p + 512, NULL));
	EXPECT_EQ(-ENOENT, um_suballoc_free(sa, &local, NULL));
	EXPECT_EQ(-EXDEV, um_suballoc_free(sa, q, NULL));
	EXPECT_EQ(-EXDEV, um_suballoc_lookup(sa, q, &info));
	EXPECT_EQ(-EXDEV, um_suballoc_lookup(sa, (char *)q + 100, &info));
	EXPECT_EQ(-ENOENT, um_suballoc_lookup(sa, &local, &info));
	EXPECT_EQ(-EINVAL, um_suballoc_lookup(sa, p, NULL));
	info.size = 4;
	EXPECT_EQ(-EINVAL, um_suballoc_lookup(sa, p, &info));
	EXPECT_EQ(1, stats_of(ctx).suballoc_blocks);	/* nothing lost */
	EXPECT_EQ(1, ((unsigned char *)p)[4095]);
	EXPECT_EQ(0, um_suballoc_free(sa, p, NULL));
	EXPECT_EQ(-ENOENT, um_suballoc_free(sa, p, NULL));	/* double */
	EXPECT_EQ(0, um_suballoc_free(osa, q, NULL));
	EXPECT_EQ(0, stats_of(ctx).suballoc_blocks);

	/* dead handles */
	EXPECT_EQ(0, um_suballoc_destroy(osa));
	EXPECT_EQ(-EBADF, um_suballoc_alloc(osa, 64, NULL, &p));
	EXPECT_EQ(-EBADF, um_suballoc_destroy(osa));
	EXPECT_EQ(-EINVAL, um_suballoc_destroy(NULL));
	EXPECT_EQ(0, um_context_destroy(other));
	dead = ctx_sim(0, 16 * MiB);
	ASSERT_NONNULL(dead);
	x = sa_new(dead, 0);
	ASSERT_NONNULL(x);
	EXPECT_EQ(0, um_context_destroy(dead));
	EXPECT_EQ(-EBADF, um_suballoc_alloc(x, 64, NULL, &p));
	EXPECT_EQ(-EBADF, um_suballoc_trim(x));
	EXPECT_EQ(0, um_suballoc_destroy(x));	/* only forgets it */
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(stream_ordered_reuse)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB);
	struct um_suballoc *sa;
	void *p, *q;

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	ASSERT_EQ(0, um_suballoc_alloc(sa, 8192, S_A, &p));
	ASSERT_EQ(0, um_suballoc_free(sa, p, S_A));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 8192, S_A, &q));
	EXPECT_EQ((uintptr_t)p, (uintptr_t)q);	/* same stream: at once */
	/* on sim the stream's work is done at the call: shared at once */
	ASSERT_EQ(0, um_suballoc_free(sa, q, S_A));
	EXPECT_EQ(0, stats_of(ctx).suballoc_pending);
	ASSERT_EQ(0, um_suballoc_alloc(sa, 8192, S_B, &q));
	EXPECT_EQ((uintptr_t)p, (uintptr_t)q);
	ASSERT_EQ(0, um_suballoc_free(sa, q, S_B));
	EXPECT_EQ(1, stats_of(ctx).suballoc_grows);
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* Without HOLD, segments are regions the caller acquires and releases. */
TEST(segments_evicted_and_restored)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB);
	struct um_suballoc_block a = { .size = sizeof(a) };
	struct um_suballoc_block b = { .size = sizeof(b) };
	struct um_suballoc *sa;
	struct um_stats st;
	void *p, *q;

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, 0);
	ASSERT_NONNULL(sa);
	ASSERT_EQ(0, um_suballoc_alloc(sa, 3000, NULL, &p));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 70000, NULL, &q));
	ASSERT_EQ(0, um_suballoc_lookup(sa, p, &a));
	ASSERT_EQ(0, um_suballoc_lookup(sa, q, &b));
	EXPECT_EQ(a.segment, b.segment);
	EXPECT_EQ(0, stats_of(ctx).device[0].current);	/* not acquired */
	ASSERT_EQ(0, um_acquire(ctx, a.segment, UM_TIER_GPU(0), NULL));
	pattern_fill(p, 3000, 11);
	pattern_fill(q, 70000, 12);
	ASSERT_EQ(0, um_release(ctx, a.segment));
	ASSERT_EQ(0, um_evict(ctx, a.segment, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, a.segment));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(ctx, a.segment)));
	st = stats_of(ctx);
	EXPECT_EQ(0, st.device[0].current);
	EXPECT_EQ(1, st.evict_count);
	/* the sub-allocator goes on meanwhile: bookkeeping is host-side */
	ASSERT_EQ(0, um_suballoc_free(sa, p, NULL));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 3000, NULL, &p));
	EXPECT_EQ(a.offset, off_of(sa, p));
	ASSERT_EQ(0, um_acquire(ctx, a.segment, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_wait(ctx, a.segment));
	EXPECT_EQ(1, stats_of(ctx).restore_count);
	EXPECT_EQ(-1, pattern_check(p, 3000, 11));
	EXPECT_EQ(-1, pattern_check(q, 70000, 12));
	ASSERT_EQ(0, um_release(ctx, a.segment));
	EXPECT_EQ(0, um_suballoc_free(sa, p, NULL));
	EXPECT_EQ(0, um_suballoc_free(sa, q, NULL));
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, stats_of(ctx).regions);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(json_and_leaks)
{
	struct um_context *ctx = ctx_sim(0, 16 * MiB);
	struct um_suballoc *sa;
	char buf[8192];
	void *p;

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	ASSERT_EQ(0, um_suballoc_alloc(sa, 100, NULL, &p));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 600, NULL, &p));
	ASSERT_LT(0, um_stats_json(ctx, buf, sizeof(buf)));
	EXPECT_NONNULL(strstr(buf, "\"suballoc\":{\"segments\":1,"
			      "\"reserved\":2097152,\"allocated\":1536,"
			      "\"requested\":700,\"blocks\":2,"
			      "\"inactive_split\":2095616,"
			      "\"largest_free\":2095616,\"pending\":0,"
			      "\"allocs\":2,\"grows\":1}")) TH_LOG("%s", buf);
	logcap_reset();
	EXPECT_EQ(2, um_suballoc_destroy(sa));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "\"small\": 2 blocks", NULL));
	EXPECT_EQ(0, stats_of(ctx).regions);
	EXPECT_EQ(0, stats_of(ctx).suballoc_segments);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

struct worker {
	struct um_suballoc *sa;
	int id, errors;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	void *p[64];

	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 64; i++) {
			size_t n = 512 + (size_t)((i * 37 + w->id * 11) % 16) *
					 512;

			if (um_suballoc_alloc(w->sa, n, NULL, &p[i])) {
				w->errors++;
				p[i] = NULL;
				continue;
			}
			pattern_fill(p[i], 512, (uint64_t)(w->id * 1000 + i));
		}
		for (int i = 0; i < 64; i++) {
			if (!p[i])
				continue;
			if (pattern_check(p[i], 512,
					  (uint64_t)(w->id * 1000 + i)) != -1)
				w->errors++;
			if (um_suballoc_free(w->sa, p[i], NULL))
				w->errors++;
		}
	}
	return NULL;
}

TEST(four_threads)
{
	struct um_context *ctx = ctx_sim(0, 32 * MiB);
	struct worker w[4];
	pthread_t t[4];
	struct um_suballoc *sa;

	ASSERT_NONNULL(ctx);
	sa = sa_new(ctx, UM_SUBALLOC_HOLD);
	ASSERT_NONNULL(sa);
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .sa = sa, .id = i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, worker_run, &w[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].errors) TH_LOG("thread %d", i);
	}
	EXPECT_EQ(0, stats_of(ctx).suballoc_blocks);
	EXPECT_LT(0, um_suballoc_trim(sa));
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
