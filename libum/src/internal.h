/* SPDX-License-Identifier: MIT */
/*
 * internal.h - libum's core structures, shared by the files from core.c up
 * (the layers: libum/layers, Documentation/design/libum.rst). Nothing here
 * is public ABI; the services below (pool, spill, numa, backends) do not
 * include it.
 *
 * Locking: one mutex per context (ctx->lock) protects everything in the
 * context except the pool (its own lock) and the spill store (its own lock).
 * Public entry points take it with um__enter() and drop it with um__exit(),
 * which delivers queued events after the unlock, so event callbacks run
 * with no libum lock held and may call back into libum.
 */
#ifndef UM_INTERNAL_H
#define UM_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "um.h"
#include "backend.h"
#include "pool.h"
#include "rangemap.h"
#include "region_slab.h"
#include "tier.h"
#include "util.h"

#define UM_CTX_MAGIC		0x756d2d6374782131ull	/* "um-ctx!1" */
#define UM_CTX_DEAD		0x756d2d6465616421ull	/* "um-dead!" */

#define UM_MAX_DEVICES		UM_STATS_MAX_DEVICES
#define UM_NAME_MAX		64

/* Handles: | ctx serial (16) | generation (24) | slot index (24) | */
#define UM_H_IDX_BITS		24
#define UM_H_GEN_BITS		24
#define UM_H_IDX_MASK		((1u << UM_H_IDX_BITS) - 1)
#define UM_H_GEN_MASK		((1u << UM_H_GEN_BITS) - 1)
#define UM_MAX_REGIONS		UM_H_IDX_MASK

/* Largest region accepted at all (256 TiB: the x86-64 user VA size). */
#define UM_MAX_REGION_BYTES	(1ull << 48)

#define UM_DEFAULT_CHUNK_BYTES	(64ull << 20)
#define UM_MIN_CHUNK_BYTES	(64ull << 10)
#define UM_DEFAULT_SIM_CAPACITY	(1ull << 30)

#define UM_DEFAULT_REPORT_MS	100
/* LIBUM_HOME_NODE unset: the device's node (um__numa_default_home) */
#define UM_HOME_AUTO		(-2)

/*
 * Built-in defaults and the resolved configuration: every LIBUM_* variable,
 * read and checked once, by config.c alone, when a context is created.
 * Strings are malloc'd or NULL (not set).
 */
struct um_settings {
	int backend;			/* enum um_backend_id, as asked */
	uint64_t device_budget;		/* 0: the device's total */
	uint64_t sim_capacity;
	uint64_t pool_size;
	uint64_t pool_chunk;
	uint64_t chunk_bytes;
	char *spill_dir;		/* NULL: no spill tier */
	bool spill_default;		/* spill_dir is the default one */
	char spill_none[160];		/* no spill tier: why */
	int log_level;
	uint64_t host_budget;		/* 0: none */
	/* the environment only (no field of struct um_config) */
	bool pool_refill;		/* the refill thread (refill.c) */
	bool pressure;			/* the pressure loop (pressure.c) */
	int report_ms;			/* its REPORT rate limit */
	int priority;			/* what it tells umm.ko */
	char *client_name;		/* NULL: the process name */
	char *umm_dev;			/* NULL: UMM_DEVICE_PATH */
	char *psi_path;			/* NULL: /proc/pressure/memory */
	char *cgroup_dir;		/* NULL: ours, from /proc/self/cgroup */
	int home_node;			/* a node, UM_NUMA_ANY or UM_HOME_AUTO */
	bool spill_remove_stale;	/* UM_SPILL_REMOVE_STALE at open */
};

enum um_mig_dir {
	UM_MIG_RESTORE = 1,		/* elsewhere -> device */
	UM_MIG_EVICT = 2,		/* device -> host */
};

/*
 * One migration of one region, issued on a device queue between two
 * fences. Migrations sit on ctx->migs in issue order and are reaped in that
 * order once their end fence is reached.
 */
