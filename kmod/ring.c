// SPDX-License-Identifier: GPL-2.0
/*
 * The bottom of umm.ko: event records and the per-client ring they are
 * queued on, with the table of events still owed an ACK. Nothing here knows
 * why an event is sent or to whom; callers above decide that.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include "umm_internal.h"

/**
 * umm_event_init() - fill an event record with its header and defaults.
 * @ev:		record to fill.
 * @type:	enum umm_event_type.
 * @tier_type:	enum umm_tier_type of the source.
 * @tier_id:	node or GPU id (0 for UMM_TIER_NONE).
 *
 * The timestamp is taken now; level is NORMAL, no destination, ETA unknown.
 */
void umm_event_init(struct umm_event *ev, u32 type, u32 tier_type,
		    u32 tier_id)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->size = sizeof(*ev);
	ev->tier_type = tier_type;
	ev->tier_id = tier_id;
	ev->ts_ns = ktime_get_ns();
	ev->level = UMM_LEVEL_NORMAL;
	ev->dest_node = UMM_NODE_NONE;
	ev->eta_ms = UMM_ETA_UNKNOWN;
}

/*
 * The memory the ring of a client with @queue_len (queue_len + 1 records)
 * really takes, which is what ring_bytes counts: up to a page, the kmalloc
 * size it rounds to; beyond, whole pages of vmalloc. (kvmalloc() would
 * take the next power of two pages from the page allocator when it can:
 * 32 KiB for the 16,448 bytes of the default queue_len.)
 */
static size_t umm_ring_bytes(u32 queue_len)
{
	size_t bytes = (size_t)(queue_len + 1) * sizeof(struct umm_event);

	return bytes <= PAGE_SIZE ? kmalloc_size_roundup(bytes) :
				    PAGE_ALIGN(bytes);
}

/* What the rings of one user's clients take: the cap is per user. */
struct umm_ring_user {
	struct hlist_node node;
	kuid_t uid;
	u64 bytes;
};

static DEFINE_HASHTABLE(umm_ring_users, 6);
static DEFINE_SPINLOCK(umm_ring_users_lock);

static struct umm_ring_user *umm_ring_user_find(kuid_t uid)
{
	struct umm_ring_user *u;

	hash_for_each_possible(umm_ring_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			return u;
	return NULL;
}

/*
 * Charge @bytes to @uid, whose entry is @spare when it has none yet (then
 * *@spare is used up). -ENOBUFS past ring_bytes_max.
 */
static int umm_ring_charge(kuid_t uid, u64 bytes,
			   struct umm_ring_user **spare)
{
	struct umm_ring_user *u;
	int ret = 0;

