/* SPDX-License-Identifier: MIT */
/*
 * pressure_shed.c - the pressure loop's shedding and steering.
 *
 * What the context holds on each node (from its regions), how an ask is
 * met (free pool chunks first, then our idle host copies moved off the
 * node, newest first, or um_shed), where they go (a node with room, the
 * spill, else nowhere), and steering: while a node is under pressure, new
 * host copies go elsewhere and what we hold there is kept off it between
 * events, until it has room again. A memory cgroup's ask is met from what
 * the cgroup is charged for wherever it lies, the spill the only way out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/umm.h>

#include "internal.h"
#include "um_numa.h"
#include "pressure_internal.h"
#include "util.h"

#define HOME_CHECK_NS	(1000ull * 1000000ull)	/* steered away: look home */
#define UMM_SYSFS_NODES	"/sys/kernel/mm/umm/nodes"

/* The node holding r's host copy: its pool heap's, else where its pages are. */
static int node_of(const struct um_context *ctx, const struct um_region *r)
{
	int node = r->host_node;

	if (node < 0)
		node = ctx->home_node;
	if (node < 0) {
		uintptr_t page = (uintptr_t)r->host & ~(uintptr_t)4095;

		node = um__numa_where((const void *)page, 4096, NULL, 0);
	}
	if (node < 0 || node >= UM_STATS_MAX_NODES)
		node = 0;
	return node;
}

int um__pressure_collect(struct um_context *ctx, struct books *b)
{
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	memset(b, 0, sizeof(*b));
	for (r = ctx->regions.next; r != &ctx->regions; r = r->next) {
		bool idle = !r->acquired && !r->pending;

		if (r->host) {
			int node = node_of(ctx, r);

			b->host_res[node] += r->bytes;
			if (idle && !um__tier_is_dev(r->residency))
				b->host_rec[node] += r->bytes;
		}
		if (r->counted && r->device < MAX_GPUS) {
			b->dev_res[r->device] += r->dev_len;
			if (idle)
				b->dev_rec[r->device] += r->dev_len;
		}
	}
	um__exit(ctx);
	return 0;
}

/* ---- shedding ---------------------------------------------------------- */

/* um_event's level is 1 low, 2 medium, 3 critical. */
void um__pressure_post_event(struct um_context *ctx, um_tier_t tier,
			     um_tier_t dest, uint64_t bytes,
			     unsigned int umm_level)
{
	unsigned int level = umm_level > UMM_LEVEL_NORMAL ?
				     umm_level - UMM_LEVEL_NORMAL : 0;

	if (um__enter(ctx))
		return;
	um__event(ctx, UM_EVENT_PRESSURE, level, NULL, tier, dest, bytes, 0,
		  0);
	um__exit(ctx);
}

struct idle_copy {
	um_region_t h;
	uint64_t lru;
};

static int newest_first(const void *a, const void *b)
{
	const struct idle_copy *x = a, *y = b;

	return x->lru < y->lru ? 1 : x->lru > y->lru ? -1 : 0;
}

/* Our idle host copies on node (released, nothing in flight), newest first. */
static int idle_copies(struct um_context *ctx, int node, struct idle_copy **out)
{
	struct idle_copy *v;
	struct um_region *r;
	int n = 0, ret = um__enter(ctx);

	if (ret)
		return ret;
	v = malloc((ctx->nregions ? ctx->nregions : 1) * sizeof(*v));
	for (r = ctx->regions.next; v && r != &ctx->regions; r = r->next)
		/* a kept READ_MOSTLY copy of a device-resident region is
		 * not one: um_evict would evict its device copy instead */
		if (r->host && !r->acquired && !r->pending && !r->freeing &&
		    !um__tier_is_dev(r->residency) && node_of(ctx, r) == node)
			v[n++] = (struct idle_copy){ r->handle, r->lru };
	um__exit(ctx);
	if (!v)
		return -ENOMEM;
	qsort(v, (size_t)n, sizeof(*v), newest_first);
	*out = v;
	return n;
}

