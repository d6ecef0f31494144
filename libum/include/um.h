/* SPDX-License-Identifier: MIT */
/*
 * um.h - libum, the unified memory manager for deep-learning trainers.
 *
 * A context owns regions: named buffers with a stable pointer for their whole
 * life whose bytes libum moves between device memory, host NUMA nodes and a
 * spill file under a per-device budget. Only released regions are eviction
 * victims. Every function returns 0 (or a non-negative count) on success and
 * a negative errno value on failure; none sets errno or exits. Log lines go to
 * the configuration's callback, or without one to stderr (ERR lines only by
 * default; LIBUM_LOG_LEVEL, libum(7)).
 */
#ifndef UM_H
#define UM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UM_VERSION_MAJOR 0
#define UM_VERSION_MINOR 1

/* ---- Tiers ------------------------------------------------------------ */

/*
 * A tier is one place a region's bytes can live: device n, host NUMA node k
 * (or any node), or the spill directory. Encoded in 32 bits so it can be
 * passed by value and compared with ==.
 */
typedef uint32_t um_tier_t;

enum um_tier_type {
	UM_TIER_NONE = 0,	/* not resident anywhere (never touched) */
	UM_TIER_DEVICE = 1,
	UM_TIER_HOST = 2,
	UM_TIER_SPILL = 3,
	UM_TIER_TYPE_COUNT
};

#define UM_TIER_ANY_NODE 0xffffu
#define UM_TIER_MAKE(type, id) \
	((um_tier_t)(((uint32_t)(type) << 16) | ((uint32_t)(id) & 0xffffu)))
#define UM_TIER_GPU(dev)	UM_TIER_MAKE(UM_TIER_DEVICE, (dev))
#define UM_TIER_HOST_NODE(node)	UM_TIER_MAKE(UM_TIER_HOST, (node))
#define UM_TIER_HOST_ANY	UM_TIER_MAKE(UM_TIER_HOST, UM_TIER_ANY_NODE)
#define UM_TIER_DISK		UM_TIER_MAKE(UM_TIER_SPILL, 0)
#define UM_TIER_TYPE(t)		((enum um_tier_type)((t) >> 16))
#define UM_TIER_ID(t)		((unsigned int)((t) & 0xffffu))

/* ---- Context ---------------------------------------------------------- */

enum um_backend_id {
	UM_BACKEND_AUTO = 0,	/* cuda where a GPU is usable, else sim */
	UM_BACKEND_SIM = 1,	/* host arena standing in for a GPU */
	UM_BACKEND_CUDA = 2,
};

enum um_log_level {
	UM_LOG_ERR = 3,
	UM_LOG_WARN = 4,
	UM_LOG_INFO = 6,
	UM_LOG_DEBUG = 7,
};

typedef void (*um_log_fn)(void *arg, int level, const char *msg);

/*
 * Configuration. Fill with um_config_init(), then change what you need.
 * One rule for every field: a zero field takes its LIBUM_* environment
 * variable (sizes accept K, M, G suffixes), else the built-in default.
 * Every LIBUM_* variable that is
 * set is checked at context creation (libum(7) lists them). Without a log
 * callback, lines up to log_level (default: ERR only) go to stderr.
 */
struct um_config {
	uint32_t size;			/* sizeof(struct um_config) */
	uint32_t backend;		/* enum um_backend_id; LIBUM_BACKEND */
	uint64_t device_budget;		/* bytes per device; LIBUM_DEVICE_BUDGET */
	uint64_t sim_capacity;		/* sim device bytes; LIBUM_SIM_CAPACITY */
	uint64_t pool_size;		/* pinned pool reserve; LIBUM_POOL_SIZE */
	uint64_t pool_chunk;		/* pool growth unit; LIBUM_POOL_CHUNK */
	uint64_t chunk_bytes;		/* migration piece; LIBUM_CHUNK_BYTES */
	const char *spill_dir;		/* spill tier directory; LIBUM_SPILL_DIR */
	um_log_fn log;			/* NULL: stderr */
	void *log_arg;
	int32_t log_level;		/* max level passed to log; LIBUM_LOG_LEVEL */
	uint32_t flags;			/* reserved, must be 0 */
	/* LIBUM_0.2: programs built against LIBUM_0.1 end at flags (80 bytes) */
	uint64_t host_budget;		/* process memory; LIBUM_HOST_BUDGET */
};

