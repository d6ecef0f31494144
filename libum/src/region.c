/* SPDX-License-Identifier: MIT */
/*
 * region.c - the handle table and a region's life: alloc, free, pointer,
 * lookup by address, info, advice, and waiting for a region's migrations
 * (um_wait, um_wait_all).
 *
 * A handle is | context serial (16) | generation (24) | slot (24) |, so a
 * stale handle (freed region, slot reused), a double free or a handle of
 * another context never reaches a region: they give -ENOENT. Handle 0 is
 * never valid (-EINVAL, like NULL).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "spill.h"
#include "util.h"

/*
 * Default backing per kind. TIERED everywhere: on the H200 it beats MANAGED
 * both ways (design.rst: VMM map + copy 77.6 ms in / 79.0 ms out for 4 GiB
 * against 85.7 / 247.0 by prefetch and 114.3 / 81.9 by copy + discard), and
 * only TIERED gives device memory back to other allocations after an
 * eviction. MANAGED stays available for buffers the CPU must reach without
 * acquiring them first.
 */
static const uint32_t default_backing[UM_KIND_COUNT] = {
	[UM_KIND_GENERIC] = UM_BACKING_TIERED,
	[UM_KIND_OPTIMIZER_STATE] = UM_BACKING_TIERED,
	[UM_KIND_PARAM] = UM_BACKING_TIERED,
	[UM_KIND_GRAD] = UM_BACKING_TIERED,
	[UM_KIND_ACTIVATION] = UM_BACKING_TIERED,
};

#define KNOWN_FLAGS (UM_REGION_DISCARD_EVICT | UM_REGION_NO_SPILL)

static um_region_t make_handle(const struct um_context *ctx, uint32_t idx,
			       uint32_t gen)
{
	return ((uint64_t)ctx->serial << 48) | ((uint64_t)gen << UM_H_IDX_BITS) |
	       idx;
}

struct um_region *um__region_get(struct um_context *ctx, um_region_t h)
{
	uint32_t idx = (uint32_t)(h & UM_H_IDX_MASK);
	uint32_t gen = (uint32_t)((h >> UM_H_IDX_BITS) & UM_H_GEN_MASK);
	struct um_slot *s;

	if ((uint16_t)(h >> 48) != ctx->serial || idx >= ctx->nslots)
		return NULL;
	s = &ctx->slots[idx];
	if (!s->r || s->gen != gen || s->r->freeing)
		return NULL;
	return s->r;
}