void um__pressure_move_line(char *buf, size_t len, const char *name,
			    int node, um_tier_t dest, int ret, uint64_t moved,
			    uint64_t ns)
{
	char to[32], size[UM_SIZE_STR];
	double ms = (double)ns / 1e6;

	if (um_tier_name(dest, to, sizeof(to)) < 0)
		snprintf(to, sizeof(to), "an unknown tier");
	if (!name)
		snprintf(buf, len, "pressure: a region on node %d was freed before it could move to %s (%.1f ms)",
			 node, to, ms);
	else if (ret)
		snprintf(buf, len, "pressure: region \"%s\" stays on node %d: moving it to %s failed: %s (%.1f ms)",
			 name, node, to, strerror(-ret), ms);
	else if (!moved)
		snprintf(buf, len, "pressure: region \"%s\" stays on node %d: taken again before it could move to %s (%.1f ms)",
			 name, node, to, ms);
	else
		snprintf(buf, len, "pressure: region \"%s\" moved off node %d to %s: %s in %.1f ms",
			 name, node, to, um__size_str(moved, size), ms);
}

/*
 * One idle host copy h off node to dest with um_evict: the bytes that left
 * the node, or -errno (-ENOENT: freed meanwhile); says so in a debug line.
 */
static int64_t move_one(struct um_context *ctx, um_region_t h, int node,
			um_tier_t dest)
{
	struct um_region_info ri = { .size = sizeof(ri) };
	uint64_t t0 = um__now_ns(), moved = 0;
	int ret = um_evict(ctx, h, dest), gone;
	char line[256];

	gone = um_region_info(ctx, h, &ri);
	/* gone, taken again or still in flight meanwhile: nothing left */
	if (!ret && !gone && ri.residency != UM_TIER_HOST_NODE((unsigned int)node))
		moved = ri.bytes;
	um__pressure_move_line(line, sizeof(line), gone ? NULL : ri.name,
			       node, dest, ret, moved, um__now_ns() - t0);
	um__log(ctx, UM_LOG_DEBUG, "%s", line);
	if (gone && !ret)
		ret = gone;
	return ret ? ret : (int64_t)moved;
}

/*
 * Move up to bytes of our idle host copies off node to dest (another node
 * or the spill) with um_evict, one region per call, most recently used
 * first; returns bytes moved or -errno. Measured in the VM with node 0
 * filling at 32-64 MiB/s, where a 16 MiB move took 0.4-0.9 s: a training
 * loop walks its regions in order, so the one it used last is the one it
 * needs last (the oldest it restores to the device next, which takes that
 * copy off the node anyway); and between moves the application steps on
 * instead of waiting seconds for the context lock, its own evictions
 * going to the node the loop steered it to.
 */
static int64_t move_off(struct um_pressure *pr, int node, um_tier_t dest,
			uint64_t bytes)
{
	struct um_context *ctx = pr->ctx;
	struct idle_copy *v = NULL;
	uint64_t moved = 0;
	int n = idle_copies(ctx, node, &v), last = 0;

	for (int i = 0; i < n && moved < bytes; i++) {
		int64_t got;

		/* an event came in: answer it first (keep_away goes on after) */
		if (pr->keep_yields && um__pq_ready(&pr->q)) {
			pr->keep_cut = true;
			break;
		}
		got = move_one(ctx, v[i].h, node, dest);
		/*
		 * A move tells the module at once: while a fill outruns our
		 * moves, its OOM notifier holds the OOM killer back as long
		 * as REPORTs say the node gets its memory back.
		 */
		if (got > 0) {
			moved += (uint64_t)got;
			pr->report(pr, true);
		} else if (got < 0 && got != -ENOENT && got != -EBUSY &&
			   got != -EOPNOTSUPP)
			last = (int)got;
	}
	free(v);
	if (n < 0)
		return n;
	return moved ? (int64_t)moved : last;
}

/*
 * From every node but dest's to dest (an OOM event's ask, of all host
 * tiers), node by node with move_off, so that each move is REPORTed.
 */
static int64_t move_off_all(struct um_pressure *pr, um_tier_t dest,
			    uint64_t bytes)
{
	int to = (int)UM_TIER_ID(dest), last = 0;
	uint64_t moved = 0;
	int64_t got;

	for (int n = 0; n < UM_STATS_MAX_NODES && moved < bytes; n++) {
		if (n == to)
			continue;
		got = move_off(pr, n, dest, bytes - moved);
		if (got > 0)
			moved += (uint64_t)got;
		else if (got < 0)
			last = (int)got;
	}
	return moved ? (int64_t)moved : last;
}

