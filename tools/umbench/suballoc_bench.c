// SPDX-License-Identifier: MIT
/*
 * suballoc_bench.c - umbench suballoc: small allocations through the
 * sub-allocator (um_suballoc_*) against a region each, on the sim backend.
 *
 * With N blocks of 4 KiB live: an allocation that hits a cached block and
 * its free (1,000 blocks freed, then allocated again and freed, timed
 * apart; median over rounds), the device bytes the N blocks take against
 * their own bytes; and, for comparison, a 4 KiB region's alloc+acquire and
 * release+free pair with N regions live (at most 1,000: a region takes a
 * 2 MiB granule, so 10,000 would need 20 GB of sim device memory).
 * Targets: a hit costs at most 1 us; N blocks take at most 1.2 times their
 * bytes plus one granule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "um.h"

#define SB_BLOCK	4096
#define SB_CACHED	1000		/* blocks freed, then hit */
#define SB_MAX_LIVES	3

struct sb_row {
	unsigned int live;
	double hit_ns, free_ns;		/* medians */
	uint64_t device_bytes, gran;
	double region_pair_ns;		/* < 0: not measured */
};

static int sb_ctx(uint64_t capacity, struct um_context **ctx)
{
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_SIM;
	cfg.sim_capacity = capacity;
	cfg.device_budget = capacity;
	cfg.log = bench_log;
	cfg.log_level = UM_LOG_WARN;	/* as the other sections: no INFO per context */
	return um_context_create(&cfg, ctx);
}

/* Hit and free times, device bytes, with live blocks held. */
static int sb_blocks(const struct bench_opts *o, struct sb_row *row)
{
	struct um_suballoc_desc d = {
		.size = sizeof(d), .flags = UM_SUBALLOC_HOLD, .name = "bench",
	};
	struct um_stats st = { .size = sizeof(st) };
	struct um_context *ctx;
	struct um_suballoc *sa;
	void **live, *c[SB_CACHED];
	double *hit, *fr;
	int rc;

	rc = sb_ctx(256ull << 20, &ctx);
	if (rc)
		return rc;
	live = calloc(row->live, sizeof(*live));
	hit = calloc(o->rounds, sizeof(*hit));
	fr = calloc(o->rounds, sizeof(*fr));
	rc = live && hit && fr ? um_suballoc_create(ctx, &d, &sa) : -ENOMEM;
	if (rc)
		goto out;
	for (unsigned int i = 0; i < row->live && !rc; i++)
		rc = um_suballoc_alloc(sa, SB_BLOCK, NULL, &live[i]);
	if (!rc)
		rc = um_stats_get(ctx, &st);
	if (!rc)
		rc = um_granularity(ctx, 0, &row->gran);
	row->device_bytes = st.device[0].current;
	/* the first round only fills the cache: not timed */
	for (unsigned int r = 0; r <= o->rounds && !rc; r++) {
		uint64_t t0 = ut_now_ns(), t1;

		for (int i = 0; i < SB_CACHED && !rc; i++)
			rc = um_suballoc_alloc(sa, SB_BLOCK, NULL, &c[i]);
		t1 = ut_now_ns();
		for (int i = 0; i < SB_CACHED && !rc; i++)
			rc = um_suballoc_free(sa, c[i], NULL);
		if (r) {
			hit[r - 1] = (double)(t1 - t0) / SB_CACHED;
			fr[r - 1] = (double)(ut_now_ns() - t1) / SB_CACHED;
		}
	}
	if (!rc) {
		row->hit_ns = ut_median(hit, o->rounds);
		row->free_ns = ut_median(fr, o->rounds);
	}
	for (unsigned int i = 0; i < row->live; i++)
		if (live[i])
			um_suballoc_free(sa, live[i], NULL);
	um_suballoc_destroy(sa);
out:
	free(live);
	free(hit);
	free(fr);
	um_context_destroy(ctx);
	return rc;
}

static int sb_region_pair(struct um_context *ctx, um_region_t *r)
{
	struct um_region_desc d = {
		.size = sizeof(d), .bytes = SB_BLOCK, .name = "bench.region",
	};
	int rc = um_alloc(ctx, &d, r);

	if (!rc)
		rc = um_acquire(ctx, *r, UM_TIER_GPU(0), NULL);
	return rc;
}

/* A region's alloc+acquire / release+free pair with live regions held. */
static int sb_regions(const struct bench_opts *o, struct sb_row *row)
{
	unsigned int pairs = o->quick ? 20 : 200;
	struct um_context *ctx;
	um_region_t *live, x;
	uint64_t t0;
	int rc;

	rc = sb_ctx(((uint64_t)row->live + 4) << 21, &ctx);
	if (rc)
		return rc;
	live = calloc(row->live, sizeof(*live));
	rc = live ? 0 : -ENOMEM;
	for (unsigned int i = 0; i < row->live && !rc; i++)
		rc = sb_region_pair(ctx, &live[i]);
	t0 = ut_now_ns();
	for (unsigned int i = 0; i < pairs && !rc; i++) {
		rc = sb_region_pair(ctx, &x);
		if (!rc)
			rc = um_release(ctx, x);
		if (!rc)
			rc = um_free(ctx, x);
	}
	if (!rc)
		row->region_pair_ns = (double)(ut_now_ns() - t0) / pairs;
	for (unsigned int i = 0; live && i < row->live; i++) {
		if (!live[i])
			break;
		um_release(ctx, live[i]);
		um_free(ctx, live[i]);
	}
	free(live);
	um_context_destroy(ctx);
	return rc;
}

