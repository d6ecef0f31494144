/* SPDX-License-Identifier: MIT */
/*
 * policy.c - budgets, victim order, acquire/release/evict/shed.
 *
 * Victims are released regions only, ordered by:
 *   1. kind: optimizer state, then grad, activation, generic, param.
 *      Optimizer state is touched once per step (inside step()); grads are
 *      produced by backward and consumed by step; activations are reused
 *      within one step; we know nothing of generic buffers; params are
 *      needed by every forward and backward, so they go last;
 *   2. lower priority first;
 *   3. least recently acquired first, counted in release epochs: the
 *      epoch moves on each time a region is released, so regions acquired
 *      together (no release in between, e.g. one layer's buffers) are
 *      equally recent;
 *   4. larger first (frees the budget with fewer migrations);
 *   5. older handle first (a total order, so runs are reproducible).
 * Evictions go to the host (the context's home node); the spill tier takes
 * host copies only when asked (um_evict/um_shed to UM_TIER_DISK), by the
 * pressure loop, or when the host is too full for an eviction (evict()).
 *
 * A request that cannot fit even after evicting every released region is
 * refused up front (-ENOMEM, one ERR line naming region, size, budget and
 * what is held), before anything moves: no region's bytes change.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "util.h"
#include "um_numa.h"

static int64_t um__shed_locked(struct um_context *ctx, um_tier_t tier,
			       uint64_t bytes, um_tier_t dest);

static bool on_tier(const struct um_region *r, um_tier_t tier)
{
	return um__tier_within(r->residency, tier);
}

/*
 * Released regions resident on tier, in eviction order (victims.c keeps
 * them so), except skip. Each step finds the next victim after the last
 * one's key, so evicting the current one (which leaves the set) or a
 * region joining the set meanwhile never loses the place.
 */
struct victim_iter {
	um_tier_t tier;
	const struct um_region *skip;
	struct um_vkey key;
	bool started;
};

static struct um_region *victim_next(struct um_context *ctx,
				     struct victim_iter *it)
{
	struct um_region *r;

	do {
		r = um__victim_next(ctx, it->tier,
				    it->started ? &it->key : NULL);
		if (!r)
			return NULL;
		it->key = um__victim_key(r, it->tier);
		it->started = true;
	} while (r == it->skip);
	return r;
}

/* Bytes on dev's books whose eviction is in flight. */
static uint64_t draining(struct um_context *ctx, int dev)
{
	return ctx->dev[dev].draining;
}

/* Oldest in-flight eviction on dev that will take bytes off its books. */
static struct um_mig *oldest_drain(struct um_context *ctx, int dev)
{
	for (struct um_mig *m = ctx->migs; m; m = m->next)
		if (m->dir == UM_MIG_EVICT && (int)m->r->device == dev &&
		    um__draining(m->r))
			return m;
	return NULL;
}

static void held_summary(struct um_context *ctx, int dev, uint64_t *bytes,
			 uint32_t *count)
{
	*bytes = 0;
	*count = 0;
	for (struct um_region *r = ctx->regions.next; r != &ctx->regions;
	     r = r->next) {
		if ((int)r->device == dev && r->counted && r->acquired) {
			*bytes += r->dev_len;
			(*count)++;
		}
	}
}

/*
 * A refusal while others hold the budget (@expected) is a normal condition:
 * the caller retries, waits with um_acquire_timeout() or releases. -ENOMEM,
 * a NOMEM event and stats nomem say it, with an info line (not shown by
 * default): a retry loop once printed 2,787 error lines. A refusal that no
 * waiting can cure (a region larger than the budget, a device or host that
 * refuses, a wait that would deadlock) is an ERR line each time.
 */
