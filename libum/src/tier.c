// SPDX-License-Identifier: MIT
/*
 * tier.c - the tier table: one row per enum um_tier_type (tier.h says
 * what each field means), and the questions asked of it that need no
 * context, um_tier_name among them.
 *
 * A tier's bytes live in its store: the backend's device memory for a
 * device, the pinned pool (pool*.c, numa.c) for a host node, spill.c's
 * files for the spill. The engine moves them: to a device by a restore
 * (um__restore; a tier behind the host through a host copy first), to the
 * host by the move its row names (um__to_host), to the spill from a host
 * copy (um__to_spill).
 */
#include <errno.h>
#include <stdio.h>

#include "tier.h"

#define BOOKS(f)	offsetof(struct um__tier_books, f)

const struct um__tier_desc um__tiers[] = {
	[UM_TIER_NONE] = {
		/* a region never touched: no bytes anywhere yet */
		.name = "none",
		.nids = 1,
		/* um_shed's "where the policy chooses" */
		.uses = UM__USE_SHED_TO,
		.total = UM__NO_BOOKS,
		.per_id = UM__NO_BOOKS,
		.to_host = UM__MOVE_NOTHING,
	},
	[UM_TIER_DEVICE] = {
		.name = "gpu",
		.numbered = true,
		.nids = UM_STATS_MAX_DEVICES,
		.on_device = true,
		.uses = UM__USE_ACQUIRE | UM__USE_SHED_FROM | UM__USE_ADVISE,
		.total = UM__NO_BOOKS,
		.per_id = BOOKS(device),
		.books_nids = UM_STATS_MAX_DEVICES,
		.budget = true,
		.to_host = UM__MOVE_EVICT,
	},
	[UM_TIER_HOST] = {
		.name = "node",
		.any_name = "host",
		.numbered = true,
		.nids = UM_STATS_MAX_NODES,
		.numa = true,
		.uses = UM__USE_ACQUIRE | UM__USE_EVICT_TO | UM__USE_SHED_FROM |
			UM__USE_SHED_TO | UM__USE_ADVISE,
		.total = BOOKS(host_total),
		.per_id = BOOKS(host),
		.books_nids = UM_STATS_MAX_NODES,
		.to_host = UM__MOVE_NODE,
	},
	[UM_TIER_SPILL] = {
		.name = "spill",
		.nids = 1,
		.via_host = true,
		.uses = UM__USE_EVICT_TO | UM__USE_SHED_TO,
		.total = BOOKS(spill),
		.per_id = UM__NO_BOOKS,
		.to_host = UM__MOVE_READ,
	},
};

/* A type added to enum um_tier_type without its row fails here. */
_Static_assert(sizeof(um__tiers) / sizeof(um__tiers[0]) ==
	       UM_TIER_TYPE_COUNT, "one row per enum um_tier_type");

bool um__tier_well_formed(um_tier_t t)
{
	const struct um__tier_desc *d = um__tier(t);

	return d && (um__tier_is_any(t) || UM_TIER_ID(t) < d->nids);
}

bool um__tier_within(um_tier_t where, um_tier_t t)
{
	if (UM_TIER_TYPE(where) != UM_TIER_TYPE(t))
		return false;
	return um__tier_is_any(t) || UM_TIER_ID(where) == UM_TIER_ID(t);
}

int um__tier_counters(struct um__tier_books *b, um_tier_t t,
		      struct um_counter *out[2])
{
	const struct um__tier_desc *d = um__tier(t);
	unsigned int id = UM_TIER_ID(t);
	int n = 0;

	if (!d)
		return 0;
	if (d->total != UM__NO_BOOKS)
		out[n++] = (struct um_counter *)((char *)b + d->total);
	if (d->per_id != UM__NO_BOOKS && id < d->books_nids)
		out[n++] = (struct um_counter *)((char *)b + d->per_id) + id;
	return n;
}

int um_tier_name(um_tier_t t, char *buf, size_t len)
{
	const struct um__tier_desc *d = um__tier(t);
	unsigned int id = UM_TIER_ID(t);

	if ((!buf && len) || !d)
		return -EINVAL;
	if (um__tier_is_any(t))
		return snprintf(buf, len, "%s", d->any_name);
	if (d->numbered)
		return snprintf(buf, len, "%s%u", d->name, id);
	return id ? -EINVAL : snprintf(buf, len, "%s", d->name);
}