/* Twice the slots, copied into a new table (um__table_alloc: see there). */
static int slots_grow(struct um_context *ctx)
{
	uint32_t cap = ctx->slot_cap ? ctx->slot_cap * 2 : 64;
	struct um_slot *n;

	if (ctx->nslots >= UM_MAX_REGIONS)
		return -ENOSPC;
	n = um__table_alloc(cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	if (ctx->nslots)
		memcpy(n, ctx->slots, ctx->nslots * sizeof(*n));
	um__table_free(ctx->slots, ctx->slot_cap * sizeof(*n));
	ctx->slots = n;
	ctx->slot_cap = cap;
	return 0;
}

static int slot_take(struct um_context *ctx, struct um_region *r)
{
	struct um_slot *s;
	uint32_t idx;

	if (ctx->free_head) {
		idx = ctx->free_head - 1;
		ctx->free_head = ctx->slots[idx].next_free;
	} else {
		if (ctx->nslots == ctx->slot_cap) {
			int ret = slots_grow(ctx);

			if (ret)
				return ret;
		}
		idx = ctx->nslots++;
		ctx->slots[idx].gen = 0;
	}
	s = &ctx->slots[idx];
	s->gen = (s->gen + 1) & UM_H_GEN_MASK;
	if (!s->gen)
		s->gen = 1;
	s->r = r;
	s->next_free = 0;
	r->idx = idx;
	r->handle = make_handle(ctx, idx, s->gen);
	return 0;
}

static void slot_put(struct um_context *ctx, struct um_region *r)
{
	struct um_slot *s = &ctx->slots[r->idx];

	s->r = NULL;
	s->next_free = ctx->free_head;
	ctx->free_head = r->idx + 1;
}

static int check_desc(struct um_context *ctx, const struct um_region_desc *in,
		      struct um_region_desc *d)
{
	int ret = um__struct_size_ok(in, in->size,
				     offsetof(struct um_region_desc, bytes) +
				     sizeof(in->bytes), sizeof(*in));

	if (ret) {
		um__log(ctx, UM_LOG_ERR,
			"alloc: struct um_region_desc has size %u, not one libum knows (%zu): set .size = sizeof(struct um_region_desc)",
			(unsigned int)in->size, sizeof(*in));
		return ret;
	}
	memset(d, 0, sizeof(*d));
	memcpy(d, in, in->size < sizeof(*d) ? in->size : sizeof(*d));
	if (d->kind >= UM_KIND_COUNT || d->backing > UM_BACKING_TIERED ||
	    (d->flags & ~KNOWN_FLAGS) || d->bytes == 0) {
		um__log(ctx, UM_LOG_ERR,
			"alloc: region \"%s\": bytes %llu, kind %u, backing %u, flags 0x%x: bytes must be above 0, kind below %d, backing at most %d, flags known ones",
			d->name ? d->name : "", (unsigned long long)d->bytes,
			(unsigned int)d->kind, (unsigned int)d->backing,
			(unsigned int)d->flags, UM_KIND_COUNT, UM_BACKING_TIERED);
		return -EINVAL;
	}
	if ((int)d->device >= ctx->ndev) {
		um__log(ctx, UM_LOG_ERR,
			"alloc: device %u does not exist (the context has %d)",
			(unsigned int)d->device, ctx->ndev);
		return -EINVAL;
	}
	if (d->bytes > UM_MAX_REGION_BYTES ||
	    d->bytes > ctx->dev[d->device].total) {
		um__log(ctx, UM_LOG_ERR,
			"alloc: region \"%s\" of %s can never fit device %u (%s)",
			d->name ? d->name : "", UM_SIZE(d->bytes),
			(unsigned int)d->device,
			UM_SIZE(ctx->dev[d->device].total));
		return -E2BIG;
	}
	return 0;
}

static uint32_t resolve_backing(struct um_context *ctx, uint32_t kind,
				uint32_t backing)
{
	if (backing == UM_BACKING_DEFAULT)
		backing = default_backing[kind];
	if (backing == UM_BACKING_MANAGED && !ctx->be.ops->managed_alloc) {
		if (!ctx->managed_logged)
			um__log(ctx, UM_LOG_INFO,
				"alloc: backend %s has no managed memory: MANAGED regions use TIERED",
				ctx->be.ops->name);
		ctx->managed_logged = true;
		backing = UM_BACKING_TIERED;
	}
	return backing;
}

/*
 * Asking for more managed memory than the device has free can hang the GPU
 * (seen on the H200, design.rst): refuse beyond what it reports free,
 * counting our own managed allocations (the driver's figure does not see
 * their residency).
 */
static int managed_fits(struct um_context *ctx, struct um_region *r)
{
	struct um_backend *be = &ctx->be;
	uint64_t free_b = 0, total = 0;

	if (be->ops->mem_info(be, (int)r->device, &free_b, &total))
		return 0;
	if (ctx->managed_bytes + r->dev_len <= free_b)
		return 0;
	um__log(ctx, UM_LOG_ERR,
		"alloc: MANAGED region \"%s\" (%s, %s on the device): with %s managed already, more than device %u has free (%s)",
		r->name, UM_SIZE(r->bytes), UM_SIZE(r->dev_len),
		UM_SIZE(ctx->managed_bytes), (unsigned int)r->device,
		UM_SIZE(free_b));
	return -ENOMEM;
}

static int region_map_va(struct um_context *ctx, struct um_region *r)
{
	struct um_backend *be = &ctx->be;
	int ret;

	if (r->backing == UM_BACKING_MANAGED) {
		ret = managed_fits(ctx, r);
		if (ret)
			return ret;
	}
	if (r->backing == UM_BACKING_MANAGED)
		ret = be->ops->managed_alloc(be, (int)r->device, r->dev_len,
					     &r->ptr);
	else
		ret = be->ops->va_reserve(be, (int)r->device, r->dev_len,
					  &r->ptr);
	if (!ret && !r->ptr)
		ret = -EFAULT;
	if (!ret && r->backing == UM_BACKING_MANAGED)
		ctx->managed_bytes += r->dev_len;
	return ret;
}

static void region_unmap_va(struct um_context *ctx, struct um_region *r)
{
	struct um_backend *be = &ctx->be;

	if (!r->ptr)
		return;
	if (r->backing == UM_BACKING_MANAGED) {
		be->ops->managed_free(be, r->ptr, r->dev_len);
		ctx->managed_bytes -= r->dev_len;
	} else
		be->ops->va_release(be, r->ptr, r->dev_len);
	r->ptr = NULL;
}

static int region_new(struct um_context *ctx, const struct um_region_desc *d,
		      struct um_region **out)
{
	size_t gran = ctx->dev[d->device].gran;
	bool in_chunk;
	/* zeroed, its victim nodes cache-line aligned (internal.h) */
	struct um_region *r = um__rslab_get(&ctx->rslab, &in_chunk);
	int ret;

	if (!r)
		return -ENOMEM;
	r->in_chunk = in_chunk;
	r->ctx = ctx;
	r->kind = d->kind;
	r->priority = d->priority;
	r->flags = d->flags;
	r->device = d->device;
	r->bytes = d->bytes;
	r->dev_len = (size_t)((d->bytes + gran - 1) / gran * gran);
	r->backing = resolve_backing(ctx, d->kind, d->backing);
	r->residency = UM_TIER_NONE;
	r->host_node = UM_POOL_NODE_ANY;
	r->zero_on_restore = true;
	if (d->name) {
		strncpy(r->name, d->name, sizeof(r->name) - 1);
		r->name[sizeof(r->name) - 1] = '\0';
	}
	ret = region_map_va(ctx, r);
	if (ret) {
		um__log(ctx, UM_LOG_ERR,
			"alloc: region \"%s\" (%s, %s on the device): %s failed: %s",
			r->name, UM_SIZE(r->bytes), UM_SIZE(r->dev_len),
			r->backing == UM_BACKING_MANAGED ?
			"managed_alloc" : "va_reserve", strerror(-ret));
		r->ptr = NULL;
		um__rslab_put(&ctx->rslab, r, r->in_chunk);
		return ret;
	}
	ret = um__hostneed_reserve(ctx, ctx->nregions + 1);
	if (ret)
		goto fail_va;
	ret = slot_take(ctx, r);
	if (ret)
		goto fail_va;
	ret = um__rangemap_insert(&ctx->by_addr, (uintptr_t)r->ptr, r->bytes,
				  r->handle);
	if (ret)
		goto fail_slot;
	*out = r;
	return 0;
fail_slot:
	slot_put(ctx, r);
fail_va:
	region_unmap_va(ctx, r);
	um__rslab_put(&ctx->rslab, r, r->in_chunk);
	return ret;
}

int um_alloc(struct um_context *ctx, const struct um_region_desc *desc,
	     um_region_t *out)
{
	struct um_region_desc d;
	struct um_region *r;
	int ret;

	ret = um__enter(ctx);
	if (ret)
		return ret;
	ret = (!desc || !out) ? -EINVAL : check_desc(ctx, desc, &d);
	if (ret)
		goto out;
	ret = region_new(ctx, &d, &r);
	if (ret)
		goto out;
	r->next = &ctx->regions;
	r->prev = ctx->regions.prev;
	r->prev->next = r;
	ctx->regions.prev = r;
	ctx->nregions++;
	um__counter_add(&ctx->books.kind[r->kind], r->bytes);
	um__books_changed(ctx);
	*out = r->handle;
	um__log(ctx, UM_LOG_DEBUG, "alloc: \"%s\" %s kind %s at %p",
		r->name, UM_SIZE(r->bytes), um_kind_name((int)r->kind),
		r->ptr);
out:
	um__exit(ctx);
	return ret;
}

/* Give back everything r holds; r must have no migration in flight. */
static void um__region_destroy(struct um_context *ctx, struct um_region *r)
{
	struct um_backend *be = &ctx->be;

	/*
	 * Kernels queued before the release may still use the memory: an
	 * unmap under them is a fatal fault on CUDA. um_free waited already
	 * with the lock dropped; this covers context destroy.
	 */
	if (r->released_valid)
		um__released_wait(ctx, r);
	else if (r->unfenced && r->mapped)
		um__log(ctx, UM_LOG_WARN,
			"free: \"%s\" was released without a fence; its device memory goes now",
			r->name);
	um__victims_drop(ctx, r);
	um__hostneed_drop(ctx, r);
	um__books_residency(ctx, r, r->residency, UM_TIER_NONE);
	if (r->mapped) {
		be->ops->phys_unmap(be, (int)r->device, r->ptr, r->dev_len,
				    r->phys);
		r->mapped = false;
	}
	if (r->counted) {
		um__books_budget(ctx, r, false);
		r->counted = false;
	}
	if (r->host)
		um__pool_free(ctx->pool, r->host);
	r->host = NULL;
	if (ctx->spill && um__spill_has(ctx->spill, r->handle) == 1)
		um__spill_drop(ctx->spill, r->handle);
	um__released_drop(ctx, r);
	um__rangemap_remove(&ctx->by_addr, (uintptr_t)r->ptr, r->bytes);
	region_unmap_va(ctx, r);
	slot_put(ctx, r);
	r->prev->next = r->next;
	r->next->prev = r->prev;
	ctx->nregions--;
	um__counter_sub(&ctx->books.kind[r->kind], r->bytes);
	um__books_changed(ctx);
	um__rslab_put(&ctx->rslab, r, r->in_chunk);
}

void um__regions_fini(struct um_context *ctx)
{
	while (ctx->regions.next != &ctx->regions)
		um__region_destroy(ctx, ctx->regions.next);
}

int um__region_find(struct um_context *ctx, const char *call, um_region_t h,
		    struct um_region **out)
{
	*out = h ? um__region_get(ctx, h) : NULL;
	if (*out)
		return 0;
	if (!h)
		um__log(ctx, UM_LOG_ERR, "%s: region handle 0 is no region",
			call);
	else
		um__log(ctx, UM_LOG_ERR,
			"%s: region handle 0x%llx is not a region of this context (freed already, or another context's)",
			call, (unsigned long long)h);
	return h ? -ENOENT : -EINVAL;
}

int um_free(struct um_context *ctx, um_region_t h)
{
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	ret = um__region_find(ctx, "free", h, &r);
	if (ret)
		goto out;
	if (r->acquired) {
		um__log(ctx, UM_LOG_ERR,
			"free: region \"%s\" is acquired (%u); release it first",
			r->name, r->acquired);
		ret = -EBUSY;
		goto out;
	}
	/*
	 * From here the handle is dead to every other call (a second free
	 * gets -ENOENT), so r stays ours while the lock is dropped below.
	 */
	r->freeing = true;
	um__victims_sync(ctx, r);
	if (r->released_valid) {
		/* the work fenced at release, with the lock dropped */
		pthread_mutex_unlock(&ctx->lock);
		um__released_wait(ctx, r);
		pthread_mutex_lock(&ctx->lock);
		um__reap(ctx);
	}
	while (r->pending) {
		if (um__wait_region(ctx, r) == -EPROTO) {
			r->freeing = false;
			um__victims_sync(ctx, r);
			ret = -EIO;
			goto out;
		}
	}
	um__region_destroy(ctx, r);
out:
	um__exit(ctx);
	return ret;
}

int um_ptr(struct um_context *ctx, um_region_t h, void **ptr)
{
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	r = h ? um__region_get(ctx, h) : NULL;
	if (!ptr || !h)
		ret = -EINVAL;
	else if (!r)
		ret = -ENOENT;
	else
		*ptr = r->ptr;
	um__exit(ctx);
	return ret;
}

int um_lookup(struct um_context *ctx, const void *ptr, um_region_t *out)
{
	um_region_t h;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!ptr || !out) {
		ret = -EINVAL;
		goto out;
	}
	/* the handle is kept in the index: no region to read */
	h = um__rangemap_find(&ctx->by_addr, (uintptr_t)ptr);
	ret = h ? 0 : -ENOENT;
	if (h)
		*out = h;
out:
	um__exit(ctx);
	return ret;
}

