// SPDX-License-Identifier: GPL-2.0
/*
 * Levels of the sources: available memory of every node against its
 * watermarks, sampled by a delayed work while clients are ready (which
 * samples the watched memory cgroups of memcg.c too, and comes sooner as
 * a source nears its next level or fills fast), and clients' GPU usage
 * against the GPU budgets; the enabled switch; levels held by hand (for
 * inject.c).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kernel.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/minmax.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "umm_internal.h"

static const char * const umm_level_names[] = {
	[UMM_LEVEL_INVALID]	= "invalid",
	[UMM_LEVEL_NORMAL]	= "normal",
	[UMM_LEVEL_LOW]		= "low",
	[UMM_LEVEL_MEDIUM]	= "medium",
	[UMM_LEVEL_CRITICAL]	= "critical",
};

/**
 * umm_level_name() - the word for a level, as sysfs shows it.
 * @level:	enum umm_level.
 *
 * Return: a static string.
 */
const char *umm_level_name(u32 level)
{
	if (level >= ARRAY_SIZE(umm_level_names))
		level = UMM_LEVEL_INVALID;
	return umm_level_names[level];
}

/**
 * umm_node_critical_bytes() - the critical threshold of a node.
 * @n:		the node.
 *
 * No floor is needed under it: available memory already leaves out the
 * kernel's reserve (its high watermarks), so even a critical_bp of 1
 * stands above the point where kswapd starts, and well above min, where
 * allocations stall and the OOM killer is next.
 *
 * Context: any; reads the last sample without locks.
 * Return: bytes of available memory; the node is CRITICAL below them.
 */
u64 umm_node_critical_bytes(struct umm_node *n)
{
	return umm_bp_of(READ_ONCE(n->total_bytes), READ_ONCE(n->critical_bp));
}

/* The watermark of a level; an injected level acts as if memory sat here. */
static u32 umm_node_wm(struct umm_node *n, u32 level)
{
	switch (level) {
	case UMM_LEVEL_LOW:
		return n->low_bp;
	case UMM_LEVEL_MEDIUM:
		return n->medium_bp;
	case UMM_LEVEL_CRITICAL:
		return n->critical_bp;
	default:
		return UMM_BP_MAX;
	}
}

/* Level of a node whose available memory is @free_bp basis points. */
static u32 umm_node_level_of(struct umm_node *n, s64 free_bp)
{
	if (free_bp < n->critical_bp)
		return UMM_LEVEL_CRITICAL;
	if (free_bp < n->medium_bp)
		return UMM_LEVEL_MEDIUM;
	if (free_bp < n->low_bp)
		return UMM_LEVEL_LOW;
	return UMM_LEVEL_NORMAL;
}

/*
 * Rise at once; fall only once available memory is hysteresis_bp above the
 * watermark of the level left, so a node hovering at a watermark does not
 * flap.
 */
static u32 umm_node_level(struct umm_node *n)
{
	s64 free_bp;
	u32 raw, cur = n->src.level;

	if (!n->total_bytes)
		return UMM_LEVEL_NORMAL;
	free_bp = div64_u64(n->avail_bytes * UMM_BP_MAX, n->total_bytes);
	raw = umm_node_level_of(n, free_bp);
	if (raw >= cur)
		return raw;
	return min(cur, umm_node_level_of(n, free_bp - umm.hysteresis_bp));
}

/*
 * What a node could give without an OOM kill, as si_mem_available()
 * reckons it for the whole machine: the free pages above the kernel's
 * reserve (high watermarks and lowmem reserves), plus the page cache and
 * the reclaimable kernel memory that reclaim drops cheaply, less the part
 * of each that must stay (half of it, or the node's low watermarks,
 * whichever is less).
 */