	spin_lock(&umm_ring_users_lock);
	u = umm_ring_user_find(uid);
	if (!u) {
		u = *spare;
		*spare = NULL;
		u->uid = uid;
		hash_add(umm_ring_users, &u->node, __kuid_val(uid));
	}
	if (u->bytes + bytes > READ_ONCE(umm.ring_bytes_max))
		ret = -ENOBUFS;
	else
		u->bytes += bytes;
	if (!u->bytes) {
		hash_del(&u->node);
		*spare = u;
	}
	spin_unlock(&umm_ring_users_lock);
	return ret;
}

static void umm_ring_uncharge(kuid_t uid, u64 bytes)
{
	struct umm_ring_user *u;

	spin_lock(&umm_ring_users_lock);
	u = umm_ring_user_find(uid);
	if (WARN_ON_ONCE(!u || u->bytes < bytes)) {
		u = NULL;
	} else {
		u->bytes -= bytes;
		if (u->bytes)
			u = NULL;
		else
			hash_del(&u->node);
	}
	spin_unlock(&umm_ring_users_lock);
	kfree(u);
}

/**
 * umm_ring_alloc() - give a new client its ring and the lock around it.
 * @c:		the client (zeroed).
 * @queue_len:	records that events may fill.
 *
 * The ring is charged to the opener's memory cgroup (a client's memory is
 * its own), and the rings of one user's clients (the opener's real uid)
 * may not pass ring_bytes_max together, counted as the allocator really
 * gives them (umm_ring_bytes()): at queue_len 65536 a ring is 4 MiB, and
 * without a cap the clients of one unprivileged user pinned hundreds of
 * MiB. Per user, so that no user's clients leave none to the others.
 *
 * Return: 0, -ENOBUFS when the cap would be passed, or -ENOMEM.
 */
int umm_ring_alloc(struct umm_client *c, u32 queue_len)
{
	size_t bytes = umm_ring_bytes(queue_len);
	struct umm_ring_user *spare;
	int ret;

	spare = kzalloc(sizeof(*spare), GFP_KERNEL_ACCOUNT);
	if (!spare)
		return -ENOMEM;
	c->uid = current_uid();
	ret = umm_ring_charge(c->uid, bytes, &spare);
	kfree(spare);
	if (ret)
		return ret;
	if (bytes <= PAGE_SIZE)
		c->ring = kzalloc(bytes, GFP_KERNEL_ACCOUNT);
	else
		c->ring = __vmalloc(bytes, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!c->ring) {
		umm_ring_uncharge(c->uid, bytes);
		return -ENOMEM;
	}
	atomic64_add(bytes, &umm.stats.ring_bytes);
	c->queue_len = queue_len;
	spin_lock_init(&c->ring_lock);
	init_waitqueue_head(&c->wq);
	return 0;
}

/**
 * umm_ring_free() - free what umm_ring_alloc() gave.
 * @c:		the client, no longer reachable by any producer.
 */
void umm_ring_free(struct umm_client *c)
{
	size_t bytes = umm_ring_bytes(c->queue_len);

	if (!c->ring)
		return;
	kvfree(c->ring);
	c->ring = NULL;
	atomic64_sub(bytes, &umm.stats.ring_bytes);
	umm_ring_uncharge(c->uid, bytes);
}

static u32 umm_ring_slot(struct umm_client *c, u32 i)
{
	return (c->head + i) % (c->queue_len + 1);
}

static void umm_pending_add(struct umm_client *c, const struct umm_event *ev)
{
	u32 i;

	if (c->pending_nr == UMM_ACK_PENDING) {
		/* forget the oldest: an ACK for it now gets -ENOENT */
		c->pending_head = (c->pending_head + 1) % UMM_ACK_PENDING;
		c->pending_nr--;
	}
	i = (c->pending_head + c->pending_nr) % UMM_ACK_PENDING;
	c->pending[i].seq = ev->seq;
	c->pending[i].ts_ns = ev->ts_ns;
	c->pending_nr++;
}

/*
 * Append @ev, or account for it in an OVERFLOW record. Events may only fill
 * queue_len slots; the last slot is kept so that an OVERFLOW record always
 * fits. The OVERFLOW record carries the seq of the last record dropped, so
 * seq numbers stay contiguous across it: records seq - lost + 1 .. seq are
 * the lost ones. It is not coalesced into while a reader copies it out.
 */
static void umm_ring_push(struct umm_client *c, struct umm_event *ev)
{
	struct umm_event *last, *o;

	lockdep_assert_held(&c->ring_lock);
	ev->seq = ++c->seq;
	if (c->used < c->queue_len) {
		c->ring[umm_ring_slot(c, c->used)] = *ev;
		c->used++;
		c->events++;
		atomic64_inc(&umm.stats.events_sent);
		if (ev->flags & UMM_EVENT_F_ACK)
			umm_pending_add(c, ev);
		return;
	}

	c->drops++;
	atomic64_inc(&umm.stats.events_dropped);
	last = &c->ring[umm_ring_slot(c, c->used - 1)];
	if (last->type == UMM_EVENT_OVERFLOW && !(c->reading && c->used == 1)) {
		last->lost++;
		last->seq = ev->seq;
		last->ts_ns = ev->ts_ns;
		return;
	}
	o = &c->ring[umm_ring_slot(c, c->used)];
	umm_event_init(o, UMM_EVENT_OVERFLOW, UMM_TIER_NONE, 0);
	o->seq = ev->seq;
	o->ts_ns = ev->ts_ns;
	o->lost = 1;
	c->used++;
	atomic64_inc(&umm.stats.overflows);
}

/**
 * umm_client_queue() - queue one event record for a client and wake it.
 * @c:	the client.
 * @ev:	the record; its seq is filled in.
 *
 * Context: any process context, including reclaim and the OOM notifier;
 * never sleeps. Callers hold umm.lock.
 */
void umm_client_queue(struct umm_client *c, struct umm_event *ev)
{
	/* callers give the whole id; clients built before it get none */
	if (ev->tier_type == UMM_TIER_CGROUP &&
	    !(c->features & UMM_FEATURE_CGROUP_ID64))
		ev->dest_node = UMM_NODE_NONE;
	spin_lock(&c->ring_lock);
	umm_ring_push(c, ev);
	spin_unlock(&c->ring_lock);
	wake_up_interruptible_poll(&c->wq, EPOLLIN | EPOLLRDNORM);
}

/**
 * umm_ring_peek() - the oldest record, left in place and marked as being
 * read (so an OVERFLOW record is not coalesced into meanwhile).
 * @c:	the client; the caller holds its read_mutex.
 * @ev:	where the record is copied.
 *
 * Return: true if there was one; then umm_ring_done() must follow.
 */
bool umm_ring_peek(struct umm_client *c, struct umm_event *ev)
{
	bool found = false;

	spin_lock(&c->ring_lock);
	if (c->used) {
		*ev = c->ring[c->head];
		c->reading = true;
		found = true;
	}
	spin_unlock(&c->ring_lock);
	return found;
}

/**
 * umm_ring_done() - end a umm_ring_peek().
 * @c:		the client.
 * @consumed:	the record reached the reader: retire it.
 */
void umm_ring_done(struct umm_client *c, bool consumed)
{
	spin_lock(&c->ring_lock);
	if (consumed) {
		c->head = umm_ring_slot(c, 1);
		c->used--;
	}
	c->reading = false;
	spin_unlock(&c->ring_lock);
}

/* The newest pending event at or before @seq, as an index, or -1. */
static int umm_pending_newest(struct umm_client *c, u64 seq)
{
	int found = -1;
	u32 k;

	for (k = 0; k < c->pending_nr; k++) {
		u32 i = (c->pending_head + k) % UMM_ACK_PENDING;

		if (c->pending[i].seq > seq)
			break;
		found = i;
	}
	return found;
}

/* Time since @ts_ns; 0, never negative, for an event stamped after @now. */
static u64 umm_since(u64 now, u64 ts_ns)
{
	return now > ts_ns ? now - ts_ns : 0;
}

/**
 * umm_pending_latency() - how long ago the newest event at or before @seq
 * that is owed an ACK was raised; nothing is retired.
 * @c:		the client.
 * @seq:	seq the client acknowledges.
 * @lat:	the latency, ns.
 *
 * Return: 0, -EINVAL for seq 0 or a seq not issued yet, -ENOENT when no
 * such event is waiting.
 */
int umm_pending_latency(struct umm_client *c, u64 seq, u64 *lat)
{
	int ret = -ENOENT, i;

	spin_lock(&c->ring_lock);
	if (!seq || seq > c->seq) {
		ret = -EINVAL;
	} else {
		i = umm_pending_newest(c, seq);
		if (i >= 0) {
			*lat = umm_since(ktime_get_ns(), c->pending[i].ts_ns);
			ret = 0;
		}
	}
	spin_unlock(&c->ring_lock);
	return ret;
}

/* Add @v to a figure, stopping at U64_MAX instead of wrapping. */
static void umm_stat_add(atomic64_t *stat, u64 v)
{
	s64 old = atomic64_read(stat), prev;

	for (;;) {
		prev = atomic64_cmpxchg(stat, old,
					(s64)umm_add_sat((u64)old, v));
		if (prev == old)
			return;
		old = prev;
	}
}

static void umm_stat_max(atomic64_t *stat, u64 v)
{
	s64 old = atomic64_read(stat), prev;

	while (v > (u64)old) {
		prev = atomic64_cmpxchg(stat, old, (s64)v);
		if (prev == old)
			return;
		old = prev;
	}
}

/*
 * Upper bounds of the latency buckets, ms, 1-2-5 per decade: the figures
 * measured so far run from under a millisecond to seconds (design/umm.rst),
 * and three buckets a decade tell those apart at a fixed cost per client.
 */
const u32 umm_ack_le_ms[UMM_ACK_BUCKETS - 1] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
};

