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
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "region_slab.h"

#define RSLAB_CHUNK	(2u << 20)
#define RSLAB_SMALL	512u

#if defined(__SANITIZE_ADDRESS__)
#define RSLAB_CHUNKS	0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RSLAB_CHUNKS	0
#endif
#endif
#ifndef RSLAB_CHUNKS
#define RSLAB_CHUNKS	1
#endif

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

/* A new chunk, aligned to its size: its objects start a line in. */
static int chunk_add(struct um_rslab *s)
{
	char *raw, *p;
	size_t head;

	raw = mmap(NULL, 2 * RSLAB_CHUNK, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		return -errno;
	p = (char *)(((uintptr_t)raw + RSLAB_CHUNK - 1) &
		     ~(uintptr_t)(RSLAB_CHUNK - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + RSLAB_CHUNK, (size_t)(raw + RSLAB_CHUNK - p));
	(void)madvise(p, RSLAB_CHUNK, MADV_HUGEPAGE);	/* a hint only */
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

	*in_chunk = RSLAB_CHUNKS && s->small >= RSLAB_SMALL;
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