/*
 * The pool's free chunks back, unless a growth is in progress: the grower
 * (the refill thread, or the application's thread in an eviction) may be
 * stalled in the kernel's allocator on the node we are freeing, and a trim
 * that waited for it took 0.2-0.6 s in the VM rig before the first move.
 * The next tick trims what this one could not.
 */
static int64_t trim_now(struct um_context *ctx)
{
	return um__pool_trim_try(ctx->pool, UM_POOL_NODE_ALL, 0);
}

/*
 * For a host tier, moved copies leave free blocks in the pool's chunks:
 * trimming afterwards is what gives the node its memory back.
 */
uint64_t um__pressure_shed(struct um_pressure *pr, um_tier_t tier,
			   uint64_t bytes, um_tier_t dest)
{
	struct um_context *ctx = pr->ctx;
	bool host = um__tier_is_host(tier);
	uint64_t freed = 0;
	int64_t got, trimmed;

	if (host) {
		/* free pool chunks first: no copy at all */
		trimmed = trim_now(ctx);
		if (trimmed > 0)
			freed += (uint64_t)trimmed;
	}
	if (freed >= bytes)
		return freed;
	if (host && !um__tier_is_any(tier) &&
	    (um__tier_via_host(dest) ||
	     (um__tier_is_host(dest) && dest != tier)))
		got = move_off(pr, (int)UM_TIER_ID(tier), dest, bytes - freed);
	else if (host && um__tier_is_any(tier) && um__tier_is_host(dest) &&
		 !um__tier_is_any(dest))
		got = move_off_all(pr, dest, bytes - freed);
	else
		got = um_shed(ctx, tier, bytes - freed, dest);
	if ((got == -ENOSPC || got == -EOPNOTSUPP || got == 0) &&
	    dest != UM_TIER_NONE && !um__tier_via_host(dest))
		got = um_shed(ctx, tier, bytes - freed, UM_TIER_NONE);
	/*
	 * Host copies move to another node or the spill before um_evict and
	 * um_shed return; only evictions from a device are still in flight.
	 * Waiting for every migration of the context would also wait for the
	 * application's own, and delay the ACK by them.
	 */
	if (got > 0 && (host || !um_wait_all(ctx)))
		freed += (uint64_t)got;
	if (host) {
		trimmed = trim_now(ctx);
		(void)trimmed;	/* what the moves freed, counted in got */
	}
	pthread_mutex_lock(&pr->st_lock);
	pr->st.shed_calls++;
	if (got > 0)
		pr->st.shed_bytes += (uint64_t)got;
	pthread_mutex_unlock(&pr->st_lock);
	/* nothing to shed, or nowhere to put it: not worth a line each time */
	if (got < 0 && got != -ENOENT && got != -EOPNOTSUPP && got != -ENOSPC)
		um__log(ctx, UM_LOG_WARN,
			"pressure: shedding %s from %s failed: %s",
			UM_SIZE(bytes), host ? "host" : "device",
			strerror((int)-got));
	return freed;
}

/*
 * Bytes node can take before it falls to its low mark: the module's
 * low_bp of the node's memory, or the free memory we saw it go LOW at,
 * whichever is higher; a quarter of the node where neither is known.
 */
static uint64_t node_room(const struct um_pressure *pr, int node)
{
	uint64_t free_b, total, low = 0;
	long long bp = 0;
	char path[96];

	if (node < 0 || node >= 32 || um__numa_node_mem(node, &free_b, &total))
		return 0;
	snprintf(path, sizeof(path), UMM_SYSFS_NODES "/node%d/low_bp", node);
	if (!um__read_num(path, &bp) && bp >= 0 && bp <= 10000)
		low = total / 10000 * (uint64_t)bp;
	if (pr->low_mark[node] > low)
		low = pr->low_mark[node];
	if (!low)
		low = total / 4;
	return free_b > low ? free_b - low : 0;
}

