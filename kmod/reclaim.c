// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's own reclaim and OOM paths as sources: a
 * NUMA-aware shrinker whose objects are the pages clients declared
 * reclaimable on a node, and an OOM notifier. The shrinker only queues
 * events: it runs in reclaim context, so it takes spinlocks only, never
 * sleeps and never waits for userspace (which may itself be waiting for
 * this reclaim).
 *
 * The OOM notifier queues its events too, then waits, holding no lock of
 * ours, up to oom_wait_ms for clients to give host memory back, and tells
 * out_of_memory() what they gave (its "freed" pages): the allocation is
 * retried instead of a task killed. A fill faster than clients can move
 * their bytes away (move_pages at 40-300 MiB/s in the VM rig, fills at
 * 256 MiB/s and more) is so held back to the pace of the clients while
 * they still give, and no longer: a wait that sees nothing given, or an
 * OOM put off for longer than UMM_OOM_WAITS_MAX waits in a row, lets the
 * OOM killer go on. The notifier chain may sleep (virtio_balloon's does
 * I/O there) and the wait is bounded, so a client that cannot run (its
 * own allocation may be the one waiting) costs a delay, not a deadlock.
 *
 * The shrinker API changed in 6.7 (shrinker_alloc/shrinker_register/
 * shrinker_free instead of an embedded struct and register_shrinker); Kbuild
 * probes the kernel's shrinker.h and defines UMM_HAVE_SHRINKER_ALLOC.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ktime.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/notifier.h>
#include <linux/oom.h>
#include <linux/sched.h>
#include <linux/shrinker.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "umm_internal.h"

static u64 umm_oom_last_ns;	/* under umm.lock */

/*
 * An OOM put off this many waits in a row goes ahead even while clients
 * say they give: bytes moved back and forth must not hold it off forever.
 */
#define UMM_OOM_WAITS_MAX	16

/* The OOM notifier's runs are serialised by the kernel's oom_lock. */
static u64 umm_oom_put_off_ns;	/* first call put off in a row, or 0 */
static u64 umm_oom_call_ns;	/* the previous call */

/**
 * umm_shrink_node() - ask clients holding reclaimable bytes on a node for
 * some of them back.
 * @nid:	the node.
 * @bytes:	what reclaim asked for. Since at most one SHRINK per node goes
 *		out per event_min_interval_ms, at least 1/16 of what the
 *		clients declared reclaimable there is asked for.
 * @injected:	from the inject file: mark the events, ignore the rate limit.
 *
 * Context: any process context including direct reclaim; never sleeps.
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

/*
 * Reclaim (kswapd, direct, memory.reclaim) runs with a reclaim state;
 * drop_caches calls shrinkers without one. Nobody is short of memory then
 * and clients' bytes are no cache: each "echo 3 > drop_caches" asked every
 * client for what it declared.
 */
static bool umm_in_reclaim(void)
{
	return current->reclaim_state != NULL;
}

static unsigned long umm_shrink_count(struct shrinker *s,
				      struct shrink_control *sc)
{
	struct umm_node *n;

	if (!READ_ONCE(umm.enabled) || sc->nid < 0 ||
	    sc->nid >= nr_node_ids || !umm_in_reclaim())
		return 0;
	n = umm.nodes[sc->nid];
	return n ? umm_sum_read(&n->src.reclaimable) >> PAGE_SHIFT : 0;
}

static unsigned long umm_shrink_scan(struct shrinker *s,
				     struct shrink_control *sc)
{
	atomic64_inc(&umm.stats.shrinker_calls);
	if (!umm_in_reclaim())
		return SHRINK_STOP;
	umm_shrink_node(sc->nid, (u64)sc->nr_to_scan << PAGE_SHIFT, false);
	/* nothing is freed here; userspace frees later, on its own time */
	return SHRINK_STOP;
}

/**
 * umm_oom_given() - a client gave host memory back: count it for the OOM
 * notifier and wake it if it waits.
 * @bytes:	how much its holdings on host nodes fell.
 *
 * Context: any; takes no lock.
 */
void umm_oom_given(u64 bytes)
{
	if (!bytes)
		return;
	atomic64_set(&umm.oom_given_ns, ktime_get_ns());
	atomic64_add(min_t(u64, bytes, S64_MAX >> 1), &umm.oom_given);
	wake_up_all(&umm.oom_wq);
}

/* Does any client still declare host memory it could give back? */
static bool umm_oom_anything_to_give(void)
{
	struct umm_node *n;
	u64 sum = 0;
	int nid;

	spin_lock(&umm.lock);
	for_each_umm_node(n, nid)
		sum = umm_add_sat(sum, umm_sum_read(&n->src.reclaimable));
	spin_unlock(&umm.lock);
	return sum != 0;
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

/*
 * The pages to tell out_of_memory() it got back: what clients gave within
 * the wait (or in the wait before, not yet counted), else 0 and the OOM
 * killer goes on.
 */
static unsigned long umm_oom_wait(void)
{
	u64 wait_ns = (u64)READ_ONCE(umm.oom_wait_ms) * NSEC_PER_MSEC;
	u64 now = ktime_get_ns(), given;

	if (!wait_ns || !READ_ONCE(umm.enabled))
		goto go_on;
	/* given before the previous call's wait, or long ago: not for this */
	if (now - (u64)atomic64_read(&umm.oom_given_ns) > wait_ns)
		atomic64_set(&umm.oom_given, 0);
	if (!umm_oom_put_off_ns || now - umm_oom_call_ns > 2 * wait_ns)
		umm_oom_put_off_ns = now;
	umm_oom_call_ns = now;
	if (now - umm_oom_put_off_ns > UMM_OOM_WAITS_MAX * wait_ns)
		goto go_on;
	if (!atomic64_read(&umm.oom_given) && !umm_oom_anything_to_give())
		goto go_on;
	wait_event_timeout(umm.oom_wq, atomic64_read(&umm.oom_given) > 0,
			   nsecs_to_jiffies(wait_ns));
	given = atomic64_xchg(&umm.oom_given, 0);
	if (!given)
		goto go_on;
	atomic64_inc(&umm.stats.oom_deferred);
	return max_t(unsigned long, given >> PAGE_SHIFT, 1);

go_on:
	umm_oom_put_off_ns = 0;
	return 0;
}

static int umm_oom_notify(struct notifier_block *nb, unsigned long unused,
			  void *arg)
{
	unsigned long *freed = arg;

	atomic64_inc(&umm.stats.oom_calls);
	umm_oom(false);
	umm_oom_sample_now();
	*freed += umm_oom_wait();
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
}
