/* SPDX-License-Identifier: MIT */
/*
 * pool.h - the pinned host pool (internal to libum).
 *
 * Pinned host memory is slow to obtain (cudaHostAlloc costs about 1.2 ms per
 * MiB on the H200, design.rst), so the pool takes it from the backend's
 * host_alloc in large chunks and carves blocks out of them with an
 * allocator of its own:
 *
 *   - a heap per NUMA node (node UM_POOL_NODE_ANY = no placement), each with
 *     its own chunks; a block is always served from the heap it was asked on;
 *   - small blocks (<= UM_POOL_SMALL_MAX) come from 27 size classes, each
 *     class carving slabs of same-sized slots (bitmap + a state byte each);
 *   - larger blocks are runs of 4 KiB pages kept in a two-level segregated
 *     fit (TLSF-like) index of free spans; freeing coalesces with both
 *     neighbours at once through a page map (side metadata: the pool never
 *     writes into pinned memory);
 *   - a block larger than the chunk size gets a chunk of its own (rounded up
 *     to 2 MiB) that, once freed, serves smaller blocks like any other chunk
 *     until trimmed;
 *   - each thread keeps a small cache (up to 16 slots per class and the
 *     last large block, up to 32 MiB, it freed) that it uses without any
 *     lock or atomic read-modify-write: the fast path of alloc+free is
 *     ~10 ns, within 2x of glibc malloc+free at every size.
 *
 * Alignment: every block is 64-byte aligned, blocks of 4 KiB or more are
 * 4 KiB aligned (so spill I/O can use them with O_DIRECT).
 *
 * Cost: a cache hit is O(1) with no lock; otherwise one uncontended
 * spinlock, a page-map lookup and O(1) list/bitmap work. No call ever walks
 * all chunks or all blocks, except stats, trim and destroy.
 *
 * Locking: the pool has its own lock; callers may or may not hold their own
 * locks (the context lock) when calling any of these, the pool never calls
 * back into the core. Growing calls be->ops->host_alloc WITHOUT the pool
 * lock held (other threads keep allocating from what is there), serialised
 * by a mutex so concurrent growers do not over-allocate. Trim and destroy
 * call host_free likewise outside the pool lock. Destroying a pool while
 * another thread still uses it is a caller bug.
 *
 * Thread caches and trim: before the pool grows, the calling thread gives
 * its cache back; trim makes every other thread flush its cache at its next
 * call (and a thread's cache is flushed when it exits). Until then an idle
 * thread's cache pins what it holds. See Documentation/design/pool.rst.
 *
 * Growth: um__pool_alloc grows the heap when nothing fits (a slow call into
 * the backend). Hot paths should not pay that: call um__pool_reserve ahead of
 * need, e.g. from a background thread, and pass UM_POOL_NOGROW to fail fast
 * with -EAGAIN instead of growing.
 *
 * Errors are negative errno values; nothing here prints (warnings go through
 * be->log).
 */
#ifndef UM_POOL_H
#define UM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

struct um_pool;

#define UM_POOL_NODE_ANY	(-1)	/* heap without NUMA placement */
#define UM_POOL_MAX_NODES	16	/* nodes 0..15, plus NODE_ANY */

#define UM_POOL_PAGE		4096u
#define UM_POOL_MIN_ALIGN	64u
#define UM_POOL_SMALL_MAX	(32u * 1024)	/* largest size-class block */
#define UM_POOL_DEFAULT_CHUNK	(64ull << 20)
#define UM_POOL_MIN_CHUNK	(2ull << 20)	/* chunk sizes round to this */

struct um_pool_config {
	uint64_t chunk_bytes;	/* growth unit; 0 = UM_POOL_DEFAULT_CHUNK */
	uint64_t max_bytes;	/* cap on chunk bytes held; 0 = no cap */
};

/* Flags for um__pool_alloc. */
enum um_pool_alloc_flags {
	UM_POOL_NOGROW = 1u << 0,	/* -EAGAIN instead of host_alloc */
	UM_POOL_ZERO = 1u << 1,		/* zero the block */
	/*
	 * Mark the block as the user's (um_host_alloc): it can then only be
	 * freed by um__pool_free_flags(..., UM_POOL_USER), and unmarked blocks
	 * (regions' host copies) only without it. So um_host_free needs no
	 * set of its own to refuse a pointer that is not the user's.
	 */
	UM_POOL_USER = 1u << 2,
};

struct um_pool_stats {
	uint64_t chunks;		/* chunks held */
	uint64_t bytes;			/* chunk bytes obtained from backend */
	uint64_t used;			/* bytes handed out, rounded */
	uint64_t requested;		/* bytes asked for, unrounded */
	uint64_t blocks;		/* live blocks */
	uint64_t free_bytes;		/* bytes - used */
	uint64_t largest_free;		/* largest contiguous free span */
	uint32_t internal_frag_bp;	/* (used - requested) * 10000 / used */
	uint32_t external_frag_bp;	/* (1 - largest_free / free) * 10000 */
	/* event counters, since create */
	uint64_t allocs;
	uint64_t frees;
	uint64_t grows;			/* host_alloc calls that succeeded */
	uint64_t grow_failures;
	uint64_t trimmed_chunks;
	uint64_t trimmed_bytes;
	uint64_t grow_ns;		/* time spent in host_alloc */
};

