// SPDX-License-Identifier: GPL-2.0
/*
 * Who is told what. One policy for every source: the bytes a
 * source needs back are asked of the clients holding bytes there, lowest
 * priority first, first from what they declared reclaimable, then (for
 * watermarks and budgets, not for reclaim) from the rest of what they hold;
 * and which node an event names as the place with room.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/memcontrol.h>
#include <linux/minmax.h>
#include <linux/string.h>

#include "umm_internal.h"

static struct umm_book *umm_client_book(struct umm_client *c, u32 tier_type,
					u32 id)
{
	if (tier_type == UMM_TIER_HOST_NODE && id < nr_node_ids)
		return &c->nodes[id];
	if (tier_type == UMM_TIER_GPU && id < UMM_MAX_GPUS)
		return &c->gpus[id];
	return NULL;
}

/**
 * umm_client_reclaimable() - bytes a client declared reclaimable on a tier.
 * @c:		the client.
 * @tier_type:	enum umm_tier_type.
 * @id:		node or GPU id.
 *
 * Context: umm.lock held.
 * Return: bytes, 0 for an unknown tier.
 */
u64 umm_client_reclaimable(struct umm_client *c, u32 tier_type, u32 id)
{
	struct umm_book *b = umm_client_book(c, tier_type, id);

	return b ? b->reclaimable : 0;
}

/**
 * umm_client_resident() - bytes a client declared resident on a tier.
 * @c:		the client.
 * @tier_type:	enum umm_tier_type.
 * @id:		node or GPU id.
 *
 * Context: umm.lock held.
 * Return: bytes, 0 for an unknown tier.
 */
u64 umm_client_resident(struct umm_client *c, u32 tier_type, u32 id)
{
	struct umm_book *b = umm_client_book(c, tier_type, id);

	return b ? b->resident : 0;
}

/**
 * umm_client_host() - what a client declared on all host nodes together.
 * @c:		the client.
 * @reclaimable: the reclaimable bytes, else the resident ones.
 *
 * Context: umm.lock held.
 * Return: bytes, saturating at U64_MAX.
 */
u64 umm_client_host(struct umm_client *c, bool reclaimable)
{
	u64 sum = 0;
	int nid;

	for (nid = 0; nid < nr_node_ids; nid++)
		sum = umm_add_sat(sum, reclaimable ? c->nodes[nid].reclaimable :
				  c->nodes[nid].resident);
	return sum;
}

/*
 * Does @c take part in an event about @within (NULL: a node or GPU, every
 * client on umm.clients, which are past their handshake)? For a memory
 * cgroup: the clients tied to it or to a cgroup below it that asked for
 * cgroup events.
 */
static bool umm_client_within(struct umm_client *c, struct mem_cgroup *within)
{
	if (!within)
		return true;
	return (c->features & UMM_FEATURE_CGROUP) && c->cg &&
	       mem_cgroup_is_descendant(c->cg->memcg, within);
}

/* What @c holds of the event's tier: in a cgroup, its host memory. */
static u64 umm_client_has(struct umm_client *c, struct mem_cgroup *within,
			  u32 type, u32 id, bool reclaimable)
{
	if (within)
		return umm_client_host(c, reclaimable);
	return reclaimable ? umm_client_reclaimable(c, type, id) :
			     umm_client_resident(c, type, id);
}

/**
 * umm_ask() - ask clients to free bytes of the tier an event is about.
 * @tmpl:	the event; bytes_to_free and flags are set per client.
 * @bytes:	bytes wanted back in all.
 * @how:	UMM_ASK_RESIDENT: when what clients declared reclaimable is
 *		not enough, ask for the rest of what they hold too;
 *		UMM_ASK_INFO: also tell clients with UMM_FEATURE_ALL_PRESSURE
 *		that were not asked for anything (bytes_to_free 0).
 *
 * Clients are walked in priority order (the list is kept sorted), so the
 * lowest priority is asked first and higher ones only for what is left.
 *
 * Context: any process context, never sleeps; takes umm.lock.
 * Return: the number of clients an event was queued for.
 */
int umm_ask(struct umm_event *tmpl, u64 bytes, unsigned int how)
{
	return umm_ask_within(tmpl, NULL, bytes, how);
}

/**
 * umm_ask_within() - umm_ask() among the clients of a memory cgroup.
 * @tmpl:	the event; bytes_to_free and flags are set per client.
 * @within:	the cgroup: only clients with UMM_FEATURE_CGROUP tied to it
 *		or to a cgroup below it take part, each with what it declared
 *		on all host nodes; NULL for every client and the event's tier.
 * @bytes:	bytes wanted back in all.
 * @how:	as for umm_ask().
 *
 * Context: any process context, never sleeps; takes umm.lock.
 * Return: the number of clients an event was queued for.
 */
int umm_ask_within(struct umm_event *tmpl, struct mem_cgroup *within,
		   u64 bytes, unsigned int how)
{
	u32 type = tmpl->tier_type, id = tmpl->tier_id;
	struct umm_event ev;
	struct umm_client *c;
	u64 left = bytes;
	int sent = 0;

	spin_lock(&umm.lock);
	list_for_each_entry(c, &umm.clients, list) {
		c->ask = 0;
		if (!left || !umm_client_within(c, within))
			continue;
		c->ask = min(left, umm_client_has(c, within, type, id, true));
		left -= c->ask;
	}
	if (how & UMM_ASK_RESIDENT) {
		list_for_each_entry(c, &umm.clients, list) {
			u64 more;

			if (!left || !umm_client_within(c, within))
				continue;
			more = umm_client_has(c, within, type, id, false) -
			       umm_client_has(c, within, type, id, true);
			more = min(left, more);
			c->ask += more;
			left -= more;
		}
	}
	list_for_each_entry(c, &umm.clients, list) {
		if (!umm_client_within(c, within))
			continue;
		if (!c->ask && !((how & UMM_ASK_INFO) &&
				 (c->features & UMM_FEATURE_ALL_PRESSURE)))
			continue;
		ev = *tmpl;
		ev.bytes_to_free = c->ask;
		if (c->ask)
			ev.flags |= UMM_EVENT_F_ACK;
		umm_client_queue(c, &ev);
		sent++;
	}
	spin_unlock(&umm.lock);
	return sent;
}

