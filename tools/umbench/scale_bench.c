// SPDX-License-Identifier: MIT
/*
 * scale_bench.c - umbench scale: what one public call costs as the number
 * of regions grows, at 64 ... 65536 regions of 64 KiB with a device budget
 * of a quarter of them.
 *
 * At each count the same program runs: allocate every region, make them
 * all resident once, then rounds of acquire+release over a random
 * permutation (nearly every acquire restores its region and evicts
 * another: a "miss"), where after every HIT_EVERY of them the last
 * HIT_BACK regions the round touched, still resident, are acquired and
 * released again (a "hit"); a um_lookup of every region's pointer; the
 * frees. Each call is timed on its own; the table gives the mean per call
 * (over SCALE_MIN_REGIONS regions' worth of lives at the small counts,
 * the lowest of SCALE_SWEEPS sweeps) and its ratio to the smallest count
 * measured in the same run. A flat
 * library shows ratios near 1; a walk over every region on each call
 * shows a ratio that grows with the count.
 *
 * A hit is of a region touched a fixed few calls before, at every count,
 * so that it measures what the library does with more regions and not
 * how far the machine's caches reach: a region last touched a quarter of
 * the device ago is cold in every cache at 32768 regions (design/libum.rst,
 * "Cost in the number of regions", has both figures).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "um.h"

enum { C_ALLOC, C_HIT, C_MISS, C_LOOKUP, C_FREE, C_COUNT };

static const char *const call_names[C_COUNT] = {
	"alloc", "hit", "miss", "lookup", "free",
};

#define SCALE_REGION_BYTES	(64u << 10)
/*
 * Resident regions at most: each takes a granule of the sim's memory, and
 * the sim's device memory is real host memory (2 MiB granules land on
 * transparent huge pages, so 64 KiB touched costs 2 MiB).
 */
#define SCALE_MAX_RESIDENT	1024u
/* hits: the last HIT_BACK regions again after every HIT_EVERY misses */
#define HIT_EVERY		16u
#define HIT_BACK		8u
/* regions allocated at each count at least (see measure()) */
#define SCALE_MIN_REGIONS	4096u
/*
 * Sweeps over every count; each call's figure is its lowest mean of them.
 * A mean keeps whatever a call does now and then (a walk every hundred
 * calls shows); the lowest of three drops a slow moment of the machine,
 * which seldom lands on the same count three times.
 */
#define SCALE_SWEEPS		3u

static const unsigned int default_counts[] = {
	64, 512, 4096, 32768, 65536,
};
static const unsigned int quick_counts[] = { 64, 512 };

/* Per-call totals at one region count. */
struct scale_point {
	unsigned int regions;
	uint64_t ns[C_COUNT];
	uint64_t calls[C_COUNT];
};

struct scale_run {
	const struct bench_opts *o;
	struct um_context *ctx;
	um_region_t *r;
	void **ptr;
	unsigned int *perm;
	struct scale_point *pt;
	uint64_t seed;
};

static double per_call(const struct scale_point *p, int c)
{
	return p->calls[c] ? (double)p->ns[c] / (double)p->calls[c] : 0.0;
}

static unsigned int next_rand(struct scale_run *s)
{
	/* xorshift64: a fixed sequence, so every count sees the same shape */
	s->seed ^= s->seed << 13;
	s->seed ^= s->seed >> 7;
	s->seed ^= s->seed << 17;
	return (unsigned int)(s->seed >> 32);
}

static void shuffle(struct scale_run *s, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		s->perm[i] = i;
	for (i = n; i > 1; i--) {
		unsigned int j = next_rand(s) % i, t = s->perm[i - 1];

		s->perm[i - 1] = s->perm[j];
		s->perm[j] = t;
	}
}

static unsigned int resident_max(unsigned int n)
{
	unsigned int q = n / 4 ? n / 4 : 1;

	return q < SCALE_MAX_RESIDENT ? q : SCALE_MAX_RESIDENT;
}

static int open_context(struct scale_run *s, unsigned int n)
{
	struct um_config c;
	uint64_t granule = 0, budget;
	int rc;

	um_config_init(&c);
	c.backend = (uint32_t)s->o->backend;
	c.log = bench_log;
	c.log_level = UM_LOG_WARN;
	/* The sim's device is sized after the granule is known (below). */
	rc = um_context_create(&c, &s->ctx);
	if (rc)
		return rc;
	rc = um_granularity(s->ctx, 0, &granule);
	if (rc)
		return rc;
	um_context_destroy(s->ctx);
	s->ctx = NULL;
	/* Each region takes at least one granule of the budget. */
	budget = (uint64_t)resident_max(n) * granule;
	c.device_budget = budget;
	c.sim_capacity = budget + 8 * granule;
	return um_context_create(&c, &s->ctx);
}

