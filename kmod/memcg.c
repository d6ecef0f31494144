// SPDX-License-Identifier: GPL-2.0
/*
 * Memory cgroups (v2) as sources. A client with UMM_FEATURE_CGROUP is tied
 * to the memory cgroup of the process that opened the file and follows it
 * when it moves (checked at every sample and every QUERY). Every cgroup
 * that holds such clients is watched: its room -- the least left under
 * any memory.max or memory.high on its path to the root by that cgroup's
 * working set (its usage less its inactive file pages, which reclaim takes
 * back cheaply: the kubelet's measure) -- is sampled against thresholds in
 * basis points of its effective limit (the lowest of those limits), and
 * PRESSURE goes to the clients in it and below it.
 *
 * A watched cgroup holds a css reference, so its struct mem_cgroup (and
 * every ancestor: a cgroup holds its parent) stays valid after rmdir; a
 * cgroup that went offline under a client whose process is gone hands the
 * client to its nearest online ancestor, where its charges went.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cgroup.h>
#include <linux/kernel.h>
#include <linux/math64.h>
#include <linux/memcontrol.h>
#include <linux/minmax.h>
#include <linux/page_counter.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "umm_internal.h"

/**
 * umm_memcg_available() - is there a memory controller on cgroup v2?
 *
 * With the controller disabled (cgroup_disable=memory) or bound to a
 * cgroup v1 hierarchy there are no cgroup sources.
 *
 * Return: true when cgroup sources can exist.
 */
bool umm_memcg_available(void)
{
#ifdef CONFIG_MEMCG
	return !mem_cgroup_disabled() &&
	       cgroup_subsys_on_dfl(memory_cgrp_subsys);
#else
	return false;
#endif
}

#ifdef CONFIG_MEMCG

/*
 * mem_cgroup_is_root() compares with root_mem_cgroup, which modules cannot
 * see; the root is the one cgroup without a parent.
 */
static bool umm_memcg_is_root(struct mem_cgroup *m)
{
	return !m->css.parent;
}

/*
 * The nearest online cgroup at or above @m that is not the root, with a
 * reference; NULL for none. Under rcu_read_lock(): @m's memory (and its
 * parents') cannot go away meanwhile.
 */
static struct mem_cgroup *umm_memcg_get_live(struct mem_cgroup *m)
{
	for (; m && !umm_memcg_is_root(m); m = parent_mem_cgroup(m))
		if (css_tryget_online(&m->css))
			return m;
	return NULL;
}

/*
 * The cgroup @c belongs in now, with a reference, or NULL: that of the
 * process that opened the file; once that process is gone, the one it is
 * tied to, while that is online.
 */
static struct mem_cgroup *umm_memcg_of(struct umm_client *c)
{
	struct task_struct *task;
	struct mem_cgroup *m = NULL;

	rcu_read_lock();
	task = pid_task(c->pid, PIDTYPE_TGID);
	if (task)
		m = umm_memcg_get_live(mem_cgroup_from_task(task));
	else if (c->cg)
		m = umm_memcg_get_live(c->cg->memcg);
	rcu_read_unlock();
	return m;
}

static struct umm_cgroup *umm_cgroup_find(struct mem_cgroup *memcg)
{
	struct umm_cgroup *cg;

	hash_for_each_possible(umm.cgroup_hash, cg, hash, (unsigned long)memcg)
		if (cg->memcg == memcg)
			return cg;
	return NULL;
}

/* @a * @bp / 10000 without overflow (limits reach 2^63). */
static u64 umm_cg_bp_of(u64 a, u32 bp)
{
	return mul_u64_u64_div_u64(a, bp, UMM_BP_MAX);
}

static u32 umm_cgroup_level_of(u64 room, u64 limit)
{
	if (room < umm_cg_bp_of(limit, umm.cg_critical_bp))
		return UMM_LEVEL_CRITICAL;
	if (room < umm_cg_bp_of(limit, umm.cg_medium_bp))
		return UMM_LEVEL_MEDIUM;
	if (room < umm_cg_bp_of(limit, umm.cg_low_bp))
		return UMM_LEVEL_LOW;
	return UMM_LEVEL_NORMAL;
}