int um_region_info(struct um_context *ctx, um_region_t h,
		   struct um_region_info *info)
{
	struct um_region_info i;
	struct um_region *r;
	uint32_t size;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!info || !h) {
		ret = -EINVAL;
		goto out;
	}
	size = info->size;
	if (size < offsetof(struct um_region_info, kind) + sizeof(i.kind) ||
	    size > 4096) {
		ret = -EINVAL;
		goto out;
	}
	r = um__region_get(ctx, h);
	if (!r) {
		ret = -ENOENT;
		goto out;
	}
	memset(&i, 0, sizeof(i));
	i.size = size;
	i.kind = r->kind;
	i.priority = r->priority;
	i.backing = r->backing;
	i.flags = r->flags;
	i.residency = r->residency;
	i.acquired = r->acquired;
	i.pending = r->pending;
	i.bytes = r->bytes;
	memcpy(i.name, r->name, sizeof(i.name));
	if (size > sizeof(i))
		memset((char *)info + sizeof(i), 0, size - sizeof(i));
	memcpy(info, &i, size < sizeof(i) ? size : sizeof(i));
out:
	um__exit(ctx);
	return ret;
}

/*
 * A device of ctx's; a host node need not have memory here (the driver
 * places pages by the advice, or refuses).
 */
static bool tier_valid_for_advice(struct um_context *ctx, um_tier_t t)
{
	if (!um__tier_use(t, UM__USE_ADVISE))
		return false;
	return um__tier_is_dev(t) ? um__tier_exists(ctx, t) :
				    um__tier_well_formed(t);
}