static u64 umm_node_avail(const struct umm_node_mem *m)
{
	unsigned long cache = m->file, slab = m->slab;
	long avail = (long)m->free - (long)m->reserve;

	cache -= min(cache / 2, m->wmark_low);
	slab -= min(slab / 2, m->wmark_low);
	avail += cache + slab;
	return avail > 0 ? (u64)avail << PAGE_SHIFT : 0;
}

/*
 * The fastest fill seen lately on any source. It falls to 1/e of itself
 * in UMM_FILL_HALF_LIFE_MS without a faster fill (the decay is applied per
 * sample, as h / (h + dt), which compounds to that), so one burst does not
 * keep the sampling quick for ever.
 */
static void umm_fill_peak_decay(u64 now)
{
	u64 h = (u64)UMM_FILL_HALF_LIFE_MS * NSEC_PER_MSEC, dt;

	if (umm.peak_ns && now > umm.peak_ns) {
		dt = now - umm.peak_ns;
		umm.fill_peak_bps = mul_u64_u64_div_u64(umm.fill_peak_bps, h,
							h + dt);
	}
	umm.peak_ns = now;
}

static void umm_node_sample(struct umm_node *n, u64 now)
{
	struct umm_node_mem m;
	u64 avail, crit;
	s64 rate;

	umm_node_mem_read(n->nid, &m);
	avail = umm_node_avail(&m);

	if (n->sample_ns && now > n->sample_ns) {
		u64 dt = now - n->sample_ns;

		if (n->avail_bytes >= avail)
			rate = mul_u64_u64_div_u64(n->avail_bytes - avail,
						   NSEC_PER_SEC, dt);
		else
			rate = -(s64)mul_u64_u64_div_u64(avail - n->avail_bytes,
							 NSEC_PER_SEC, dt);
		/* EWMA, weight 1/4: follows a fill within a few samples */
		n->decline_bps += (rate - n->decline_bps) / 4;
		n->decline_now_bps = rate;
		if (n->decline_bps > 0)
			umm.fill_peak_bps = max_t(u64, umm.fill_peak_bps,
						  n->decline_bps);
	}
	WRITE_ONCE(n->free_bytes, (u64)m.free << PAGE_SHIFT);
	WRITE_ONCE(n->avail_bytes, avail);
	WRITE_ONCE(n->total_bytes, (u64)m.managed << PAGE_SHIFT);
	n->sample_ns = now;

	crit = umm_node_critical_bytes(n);
	if (avail <= crit)
		WRITE_ONCE(n->eta_ms, 0);
	else if (n->decline_bps <= 0)
		WRITE_ONCE(n->eta_ms, UMM_ETA_UNKNOWN);
	else
		WRITE_ONCE(n->eta_ms,
			   min_t(u64, div64_u64((avail - crit) * MSEC_PER_SEC,
						n->decline_bps),
				 UMM_ETA_UNKNOWN - 1));
}

static void umm_node_announce(struct umm_node *n, u64 now, bool injected)
{
	u64 free = n->avail_bytes, target;
	struct umm_event ev;
	u32 type;

	type = umm_source_event(&n->src, UMM_EVENT_PRESSURE, now, injected);
	if (!type)
		return;
	/* an injected level acts as if available memory sat at its watermark */
	if (n->src.injected && n->src.injected != UMM_LEVEL_NORMAL)
		free = min(free, umm_bp_of(n->total_bytes,
					   umm_node_wm(n, n->src.injected)));

	umm_event_init(&ev, type, UMM_TIER_HOST_NODE, n->nid);
	ev.level = n->src.level;
	ev.bytes_free = free;
	ev.dest_node = umm_dest_node(n->nid);
	ev.eta_ms = n->src.injected ? UMM_ETA_UNKNOWN : n->eta_ms;
	if (n->src.injected)
		ev.flags |= UMM_EVENT_F_INJECTED;
	if (type == UMM_EVENT_RELIEF) {
		umm_broadcast(&ev, UMM_FEATURE_RELIEF);
		return;
	}
	target = umm_bp_of(n->total_bytes, n->low_bp + umm.hysteresis_bp);
	umm_ask(&ev, target > free ? target - free : 0,
		UMM_ASK_RESIDENT | UMM_ASK_INFO);
}