struct um_context;

/*
 * Zeroes the struct and sets size. LIBUM_0.2's sets sizeof(struct
 * um_config); programs linked against LIBUM_0.1 keep its um_config_init,
 * which writes the 80 bytes they allocated and sets size to 80 (their
 * contexts then take host_budget from LIBUM_HOST_BUDGET only).
 */
void um_config_init(struct um_config *cfg);
int um_context_create(const struct um_config *cfg, struct um_context **out);
/* Returns the number of regions still alive (reported as leaks, then freed). */
int um_context_destroy(struct um_context *ctx);
/* enum um_backend_id actually in use. */
int um_context_backend(const struct um_context *ctx);

/* ---- Regions ---------------------------------------------------------- */

typedef uint64_t um_region_t;		/* 0 is never a valid handle */

enum um_kind {
	UM_KIND_GENERIC = 0,
	UM_KIND_OPTIMIZER_STATE = 1,
	UM_KIND_PARAM = 2,
	UM_KIND_GRAD = 3,
	UM_KIND_ACTIVATION = 4,
	UM_KIND_COUNT
};

enum um_backing {
	UM_BACKING_DEFAULT = 0,	/* chosen per kind, see design.rst */
	UM_BACKING_MANAGED = 1,	/* cudaMallocManaged + advise/prefetch */
	UM_BACKING_TIERED = 2,	/* VMM: stable VA, device memory on demand */
};

enum um_region_flags {
	/* MANAGED: evict by copy to pinned + discard instead of prefetch */
	UM_REGION_DISCARD_EVICT = 1u << 0,
	/* never move this region to the spill tier */
	UM_REGION_NO_SPILL = 1u << 1,
};

struct um_region_desc {
	uint32_t size;		/* sizeof(struct um_region_desc) */
	uint32_t kind;		/* enum um_kind */
	int32_t priority;	/* higher = kept on the device longer */
	uint32_t backing;	/* enum um_backing */
	uint32_t flags;		/* enum um_region_flags */
	uint32_t device;	/* device whose budget the region counts on */
	uint64_t bytes;		/* > 0 */
	const char *name;	/* copied; may be NULL */
};

int um_alloc(struct um_context *ctx, const struct um_region_desc *desc,
	     um_region_t *out);
int um_free(struct um_context *ctx, um_region_t r);
/* Stable device-view pointer, valid for the region's whole life. */
int um_ptr(struct um_context *ctx, um_region_t r, void **ptr);
/* Region owning ptr (any address inside it). */
int um_lookup(struct um_context *ctx, const void *ptr, um_region_t *out);

/*
 * Make r resident on tier (asynchronously; on the cuda backend the work is
 * ordered before later work on stream, a cudaStream_t or NULL). Nested
 * acquires on the same tier count; um_release undoes one.
 */
int um_acquire(struct um_context *ctx, um_region_t r, um_tier_t tier,
	       void *stream);
int um_release(struct um_context *ctx, um_region_t r);
/* Move a released region's bytes to tier (HOST or SPILL), asynchronously. */
int um_evict(struct um_context *ctx, um_region_t r, um_tier_t tier);
/* Wait for r's migrations; returns their error, if any. */
int um_wait(struct um_context *ctx, um_region_t r);
int um_wait_all(struct um_context *ctx);

enum um_advice {
	UM_ADVISE_PREFERRED_LOCATION = 1,
	UM_ADVISE_UNSET_PREFERRED_LOCATION = 2,
	UM_ADVISE_ACCESSED_BY = 3,
	UM_ADVISE_UNSET_ACCESSED_BY = 4,
	UM_ADVISE_READ_MOSTLY = 5,
	UM_ADVISE_UNSET_READ_MOSTLY = 6,
};

int um_advise(struct um_context *ctx, um_region_t r, int advice,
	      um_tier_t tier);

struct um_region_info {
	uint32_t size;		/* sizeof(struct um_region_info), caller sets */
	uint32_t kind;
	int32_t priority;
	uint32_t backing;	/* resolved, never DEFAULT */
	uint32_t flags;
	um_tier_t residency;	/* where the bytes are once pending work ends */
	uint32_t acquired;	/* acquire count */
	uint32_t pending;	/* migrations in flight */
	uint64_t bytes;
	char name[64];
};

