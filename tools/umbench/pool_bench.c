// SPDX-License-Identifier: MIT
/*
 * pool_bench.c - umbench pool: alloc+free latency of the pinned pool
 * (um_host_alloc/um_host_free) against glibc malloc/free and against the raw
 * pinned allocation the pool replaces, at each size, measured side by side:
 * every round times each method at each size in a rotating order, and the
 * report gives the median over rounds.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "um.h"

enum { M_POOL, M_MALLOC, M_RAW, M_COUNT };

static const char *const method_names[M_COUNT] = { "pool", "malloc", "raw" };

/* Keeps malloc/free pairs from being optimised away. */
static void *volatile sink;

struct pool_bench {
	const struct bench_opts *o;
	struct um_context *ctx;
	struct raw_pinned raw;
	double target_ns;		/* time per measurement */
	uint64_t iters[BENCH_MAX_SIZES][M_COUNT];
	double *ns[BENCH_MAX_SIZES][M_COUNT];	/* per round */
	double med[BENCH_MAX_SIZES][M_COUNT];
	/*
	 * pool over malloc and raw over pool, the median of each round's
	 * ratio: the two are timed back to back in a round, so a load
	 * that comes and goes slows both (a ratio of medians took them
	 * from different rounds: 3.00-3.05x against a 3x limit)
	 */
	double over_malloc[BENCH_MAX_SIZES], raw_over[BENCH_MAX_SIZES];
};

/* Average ns of one alloc+free pair over iters pairs, or -errno. */
static double time_pairs(struct pool_bench *pb, int m, size_t size,
			 uint64_t iters)
{
	uint64_t t0 = ut_now_ns(), i;
	void *p;
	int rc;

	for (i = 0; i < iters; i++) {
		switch (m) {
		case M_POOL:
			rc = um_host_alloc(pb->ctx, size, &p);
			if (!rc)
				rc = um_host_free(pb->ctx, p);
			break;
		case M_MALLOC:
			sink = malloc(size);
			rc = sink ? 0 : -ENOMEM;
			free(sink);
			break;
		default:
			rc = raw_alloc(&pb->raw, size, &p);
			if (!rc)
				raw_free(&pb->raw, p, size);
			break;
		}
		if (rc)
			return rc;
	}
	return (double)(ut_now_ns() - t0) / (double)iters;
}

/* Enough pairs per measurement to last target_ns; at least one. */
static int calibrate(struct pool_bench *pb)
{
	size_t s;
	int m;

	for (s = 0; s < pb->o->nsizes; s++)
		for (m = 0; m < M_COUNT; m++) {
			double one;
			uint64_t n;

			/* The first pair may grow the pool: not timed. */
			one = time_pairs(pb, m, pb->o->sizes[s], 1);
			if (one >= 0)
				one = time_pairs(pb, m, pb->o->sizes[s], 16) ;
			if (one < 0) {
				char sz[UT_SIZE_STR];

				ut_warn("pool: %s of %s failed: %s",
					method_names[m],
					ut_size_str(pb->o->sizes[s], sz),
					strerror((int)-one));
				return (int)one;
			}
			n = (uint64_t)(pb->target_ns / (one > 1.0 ? one : 1.0));
			pb->iters[s][m] = n < 1 ? 1 : n > 1000000 ? 1000000 : n;
		}
	return 0;
}

/* The median over rounds of method a's time over method b's, at size s. */
static double round_ratio(struct pool_bench *pb, size_t s, int a, int b)
{
	unsigned int n = pb->o->rounds;
	double *v = calloc(n, sizeof(*v)), med;

	if (!v)
		return NAN;	/* no figure: the target is missed */
	for (unsigned int r = 0; r < n; r++)
		v[r] = pb->ns[s][a][r] / pb->ns[s][b][r];
	med = ut_median(v, n);
	free(v);
	return med;
}