/* As for nodes: rise at once, drop once hysteresis_bp above the threshold. */
static u32 umm_cgroup_level(struct umm_cgroup *cg)
{
	u64 hyst, room = cg->room_bytes, limit = cg->limit_bytes;
	u32 raw, cur = cg->src.level;

	if (limit == U64_MAX || !limit)
		return UMM_LEVEL_NORMAL;
	raw = umm_cgroup_level_of(room, limit);
	if (raw >= cur)
		return raw;
	hyst = umm_cg_bp_of(limit, umm.hysteresis_bp);
	return min(cur, umm_cgroup_level_of(room > hyst ? room - hyst : 0,
					    limit));
}

/* Bytes per second that @before - @after over @dt ns are (negative: grew). */
static s64 umm_rate(u64 before, u64 after, u64 dt)
{
	if (before >= after)
		return min_t(u64, mul_u64_u64_div_u64(before - after,
						      NSEC_PER_SEC, dt),
			     S64_MAX);
	return -(s64)min_t(u64, mul_u64_u64_div_u64(after - before,
						    NSEC_PER_SEC, dt),
			   S64_MAX);
}

/* Usage and working set of the cgroup itself, for QUERY and debugfs. */
static void umm_cgroup_usage(struct umm_cgroup *cg)
{
	unsigned long use, wset;

	umm_memcg_counts(cg->memcg, &use);
	wset = use - min(use, umm_memcg_inactive_file(cg->memcg));
	WRITE_ONCE(cg->usage_bytes, (u64)use << PAGE_SHIFT);
	WRITE_ONCE(cg->wset_bytes, (u64)wset << PAGE_SHIFT);
}

static void umm_cgroup_sample(struct umm_cgroup *cg, u64 now)
{
	u64 limit = U64_MAX, room = U64_MAX, crit;
	struct mem_cgroup *m, *binding = NULL;

	for (m = cg->memcg; m && !umm_memcg_is_root(m);
	     m = parent_mem_cgroup(m)) {
		unsigned long use, lim = umm_memcg_counts(m, &use);
		u64 left;

		if (lim >= PAGE_COUNTER_MAX)
			continue;
		use -= min(use, umm_memcg_inactive_file(m));
		left = lim > use ? (u64)(lim - use) << PAGE_SHIFT : 0;
		limit = min_t(u64, limit, (u64)lim << PAGE_SHIFT);
		/* on a tie the higher one: watches above share it */
		if (left <= room) {
			room = left;
			binding = m;
		}
	}
	umm_cgroup_usage(cg);

	if (cg->sample_ns && now > cg->sample_ns && binding &&
	    cg->room_bytes != U64_MAX) {
		cg->fill_now_bps = umm_rate(cg->room_bytes, room,
					    now - cg->sample_ns);
		/* EWMA, weight 1/4, as for nodes */
		cg->fill_bps += (cg->fill_now_bps - cg->fill_bps) / 4;
	} else {
		cg->fill_now_bps = 0;
		cg->fill_bps = 0;
	}
	WRITE_ONCE(cg->limit_bytes, limit);
	WRITE_ONCE(cg->room_bytes, room);
	cg->binding = binding;
	cg->sample_ns = now;
	if (cg->fill_bps > 0)
		umm.fill_peak_bps = max_t(u64, umm.fill_peak_bps,
					  cg->fill_bps);

	crit = umm_cg_bp_of(limit, umm.cg_critical_bp);
	if (!binding)
		WRITE_ONCE(cg->eta_ms, UMM_ETA_UNKNOWN);
	else if (room <= crit)
		WRITE_ONCE(cg->eta_ms, 0);
	else if (cg->fill_bps <= 0)
		WRITE_ONCE(cg->eta_ms, UMM_ETA_UNKNOWN);
	else
		WRITE_ONCE(cg->eta_ms,
			   min_t(u64, mul_u64_u64_div_u64(room - crit,
							  MSEC_PER_SEC,
							  cg->fill_bps),
				 UMM_ETA_UNKNOWN - 1));
	cg->src.level = umm_cgroup_level(cg);
}

/*
 * A watched cgroup above @cg whose path holds the limit that binds @cg
 * already tells @cg's clients (they are in its subtree): @cg stays quiet
 * rather than ask them twice for the same bytes. The cgroups from @cg's
 * parent up to the binding one are looked up by hash: the depth of @cg,
 * not the number of watched cgroups, bounds the walk.
 */
static bool umm_cgroup_covered(struct umm_cgroup *cg)
{
	struct mem_cgroup *m;

	if (!cg->binding || cg->memcg == cg->binding)
		return false;
	for (m = parent_mem_cgroup(cg->memcg); m; m = parent_mem_cgroup(m)) {
		if (umm_cgroup_find(m))
			return true;
		if (m == cg->binding)
			break;
	}
	return false;
}

