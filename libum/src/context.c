/* SPDX-License-Identifier: MIT */
/*
 * context.c - context life and backend choice: the top of libum.
 *
 * um_context_create() and um_context_destroy() are the only code that
 * wires the parts together (settings, backend, engine, pool, spill tier,
 * NUMA home, the pressure loop, the registry of live contexts); every other
 * file calls only the layers below it (Documentation/design/libum.rst).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "pressure.h"
#include "spill.h"
#include "um_numa.h"
#include "util.h"

/* The backend's (and pool's) log hook: never takes the context lock. */
static void be_log(void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The backend said why it failed in an ERR line: no second line for it. */
static UM_TLS bool be_said_err;

static void be_log(void *arg, int level, const char *fmt, ...)
{
	va_list ap;

	if (level == UM_LOG_ERR)
		be_said_err = true;
	va_start(ap, fmt);
	um__vlog(arg, level, fmt, ap);
	va_end(ap);
}

/* The default spill directory's lines: a failure there is no error of the
 * caller's (spill_init says it as INFO), the rest as they are. */
static void default_spill_log(void *arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void default_spill_log(void *arg, int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	um__vlog(arg, level == UM_LOG_ERR ? UM_LOG_DEBUG : level, fmt, ap);
	va_end(ap);
}

int um_set_event_callback(struct um_context *ctx, um_event_fn fn, void *arg)
{
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	ctx->ev_fn = fn;
	ctx->ev_arg = fn ? arg : NULL;
	um__exit(ctx);
	return 0;
}

/* ---- backend choice --------------------------------------------------- */

/* NULL, with *why, for a backend this process cannot have. */
static const struct um_backend_ops *backend_by_id(int id, const char **why)
{
	if (id == UM_BACKEND_SIM)
		return &um__backend_sim;
	if (id == UM_BACKEND_CUDA)
		return um__backend_cuda_ops(why);
	*why = "no such backend";
	return NULL;
}

static const char *backend_name(int id)
{
	return id == UM_BACKEND_CUDA ? "cuda" : id == UM_BACKEND_SIM ? "sim" :
	       "auto";
}

static int choose_backend(struct um_context *ctx,
			  const struct um_backend_ops **out)
{
	const struct um_backend_ops *ops;
	const char *why = NULL;
	int n;

	if (ctx->set.backend != UM_BACKEND_AUTO) {
		ops = backend_by_id(ctx->set.backend, &why);
		if (!ops) {
			um__log(ctx, UM_LOG_ERR,
				"backend: %s was asked for but is not available: %s",
				backend_name(ctx->set.backend), why);
			return -ENODEV;
		}
		n = ops->probe(&why);
		if (n <= 0) {
			um__log(ctx, UM_LOG_ERR,
				"backend: %s was asked for but is not usable: %s",
				ops->name, why ? why : "no device");
			return n < 0 ? n : -ENODEV;
		}
		*out = ops;
		return 0;
	}
	ops = backend_by_id(UM_BACKEND_CUDA, &why);
	if (ops) {
		n = ops->probe(&why);
		if (n > 0) {
			*out = ops;
			return 0;
		}
		um__log(ctx, UM_LOG_INFO,
			"backend: using sim, cuda found no usable GPU (%s)",
			why ? why : "no device");
	} else {
		um__log(ctx, UM_LOG_INFO,
			"backend: using sim, cuda is not available (%s)", why);
	}
	*out = &um__backend_sim;
	n = (*out)->probe(&why);
	if (n <= 0) {
		um__log(ctx, UM_LOG_ERR, "backend: sim is not usable: %s",
			why ? why : "?");
		return n < 0 ? n : -ENODEV;
	}
	return 0;
}

/* ---- create / destroy ------------------------------------------------- */

static int devices_init(struct um_context *ctx)
{
	struct um_backend *be = &ctx->be;
	int n = be->ops->device_count(be);

	if (n <= 0) {
		um__log(ctx, UM_LOG_ERR, "backend: %s has no device",
			be->ops->name);
		return n < 0 ? n : -ENODEV;
	}
	if (n > UM_MAX_DEVICES) {
		um__log(ctx, UM_LOG_INFO, "backend: using %d of %d devices",
			UM_MAX_DEVICES, n);
		n = UM_MAX_DEVICES;
	}
	ctx->ndev = n;
	for (int i = 0; i < n; i++) {
		struct um_dev *d = &ctx->dev[i];
		uint64_t free_b = 0, total = 0;
		int ret = be->ops->mem_info(be, i, &free_b, &total);

		if (ret)
			return ret;
		d->total = total;
		d->gran = be->ops->granularity(be, i);
		if (!d->gran)
			d->gran = 4096;
		d->budget = ctx->set.device_budget ? ctx->set.device_budget :
			    total;
		if (d->budget > total) {
			um__log(ctx, UM_LOG_INFO,
				"budget: %s for device %d is above its %s; using %s",
				UM_SIZE(d->budget), i, UM_SIZE(total),
				UM_SIZE(total));
			d->budget = total;
		}
		ctx->books.tier.device[i].current = 0;
		um__tier_add(ctx, UM_TIER_GPU((unsigned int)i));
	}
	return 0;
}

/*
 * Host copies near the GPU by default: the backend names device 0's node
 * (cuda: from its PCI address), um__numa_default_home() weighs it against
 * the machine's nodes; LIBUM_HOME_NODE beats both. Done before the pool
 * reserves anything, so a pool_size reservation lands there too.
 */
void um__context_place_home(struct um_context *ctx)
{
	const struct um_backend_ops *ops = ctx->be.ops;
	int dev_node = -1, node;

	if (ops && ops->device_numa_node && ctx->ndev > 0)
		dev_node = ops->device_numa_node(&ctx->be, 0);
	node = ctx->set.home_node;
	if (node == UM_HOME_AUTO)
		node = um__numa_default_home(dev_node);
	if (node < 0 || node >= UM_POOL_MAX_NODES) {
		ctx->home_node = UM_POOL_NODE_ANY;
		return;
	}
	ctx->home_node = node;
	um__log(ctx, UM_LOG_DEBUG,
		"numa: host copies on node %d (device 0 reports %d)", node,
		dev_node);
}

/* The host tiers: the nodes with memory, each a pool node. */
static void host_nodes_init(struct um_context *ctx)
{
	_Static_assert(UM_POOL_MAX_NODES <= 32, "tier_ids are 32 bits");
	_Static_assert(UM_POOL_MAX_NODES == UM_STATS_MAX_NODES,
		       "the host row's ids are the pool's nodes");

	for (int n = 0; n < UM_POOL_MAX_NODES && n <= um__numa_max_node(); n++)
		if (um__numa_node_valid(n))
			um__tier_add(ctx, UM_TIER_HOST_NODE((unsigned int)n));
}

static int pool_init(struct um_context *ctx)
{
	struct um_pool_config pc = {
		.chunk_bytes = ctx->set.pool_chunk,
	};
	int ret = um__pool_create(&ctx->be, &pc, &ctx->pool);

	if (ret) {
		um__log(ctx, UM_LOG_ERR, "pool: cannot create: %s",
			strerror(-ret));
		return ret;
	}
	if (ctx->set.pool_size) {
		ret = um__pool_reserve(ctx->pool, ctx->home_node,
				       ctx->set.pool_size);
		if (ret) {
			um__log(ctx, UM_LOG_ERR,
				"pool: cannot reserve %s: %s",
				UM_SIZE(ctx->set.pool_size), strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/*
 * A spill directory the caller named must work; the default one is tried,
 * and where it fails the context goes on without a spill tier, saying why
 * where it matters (pressure_shed.c's line when a limit cannot be met).
 */
static int spill_init(struct um_context *ctx)
{
	struct um_settings *set = &ctx->set;
	struct um_spill_config sc = {
		.dir = set->spill_dir,
		.flags = (set->spill_remove_stale ? UM_SPILL_REMOVE_STALE : 0) |
			 (set->spill_default ? UM_SPILL_OWN_DIR : 0),
		.log = be_log,
		.log_arg = ctx,
	};
	int ret;

	if (!set->spill_dir)
		return 0;
	if (set->spill_default)
		sc.log = default_spill_log;
	ret = um__spill_open(&sc, &ctx->spill);
	if (ret && set->spill_default) {
		snprintf(set->spill_none, sizeof(set->spill_none),
			 "no spill tier (the default directory %s: %s; set spill_dir / LIBUM_SPILL_DIR)",
			 set->spill_dir, strerror(-ret));
		um__log(ctx, UM_LOG_INFO, "spill: %s", set->spill_none);
		return 0;
	}
	if (ret)
		um__log(ctx, UM_LOG_ERR, "spill: cannot use \"%s\": %s",
			set->spill_dir, strerror(-ret));
	return ret;
}

static void ctx_free(struct um_context *ctx)
{
	um__refill_stop(ctx);
	um__spill_close(ctx->spill);
	ctx->spill = NULL;
	um__engine_fini(ctx);
	if (ctx->pool) {
		/*
		 * Regions' host copies are gone by now: what is left are
		 * blocks the caller took with um_host_alloc.
		 */
		int64_t left = um__pool_destroy(ctx->pool);

		if (left > 0)
			um__log(ctx, UM_LOG_WARN,
				"leak: %lld pinned host block(s) from um_host_alloc still live at destroy",
				(long long)left);
	}
	if (ctx->be.ops)
		ctx->be.ops->fini(&ctx->be);
	um__settings_free(&ctx->set);
	um__table_free(ctx->slots, ctx->slot_cap * sizeof(*ctx->slots));
	um__rslab_fini(&ctx->rslab);
	um__rangemap_fini(&ctx->by_addr);
	um__hostneed_fini(ctx);
	free(ctx->evq);
	um__room_fini(ctx);
	pthread_mutex_destroy(&ctx->lock);
	ctx->magic = UM_CTX_DEAD;
	free(ctx);
}

int um_context_create(const struct um_config *cfg, struct um_context **out)
{
	const struct um_backend_ops *ops;
	struct um_backend_config bc;
	struct um_context *ctx;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (cfg) {
		ret = um__struct_size_ok(cfg, cfg->size,
					 offsetof(struct um_config, device_budget),
					 sizeof(*cfg));
		if (ret) {
			um__log_early("context: struct um_config has size %u, not one libum knows (%zu): call um_config_init() first",
				      (unsigned int)cfg->size, sizeof(*cfg));
			return ret;
		}
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->reap_fd = -1;
	pthread_mutex_init(&ctx->lock, NULL);
	ret = um__room_init(ctx);
	if (ret) {
		pthread_mutex_destroy(&ctx->lock);
		free(ctx);
		return ret;
	}
	ctx->regions.next = ctx->regions.prev = &ctx->regions;
	um__rslab_init(&ctx->rslab, sizeof(struct um_region),
		       _Alignof(struct um_region));
	ctx->home_node = UM_POOL_NODE_ANY;
	ctx->log_level = UM_LOG_INFO;
	if (cfg && cfg->size >= offsetof(struct um_config, log_arg) + sizeof(void *)) {
		ctx->log = cfg->log;
		ctx->log_arg = cfg->log_arg;
	}

	ret = um__settings_resolve(ctx, cfg, &ctx->set);
	if (ret)
		goto fail;
	ret = choose_backend(ctx, &ops);
	if (ret)
		goto fail;
	ctx->be.ops = ops;
	ctx->be.log = be_log;
	ctx->be.log_arg = ctx;
	bc = (struct um_backend_config){
		.sim_capacity = ctx->set.sim_capacity,
		.device = 0,
	};
	be_said_err = false;
	ret = ops->init(&ctx->be, &bc);
	if (ret) {
		if (!be_said_err)
			um__log(ctx, UM_LOG_ERR, "backend %s: init failed: %s",
				ops->name, strerror(-ret));
		ctx->be.ops = NULL;
		goto fail;
	}
	ctx->backend_id = ops->id;
	ret = devices_init(ctx);
	if (ret)
		goto fail;
	um__context_place_home(ctx);
	host_nodes_init(ctx);
	ret = pool_init(ctx);
	if (ret)
		goto fail;
	ret = um__engine_init(ctx);
	if (ret)
		goto fail;
	ret = spill_init(ctx);
	if (ret)
		goto fail;
	ret = um__registry_add(ctx);
	if (ret)
		goto fail;
	ctx->magic = UM_CTX_MAGIC;
	um__log(ctx, UM_LOG_DEBUG,
		"context: backend %s, %d device(s), budget %llu, chunk %llu",
		ops->name, ctx->ndev, (unsigned long long)ctx->dev[0].budget,
		(unsigned long long)ctx->set.chunk_bytes);
	ret = um__pressure_start(ctx);
	if (ret) {
		um__log(ctx, UM_LOG_ERR, "pressure: cannot start: %s",
			strerror(-ret));
		um__registry_del(ctx);
		goto fail;
	}
	um__reaper_start(ctx);
	um__refill_start(ctx);
	*out = ctx;
	return 0;
fail:
	ctx_free(ctx);
	return ret;
}

/*
 * Contexts a child of fork() destroyed: kept reachable, never touched
 * again. Their memory is the child's copy of the parent's, interwoven with
 * the backend's, the pool's and the spill store's, whose release needs the
 * parent's threads, locks and device; it goes with the process (exec or
 * exit).
 */
static _Atomic(struct um_context *) forgotten;

static int forget_inherited(struct um_context *ctx)
{
	struct um_context *head = atomic_load(&forgotten);

	um__registry_del(ctx);
	um__pressure_forget(ctx);
	ctx->magic = UM_CTX_DEAD;
	do {
		ctx->forgotten_next = head;
	} while (!atomic_compare_exchange_weak(&forgotten, &head, ctx));
	return 0;
}

int um_context_destroy(struct um_context *ctx)
{
	int ret = um__enter_destroy(ctx);
	int leaks;

	if (ret == -ECHILD)
		return forget_inherited(ctx);
	if (ret)
		return ret;
	um__pressure_stop(ctx);
	um__reaper_stop(ctx);
	um__refill_stop(ctx);
	pthread_mutex_lock(&ctx->lock);
	um__wait_all(ctx);
	ctx->ev_fn = NULL;	/* nobody to deliver to any more */
	ctx->evq_n = 0;
	leaks = um__leak_report(ctx);
	um__regions_fini(ctx);
	ctx->magic = UM_CTX_DEAD;
	pthread_mutex_unlock(&ctx->lock);
	um__registry_del(ctx);
	ctx_free(ctx);
	return leaks;
}

int um_context_backend(const struct um_context *ctx)
{
	int ret = um__enter_const(ctx);

	return ret ? ret : ctx->backend_id;
}