static void refuse(struct um_context *ctx, struct um_region *r,
		   const char *why, bool expected)
{
	struct um_dev *d = &ctx->dev[r->device];
	char size[UM_SIZE_STR], dev[UM_SIZE_STR], unit[UM_SIZE_STR];
	char budget[UM_SIZE_STR], held_s[UM_SIZE_STR], took[96] = "";
	uint64_t held;
	uint32_t n;

	held_summary(ctx, (int)r->device, &held, &n);
	/* a small region under a small budget: the unit is the surprise */
	if (r->dev_len > r->bytes)
		snprintf(took, sizeof(took),
			 ", %s on the device, whose memory comes in %s units",
			 um__size_str(r->dev_len, dev),
			 um__size_str(d->gran, unit));
	um__log(ctx, expected ? UM_LOG_INFO : UM_LOG_ERR,
		"acquire: region \"%s\" (%s%s) does not fit device %u: budget %s, %s held by %u acquired region(s)%s",
		r->name, um__size_str(r->bytes, size), took,
		(unsigned int)r->device, um__size_str(d->budget, budget),
		um__size_str(held, held_s), n, why);
	ctx->books.nomem++;
	um__event(ctx, UM_EVENT_NOMEM, 0, r, r->residency,
		  UM_TIER_GPU(r->device), r->bytes, -ENOMEM, 0);
}

/*
 * Evict r for the policy. When the host is too full for r's copy, older host
 * copies go to the spill tier first and the eviction is tried once more:
 * deciding what to shed is policy, so the engine only reports -ENOMEM.
 */
static int evict(struct um_context *ctx, struct um_region *r, um_tier_t to)
{
	int ret;

	if (ctx->spill && um__evict_needs_block(r)) {
		ret = um__host_block(ctx, r, um__tier_node(ctx, to), false);
		if (ret == -ENOMEM &&
		    um__shed_locked(ctx, UM_TIER_HOST_ANY, r->bytes,
				    UM_TIER_DISK) > 0)
			/* host full: older host copies went to the spill */
			ret = 0;
		if (ret)
			return ret;
	}
	return um__evict(ctx, r, to, true);
}

/*
 * Get dev's books to fit: used - (in flight out) + need <= budget, by
 * evicting victims in policy order. Returns the bytes still over (0: fits
 * once in-flight evictions land), or -ENOMEM if the victims cannot cover it.
 */
static int64_t evict_to_fit(struct um_context *ctx, int dev, uint64_t need,
			    const struct um_region *skip, bool all_or_none)
{
	struct victim_iter it = { .tier = UM_TIER_GPU(dev), .skip = skip };
	struct um_dev *d = &ctx->dev[dev];
	uint64_t out = draining(ctx, dev), vbytes;
	struct um_region *v;

	if (d->used - out + need <= d->budget)
		return 0;
	vbytes = um__victims_bytes(ctx, it.tier);
	if (skip)
		vbytes -= um__victim_charge(ctx, skip, it.tier);
	if (all_or_none && d->used - out - vbytes + need > d->budget)
		return -ENOMEM;
	while (d->used - out + need > d->budget && (v = victim_next(ctx, &it))) {
		int ret = evict(ctx, v, UM_TIER_HOST_ANY);

		um__log(ctx, UM_LOG_DEBUG,
			"policy: evict \"%s\" (%s, priority %d, %s) from device %d: %s",
			v->name, um_kind_name((int)v->kind), v->priority,
			UM_SIZE(v->dev_len), dev,
			ret == UM__POOL_SHORT ? "the pool is short" :
			ret < 0 ? strerror(-ret) : "issued");
		if (ret == UM__POOL_SHORT)
			return ret;	/* grown with the lock dropped, then again */
		if (!ret && um__draining(v))
			out += v->dev_len;
	}
	if (d->used - out + need > d->budget)
		return (int64_t)(d->used - out + need - d->budget);
	return 0;
}

/*
 * Make room for r (not yet on its device's books). Returns 0 when it fits
 * now, -EAGAIN after waiting for an eviction with the lock dropped (the
 * caller starts over: regions may have changed), -ENOMEM when it cannot.
 * With may_wait, a refusal that releases could lift (what acquired regions
 * hold leaves too little) is -ENOBUFS instead, with nothing logged: the
 * caller waits for room (room.c).
 */