/* Excess asked for by an injected GPU level: 1/8, 1/4, 1/2 of the usage. */
static u64 umm_gpu_injected_excess(u32 level, u64 used)
{
	switch (level) {
	case UMM_LEVEL_LOW:
		return used / 8;
	case UMM_LEVEL_MEDIUM:
		return used / 4;
	case UMM_LEVEL_CRITICAL:
		return used / 2;
	default:
		return 0;
	}
}

/**
 * umm_gpu_check() - compare a GPU's reported usage with its budget.
 * @g:		the GPU.
 * @injected:	called by the inject file: ignore the rate limit.
 *
 * Over budget the level is CRITICAL and the excess is asked of the clients
 * holding bytes there, lowest priority first.
 *
 * Context: umm.mutex held.
 */
void umm_gpu_check(struct umm_gpu *g, bool injected)
{
	u64 now = ktime_get_ns(), used, budget, excess = 0;
	struct umm_event ev;
	u32 type;

	lockdep_assert_held(&umm.mutex);
	spin_lock(&umm.lock);
	used = umm_sum_read(&g->src.resident);
	spin_unlock(&umm.lock);
	budget = g->budget_bytes;
	if (budget && used > budget)
		excess = used - budget;

	if (g->src.injected) {
		g->src.level = g->src.injected;
		excess = max(excess,
			     umm_gpu_injected_excess(g->src.injected, used));
	} else {
		g->src.level = excess ? UMM_LEVEL_CRITICAL : UMM_LEVEL_NORMAL;
	}

	type = umm_source_event(&g->src, UMM_EVENT_GPU_BUDGET, now, injected);
	if (!type)
		return;
	umm_event_init(&ev, type, UMM_TIER_GPU, g->id);
	ev.level = g->src.level;
	ev.bytes_free = budget > used ? budget - used : 0;
	ev.dest_node = umm_dest_node(-1);
	if (g->src.injected)
		ev.flags |= UMM_EVENT_F_INJECTED;
	if (type == UMM_EVENT_RELIEF)
		umm_broadcast(&ev, UMM_FEATURE_RELIEF);
	else
		umm_ask(&ev, excess, UMM_ASK_RESIDENT | UMM_ASK_INFO);
}

static void umm_node_update(struct umm_node *n, u64 now)
{
	lockdep_assert_held(&umm.mutex);
	umm_node_sample(n, now);
	n->src.level = n->src.injected ? n->src.injected : umm_node_level(n);
	umm_node_announce(n, now, false);
}

/*
 * How soon a node needs its next sample: half the time it would take at
 * its current rate of decline to cross its next watermark, or at the
 * fastest fill seen lately on any source to use up its available memory
 * (past that, allocations reclaim what is not cheap and the OOM killer is
 * near). So a sample lands inside the band between the critical threshold
 * and the OOM kill even where a fill crosses it in less than interval_ms,
 * and a node far from its watermarks, or not declining, costs one sample
 * per interval_ms.
 */
static u64 umm_node_next_ns(struct umm_node *n)
{
	s64 rate = max(n->decline_bps, n->decline_now_bps);
	u64 free = n->avail_bytes, at = 0, t, best;

	best = mul_u64_u64_div_u64(free, NSEC_PER_SEC,
				   max(umm.fill_peak_bps, UMM_FILL_BPS_MIN)) / 2;
	switch (n->src.level) {
	case UMM_LEVEL_NORMAL:
		at = umm_bp_of(n->total_bytes, n->low_bp);
		break;
	case UMM_LEVEL_LOW:
		at = umm_bp_of(n->total_bytes, n->medium_bp);
		break;
	case UMM_LEVEL_MEDIUM:
		at = umm_node_critical_bytes(n);
		break;
	default:
		return best;
	}
	if (rate <= 0)
		return best;
	t = free > at ? mul_u64_u64_div_u64(free - at, NSEC_PER_SEC, rate) : 0;
	return min(best, t / 2);
}

