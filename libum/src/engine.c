/* SPDX-License-Identifier: MIT */
/*
 * engine.c - the migration engine.
 *
 * Each device has two backend queues: q_evict (device -> host) and
 * q_restore (host -> device), so one region's eviction overlaps another's
 * restore (the link carries both directions at once: 95 GB/s against 55
 * one way on the H200, design.rst). A migration is a run of copies cut in
 * pieces of chunk_bytes (default 64 MiB: 2 MiB pieces run at a third of the
 * link speed) between two fences, start and end, so its duration is
 * device-timed.
 *
 * Issue is asynchronous; completion is reaped lazily, at every API entry
 * and in the waits: reaping a finished eviction unmaps the device memory
 * (TIERED), takes the region off its device's books, updates stats and
 * queues MIGRATED/EVICTED events. A region counts on its device from the
 * moment its memory is mapped (or its restore issued) until its eviction is
 * reaped, so the budget holds in our books at every instant.
 *
 * Ordering between the two queues is explicit: an eviction waits for the
 * region's last restore and for the fence recorded on the user's stream at
 * release; a MANAGED restore waits for the region's last eviction. A TIERED
 * region re-acquired while its eviction is in flight needs no copy at all:
 * its device memory is still mapped and intact, so the eviction is simply
 * superseded (its host copy is dropped when it is reaped).
 *
 * With a reaper thread, evictions are paced: a few pieces in flight per
 * device, the rest issued as they complete (see "eviction pacing"), so
 * that a restore whose mapping waits for the device's work in flight
 * waits for a piece or two, not for whole evictions.
 *
 * Mechanism only: no public entry point and no policy. When the host has no
 * room for a copy the caller gets -ENOMEM and decides (policy.c spills
 * older host copies and tries again).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "internal.h"
#include "um_numa.h"
#include "spill.h"
#include "util.h"

static bool paced(const struct um_context *ctx);
static void pace_pump(struct um_context *ctx, int dev);
static void pace_flush(struct um_context *ctx, struct um_mig *m);
static void pace_fini(struct um_context *ctx, struct um_dev *d);
static int um__from_spill(struct um_context *ctx, struct um_region *r,
			  int node);

/* ---- fences ----------------------------------------------------------- */

static int fence_get(struct um_context *ctx, struct um_fence **f)
{
	if (ctx->nfences) {
		*f = ctx->fences[--ctx->nfences];
		return 0;
	}
	return ctx->be.ops->fence_create(&ctx->be, f);
}

static void fence_put(struct um_context *ctx, struct um_fence *f)
{
	if (!f)
		return;
	if (ctx->nfences == ctx->fence_cap) {
		uint32_t cap = ctx->fence_cap ? ctx->fence_cap * 2 : 16;
		struct um_fence **n = realloc(ctx->fences, cap * sizeof(*n));

		if (!n) {
			ctx->be.ops->fence_destroy(&ctx->be, f);
			return;
		}
		ctx->fences = n;
		ctx->fence_cap = cap;
	}
	ctx->fences[ctx->nfences++] = f;
}

/* ---- release fences ---------------------------------------------------- */

/*
 * At the last um_release: a fence on every stream that held r, after the
 * kernels queued there, for the eviction (and a free) to wait on: with two
 * holders on two streams, fencing one would let the eviction copy, and the
 * unmap run, under the other's kernels. 0, or the first error (r is then
 * left with no valid fence).
 */
int um__released_record(struct um_context *ctx, struct um_region *r)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	uint32_t i;
	int ret = 0;

	r->released_valid = false;
	r->nreleased = 0;
	for (i = 0; i < r->nacq_streams && !ret; i++) {
		if (!r->hold[i].fence)
			ret = ops->fence_create(&ctx->be, &r->hold[i].fence);
		if (!ret)
			ret = ops->stream_record_fence(&ctx->be,
						       r->hold[i].stream,
						       r->hold[i].fence);
	}
	if (ret)
		return ret;
	r->nreleased = r->nacq_streams;
	r->released_valid = true;
	return 0;
}

/* -EAGAIN while some holder's work fenced at release may still run. */
static int um__released_query(struct um_context *ctx, struct um_region *r)
{
	uint32_t i;

	for (i = 0; r->released_valid && i < r->nreleased; i++)
		if (ctx->be.ops->fence_query(&ctx->be, r->hold[i].fence) ==
		    -EAGAIN)
			return -EAGAIN;
	return 0;
}

void um__released_wait(struct um_context *ctx, struct um_region *r)
{
	uint32_t i;

	for (i = 0; r->released_valid && i < r->nreleased; i++)
		ctx->be.ops->fence_wait(&ctx->be, r->hold[i].fence);
}

/* Order q after every fence of the last release. */
static int released_order(struct um_context *ctx, struct um_region *r,
			  struct um_queue *q)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; r->released_valid && i < r->nreleased && !ret; i++)
		ret = ctx->be.ops->queue_wait_fence(&ctx->be, q,
						    r->hold[i].fence);
	return ret;
}

void um__released_drop(struct um_context *ctx, struct um_region *r)
{
	uint32_t i;

	for (i = 0; i < UM_HOLD_STREAMS; i++) {
		if (r->hold[i].fence)
			ctx->be.ops->fence_destroy(&ctx->be, r->hold[i].fence);
		r->hold[i].fence = NULL;
	}
	r->released_valid = false;
	r->nreleased = 0;
}

/* ---- init / fini ------------------------------------------------------ */

