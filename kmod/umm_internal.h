/* SPDX-License-Identifier: GPL-2.0 */
/*
 * State shared by the files of umm.ko.
 *
 * Locking (outermost first; see Documentation/design/umm.rst):
 *
 *  umm.mutex	  serialises everything that may sleep and changes the books
 *		  or the policy: handshakes, REPORTs, client release, knob
 *		  writes, inject, the sampling work, QUERY, the cgroup watches
 *		  and their sums. Never taken from reclaim or OOM context.
 *		  Under it: no allocation that may enter reclaim (and so the
 *		  shrinker or the OOM notifier): GFP_NOWAIT, or allocate
 *		  before taking it; no user copy (a fault may wait on
 *		  userfaultfd, and everyone would wait with it).
 *  umm.lock	  spinlock: the client lists and the priority tree, every
 *		  client's books and umm_client.ask, the per-source sums and
 *		  rate-limit stamps. All that the OOM notifier takes, and only
 *		  for the one walk it must make (the clients with something
 *		  to give); the shrinker takes nothing of ours. Under it:
 *		  bounded work only -- O(nodes + GPUs), or one walk of the
 *		  clients for an event -- never a walk over cgroups x clients
 *		  (QUERY sums per cgroup under umm.mutex alone), no sleeping,
 *		  no allocation.
 *  client->ring_lock spinlock: one client's ring, seq and pending ACKs.
 *		  Taken inside umm.lock when events are queued.
 *  client->read_mutex serialises readers of one file (so a record being
 *		  copied out is not coalesced into behind the reader's back).
 */
#ifndef UMM_INTERNAL_H
#define UMM_INTERNAL_H

#include <linux/atomic.h>
#include <linux/bits.h>
#include <linux/hashtable.h>
#include <linux/kernel.h>
#include <linux/kobject.h>
#include <linux/list.h>
#include <linux/math64.h>
#include <linux/mutex.h>
#include <linux/nodemask.h>
#include <linux/overflow.h>
#include <linux/rbtree.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/uidgid.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/umm.h>

#define UMM_BP_MAX		10000U
#define UMM_ACK_PENDING		32	/* remembered events per client */
/*
 * Event-to-ACK latency buckets per client: upper bounds 1, 2, 5 ms ... 10 s
 * (ring.c) and one past the last for longer; see design/umm.rst.
 */
#define UMM_ACK_BUCKETS		14
#define UMM_QUEUE_LEN_MIN	4U
#define UMM_QUEUE_LEN_MAX	65536U
#define UMM_RING_BYTES_MIN	4096ULL
#define UMM_RING_BYTES_MAX	(1ULL << 40)

/**
 * struct umm_sum - a sum of byte counts that clients reported. Every count
 * is at most UMM_TIER_BYTES_MAX, but clients are many: the sum is kept
 * exact with a carry word (so taking a client's counts away again is
 * exact too) and read saturated, so that no sum can wrap to a small value
 * and hide what the other clients hold.
 * @lo:		the sum modulo 2^64.
 * @hi:		times it went past 2^64 - 1.
 */
struct umm_sum {
	u64 lo;
	u64 hi;
};

static inline void umm_sum_add(struct umm_sum *s, u64 v)
{
	if (check_add_overflow(s->lo, v, &s->lo))
		s->hi++;
}

static inline void umm_sum_sub(struct umm_sum *s, u64 v)
{
	if (check_sub_overflow(s->lo, v, &s->lo))
		s->hi--;
}

/* The sum, or U64_MAX when it does not fit; lockless readers are fine. */
static inline u64 umm_sum_read(const struct umm_sum *s)
{
	return READ_ONCE(s->hi) ? U64_MAX : READ_ONCE(s->lo);
}

/* @a + @b, or U64_MAX when that does not fit. */
static inline u64 umm_add_sat(u64 a, u64 b)
{
	u64 sum;

	return check_add_overflow(a, b, &sum) ? U64_MAX : sum;
}

/*
 * A number written to a knob or the inject file: decimal, or hex after
 * "0x", as the documentation says (base 0 would read "010" as octal 8).
 */
static inline int umm_parse_u64(const char *s, u64 *v)
{
	return kstrtou64(s, s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ?
			 16 : 10, v);
}

static inline int umm_parse_u32(const char *s, u32 *v)
{
	u64 v64;
	int ret = umm_parse_u64(s, &v64);

	if (ret)
		return ret;
	if (v64 > U32_MAX)
		return -ERANGE;
	*v = v64;
	return 0;
}

