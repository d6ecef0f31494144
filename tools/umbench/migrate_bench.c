// SPDX-License-Identifier: MIT
/*
 * migrate_bench.c - umbench migrate: how fast libum moves a region's bytes
 * off the device and back (um_evict to host, um_acquire on the device),
 * against plain memcpy of the same bytes, in the same rounds.
 *
 * libum times each migration on the device queue (fence to fence); that is
 * the figure held against memcpy. The wall time of the whole evict and
 * restore phases, libum's bookkeeping included, is reported beside it.
 * At the end every region's bytes are checked against the pattern written
 * at the start: a benchmark that corrupts data fails.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "um.h"

enum { F_EVICT, F_RESTORE, F_MIGRATE, F_WALL, F_MEMCPY, F_COUNT };

struct migrate_bench {
	const struct bench_opts *o;
	struct um_context *ctx;
	um_region_t *r;
	uint8_t **src, **dst;		/* memcpy baseline, one pair a region */
	double *gbps[F_COUNT];		/* per round */
	double med[F_COUNT];
	bool data_ok;
};

static double rate(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns : 0.0;
}

static uint8_t pattern(unsigned int region, uint64_t off)
{
	return (uint8_t)(region * 131u + (off >> 12) * 7u + off);
}

/* Region i resident on the device, its bytes at *p. */
static int acquire_on_gpu(struct migrate_bench *mb, unsigned int i,
			  uint8_t **p)
{
	int rc = um_acquire(mb->ctx, mb->r[i], UM_TIER_GPU(0), NULL);

	if (!rc)
		rc = um_wait(mb->ctx, mb->r[i]);
	if (!rc)
		rc = um_ptr(mb->ctx, mb->r[i], (void **)p);
	return rc;
}

static int fill_regions(struct migrate_bench *mb)
{
	uint64_t n = mb->o->region_bytes, off;
	unsigned int i;
	int rc = 0;

	for (i = 0; !rc && i < mb->o->regions; i++) {
		uint8_t *p;

		rc = acquire_on_gpu(mb, i, &p);
		if (rc)
			break;
		for (off = 0; off < n; off++)
			p[off] = pattern(i, off);
		rc = um_release(mb->ctx, mb->r[i]);
		if (!rc)
			rc = um_evict(mb->ctx, mb->r[i], UM_TIER_HOST_ANY);
	}
	if (!rc)
		rc = um_wait_all(mb->ctx);
	return rc;
}

static int check_regions(struct migrate_bench *mb)
{
	uint64_t n = mb->o->region_bytes, off;
	unsigned int i;
	int rc = 0;

	mb->data_ok = true;
	for (i = 0; !rc && i < mb->o->regions; i++) {
		uint8_t *p;

		rc = acquire_on_gpu(mb, i, &p);
		if (rc)
			break;
		for (off = 0; off < n && mb->data_ok; off++)
			if (p[off] != pattern(i, off)) {
				ut_warn("migrate: region %u differs at byte "
					"%llu", i, (unsigned long long)off);
				mb->data_ok = false;
			}
		rc = um_release(mb->ctx, mb->r[i]);
	}
	return rc;
}

/* One round: memcpy there and back, then restore all, then evict all. */
static int round_once(struct migrate_bench *mb, unsigned int r)
{
	struct um_stats a = { .size = sizeof(a) }, b = { .size = sizeof(b) };
	uint64_t n = mb->o->region_bytes, t0, t2, cp = 0;
	unsigned int i;
	int rc;

	for (i = 0; i < mb->o->regions; i++) {
		t0 = ut_now_ns();
		memcpy(mb->dst[i], mb->src[i], n);
		memcpy(mb->src[i], mb->dst[i], n);
		cp += ut_now_ns() - t0;
	}
	rc = um_stats_get(mb->ctx, &a);
	if (rc)
		return rc;
	t0 = ut_now_ns();
	for (i = 0; !rc && i < mb->o->regions; i++)
		rc = um_acquire(mb->ctx, mb->r[i], UM_TIER_GPU(0), NULL);
	if (!rc)
		rc = um_wait_all(mb->ctx);
	for (i = 0; !rc && i < mb->o->regions; i++)
		rc = um_release(mb->ctx, mb->r[i]);
	for (i = 0; !rc && i < mb->o->regions; i++)
		rc = um_evict(mb->ctx, mb->r[i], UM_TIER_HOST_ANY);
	if (!rc)
		rc = um_wait_all(mb->ctx);
	t2 = ut_now_ns();
	if (!rc)
		rc = um_stats_get(mb->ctx, &b);
	if (rc)
		return rc;
	if (b.evict_bytes - a.evict_bytes != n * mb->o->regions ||
	    b.restore_bytes - a.restore_bytes != n * mb->o->regions) {
		char ev[UT_SIZE_STR], re[UT_SIZE_STR], want[UT_SIZE_STR];

		ut_warn("migrate: libum moved %s out and %s back, expected %s each way",
			ut_size_str(b.evict_bytes - a.evict_bytes, ev),
			ut_size_str(b.restore_bytes - a.restore_bytes, re),
			ut_size_str(n * mb->o->regions, want));
		return -EPROTO;
	}
	mb->gbps[F_EVICT][r] = rate(b.evict_bytes - a.evict_bytes,
				    b.evict_ns - a.evict_ns);
	mb->gbps[F_RESTORE][r] = rate(b.restore_bytes - a.restore_bytes,
				      b.restore_ns - a.restore_ns);
	mb->gbps[F_MIGRATE][r] = rate(2 * n * mb->o->regions,
				      (b.evict_ns - a.evict_ns) +
				      (b.restore_ns - a.restore_ns));
	mb->gbps[F_WALL][r] = rate(2 * n * mb->o->regions, t2 - t0);
	mb->gbps[F_MEMCPY][r] = rate(2 * n * mb->o->regions, cp);
	return 0;
}