/* The bucket of a latency of @lat ns: the last one is for the rest. */
static unsigned int umm_ack_bucket(u64 lat)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(umm_ack_le_ms); i++)
		if (lat <= (u64)umm_ack_le_ms[i] * NSEC_PER_MSEC)
			break;
	return i;
}

/**
 * umm_pending_retire() - count an ACK: retire every pending event at or
 * before @seq and add their latencies and @bytes_freed to the figures.
 * @c:		the client.
 * @seq:	seq the client acknowledges.
 * @bytes_freed: bytes it says it gave back.
 *
 * Every sum saturates at U64_MAX; a latency is never negative.
 * Return: the number of events retired (0: none was waiting any more).
 */
u32 umm_pending_retire(struct umm_client *c, u64 seq, u64 bytes_freed)
{
	u64 now, lat;
	u32 n = 0;

	spin_lock(&c->ring_lock);
	now = ktime_get_ns();
	while (c->pending_nr && c->pending[c->pending_head].seq <= seq) {
		lat = umm_since(now, c->pending[c->pending_head].ts_ns);
		umm_stat_add(&umm.stats.ack_latency_sum_ns, lat);
		atomic64_inc(&umm.stats.ack_latency_count);
		umm_stat_max(&umm.stats.ack_latency_max_ns, lat);
		c->ack_ns_sum = umm_add_sat(c->ack_ns_sum, lat);
		c->ack_ns_n++;
		c->ack_ms_le[umm_ack_bucket(lat)]++;
		c->pending_head = (c->pending_head + 1) % UMM_ACK_PENDING;
		c->pending_nr--;
		n++;
	}
	if (n) {
		c->acks++;
		c->bytes_freed = umm_add_sat(c->bytes_freed, bytes_freed);
	}
	spin_unlock(&c->ring_lock);
	if (n) {
		atomic64_inc(&umm.stats.acks);
		umm_stat_add(&umm.stats.bytes_freed, bytes_freed);
	}
	return n;
}