static int measure(struct pool_bench *pb, struct ut_progress *prog)
{
	unsigned int r, k;
	size_t s;

	for (r = 0; r < pb->o->rounds; r++) {
		for (s = 0; s < pb->o->nsizes; s++)
			for (k = 0; k < M_COUNT; k++) {
				int m = (int)((k + r + s) % M_COUNT);
				double ns = time_pairs(pb, m, pb->o->sizes[s],
						       pb->iters[s][m]);

				if (ns < 0)
					return (int)ns;
				pb->ns[s][m][r] = ns;
			}
		ut_progress_update(prog, r + 1, "pool");
	}
	for (s = 0; s < pb->o->nsizes; s++) {
		pb->over_malloc[s] = round_ratio(pb, s, M_POOL, M_MALLOC);
		pb->raw_over[s] = round_ratio(pb, s, M_RAW, M_POOL);
		for (k = 0; k < M_COUNT; k++)
			pb->med[s][k] = ut_median(pb->ns[s][k], pb->o->rounds);
	}
	return 0;
}

static bool pass_malloc(const struct pool_bench *pb, size_t s)
{
	return bench_target_met(T_POOL_OVER_MALLOC, pb->over_malloc[s], NULL);
}

/* 1 pass, 0 miss, -1 no target at this size. */
static int pass_raw(const struct pool_bench *pb, size_t s)
{
	if (pb->o->sizes[s] < TARGET_RAW_FROM_BYTES)
		return -1;
	return bench_target_met(T_RAW_OVER_POOL, pb->raw_over[s], NULL);
}

static char *ratio_str(double v, char buf[32])
{
	snprintf(buf, 32, v >= 100 ? "%.0fx" : v >= 10 ? "%.1fx" :
		 v >= 0.01 ? "%.2fx" : "%.2gx", v);
	return buf;
}

static void report_text(const struct pool_bench *pb)
{
	static const char *const cols[] = {
		"SIZE", "POOL", "MALLOC", "RAW", "POOL/MALLOC", "RAW/POOL",
		"TARGETS",
	};
	struct libscols_table *tb = ut_table_new(cols, 7, 0x3e);
	size_t s;

	printf("pool: um_host_alloc+um_host_free vs malloc+free vs %s "
	       "(%s backend), median of %u rounds\n", pb->raw.method,
	       bench_backend_name(um_context_backend(pb->ctx)),
	       pb->o->rounds);
	if (!tb)
		return;
	for (s = 0; s < pb->o->nsizes; s++) {
		char sz[UT_SIZE_STR], a[UT_SIZE_STR], b[UT_SIZE_STR],
		     c[UT_SIZE_STR], r1[32], r2[32], t[64];
		int pr = pass_raw(pb, s);

		ratio_str(pb->over_malloc[s], r1);
		ratio_str(pb->raw_over[s], r2);
		snprintf(t, sizeof(t), "%s%s",
			 pass_malloc(pb, s) ? "ok" : "MISS(pool/malloc)",
			 pr < 0 ? "" : pr ? ", ok" : ", MISS(raw/pool)");
		ut_table_rowf(tb, 7, ut_size_str(pb->o->sizes[s], sz),
			      bench_time_str(pb->med[s][M_POOL], a),
			      bench_time_str(pb->med[s][M_MALLOC], b),
			      bench_time_str(pb->med[s][M_RAW], c), r1, r2, t);
	}
	ut_table_print(tb);
	printf("ratios: the median of each round's; at every size:\n");
	bench_target_say(T_POOL_OVER_MALLOC);
	printf("from 1 MiB:\n");
	bench_target_say(T_RAW_OVER_POOL);
	putchar('\n');
}