/**
 * struct umm_source - state common to a node and a GPU.
 * @level:	current enum umm_level (measured, or injected).
 * @announced:	last level told to clients (events go out on changes).
 * @injected:	level held by the inject file, 0 when none.
 * @last_event_ns: when the source last raised an event (rate limit).
 * @resident:	sum of the clients' reported resident bytes (umm.lock).
 * @reclaimable: sum of the clients' reported reclaimable bytes (umm.lock).
 * @events:	events raised by this source (records queued for it).
 */
struct umm_source {
	u32 level;
	u32 announced;
	u32 injected;
	u64 last_event_ns;
	struct umm_sum resident;
	struct umm_sum reclaimable;
	atomic64_t events;
};

/**
 * struct umm_node - one NUMA node with memory, nodes/node<N> in sysfs.
 * @kobj:	sysfs directory; its release frees the struct.
 * @nid:	node id.
 * @low_bp:	watermarks in basis points of @total_bytes, low > medium >
 * @medium_bp:	> critical (written under umm.mutex).
 * @critical_bp:
 * @free_bytes:	free pages, last sample (MemFree of the node).
 * @avail_bytes: available memory, last sample: what the node could give
 *		without OOM (umm_node_avail(); the levels follow it).
 * @total_bytes: memory the page allocator manages on the node.
 * @sample_ns:	time of the last sample, 0 before the first.
 * @decline_bps: EWMA of the rate available memory falls, bytes per
 *		second (negative while it grows).
 * @decline_now_bps: the same between the last two samples alone.
 * @eta_ms:	estimated ms to the critical watermark, or UMM_ETA_UNKNOWN.
 * @last_shrink_ns: rate limit of SHRINK events (umm.lock).
 * @src:	level, books and counters.
 */
struct umm_node {
	struct kobject kobj;
	int nid;
	u32 low_bp;
	u32 medium_bp;
	u32 critical_bp;
	u64 free_bytes;
	u64 avail_bytes;
	u64 total_bytes;
	u64 sample_ns;
	s64 decline_bps;
	s64 decline_now_bps;
	u32 eta_ms;
	u64 last_shrink_ns;
	struct umm_source src;
};

/**
 * struct umm_gpu - one GPU id, gpus/gpu<N> in sysfs.
 * @kobj:	sysfs directory; its release frees the struct.
 * @id:		GPU id as the clients number them.
 * @budget_bytes: budget knob, 0 for none.
 * @src:	level, books (resident = used bytes) and counters.
 */
struct umm_gpu {
	struct kobject kobj;
	u32 id;
	u64 budget_bytes;
	struct umm_source src;
};

struct mem_cgroup;
struct umm_level_info;

/**
 * struct umm_cgroup - a watched memory cgroup: one that holds clients
 * with UMM_FEATURE_CGROUP (memcg.c).
 * @list:	on umm.cgroups (changed under umm.mutex and umm.lock).
 * @hash:	on umm.cgroup_hash, by @memcg (umm.mutex).
 * @memcg:	the cgroup; a css reference is held while it is watched.
 * @id:		cgroup_id().
 * @clients:	clients tied to it (umm.mutex); at 0 it is freed.
 * @usage_bytes: its memory usage, last sample.
 * @wset_bytes:	its working set, last sample: usage less inactive file
 *		pages (what reclaim takes back cheaply).
 * @limit_bytes: the lowest memory.max / memory.high on its path to the
 *		root, last sample; U64_MAX when there is none.
 * @room_bytes:	the least room left under any limit on that path (the
 *		limit less that cgroup's working set), U64_MAX when no limit.
 * @binding:	the cgroup on that path whose limit leaves @room_bytes, NULL
 *		when none (pinned by @memcg's reference: a cgroup holds its
 *		parent).
 * @sample_ns:	time of the last sample, 0 before the first.
 * @fill_bps:	EWMA of the rate @room_bytes falls, bytes per second.
 * @fill_now_bps: the same between the last two samples alone.
 * @eta_ms:	estimated ms to the critical threshold, or UMM_ETA_UNKNOWN.
 * @oom_kills:	its memory.events oom_kill when last sampled (umm.mutex).
 * @src:	level and counters (the books are the clients' own).
 */
struct umm_cgroup {
	struct list_head list;
	struct hlist_node hash;
	struct mem_cgroup *memcg;
	u64 id;
	u32 clients;
	u64 usage_bytes;
	u64 wset_bytes;
	u64 limit_bytes;
	u64 room_bytes;
	struct mem_cgroup *binding;
	u64 sample_ns;
	s64 fill_bps;
	s64 fill_now_bps;
	u32 eta_ms;
	u64 oom_kills;
	struct umm_source src;
};