static void report_text(const struct migrate_bench *mb, bool pass)
{
	static const char *const cols[] = { "WHAT", "GB/s", "VS MEMCPY",
					    "TARGET" };
	static const char *const what[F_COUNT] = {
		"evict (device-timed)", "restore (device-timed)",
		"evict+restore (device-timed)", "evict+restore (wall)",
		"memcpy, same bytes",
	};
	struct libscols_table *tb = ut_table_new(cols, 4, 0x6);
	char sz[UT_SIZE_STR], g[32], v[32], t[48];
	int f;

	printf("migrate: %u regions x %s, restore + evict through libum "
	       "(%s backend) vs memcpy, median of %u rounds\n",
	       mb->o->regions, ut_size_str(mb->o->region_bytes, sz),
	       bench_backend_name(um_context_backend(mb->ctx)),
	       mb->o->rounds);
	if (!tb)
		return;
	for (f = 0; f < F_COUNT; f++) {
		snprintf(g, sizeof(g), "%.2f", mb->med[f]);
		snprintf(v, sizeof(v), "%.2fx", mb->med[f] /
			 mb->med[F_MEMCPY]);
		t[0] = '\0';
		if (f == F_MIGRATE)
			snprintf(t, sizeof(t), ">= %gx %s",
				 bench_targets[T_MIGRATE_RATIO].limit,
				 pass ? "ok" : "MISS");
		ut_table_rowf(tb, 4, what[f], g, f == F_MEMCPY ? "" : v, t);
	}
	ut_table_print(tb);
	printf("data after %u round trips: %s\n", mb->o->rounds + 1,
	       mb->data_ok ? "intact" : "CORRUPTED");
	bench_target_say(T_MIGRATE_RATIO);
	putchar('\n');
}

static void report_json(const struct migrate_bench *mb, bool pass)
{
	struct ut_json *j = mb->o->j;

	ut_json_obj_begin(j, "migrate");
	ut_json_str(j, "backend",
		    bench_backend_name(um_context_backend(mb->ctx)));
	ut_json_u64(j, "region_bytes", mb->o->region_bytes);
	ut_json_u64(j, "regions", mb->o->regions);
	ut_json_u64(j, "rounds", mb->o->rounds);
	ut_json_dbl(j, "evict_gbps", mb->med[F_EVICT]);
	ut_json_dbl(j, "restore_gbps", mb->med[F_RESTORE]);
	ut_json_dbl(j, "migrate_gbps", mb->med[F_MIGRATE]);
	ut_json_dbl(j, "migrate_wall_gbps", mb->med[F_WALL]);
	ut_json_dbl(j, "memcpy_gbps", mb->med[F_MEMCPY]);
	ut_json_dbl(j, "ratio", mb->med[F_MIGRATE] / mb->med[F_MEMCPY]);
	ut_json_dbl(j, "wall_ratio", mb->med[F_WALL] / mb->med[F_MEMCPY]);
	ut_json_dbl(j, "target_ratio_min", bench_targets[T_MIGRATE_RATIO].limit);
	ut_json_bool(j, "data_ok", mb->data_ok);
	ut_json_arr_begin(j, "targets");
	bench_target_json(j, T_MIGRATE_RATIO,
			  mb->med[F_MIGRATE] / mb->med[F_MEMCPY], NULL);
	ut_json_arr_end(j);
	ut_json_bool(j, "pass", pass);
	ut_json_obj_end(j);
}