/*
 * The sampling work runs on the high-priority system workqueue: its
 * kworkers run at nice -20, so a sample (and the events it raises) does not
 * queue behind other work of system_wq on a busy machine, which put the
 * p99 of an event's delivery at several times a plain wakeup's.
 */
static void umm_sample_after(unsigned long delay)
{
	umm.due_ns = ktime_get_ns() + jiffies_to_nsecs(delay + 1);
	queue_delayed_work(system_highpri_wq, &umm.work, delay);
}

/*
 * Every source is watched while a client is ready: any of them may be
 * asked about a node, and a watched cgroup has a client in it. With none,
 * nothing would hear a level, so the work stops until a handshake.
 */
static bool umm_watched(void)
{
	return umm.running && !list_empty(&umm.clients);
}

/* The least delay between samples: one jiffy at HZ=250 or lower. */
#define UMM_SAMPLE_MIN_MS	2

static void umm_work_fn(struct work_struct *work)
{
	u64 now, next, took;
	struct umm_node *n;
	u32 next_ms;
	int nid, i;

	mutex_lock(&umm.mutex);
	now = ktime_get_ns();
	umm_fill_peak_decay(now);
	if (umm.due_ns && now > umm.due_ns) {
		umm.late_ns_max = max(umm.late_ns_max, now - umm.due_ns);
		if (now - umm.due_ns > UMM_LATE_NS)
			umm.late_samples++;
	}
	next = (u64)umm.interval_ms * NSEC_PER_MSEC;
	for_each_umm_node(n, nid) {
		umm_node_update(n, now);
		next = min(next, umm_node_next_ns(n));
	}
	for (i = 0; i < UMM_MAX_GPUS; i++)
		umm_gpu_check(umm.gpus[i], false);
	umm_memcg_sample_all(now);
	next = min(next, umm_memcg_next_ns());
	next_ms = max_t(u64, div_u64(next, NSEC_PER_MSEC), UMM_SAMPLE_MIN_MS);

	took = ktime_get_ns() - now;
	umm.samples++;
	umm.sample_ns_sum = umm_add_sat(umm.sample_ns_sum, took);
	umm.sample_ns_max = max(umm.sample_ns_max, took);
	umm.sample_ns_last = took;
	umm.next_ms_last = next_ms;
	if (umm_watched())
		umm_sample_after(msecs_to_jiffies(next_ms));
	mutex_unlock(&umm.mutex);
}

/**
 * umm_node_check_wm() - are these watermarks acceptable?
 * @low:	low watermark, basis points.
 * @medium:	medium watermark, basis points.
 * @crit:	critical watermark, basis points.
 *
 * Return: 0 if low > medium > critical and low <= 10000, else -EINVAL.
 */
int umm_node_check_wm(u32 low, u32 medium, u32 crit)
{
	if (low > UMM_BP_MAX || low <= medium || medium <= crit)
		return -EINVAL;
	return 0;
}

/**
 * umm_set_enabled() - switch events on or off.
 * @on:		the new value of the enabled knob.
 *
 * Clients are told (DISABLED / ENABLED). On enable every source's announced
 * level is forgotten, so levels that are elevated now are announced again at
 * the next sample.
 *
 * Context: umm.mutex held.
 */