/**
 * struct umm_book - what a client reported for one tier.
 * @resident:	bytes held.
 * @reclaimable: bytes it could give back.
 */
struct umm_book {
	u64 resident;
	u64 reclaimable;
};

/**
 * struct umm_client - one open file of /dev/umm.
 * @list:	on umm.unready until the handshake, then on umm.clients (both
 *		under umm.mutex and umm.lock).
 * @level:	on umm.levels while this is the oldest ready client of its
 *		priority, which it stands for there; else empty.
 * @pid:	thread group that opened the file.
 * @name:	from the handshake (the opener's comm before).
 * @priority:	from the handshake; lower is asked first.
 * @features:	UMM_FEATURE_* granted.
 * @ready:	handshake done (written under umm.mutex and umm.lock).
 * @nodes:	books per node id (nr_node_ids entries).
 * @gpus:	books per GPU id.
 * @ask:	scratch for umm_ask(), under umm.lock.
 * @cg:		the watched memory cgroup of its process (UMM_FEATURE_CGROUP),
 *		or NULL; changed under umm.mutex and umm.lock.
 * @uid:	the opener's real uid, whose ring_bytes_max the ring counts to.
 * @ring_lock:	protects the ring, @seq, @pending and the counters below.
 * @ring:	queue_len + 1 records: one slot is kept for OVERFLOW.
 * @queue_len:	records that events may fill.
 * @head:	index of the oldest record.
 * @used:	records in the ring.
 * @reading:	a reader is copying the record at @head out.
 * @seq:	last sequence number given (queued or dropped).
 * @pending:	events waiting for an ACK, oldest first (a small ring).
 * @pending_head: index of the oldest in @pending.
 * @pending_nr:	entries in @pending.
 * @events:	records queued.
 * @drops:	records dropped for want of room.
 * @acks:	ACKs accepted.
 * @bytes_freed: sum of bytes_freed in ACKs.
 * @ack_ns_sum:	sum of this client's event-to-ACK latencies.
 * @ack_ns_n:	number of those latencies.
 * @ack_ms_le:	those latencies counted per bucket (not cumulative), by
 *		umm_ack_bucket().
 * @wq:		readers and pollers.
 * @read_mutex:	serialises readers.
 */
struct umm_client {
	struct list_head list;
	struct rb_node level;
	struct pid *pid;
	char name[UMM_NAME_LEN];
	s32 priority;
	u64 features;
	bool ready;
	struct umm_book *nodes;
	struct umm_book gpus[UMM_MAX_GPUS];
	u64 ask;
	struct umm_cgroup *cg;
	kuid_t uid;

	spinlock_t ring_lock;		/* see the top of this file */
	struct umm_event *ring;
	u32 queue_len;
	u32 head;
	u32 used;
	bool reading;
	u64 seq;
	struct {
		u64 seq;
		u64 ts_ns;
	} pending[UMM_ACK_PENDING];
	u32 pending_head;
	u32 pending_nr;
	u64 events;
	u64 drops;
	u64 acks;
	u64 bytes_freed;
	u64 ack_ns_sum;
	u64 ack_ns_n;
	u64 ack_ms_le[UMM_ACK_BUCKETS];

	wait_queue_head_t wq;
	struct mutex read_mutex;	/* see the top of this file */
};

/* Module-wide figures, shown in sysfs (0400); unsigned, sums saturate. */
struct umm_stats {
	atomic_t clients;
	atomic64_t events_sent;
	atomic64_t events_dropped;
	atomic64_t overflows;
	atomic64_t acks;
	atomic64_t bytes_freed;
	atomic64_t ack_latency_sum_ns;
	atomic64_t ack_latency_max_ns;
	atomic64_t ack_latency_count;
	atomic64_t shrinker_calls;
	atomic64_t oom_calls;
	atomic64_t oom_deferred;
	atomic64_t ring_bytes;
};

