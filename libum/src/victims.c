/* SPDX-License-Identifier: MIT */
/*
 * victims.c - the policy's victims, kept in eviction order as regions
 * change state, so that choosing one costs O(log n) instead of a walk and
 * a sort of every region on each eviction.
 *
 * A region is a victim of a tier when it is released, not being freed and
 * resident there (on a device, only while its bytes count on the budget).
 * Each device and each host node has an ordered set; host regions are also
 * in one set for "any node". The sets are treaps (a binary search tree
 * whose nodes also form a heap on a hash of the region's index): expected
 * O(log n) insert and successor, and O(1) remove (a node knows its parent),
 * with no rebalancing state; the shape depends only on the regions, never
 * on the order of the calls.
 *
 * A hit (acquire and release of a region that stays where it is) must not
 * pay for the order of the others: their nodes are cold in the caches
 * when there are thousands, and unlinking and relinking one touches its
 * neighbours. So the node stays linked: an acquire parks it (its bytes
 * leave the set's count, the walk passes it), a release that only raised
 * its recency marks it stale (linked under its older recency). The walk
 * that chooses victims puts things right where it meets them: a parked
 * node is unlinked, a stale one relinked under its current key. Recency
 * only grows and a region's other keys never change, so a stale node
 * sits before its true place and the walk always reaches it in time: the
 * order chosen is exactly the order of the current keys.
 *
 * Whoever changes what membership depends on (residency, acquired,
 * freeing, counted) calls um__victims_sync() afterwards. The same call
 * keeps the per-device count of bytes leaving the device (counted but no
 * longer resident there: evictions in flight).
 */
#include "internal.h"

/* Eviction order of the kinds: optimizer state goes first, params last. */
static const int kind_rank[UM_KIND_COUNT] = {
	[UM_KIND_OPTIMIZER_STATE] = 0,
	[UM_KIND_GRAD] = 1,
	[UM_KIND_ACTIVATION] = 2,
	[UM_KIND_GENERIC] = 3,
	[UM_KIND_PARAM] = 4,
};

static int kind_rank_of(uint32_t kind)
{
	return kind < UM_KIND_COUNT ? kind_rank[kind] : UM_KIND_COUNT;
}

static int key_cmp(const struct um_vkey *a, const struct um_vkey *b)
{
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->prio != b->prio)
		return a->prio < b->prio ? -1 : 1;
	if (a->lru != b->lru)
		return a->lru < b->lru ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;	/* larger first */
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static uint32_t heap_of(uint32_t idx, int which)
{
	uint32_t h = idx * 2654435761u + (uint32_t)which * 0x9e3779b9u;

	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	return h ^ (h >> 12);
}

static void set_parent(struct um_vnode *child, struct um_vnode *parent)
{
	if (child)
		child->parent = parent;
}

/* (t < key) into *lo, the rest into *hi; the two roots' parents unset. */
static void split(struct um_vnode *t, const struct um_vkey *key,
		  struct um_vnode **lo, struct um_vnode **hi)
{
	if (!t) {
		*lo = *hi = NULL;
	} else if (key_cmp(&t->key, key) < 0) {
		split(t->right, key, &t->right, hi);
		set_parent(t->right, t);
		*lo = t;
	} else {
		split(t->left, key, lo, &t->left);
		set_parent(t->left, t);
		*hi = t;
	}
}

/* Every key of a below every key of b; the root's parent unset. */
static struct um_vnode *merge(struct um_vnode *a, struct um_vnode *b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (a->heap > b->heap) {
		a->right = merge(a->right, b);
		set_parent(a->right, a);
		return a;
	}
	b->left = merge(a, b->left);
	set_parent(b->left, b);
	return b;
}

static void tree_link(struct um_vset *s, struct um_vnode *n)
{
	struct um_vnode *lo, *hi;

	n->left = n->right = NULL;
	split(s->root, &n->key, &lo, &hi);
	s->root = merge(merge(lo, n), hi);
	s->root->parent = NULL;
}

/*
 * From n's parent, not a search from the root: the search would read the
 * key of every node on the way (a cache miss each in a large set), while
 * merging n's two subtrees in its place touches two nodes on average.
 */