int um_region_info(struct um_context *ctx, um_region_t r,
		   struct um_region_info *info);

/*
 * um_acquire, but when the device budget is taken by regions that other
 * threads hold, wait (the calling thread only) until their releases make
 * room, up to timeout_ns (UM_WAIT_FOREVER: no limit; 0: um_acquire).
 * Returns at once what can never be met: -ENOMEM for a region larger than
 * the budget, -EDEADLK when every holder is the calling thread or waits
 * here too; -ETIMEDOUT when the time ran out.
 */
#define UM_WAIT_FOREVER UINT64_MAX
int um_acquire_timeout(struct um_context *ctx, um_region_t r, um_tier_t tier,
		       void *stream, uint64_t timeout_ns);

/* ---- Budget and policy ------------------------------------------------ */

int um_budget_set(struct um_context *ctx, unsigned int device,
		  uint64_t bytes);
int um_budget_get(struct um_context *ctx, unsigned int device,
		  uint64_t *bytes);
/*
 * The unit of device memory: on device a region takes its bytes rounded up
 * to a multiple of it, and counts that against the budget (2 MiB on sim).
 */
int um_granularity(struct um_context *ctx, unsigned int device,
		   uint64_t *bytes);
/*
 * Evict released regions from tier, in policy order, until at least bytes
 * have been freed there, moving them to dest (UM_TIER_NONE: policy's
 * choice). Returns bytes scheduled (> 0 may be less than asked) or -errno.
 */
int64_t um_shed(struct um_context *ctx, um_tier_t tier, uint64_t bytes,
		um_tier_t dest);

/* ---- Events ----------------------------------------------------------- */

enum um_event_type {
	UM_EVENT_NONE = 0,
	UM_EVENT_MIGRATED = 1,		/* a migration finished */
	UM_EVENT_EVICTED = 2,		/* policy evicted a region */
	UM_EVENT_PRESSURE = 3,		/* a pressure source spoke */
	UM_EVENT_NOMEM = 4,		/* a request could not be satisfied */
	UM_EVENT_ERROR = 5,		/* a migration failed; bytes kept */
	UM_EVENT_COUNT
};

struct um_event {
	uint32_t size;
	uint32_t type;		/* enum um_event_type */
	um_region_t region;	/* 0 if none */
	um_tier_t from;
	um_tier_t to;
	uint64_t bytes;
	int32_t error;		/* -errno for ERROR/NOMEM */
	uint32_t level;		/* PRESSURE: 1 low, 2 medium, 3 critical */
	uint64_t ns;		/* duration for MIGRATED */
};

typedef void (*um_event_fn)(void *arg, const struct um_event *ev);

/* Called with no libum lock held; may call back into libum. */
int um_set_event_callback(struct um_context *ctx, um_event_fn fn, void *arg);

/* ---- Stats ------------------------------------------------------------ */

#define UM_STATS_MAX_DEVICES 8
#define UM_STATS_MAX_NODES 16

struct um_counter {
	uint64_t current;
	uint64_t peak;
	uint64_t total;		/* bytes ever placed there */
};

struct um_stats {
	uint32_t size;		/* sizeof(struct um_stats), caller sets */
	uint32_t regions;
	struct um_counter device[UM_STATS_MAX_DEVICES];
	struct um_counter host[UM_STATS_MAX_NODES];
	struct um_counter host_total;
	struct um_counter spill;
	struct um_counter kind[UM_KIND_COUNT];
	uint64_t budget[UM_STATS_MAX_DEVICES];
	uint64_t migrations;		/* count, all directions */
	uint64_t migrated_bytes;
	uint64_t migration_ns;		/* device-timed */
	uint64_t evict_count;		/* device -> elsewhere */
	uint64_t evict_bytes;
	uint64_t restore_count;		/* elsewhere -> device */
	uint64_t restore_bytes;
	uint64_t evict_ns;
	uint64_t restore_ns;
	uint64_t nomem;			/* acquires refused with -ENOMEM */
	uint64_t events[UM_EVENT_COUNT];
	/* pinned pool */
	uint64_t pool_chunks;
	uint64_t pool_bytes;		/* obtained from the backend */
	uint64_t pool_used;		/* handed out, rounded */
	uint64_t pool_requested;	/* asked for, unrounded */
	uint32_t pool_internal_frag_bp;	/* (used - requested) / used */
	uint32_t pool_external_frag_bp;	/* 1 - largest free / free */
	/* host copies moved between NUMA nodes: pages moved, or copied */
	uint64_t node_moves_paged;
	uint64_t node_moves_copied;
	/* evictions of READ_MOSTLY regions that copied nothing (host copy kept) */
	uint64_t evict_clean_count;
	uint64_t evict_clean_bytes;	/* bytes they did not copy */
	/* sub-allocators (um_suballoc_create), all of the context's */
	uint64_t suballoc_segments;	/* segments (regions) alive */
	uint64_t suballoc_reserved;	/* their bytes */
	uint64_t suballoc_allocated;	/* live blocks, rounded to 512 */
	uint64_t suballoc_requested;	/* live blocks, as asked */
	uint64_t suballoc_blocks;	/* live blocks */
	uint64_t suballoc_inactive_split; /* free bytes of segments in use */
	uint64_t suballoc_largest_free;	/* largest free block */
	uint64_t suballoc_pending;	/* free bytes waiting for a stream */
	uint64_t suballoc_allocs;	/* blocks ever handed out */
	uint64_t suballoc_grows;	/* segments ever made */
};