int um__engine_init(struct um_context *ctx)
{
	struct um_backend *be = &ctx->be;

	ctx->reap_fd = -1;
	if (be->ops->queue_notify)
		ctx->reap_fd = eventfd(0, EFD_CLOEXEC);

	for (int i = 0; i < ctx->ndev; i++) {
		struct um_dev *d = &ctx->dev[i];
		int ret = be->ops->queue_create(be, i, &d->q_evict);

		if (!ret)
			ret = be->ops->queue_create(be, i, &d->q_restore);
		if (ret) {
			um__log(ctx, UM_LOG_ERR,
				"engine: cannot create queues on device %d: %s",
				i, strerror(-ret));
			return ret;
		}
	}
	return 0;
}

static void mig_free(struct um_context *ctx, struct um_mig *m)
{
	fence_put(ctx, m->start);
	fence_put(ctx, m->end);
	free(m);
}

void um__engine_fini(struct um_context *ctx)
{
	struct um_backend *be = &ctx->be;

	if (!be->ops)
		return;
	if (ctx->reap_fd >= 0) {
		/* no notification may land on a closed (or reused) fd */
		for (int i = 0; i < ctx->ndev; i++) {
			if (ctx->dev[i].q_evict)
				be->ops->queue_sync(be, ctx->dev[i].q_evict);
		}
		close(ctx->reap_fd);
		ctx->reap_fd = -1;
	}
	while (ctx->migs) {
		struct um_mig *m = ctx->migs;

		ctx->migs = m->next;
		mig_free(ctx, m);
	}
	ctx->migs_tail = NULL;
	for (uint32_t i = 0; i < ctx->nfences; i++)
		be->ops->fence_destroy(be, ctx->fences[i]);
	free(ctx->fences);
	ctx->fences = NULL;
	ctx->nfences = ctx->fence_cap = 0;
	for (int i = 0; i < ctx->ndev; i++) {
		struct um_dev *d = &ctx->dev[i];

		pace_fini(ctx, d);
		if (d->q_evict)
			be->ops->queue_destroy(be, d->q_evict);
		if (d->q_restore)
			be->ops->queue_destroy(be, d->q_restore);
		d->q_evict = d->q_restore = NULL;
	}
}

/* ---- the reaper ------------------------------------------------------- */

/*
 * A trainer that evicts and then allocates through its framework makes no
 * further libum call: without this thread, the device memory of a TIERED
 * eviction would come back only at the next one. Each eviction asks the
 * backend to signal reap_fd once its copies are done; the thread then reaps
 * (which unmaps and releases). It only takes the lock and reaps: events stay
 * queued for the next libum call to deliver, on the caller's thread.
 */
static void *reaper_main(void *arg)
{
	struct um_context *ctx = arg;
	uint64_t n;

	um__thread_name("um-reaper");
	for (;;) {
		if (read(ctx->reap_fd, &n, sizeof(n)) < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&ctx->lock);
		if (ctx->reaper_stop) {
			pthread_mutex_unlock(&ctx->lock);
			break;
		}
		um__reap(ctx);
		pthread_mutex_unlock(&ctx->lock);
	}
	return NULL;
}

void um__reaper_start(struct um_context *ctx)
{
	if (ctx->reap_fd < 0)
		return;
	ctx->reaper_stop = false;
	ctx->reaper_on = !pthread_create(&ctx->reaper, NULL, reaper_main,
					 ctx);
	if (!ctx->reaper_on)
		um__log(ctx, UM_LOG_WARN,
			"engine: no reaper thread: device memory of evictions comes back at the next libum call");
}

void um__reaper_stop(struct um_context *ctx)
{
	uint64_t one = 1;

	if (!ctx->reaper_on)
		return;
	pthread_mutex_lock(&ctx->lock);
	ctx->reaper_stop = true;
	pthread_mutex_unlock(&ctx->lock);
	if (write(ctx->reap_fd, &one, sizeof(one)) < 0)
		um__log(ctx, UM_LOG_WARN, "engine: cannot wake the reaper: %s",
			strerror(errno));
	pthread_join(ctx->reaper, NULL);
	ctx->reaper_on = false;
}

/* ---- books ------------------------------------------------------------ */

um_tier_t um__host_tier(const struct um_context *ctx, int node)
{
	(void)ctx;
	return node < 0 ? UM_TIER_HOST_ANY : UM_TIER_HOST_NODE((unsigned)node);
}

/* Pool node for a host tier: a named node, else the context's home. */
int um__tier_node(const struct um_context *ctx, um_tier_t t)
{
	if (um__tier_is_host(t) && !um__tier_is_any(t))
		return (int)UM_TIER_ID(t);
	return ctx->home_node;
}

static void count_on_device(struct um_context *ctx, struct um_region *r)
{
	if (r->counted)
		return;
	r->counted = true;
	um__books_budget(ctx, r, true);
	um__victims_sync(ctx, r);
	um__books_changed(ctx);
}

static void uncount(struct um_context *ctx, struct um_region *r)
{
	if (!r->counted)
		return;
	r->counted = false;
	um__books_budget(ctx, r, false);
	um__victims_sync(ctx, r);
	um__books_changed(ctx);
}

static void set_residency(struct um_context *ctx, struct um_region *r,
			  um_tier_t to)
{
	um__books_residency(ctx, r, r->residency, to);
	r->residency = to;
	um__victims_sync(ctx, r);
	um__hostneed_sync(ctx, r);
}

