/* SPDX-License-Identifier: MIT */
/*
 * Description: the range map (libum/src/rangemap.c) that um_lookup and the
 * sim's reservations use, against a model: 4,000 disjoint ranges of 1 byte
 * to 1 GiB at unaligned addresses, many of them touching, inserted and
 * removed at random 40,000 times; after each step the first byte, the
 * last, a byte inside and the bytes just outside of a random range must
 * give what a binary search over the model gives. Also the edges (one
 * byte, a range ending at the top of the address space, 2^63 bytes), bad
 * input, and a map emptied and filled again. And the allocator of such
 * tables (um__table_alloc, region_slab.c): zeroed memory, from malloc
 * while small, in whole 2 MiB pages advised MADV_HUGEPAGE past
 * UM_TABLE_HUGE_MIN bytes (the range map's own table among them).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rangemap.h"
#include "region_slab.h"

#define NRANGES 4000
#define STEPS 40000

struct model {
	uintptr_t start[NRANGES];
	size_t len[NRANGES];
	bool in[NRANGES];
	uint64_t seed;
};

static uint64_t next_rand(struct model *md)
{
	md->seed ^= md->seed << 13;
	md->seed ^= md->seed >> 7;
	md->seed ^= md->seed << 17;
	return md->seed;
}

/* Lengths spread over every level from 0 to 30, starts anywhere. */
static void model_build(struct model *md)
{
	uintptr_t at = (uintptr_t)1 << 40;

	md->seed = 0x243f6a8885a308d3ull;
	for (int i = 0; i < NRANGES; i++) {
		unsigned int level = (unsigned int)(next_rand(md) % 31);
		size_t len = ((size_t)1 << level) -
			     (size_t)(next_rand(md) % ((size_t)1 << level));

		/* half of them touch the previous one */
		if (next_rand(md) & 1)
			at += (uintptr_t)(next_rand(md) % (1ull << 31));
		md->start[i] = at;
		md->len[i] = len;
		md->in[i] = false;
		at += len;
	}
}

static uint64_t val_of(int i)
{
	return (uint64_t)i + 1;
}