/*
 * Where what we hold on from_node (held bytes, ask of them asked for) goes:
 * the node the module named if it has room for all of it; else the spill;
 * else that node if it has room for the ask at least. The module names the
 * node with most room, however little: filling it to its OOM killer would
 * be worse than the pressure we are answering (seen in the VM, with the
 * other node held at its low mark by umpressure).
 */
static um_tier_t dest_for(const struct um_pressure *pr, int dest_node,
			  int from_node, uint64_t held, uint64_t ask)
{
	uint64_t room = 0;

	if (dest_node >= 0 && dest_node != from_node &&
	    dest_node < (int)UM_TIER_ANY_NODE)
		room = node_room(pr, dest_node);
	if (room && room >= held)
		return UM_TIER_HOST_NODE((unsigned int)dest_node);
	if (pr->ctx->spill)
		return UM_TIER_DISK;
	if (room && room >= ask)
		return UM_TIER_HOST_NODE((unsigned int)dest_node);
	return UM_TIER_NONE;
}

/*
 * Host bytes held on node, or on every node but it (elsewhere); err when
 * the books cannot be read.
 */
static uint64_t held(struct um_pressure *pr, int node, bool elsewhere,
		     uint64_t err)
{
	uint64_t sum = 0;
	struct books b;

	if (um__pressure_collect(pr->ctx, &b))
		return err;
	for (int n = 0; n < UM_STATS_MAX_NODES; n++)
		if ((n == node) != elsewhere)
			sum += b.host_res[n];
	return sum;
}

/*
 * New host copies (evictions, restores from the spill) go to the context's
 * home node. While that node is under pressure and the module names one
 * with headroom, place them there instead, or the next step of the trainer
 * would bring back what was just moved away; back home on RELIEF.
 */
static void steer_home(struct um_pressure *pr, int from, int to)
{
	struct um_context *ctx = pr->ctx;

	if (to < 0 || to == from || to >= UM_POOL_MAX_NODES ||
	    !um__numa_node_valid(to) || um__enter(ctx))
		return;
	if (ctx->home_node == from) {
		if (pr->home_orig < 0)
			pr->home_orig = from;
		ctx->home_node = to;
		um__log(ctx, UM_LOG_INFO,
			"pressure: node %d is under pressure; new host copies go to node %d",
			from, to);
	}
	um__exit(ctx);
}

static void mark_hot(struct um_pressure *pr, uint32_t node, int dest_node)
{
	/* with no other node and no spill there is nowhere to keep them */
	if (node >= 32 || ((dest_node < 0 || dest_node == (int)node) &&
			   !pr->ctx->spill))
		return;
	pr->hot |= 1u << node;
	pr->hot_dest[node] = dest_node;
}

/* Between events: push what we hold on a hot node to its destination. */
static void keep_off_hot(struct um_pressure *pr)
{
	struct books b;

	if (!pr->hot || um__pressure_collect(pr->ctx, &b))
		return;
	for (uint32_t n = 0; n < 32 && n < UM_STATS_MAX_NODES; n++) {
		if (!(pr->hot & (1u << n)) || !b.host_rec[n])
			continue;
		um__pressure_shed(pr, UM_TIER_HOST_NODE(n), b.host_rec[n],
		     dest_for(pr, pr->hot_dest[n], (int)n, b.host_res[n],
			      b.host_rec[n]));
		atomic_store(&pr->dirty, true);
	}
}

/*
 * Between events while our memory cgroup is hot: our released host copies
 * back in the spill (a step restores through the host and evicts to it),
 * and the pool's free chunks given back, copies or not: a step's restore
 * and eviction leave one behind, charged to the cgroup. With every copy
 * spilled there was nothing to shed, so nothing trimmed them, and in the
 * VM rig a trainer was OOM-killed at its cgroup's limit holding 84 MiB,
 * of which only the device's 16 and two blocks of a step were in use.
 */