bool um__draining(const struct um_region *r)
{
	return r->counted && !um__tier_is_dev(r->residency);
}

static bool held_on_device(const struct um_region *r)
{
	return r->acquired && um__tier_is_dev(r->acq_tier);
}

/*
 * Bring r's resources in line with its residency once nothing is in
 * flight: host copy dropped when the bytes are on the device (unless kept
 * for READ_MOSTLY), device memory given back when they are not (and nobody
 * holds it).
 */
void um__settle(struct um_context *ctx, struct um_region *r)
{
	struct um_backend *be = &ctx->be;
	bool on_dev = um__tier_is_dev(r->residency);

	if (r->pending)
		return;
	if (!on_dev)
		r->host_kept = false;
	if ((on_dev || r->residency == UM_TIER_NONE) && r->host &&
	    !r->host_kept) {
		um__pool_free(ctx->pool, r->host);
		r->host = NULL;
		um__hostneed_sync(ctx, r);
	}
	if (um__tier_is_dev(r->residency) || held_on_device(r))
		return;
	/* never unmap under work fenced at release (after failed copies) */
	if (r->mapped && um__released_query(ctx, r) == -EAGAIN)
		return;
	if (r->mapped) {
		be->ops->phys_unmap(be, (int)r->device, r->ptr, r->dev_len,
				    r->phys);
		r->mapped = false;
		r->phys = NULL;
	}
	uncount(ctx, r);
}

/*
 * Only from what the pool holds: pinning more under the context lock would
 * stall every call (refill.c grows it, with the lock dropped).
 */
int um__host_block(struct um_context *ctx, struct um_region *r, int node,
		   bool zero)
{
	unsigned int flags = UM_POOL_NOGROW | (zero ? UM_POOL_ZERO : 0);
	int ret;

	if (r->host)
		return 0;
	ret = um__pool_alloc(ctx->pool, (size_t)r->bytes, node, flags,
			     &r->host);
	if (ret == -EAGAIN && !ctx->pool_grow_failed) {
		/* grown by the entry point, with the lock dropped */
		r->host = NULL;
		if (r->bytes > ctx->pool_need_bytes) {
			ctx->pool_need_bytes = r->bytes;
			ctx->pool_need_node = node;
		}
		return UM__POOL_SHORT;
	}
	if (ret) {
		r->host = NULL;
		um__log(ctx, UM_LOG_WARN,
			"pool: no host copy of %s for \"%s\": %s",
			UM_SIZE(r->bytes), r->name, strerror(-ret));
		return ret == -EAGAIN ? -ENOMEM : ret;
	}
	r->host_node = node;
	um__hostneed_sync(ctx, r);
	return 0;
}

/* ---- issue ------------------------------------------------------------ */

static int mig_new(struct um_context *ctx, struct um_region *r,
		   enum um_mig_dir dir, um_tier_t to, struct um_mig **out)
{
	struct um_mig *m = calloc(1, sizeof(*m));
	int ret;

	if (!m)
		return -ENOMEM;
	m->r = r;
	m->dir = dir;
	m->from = r->residency;
	m->to = to;
	m->bytes = r->bytes;
	m->issued = m->bytes;	/* a paced eviction starts from 0 */
	ret = fence_get(ctx, &m->start);
	if (!ret)
		ret = fence_get(ctx, &m->end);
	if (ret) {
		mig_free(ctx, m);
		return ret;
	}
	*out = m;
	return 0;
}

static void mig_link(struct um_context *ctx, struct um_mig *m)
{
	struct um_region *r = m->r;

	if (ctx->migs_tail)
		ctx->migs_tail->next = m;
	else
		ctx->migs = m;
	ctx->migs_tail = m;
	r->pending++;
	r->mig = m;
	if (m->dir == UM_MIG_RESTORE)
		r->restore_mig = m;
	else
		r->evict_mig = m;
}

static void report_lost(struct um_context *ctx, struct um_region *leaving);

/* Work already issued on q cannot be taken back: drain it, then undo. */
static int issue_failed(struct um_context *ctx, struct um_mig *m,
			struct um_queue *q, int ret, const char *what)
{
	ctx->be.ops->queue_sync(&ctx->be, q);
	um__log(ctx, UM_LOG_ERR, "engine: %s of \"%s\" failed to issue: %s",
		what, m->r->name, strerror(-ret));
	/* a dead context: what was on the device is gone, say what */
	if (ret == -ENOTRECOVERABLE)
		report_lost(ctx, NULL);
	mig_free(ctx, m);
	return ret;
}

static int copy_chunks(struct um_context *ctx, struct um_queue *q, char *dst,
		       const char *src, uint64_t len)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	uint64_t chunk = ctx->set.chunk_bytes;

	for (uint64_t off = 0; off < len; off += chunk) {
		size_t n = (size_t)(len - off < chunk ? len - off : chunk);
		int ret = src ? ops->copy(&ctx->be, q, dst + off, src + off, n) :
				ops->fill(&ctx->be, q, dst + off, 0, n);

		if (ret)
			return ret;
	}
	return 0;
}

static int prefetch_chunks(struct um_context *ctx, struct um_queue *q,
			   char *p, uint64_t len, um_tier_t where)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	uint64_t chunk = ctx->set.chunk_bytes;

	for (uint64_t off = 0; off < len; off += chunk) {
		size_t n = (size_t)(len - off < chunk ? len - off : chunk);
		int ret = ops->prefetch(&ctx->be, q, p + off, n, where);

		if (ret)
			return ret;
	}
	return 0;
}