static int setup(struct migrate_bench *mb)
{
	uint64_t total = mb->o->region_bytes * mb->o->regions;
	struct um_config c;
	unsigned int i;
	int rc;

	um_config_init(&c);
	c.backend = (uint32_t)mb->o->backend;
	/* Room for every region: only the benchmark moves bytes. */
	c.device_budget = total + (64ull << 20);
	c.sim_capacity = c.device_budget;
	c.pool_size = total + (64ull << 20);
	c.log = bench_log;
	c.log_level = UM_LOG_WARN;
	rc = um_context_create(&c, &mb->ctx);
	if (rc) {
		ut_warn("migrate: creating a libum context: %s", strerror(-rc));
		return rc;
	}
	for (i = 0; i < mb->o->regions; i++) {
		char name[32];
		struct um_region_desc d = {
			.size = sizeof(d), .kind = UM_KIND_OPTIMIZER_STATE,
			.bytes = mb->o->region_bytes, .name = name,
		};

		snprintf(name, sizeof(name), "umbench.%u", i);
		rc = um_alloc(mb->ctx, &d, &mb->r[i]);
		if (rc) {
			char sz[UT_SIZE_STR];

			ut_warn("migrate: um_alloc of %s: %s",
				ut_size_str(d.bytes, sz), strerror(-rc));
			return rc;
		}
	}
	/* As many bytes as libum moves, so caches favour neither side. */
	mb->src = calloc(mb->o->regions, sizeof(*mb->src));
	mb->dst = calloc(mb->o->regions, sizeof(*mb->dst));
	if (!mb->src || !mb->dst)
		return -ENOMEM;
	for (i = 0; i < mb->o->regions; i++) {
		mb->src[i] = malloc(mb->o->region_bytes);
		mb->dst[i] = malloc(mb->o->region_bytes);
		if (!mb->src[i] || !mb->dst[i])
			return -ENOMEM;
		/* Fault the pages in, as libum's are after a round. */
		memset(mb->src[i], 0x5a, mb->o->region_bytes);
		memset(mb->dst[i], 0xa5, mb->o->region_bytes);
	}
	rc = fill_regions(mb);
	if (rc)
		ut_warn("migrate: writing the regions: %s", strerror(-rc));
	return rc;
}

int bench_migrate(const struct bench_opts *o)
{
	struct migrate_bench mb = { .o = o };
	struct ut_progress prog;
	unsigned int r, i;
	bool pass;
	int rc = -ENOMEM, f;

	mb.r = calloc(o->regions, sizeof(*mb.r));
	if (!mb.r)
		goto out;
	for (f = 0; f < F_COUNT; f++) {
		mb.gbps[f] = calloc(o->rounds, sizeof(double));
		if (!mb.gbps[f])
			goto out;
	}
	rc = setup(&mb);
	ut_progress_init(&prog, o->rounds + 1, !o->quiet);
	/* Round 0 is a warm-up: first faults, pool growth. */
	if (!rc)
		rc = round_once(&mb, 0);
	for (r = 0; !rc && r < o->rounds; r++) {
		rc = round_once(&mb, r);
		ut_progress_update(&prog, r + 2, "migrate");
	}
	ut_progress_end(&prog);
	if (!rc)
		rc = check_regions(&mb);
	if (rc) {
		ut_warn("migrate: %s", strerror(-rc));
		goto out;
	}
	for (f = 0; f < F_COUNT; f++)
		mb.med[f] = ut_median(mb.gbps[f], o->rounds);
	pass = mb.data_ok &&
	       bench_target_met(T_MIGRATE_RATIO,
				mb.med[F_MIGRATE] / mb.med[F_MEMCPY], NULL);
	if (o->j)
		report_json(&mb, pass);
	else
		report_text(&mb, pass);
	rc = pass ? 0 : 1;
out:
	if (mb.ctx) {
		for (i = 0; mb.r && i < o->regions; i++)
			if (mb.r[i])
				um_free(mb.ctx, mb.r[i]);
		um_context_destroy(mb.ctx);
	}
	for (i = 0; i < o->regions; i++) {
		if (mb.src)
			free(mb.src[i]);
		if (mb.dst)
			free(mb.dst[i]);
	}
	free(mb.src);
	free(mb.dst);
	for (f = 0; f < F_COUNT; f++)
		free(mb.gbps[f]);
	free(mb.r);
	return rc;
}