struct um_mig {
	struct um_mig *next;		/* ctx->migs, issue order */
	struct um_region *r;
	enum um_mig_dir dir;
	um_tier_t from, to;
	uint64_t bytes;
	struct um_fence *start, *end;
	int waiters;			/* threads in fence_wait on end */
	bool policy;			/* chosen by the policy (EVICTED event) */
	bool fill;			/* first touch: zero fill, not a copy */
	bool clean;			/* eviction of a kept host copy: no copy */
	bool done;			/* reaped (kept alive for waiters) */
	int err;			/* a paced piece failed to issue */
	uint64_t issued;		/* bytes issued; end recorded at bytes */
};

/*
 * Eviction pacing (engine.c): at most UM_PACE_PIECES pieces of at most
 * UM_PACE_PIECE bytes in flight per device.
 */
#define UM_PACE_PIECES 2
#define UM_PACE_PIECE (16ull << 20)

/* Distinct streams that may hold one region at once (um_acquire). */
#define UM_HOLD_STREAMS 8

/* victims.c: a region's place in an ordered set of victims */
struct um_vkey {
	uint32_t rank;			/* the kind's place: victims.c */
	int32_t prio;
	uint64_t lru;
	uint64_t bytes;
	uint32_t idx;
};

struct um_vset;

struct um_vnode {
	/*
	 * What a walk of the set and a hit read, in one cache line
	 * (64-aligned): a hit decides from set, the flags and key alone.
	 */
	struct um_vnode *left, *right;
	struct um_vset *set;		/* NULL: not linked in a set */
	uint32_t heap;			/* treap priority: hash of idx */
	/* linked, but its region is acquired: not counted in the set */
	bool parked;
	/* linked under an older recency than the region's (victims.c) */
	bool stale;
	struct um_vkey key;
	/* read only where the node itself is linked, unlinked or chosen */
	struct um_vnode *parent;
	struct um_region *owner;
	uint64_t charged;		/* bytes added to set->bytes */
};

struct um_vset {
	struct um_vnode *root;
	uint64_t bytes;			/* dev_len (device) or bytes (host) */
	uint32_t n;			/* victims: linked and not parked */
};

/* One of a region's distinct holding streams, fenced at release. */
struct um_hold {
	void *stream;
	/* recorded on stream at the last release, if any */
	struct um_fence *fence;
};

/*
 * Laid out by use: what an acquire and a release of a resident region
 * read and write comes first (two cache lines, then one with the first
 * holders' streams and fences, then the first line of its victim node),
 * so that a hit on one of many thousand regions, cold in the caches,
 * misses on four lines (design/libum.rst, "Cost in the number of
 * regions").
 */
struct um_region {
	um_region_t handle;
	uint32_t idx;
	uint32_t device;
	uint32_t kind;
	int32_t priority;
	uint32_t backing;		/* resolved: MANAGED or TIERED */
	uint32_t flags;
	um_tier_t residency;		/* where the bytes are once work ends */
	uint32_t acquired;
	um_tier_t acq_tier;
	uint32_t nacq_streams;
	uint32_t pending;		/* migrations not yet reaped */
	uint32_t nreleased;
	bool freeing;			/* um_free is waiting: handle dead */
	bool counted;			/* counts on ctx->dev[device].used */
	bool mapped;			/* TIERED: device memory exists */
	/*
	 * With the bytes on the device: host is kept and equals the device
	 * copy (set by a restore under READ_MOSTLY), so an eviction copies
	 * nothing. Meaningless elsewhere; um__settle clears it.
	 */
	bool host_kept;
	bool released_valid;		/* hold[0..nreleased).fence recorded */
	bool unfenced;			/* release could not fence: keep */
	bool held_by_many;		/* nested acquires by other threads */
	/* UM_ADVISE_READ_MOSTLY: the device promises not to write r */
	bool read_mostly;
	uint64_t bytes;
	size_t dev_len;			/* bytes rounded to the granularity */
	uint64_t lru;			/* ctx->tick at the last acquire */
	struct um_mig *mig;		/* latest migration not yet reaped */
	void *host;			/* pool block holding the bytes */
	pthread_t holder;		/* thread of the first acquire */
	uint64_t drain_charged;		/* dev_len on dev[drain_dev].draining */
	uint32_t drain_dev;
	uint8_t victim_in;		/* bit w: victim[w] is in a set */
	/* the first holders' stream and fence share the line a hit reads */
	struct um_hold hold[UM_HOLD_STREAMS] __attribute__((aligned(64)));
	/* victims.c: [0] its tier's set, [1] the host-any set */
	struct um_vnode victim[2] __attribute__((aligned(64)));