/* MANAGED + DISCARD_EVICT: per piece, copy out then drop the pages. */
static int copy_discard_chunks(struct um_context *ctx, struct um_queue *q,
			       char *host, char *p, uint64_t len)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	uint64_t chunk = ctx->set.chunk_bytes;

	for (uint64_t off = 0; off < len; off += chunk) {
		size_t n = (size_t)(len - off < chunk ? len - off : chunk);
		int ret = ops->copy(&ctx->be, q, host + off, p + off, n);

		if (!ret && ops->discard)
			ret = ops->discard(&ctx->be, q, p + off, n);
		if (ret)
			return ret;
	}
	return 0;
}

/* MANAGED + DISCARD_EVICT: per piece, drop, place on the device, copy in. */
static int discard_restore_chunks(struct um_context *ctx, struct um_queue *q,
				  char *p, const char *host, uint64_t len,
				  um_tier_t where)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	uint64_t chunk = ctx->set.chunk_bytes;

	for (uint64_t off = 0; off < len; off += chunk) {
		size_t n = (size_t)(len - off < chunk ? len - off : chunk);
		int ret = 0;

		if (ops->discard)
			ret = ops->discard(&ctx->be, q, p + off, n);
		if (!ret)
			ret = ops->prefetch(&ctx->be, q, p + off, n, where);
		if (!ret)
			ret = ops->copy(&ctx->be, q, p + off, host + off, n);
		if (ret)
			return ret;
	}
	return 0;
}

static int map_device(struct um_context *ctx, struct um_region *r)
{
	struct um_backend *be = &ctx->be;
	int ret;

	if (r->backing != UM_BACKING_TIERED || r->mapped) {
		count_on_device(ctx, r);
		return 0;
	}
	ret = be->ops->phys_map(be, (int)r->device, r->ptr, r->dev_len,
				&r->phys);
	if (ret) {
		um__log(ctx, UM_LOG_WARN,
			"engine: device %u refused %s for \"%s\": %s",
			(unsigned int)r->device, UM_SIZE(r->dev_len), r->name,
			strerror(-ret));
		return ret;
	}
	r->mapped = true;
	count_on_device(ctx, r);
	return 0;
}

/*
 * Issue r's move to its device on q_restore. The caller made room in the
 * budget. Returns 0 with the copies in flight (r->restore_mig), 0 with
 * nothing to do, or -errno with r unchanged (bar device memory that
 * um__settle gives back).
 */
int um__restore(struct um_context *ctx, struct um_region *r)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	struct um_queue *q = ctx->dev[r->device].q_restore;
	um_tier_t to = UM_TIER_GPU(r->device);
	struct um_mig *m;
	int ret;

	if (um__tier_is_dev(r->residency)) {
		count_on_device(ctx, r);
		return 0;
	}
	if (r->backing == UM_BACKING_TIERED && r->mapped && r->evict_mig &&
	    r->mig == r->evict_mig) {
		/* superseded eviction: the device bytes are still there */
		set_residency(ctx, r, to);
		return 0;
	}
	if (um__tier_via_host(r->residency)) {
		/* the device reaches host copies only */
		ret = um__to_host(ctx, r, UM_TIER_HOST_ANY);
		if (ret)
			return ret;
	}
	ret = map_device(ctx, r);
	if (ret)
		return ret;
	ret = mig_new(ctx, r, UM_MIG_RESTORE, to, &m);
	if (ret)
		goto undo;
	if (r->evict_mig) {
		pace_flush(ctx, r->evict_mig);
		ret = ops->queue_wait_fence(&ctx->be, q, r->evict_mig->end);
	}
	if (!ret)
		ret = ops->fence_record(&ctx->be, m->start, q);
	if (ret) {
		mig_free(ctx, m);
		goto undo;
	}
	if (r->backing == UM_BACKING_TIERED) {
		m->fill = r->zero_on_restore;
		ret = copy_chunks(ctx, q, r->ptr, m->fill ? NULL : r->host,
				  r->bytes);
	} else if (r->host) {
		ret = discard_restore_chunks(ctx, q, r->ptr, r->host, r->bytes,
					     to);
	} else {
		m->fill = r->residency == UM_TIER_NONE;
		ret = prefetch_chunks(ctx, q, r->ptr, r->bytes, to);
	}
	if (!ret)
		ret = ops->fence_record(&ctx->be, m->end, q);
	if (ret) {
		issue_failed(ctx, m, q, ret, "restore");
		goto undo;
	}
	mig_link(ctx, m);
	set_residency(ctx, r, to);
	r->zero_on_restore = false;
	/* the device copy is the host copy: keep it for a clean eviction */
	r->host_kept = r->read_mostly && r->host &&
		       r->backing == UM_BACKING_TIERED && !m->fill;
	return 0;
undo:
	um__settle(ctx, r);
	return ret;
}

/*
 * Issue r's eviction from its device to host tier to on q_evict. r must be
 * released and resident on the device. The bytes land in a pool block
 * (TIERED, MANAGED + DISCARD_EVICT) or in the managed pages (MANAGED).
 * A kept READ_MOSTLY host copy is already current: the eviction copies
 * nothing, it only waits for the holders' release fences (their queued
 * work may still read the device copy) before the device memory goes, and
 * it lands on the node of the kept copy.
 */
static bool evict_to_block(const struct um_region *r)
{
	return r->backing == UM_BACKING_TIERED ||
	       (r->flags & UM_REGION_DISCARD_EVICT);
}

