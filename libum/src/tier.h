/* SPDX-License-Identifier: MIT */
/*
 * tier.h - the tier table (tier.c): one row per enum um_tier_type saying
 * what a tier is called, which ids name it, what the public calls take it
 * for, which counters its bytes feed and how they move. The rest of libum
 * asks the table (or the predicates below) instead of comparing types.
 *
 * No context here: every layer may ask, the backends included (the CUDA
 * plugin compiles tier.c in, sources.mk). What exists in one context (its
 * devices, its host nodes with memory) is the context's: um__tier_exists()
 * in internal.h.
 */
#ifndef UM_TIER_H
#define UM_TIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "um.h"

/* What the public calls take a tier for (struct um__tier_desc.uses). */
enum um__tier_use {
	UM__USE_ACQUIRE = 1u << 0,	/* um_acquire's tier */
	UM__USE_EVICT_TO = 1u << 1,	/* um_evict's destination */
	UM__USE_SHED_FROM = 1u << 2,	/* um_shed's tier */
	UM__USE_SHED_TO = 1u << 3,	/* um_shed's dest */
	UM__USE_ADVISE = 1u << 4,	/* a location for um_advise */
};

/* How a region's bytes come from a tier to a host tier (um__to_host). */
enum um__tier_move {
	UM__MOVE_NOTHING,	/* none to move: never touched */
	UM__MOVE_EVICT,		/* off the device: um__evict */
	UM__MOVE_NODE,		/* between nodes: pages moved, or a copy */
	UM__MOVE_READ,		/* back from the spill: um__from_spill */
	UM__MOVE_COUNT
};

/*
 * The byte counters the tiers feed, by the names of struct um_stats'
 * fields they are copied to (stats.c).
 */
struct um__tier_books {
	struct um_counter device[UM_STATS_MAX_DEVICES];
	struct um_counter host[UM_STATS_MAX_NODES];
	struct um_counter host_total;
	struct um_counter spill;
};

#define UM__NO_BOOKS	SIZE_MAX

struct um__tier_desc {
	/* numbered: the name of id n is name + n ("gpu0"); else name */
	const char *name;
	/* the name of UM_TIER_ANY_NODE, all ids at once; NULL: not an id */
	const char *any_name;
	bool numbered;		/* one tier per id; else id 0 only */
	unsigned int nids;	/* well formed: ids below nids, and any */
	/* where the bytes are */
	bool on_device;		/* ids are devices: device memory */
	bool numa;		/* ids are NUMA nodes: a pool block there */
	/*
	 * The device does not reach it: a restore brings the bytes to the
	 * host first (to_host), an eviction to it lands on the host and
	 * goes on from there (um__to_spill).
	 */
	bool via_host;
	unsigned int uses;	/* enum um__tier_use bits */
	/*
	 * The counters its bytes feed: offsets in struct um__tier_books of
	 * one for all its ids (total) and of an array, one per id below
	 * books_nids (per_id); UM__NO_BOOKS: none. budget: fed by the
	 * device's budget books (a region counts there with its device
	 * memory, r->dev_len, from mapping to the reaping of its eviction:
	 * um__books_budget), not by residency (um__books_residency).
	 */
	size_t total, per_id;
	unsigned int books_nids;
	bool budget;
	enum um__tier_move to_host;	/* how its bytes come to the host */
};

/* Indexed by enum um_tier_type: one row per type (checked in tier.c). */
extern const struct um__tier_desc um__tiers[UM_TIER_TYPE_COUNT];

/* t's row, or NULL for a type that does not exist. */
static inline const struct um__tier_desc *um__tier(um_tier_t t)
{
	unsigned int type = UM_TIER_TYPE(t);

	return type < UM_TIER_TYPE_COUNT ? &um__tiers[type] : NULL;
}

/* Device memory: bytes there count on that device's budget. */
static inline bool um__tier_is_dev(um_tier_t t)
{
	const struct um__tier_desc *d = um__tier(t);

	return d && d->on_device;
}

/* Host memory on a NUMA node (or any): a pinned pool block. */
static inline bool um__tier_is_host(um_tier_t t)
{
	const struct um__tier_desc *d = um__tier(t);

	return d && d->numa;
}

/* Behind the host: bytes pass through a host copy both ways. */
static inline bool um__tier_via_host(um_tier_t t)
{
	const struct um__tier_desc *d = um__tier(t);

	return d && d->via_host;
}

/* The public calls take t for use (enum um__tier_use). */
static inline bool um__tier_use(um_tier_t t, unsigned int use)
{
	const struct um__tier_desc *d = um__tier(t);

	return d && (d->uses & use);
}

/* t is the "all ids" of its type (UM_TIER_HOST_ANY). */
static inline bool um__tier_is_any(um_tier_t t)
{
	const struct um__tier_desc *d = um__tier(t);

	return d && d->any_name && UM_TIER_ID(t) == UM_TIER_ANY_NODE;
}

/* t's id is one its type has at all (whether or not this machine has it). */
bool um__tier_well_formed(um_tier_t t);
/* Bytes resident on where are on tier t: the same tier, or t is its any. */
bool um__tier_within(um_tier_t where, um_tier_t t);
/*
 * The counters of b that bytes on t feed (its id's, its type's total),
 * whether residency or the budget feeds them (desc.budget): how many (0 to
 * 2) in out.
 */
int um__tier_counters(struct um__tier_books *b, um_tier_t t,
		      struct um_counter *out[2]);

#endif /* UM_TIER_H */