	struct um_region *prev, *next;	/* ctx->regions */
	struct um_context *ctx;
	char name[UM_NAME_MAX];
	void *ptr;			/* stable pointer (VA or managed) */
	void *phys;			/* TIERED: backend handle while mapped */
	bool zero_on_restore;		/* bytes never written: fill, not copy */
	bool in_chunk;			/* from a chunk of ctx->rslab */
	int host_node;			/* pool node of host */
	struct um_mig *restore_mig;	/* latest restore not yet reaped */
	struct um_mig *evict_mig;	/* latest eviction not yet reaped */
	uint64_t reap_pass;		/* an older migration is still running */
	int error;			/* last migration error, for um_wait */
	/* hostneed.c: the copy an eviction would need, counted; 1 + its
	 * place in ctx->need_heap, 0 when not there */
	uint64_t need;
	uint32_t need_at;
};

struct um_dev {
	uint64_t budget;
	uint64_t total;			/* physical, from mem_info */
	uint64_t used;			/* counted bytes (mapped/resident) */
	uint64_t draining;		/* of used: evictions in flight */
	size_t gran;
	struct um_queue *q_evict;	/* D2H */
	struct um_queue *q_restore;	/* H2D */
	/* evictions' pieces in flight on q_evict, oldest first (engine.c) */
	struct um_fence *paced[UM_PACE_PIECES];
	uint32_t paced_first, npaced;
};

struct um_slot {
	struct um_region *r;
	uint32_t gen;
	uint32_t next_free;		/* index + 1, 0 = end */
};

/* Counters kept by the core (the public struct is filled from these). */
struct um_books {
	struct um__tier_books tier;	/* fed as the tier table says */
	struct um_counter kind[UM_KIND_COUNT];
	uint64_t migrations, migrated_bytes, migration_ns;
	uint64_t evict_count, evict_bytes, evict_ns;
	uint64_t evict_clean_count, evict_clean_bytes;
	uint64_t restore_count, restore_bytes, restore_ns;
	uint64_t nomem;
	uint64_t node_moves_paged, node_moves_copied;
	uint64_t events[UM_EVENT_COUNT];
	uint64_t events_dropped;
};

struct um_spill;
struct um_pressure;

/* A thread in um_acquire_timeout() waiting for room (on its stack). */
struct um_room_waiter {
	pthread_t thread;
	struct um_room_waiter *next;
};

/* refill.c: the thread that keeps the pinned pool ahead of evictions */
struct um_refill {
	pthread_t thread;
	pthread_mutex_t mu;		/* kicked, and stop's writes */
	pthread_cond_t cv;		/* CLOCK_MONOTONIC */
	bool on;			/* the thread runs */
	bool stop;			/* read by um__pool_top_up unlocked */
	bool kicked;
	uint64_t rounds, failures;	/* top-ups tried / that failed */
	uint64_t failed_at_ns;		/* the thread's: last failure, or 0 */
};

/*
 * Internal only, never returned by a public call: an operation under the
 * context lock stopped because the pool lacked a host copy it may not grow
 * under the lock (refill.c). The entry point grows it and starts over.
 */
#define UM__POOL_SHORT	(-ERESTART)

struct um_context {
	uint64_t magic;
	pthread_mutex_t lock;
	/* the reaper: evictions say on reap_fd when done (engine.c) */
	int reap_fd;			/* eventfd, -1 when none */
	pthread_t reaper;
	bool reaper_on;
	bool reaper_stop;		/* under lock */
	struct um_settings set;

