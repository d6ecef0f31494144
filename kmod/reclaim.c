// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own reclaim and OOM paths as sources: a NUMA-aware
 * shrinker and an OOM notifier.
 *
 * The shrinker has no objects: what clients declared reclaimable is
 * theirs to free, later, and the kernel cannot take it back through us.
 * So its count is always 0 (scan is never called), and the call itself is
 * the news: reclaim runs on that node. The count marks the node in a
 * nodemask and queues a work item, lockless and without walking anything;
 * the work, in process context, asks the node's clients (SHRINK) if the
 * node is short -- below its zones' high watermarks, where kswapd and
 * direct reclaim run. drop_caches and proactive reclaim (memory.reclaim)
 * call shrinkers on nodes that are not short, and ask nobody.
 *
 * The OOM notifier queues its events too and returns at once. It sleeps
 * for no one and tells out_of_memory() that nothing was freed: it runs
 * under the kernel's oom_lock, which every memory cgroup's OOM of the
 * system takes as well, and what a client says in a REPORT (bytes moved
 * between nodes, say) is no page the kernel can see freed. The time
 * clients get comes earlier, from the levels and SHRINK; an OOM that
 * comes anyway goes ahead. What an OOM event asks for helps the next
 * allocation, not this one.
 *
 * The shrinker API changed in 6.7 (shrinker_alloc/shrinker_register/
 * shrinker_free instead of an embedded struct and register_shrinker); Kbuild
 * probes the kernel's shrinker.h and defines UMM_HAVE_SHRINKER_ALLOC.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/mmzone.h>
#include <linux/nodemask.h>
#include <linux/notifier.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/shrinker.h>
#include <linux/workqueue.h>

#include "umm_internal.h"

static u64 umm_oom_last_ns;	/* under umm.lock */

/**
 * umm_shrink_node() - ask clients holding reclaimable bytes on a node for
 * some of them back.
 * @nid:	the node.
 * @bytes:	how far the node is below its high watermarks. Since at most
 *		one SHRINK per node goes out per event_min_interval_ms, at
 *		least 1/16 of what the clients declared reclaimable there is
 *		asked for.
 * @injected:	from the inject file: mark the events, ignore the rate limit.
 *
 * Context: process context (the shrinker's work, the inject file); never
 * sleeps.
 */
void umm_shrink_node(int nid, u64 bytes, bool injected)
{
	struct umm_event ev;
	struct umm_node *n;
	bool ok;

	if (nid < 0 || nid >= nr_node_ids || !umm.nodes[nid] ||
	    !READ_ONCE(umm.enabled))
		return;
	n = umm.nodes[nid];

	spin_lock(&umm.lock);
	ok = umm_rate_ok(&n->last_shrink_ns, ktime_get_ns(), injected);
	bytes = max(bytes, umm_sum_read(&n->src.reclaimable) / 16);
	spin_unlock(&umm.lock);
	if (!ok)
		return;

	umm_event_init(&ev, UMM_EVENT_SHRINK, UMM_TIER_HOST_NODE, nid);
	ev.level = READ_ONCE(n->src.level);
	ev.bytes_free = READ_ONCE(n->avail_bytes);
	ev.dest_node = umm_dest_node(nid);
	ev.eta_ms = READ_ONCE(n->eta_ms);
	if (injected)
		ev.flags |= UMM_EVENT_F_INJECTED;
	if (umm_ask(&ev, bytes, 0))
		atomic64_inc(&n->src.events);
}

/**
 * umm_oom() - tell every client with reclaimable host memory to give all of
 * it back: the OOM killer is about to choose a victim.
 * @injected:	from the inject file: mark the events, ignore the rate limit.
 *
 * Context: any process context including the OOM path; never sleeps.
 */
void umm_oom(bool injected)
{
	struct umm_event tmpl, ev;
	struct umm_client *c;
	struct umm_node *n;
	int nid;

	if (!READ_ONCE(umm.enabled))
		return;
	umm_event_init(&tmpl, UMM_EVENT_OOM, UMM_TIER_NONE, 0);
	tmpl.level = UMM_LEVEL_CRITICAL;
	tmpl.dest_node = umm_dest_node(-1);
	tmpl.eta_ms = 0;
	tmpl.flags = UMM_EVENT_F_ACK | (injected ? UMM_EVENT_F_INJECTED : 0);

	spin_lock(&umm.lock);
	if (!umm_rate_ok(&umm_oom_last_ns, tmpl.ts_ns, injected))
		goto unlock;
	list_for_each_entry(c, &umm.clients, list) {
		u64 bytes = 0;

		for_each_umm_node(n, nid)
			bytes = umm_add_sat(bytes, c->nodes[nid].reclaimable);
		if (!bytes)
			continue;
		ev = tmpl;
		ev.bytes_to_free = bytes;
		umm_client_queue(c, &ev);
	}
unlock:
	spin_unlock(&umm.lock);
}