int um_stats_get(struct um_context *ctx, struct um_stats *st);
/* snprintf-like: returns the length of the whole JSON text. */
int um_stats_json(struct um_context *ctx, char *buf, size_t len);

/* ---- Pinned host memory ----------------------------------------------- */

/* Allocations from the context's pinned pool (fast; never the raw API). */
int um_host_alloc(struct um_context *ctx, size_t bytes, void **ptr);
int um_host_free(struct um_context *ctx, void *ptr);
/* Give whole free pool chunks back to the backend; returns bytes released. */
int64_t um_pool_trim(struct um_context *ctx);

/* ---- Small allocations ------------------------------------------------ */

/*
 * A sub-allocator packs blocks smaller than a granule into segments, each
 * an ordinary region of one or a few granules (so segments are evicted and
 * restored like any other region). Blocks are 512-byte aligned and sized;
 * best fit with splitting and coalescing. A block freed on a stream is
 * reused on that stream at once, on another one only once the work queued
 * on the freeing stream at the free is done (um_suballoc_create(3)).
 */
struct um_suballoc;

enum um_suballoc_flags {
	/* segments stay acquired on the device from creation to trim */
	UM_SUBALLOC_HOLD = 1u << 0,
};

struct um_suballoc_desc {
	uint32_t size;		/* sizeof(struct um_suballoc_desc) */
	uint32_t device;	/* device of the segments */
	uint32_t kind;		/* enum um_kind of the segments */
	int32_t priority;	/* of the segments */
	uint32_t flags;		/* enum um_suballoc_flags */
	uint32_t reserved;	/* must be 0 */
	uint64_t segment_bytes;	/* 0: the device granularity */
	uint64_t max_block;	/* largest block; 0: segment_bytes / 2 */
	const char *name;	/* segments' name; NULL: "um.suballoc" */
};

struct um_suballoc_block {
	uint32_t size;		/* sizeof(struct um_suballoc_block) */
	uint32_t reserved;
	um_region_t segment;	/* the region holding the block */
	uint64_t offset;	/* of the block in the segment */
	void *ptr;		/* the block's start */
	uint64_t bytes;		/* as asked */
	uint64_t rounded;	/* taken */
};

int um_suballoc_create(struct um_context *ctx,
		       const struct um_suballoc_desc *desc,
		       struct um_suballoc **out);
/* Returns the number of blocks still alive (freed with their segments). */
int um_suballoc_destroy(struct um_suballoc *sa);
/* stream: a cudaStream_t or NULL, the stream the block is used on. */
int um_suballoc_alloc(struct um_suballoc *sa, size_t bytes, void *stream,
		      void **ptr);
int um_suballoc_free(struct um_suballoc *sa, void *ptr, void *stream);
/* The live block holding ptr (any address inside it). */
int um_suballoc_lookup(struct um_suballoc *sa, const void *ptr,
		       struct um_suballoc_block *info);
/* Free the segments no block uses; returns their bytes. */
int64_t um_suballoc_trim(struct um_suballoc *sa);

/* Helpers. */
const char *um_kind_name(int kind);
/* Formats t as "gpu0", "host", "node1", "spill"; returns length. */
int um_tier_name(um_tier_t t, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* UM_H */