static int alloc_all(struct scale_run *s, struct scale_point *p)
{
	unsigned int i;
	int rc = 0;

	for (i = 0; !rc && i < p->regions; i++) {
		struct um_region_desc d = {
			.size = sizeof(d), .kind = UM_KIND_OPTIMIZER_STATE,
			.bytes = SCALE_REGION_BYTES,
		};
		uint64_t t0 = ut_now_ns();

		rc = um_alloc(s->ctx, &d, &s->r[i]);
		p->ns[C_ALLOC] += ut_now_ns() - t0;
		p->calls[C_ALLOC]++;
		if (!rc)
			rc = um_ptr(s->ctx, s->r[i], &s->ptr[i]);
	}
	return rc;
}

static bool resident(struct scale_run *s, um_region_t r)
{
	struct um_region_info info = { .size = sizeof(info) };

	return !um_region_info(s->ctx, r, &info) &&
	       UM_TIER_TYPE(info.residency) == UM_TIER_DEVICE &&
	       !info.pending;
}

/* acquire+release of r, timed as a hit or a miss by where it was */
static int touch(struct scale_run *s, um_region_t r, struct scale_point *p)
{
	int c = p && resident(s, r) ? C_HIT : C_MISS;
	uint64_t t0 = ut_now_ns();
	int rc = um_acquire(s->ctx, r, UM_TIER_GPU(0), NULL);

	if (!rc)
		rc = um_release(s->ctx, r);
	if (p) {
		p->ns[c] += ut_now_ns() - t0;
		p->calls[c]++;
	}
	return rc;
}

/*
 * One round over a new permutation of the n regions, with hits on purpose
 * when p is set: a random permutation alone hits rarely (least recently
 * used eviction takes a region before the round reaches it), but the
 * last regions it touched are resident.
 */
static int round_once(struct scale_run *s, unsigned int n,
		      struct scale_point *p)
{
	unsigned int i, k;
	int rc = 0;

	shuffle(s, n);
	for (i = 0; !rc && i < n; i++) {
		rc = touch(s, s->r[s->perm[i]], p);
		if (!p || (i + 1) % HIT_EVERY || i + 1 < HIT_BACK)
			continue;
		for (k = i + 1 - HIT_BACK; !rc && k <= i; k++)
			rc = touch(s, s->r[s->perm[k]], p);
	}
	return rc;
}

static int lookup_all(struct scale_run *s, struct scale_point *p)
{
	unsigned int i;
	int rc = 0;

	shuffle(s, p->regions);
	for (i = 0; !rc && i < p->regions; i++) {
		unsigned int k = s->perm[i];
		um_region_t found = 0;
		/* a pointer inside the region, not only its start */
		const char *q = (const char *)s->ptr[k] + (k % 1024) * 64;
		uint64_t t0 = ut_now_ns();

		rc = um_lookup(s->ctx, q, &found);
		p->ns[C_LOOKUP] += ut_now_ns() - t0;
		p->calls[C_LOOKUP]++;
		if (!rc && found != s->r[k])
			rc = -EPROTO;
	}
	return rc;
}

static int free_all(struct scale_run *s, struct scale_point *p)
{
	unsigned int i;
	int rc = 0;

	shuffle(s, p->regions);
	for (i = 0; i < p->regions; i++) {
		unsigned int k = s->perm[i];
		uint64_t t0;
		int err;

		if (!s->r[k])
			continue;
		t0 = ut_now_ns();
		err = um_free(s->ctx, s->r[k]);
		p->ns[C_FREE] += ut_now_ns() - t0;
		p->calls[C_FREE]++;
		s->r[k] = 0;
		if (err && !rc)
			rc = err;
	}
	return rc;
}

/* One life of p->regions regions in the open context: alloc to free. */
static int cycle(struct scale_run *s, struct scale_point *p,
		 const char **what)
{
	unsigned int r, rounds = s->o->quick ? 1 : 3;
	int rc, err;

	*what = "um_alloc";
	rc = alloc_all(s, p);
	if (!rc) {
		*what = "the warm-up round";
		rc = round_once(s, p->regions, NULL);
	}
	for (r = 0; !rc && r < rounds; r++) {
		*what = "an acquire+release round";
		rc = round_once(s, p->regions, p);
	}
	if (!rc) {
		*what = "um_lookup";
		rc = lookup_all(s, p);
	}
	if (!rc)
		*what = "um_free";
	err = free_all(s, p);
	return rc ? rc : err;
}

/*
 * In one context, as many lives as make SCALE_MIN_REGIONS regions: the
 * small counts' few calls alone are at the mercy of one slow moment.
 */
static int measure(struct scale_run *s, struct scale_point *p)
{
	unsigned int i, lives = s->o->quick ? 1 :
		(SCALE_MIN_REGIONS + p->regions - 1) / p->regions;
	const char *what = "creating a context";
	int rc;

	rc = open_context(s, p->regions);
	for (i = 0; !rc && i < lives; i++)
		rc = cycle(s, p, &what);
	if (s->ctx) {
		um_context_destroy(s->ctx);
		s->ctx = NULL;
	}
	if (rc)
		ut_warn("scale: %u regions: %s: %s", p->regions, what,
			strerror(-rc));
	return rc;
}