	um_log_fn log;
	void *log_arg;
	int log_level;

	struct um_backend be;
	int backend_id;
	int ndev;
	struct um_dev dev[UM_MAX_DEVICES];
	struct um_pool *pool;
	int home_node;			/* pool node for host copies */
	struct um_refill refill;
	/* refill.c: the largest host copy the pool was short of, its node */
	uint64_t pool_need_bytes;
	int pool_need_node;
	bool pool_grow_failed;		/* so short is -ENOMEM, for this call */
	/*
	 * Per tier type, a bit per id this context has (um__tier_exists):
	 * its devices, its host nodes with memory. Set once at creation by
	 * um__tier_add: asking the kernel for a node costs ~37 us, too much
	 * for every acquire or evict naming one (a node added later is
	 * refused until a new context).
	 */
	uint32_t tier_ids[UM_TIER_TYPE_COUNT];

	/* regions */
	struct um_slot *slots;
	uint32_t nslots, slot_cap, free_head;
	struct um_rslab rslab;		/* the regions' objects */
	struct um_rangemap by_addr;	/* [ptr, ptr + bytes), um_lookup */
	struct um_region regions;	/* list head (sentinel) */
	uint32_t nregions;
	uint16_t serial;
	uint64_t tick;
	/* victims.c: released regions in eviction order, per tier */
	struct um_vset victims_dev[UM_MAX_DEVICES];
	struct um_vset victims_host[UM_STATS_MAX_NODES];
	struct um_vset victims_host_any;
	/* hostneed.c: host copies evictions from the devices would need */
	struct um_region **need_heap;	/* max-heap on need */
	uint32_t need_n, need_cap;
	uint64_t need_total;

	/* migrations, issue order */
	struct um_mig *migs, *migs_tail;
	uint64_t reap_pass;
	int error;			/* first migration error, um_wait_all */
	bool dead_reported;		/* the GPU context died: losses named */
	struct um_fence **fences;	/* free fences for reuse */
	uint32_t nfences, fence_cap;

	/* events: queued under the lock, delivered by um__exit() */
	um_event_fn ev_fn;
	void *ev_arg;
	struct um_event *evq;
	uint32_t evq_n, evq_cap;


	struct um_books books;
	bool managed_logged;
	uint64_t managed_bytes;		/* MANAGED allocations, all devices */

	struct um_spill *spill;		/* NULL: no spill tier */
	struct um_pressure *pressure;	/* owned by pressure.c */
	/*
	 * Called on every change of the books, under ctx->lock; installed by
	 * pressure.c (a wakeup of its loop), so the books know no listener.
	 */
	void (*books_changed)(struct um_context *ctx);

	/*
	 * Our memory cgroup was said to be LOW or worse and we have a spill
	 * (set and cleared by the pressure loop, pressure_shed.c): until its
	 * RELIEF the loop keeps our released host copies spilled between
	 * events (a trainer's steps bring them back to the host, where the
	 * cgroup is charged for them again) and a pool short is met by
	 * spilling before growing (policy.c).
	 */
	atomic_bool cgroup_hot;

	/* room.c: threads waiting for room, woken by um__exit() */
	pthread_cond_t room;		/* on ctx->lock, CLOCK_MONOTONIC */
	bool room_ready;		/* room initialised */
	struct um_room_waiter *room_waiters;

	uint32_t fork_gen;		/* entry.c: fork() count at creation */
	pid_t creator_pid;		/* entry.c: the process that created it */
	_Atomic bool fork_told;		/* entry.c: a child's ERR line is out */
	struct um_context *forgotten_next; /* context.c, in a fork() child */
};

/* context.c */
/* Set ctx->home_node from LIBUM_HOME_NODE or the device's NUMA node. */
void um__context_place_home(struct um_context *ctx);

/* entry.c */
int um__registry_add(struct um_context *ctx);
void um__registry_del(struct um_context *ctx);
int um__enter(struct um_context *ctx);
/*
 * -ECHILD for a context this process inherited through fork(), with an ERR
 * line the first time; um__enter_destroy() the same, silently.
 */