bool um__evict_needs_block(const struct um_region *r)
{
	return !r->acquired && !r->unfenced &&
	       um__tier_is_dev(r->residency) && evict_to_block(r);
}

/* Order q after what r's eviction must wait for, and mark its start. */
static int evict_begin(struct um_context *ctx, struct um_mig *m,
		       struct um_queue *q)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	struct um_region *r = m->r;
	int ret = 0;

	if (r->restore_mig)
		ret = ops->queue_wait_fence(&ctx->be, q, r->restore_mig->end);
	if (!ret)
		ret = released_order(ctx, r, q);
	if (!ret)
		ret = ops->fence_record(&ctx->be, m->start, q);
	return ret;
}

/* Issue bytes [off, off + len) of m's eviction on q. */
static int evict_range(struct um_context *ctx, struct um_mig *m,
		       struct um_queue *q, uint64_t off, uint64_t len)
{
	struct um_region *r = m->r;
	char *dev = (char *)r->ptr + off;

	if (r->backing == UM_BACKING_TIERED)
		return copy_chunks(ctx, q, (char *)r->host + off, dev, len);
	if (evict_to_block(r))
		return copy_discard_chunks(ctx, q, (char *)r->host + off, dev,
					   len);
	return prefetch_chunks(ctx, q, dev, len, m->to);
}

/* Unpaced: the whole eviction at once; an error leaves r unchanged. */
static int evict_whole(struct um_context *ctx, struct um_mig *m,
		       struct um_queue *q)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	int ret = evict_begin(ctx, m, q);

	if (ret) {
		mig_free(ctx, m);
		return ret;
	}
	if (!m->clean)
		ret = evict_range(ctx, m, q, 0, m->bytes);
	if (!ret)
		ret = ops->fence_record(&ctx->be, m->end, q);
	if (ret)
		return issue_failed(ctx, m, q, ret, "eviction");
	/* the reaper gives the device memory back when the copies are done */
	if (ctx->reap_fd >= 0 && ops->queue_notify(&ctx->be, q, ctx->reap_fd))
		um__log(ctx, UM_LOG_DEBUG,
			"engine: no completion signal for \"%s\": reaped at the next call",
			m->r->name);
	return 0;
}

int um__evict(struct um_context *ctx, struct um_region *r, um_tier_t to,
	      bool policy)
{
	struct um_queue *q = ctx->dev[r->device].q_evict;
	struct um_mig *m;
	int ret;

	if (r->acquired || r->unfenced)
		return -EBUSY;
	if (!um__tier_is_dev(r->residency))
		return 0;
	if (evict_to_block(r)) {
		ret = um__host_block(ctx, r, um__tier_node(ctx, to), false);
		if (ret)
			return ret;
		to = um__host_tier(ctx, r->host_node);
	}
	ret = mig_new(ctx, r, UM_MIG_EVICT, to, &m);
	if (ret)
		goto undo;
	m->policy = policy;
	m->clean = r->host_kept;
	/* nothing to pace in a clean eviction: out whole, at once */
	if (paced(ctx) && !m->clean)
		m->issued = 0;
	else
		ret = evict_whole(ctx, m, q);
	if (ret)
		goto undo;
	mig_link(ctx, m);
	set_residency(ctx, r, to);
	if (paced(ctx))
		pace_pump(ctx, (int)r->device);
	return 0;
undo:
	um__settle(ctx, r);
	return ret;
}

/* ---- eviction pacing -------------------------------------------------- */

/*
 * Where mapping waits for the device's work in flight (cuMemMap and
 * cuMemSetAccess may; the map_under_copy probe settles it on a GPU), a
 * restore issued while an eviction runs would wait for all of it. So an
 * eviction goes out in pieces, at most UM_PACE_PIECES of them in flight
 * on its device's q_evict, in issue order across evictions; each piece
 * asks the backend to wake the reaper when it completes, and every reap
 * (the reaper's, an API entry's) issues the next pieces. A restore's
 * mapping then waits for a piece or two, after which its copies and the
 * eviction's share the link. Whoever needs an eviction's end (a wait, a
 * stream or queue ordered after it) first issues what is left of it.
 * Only with a reaper thread: without one nothing would issue pieces
 * between libum calls, so an eviction goes out whole, as it always did.
 */
static bool paced(const struct um_context *ctx)
{
	return ctx->reaper_on;
}

static uint64_t piece_bytes(const struct um_context *ctx)
{
	uint64_t chunk = ctx->set.chunk_bytes;

	return chunk < UM_PACE_PIECE ? chunk : UM_PACE_PIECE;
}

/* Forget the pieces in flight on d that are done (or failed). */
static void pace_retire(struct um_context *ctx, struct um_dev *d)
{
	while (d->npaced && ctx->be.ops->fence_query(&ctx->be,
				d->paced[d->paced_first]) != -EAGAIN) {
		d->paced_first = (d->paced_first + 1) % UM_PACE_PIECES;
		d->npaced--;
	}
}

/*
 * Mark the piece just issued on d: a fence in a free slot, or, all taken
 * (a flush issues past the bound), the newest one recorded again.
 */