static void tree_unlink(struct um_vset *s, struct um_vnode *n)
{
	struct um_vnode *up = n->parent, *sub = merge(n->left, n->right);

	set_parent(sub, up);
	if (!up)
		s->root = sub;
	else if (up->left == n)
		up->left = sub;
	else
		up->right = sub;
	n->left = n->right = n->parent = NULL;
}

static void count_in(struct um_vset *s, struct um_vnode *n, bool in)
{
	if (in) {
		s->bytes += n->charged;
		s->n++;
	} else {
		s->bytes -= n->charged;
		s->n--;
	}
}

static void set_insert(struct um_vset *s, struct um_vnode *n)
{
	tree_link(s, n);
	n->parked = n->stale = false;
	count_in(s, n, true);
}

static void set_remove(struct um_vset *s, struct um_vnode *n)
{
	tree_unlink(s, n);
	if (!n->parked)
		count_in(s, n, false);
	n->parked = n->stale = false;
}

/* The set r belongs in for its node which (0: its tier, 1: host any). */
static struct um_vset *home_set(struct um_context *ctx,
				const struct um_region *r, int which)
{
	unsigned int id = UM_TIER_ID(r->residency);

	if (r->freeing)
		return NULL;
	/* on a device only while its bytes count on the budget */
	if (um__tier_is_dev(r->residency))
		return which || !r->counted || id >= UM_MAX_DEVICES ? NULL :
		       &ctx->victims_dev[id];
	if (um__tier_is_host(r->residency)) {
		if (which)
			return &ctx->victims_host_any;
		return id < UM_STATS_MAX_NODES ? &ctx->victims_host[id] : NULL;
	}
	return NULL;
}

/*
 * Where the region belongs while acquired: its node stays linked there,
 * parked, when only the acquire changed (the walk unlinks it if it meets
 * it first).
 */
static struct um_vset *wanted_set(struct um_context *ctx,
				  const struct um_region *r, int which)
{
	return r->acquired ? NULL : home_set(ctx, r, which);
}

static struct um_vkey key_of(const struct um_region *r)
{
	return (struct um_vkey){
		.rank = (uint32_t)kind_rank_of(r->kind),
		.prio = r->priority,
		.lru = r->lru,
		.bytes = r->bytes,
		.idx = r->idx,
	};
}

static uint64_t charge_of(const struct um_region *r)
{
	return um__tier_is_dev(r->residency) ? r->dev_len : r->bytes;
}

/* The same place in the order but for a recency that grew (a hit). */
static bool only_newer(const struct um_vkey *linked, const struct um_vkey *k)
{
	return linked->rank == k->rank && linked->prio == k->prio &&
	       linked->bytes == k->bytes && linked->idx == k->idx &&
	       linked->lru <= k->lru;
}

/*
 * A hit's change, with n left where it is linked (parked while acquired,
 * stale once released at a newer recency); false when n must be relinked.
 * It reads only the node's first line: its charge needs no check, as a
 * region's sizes are fixed at um_alloc and the set says device or host.
 */
static bool sync_lazy(struct um_context *ctx, struct um_region *r, int which,
		      struct um_vnode *n)
{
	struct um_vkey k = key_of(r);
	struct um_vset *s = n->set;

	if (!s || s != home_set(ctx, r, which) || !only_newer(&n->key, &k))
		return false;
	if (r->acquired != n->parked) {
		n->parked = r->acquired;
		count_in(s, n, !n->parked);
	}
	if (n->key.lru != k.lru)
		n->stale = true;
	return true;
}

static void sync_node(struct um_context *ctx, struct um_region *r, int which)
{
	struct um_vnode *n = &r->victim[which];
	struct um_vset *want = wanted_set(ctx, r, which);
	uint8_t bit = (uint8_t)(1u << which);

	/* not a victim, and not wanted as one: the node is not even read */
	if (!want && !(r->victim_in & bit))
		return;
	if (sync_lazy(ctx, r, which, n))
		return;
	if (n->set)
		set_remove(n->set, n);
	n->set = want;
	r->victim_in = (uint8_t)(want ? r->victim_in | bit :
				 r->victim_in & ~bit);
	if (!want)
		return;
	n->owner = r;
	n->key = key_of(r);
	n->charged = charge_of(r);
	n->heap = heap_of(r->idx, which);
	set_insert(want, n);
}