int um__enter_const(const struct um_context *ctx);
int um__enter_destroy(const struct um_context *ctx);
void um__exit(struct um_context *ctx);
/* um__enter_const without the registry lock on a thread's repeat calls. */
int um__check_fast(const struct um_context *ctx);

/* core.c */
void um__vlog(struct um_context *ctx, int level, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));
void um__log(struct um_context *ctx, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A line on stderr, as for a context without a log callback. */
void um__log_stderr(int level, const char *msg);
/* level: PRESSURE's 1 low, 2 medium, 3 critical; 0 for other types */
void um__event(struct um_context *ctx, int type, unsigned int level,
	       struct um_region *r, um_tier_t from, um_tier_t to,
	       uint64_t bytes, int error, uint64_t ns);

/* config.c */
int um__settings_resolve(struct um_context *ctx, const struct um_config *cfg,
			 struct um_settings *s);
void um__settings_free(struct um_settings *s);
int um__parse_size(const char *s, uint64_t *out);
/* LIBUM_LOG_LEVEL's grammar: a name (err .. debug, off) or 0-7. */
int um__parse_log_level(const char *s, uint64_t *out);
/* An ERR line with no context to send it to (stderr). */
void um__log_early(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* um_config_init@@LIBUM_0.2 and @LIBUM_0.1 (80 bytes, LIBUM_0.1's struct). */
void um__config_init_0_2(struct um_config *cfg);
void um__config_init_0_1(struct um_config *cfg);

/* region.c */
struct um_region *um__region_get(struct um_context *ctx, um_region_t h);
/*
 * *out = the live region h: 0, -EINVAL for handle 0, -ENOENT otherwise,
 * with an ERR line that names the call ("free": a double free says so).
 */
int um__region_find(struct um_context *ctx, const char *call, um_region_t h,
		    struct um_region **out);
void um__regions_fini(struct um_context *ctx);

/* engine.c */
int um__engine_init(struct um_context *ctx);
void um__engine_fini(struct um_context *ctx);
void um__reaper_start(struct um_context *ctx);
void um__reaper_stop(struct um_context *ctx);
void um__reap(struct um_context *ctx);
int um__wait_mig(struct um_context *ctx, struct um_mig *m);
int um__stream_wait_mig(struct um_context *ctx, struct um_mig *m,
			void *stream);
int um__wait_region(struct um_context *ctx, struct um_region *r);
/* The fences of r's last release, one per holder's stream (engine.c). */
int um__released_record(struct um_context *ctx, struct um_region *r);
void um__released_wait(struct um_context *ctx, struct um_region *r);
void um__released_drop(struct um_context *ctx, struct um_region *r);
int um__wait_all(struct um_context *ctx);
int um__restore(struct um_context *ctx, struct um_region *r);
int um__evict(struct um_context *ctx, struct um_region *r, um_tier_t to,
	      bool policy);
/* um__evict() would take r off its device now, into a pool block. */
bool um__evict_needs_block(const struct um_region *r);
/* -EINPROGRESS: wait for r's migration in flight, then call again. */
int um__to_host(struct um_context *ctx, struct um_region *r, um_tier_t to);
int um__to_spill(struct um_context *ctx, struct um_region *r);
int um__host_block(struct um_context *ctx, struct um_region *r, int node,
		   bool zero);
int um__tier_node(const struct um_context *ctx, um_tier_t t);
void um__settle(struct um_context *ctx, struct um_region *r);
bool um__draining(const struct um_region *r);
um_tier_t um__host_tier(const struct um_context *ctx, int node);

/* refill.c */
void um__refill_start(struct um_context *ctx);
void um__refill_stop(struct um_context *ctx);
/*
 * After an operation under ctx->lock: when it stopped for want of pool
 * memory (UM__POOL_SHORT, or a shed that went on with less), grow the pool
 * with the lock dropped, retake it and return true: run the operation
 * again (look regions up afresh). rounds: 0 before the first call; after a
 * few rounds, or when the host refuses, the retry gets -ENOMEM instead.
 */
bool um__pool_short_retry(struct um_context *ctx, int *rounds);
/*
 * The public call that may have moved regions is done: forget its shortage
 * and its -ENOMEM answer, and have the refill look again. Returns ret, with
 * UM__POOL_SHORT (which never leaves libum) as -ENOMEM.
 */
int64_t um__pool_short_end(struct um_context *ctx, int64_t ret);

/* victims.c: the victim sets in eviction order (see there) */
void um__victims_sync(struct um_context *ctx, struct um_region *r);
void um__victims_drop(struct um_context *ctx, struct um_region *r);

/* hostneed.c */
/* Room for this many regions in the heap: 0 or -ENOMEM. */
int um__hostneed_reserve(struct um_context *ctx, uint32_t regions);
void um__hostneed_sync(struct um_context *ctx, struct um_region *r);
void um__hostneed_drop(struct um_context *ctx, struct um_region *r);
void um__hostneed_figures(const struct um_context *ctx, uint64_t *total,
			  uint64_t *largest);
void um__hostneed_fini(struct um_context *ctx);
/* tier's first victim after key (the first of all with key NULL) */
struct um_region *um__victim_next(struct um_context *ctx, um_tier_t tier,
				  const struct um_vkey *key);
struct um_vkey um__victim_key(const struct um_region *r, um_tier_t tier);
uint64_t um__victims_bytes(struct um_context *ctx, um_tier_t tier);
uint64_t um__victim_charge(struct um_context *ctx, const struct um_region *r,
			   um_tier_t tier);

/* room.c */
int um__room_init(struct um_context *ctx);
void um__room_fini(struct um_context *ctx);
/* Record the calling thread as a holder of r (before r->acquired grows). */
void um__room_hold(struct um_region *r);
void um__room_deadline(uint64_t timeout_ns, struct timespec *deadline);
/*
 * With ctx->lock held: sleep until woken or deadline (NULL: none), then
 * reap; 0 (start over, r may be gone), -ETIMEDOUT when the deadline had
 * passed, -EDEADLK when no holder of r's device could release meanwhile.
 */
int um__room_wait(struct um_context *ctx, const struct um_region *r,
		  const struct timespec *deadline);

/* books.c */
void um__counter_add(struct um_counter *c, uint64_t bytes);
void um__counter_sub(struct um_counter *c, uint64_t bytes);
/* r's bytes moved from one tier to another: the counters the rows name. */
void um__books_residency(struct um_context *ctx, struct um_region *r,
			 um_tier_t from, um_tier_t to);
/*
 * r's device memory joins (add) or leaves its device's budget books:
 * ctx->dev[].used and the counters of the device's row. The caller calls
 * um__books_changed.
 */
void um__books_budget(struct um_context *ctx, struct um_region *r, bool add);
/* Calls ctx->books_changed, if installed. */
void um__books_changed(struct um_context *ctx);

/* stats.c */
int um__leak_report(struct um_context *ctx);

/* At creation: ctx has tier t (one of its devices, a node with memory). */
static inline void um__tier_add(struct um_context *ctx, um_tier_t t)
{
	if (um__tier(t) && UM_TIER_ID(t) < 32)
		ctx->tier_ids[UM_TIER_TYPE(t)] |= 1u << UM_TIER_ID(t);
}

/*
 * t names a tier of ctx: any node, an id ctx has (um__tier_add), or id 0
 * of a type with one tier only.
 */
static inline bool um__tier_exists(const struct um_context *ctx, um_tier_t t)
{
	const struct um__tier_desc *d = um__tier(t);
	unsigned int id = UM_TIER_ID(t);

	if (!d)
		return false;
	if (um__tier_is_any(t))
		return true;
	if (!d->numbered)
		return id == 0;
	return id < 32 && (ctx->tier_ids[UM_TIER_TYPE(t)] & (1u << id));
}

#endif /* UM_INTERNAL_H */
