// SPDX-License-Identifier: MIT
/*
 * region_slab.c - the objects behind a context's regions.
 *
 * A hit on one of tens of thousands of regions finds its region's lines
 * cold in the caches, and with a malloc'ed object per region each one on
 * a 4 KiB page of its own: a TLB miss too, whose page walk is cold as
 * well. Past RSLAB_SMALL objects they come from 2 MiB chunks, aligned and
 * advised MADV_HUGEPAGE, so that where transparent huge pages are on (or
 * "madvise", Debian's default) one TLB entry covers 3000 regions
 * (design/libum.rst, "Cost in the number of regions", has the figures).
 * A context with a few regions pays nothing for it: those come from
 * malloc. Freed chunk objects are kept for the next allocation; chunks go
 * back at context destroy. Under AddressSanitizer every object comes from
 * malloc, so that its checks still see each region.
 *
 * The tables indexed by region (the handles' slots, the range map behind
 * um_lookup) are read at random the same way: past UM_TABLE_HUGE_MIN bytes
 * they are mapped in whole 2 MiB pages too (um__table_alloc).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "region_slab.h"
#include "util.h"

#define RSLAB_CHUNK	(2u << 20)
#define RSLAB_SMALL	512u

struct um_rslab_chunk {
	struct um_rslab_chunk *next;
};

struct um_rslab_free {
	struct um_rslab_free *next;
};

void um__rslab_init(struct um_rslab *s, size_t size, size_t align)
{
	memset(s, 0, sizeof(*s));
	s->size = (size + align - 1) / align * align;
	s->align = align;
}

/* bytes (a multiple of RSLAB_CHUNK) of zeroed memory aligned to a chunk */
static void *map_huge(size_t bytes)
{
	void *p = um__map_aligned(bytes, RSLAB_CHUNK, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);

	if (p)
		(void)madvise(p, bytes, MADV_HUGEPAGE);	/* a hint only */
	return p;
}

/* A new chunk, aligned to its size: its objects start a line in. */
static int chunk_add(struct um_rslab *s)
{
	char *p = map_huge(RSLAB_CHUNK);
	size_t head;

	if (!p)
		return -errno;
	((struct um_rslab_chunk *)p)->next = s->chunks;
	s->chunks = (struct um_rslab_chunk *)p;
	head = (sizeof(struct um_rslab_chunk) + s->align - 1) / s->align *
	       s->align;
	s->next = p + head;
	s->end = p + RSLAB_CHUNK;
	return 0;
}

static void *from_chunk(struct um_rslab *s)
{
	void *obj;

	if (s->free) {
		obj = s->free;
		s->free = s->free->next;
		memset(obj, 0, s->size);
		return obj;
	}
	if ((size_t)(s->end - s->next) < s->size && chunk_add(s))
		return NULL;
	obj = s->next;		/* fresh pages: already zero */
	s->next += s->size;
	return obj;
}

void *um__rslab_get(struct um_rslab *s, bool *in_chunk)
{
	void *obj;

	*in_chunk = UM_SLAB_HUGE && s->small >= RSLAB_SMALL;
	if (*in_chunk) {
		obj = from_chunk(s);
		if (obj)
			return obj;
		*in_chunk = false;	/* no chunk to be had: malloc's */
	}
	obj = aligned_alloc(s->align, s->size);
	if (!obj)
		return NULL;
	memset(obj, 0, s->size);
	s->small++;
	return obj;
}

void um__rslab_put(struct um_rslab *s, void *obj, bool in_chunk)
{
	struct um_rslab_free *f = obj;

	if (!obj)
		return;
	if (!in_chunk) {
		free(obj);
		s->small--;
		return;
	}
	f->next = s->free;
	s->free = f;
}

void um__rslab_fini(struct um_rslab *s)
{
	while (s->chunks) {
		struct um_rslab_chunk *c = s->chunks;

		s->chunks = c->next;
		munmap(c, RSLAB_CHUNK);
	}
	s->free = NULL;
	s->next = s->end = NULL;
}

static bool table_is_mapped(size_t bytes)
{
	return UM_SLAB_HUGE && bytes >= UM_TABLE_HUGE_MIN;
}

static size_t table_mapped_bytes(size_t bytes)
{
	return (bytes + RSLAB_CHUNK - 1) / RSLAB_CHUNK * RSLAB_CHUNK;
}

void *um__table_alloc(size_t bytes)
{
	if (!bytes || bytes > SIZE_MAX - 2 * RSLAB_CHUNK)
		return NULL;
	if (table_is_mapped(bytes))
		return map_huge(table_mapped_bytes(bytes));
	return calloc(1, bytes);
}

void um__table_free(void *p, size_t bytes)
{
	if (!p)
		return;
	if (table_is_mapped(bytes))
		munmap(p, table_mapped_bytes(bytes));
	else
		free(p);
}