static int pace_mark(struct um_context *ctx, struct um_dev *d)
{
	uint32_t slot = (d->paced_first + d->npaced) % UM_PACE_PIECES;
	int ret;

	if (d->npaced == UM_PACE_PIECES)
		slot = (slot + UM_PACE_PIECES - 1) % UM_PACE_PIECES;
	if (!d->paced[slot]) {
		ret = fence_get(ctx, &d->paced[slot]);
		if (ret)
			return ret;
	}
	ret = ctx->be.ops->fence_record(&ctx->be, d->paced[slot], d->q_evict);
	if (!ret && d->npaced < UM_PACE_PIECES)
		d->npaced++;
	return ret;
}

/* The oldest eviction on dev with pieces left to issue. */
static struct um_mig *pace_next(struct um_context *ctx, int dev)
{
	struct um_mig *m;

	for (m = ctx->migs; m; m = m->next)
		if (m->dir == UM_MIG_EVICT && m->issued < m->bytes &&
		    (int)m->r->device == dev)
			return m;
	return NULL;
}

/*
 * A piece failed to issue: what went out cannot be taken back, so drain
 * it; the reaper then finishes m with the error (bytes kept on the device).
 */
static void pace_failed(struct um_context *ctx, struct um_mig *m,
			struct um_queue *q, int ret)
{
	ctx->be.ops->queue_sync(&ctx->be, q);
	um__log(ctx, UM_LOG_ERR,
		"engine: eviction of \"%s\" failed to issue after %s: %s",
		m->r->name, UM_SIZE(m->issued), strerror(-ret));
	m->err = ret;
	m->issued = m->bytes;
}

static void pace_issue(struct um_context *ctx, struct um_mig *m)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	struct um_dev *d = &ctx->dev[m->r->device];
	uint64_t n = m->bytes - m->issued;
	int ret = 0;

	if (n > piece_bytes(ctx))
		n = piece_bytes(ctx);
	if (!m->issued)
		ret = evict_begin(ctx, m, d->q_evict);
	if (!ret)
		ret = evict_range(ctx, m, d->q_evict, m->issued, n);
	if (!ret)
		ret = pace_mark(ctx, d);
	if (!ret && m->issued + n == m->bytes)
		ret = ops->fence_record(&ctx->be, m->end, d->q_evict);
	if (ret) {
		pace_failed(ctx, m, d->q_evict, ret);
		return;
	}
	m->issued += n;
	if (ops->queue_notify(&ctx->be, d->q_evict, ctx->reap_fd))
		um__log(ctx, UM_LOG_DEBUG,
			"engine: no completion signal for a piece of \"%s\": issued at the next call",
			m->r->name);
}

/* Issue pieces on dev up to the bound. */
static void pace_pump(struct um_context *ctx, int dev)
{
	struct um_dev *d = &ctx->dev[dev];
	struct um_mig *m;

	pace_retire(ctx, d);
	while (d->npaced < UM_PACE_PIECES && (m = pace_next(ctx, dev)))
		pace_issue(ctx, m);
}

/* Issue all of m, and what precedes it on its queue, now. */
static void pace_flush(struct um_context *ctx, struct um_mig *m)
{
	struct um_mig *n;

	while (m->issued < m->bytes &&
	       (n = pace_next(ctx, (int)m->r->device)))
		pace_issue(ctx, n);
}

static void pace_fini(struct um_context *ctx, struct um_dev *d)
{
	for (uint32_t i = 0; i < UM_PACE_PIECES; i++) {
		if (d->paced[i])
			ctx->be.ops->fence_destroy(&ctx->be, d->paced[i]);
		d->paced[i] = NULL;
	}
	d->paced_first = d->npaced = 0;
}

/* ---- host and spill moves (synchronous) ------------------------------- */

static int um__from_spill(struct um_context *ctx, struct um_region *r,
			  int node)
{
	int ret;

	if (!ctx->spill)
		return -EIO;
	ret = um__host_block(ctx, r, node, false);
	if (ret)
		return ret;
	ret = um__spill_read(ctx->spill, r->handle, r->host, (size_t)r->bytes);
	if (ret) {
		um__log(ctx, UM_LOG_ERR,
			"spill: reading \"%s\" back failed: %s; it stays in the spill tier",
			r->name, strerror(-ret));
		um__pool_free(ctx->pool, r->host);
		r->host = NULL;
		return ret;
	}
	um__spill_drop(ctx->spill, r->handle);
	set_residency(ctx, r, um__host_tier(ctx, r->host_node));
	return 0;
}

int um__to_spill(struct um_context *ctx, struct um_region *r)
{
	int ret;

	if (!ctx->spill)
		return -EOPNOTSUPP;
	if (r->flags & UM_REGION_NO_SPILL)
		return -EPERM;
	if (r->residency == UM_TIER_DISK)
		return 0;
	if (!um__tier_is_host(r->residency) || !r->host || r->pending)
		return -EOPNOTSUPP;
	ret = um__spill_write(ctx->spill, r->handle, r->host,
			      (size_t)r->bytes);
	if (ret) {
		um__log(ctx, UM_LOG_WARN,
			"spill: writing \"%s\" (%s) failed: %s; it stays on the host",
			r->name, UM_SIZE(r->bytes), strerror(-ret));
		return ret;
	}
	um__pool_free(ctx->pool, r->host);
	r->host = NULL;
	set_residency(ctx, r, UM_TIER_DISK);
	return 0;
}

/*
 * The pages of a pool chunk to node. All or nothing for the pool: when some
 * stay behind (pinned by a driver, as cudaHostAlloc's are) the range is
 * bound back to its heap's node and the caller copies.
 */
