/* SPDX-License-Identifier: MIT */
/*
 * region_slab.h - where a context's struct um_region objects live
 * (region_slab.c): fixed-size, cache-line aligned objects, past the first
 * few hundred in 2 MiB chunks that the kernel may back with a huge page.
 */
#ifndef UM_REGION_SLAB_H
#define UM_REGION_SLAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0 under AddressSanitizer: everything from malloc, so that it checks it */
#if defined(__SANITIZE_ADDRESS__)
#define UM_SLAB_HUGE	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UM_SLAB_HUGE	0
#endif
#endif
#ifndef UM_SLAB_HUGE
#define UM_SLAB_HUGE	1
#endif

struct um_rslab_chunk;
struct um_rslab_free;

struct um_rslab {
	size_t size, align;		/* of each object */
	uint32_t small;			/* objects taken from malloc */
	struct um_rslab_chunk *chunks;	/* newest first */
	struct um_rslab_free *free;	/* freed chunk objects, LIFO */
	char *next, *end;		/* the newest chunk's untouched part */
};

void um__rslab_init(struct um_rslab *s, size_t size, size_t align);
/* A zeroed object, or NULL; *in_chunk says which way it came. */
void *um__rslab_get(struct um_rslab *s, bool *in_chunk);
void um__rslab_put(struct um_rslab *s, void *obj, bool in_chunk);
/* Unmap every chunk: their objects must all have been put. */
void um__rslab_fini(struct um_rslab *s);

/*
 * A table read at random by region: bytes of zeroed memory, NULL if there
 * is none (or bytes is 0), from malloc while small and in whole 2 MiB
 * pages from UM_TABLE_HUGE_MIN bytes on (so at most 7/8 of it unused).
 * Freed with the same bytes it was asked with.
 */
#define UM_TABLE_HUGE_MIN	(256u << 10)
void *um__table_alloc(size_t bytes);
void um__table_free(void *p, size_t bytes);

#endif
