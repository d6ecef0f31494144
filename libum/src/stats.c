/* SPDX-License-Identifier: MIT */
/*
 * stats.c - counters, um_stats_get, the JSON dump and the leak report; the
 * device unit (um_granularity).
 *
 * Scalar counters are listed once (an X-macro) and drive both the
 * versioned struct copy and the JSON text, so no counter can be missing
 * from either. A caller built against an older, smaller struct um_stats
 * gets the prefix it knows (st->size); a newer, larger one gets ours and
 * zeroes beyond.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "spill.h"
#include "suballoc.h"
#include "util.h"

/* X(field in struct um_stats and struct um_books, JSON name) */
#define UM_SCALAR_STATS(X)					\
	X(migrations, "count")					\
	X(migrated_bytes, "bytes")				\
	X(migration_ns, "ns")					\
	X(evict_count, "evict_count")				\
	X(evict_bytes, "evict_bytes")				\
	X(evict_ns, "evict_ns")					\
	X(restore_count, "restore_count")			\
	X(restore_bytes, "restore_bytes")			\
	X(restore_ns, "restore_ns")				\
	X(node_moves_paged, "node_moves_paged")			\
	X(node_moves_copied, "node_moves_copied")		\
	X(evict_clean_count, "evict_clean_count")		\
	X(evict_clean_bytes, "evict_clean_bytes")

static const char *const event_names[UM_EVENT_COUNT] = {
	[UM_EVENT_NONE] = "none",
	[UM_EVENT_MIGRATED] = "migrated",
	[UM_EVENT_EVICTED] = "evicted",
	[UM_EVENT_PRESSURE] = "pressure",
	[UM_EVENT_NOMEM] = "nomem",
	[UM_EVENT_ERROR] = "error",
};

static void fill(struct um_context *ctx, struct um_stats *s)
{
	struct um_books *k = &ctx->books;
	struct um_pool_stats ps;

	memset(s, 0, sizeof(*s));
	s->size = sizeof(*s);
	s->regions = ctx->nregions;
	memcpy(s->device, k->tier.device, sizeof(s->device));
	memcpy(s->host, k->tier.host, sizeof(s->host));
	s->host_total = k->tier.host_total;
	s->spill = k->tier.spill;
	memcpy(s->kind, k->kind, sizeof(s->kind));
	for (int i = 0; i < ctx->ndev; i++)
		s->budget[i] = ctx->dev[i].budget;
#define X(f, name) s->f = k->f;
	UM_SCALAR_STATS(X)
#undef X
	s->nomem = k->nomem;
	memcpy(s->events, k->events, sizeof(s->events));
	if (!um__pool_stats(ctx->pool, UM_POOL_NODE_ALL, &ps)) {
		s->pool_chunks = ps.chunks;
		s->pool_bytes = ps.bytes;
		s->pool_used = ps.used;
		s->pool_requested = ps.requested;
		s->pool_internal_frag_bp = ps.internal_frag_bp;
		s->pool_external_frag_bp = ps.external_frag_bp;
	}
	um__suballoc_stats(ctx, s);
}

int um_granularity(struct um_context *ctx, unsigned int device,
		   uint64_t *bytes)
{
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!bytes || device >= UM_MAX_DEVICES || (int)device >= ctx->ndev)
		ret = -EINVAL;
	else
		*bytes = ctx->dev[device].gran;
	um__exit(ctx);
	return ret;
}

int um_stats_get(struct um_context *ctx, struct um_stats *st)
{
	struct um_stats s;
	uint32_t size;
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!st) {
		ret = -EINVAL;
		goto out;
	}
	size = st->size;
	if (size < offsetof(struct um_stats, regions) + sizeof(s.regions) ||
	    size > 65536) {
		ret = -EINVAL;
		goto out;
	}
	fill(ctx, &s);
	s.size = size;
	if (size > sizeof(s))
		memset((char *)st + sizeof(s), 0, size - sizeof(s));
	memcpy(st, &s, size < sizeof(s) ? size : sizeof(s));
out:
	um__exit(ctx);
	return ret;
}

/* ---- JSON ------------------------------------------------------------- */