static int um__make_room(struct um_context *ctx, struct um_region *r,
			 bool may_wait)
{
	struct um_dev *d = &ctx->dev[r->device];
	uint64_t need = r->dev_len;
	struct um_mig *m;
	int64_t over;

	if (r->counted) {
		/*
		 * Still on the books: resident, or its eviction is in flight
		 * and the restore would supersede it, keeping the bytes on
		 * the device. Over budget (lowered under it), that would
		 * hold the books above the budget: let the eviction land
		 * first, then r needs room like any other region.
		 */
		if (!um__draining(r) || !r->mig || d->used <= d->budget)
			return 0;
		um__wait_mig(ctx, r->mig);
		return -EAGAIN;
	}
	if (d->used + need <= d->budget)
		return 0;
	if (need > d->budget) {
		refuse(ctx, r, "; the region alone is larger than the budget",
		       false);
		return -ENOMEM;
	}
	over = evict_to_fit(ctx, (int)r->device, need, r, true);
	if (over == UM__POOL_SHORT)
		return UM__POOL_SHORT;
	if (over == -ENOMEM) {
		if (may_wait)
			return -ENOBUFS;
		refuse(ctx, r, ", and evicting every released region would not free enough",
		       true);
		return -ENOMEM;
	}
	if (over) {
		refuse(ctx, r, "; evictions failed (host memory?)", false);
		return over < 0 ? (int)over : -ENOMEM;
	}
	if (d->used + need <= d->budget)
		return 0;
	m = oldest_drain(ctx, (int)r->device);
	if (!m) {
		refuse(ctx, r, "; nothing left in flight to wait for", true);
		return -ENOMEM;
	}
	um__wait_mig(ctx, m);
	return -EAGAIN;
}

/*
 * Evict released regions until dev is within its budget. -EBUSY when what
 * is acquired alone is over it (the budget stays; later acquires fail).
 */
static int um__enforce_budget(struct um_context *ctx, int dev)
{
	struct um_dev *d = &ctx->dev[dev];
	int64_t over;

	if (d->used <= d->budget)
		return 0;
	over = evict_to_fit(ctx, dev, 0, NULL, false);
	if (over > 0) {
		uint64_t held;
		uint32_t n;

		held_summary(ctx, dev, &held, &n);
		um__log(ctx, UM_LOG_WARN,
			"budget: device %d is %s over its budget of %s: %u acquired region(s) hold %s",
			dev, UM_SIZE(over > 0 ? (uint64_t)over : 0),
			UM_SIZE(d->budget), n, UM_SIZE(held));
		return -EBUSY;
	}
	return over < 0 ? (int)over : 0;
}

static bool short_retry(struct um_context *ctx, int *rounds, um_region_t busy);

/*
 * um__enforce_budget for a public call: growing the pool with the lock
 * dropped when it is short of host copies (regions may change meanwhile).
 */
static int enforce_budget_retry(struct um_context *ctx, int dev)
{
	int rounds = 0, ret;

	do {
		ret = um__enforce_budget(ctx, dev);
	} while (ret == UM__POOL_SHORT && short_retry(ctx, &rounds, 0));
	return (int)um__pool_short_end(ctx, ret);
}

/* ---- tiers ------------------------------------------------------------ */

/*
 * t is a tier the call takes for use (enum um__tier_use) and ctx has it.
 * A host node without memory is -EINVAL with an ERR line that says which
 * node and what the machine has, before the pool is asked (it could only
 * say it has no copy); anything else that is not is -EINVAL.
 */
static int check_tier(struct um_context *ctx, um_tier_t t, unsigned int use,
		      const char *what)
{
	if (!um__tier_use(t, use))
		return -EINVAL;
	if (um__tier_exists(ctx, t))
		return 0;
	if (um__tier_is_host(t))
		um__log(ctx, UM_LOG_ERR,
			"%s: host node %u does not exist or has no memory: this machine has %d node(s) with memory, numbered 0..%d",
			what, UM_TIER_ID(t), um__numa_node_count(),
			um__numa_max_node());
	return -EINVAL;
}

static int check_acquire_tier(struct um_context *ctx, struct um_region *r,
			      um_tier_t t)
{
	/* a region is acquired on its own device */
	if (um__tier_is_dev(t))
		return UM_TIER_ID(t) == r->device ? 0 : -EINVAL;
	return check_tier(ctx, t, UM__USE_ACQUIRE, "acquire");
}

/* ---- acquire / release ------------------------------------------------ */