static void report_text(const struct scale_run *s, size_t np)
{
	static const char *const cols[] = {
		"REGIONS", "ALLOC", "HIT", "MISS", "LOOKUP", "FREE",
	};
	struct libscols_table *tb = ut_table_new(cols, 6, 0x3e);
	const struct scale_point *base = &s->pt[0];
	char cell[C_COUNT][48], n[16], t[UT_SIZE_STR];
	size_t i;
	int c;

	printf("scale: per-call cost by region count (%s regions, budget a "
	       "quarter of them, at most %u, %s backend), ratio to %u "
	       "regions\n",
	       ut_size_str(SCALE_REGION_BYTES, t), SCALE_MAX_RESIDENT,
	       bench_backend_name(s->o->backend), base->regions);
	if (!tb)
		return;
	for (i = 0; i < np; i++) {
		const struct scale_point *p = &s->pt[i];

		snprintf(n, sizeof(n), "%u", p->regions);
		for (c = 0; c < C_COUNT; c++) {
			double v = per_call(p, c), b = per_call(base, c);

			bench_time_str(v, t);
			if (b > 0)
				snprintf(cell[c], sizeof(cell[c]), "%s %.2fx",
					 t, v / b);
			else
				snprintf(cell[c], sizeof(cell[c]), "%s", t);
		}
		ut_table_rowf(tb, 6, n, cell[0], cell[1], cell[2], cell[3],
			      cell[4]);
	}
	ut_table_print(tb);
	putchar('\n');
}

static void report_json(const struct scale_run *s, size_t np)
{
	const struct scale_point *base = &s->pt[0];
	struct ut_json *j = s->o->j;
	size_t i;
	int c;

	ut_json_obj_begin(j, "scale");
	ut_json_str(j, "backend", bench_backend_name(s->o->backend));
	ut_json_u64(j, "region_bytes", SCALE_REGION_BYTES);
	ut_json_u64(j, "base_regions", base->regions);
	ut_json_arr_begin(j, "points");
	for (i = 0; i < np; i++) {
		const struct scale_point *p = &s->pt[i];

		ut_json_obj_begin(j, NULL);
		ut_json_u64(j, "regions", p->regions);
		for (c = 0; c < C_COUNT; c++) {
			double v = per_call(p, c), b = per_call(base, c);

			ut_json_obj_begin(j, call_names[c]);
			ut_json_u64(j, "calls", p->calls[c]);
			ut_json_dbl(j, "ns_per_call", v);
			ut_json_dbl(j, "ratio", b > 0 ? v / b : 0.0);
			ut_json_obj_end(j);
		}
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
	ut_json_obj_end(j);
}

/* Each call's lowest mean per call of the sweeps so far, into best. */
static void keep_lowest(struct scale_point *best, const struct scale_point *p,
			bool first)
{
	int c;

	best->regions = p->regions;
	for (c = 0; c < C_COUNT; c++) {
		if (!first && per_call(p, c) >= per_call(best, c))
			continue;
		best->ns[c] = p->ns[c];
		best->calls[c] = p->calls[c];
	}
}

int bench_scale(const struct bench_opts *o)
{
	const unsigned int *counts = o->quick ? quick_counts : default_counts;
	size_t np = o->quick ? sizeof(quick_counts) / sizeof(*quick_counts) :
			       sizeof(default_counts) / sizeof(*default_counts);
	struct scale_run s = { .o = o, .seed = 0x9e3779b97f4a7c15ull };
	unsigned int max = counts[np - 1];
	unsigned int w, sweeps = o->quick ? 1 : SCALE_SWEEPS;
	struct ut_progress prog;
	int rc = -ENOMEM;
	size_t i;

	if (o->scale_max) {
		while (np > 1 && counts[np - 1] > o->scale_max)
			np--;
		max = counts[np - 1];
	}
	s.r = calloc(max, sizeof(*s.r));
	s.ptr = calloc(max, sizeof(*s.ptr));
	s.perm = calloc(max, sizeof(*s.perm));
	s.pt = calloc(np, sizeof(*s.pt));
	if (!s.r || !s.ptr || !s.perm || !s.pt) {
		ut_warn("scale: out of memory");
		goto out;
	}
	ut_progress_init(&prog, sweeps * np, !o->quiet);
	for (w = 0, rc = 0; !rc && w < sweeps; w++) {
		for (i = 0; !rc && i < np; i++) {
			struct scale_point p = { .regions = counts[i] };

			rc = measure(&s, &p);
			keep_lowest(&s.pt[i], &p, w == 0);
			ut_progress_update(&prog, w * np + i + 1, "scale");
		}
	}
	ut_progress_end(&prog);
	if (rc)
		goto out;
	if (o->j)
		report_json(&s, np);
	else
		report_text(&s, np);
out:
	free(s.r);
	free(s.ptr);
	free(s.perm);
	free(s.pt);
	return rc;
}