static void umm_cgroup_announce(struct umm_cgroup *cg, u64 now)
{
	struct umm_event ev;
	u64 target;
	u32 type;

	/* the idle case, every sample: nothing to say */
	if (cg->src.level == UMM_LEVEL_NORMAL &&
	    cg->src.announced == UMM_LEVEL_NORMAL)
		return;
	if (umm_cgroup_covered(cg)) {
		cg->src.announced = cg->src.level;
		return;
	}
	type = umm_source_event(&cg->src, UMM_EVENT_PRESSURE, now, false);
	if (!type)
		return;
	umm_event_init(&ev, type, UMM_TIER_CGROUP, lower_32_bits(cg->id));
	ev.tier_id_hi = upper_32_bits(cg->id);
	ev.level = cg->src.level;
	ev.bytes_free = cg->room_bytes;
	ev.eta_ms = cg->eta_ms;
	if (type == UMM_EVENT_RELIEF) {
		umm_broadcast_within(&ev, cg->memcg, UMM_FEATURE_RELIEF);
		return;
	}
	target = umm_cg_bp_of(cg->limit_bytes,
			      umm.cg_low_bp + umm.hysteresis_bp);
	umm_ask_within(&ev, cg->memcg,
		       target > cg->room_bytes ? target - cg->room_bytes : 0,
		       UMM_ASK_RESIDENT | UMM_ASK_INFO);
}

/*
 * OOM kills of tasks in @m or below, whichever OOM chose them (its own
 * limit, an ancestor's, the whole system's): memory.events' oom_kill.
 * memcg_memory_event() counts it in this array on 6.1 and 6.12, and no
 * exported function reads it.
 */
static u64 umm_memcg_oom_kills(struct mem_cgroup *m)
{
	return atomic_long_read(&m->memory_events[MEMCG_OOM_KILL]);
}

/*
 * The memory cgroup OOM path calls no notifier a module can join: its
 * kills are found here, after the fact, and told to the clients in the
 * cgroup (those that the kill spared).
 */
static void umm_cgroup_oom_check(struct umm_cgroup *cg)
{
	u64 kills = umm_memcg_oom_kills(cg->memcg);
	struct umm_event ev;

	if (kills == cg->oom_kills)
		return;
	cg->oom_kills = kills;
	if (!READ_ONCE(umm.enabled))
		return;
	umm_event_init(&ev, UMM_EVENT_OOM, UMM_TIER_CGROUP,
		       lower_32_bits(cg->id));
	ev.tier_id_hi = upper_32_bits(cg->id);
	ev.level = cg->src.level;
	ev.bytes_free = cg->room_bytes;
	ev.eta_ms = cg->eta_ms;
	if (umm_broadcast_within(&ev, cg->memcg, 0))
		atomic64_inc(&cg->src.events);
}

/**
 * umm_memcg_books() - add (@sign > 0) or take away what a client declared
 * reclaimable on host nodes to or from its cgroup's sum.
 * @c:		the client.
 * @sign:	direction.
 *
 * Each watch sums its own clients (src.reclaimable), so that QUERY adds
 * up cgroups, not clients.
 *
 * Context: umm.mutex and umm.lock held.
 */
void umm_memcg_books(struct umm_client *c, int sign)
{
	u64 v;

	lockdep_assert_held(&umm.lock);
	if (!c->cg)
		return;
	v = umm_client_host(c, true);
	if (sign > 0)
		umm_sum_add(&c->cg->src.reclaimable, v);
	else
		umm_sum_sub(&c->cg->src.reclaimable, v);
}

static void umm_cgroup_put(struct umm_cgroup *cg)
{
	lockdep_assert_held(&umm.mutex);
	if (--cg->clients)
		return;
	spin_lock(&umm.lock);
	list_del(&cg->list);
	umm.nr_cgroups--;
	spin_unlock(&umm.lock);
	hash_del(&cg->hash);
	css_put(&cg->memcg->css);
	kfree(cg);
}

/*
 * Tie @c to @memcg (NULL: to none), whose reference this takes over: the
 * watch keeps one per cgroup. On -ENOMEM @c stays where it was and the next
 * sample tries again.
 */