/*
 * Create a pool on backend be (be->ops->host_alloc/host_free are used; be
 * must outlive the pool). cfg may be NULL for defaults. chunk_bytes is
 * rounded up to UM_POOL_MIN_CHUNK. Allocates no pinned memory.
 * -EINVAL bad arguments, -ENOMEM.
 */
int um__pool_create(struct um_backend *be, const struct um_pool_config *cfg,
		    struct um_pool **out);

/*
 * Give every chunk back, live blocks or not. Returns the number of blocks
 * still live (leaks, for the caller to report), or 0. NULL is a no-op.
 */
int64_t um__pool_destroy(struct um_pool *pool);

/*
 * Allocate bytes (> 0) of pinned memory on node (0..UM_POOL_MAX_NODES-1 or
 * UM_POOL_NODE_ANY). flags: enum um_pool_alloc_flags.
 * -EINVAL: NULL pool/out, bytes 0, bad node or flags; -ENOMEM: too large,
 * over max_bytes, or the backend refused; -EAGAIN: UM_POOL_NOGROW and
 * nothing free fits.
 */
int um__pool_alloc(struct um_pool *pool, size_t bytes, int node,
		   unsigned int flags, void **out);

/*
 * Free a block from um__pool_alloc. -EINVAL: NULL, a pointer the pool never
 * handed out (foreign, or inside a block), or a block already freed (double
 * frees of the same block are detected as long as its memory has not been
 * handed out again).
 */
int um__pool_free(struct um_pool *pool, void *ptr);
/* Same, for blocks allocated with UM_POOL_USER when flags has it. */
int um__pool_free_flags(struct um_pool *pool, void *ptr, unsigned int flags);

/*
 * Rounded size of a live block (>= what was asked), its node, and the bytes
 * asked. Any out pointer may be NULL. -EINVAL as for free.
 */
int um__pool_block_info(struct um_pool *pool, const void *ptr, size_t *usable,
			int *node, size_t *requested);

/*
 * Grow node's heap until at least bytes are free there in one contiguous
 * span (so an alloc of up to bytes will not call the backend). Slow: call it
 * ahead of need, off hot paths. Returns 0 or -ENOMEM / -EINVAL.
 */
int um__pool_reserve(struct um_pool *pool, int node, uint64_t bytes);

/*
 * Grow node's heap, a chunk at a time and with no lock held, until at least
 * free_bytes are free there and one free span holds span_bytes; stops early
 * once *stop reads true (checked between chunks) or once a trim has given
 * bytes back since trimmed_at (um__pool_trimmed_at() as the caller last
 * read it; checked under the growers' mutex, so no chunk is added after
 * such a trim). For a background thread that keeps evictions off the slow
 * path. Returns the chunks added (>= 0), -EINVAL, or -ENOMEM (the backend
 * refused; what was added stays).
 */
int um__pool_top_up(struct um_pool *pool, int node, uint64_t free_bytes,
		    uint64_t span_bytes, uint64_t trimmed_at, const bool *stop);

/*
 * CLOCK_MONOTONIC time (ns) of the last um__pool_trim that gave bytes back,
 * 0 if none: a refill holds off after it rather than pin them again.
 */
uint64_t um__pool_trimmed_at(struct um_pool *pool);

/*
 * Move the live block at ptr to node's heap without copying it, when it
 * fills its chunk alone (a block of the chunk size, or larger and a
 * multiple of 2 MiB): move(ptr, len, node, from_node) moves the chunk's
 * pages, with no pool lock held, then the chunk changes heaps. Returns 0
 * (also when already there); -EBUSY: the chunk holds other blocks (copy
 * instead); -EINVAL as for free, or a bad node; else move's error, with
 * the block still in its heap.
 */
typedef int (*um_pool_mover)(void *base, size_t len, int node, int from_node);
int um__pool_move(struct um_pool *pool, void *ptr, int node,
		  um_pool_mover move);

/*
 * Give whole free chunks of node's heap (UM_POOL_NODE_ALL: every heap) back to
 * the backend, keeping at least keep bytes free per heap. Empty slabs are
 * returned to their chunk first. Returns bytes given back (>= 0) or -EINVAL.
 */
#define UM_POOL_NODE_ALL	(-2)
int64_t um__pool_trim(struct um_pool *pool, int node, uint64_t keep);
/*
 * um__pool_trim unless a growth is in progress: then -EBUSY at once. For
 * the pressure loop: a grower can be stalled in the kernel's allocator on
 * the very node the loop is freeing (its page tables come from the
 * faulting thread's nodes), and a trim waiting for it frees nothing.
 */
int64_t um__pool_trim_try(struct um_pool *pool, int node, uint64_t keep);

/*
 * Tests only: called by the growing thread right before each host_alloc
 * (no pool lock held), so a test can see which locks the grower holds.
 */
extern void (*um__pool_grow_hook)(void);

/* Figures for node, or UM_POOL_NODE_ALL for the sum. -EINVAL. */
int um__pool_stats(struct um_pool *pool, int node, struct um_pool_stats *st);

#endif /* UM_POOL_H */