/**
 * struct umm_state - the module.
 * @mutex:	see the top of this file.
 * @lock:	see the top of this file.
 * @clients:	clients past the handshake (struct umm_client.list) in
 *		the order they are asked: by priority, lowest first, and
 *		in handshake order among equals.
 * @levels:	the priorities on @clients, each by its oldest client
 *		(struct umm_client.level), so that a handshake finds its
 *		place in O(log priorities).
 * @unready:	clients before their handshake, in open order.
 * @nodes:	per node id, NULL for nodes without memory at load time.
 * @gpus:	per GPU id.
 * @enabled:	knob; 0 stops every event (figures keep being sampled).
 * @interval_ms: sampling period.
 * @queue_len:	ring length given to clients opened from now on.
 * @ring_bytes_max: the rings of one user's clients together may take this
 *		much (an open that would pass it fails with -ENOBUFS).
 * @hysteresis_bp: how far above a watermark free memory must climb before
 *		the level drops.
 * @min_interval_ms: least time between two events of one source.
 * @repeat_ms:	while a source stays at LOW or worse, ask again this often
 *		(0: never).
 * @oom_wait_ms: deprecated knob, kept for the tools that write it: the OOM
 *		notifier no longer waits (reclaim.c).
 * @cg_low_bp:	thresholds of every watched cgroup, basis points of its
 * @cg_medium_bp: limit: room below them is LOW, MEDIUM, CRITICAL
 * @cg_critical_bp: (low > medium > critical, umm.mutex).
 * @cgroups:	watched memory cgroups (struct umm_cgroup.list).
 * @cgroup_hash: the same by struct mem_cgroup (umm.mutex).
 * @nr_cgroups:	entries on @cgroups.
 * @fill_peak_bps: the fastest any source was seen to fill lately (bytes
 *		per second; it halves every UMM_FILL_HALF_LIFE_MS without a
 *		faster fill): how soon a source may reach its OOM point sets
 *		the next sample (umm.mutex).
 * @peak_ns:	when @fill_peak_bps last decayed (umm.mutex).
 * @work:	the sampling work.
 * @running:	the work may be queued (umm.mutex); it is, while a client
 *		is ready (monitor.c).
 * @samples:	samples taken (umm.mutex).
 * @sample_ns_sum: time they took, ns (umm.mutex).
 * @sample_ns_max: the longest, ns.
 * @sample_ns_last: the last one, ns.
 * @next_ms_last: delay chosen after the last sample, ms.
 * @due_ns:	when the next sample is due.
 * @late_ns_max: how late a sample started at worst, past its due time
 *		and the jiffy it was rounded to.
 * @late_samples: samples that started more than UMM_LATE_NS late: the
 *		machine did not run the work in time (told apart from a
 *		delay chosen too long).
 * @stats:	figures.
 */
struct umm_state {
	struct mutex mutex;		/* see the top of this file */
	spinlock_t lock;		/* see the top of this file */
	struct list_head clients;
	struct rb_root levels;
	struct list_head unready;
	struct umm_node **nodes;
	struct umm_gpu *gpus[UMM_MAX_GPUS];
	bool enabled;
	u32 interval_ms;
	u32 queue_len;
	u64 ring_bytes_max;
	u32 hysteresis_bp;
	u32 min_interval_ms;
	u32 repeat_ms;
	u32 oom_wait_ms;
	u32 cg_low_bp;
	u32 cg_medium_bp;
	u32 cg_critical_bp;
	struct list_head cgroups;
	DECLARE_HASHTABLE(cgroup_hash, 7);
	u32 nr_cgroups;
	u64 fill_peak_bps;
	u64 peak_ns;
	struct delayed_work work;
	bool running;
	u64 samples;
	u64 sample_ns_sum;
	u64 sample_ns_max;
	u64 sample_ns_last;
	u32 next_ms_last;
	u64 due_ns;
	u64 late_ns_max;
	u64 late_samples;
	struct umm_stats stats;
};

/*
 * A fill rate every machine is assumed able to reach before one was seen:
 * a page-faulting writer in the VM rig reaches 0.4 GB/s, real machines
 * several GB/s per thread.
 */
#define UMM_FILL_BPS_MIN	(1ULL << 30)
/*
 * How fast the fill-rate estimate forgets a fill: a trainer's allocation
 * bursts come seconds apart, so a burst keeps the sampling quick for the
 * next one; a minute after the last, sampling is back at its idle pace.
 */
#define UMM_FILL_HALF_LIFE_MS	5000
#define UMM_LATE_NS		(10 * NSEC_PER_MSEC)

/* state.c: the one instance, with the knobs' defaults */
extern struct umm_state umm;

/* The next node with memory after *@nid (start with -1), or NULL. */
static inline struct umm_node *umm_next_node(int *nid)
{
	while (++*nid < nr_node_ids)
		if (umm.nodes[*nid])
			return umm.nodes[*nid];
	return NULL;
}

#define for_each_umm_node(n, nid)					\
	for ((nid) = -1; ((n) = umm_next_node(&(nid))) != NULL; )

/* Bytes that @bp basis points of @total are. */
static inline u64 umm_bp_of(u64 total, u32 bp)
{
	return div64_u64(total * bp, UMM_BP_MAX);
}