/* What the map must say for p: the model's range holding p, if in. */
static uint64_t model_find(const struct model *md, uintptr_t p)
{
	int lo = 0, hi = NRANGES;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (md->start[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return 0;
	lo--;
	if (!md->in[lo] || p - md->start[lo] >= md->len[lo])
		return 0;
	return val_of(lo);
}

static bool probe_ok(const struct um_rangemap *m, const struct model *md,
		     uintptr_t p)
{
	return um__rangemap_find(m, p) == model_find(md, p);
}

TEST(random_inserts_and_removes_match_the_model)
{
	static struct model md;
	struct um_rangemap m;
	size_t in = 0;

	model_build(&md);
	um__rangemap_init(&m);
	for (int step = 0; step < STEPS; step++) {
		int i = (int)(next_rand(&md) % NRANGES);
		int k = (int)(next_rand(&md) % NRANGES);
		uintptr_t s = md.start[k], last = s + md.len[k] - 1;
		uintptr_t inside = s + (uintptr_t)(next_rand(&md) % md.len[k]);

		if (md.in[i]) {
			ASSERT_EQ(val_of(i), um__rangemap_remove(&m, md.start[i],
								 md.len[i]))
				TH_LOG("step %d: range %d", step, i);
			in--;
		} else {
			ASSERT_EQ(0, um__rangemap_insert(&m, md.start[i],
							 md.len[i], val_of(i)));
			in++;
		}
		md.in[i] = !md.in[i];
		ASSERT_EQ(in, m.ranges);
		ASSERT_TRUE(probe_ok(&m, &md, s) && probe_ok(&m, &md, last) &&
			    probe_ok(&m, &md, inside) &&
			    probe_ok(&m, &md, s - 1) &&
			    probe_ok(&m, &md, last + 1))
			TH_LOG("step %d: range %d [%#lx, %#lx] (%s)", step, k,
			       (unsigned long)s, (unsigned long)last,
			       md.in[k] ? "in" : "out");
	}
	/* every range once more, then all of them out */
	for (int i = 0; i < NRANGES; i++)
		ASSERT_EQ(md.in[i] ? val_of(i) : 0,
			  um__rangemap_find(&m, md.start[i] + md.len[i] / 2));
	for (int i = 0; i < NRANGES; i++)
		if (md.in[i])
			ASSERT_EQ(val_of(i), um__rangemap_remove(&m, md.start[i],
								 md.len[i]));
	EXPECT_EQ(0, m.ranges);
	EXPECT_EQ(0, m.used);
	EXPECT_EQ(0, m.levels);
	EXPECT_EQ(0, um__rangemap_find(&m, md.start[0]));
	um__rangemap_fini(&m);
}

TEST(edges_of_the_address_space)
{
	const uintptr_t top = UINTPTR_MAX;
	const size_t half = (size_t)1 << 63;
	struct um_rangemap m;
	const uint64_t a = 1, b = 2, c = 3;

	um__rangemap_init(&m);
	EXPECT_EQ(0, um__rangemap_find(&m, 0));
	ASSERT_EQ(0, um__rangemap_insert(&m, 0x1000, 1, a));
	ASSERT_EQ(0, um__rangemap_insert(&m, top - 4095, 4096, b));
	ASSERT_EQ(0, um__rangemap_insert(&m, (uintptr_t)1 << 62, half / 2 + 1,
					 c));
	EXPECT_EQ(a, um__rangemap_find(&m, 0x1000));
	EXPECT_EQ(0, um__rangemap_find(&m, 0x1001));
	EXPECT_EQ(0, um__rangemap_find(&m, 0xfff));
	EXPECT_EQ(b, um__rangemap_find(&m, top));
	EXPECT_EQ(b, um__rangemap_find(&m, top - 4095));
	EXPECT_EQ(0, um__rangemap_find(&m, top - 4096));
	/* c: level 63, over the two halves of the address space */
	EXPECT_EQ(c, um__rangemap_find(&m, (uintptr_t)3 << 61));
	EXPECT_EQ(c, um__rangemap_find(&m, (uintptr_t)1 << 63));
	EXPECT_EQ(0, um__rangemap_find(&m, ((uintptr_t)1 << 63) + 1));
	EXPECT_EQ(0, um__rangemap_find(&m, ((uintptr_t)1 << 62) - 1));
	/* removal wants the range as inserted */
	EXPECT_EQ(0, um__rangemap_remove(&m, 0x1000, 2));
	EXPECT_EQ(0, um__rangemap_remove(&m, top - 4095, 4095));
	EXPECT_EQ(b, um__rangemap_remove(&m, top - 4095, 4096));
	EXPECT_EQ(0, um__rangemap_find(&m, top));
	EXPECT_EQ(a, um__rangemap_remove(&m, 0x1000, 1));
	EXPECT_EQ(c, um__rangemap_remove(&m, (uintptr_t)1 << 62,
					  half / 2 + 1));
	EXPECT_EQ(0, m.ranges);
	/* the largest range there can be, then the whole lower half */
	ASSERT_EQ(0, um__rangemap_insert(&m, 0, half, a));
	EXPECT_EQ(a, um__rangemap_find(&m, half - 1));
	EXPECT_EQ(0, um__rangemap_find(&m, half));
	EXPECT_EQ(a, um__rangemap_remove(&m, 0, half));
	um__rangemap_fini(&m);
}

TEST(bad_input)
{
	struct um_rangemap m;
	const uint64_t a = 7;

	um__rangemap_init(&m);
	EXPECT_EQ(-EINVAL, um__rangemap_insert(&m, 0x1000, 0, a));
	EXPECT_EQ(-EINVAL, um__rangemap_insert(&m, 0x1000, 16, 0));
	EXPECT_EQ(-EINVAL, um__rangemap_insert(&m, UINTPTR_MAX, 2, a));
	EXPECT_EQ(-EINVAL, um__rangemap_insert(&m, 0, ((size_t)1 << 63) + 1,
					       a));
	EXPECT_EQ(0, m.ranges);
	EXPECT_EQ(0, um__rangemap_remove(&m, 0x1000, 16));	/* never in */
	ASSERT_EQ(0, um__rangemap_insert(&m, 0x1000, 16, a));
	EXPECT_EQ(0, um__rangemap_remove(&m, 0x1000, 0));
	EXPECT_EQ(0, um__rangemap_remove(&m, 0x2000, 16));
	EXPECT_EQ(a, um__rangemap_remove(&m, 0x1000, 16));
	EXPECT_EQ(0, um__rangemap_remove(&m, 0x1000, 16));	/* twice */
	um__rangemap_fini(&m);
	um__rangemap_fini(&m);		/* harmless on an empty map */
}

TEST(emptied_and_filled_again)
{
	enum { N = 5000, GRAN = 2 << 20 };
	struct um_rangemap m;

	um__rangemap_init(&m);
	for (int round = 0; round < 3; round++) {
		for (uintptr_t i = 0; i < N; i++)
			ASSERT_EQ(0, um__rangemap_insert(&m, (i + 1) * GRAN,
							 64 << 10, val_of((int)i)));
		for (uintptr_t i = 0; i < N; i++) {
			ASSERT_EQ(val_of((int)i),
				  um__rangemap_find(&m, (i + 1) * GRAN + 4096));
			ASSERT_EQ(0, um__rangemap_find(&m, (i + 1) * GRAN +
							  (64 << 10)));
		}
		/* out in another order than in */
		for (uintptr_t i = 0; i < N; i++) {
			uintptr_t k = (i * 2654435761u) % N;

			ASSERT_EQ(val_of((int)k),
				  um__rangemap_remove(&m, (k + 1) * GRAN,
						      64 << 10));
		}
		ASSERT_EQ(0, m.used);
	}
	um__rangemap_fini(&m);
}

/* The VmFlags line of the mapping that starts at p, or "" if none does. */
static void vmflags_of(const void *p, char *out, size_t len)
{
	char line[512], want[32];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool in = false;

	out[0] = '\0';
	if (!f)
		return;
	snprintf(want, sizeof(want), "%lx-", (unsigned long)(uintptr_t)p);
	while (fgets(line, sizeof(line), f)) {
		if (!in) {
			in = !strncmp(line, want, strlen(want));
			continue;
		}
		if (!strncmp(line, "VmFlags:", 8)) {
			snprintf(out, len, "%s", line);
			break;
		}
	}
	fclose(f);
}

static bool all_zero(const unsigned char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

TEST(tables_small_from_malloc_big_on_huge_pages)
{
	size_t small = UM_TABLE_HUGE_MIN - 64, big = UM_TABLE_HUGE_MIN;
	unsigned char *a = um__table_alloc(small), *b = um__table_alloc(big);
	char flags[512];

	ASSERT_NONNULL(a);
	ASSERT_NONNULL(b);
	EXPECT_TRUE(all_zero(a, small));
	EXPECT_TRUE(all_zero(b, big));
	memset(a, 0xa5, small);
	memset(b, 0x5a, big);
	vmflags_of(b, flags, sizeof(flags));
	if (UM_SLAB_HUGE) {
		EXPECT_EQ(0, (uintptr_t)b % (2u << 20));
		EXPECT_NONNULL(strstr(flags, " hg")) TH_LOG("%s", flags);
	}
	vmflags_of(a, flags, sizeof(flags));
	EXPECT_STREQ("", flags);	/* malloc's: no mapping starts at it */
	um__table_free(a, small);
	um__table_free(b, big);
	um__table_free(NULL, big);
	EXPECT_NULL(um__table_alloc(0));
	EXPECT_NULL(um__table_alloc(SIZE_MAX));
	EXPECT_NULL(um__table_alloc(SIZE_MAX - (1u << 20)));
}

TEST(a_big_map_keeps_its_table_on_huge_pages)
{
	/* 8192 slots at most two thirds full, 16384 at most half full */
	enum { N = 5000, GRAN = 2 << 20 };
	struct um_rangemap m;
	char flags[512];

	um__rangemap_init(&m);
	for (uintptr_t i = 0; i < N; i++)
		ASSERT_EQ(0, um__rangemap_insert(&m, (i + 1) * GRAN, 64 << 10,
						 val_of((int)i)));
	/* at most two thirds full, and no bigger than that needs */
	EXPECT_LE(m.used * 3, (m.mask + 1) * 2);
	EXPECT_GT(m.used * 3, (m.mask + 1)) TH_LOG("%zu slots", m.mask + 1);
	if (UM_SLAB_HUGE) {
		vmflags_of(m.slot, flags, sizeof(flags));
		EXPECT_NONNULL(strstr(flags, " hg")) TH_LOG("%s", flags);
	}
	for (uintptr_t i = 0; i < N; i++)
		ASSERT_EQ(val_of((int)i), um__rangemap_find(&m, (i + 1) * GRAN));
	um__rangemap_fini(&m);
}

TEST_HARNESS_MAIN