/*
 * TIERED: the flag decides whether the next restore keeps its host copy.
 * Unset, the device copy may be written, so a kept copy of a device-resident
 * region goes (once nothing in flight reads it: um__settle).
 */
static void advise_read_mostly(struct um_context *ctx, struct um_region *r,
			       bool on)
{
	r->read_mostly = on;
	if (on)
		return;
	r->host_kept = false;
	um__settle(ctx, r);
}

int um_advise(struct um_context *ctx, um_region_t h, int advice,
	      um_tier_t tier)
{
	struct um_backend *be;
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	be = &ctx->be;
	if (!h || advice < UM_ADVISE_PREFERRED_LOCATION ||
	    advice > UM_ADVISE_UNSET_READ_MOSTLY) {
		ret = -EINVAL;
		goto out;
	}
	if ((advice == UM_ADVISE_PREFERRED_LOCATION ||
	     advice == UM_ADVISE_ACCESSED_BY ||
	     advice == UM_ADVISE_UNSET_ACCESSED_BY) &&
	    !tier_valid_for_advice(ctx, tier)) {
		ret = -EINVAL;
		goto out;
	}
	r = um__region_get(ctx, h);
	if (!r) {
		ret = -ENOENT;
		goto out;
	}
	if (r->backing == UM_BACKING_MANAGED) {
		if (be->ops->advise)
			ret = be->ops->advise(be, r->ptr, r->dev_len, advice,
					      tier);
	} else if (advice == UM_ADVISE_READ_MOSTLY ||
		   advice == UM_ADVISE_UNSET_READ_MOSTLY) {
		advise_read_mostly(ctx, r, advice == UM_ADVISE_READ_MOSTLY);
	}
	/* other advice on TIERED memory: no driver-side placement, a no-op */
out:
	um__exit(ctx);
	return ret;
}

/* ---- waiting ---------------------------------------------------------- */

int um_wait(struct um_context *ctx, um_region_t h)
{
	struct um_region *r;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	for (;;) {
		ret = um__region_find(ctx, "wait", h, &r);
		if (ret)
			break;
		if (!r->pending) {
			ret = r->error;
			r->error = 0;
			break;
		}
		ret = um__wait_region(ctx, r);
		if (ret == -EPROTO)
			break;
	}
	um__exit(ctx);
	return ret;
}

int um_wait_all(struct um_context *ctx)
{
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	ret = um__wait_all(ctx);
	um__exit(ctx);
	return ret;
}