/*
 * The device refused memory our books allow (others use the device too):
 * evict the first victim in policy order, beyond what the budget asks.
 * Returns 1 if an eviction was issued, 0 if none, or UM__POOL_SHORT.
 */
static int evict_beyond_budget(struct um_context *ctx, struct um_region *r)
{
	struct victim_iter it = { .tier = UM_TIER_GPU(r->device), .skip = r };
	struct um_region *v;
	int issued = 0, ret;

	while (!issued && (v = victim_next(ctx, &it))) {
		ret = evict(ctx, v, UM_TIER_HOST_ANY);
		if (ret == UM__POOL_SHORT)
			return ret;
		issued = !ret && um__draining(v);
	}
	return issued;
}

static int acquire_device(struct um_context *ctx, struct um_region *r,
			  bool may_wait)
{
	int ret = um__make_room(ctx, r, may_wait);
	struct um_mig *m;

	if (ret)
		return ret;
	ret = um__restore(ctx, r);
	if (ret == -ENOMEM) {
		/* the device itself is short: let evictions land, retry */
		m = oldest_drain(ctx, (int)r->device);
		if (!m) {
			int issued = evict_beyond_budget(ctx, r);

			if (issued == UM__POOL_SHORT)
				return issued;
			if (issued)
				m = oldest_drain(ctx, (int)r->device);
		}
		if (m) {
			um__log(ctx, UM_LOG_DEBUG,
				"acquire: device %u short of memory for \"%s\"; waiting for an eviction",
				(unsigned int)r->device, r->name);
			um__wait_mig(ctx, m);
			return -EAGAIN;
		}
		refuse(ctx, r, "; the device refused the memory", false);
	}
	return ret;
}

/*
 * The region is acquired: order the caller's stream after its last
 * migration, with the lock dropped (on sim this blocks until it is done).
 */
static int order_stream(struct um_context *ctx, um_region_t h, void *stream)
{
	struct um_region *r = um__region_get(ctx, h);
	int ret;

	/*
	 * The latest migration: a restore, or an eviction this acquire
	 * superseded (still reading the device bytes the caller may now
	 * write; waiting keeps its host copy whole and the accesses ordered).
	 */
	if (!r || !r->mig)
		return 0;
	ret = um__stream_wait_mig(ctx, r->mig, stream);
	if (!ret)
		return 0;
	r = um__region_get(ctx, h);
	um__log(ctx, UM_LOG_ERR, "acquire: cannot order stream %p after \"%s\": %s",
		stream, r ? r->name : "?", strerror(-ret));
	if (r && r->error == ret)
		r->error = 0;	/* reported here, not again by um_wait */
	if (r && r->acquired && !--r->acquired) {
		r->acq_tier = UM_TIER_NONE;
		um__victims_sync(ctx, r);
		um__settle(ctx, r);
	}
	return ret;
}

static int acquire_host(struct um_context *ctx, struct um_region *r,
			um_tier_t tier)
{
	um_region_t h;
	int ret;

	if (r->residency == UM_TIER_NONE && r->backing == UM_BACKING_TIERED) {
		/* first touch on the host: a zeroed host copy */
		ret = um__host_block(ctx, r, um__tier_node(ctx, tier), true);
		if (ret)
			return ret;
		um__books_residency(ctx, r, r->residency,
				    um__host_tier(ctx, r->host_node));
		r->residency = um__host_tier(ctx, r->host_node);
		um__victims_sync(ctx, r);
		um__hostneed_sync(ctx, r);
		r->zero_on_restore = false;
		return 0;
	}
	ret = um__to_host(ctx, r, tier);
	if (ret != -EINPROGRESS && (ret || !r->pending))
		return ret;
	/*
	 * The caller uses the bytes from the CPU (or moves them to another
	 * node, which needs them whole): wait for them, with the lock
	 * dropped, then start over (another thread may have moved r).
	 */
	h = r->handle;
	ret = um__wait_region(ctx, r);
	r = um__region_get(ctx, h);
	if (r && r->error) {
		ret = r->error;
		r->error = 0;
		return ret;
	}
	return ret == -EPROTO ? ret : -EAGAIN;
}

/*
 * Remember stream among r's holders (once): -EBUSY when UM_HOLD_STREAMS
 * distinct streams already hold it.
 */