static void sync_drain(struct um_context *ctx, struct um_region *r)
{
	/* um__draining(): counted, but no longer resident on the device */
	bool leaving = r->counted && !um__tier_is_dev(r->residency);
	uint64_t want = leaving ? r->dev_len : 0;

	if (want == r->drain_charged)
		return;
	ctx->dev[r->drain_dev].draining -= r->drain_charged;
	r->drain_dev = r->device;
	ctx->dev[r->device].draining += want;
	r->drain_charged = want;
}

void um__victims_sync(struct um_context *ctx, struct um_region *r)
{
	sync_node(ctx, r, 0);
	sync_node(ctx, r, 1);
	sync_drain(ctx, r);
}

void um__victims_drop(struct um_context *ctx, struct um_region *r)
{
	for (int which = 0; which < 2; which++) {
		struct um_vnode *n = &r->victim[which];

		if (n->set)
			set_remove(n->set, n);
		n->set = NULL;
	}
	r->victim_in = 0;
	ctx->dev[r->drain_dev].draining -= r->drain_charged;
	r->drain_charged = 0;
}

/* The set of tier's victims, or NULL where a tier keeps none. */
static struct um_vset *tier_set(struct um_context *ctx, um_tier_t tier)
{
	unsigned int id = UM_TIER_ID(tier);

	if (um__tier_is_dev(tier))
		return id < UM_MAX_DEVICES ? &ctx->victims_dev[id] : NULL;
	if (um__tier_is_any(tier))
		return um__tier_is_host(tier) ? &ctx->victims_host_any : NULL;
	if (um__tier_is_host(tier))
		return id < UM_STATS_MAX_NODES ? &ctx->victims_host[id] : NULL;
	return NULL;
}

/* The first victim after key (all, with key NULL). */
static struct um_vnode *after(struct um_vnode *t, const struct um_vkey *key)
{
	struct um_vnode *best = NULL;

	while (t) {
		if (!key || key_cmp(&t->key, key) > 0) {
			best = t;
			t = t->left;
		} else {
			t = t->right;
		}
	}
	return best;
}

/*
 * The walk puts right what hits left (see the top of this file): a parked
 * node it meets is unlinked, a stale one relinked under its current key
 * (further on: the walk meets it again in its place).
 */
struct um_region *um__victim_next(struct um_context *ctx, um_tier_t tier,
				  const struct um_vkey *key)
{
	struct um_vset *s = tier_set(ctx, tier);
	struct um_vnode *n;

	while (s && (n = after(s->root, key))) {
		struct um_region *r = n->owner;

		if (!n->parked && !n->stale)
			return r;
		tree_unlink(s, n);
		if (n->parked) {
			n->parked = false;
			n->set = NULL;
			r->victim_in &= (uint8_t)~(n == &r->victim[1] ? 2u : 1u);
			continue;
		}
		n->stale = false;
		n->key = key_of(r);
		tree_link(s, n);
	}
	return NULL;
}

/* What r adds to tier's victim bytes: 0 where it is no victim. */
uint64_t um__victim_charge(struct um_context *ctx, const struct um_region *r,
			   um_tier_t tier)
{
	const struct um_vnode *n =
		&r->victim[um__tier_is_host(tier) && um__tier_is_any(tier)];

	return n->set && n->set == tier_set(ctx, tier) && !n->parked ?
	       n->charged : 0;
}

uint64_t um__victims_bytes(struct um_context *ctx, um_tier_t tier)
{
	struct um_vset *s = tier_set(ctx, tier);

	return s ? s->bytes : 0;
}

struct um_vkey um__victim_key(const struct um_region *r, um_tier_t tier)
{
	return r->victim[um__tier_is_host(tier) && um__tier_is_any(tier)].key;
}