static void keep_out_of_cgroup(struct um_pressure *pr)
{
	uint64_t rec = 0;
	struct books b;

	if (!atomic_load(&pr->ctx->cgroup_hot) || pr->keep_cut ||
	    um__pressure_collect(pr->ctx, &b))
		return;
	for (int n = 0; n < UM_STATS_MAX_NODES; n++)
		rec += b.host_rec[n];
	if (!rec) {
		(void)trim_now(pr->ctx);
		return;
	}
	um__pressure_shed(pr, UM_TIER_HOST_ANY, rec, UM_TIER_DISK);
	atomic_store(&pr->dirty, true);
}

/*
 * Free chunks of the pool on nodes we are keeping off: moves and restores
 * leave them behind, and until they go back the node is no better off.
 */
static void trim_kept_off(struct um_pressure *pr)
{
	uint32_t nodes = pr->hot;

	if (pr->home_orig >= 0 && pr->home_orig < 32)
		nodes |= 1u << pr->home_orig;
	/*
	 * Without the context lock, which must not be held while the pool
	 * grows; and skipped while a growth is in progress (trim_now): the
	 * pool is thread-safe on its own.
	 */
	for (int n = 0; n < 32 && n < UM_POOL_MAX_NODES; n++) {
		if (!(nodes & (1u << n)) || um__enter_const(pr->ctx))
			continue;
		(void)um__pool_trim_try(pr->ctx->pool, n, 0);
	}
}

/*
 * Send new host copies home again if the home node, with free_b bytes
 * free, has room for what would come back and stays a quarter above its
 * low mark.
 */
static void try_home(struct um_pressure *pr, uint64_t free_b)
{
	struct um_context *ctx = pr->ctx;
	int home = pr->home_orig;
	uint64_t away, mark;

	if (home < 0 || home >= 32 || (pr->hot & (1u << home)))
		return;
	away = held(pr, home, true, UINT64_MAX);
	mark = pr->low_mark[home] + pr->low_mark[home] / 4;
	if (away > free_b || free_b - away < mark || um__enter(ctx))
		return;
	ctx->home_node = home;
	um__log(ctx, UM_LOG_INFO,
		"pressure: node %d has room again (%llu MiB free, %llu MiB to come back); new host copies go there",
		home, (unsigned long long)(free_b >> 20),
		(unsigned long long)(away >> 20));
	pr->home_orig = -1;
	um__exit(ctx);
}

void um__pressure_steer_back(struct um_pressure *pr,
			     const struct umm_event *ev)
{
	if (ev->tier_type == UMM_TIER_CGROUP) {
		if (ev->level <= UMM_LEVEL_NORMAL)
			atomic_store(&pr->ctx->cgroup_hot, false);
		return;
	}
	if (ev->tier_type != UMM_TIER_HOST_NODE || ev->tier_id >= 32 ||
	    ev->level > UMM_LEVEL_NORMAL)
		return;
	pr->hot &= ~(1u << ev->tier_id);
	if ((int)ev->tier_id == pr->home_orig)
		try_home(pr, ev->bytes_free);
}

/* Between events: is the node we steered away from roomy again? */
static void check_home(struct um_pressure *pr)
{
	uint64_t free_b, total;

	if (pr->home_orig < 0 ||
	    um__now_ns() - pr->last_home_check_ns < HOME_CHECK_NS)
		return;
	pr->last_home_check_ns = um__now_ns();
	if (!um__numa_node_mem(pr->home_orig, &free_b, &total))
		try_home(pr, free_b);
}

/*
 * Everything we hold on hot nodes goes to their destinations, and the pool
 * gives those nodes back its free chunks: every report interval while a
 * node is hot, and at once after answering an event's ask. An event that
 * arrives meanwhile stops the moves, so that its ACK does not wait for
 * them all; they go on once it is answered.
 */
static void keep_away(struct um_pressure *pr)
{
	um__pq_submit(&pr->q);	/* the re-armed read: events show */
	pr->keep_yields = true;
	keep_off_hot(pr);
	pr->keep_yields = false;
	keep_out_of_cgroup(pr);
	trim_kept_off(pr);
	check_home(pr);
	pr->last_keep_ns = pr->keep_cut ? 0 : um__now_ns();
	pr->keep_cut = false;
}

/*
 * Every report interval while a node or our memory cgroup is hot, or we
 * steered away.
 */