static void report_json(const struct pool_bench *pb, bool pass)
{
	struct ut_json *j = pb->o->j;
	size_t s;

	ut_json_obj_begin(j, "pool");
	ut_json_str(j, "backend",
		    bench_backend_name(um_context_backend(pb->ctx)));
	ut_json_str(j, "raw_method", pb->raw.method);
	ut_json_u64(j, "rounds", pb->o->rounds);
	ut_json_dbl(j, "target_pool_over_malloc_max",
		    bench_targets[T_POOL_OVER_MALLOC].limit);
	ut_json_dbl(j, "target_raw_over_pool_min",
		    bench_targets[T_RAW_OVER_POOL].limit);
	ut_json_u64(j, "target_raw_from_bytes", TARGET_RAW_FROM_BYTES);
	ut_json_arr_begin(j, "sizes");
	for (s = 0; s < pb->o->nsizes; s++) {
		int pr = pass_raw(pb, s);

		ut_json_obj_begin(j, NULL);
		ut_json_u64(j, "bytes", pb->o->sizes[s]);
		ut_json_dbl(j, "pool_ns", pb->med[s][M_POOL]);
		ut_json_dbl(j, "malloc_ns", pb->med[s][M_MALLOC]);
		ut_json_dbl(j, "raw_ns", pb->med[s][M_RAW]);
		ut_json_dbl(j, "pool_over_malloc", pb->over_malloc[s]);
		ut_json_dbl(j, "raw_over_pool", pb->raw_over[s]);
		ut_json_u64(j, "pool_iters", pb->iters[s][M_POOL]);
		ut_json_u64(j, "malloc_iters", pb->iters[s][M_MALLOC]);
		ut_json_u64(j, "raw_iters", pb->iters[s][M_RAW]);
		ut_json_bool(j, "pass_malloc", pass_malloc(pb, s));
		if (pr < 0)
			ut_json_null(j, "pass_raw");
		else
			ut_json_bool(j, "pass_raw", pr);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
	ut_json_arr_begin(j, "targets");
	for (s = 0; s < pb->o->nsizes; s++) {
		char at[UT_SIZE_STR];

		ut_size_str(pb->o->sizes[s], at);
		bench_target_json(j, T_POOL_OVER_MALLOC, pb->over_malloc[s],
				  at);
		if (pass_raw(pb, s) >= 0)
			bench_target_json(j, T_RAW_OVER_POOL, pb->raw_over[s],
					  at);
	}
	ut_json_arr_end(j);
	ut_json_bool(j, "pass", pass);
	ut_json_obj_end(j);
}

static int open_ctx(struct pool_bench *pb)
{
	uint64_t biggest = 0;
	struct um_config c;
	size_t s;
	int rc;

	for (s = 0; s < pb->o->nsizes; s++)
		if (pb->o->sizes[s] > biggest)
			biggest = pb->o->sizes[s];
	um_config_init(&c);
	c.backend = (uint32_t)pb->o->backend;
	/* One chunk holds the largest block: the pool never grows while
	 * timed, which is how a trainer is meant to size it. */
	c.pool_chunk = (biggest * 2 + (2ull << 20) - 1) & ~((2ull << 20) - 1);
	if (c.pool_chunk < (64ull << 20))
		c.pool_chunk = 64ull << 20;
	c.pool_size = c.pool_chunk;
	c.sim_capacity = 64ull << 20;	/* no device memory is used */
	c.log = bench_log;
	c.log_level = UM_LOG_WARN;
	rc = um_context_create(&c, &pb->ctx);
	if (rc)
		ut_warn("pool: creating a libum context: %s", strerror(-rc));
	return rc;
}

int bench_pool(const struct bench_opts *o)
{
	struct pool_bench *pb = calloc(1, sizeof(*pb));
	struct ut_progress prog;
	bool pass = true;
	size_t s;
	int rc, m;

	if (!pb)
		return -ENOMEM;
	pb->o = o;
	pb->target_ns = o->quick ? 5e4 : 2e5;
	for (s = 0; s < o->nsizes; s++)
		for (m = 0; m < M_COUNT; m++) {
			pb->ns[s][m] = calloc(o->rounds, sizeof(double));
			if (!pb->ns[s][m]) {
				rc = -ENOMEM;
				goto out;
			}
		}
	rc = raw_init(&pb->raw, o->backend);
	if (rc) {
		ut_warn("pool: raw allocation: %s", strerror(-rc));
		goto out;
	}
	rc = open_ctx(pb);
	if (rc)
		goto out;
	if (o->backend == UM_BACKEND_AUTO)
		raw_init(&pb->raw, um_context_backend(pb->ctx));
	ut_progress_init(&prog, o->rounds, !o->quiet);
	rc = calibrate(pb);
	if (!rc)
		rc = measure(pb, &prog);
	ut_progress_end(&prog);
	if (rc) {
		ut_warn("pool: %s", strerror(-rc));
		goto out_ctx;
	}
	for (s = 0; s < o->nsizes; s++)
		if (!pass_malloc(pb, s) || pass_raw(pb, s) == 0)
			pass = false;
	if (o->j)
		report_json(pb, pass);
	else
		report_text(pb);
	rc = pass ? 0 : 1;
out_ctx:
	um_context_destroy(pb->ctx);
out:
	for (s = 0; s < o->nsizes; s++)
		for (m = 0; m < M_COUNT; m++)
			free(pb->ns[s][m]);
	free(pb);
	return rc;
}