struct out {
	char *buf;
	size_t len;
	size_t pos;	/* length of the whole text so far */
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

/* Names are ours or the caller's: escape what JSON requires. */
static void put_str(struct out *o, const char *s)
{
	put(o, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			put(o, "\\%c", c);
		else if (c < 0x20)
			put(o, "\\u%04x", c);
		else
			put(o, "%c", c);
	}
	put(o, "\"");
}

static void put_counter(struct out *o, const struct um_counter *c)
{
	put(o, "{\"current\":%" PRIu64 ",\"peak\":%" PRIu64 ",\"total\":%" PRIu64 "}",
	    c->current, c->peak, c->total);
}

/* GB/s with three decimals, without floating point (no locale surprises). */
static void put_rate(struct out *o, uint64_t bytes, uint64_t ns)
{
	uint64_t milli = 0;

	if (ns)
		milli = (uint64_t)((unsigned __int128)bytes * 1000 / ns);
	put(o, "%" PRIu64 ".%03" PRIu64, milli / 1000, milli % 1000);
}

static void json(struct um_context *ctx, struct out *o)
{
	struct um_stats s;

	fill(ctx, &s);
	put(o, "{\"version\":\"%d.%d\",\"backend\":\"%s\",\"regions\":%u,",
	    UM_VERSION_MAJOR, UM_VERSION_MINOR, ctx->be.ops->name, s.regions);
	put(o, "\"devices\":[");
	for (int i = 0; i < ctx->ndev; i++) {
		put(o, "%s{\"id\":%d,\"budget\":%" PRIu64 ",\"capacity\":%" PRIu64
		    ",\"bytes\":", i ? "," : "", i, s.budget[i], ctx->dev[i].total);
		put_counter(o, &s.device[i]);
		put(o, "}");
	}
	put(o, "],\"host\":{\"bytes\":");
	put_counter(o, &s.host_total);
	put(o, ",\"nodes\":[");
	for (int i = 0, first = 1; i < UM_STATS_MAX_NODES; i++) {
		if (!s.host[i].total)
			continue;
		put(o, "%s{\"node\":%d,\"bytes\":", first ? "" : ",", i);
		put_counter(o, &s.host[i]);
		put(o, "}");
		first = 0;
	}
	put(o, "]},\"spill\":{\"bytes\":");
	put_counter(o, &s.spill);
	put(o, "},\"kinds\":{");
	for (int i = 0; i < UM_KIND_COUNT; i++) {
		put(o, "%s\"%s\":", i ? "," : "", um_kind_name(i));
		put_counter(o, &s.kind[i]);
	}
	put(o, "},\"migrations\":{");
#define X(f, name) put(o, "\"" name "\":%" PRIu64 ",", s.f);
	UM_SCALAR_STATS(X)
#undef X
	put(o, "\"gbps\":");
	put_rate(o, s.migrated_bytes, s.migration_ns);
	put(o, ",\"evict_gbps\":");
	put_rate(o, s.evict_bytes, s.evict_ns);
	put(o, ",\"restore_gbps\":");
	put_rate(o, s.restore_bytes, s.restore_ns);
	put(o, "},\"nomem\":%" PRIu64 ",\"events\":{", s.nomem);
	for (int i = 1; i < UM_EVENT_COUNT; i++)
		put(o, "%s\"%s\":%" PRIu64, i > 1 ? "," : "", event_names[i],
		    s.events[i]);
	put(o, ",\"dropped\":%" PRIu64 "},", ctx->books.events_dropped);
	put(o, "\"pool\":{\"chunks\":%" PRIu64 ",\"bytes\":%" PRIu64
	    ",\"used\":%" PRIu64 ",\"requested\":%" PRIu64
	    ",\"internal_frag_bp\":%u,\"external_frag_bp\":%u}",
	    s.pool_chunks, s.pool_bytes, s.pool_used, s.pool_requested,
	    s.pool_internal_frag_bp, s.pool_external_frag_bp);
	put(o, ",\"suballoc\":{\"segments\":%" PRIu64 ",\"reserved\":%" PRIu64
	    ",\"allocated\":%" PRIu64 ",\"requested\":%" PRIu64
	    ",\"blocks\":%" PRIu64 ",\"inactive_split\":%" PRIu64
	    ",\"largest_free\":%" PRIu64 ",\"pending\":%" PRIu64
	    ",\"allocs\":%" PRIu64 ",\"grows\":%" PRIu64 "}",
	    s.suballoc_segments, s.suballoc_reserved, s.suballoc_allocated,
	    s.suballoc_requested, s.suballoc_blocks, s.suballoc_inactive_split,
	    s.suballoc_largest_free, s.suballoc_pending, s.suballoc_allocs,
	    s.suballoc_grows);
	if (ctx->spill) {
		struct um_spill_stats ss;

		um__spill_stats(ctx->spill, &ss);
		put(o, ",\"spill_store\":{\"dir\":");
		put_str(o, um__spill_dir(ctx->spill));
		put(o, ",\"files\":%" PRIu64 ",\"writes\":%" PRIu64
		    ",\"reads\":%" PRIu64 ",\"write_errors\":%" PRIu64
		    ",\"read_errors\":%" PRIu64 ",\"checksum_errors\":%" PRIu64
		    ",\"direct\":%u}", ss.files, ss.writes, ss.reads,
		    ss.write_errors, ss.read_errors, ss.checksum_errors,
		    ss.direct);
	}
	put(o, ",\"live\":[");
	for (struct um_region *r = ctx->regions.next, *f = r;
	     r != &ctx->regions; r = r->next) {
		char tier[16];

		um_tier_name(r->residency, tier, sizeof(tier));
		put(o, "%s{\"name\":", r == f ? "" : ",");
		put_str(o, r->name);
		put(o, ",\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"residency\":\"%s\""
		    ",\"acquired\":%u}", r->bytes, um_kind_name((int)r->kind),
		    tier, r->acquired);
	}
	put(o, "]}");
}

int um_stats_json(struct um_context *ctx, char *buf, size_t len)
{
	struct out o = { .buf = buf, .len = len };
	int ret = um__enter(ctx);

	if (ret)
		return ret;
	if (!buf && len) {
		um__exit(ctx);
		return -EINVAL;
	}
	json(ctx, &o);
	um__exit(ctx);
	if (o.pos > INT_MAX)
		return -EOVERFLOW;
	return (int)o.pos;
}

/* ---- leaks ------------------------------------------------------------ */

int um__leak_report(struct um_context *ctx)
{
	int n = 0;

	for (struct um_region *r = ctx->regions.next; r != &ctx->regions;
	     r = r->next) {
		char tier[16];

		um_tier_name(r->residency, tier, sizeof(tier));
		um__log(ctx, UM_LOG_WARN,
			"leak: region \"%s\" (%s, %s, on %s%s) still alive at destroy",
			r->name[0] ? r->name : "(unnamed)", UM_SIZE(r->bytes),
			um_kind_name((int)r->kind), tier,
			r->acquired ? ", acquired" : "");
		n++;
	}
	return n;
}