static int move_chunk_pages(void *base, size_t len, int node, int from)
{
	uint64_t moved = 0;
	int ret = um__numa_move(base, len, node, &moved);

	if (!ret && moved < len && um__numa_available())
		ret = -EBUSY;
	if (ret && from >= 0)
		(void)um__numa_bind(base, len, from);
	return ret;
}

/*
 * A host copy that fills its pool chunk moves with move_pages: no second
 * copy of its bytes, the kernel migrates the pages; others are copied.
 */
static int host_move_pages(struct um_context *ctx, struct um_region *r,
			   int node)
{
	int ret = node < 0 ? -EOPNOTSUPP :
		  um__pool_move(ctx->pool, r->host, node, move_chunk_pages);

	if (!ret) {
		r->host_node = node;
		ctx->books.node_moves_paged++;
		set_residency(ctx, r, um__host_tier(ctx, node));
	}
	return ret;
}

static int host_move(struct um_context *ctx, struct um_region *r, int node)
{
	void *old = r->host;
	int ret;

	if (!old)
		return -EOPNOTSUPP;	/* MANAGED pages: the driver places them */
	if (r->pending)
		return -EINPROGRESS;	/* its eviction is still filling old */
	if (!host_move_pages(ctx, r, node))
		return 0;
	r->host = NULL;
	ret = um__host_block(ctx, r, node, false);
	if (ret) {
		r->host = old;
		return ret;
	}
	memcpy(r->host, old, (size_t)r->bytes);
	um__pool_free(ctx->pool, old);
	ctx->books.node_moves_copied++;
	set_residency(ctx, r, um__host_tier(ctx, node));
	return 0;
}

/*
 * Bring r's bytes to host tier to (any node, or a named one, node in the
 * pool's terms), by the move r's tier's row names.
 */
typedef int (*to_host_fn)(struct um_context *ctx, struct um_region *r,
			  um_tier_t to, int node);

static int to_host_nothing(struct um_context *ctx, struct um_region *r,
			   um_tier_t to, int node)
{
	return 0;
}

static int to_host_evict(struct um_context *ctx, struct um_region *r,
			 um_tier_t to, int node)
{
	int ret = um__evict(ctx, r, to, false);

	/* a kept copy lands on its own node: move it once landed */
	if (!ret && !um__tier_is_any(to) &&
	    (int)UM_TIER_ID(r->residency) != node)
		return -EINPROGRESS;
	return ret;
}

static int to_host_node(struct um_context *ctx, struct um_region *r,
			um_tier_t to, int node)
{
	if (um__tier_is_any(to) || (int)UM_TIER_ID(r->residency) == node)
		return 0;
	return host_move(ctx, r, node);
}

static int to_host_read(struct um_context *ctx, struct um_region *r,
			um_tier_t to, int node)
{
	return um__from_spill(ctx, r, node);
}

static const to_host_fn to_host_moves[] = {
	[UM__MOVE_NOTHING] = to_host_nothing,
	[UM__MOVE_EVICT] = to_host_evict,
	[UM__MOVE_NODE] = to_host_node,
	[UM__MOVE_READ] = to_host_read,
};

_Static_assert(sizeof(to_host_moves) / sizeof(to_host_moves[0]) ==
	       UM__MOVE_COUNT, "one function per enum um__tier_move");

/*
 * Move r's bytes to host tier to. From the device: an asynchronous
 * eviction. From the spill or another node: synchronous. Never touched:
 * nothing to move. To another node while an eviction still brings the
 * bytes: -EINPROGRESS, for the caller to wait (the lock dropped) and call
 * again.
 */
int um__to_host(struct um_context *ctx, struct um_region *r, um_tier_t to)
{
	const struct um__tier_desc *d = um__tier(r->residency);

	if (!d)
		return 0;
	return to_host_moves[d->to_host](ctx, r, to, um__tier_node(ctx, to));
}

/* ---- reaping ---------------------------------------------------------- */

/*
 * A sticky error killed the GPU context (-ENOTRECOVERABLE): every byte on
 * the device went with it. Name, once, each region whose only copy was
 * there: resident on the device, or leaving it (its host copy is not whole).
 * A restore in flight still has its bytes on the host.
 */
static void report_lost(struct um_context *ctx, struct um_region *leaving)
{
	struct um_region *r;

	if (ctx->dead_reported)
		return;
	ctx->dead_reported = true;
	for (r = ctx->regions.next; r != &ctx->regions; r = r->next) {
		bool out = r == leaving || r->evict_mig;

		if (!out && (!um__tier_is_dev(r->residency) || r->restore_mig))
			continue;
		r->error = -ENOTRECOVERABLE;
		um__log(ctx, UM_LOG_ERR,
			"engine: the GPU context is dead: \"%s\" (%s) is lost, its only copy was %s",
			r->name, UM_SIZE(r->bytes),
			out ? "leaving the device" : "on the device");
		um__event(ctx, UM_EVENT_ERROR, 0, r, r->residency,
			  UM_TIER_NONE, r->bytes, -ENOTRECOVERABLE, 0);
	}
}