static int umm_memcg_tie(struct umm_client *c, struct mem_cgroup *memcg)
{
	struct umm_cgroup *cg = NULL, *old = c->cg;

	if (memcg) {
		cg = umm_cgroup_find(memcg);
		if (cg) {
			css_put(&memcg->css);
		} else {
			/* no reclaim under umm.mutex (umm_internal.h) */
			cg = kzalloc(sizeof(*cg), GFP_NOWAIT | __GFP_NOWARN);
			if (!cg) {
				css_put(&memcg->css);
				return -ENOMEM;
			}
			cg->memcg = memcg;
			cg->id = cgroup_id(memcg->css.cgroup);
			cg->eta_ms = UMM_ETA_UNKNOWN;
			cg->room_bytes = U64_MAX;
			cg->limit_bytes = U64_MAX;
			cg->src.level = UMM_LEVEL_NORMAL;
			cg->src.announced = UMM_LEVEL_NORMAL;
			cg->oom_kills = umm_memcg_oom_kills(memcg);
			atomic64_set(&cg->src.events, 0);
			umm_cgroup_sample(cg, ktime_get_ns());
			spin_lock(&umm.lock);
			list_add_tail(&cg->list, &umm.cgroups);
			umm.nr_cgroups++;
			spin_unlock(&umm.lock);
			hash_add(umm.cgroup_hash, &cg->hash,
				 (unsigned long)memcg);
		}
		cg->clients++;
	}
	spin_lock(&umm.lock);
	umm_memcg_books(c, -1);
	c->cg = cg;
	umm_memcg_books(c, 1);
	spin_unlock(&umm.lock);
	if (old)
		umm_cgroup_put(old);
	return 0;
}

/**
 * umm_memcg_follow() - tie a client to the cgroup its process is in now.
 * @c:		a ready client.
 *
 * Clients without UMM_FEATURE_CGROUP, or with no memory controller on
 * cgroup v2, are tied to none; so is a process in the root cgroup (it has
 * no limit).
 *
 * Context: umm.mutex held; may sleep (allocates a watch).
 */
void umm_memcg_follow(struct umm_client *c)
{
	struct mem_cgroup *memcg = NULL;

	lockdep_assert_held(&umm.mutex);
	if ((c->features & UMM_FEATURE_CGROUP) && umm_memcg_available())
		memcg = umm_memcg_of(c);
	if (c->cg && c->cg->memcg == memcg) {
		css_put(&memcg->css);
		return;
	}
	if (!memcg && !c->cg)
		return;
	umm_memcg_tie(c, memcg);
}

/**
 * umm_memcg_untie() - drop a client's cgroup (it is being released).
 * @c:		the client.
 *
 * Context: umm.mutex held.
 */
void umm_memcg_untie(struct umm_client *c)
{
	lockdep_assert_held(&umm.mutex);
	umm_memcg_tie(c, NULL);
}

/**
 * umm_memcg_sample_all() - follow every client to its cgroup, sample every
 * watched cgroup and tell clients of the changes.
 * @now:	ktime_get_ns() of this sample.
 *
 * Context: umm.mutex held (the sampling work).
 */
void umm_memcg_sample_all(u64 now)
{
	struct umm_cgroup *cg;
	struct umm_client *c;

	lockdep_assert_held(&umm.mutex);
	/* umm.mutex keeps the list as it is: only its holders change it */
	list_for_each_entry(c, &umm.clients, list)
		if (c->cg || (c->features & UMM_FEATURE_CGROUP))
			umm_memcg_follow(c);
	list_for_each_entry(cg, &umm.cgroups, list)
		umm_cgroup_sample(cg, now);
	list_for_each_entry(cg, &umm.cgroups, list)
		umm_cgroup_announce(cg, now);
	list_for_each_entry(cg, &umm.cgroups, list)
		umm_cgroup_oom_check(cg);
}

/**
 * umm_memcg_next_ns() - how soon a watched cgroup needs its next sample.
 *
 * Half the time it would take, at its current fill rate, to reach its next
 * threshold, or, at the fastest fill seen on any source, to run out of
 * room (the OOM kill of the cgroup); whichever comes first.
 *
 * Context: umm.mutex held, after umm_memcg_sample_all().
 * Return: ns, U64_MAX when no cgroup is filling or limited.
 */