static nodemask_t umm_shrink_nodes;	/* reclaim seen, not looked at yet */

/*
 * The node's free pages against its zones' high watermarks (boost
 * included: a boosted zone is being reclaimed): bytes short, 0 for none.
 */
static u64 umm_node_short_bytes(int nid)
{
	unsigned long free = 0, high = 0;
	struct zone *zone;
	int i;

	for (i = 0; i < MAX_NR_ZONES; i++) {
		zone = &NODE_DATA(nid)->node_zones[i];
		if (!managed_zone(zone))
			continue;
		free += zone_page_state(zone, NR_FREE_PAGES);
		high += high_wmark_pages(zone);
	}
	return free < high ? (u64)(high - free) << PAGE_SHIFT : 0;
}

static void umm_shrink_work_fn(struct work_struct *work)
{
	u64 bytes;
	int nid;

	for_each_node_mask(nid, umm_shrink_nodes) {
		node_clear(nid, umm_shrink_nodes);
		bytes = umm_node_short_bytes(nid);
		if (bytes)
			umm_shrink_node(nid, bytes, false);
	}
}

static DECLARE_WORK(umm_shrink_work, umm_shrink_work_fn);

static unsigned long umm_shrink_count(struct shrinker *s,
				      struct shrink_control *sc)
{
	struct umm_node *n;

	atomic64_inc(&umm.stats.shrinker_calls);
	if (!READ_ONCE(umm.enabled) || sc->nid < 0 ||
	    sc->nid >= nr_node_ids)
		return 0;
	n = umm.nodes[sc->nid];
	if (n && umm_sum_read(&n->src.reclaimable) &&
	    !node_test_and_set(sc->nid, umm_shrink_nodes))
		queue_work(system_highpri_wq, &umm_shrink_work);
	return 0;
}

static unsigned long umm_shrink_scan(struct shrinker *s,
				     struct shrink_control *sc)
{
	return SHRINK_STOP;	/* never called: the count is 0 */
}

/*
 * Sample now, so that a node the OOM killer is about to act for reads (and
 * is announced) CRITICAL first, however fast it filled since the last
 * sample. umm_reclaim_exit() runs before umm_monitor_stop(): the work is
 * still there.
 */
static void umm_oom_sample_now(void)
{
	if (READ_ONCE(umm.running))
		mod_delayed_work(system_highpri_wq, &umm.work, 0);
}

static int umm_oom_notify(struct notifier_block *nb, unsigned long unused,
			  void *arg)
{
	/* @arg, the pages freed, is left alone: see the top of this file */
	atomic64_inc(&umm.stats.oom_calls);
	umm_oom(false);
	umm_oom_sample_now();
	return NOTIFY_OK;
}

static struct notifier_block umm_oom_nb = {
	.notifier_call = umm_oom_notify,
};

#ifdef UMM_HAVE_SHRINKER_ALLOC
static struct shrinker *umm_shrinker;

static int umm_shrinker_register(void)
{
	umm_shrinker = shrinker_alloc(SHRINKER_NUMA_AWARE, "umm");
	if (!umm_shrinker)
		return -ENOMEM;
	umm_shrinker->count_objects = umm_shrink_count;
	umm_shrinker->scan_objects = umm_shrink_scan;
	umm_shrinker->seeks = DEFAULT_SEEKS;
	shrinker_register(umm_shrinker);
	return 0;
}

static void umm_shrinker_unregister(void)
{
	shrinker_free(umm_shrinker);
}
#else
static struct shrinker umm_shrinker = {
	.count_objects	= umm_shrink_count,
	.scan_objects	= umm_shrink_scan,
	.seeks		= DEFAULT_SEEKS,
	.flags		= SHRINKER_NUMA_AWARE,
};

static int umm_shrinker_register(void)
{
	return register_shrinker(&umm_shrinker, "umm");
}

static void umm_shrinker_unregister(void)
{
	unregister_shrinker(&umm_shrinker);
}
#endif

/**
 * umm_reclaim_init() - register the shrinker and the OOM notifier.
 *
 * Return: 0 or a negative errno; nothing stays registered on failure.
 */
int umm_reclaim_init(void)
{
	int ret;

	ret = umm_shrinker_register();
	if (ret)
		return ret;
	ret = register_oom_notifier(&umm_oom_nb);
	if (ret)
		goto unregister_shrinker;
	return 0;

unregister_shrinker:
	umm_shrinker_unregister();
	return ret;
}

/**
 * umm_reclaim_exit() - unregister both; waits for calls in progress.
 */
void umm_reclaim_exit(void)
{
	unregister_oom_notifier(&umm_oom_nb);
	umm_shrinker_unregister();
	cancel_work_sync(&umm_shrink_work);
}