static int hold_stream(struct um_context *ctx, struct um_region *r,
		       void *stream)
{
	uint32_t i;

	for (i = 0; i < r->nacq_streams; i++)
		if (r->hold[i].stream == stream)
			return 0;
	if (r->nacq_streams == UM_HOLD_STREAMS) {
		um__log(ctx, UM_LOG_WARN,
			"acquire: \"%s\" is held on %d streams already, the most there can be",
			r->name, UM_HOLD_STREAMS);
		return -EBUSY;
	}
	r->hold[r->nacq_streams++].stream = stream;
	return 0;
}

/*
 * The caller waited for room (room.c) and will not wait any more: the
 * refusal um_acquire() gives, with the reason in its log line.
 */
static int refuse_wait(struct um_context *ctx, struct um_region *r, int err)
{
	refuse(ctx, r, err == -EDEADLK ?
		       "; waiting would never end: every holder is this thread or waiting for room too" :
		       "; no room within the timeout", err != -EDEADLK);
	return err;
}

/* timeout_ns 0: no waiting; deadline NULL (with timeout_ns): no limit. */
static int acquire(struct um_context *ctx, um_region_t h, um_tier_t tier,
		   void *stream, uint64_t timeout_ns)
{
	struct timespec deadline, *until = NULL;
	struct um_region *r;
	int rounds = 0, ret = um__enter(ctx);

	if (ret)
		return ret;
	if (timeout_ns && timeout_ns != UM_WAIT_FOREVER) {
		um__room_deadline(timeout_ns, &deadline);
		until = &deadline;
	}
	for (;;) {
		ret = um__region_find(ctx, "acquire", h, &r);
		if (ret)
			break;
		ret = check_acquire_tier(ctx, r, tier);
		if (ret)
			break;
		if (r->acquired) {
			if (r->acq_tier != tier) {
				ret = -EBUSY;
				break;
			}
			if (r->acquired == UINT32_MAX) {
				ret = -EOVERFLOW;
				break;
			}
			ret = hold_stream(ctx, r, stream);
			if (ret)
				break;
			/* every holder's stream waits for the bytes */
			um__room_hold(r);
			r->acquired++;
			if (r->mig)
				ret = order_stream(ctx, h, stream);
			break;
		}
		if (um__tier_is_dev(tier))
			ret = acquire_device(ctx, r, timeout_ns != 0);
		else
			ret = acquire_host(ctx, r, tier);
		if (ret == -ENOBUFS) {
			ret = um__room_wait(ctx, r, until);
			if (!ret)
				continue;
			ret = refuse_wait(ctx, r, ret);
		}
		if (ret == -EAGAIN ||
		    (ret == UM__POOL_SHORT && short_retry(ctx, &rounds, h)))
			continue;
		if (ret)
			break;
		um__room_hold(r);
		r->acquired = 1;
		r->acq_tier = tier;
		r->nacq_streams = 0;
		(void)hold_stream(ctx, r, stream);	/* the first: room */
		r->lru = ctx->tick;
		um__victims_sync(ctx, r);	/* acquired: no victim */
		if (um__tier_is_dev(tier))
			ret = order_stream(ctx, h, stream);
		break;
	}
	ret = (int)um__pool_short_end(ctx, ret);
	um__exit(ctx);
	return ret;
}

int um_acquire(struct um_context *ctx, um_region_t h, um_tier_t tier,
	       void *stream)
{
	return acquire(ctx, h, tier, stream, 0);
}

int um_acquire_timeout(struct um_context *ctx, um_region_t h, um_tier_t tier,
		       void *stream, uint64_t timeout_ns)
{
	return acquire(ctx, h, tier, stream, timeout_ns);
}

/*
 * Fence the caller's stream, so an eviction (and a free) waits for the work
 * that still uses the region. If that fails there is nothing to order
 * after: the region is marked unfenced and is not evicted until a later
 * release fences it (evicting it could copy bytes a kernel still writes).
 */