void um__pressure_keep_away(struct um_pressure *pr)
{
	if ((pr->hot || pr->home_orig >= 0 ||
	     atomic_load(&pr->ctx->cgroup_hot)) &&
	    um__now_ns() - pr->last_keep_ns >= pr->report_ns)
		keep_away(pr);
}

um_tier_t um__pressure_event_tier(const struct umm_event *ev)
{
	switch (ev->tier_type) {
	case UMM_TIER_GPU:
		return UM_TIER_GPU(ev->tier_id);
	case UMM_TIER_CGROUP:
		return UM_TIER_HOST_ANY;
	default:
		return UM_TIER_HOST_NODE(ev->tier_id);
	}
}

/* The first event that said LOW or worse, and the worst level heard. */
static void note_level(struct um_pressure *pr, const struct umm_event *ev)
{
	pthread_mutex_lock(&pr->st_lock);
	if (!pr->st.first_event_ns && ev->level >= UMM_LEVEL_LOW) {
		pr->st.first_event_ns = um__now_ns();
		pr->st.first_eta_ms = ev->eta_ms;
	}
	if (ev->level > pr->st.max_level)
		pr->st.max_level = ev->level;
	pthread_mutex_unlock(&pr->st_lock);
}

/*
 * Once per context: a cgroup's ask we could not meet, so that whoever
 * sees its OOM kill next knows why libum did not prevent it.
 */
static void say_unmet(struct um_pressure *pr, const struct umm_event *ev,
		      uint64_t freed)
{
	uint64_t host = held(pr, -1, true, 0);
	char limit[PATH_MAX + 64];
	const char *why;

	if (pr->cgroup_unmet_said)
		return;
	pr->cgroup_unmet_said = true;
	if (!pr->ctx->spill)
		why = pr->ctx->set.spill_none;
	else if (!host)
		why = "no host copies left to spill";
	else
		why = "the rest of our host copies are acquired or in flight";
	limit[0] = '\0';
	if (pr->cgw.open)	/* our own watch: it knows the limit */
		snprintf(limit, sizeof(limit), "%s, %llu MiB",
			 pr->cgw.limit_what,
			 (unsigned long long)(pr->cgw.limit >> 20));
	um__log(pr->ctx, UM_LOG_ERR,
		"pressure: memory cgroup %u%s%s%s has %llu MiB of room left; could not shed %llu of the %llu MiB asked (%llu MiB of host copies held): %s",
		ev->tier_id, limit[0] ? " (limit: " : "", limit,
		limit[0] ? ")" : "",
		(unsigned long long)(ev->bytes_free >> 20),
		(unsigned long long)((ev->bytes_to_free - freed) >> 20),
		(unsigned long long)(ev->bytes_to_free >> 20),
		(unsigned long long)(host >> 20), why);
}

/*
 * A memory cgroup we run in nears its limit. What we hold is charged to
 * it on whatever node it lies, so moving it to another node frees nothing:
 * no steering, no hot node. Released host copies go to the spill, then
 * the pool gives back the chunks that left free (pinned pages are charged
 * too); um__pressure_shed of the host tier to the disk does both. Device
 * memory is not charged to the cgroup and stays.
 */
static bool answer_cgroup(struct um_pressure *pr, const struct umm_event *ev,
			  uint64_t *freed)
{
	uint64_t ask = ev->bytes_to_free, t0;

	note_level(pr, ev);
	pthread_mutex_lock(&pr->st_lock);
	pr->st.cgroup_events++;
	pr->st.cgroup_room = ev->bytes_free;
	pr->st.cgroup_id = ev->tier_id;
	pthread_mutex_unlock(&pr->st_lock);
	um__pressure_post_event(pr->ctx, UM_TIER_HOST_ANY,
				pr->ctx->spill ? UM_TIER_DISK : UM_TIER_NONE,
				ask, ev->level);
	if (ev->level >= UMM_LEVEL_LOW && pr->ctx->spill) {
		atomic_store(&pr->ctx->cgroup_hot, true);
		pr->last_keep_ns = 0;
	}
	/* nothing asked of us (nothing we report is reclaimable): free chunks */
	if (!ask && ev->level >= UMM_LEVEL_LOW)
		(void)trim_now(pr->ctx);
	if (!ask)
		return false;
	t0 = um__now_ns();
	*freed = um__pressure_shed(pr, UM_TIER_HOST_ANY, ask, UM_TIER_DISK);
	um__log(pr->ctx, UM_LOG_DEBUG,
		"pressure: cgroup %u: spilled and trimmed %s of %s asked in %.1f ms",
		ev->tier_id, UM_SIZE(*freed), UM_SIZE(ask),
		(double)(um__now_ns() - t0) / 1e6);
	pthread_mutex_lock(&pr->st_lock);
	pr->st.cgroup_freed += *freed;
	if (*freed < ask)
		pr->st.cgroup_unmet++;
	pthread_mutex_unlock(&pr->st_lock);
	if (*freed < ask)
		say_unmet(pr, ev, *freed);
	atomic_store(&pr->dirty, true);
	return true;
}

