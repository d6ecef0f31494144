// SPDX-License-Identifier: MIT
/*
 * rangemap.c - disjoint address ranges, found from any address inside them
 * with a hash, in time that does not grow with their number: um_lookup's
 * index of regions, the sim's index of VA reservations.
 *
 * A range of len bytes has level k, the smallest with 2^k >= len. Cut the
 * address space into chunks of 2^k bytes: such a range lies in at most two
 * consecutive chunks, so it is stored under the chunk of its first byte
 * and, when that differs, under the chunk of its last byte (its "tail").
 * Whatever address p a range holds, p's chunk at the range's level is one
 * of the two. Finding p is then one probe per level in use (a bit set of
 * them is kept): a handful of levels, whatever the number of ranges. A
 * chunk holds at most three disjoint ranges of its level (each is longer
 * than half a chunk), so no key gathers a long chain.
 *
 * The table is open addressing with linear probing, at most two thirds
 * full (a find that misses at a level reads 5 slots on average there, 2.5
 * when half full; a table that is a third the bigger spills the caches
 * the sooner: design/libum.rst, "Cost in the number of regions");
 * removal shifts later entries back (no tombstones), so a probe always
 * ends at the first empty slot. A big table is on huge pages
 * (um__table_alloc): a find on one of tens of thousands of ranges reads a
 * cold line, and should not walk cold page tables to reach it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "rangemap.h"
#include "region_slab.h"

#define MIN_SLOTS 64
#define MAX_LEN (1ull << (UM_RANGEMAP_LEVELS - 1))

struct um_rangemap_slot {
	uintptr_t start, last;		/* last byte, so no end overflows */
	uint64_t val;			/* kept here: a find reads one slot */
	uint8_t level;
	bool tail;			/* stored under the chunk of last */
	bool used;
};

static unsigned int level_of(size_t len)
{
	return len <= 1 ? 0 : 64 - (unsigned int)__builtin_clzll(len - 1);
}

static size_t home_of(const struct um_rangemap *m, unsigned int level,
		      uintptr_t addr)
{
	uint64_t h = ((uint64_t)addr >> level) + (uint64_t)level *
		     0x9e3779b97f4a7c15ull;

	/* splitmix64's finaliser: chunk numbers are consecutive integers */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (size_t)h & m->mask;
}

static size_t slot_home(const struct um_rangemap *m,
			const struct um_rangemap_slot *s)
{
	return home_of(m, s->level, s->tail ? s->last : s->start);
}

static void slot_put(struct um_rangemap *m, const struct um_rangemap_slot *s)
{
	size_t i = slot_home(m, s);

	while (m->slot[i].used)
		i = (i + 1) & m->mask;
	m->slot[i] = *s;
	m->used++;
}

static int grow(struct um_rangemap *m, size_t need)
{
	size_t n = m->mask ? m->mask + 1 : MIN_SLOTS, old_n = m->mask + 1;
	struct um_rangemap_slot *old = m->slot;

	if (m->slot && (m->used + need) * 3 <= n * 2)
		return 0;
	while ((m->used + need) * 3 > n * 2)
		n *= 2;
	m->slot = um__table_alloc(n * sizeof(*m->slot));
	if (!m->slot) {
		m->slot = old;
		return -ENOMEM;
	}
	m->mask = n - 1;
	m->used = 0;
	for (size_t i = 0; old && i < old_n; i++)
		if (old[i].used)
			slot_put(m, &old[i]);
	um__table_free(old, old_n * sizeof(*old));
	return 0;
}

void um__rangemap_init(struct um_rangemap *m)
{
	*m = (struct um_rangemap){ 0 };
}

void um__rangemap_fini(struct um_rangemap *m)
{
	um__table_free(m->slot, (m->mask + 1) * sizeof(*m->slot));
	um__rangemap_init(m);
}

int um__rangemap_insert(struct um_rangemap *m, uintptr_t start, size_t len,
			uint64_t val)
{
	struct um_rangemap_slot s = { .start = start, .val = val, .used = true };
	int ret;

	if (!val || !len || len > MAX_LEN || start + (len - 1) < start)
		return -EINVAL;
	s.last = start + (len - 1);
	s.level = (uint8_t)level_of(len);
	ret = grow(m, 2);
	if (ret)
		return ret;
	slot_put(m, &s);
	if ((s.start >> s.level) != (s.last >> s.level)) {
		s.tail = true;
		slot_put(m, &s);
	}
	m->levels |= 1ull << s.level;
	m->per_level[s.level]++;
	m->ranges++;
	return 0;
}

/* Empty slot i, moving back the entries whose probe passed over it. */
static void slot_take(struct um_rangemap *m, size_t i)
{
	size_t j = i;

	for (;;) {
		size_t h;

		j = (j + 1) & m->mask;
		if (!m->slot[j].used)
			break;
		h = slot_home(m, &m->slot[j]);
		/* j stays where it is when its home lies in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		m->slot[i] = m->slot[j];
		i = j;
	}
	m->slot[i].used = false;
	m->used--;
}

/* Drop the entry of [start, last] at level under the chunk of addr. */
static uint64_t entry_drop(struct um_rangemap *m, uintptr_t start,
			uintptr_t last, unsigned int level, bool tail)
{
	size_t i = home_of(m, level, tail ? last : start);

	for (; m->slot[i].used; i = (i + 1) & m->mask) {
		const struct um_rangemap_slot *s = &m->slot[i];
		uint64_t val = s->val;

		if (s->start == start && s->last == last && s->tail == tail) {
			slot_take(m, i);
			return val;
		}
	}
	return 0;
}

uint64_t um__rangemap_remove(struct um_rangemap *m, uintptr_t start,
			     size_t len)
{
	uintptr_t last = start + (len - 1);
	unsigned int level = level_of(len);
	uint64_t val;

	if (!m->slot || !len || len > MAX_LEN || last < start)
		return 0;
	val = entry_drop(m, start, last, level, false);
	if (!val)
		return 0;
	if ((start >> level) != (last >> level))
		entry_drop(m, start, last, level, true);
	if (!--m->per_level[level])
		m->levels &= ~(1ull << level);
	m->ranges--;
	return val;
}

uint64_t um__rangemap_find(const struct um_rangemap *m, uintptr_t p)
{
	for (uint64_t lv = m->levels; lv; lv &= lv - 1) {
		unsigned int level = (unsigned int)__builtin_ctzll(lv);
		size_t i = home_of(m, level, p);

		/* any range that holds p is the one (they are disjoint) */
		for (; m->slot[i].used; i = (i + 1) & m->mask)
			if (m->slot[i].start <= p && p <= m->slot[i].last)
				return m->slot[i].val;
	}
	return 0;
}