/**
 * umm_broadcast() - queue an event for every client (that wants it).
 * @ev:		the event.
 * @feature:	UMM_FEATURE_* a client must have asked for, or 0 for all.
 *
 * Context: any process context, never sleeps; takes umm.lock.
 * Return: the number of clients an event was queued for.
 */
int umm_broadcast(struct umm_event *ev, u64 feature)
{
	return umm_broadcast_within(ev, NULL, feature);
}

/**
 * umm_broadcast_within() - umm_broadcast() to the clients of a cgroup.
 * @ev:		the event.
 * @within:	the memory cgroup (see umm_ask_within()), or NULL for all.
 * @feature:	UMM_FEATURE_* a client must have asked for, or 0 for all.
 *
 * Context: any process context, never sleeps; takes umm.lock.
 * Return: the number of clients an event was queued for.
 */
int umm_broadcast_within(struct umm_event *ev, struct mem_cgroup *within,
			 u64 feature)
{
	struct umm_event copy;
	struct umm_client *c;
	int sent = 0;

	spin_lock(&umm.lock);
	list_for_each_entry(c, &umm.clients, list) {
		if (!umm_client_within(c, within) ||
		    (feature && !(c->features & feature)))
			continue;
		copy = *ev;
		umm_client_queue(c, &copy);
		sent++;
	}
	spin_unlock(&umm.lock);
	return sent;
}

/**
 * umm_rate_ok() - may a source raise an event now?
 * @last_ns:	when the source last raised one (0: never); updated when
 *		the answer is yes.
 * @now:	ktime_get_ns() now.
 * @force:	yes regardless (the inject file).
 *
 * At most one event per source per event_min_interval_ms.
 * Context: the caller serialises access to @last_ns.
 * Return: true if the event may go out.
 */
bool umm_rate_ok(u64 *last_ns, u64 now, bool force)
{
	u64 gap = (u64)READ_ONCE(umm.min_interval_ms) * NSEC_PER_MSEC;

	if (!force && *last_ns && now - *last_ns < gap)
		return false;
	*last_ns = now;
	return true;
}

static bool umm_repeat_due(struct umm_source *s, u64 now)
{
	u64 every = (u64)READ_ONCE(umm.repeat_ms) * NSEC_PER_MSEC;

	return every && now - s->last_event_ns >= every;
}

/**
 * umm_source_event() - does a source's level warrant an event now?
 * @s:		the source, its level just updated.
 * @rise_type:	the event type of a rise (PRESSURE, GPU_BUDGET).
 * @now:	ktime_get_ns() now.
 * @injected:	called by the inject file: ignore the rate limit.
 *
 * A rise, a drop, or a reminder while the level stays LOW or worse. At most
 * one event per source per event_min_interval_ms, except a PRESSURE rise
 * to CRITICAL: a fast fill crosses from LOW to the OOM killer in less than
 * that, and the rate limit would hold back the one event that matters.
 * A suppressed change stays pending and is retried at the next sample.
 *
 * Context: the caller serialises access to @s (umm.mutex).
 * Return: the event type, or 0 for none.
 */
u32 umm_source_event(struct umm_source *s, u32 rise_type, u64 now,
		     bool injected)
{
	bool urgent = rise_type == UMM_EVENT_PRESSURE &&
		      s->level == UMM_LEVEL_CRITICAL &&
		      s->announced < UMM_LEVEL_CRITICAL;
	u32 type;

	if (!READ_ONCE(umm.enabled))
		return 0;
	if (s->level > s->announced ||
	    (s->level == s->announced && s->level >= UMM_LEVEL_LOW &&
	     (injected || umm_repeat_due(s, now))))
		type = rise_type;
	else if (s->level < s->announced)
		type = UMM_EVENT_RELIEF;
	else
		return 0;
	if (!umm_rate_ok(&s->last_event_ns, now, injected || urgent))
		return 0;
	s->announced = s->level;
	atomic64_inc(&s->events);
	return type;
}

/**
 * umm_dest_node() - the node with most available memory above its low
 * watermark.
 * @exclude:	node not to name (the one under pressure), or -1.
 *
 * Only a node above its low watermark by the hysteresis band counts: one
 * just above it (held there by another workload) would go LOW with the
 * first bytes moved to it, and a client bound elsewhere that fills it is
 * not eligible for that node's OOM kill, so others die instead.
 *
 * Context: any; reads the last samples without locks.
 * Return: a node id, or UMM_NODE_NONE when no node has headroom.
 */
int umm_dest_node(int exclude)
{
	u32 band = READ_ONCE(umm.hysteresis_bp);
	s32 best = UMM_NODE_NONE;
	struct umm_node *n;
	u64 most = 0;
	int nid;

	for_each_umm_node(n, nid) {
		u64 free = READ_ONCE(n->avail_bytes);
		u64 low = umm_bp_of(READ_ONCE(n->total_bytes),
				    READ_ONCE(n->low_bp) + band);

		if (nid == exclude || free <= low || free - low <= most)
			continue;
		most = free - low;
		best = nid;
	}
	return best;
}