static void record_release(struct um_context *ctx, struct um_region *r)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	int ret;

	r->released_valid = false;
	r->unfenced = false;
	if (!ops->stream_record_fence || !um__tier_is_dev(r->acq_tier))
		return;
	/* Every holder's stream: each may still run kernels on the bytes. */
	ret = um__released_record(ctx, r);
	if (!ret)
		return;
	r->unfenced = true;
	um__log(ctx, UM_LOG_WARN,
		"release: cannot fence the %u stream(s) that held \"%s\": %s; it stays on the device until released again",
		r->nacq_streams, r->name, strerror(-ret));
}

int um_release(struct um_context *ctx, um_region_t h)
{
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	ret = um__region_find(ctx, "release", h, &r);
	if (ret)
		goto out;
	if (!r->acquired) {
		um__log(ctx, UM_LOG_ERR,
			"release: region \"%s\" is not acquired", r->name);
		ret = -EPERM;
		goto out;
	}
	if (--r->acquired)
		goto out;
	record_release(ctx, r);
	r->nacq_streams = 0;
	ctx->tick++;	/* a new recency epoch */
	um__victims_sync(ctx, r);
	um__settle(ctx, r);
	r->acq_tier = UM_TIER_NONE;
	/* a budget lowered under acquired regions is met as they go */
	enforce_budget_retry(ctx, (int)r->device);	/* r may go meanwhile */
out:
	um__exit(ctx);
	return ret;
}

/* ---- evict / shed / budget -------------------------------------------- */

/*
 * For um_evict: wait, with the lock dropped, until h has no migration in
 * flight and is still there to move (look it up again after). A failed
 * migration's error is returned here, not again by um_wait.
 */
static int evict_wait_landed(struct um_context *ctx, um_region_t h)
{
	struct um_region *r = um__region_get(ctx, h);
	int ret;

	while (r->pending) {
		ret = um__wait_region(ctx, r);
		r = um__region_get(ctx, h);
		if (!r)
			return -ENOENT;
		if (r->acquired)
			return -EBUSY;	/* taken back meanwhile */
		if (ret == -EPROTO)
			return -EIO;
		if (ret && !r->pending) {
			r->error = 0;	/* reported here */
			return ret;
		}
	}
	return 0;
}

static int evict_to_spill(struct um_context *ctx, um_region_t h)
{
	struct um_region *r = um__region_get(ctx, h);
	int ret;

	if (!ctx->spill)
		return -EOPNOTSUPP;
	if (r->flags & UM_REGION_NO_SPILL)
		return -EPERM;
	if (um__tier_is_dev(r->residency)) {
		ret = um__evict(ctx, r, UM_TIER_HOST_ANY, false);
		if (ret)
			return ret;
	}
	ret = evict_wait_landed(ctx, h);
	if (ret)
		return ret;
	r = um__region_get(ctx, h);
	if (um__tier_is_dev(r->residency))
		return -EBUSY;	/* acquired and released meanwhile */
	if (r->residency == UM_TIER_NONE)
		return 0;
	return um__to_spill(ctx, r);
}

/* To another node: after the eviction that still brings the bytes. */
static int evict_to_host(struct um_context *ctx, um_region_t h,
			 um_tier_t tier)
{
	int ret = um__to_host(ctx, um__region_get(ctx, h), tier);

	if (ret != -EINPROGRESS)
		return ret;
	ret = evict_wait_landed(ctx, h);
	if (ret)
		return ret;
	return um__to_host(ctx, um__region_get(ctx, h), tier);
}

/*
 * Make, in the pinned pool, the host copy an eviction of h to the host
 * will need, with the context lock not held: growing the pool pins memory
 * (a second or so per GiB on the H200), which under the lock would stall
 * every other libum call of the process. Best effort: the eviction itself
 * still grows the pool if this did not (or another call took the room).
 */
static void reserve_host_copy(struct um_context *ctx, um_region_t h,
			      um_tier_t tier)
{
	struct um_region *r;
	uint64_t bytes = 0;
	int node = 0;

	if (!um__tier_is_host(tier) || um__enter(ctx))
		return;
	r = h ? um__region_get(ctx, h) : NULL;
	if (r && !r->host && !r->acquired && um__tier_is_dev(r->residency)) {
		bytes = r->bytes;
		node = um__tier_node(ctx, tier);
	}
	um__exit(ctx);
	if (bytes)
		(void)um__pool_reserve(ctx->pool, node, bytes);
}