u64 umm_memcg_next_ns(void)
{
	u64 best = U64_MAX, t;
	struct umm_cgroup *cg;

	lockdep_assert_held(&umm.mutex);
	list_for_each_entry(cg, &umm.cgroups, list) {
		s64 rate = max(cg->fill_bps, cg->fill_now_bps);
		u32 bp = 0;

		if (!cg->binding)
			continue;
		t = mul_u64_u64_div_u64(cg->room_bytes, NSEC_PER_SEC,
					max(umm.fill_peak_bps,
					    UMM_FILL_BPS_MIN));
		best = min(best, t / 2);
		switch (cg->src.level) {
		case UMM_LEVEL_NORMAL:
			bp = umm.cg_low_bp;
			break;
		case UMM_LEVEL_LOW:
			bp = umm.cg_medium_bp;
			break;
		case UMM_LEVEL_MEDIUM:
			bp = umm.cg_critical_bp;
			break;
		}
		if (bp && rate > 0) {
			u64 at = umm_cg_bp_of(cg->limit_bytes, bp);

			t = cg->room_bytes > at ?
			    mul_u64_u64_div_u64(cg->room_bytes - at,
						NSEC_PER_SEC, rate) : 0;
			best = min(best, t / 2);
		}
	}
	return best;
}

/* What the clients tied to @top and to watched cgroups below it declared. */
static u64 umm_cgroup_subtree_reclaimable(struct umm_cgroup *top)
{
	struct umm_cgroup *cg;
	u64 sum = 0;

	list_for_each_entry(cg, &umm.cgroups, list)
		if (mem_cgroup_is_descendant(cg->memcg, top->memcg))
			sum = umm_add_sat(sum,
					  umm_sum_read(&cg->src.reclaimable));
	return sum;
}

/*
 * Tenants apart: a client sees its own cgroup and those below it, which
 * are inside its cgroup namespace too (the namespace's root is at or above
 * its cgroup). A client tied to none is in the root cgroup: it sees them
 * all only with CAP_SYS_ADMIN, as the host's administrator.
 */
static bool umm_cgroup_visible(struct umm_cgroup *cg, struct umm_client *c,
			       bool admin)
{
	if (!c->cg)
		return admin;
	return mem_cgroup_is_descendant(cg->memcg, c->cg->memcg);
}

/**
 * umm_memcg_level_info() - QUERY's entries for the watched cgroups a
 * client may see.
 * @c:		the client asking (tied to its cgroup as of now).
 * @li:		room for @room entries, zeroed.
 * @room:	entries at @li.
 *
 * O(watched cgroups^2), whatever the number of clients; umm.lock is not
 * needed: the sums change under umm.mutex too.
 *
 * Context: umm.mutex held; the caller's process context (capable()).
 * Return: the number of entries that exist; the first @room are written.
 */
u32 umm_memcg_level_info(struct umm_client *c, struct umm_level_info *li,
			 u32 room)
{
	bool admin = !c->cg && capable(CAP_SYS_ADMIN);
	struct umm_cgroup *cg;
	u32 n = 0;

	lockdep_assert_held(&umm.mutex);
	list_for_each_entry(cg, &umm.cgroups, list) {
		if (!umm_cgroup_visible(cg, c, admin))
			continue;
		if (n >= room) {
			n++;
			continue;
		}
		li[n].tier_type = UMM_TIER_CGROUP;
		li[n].tier_id = lower_32_bits(cg->id);
		li[n].tier_id_hi = upper_32_bits(cg->id);
		li[n].level = cg->src.level;
		if (cg->binding)
			li[n].flags |= UMM_LEVEL_F_BUDGET;
		li[n].free_bytes = cg->room_bytes;
		li[n].total_bytes = cg->binding ? cg->limit_bytes : 0;
		li[n].used_bytes = cg->usage_bytes;
		li[n].reclaimable_bytes = umm_cgroup_subtree_reclaimable(cg);
		li[n].eta_ms = cg->eta_ms;
		n++;
	}
	return n;
}

#else /* !CONFIG_MEMCG */

void umm_memcg_follow(struct umm_client *c)
{
}

void umm_memcg_untie(struct umm_client *c)
{
}

void umm_memcg_sample_all(u64 now)
{
}

void umm_memcg_books(struct umm_client *c, int sign)
{
}

u64 umm_memcg_next_ns(void)
{
	return U64_MAX;
}

u32 umm_memcg_level_info(struct umm_client *c, struct umm_level_info *li,
			 u32 room)
{
	return 0;
}

#endif /* CONFIG_MEMCG */