/* Device bytes over the blocks' own, the first granule aside. */
static double packing(const struct sb_row *row)
{
	double dev = (double)row->device_bytes - (double)row->gran;

	return (dev > 0 ? dev : 0) / ((double)row->live * SB_BLOCK);
}

static bool sb_pass(const struct sb_row *row)
{
	return bench_target_met(T_SUBALLOC_HIT_NS, row->hit_ns, NULL) &&
	       bench_target_met(T_SUBALLOC_PACKING, packing(row), NULL);
}

int bench_suballoc(const struct bench_opts *o)
{
	static const unsigned int lives[SB_MAX_LIVES] = { 100, 1000, 10000 };
	struct sb_row rows[SB_MAX_LIVES];
	bool pass = true;
	int rc;

	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < SB_MAX_LIVES; i++) {
		rows[i].live = lives[i];
		rows[i].region_pair_ns = -1;
		rc = sb_blocks(o, &rows[i]);
		if (!rc && lives[i] <= (o->quick ? 100u : 1000u))
			rc = sb_regions(o, &rows[i]);
		if (rc) {
			ut_warn("suballoc: %u live: %s", lives[i],
				strerror(-rc));
			return rc;
		}
		pass = pass && sb_pass(&rows[i]);
	}
	if (o->j) {
		struct ut_json *j = o->j;

		ut_json_obj_begin(j, "suballoc");
		ut_json_u64(j, "block_bytes", SB_BLOCK);
		ut_json_u64(j, "rounds", o->rounds);
		ut_json_dbl(j, "target_hit_ns_max",
			    bench_targets[T_SUBALLOC_HIT_NS].limit);
		ut_json_dbl(j, "target_packing_max",
			    bench_targets[T_SUBALLOC_PACKING].limit);
		ut_json_arr_begin(j, "live");
		for (int i = 0; i < SB_MAX_LIVES; i++) {
			const struct sb_row *w = &rows[i];

			ut_json_obj_begin(j, NULL);
			ut_json_u64(j, "blocks", w->live);
			ut_json_dbl(j, "hit_ns", w->hit_ns);
			ut_json_dbl(j, "free_ns", w->free_ns);
			ut_json_u64(j, "device_bytes", w->device_bytes);
			ut_json_dbl(j, "packing", (double)w->device_bytes /
				    ((double)w->live * SB_BLOCK));
			if (w->region_pair_ns < 0)
				ut_json_null(j, "region_pair_ns");
			else
				ut_json_dbl(j, "region_pair_ns",
					    w->region_pair_ns);
			ut_json_bool(j, "pass", sb_pass(w));
			ut_json_obj_end(j);
		}
		ut_json_arr_end(j);
		ut_json_arr_begin(j, "targets");
		for (int i = 0; i < SB_MAX_LIVES; i++) {
			char at[32];

			snprintf(at, sizeof(at), "%u live", rows[i].live);
			bench_target_json(j, T_SUBALLOC_HIT_NS,
					  rows[i].hit_ns, at);
			bench_target_json(j, T_SUBALLOC_PACKING,
					  packing(&rows[i]), at);
		}
		ut_json_arr_end(j);
		ut_json_bool(j, "pass", pass);
		ut_json_obj_end(j);
	} else if (!o->quiet) {
		static const char *const cols[] = {
			"LIVE", "HIT", "FREE", "DEVICE", "PACKING",
			"REGION PAIR", "TARGETS",
		};
		struct libscols_table *tb = ut_table_new(cols, 7, 0x3f);

		printf("suballoc: 4 KiB blocks of a sub-allocator against a "
		       "region each (sim backend), median of %u rounds\n",
		       o->rounds);
		for (int i = 0; tb && i < SB_MAX_LIVES; i++) {
			const struct sb_row *w = &rows[i];
			char n[16], a[UT_SIZE_STR], b[UT_SIZE_STR],
			     c[UT_SIZE_STR], d[UT_SIZE_STR], p[16];

			snprintf(n, sizeof(n), "%u", w->live);
			snprintf(p, sizeof(p), "%.3fx",
				 (double)w->device_bytes /
				 ((double)w->live * SB_BLOCK));
			ut_table_rowf(tb, 7, n, bench_time_str(w->hit_ns, a),
				      bench_time_str(w->free_ns, b),
				      ut_size_str(w->device_bytes, c), p,
				      w->region_pair_ns < 0 ? "-" :
				      bench_time_str(w->region_pair_ns, d),
				      sb_pass(w) ? "ok" : "MISS");
		}
		if (tb)
			ut_table_print(tb);
		bench_target_say(T_SUBALLOC_HIT_NS);
		bench_target_say(T_SUBALLOC_PACKING);
		putchar('\n');
	}
	return pass ? 0 : 1;
}