static int evict_locked(struct um_context *ctx, um_region_t h, um_tier_t tier)
{
	struct um_region *r = h ? um__region_get(ctx, h) : NULL;

	if (!h)
		return -EINVAL;
	if (check_tier(ctx, tier, UM__USE_EVICT_TO, "evict"))
		return -EINVAL;
	if (!r)
		return -ENOENT;
	if (r->acquired)
		return -EBUSY;
	if (um__tier_via_host(tier))
		return evict_to_spill(ctx, h);
	return evict_to_host(ctx, h, tier);
}

int um_evict(struct um_context *ctx, um_region_t h, um_tier_t tier)
{
	int rounds = 0, ret;

	reserve_host_copy(ctx, h, tier);
	ret = um__enter(ctx);
	if (ret)
		return ret;
	do {
		ret = evict_locked(ctx, h, tier);
	} while (ret == UM__POOL_SHORT && short_retry(ctx, &rounds, h));
	ret = (int)um__pool_short_end(ctx, ret);
	um__exit(ctx);
	return ret;
}

/*
 * Shed from a host tier: to the spill (dest NONE/DISK) or another node;
 * never skip (the region the caller is working on), if any.
 */
static int64_t shed_host(struct um_context *ctx, um_tier_t tier,
			 uint64_t bytes, um_tier_t dest,
			 const struct um_region *skip)
{
	struct victim_iter it = { .tier = tier, .skip = skip };
	struct um_region *v;
	uint64_t done = 0;
	int last = 0;

	if (dest == UM_TIER_NONE)
		dest = UM_TIER_DISK;
	if (um__tier_via_host(dest) && !ctx->spill)
		return -EOPNOTSUPP;
	while (done < bytes && (v = victim_next(ctx, &it))) {
		int ret;

		if (v->pending)
			continue;
		if (um__tier_via_host(dest))
			ret = um__to_spill(ctx, v);
		else
			ret = um__to_host(ctx, v, dest);
		if (ret == UM__POOL_SHORT) {
			last = ret;	/* um_shed grows the pool, goes on */
			break;
		}
		if (!ret && !on_tier(v, tier))
			done += v->bytes;
		else if (ret)
			last = ret;
	}
	return done ? (int64_t)done : (last && last != -EPERM ? last : 0);
}

/*
 * Rounds of a call's pool short met by spilling instead of growing; the
 * rounds after them grow (um__pool_short_retry counts on to its limit).
 */
#define SPILL_FIRST_ROUNDS	4

/*
 * A pool short (UM__POOL_SHORT) to retry. While our memory cgroup is near
 * its limit, growing the pool charges the cgroup for a new chunk at the
 * worst time: in the VM rig a trainer was OOM-killed by the cgroup in the
 * MADV_POPULATE_WRITE of a chunk, while the pressure loop was still
 * writing its copies out. So the thread that needs host memory first
 * spills released host copies of its own and takes their blocks, as the
 * kernel's direct reclaim does; it grows only when none is left to spill.
 * Never the copy of busy, the region the call is for: its restore would
 * read it straight back.
 */
static bool short_retry(struct um_context *ctx, int *rounds, um_region_t busy)
{
	uint64_t need = ctx->pool_need_bytes;
	int64_t got;

	if (!need || *rounds >= SPILL_FIRST_ROUNDS || !ctx->spill ||
	    !atomic_load(&ctx->cgroup_hot))
		return um__pool_short_retry(ctx, rounds);
	got = shed_host(ctx, UM_TIER_HOST_ANY, need, UM_TIER_DISK,
			busy ? um__region_get(ctx, busy) : NULL);
	if (got <= 0)
		return um__pool_short_retry(ctx, rounds);
	++*rounds;
	ctx->pool_need_bytes = 0;
	um__log(ctx, UM_LOG_DEBUG,
		"pool: short of %s while our memory cgroup nears its limit: spilled %s of host copies instead of growing",
		UM_SIZE(need), UM_SIZE(got > 0 ? (uint64_t)got : 0));
	return true;
}