bool um__pressure_answer(struct um_pressure *pr, const struct umm_event *ev,
			 uint64_t *freed)
{
	um_tier_t tier, dest;
	uint64_t t0;

	if (ev->tier_type == UMM_TIER_CGROUP)
		return (ev->type == UMM_EVENT_PRESSURE ||
			ev->type == UMM_EVENT_SHRINK) &&
		       answer_cgroup(pr, ev, freed);
	switch (ev->type) {
	case UMM_EVENT_PRESSURE:
	case UMM_EVENT_SHRINK:
		tier = UM_TIER_HOST_NODE(ev->tier_id);
		dest = dest_for(pr, ev->dest_node, (int)ev->tier_id,
				held(pr, (int)ev->tier_id, false, 0),
				ev->bytes_to_free);
		/*
		 * A SHRINK comes from the kernel's reclaim on the node, which
		 * is at its low watermark whatever level the module's last
		 * sample read: steer and keep off it as for LOW. Seen in the
		 * VM rig at 256 MiB/s: a SHRINK at level normal, CRITICAL 70
		 * ms later, and in between the trainer grew its pool on node
		 * 0 again right after the trim we answered with, and stalled
		 * there until the OOM kill.
		 */
		if (ev->level >= UMM_LEVEL_LOW ||
		    ev->type == UMM_EVENT_SHRINK) {
			if (ev->level >= UMM_LEVEL_LOW && ev->tier_id < 32 &&
			    ev->bytes_free > pr->low_mark[ev->tier_id])
				pr->low_mark[ev->tier_id] = ev->bytes_free;
			if (um__tier_is_host(dest))
				steer_home(pr, (int)ev->tier_id,
					   ev->dest_node);
			mark_hot(pr, ev->tier_id, ev->dest_node);
		}
		break;
	case UMM_EVENT_OOM:
		tier = UM_TIER_HOST_ANY;
		dest = dest_for(pr, ev->dest_node, -1, ev->bytes_to_free,
				ev->bytes_to_free);
		break;
	case UMM_EVENT_GPU_BUDGET:
		tier = UM_TIER_GPU(ev->tier_id);
		dest = ev->dest_node >= 0 ?
			       UM_TIER_HOST_NODE((unsigned int)ev->dest_node) :
			       UM_TIER_NONE;
		break;
	default:
		return false;
	}
	note_level(pr, ev);
	um__pressure_post_event(pr->ctx, tier, dest, ev->bytes_to_free,
				ev->level);
	if (!ev->bytes_to_free)
		return false;
	t0 = um__now_ns();
	*freed = um__pressure_shed(pr, tier, ev->bytes_to_free, dest);
	um__log(pr->ctx, UM_LOG_DEBUG,
		"pressure: freed %s of %s asked in %.1f ms",
		UM_SIZE(*freed), UM_SIZE(ev->bytes_to_free),
		(double)(um__now_ns() - t0) / 1e6);
	/*
	 * The caller ACKs, with the ask met; then the rest of what we hold
	 * on the node goes as soon as the events read with this one are
	 * answered, not at the next tick: a node filling at 64 MiB/s goes
	 * from LOW to its min watermark in under 2 s.
	 */
	if (pr->hot)
		pr->last_keep_ns = 0;
	atomic_store(&pr->dirty, true);
	return true;
}