static void finish(struct um_context *ctx, struct um_mig *m, int err)
{
	struct um_region *r = m->r;
	bool latest = r->mig == m;
	uint64_t ns = 0;

	r->pending--;
	if (latest)
		r->mig = NULL;
	if (r->restore_mig == m)
		r->restore_mig = NULL;
	if (r->evict_mig == m)
		r->evict_mig = NULL;

	if (err) {
		r->error = err;
		if (!ctx->error)
			ctx->error = err;
		if (err == -ENOTRECOVERABLE)
			report_lost(ctx, m->dir == UM_MIG_EVICT ? r : NULL);
		else
			um__log(ctx, UM_LOG_ERR,
				"engine: %s of \"%s\" (%s) failed: %s; bytes kept where they were",
				m->dir == UM_MIG_EVICT ? "eviction" : "restore",
				r->name, UM_SIZE(m->bytes), strerror(-err));
		if (err != -ENOTRECOVERABLE)
			um__event(ctx, UM_EVENT_ERROR, 0, r, m->from, m->to,
				  m->bytes, err, 0);
		if (latest && m->dir == UM_MIG_RESTORE &&
		    um__tier_is_dev(r->residency)) {
			set_residency(ctx, r, m->from);
			r->zero_on_restore = m->from == UM_TIER_NONE;
		}
		if (latest && m->dir == UM_MIG_EVICT &&
		    !um__tier_is_dev(r->residency))
			set_residency(ctx, r, m->from);
		um__settle(ctx, r);
		return;
	}
	ctx->be.ops->fence_elapsed_ns(&ctx->be, m->start, m->end, &ns);
	if (m->clean) {
		/* nothing moved: no migration, counted apart */
		ctx->books.evict_clean_count++;
		ctx->books.evict_clean_bytes += m->bytes;
	} else if (!m->fill) {
		struct um_books *b = &ctx->books;

		b->migrations++;
		b->migrated_bytes += m->bytes;
		b->migration_ns += ns;
		if (m->dir == UM_MIG_EVICT) {
			b->evict_count++;
			b->evict_bytes += m->bytes;
			b->evict_ns += ns;
		} else {
			b->restore_count++;
			b->restore_bytes += m->bytes;
			b->restore_ns += ns;
		}
		um__event(ctx, UM_EVENT_MIGRATED, 0, r, m->from, m->to,
			  m->bytes, 0, ns);
	}
	if (m->dir == UM_MIG_EVICT && latest && !um__tier_is_dev(r->residency)
	    && m->policy)
		um__event(ctx, UM_EVENT_EVICTED, 0, r, m->from, m->to,
			  m->bytes, 0, ns);
	um__settle(ctx, r);
}

/*
 * Reap every migration whose end fence is reached, in issue order; a
 * region's later migration waits for its earlier ones (their fences order
 * them on the device anyway). Then issue the paced evictions' next pieces.
 */
void um__reap(struct um_context *ctx)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	struct um_mig **pp = &ctx->migs, *prev = NULL;
	uint64_t pass = ++ctx->reap_pass;

	while (*pp) {
		struct um_mig *m = *pp;
		int q;

		if (m->r->reap_pass == pass) {
			prev = m;
			pp = &m->next;
			continue;
		}
		/* a paced eviction's end is not recorded before its last piece */
		if (m->err)
			q = m->err;
		else if (m->issued < m->bytes)
			q = -EAGAIN;
		else
			q = ops->fence_query(&ctx->be, m->end);
		if (q == -EAGAIN) {
			m->r->reap_pass = pass;
			prev = m;
			pp = &m->next;
			continue;
		}
		*pp = m->next;
		if (ctx->migs_tail == m)
			ctx->migs_tail = prev;
		finish(ctx, m, q);
		m->r = NULL;
		m->next = NULL;
		if (m->waiters)
			m->done = true;
		else
			mig_free(ctx, m);
	}
	for (int i = 0; paced(ctx) && i < ctx->ndev; i++)
		pace_pump(ctx, i);
}

/*
 * Wait for m with the context lock dropped, then reap. The caller holds
 * the lock and must look its regions up again afterwards.
 */
static int wait_mig(struct um_context *ctx, struct um_mig *m, bool stream,
		    void *s)
{
	int ret;

	if (!m->done)
		pace_flush(ctx, m);
	m->waiters++;
	pthread_mutex_unlock(&ctx->lock);
	if (stream)
		ret = ctx->be.ops->stream_wait_fence(&ctx->be, s, m->end);
	else
		ret = ctx->be.ops->fence_wait(&ctx->be, m->end);
	pthread_mutex_lock(&ctx->lock);
	/* reap while still a waiter, so m outlives the reaping */
	um__reap(ctx);
	m->waiters--;
	if (m->done) {
		if (!m->waiters)
			mig_free(ctx, m);
		return ret;
	}
	if (stream)	/* ordered, not necessarily reached yet */
		return ret;
	/* reached but not reapable: the backend disagrees with itself */
	um__log(ctx, UM_LOG_ERR, "engine: a reached fence is not reapable: %s",
		strerror(-ret));
	return -EPROTO;
}

int um__wait_mig(struct um_context *ctx, struct um_mig *m)
{
	return wait_mig(ctx, m, false, NULL);
}

/*
 * Order the caller's stream after m (on sim: block until m is reached),
 * with the context lock dropped. Regions may change meanwhile.
 */
int um__stream_wait_mig(struct um_context *ctx, struct um_mig *m,
			void *stream)
{
	return wait_mig(ctx, m, true, stream);
}

int um__wait_region(struct um_context *ctx, struct um_region *r)
{
	if (!r->mig)
		return 0;
	return um__wait_mig(ctx, r->mig);
}

int um__wait_all(struct um_context *ctx)
{
	int ret;

	while (ctx->migs) {
		ret = um__wait_mig(ctx, ctx->migs);
		if (ret == -EPROTO)
			break;
	}
	ret = ctx->error;
	ctx->error = 0;
	return ret;
}