static int64_t shed_device(struct um_context *ctx, int dev, uint64_t bytes,
			   um_tier_t dest)
{
	struct victim_iter it = { .tier = UM_TIER_GPU(dev) };
	uint64_t done = 0;
	um_region_t *spill = NULL;
	struct um_region *v;
	uint32_t cap = ctx->victims_dev[dev].n;
	int i, ns = 0, last = 0;

	if (um__tier_via_host(dest) && !ctx->spill)
		return -EOPNOTSUPP;
	if (um__tier_via_host(dest)) {
		spill = calloc((size_t)cap + 1, sizeof(*spill));
		if (!spill)
			return -ENOMEM;
	}
	while (done < bytes && (v = victim_next(ctx, &it))) {
		um_tier_t to = um__tier_is_host(dest) ? dest :
			       UM_TIER_HOST_ANY;
		int ret = evict(ctx, v, to);

		if (ret == UM__POOL_SHORT) {
			last = ret;	/* um_shed grows the pool, goes on */
			break;
		}
		if (ret) {
			if (ret != -EBUSY)	/* busy: not a victim after all */
				last = ret;
			continue;
		}
		done += v->dev_len;
		/* a victim joining meanwhile is evicted, not spilled */
		if (spill && (uint32_t)ns <= cap)
			spill[ns++] = v->handle;
	}
	/* to the disk: once on the host (this waits for the copies) */
	for (i = 0; i < ns; i++) {
		struct um_region *r = um__region_get(ctx, spill[i]);

		while (r && r->pending) {
			if (um__wait_region(ctx, r) == -EPROTO)
				break;
			r = um__region_get(ctx, spill[i]);
		}
		if (r && !r->acquired && !(r->flags & UM_REGION_NO_SPILL))
			um__to_spill(ctx, r);
	}
	free(spill);
	return done ? (int64_t)done : last;
}

static int64_t um__shed_locked(struct um_context *ctx, um_tier_t tier,
			       uint64_t bytes, um_tier_t dest)
{
	if (check_tier(ctx, dest, UM__USE_SHED_TO, "shed") ||
	    check_tier(ctx, tier, UM__USE_SHED_FROM, "shed"))
		return -EINVAL;
	if (um__tier_is_dev(tier))
		return bytes ? shed_device(ctx, (int)UM_TIER_ID(tier), bytes,
					   dest) : 0;
	/* from host memory: to a named node, or the spill */
	if (dest == UM_TIER_HOST_ANY)
		return -EINVAL;
	return bytes ? shed_host(ctx, tier, bytes, dest, NULL) : 0;
}

int64_t um_shed(struct um_context *ctx, um_tier_t tier, uint64_t bytes,
		um_tier_t dest)
{
	int rounds = 0, ret = um__enter(ctx);
	uint64_t done = 0;
	int64_t n;

	if (ret)
		return ret;
	for (;;) {
		n = um__shed_locked(ctx, tier, bytes - done, dest);
		if (n > 0)
			done += (uint64_t)n;
		if (done >= bytes || !short_retry(ctx, &rounds, 0))
			break;
	}
	n = um__pool_short_end(ctx, n);
	um__exit(ctx);
	return done ? (int64_t)done : n;
}

int um_budget_set(struct um_context *ctx, unsigned int device, uint64_t bytes)
{
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if ((int)device >= ctx->ndev || device >= UM_MAX_DEVICES) {
		ret = -EINVAL;
		goto out;
	}
	if (bytes > ctx->dev[device].total) {
		um__log(ctx, UM_LOG_ERR,
			"budget: %s is more than device %u has (%s)",
			UM_SIZE(bytes), device, UM_SIZE(ctx->dev[device].total));
		ret = -EINVAL;
		goto out;
	}
	ctx->dev[device].budget = bytes;
	ret = enforce_budget_retry(ctx, (int)device);
out:
	um__exit(ctx);
	return ret;
}

int um_budget_get(struct um_context *ctx, unsigned int device, uint64_t *bytes)
{
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!bytes || (int)device >= ctx->ndev || device >= UM_MAX_DEVICES)
		ret = -EINVAL;
	else
		*bytes = ctx->dev[device].budget;
	um__exit(ctx);
	return ret;
}