void umm_set_enabled(bool on)
{
	struct umm_cgroup *cg;
	struct umm_event ev;
	struct umm_node *n;
	int nid, i;

	lockdep_assert_held(&umm.mutex);
	if (umm.enabled == on)
		return;
	WRITE_ONCE(umm.enabled, on);
	umm_event_init(&ev, on ? UMM_EVENT_ENABLED : UMM_EVENT_DISABLED,
		       UMM_TIER_NONE, 0);
	umm_broadcast(&ev, 0);
	if (!on)
		return;
	for_each_umm_node(n, nid)
		n->src.announced = UMM_LEVEL_NORMAL;
	for (i = 0; i < UMM_MAX_GPUS; i++)
		umm.gpus[i]->src.announced = UMM_LEVEL_NORMAL;
	list_for_each_entry(cg, &umm.cgroups, list)
		cg->src.announced = UMM_LEVEL_NORMAL;
	umm_monitor_kick();
}

/**
 * umm_level_parse() - the level a word names, as sysfs shows them.
 * @word:	"normal", "low", "medium" or "critical".
 *
 * Return: enum umm_level, or -EINVAL.
 */
int umm_level_parse(const char *word)
{
	int level = match_string(umm_level_names, ARRAY_SIZE(umm_level_names),
				 word);

	return level <= UMM_LEVEL_INVALID ? -EINVAL : level;
}

/**
 * umm_node_hold() - hold a node at a level regardless of its samples, or
 * let it follow them again, and tell clients at once.
 * @n:		the node.
 * @level:	enum umm_level, or 0 to follow the samples.
 *
 * The event ignores the rate limit and carries UMM_EVENT_F_INJECTED.
 *
 * Context: umm.mutex held.
 */
void umm_node_hold(struct umm_node *n, u32 level)
{
	lockdep_assert_held(&umm.mutex);
	n->src.injected = level;
	n->src.level = level ? level : umm_node_level(n);
	umm_node_announce(n, ktime_get_ns(), true);
}

/**
 * umm_gpu_hold() - hold a GPU at a level regardless of its budget, or let
 * it follow the budget again, and tell clients at once.
 * @g:		the GPU.
 * @level:	enum umm_level, or 0 to follow the budget.
 *
 * Context: umm.mutex held.
 */
void umm_gpu_hold(struct umm_gpu *g, u32 level)
{
	lockdep_assert_held(&umm.mutex);
	g->src.injected = level;
	umm_gpu_check(g, true);
}

/**
 * umm_monitor_kick() - sample now (after a knob changed).
 *
 * Context: umm.mutex held.
 */
void umm_monitor_kick(void)
{
	lockdep_assert_held(&umm.mutex);
	if (umm.running) {
		umm.due_ns = ktime_get_ns() + jiffies_to_nsecs(1);
		mod_delayed_work(system_highpri_wq, &umm.work, 0);
	}
}

/**
 * umm_monitor_watch() - a client became ready: sample now, and from now
 * on, if the work stood still for want of clients.
 *
 * Context: umm.mutex held.
 */
void umm_monitor_watch(void)
{
	lockdep_assert_held(&umm.mutex);
	if (umm_watched() && !delayed_work_pending(&umm.work))
		umm_sample_after(0);
}

/**
 * umm_monitor_init() - prepare the sampling work (it is not started).
 */
void umm_monitor_init(void)
{
	INIT_DELAYED_WORK(&umm.work, umm_work_fn);
}

/**
 * umm_monitor_start() - take a first sample of every node; sampling goes
 * on while clients are ready.
 */
void umm_monitor_start(void)
{
	u64 now = ktime_get_ns();
	struct umm_node *n;
	int nid;

	mutex_lock(&umm.mutex);
	for_each_umm_node(n, nid) {
		umm_node_sample(n, now);
		n->src.level = umm_node_level(n);
	}
	umm.running = true;
	umm_monitor_watch();
	mutex_unlock(&umm.mutex);
}

/**
 * umm_monitor_stop() - stop sampling and wait for a sample in progress.
 * Clearing umm.running first keeps knob writes from queueing another.
 */
void umm_monitor_stop(void)
{
	mutex_lock(&umm.mutex);
	umm.running = false;
	mutex_unlock(&umm.mutex);
	cancel_delayed_work_sync(&umm.work);
}