/*
 * The files call downward only (kmod/layers, checked by make check; drawn in
 * Documentation/design/umm.rst):
 *
 *   main.c -> client.c | sysfs.c | debugfs.c -> inject.c
 *          -> monitor.c | reclaim.c -> memcg.c -> events.c -> ring.c
 *          -> state.c | compat.c
 */

/* client.c: /dev/umm */
int umm_dev_init(void);
void umm_dev_exit(void);

/* sysfs.c */
int umm_sysfs_init(void);
void umm_sysfs_exit(void);

/* debugfs.c */
void umm_debugfs_init(void);
void umm_debugfs_exit(void);

/* inject.c: the inject file (a test aid) */
int umm_inject(const char *cmd);

/* compat.c: the kernel's counters, in pages */
struct umm_node_mem {
	unsigned long free;
	unsigned long managed;
	unsigned long reserve;
	unsigned long wmark_min;
	unsigned long wmark_low;
	unsigned long file;
	unsigned long slab;
};

void umm_node_mem_read(int nid, struct umm_node_mem *m);
struct kobject *umm_mm_kobj_get(void);
unsigned long umm_memcg_counts(struct mem_cgroup *m, unsigned long *usage);
unsigned long umm_memcg_inactive_file(struct mem_cgroup *m);

/* monitor.c: node and GPU levels */
void umm_monitor_init(void);
void umm_monitor_start(void);
void umm_monitor_stop(void);
void umm_monitor_kick(void);
void umm_monitor_watch(void);
int umm_node_check_wm(u32 low, u32 medium, u32 crit);
u64 umm_node_critical_bytes(struct umm_node *n);
void umm_gpu_check(struct umm_gpu *g, bool injected);
void umm_set_enabled(bool on);
const char *umm_level_name(u32 level);
int umm_level_parse(const char *word);
void umm_node_hold(struct umm_node *n, u32 level);
void umm_gpu_hold(struct umm_gpu *g, u32 level);

/* memcg.c: memory cgroups as sources */
bool umm_memcg_available(void);
void umm_memcg_untie(struct umm_client *c);
void umm_memcg_follow(struct umm_client *c);
void umm_memcg_books(struct umm_client *c, int sign);
void umm_memcg_sample_all(u64 now);
u64 umm_memcg_next_ns(void);
u32 umm_memcg_level_info(struct umm_client *c, struct umm_level_info *li,
			 u32 room);

/* reclaim.c: shrinker and OOM notifier */
int umm_reclaim_init(void);
void umm_reclaim_exit(void);
void umm_shrink_node(int nid, u64 bytes, bool injected);
void umm_oom(bool injected);

/* events.c: who is asked for what, and where to */
#define UMM_ASK_RESIDENT	BIT(0)	/* then ask for non-reclaimable bytes */
#define UMM_ASK_INFO		BIT(1)	/* tell ALL_PRESSURE clients too */
int umm_ask(struct umm_event *tmpl, u64 bytes, unsigned int how);
int umm_ask_within(struct umm_event *tmpl, struct mem_cgroup *within,
		   u64 bytes, unsigned int how);
int umm_broadcast(struct umm_event *ev, u64 feature);
int umm_broadcast_within(struct umm_event *ev, struct mem_cgroup *within,
			 u64 feature);
u64 umm_client_host(struct umm_client *c, bool reclaimable);
u64 umm_client_reclaimable(struct umm_client *c, u32 tier_type, u32 id);
u64 umm_client_resident(struct umm_client *c, u32 tier_type, u32 id);
bool umm_rate_ok(u64 *last_ns, u64 now, bool force);
u32 umm_source_event(struct umm_source *s, u32 rise_type, u64 now,
		     bool injected);
int umm_dest_node(int exclude);

/* ring.c: event records and a client's ring */
void umm_event_init(struct umm_event *ev, u32 type, u32 tier_type,
		    u32 tier_id);
int umm_ring_alloc(struct umm_client *c, u32 queue_len);
void umm_ring_free(struct umm_client *c);
void umm_client_queue(struct umm_client *c, struct umm_event *ev);
bool umm_ring_peek(struct umm_client *c, struct umm_event *ev);
void umm_ring_done(struct umm_client *c, bool consumed);
int umm_pending_latency(struct umm_client *c, u64 seq, u64 *lat);
extern const u32 umm_ack_le_ms[UMM_ACK_BUCKETS - 1];
u32 umm_pending_retire(struct umm_client *c, u64 seq, u64 bytes_freed);

#endif /* UMM_INTERNAL_H */
