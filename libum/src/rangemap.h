/* SPDX-License-Identifier: MIT */
/*
 * rangemap.h - disjoint address ranges, found from any address inside them
 * in time that does not grow with their number (rangemap.c).
 */
#ifndef UM_RANGEMAP_H
#define UM_RANGEMAP_H

#include <stddef.h>
#include <stdint.h>

#define UM_RANGEMAP_LEVELS 64

struct um_rangemap_slot;

struct um_rangemap {
	struct um_rangemap_slot *slot;	/* open addressing, linear probing */
	size_t mask;			/* slots - 1; 0 before the first insert */
	size_t used;			/* slots taken */
	size_t ranges;
	uint64_t levels;		/* bit k: some range has level k */
	uint32_t per_level[UM_RANGEMAP_LEVELS];
};

void um__rangemap_init(struct um_rangemap *m);
void um__rangemap_fini(struct um_rangemap *m);
/*
 * [start, start + len) must not overlap a range already in m (not
 * checked: the callers' ranges are VA reservations, disjoint by
 * construction); val is not 0. 0, -EINVAL (val 0, len 0, above 2^63 or
 * past the end
 * the address space), -ENOMEM.
 */
int um__rangemap_insert(struct um_rangemap *m, uintptr_t start, size_t len,
			uint64_t val);
/* The value of the range inserted as [start, start + len), or 0. */
uint64_t um__rangemap_remove(struct um_rangemap *m, uintptr_t start,
			     size_t len);
/* The value of the range that holds p, or 0. */
uint64_t um__rangemap_find(const struct um_rangemap *m, uintptr_t p);

#endif
