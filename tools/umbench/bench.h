/* SPDX-License-Identifier: MIT */
/*
 * bench.h - umbench's sections (pool, migrate) and what they share.
 *
 * A section measures, then reports through the same call for text and JSON:
 * text goes through libsmartcols tables, JSON through the ut_json writer
 * (one document for the whole run, each section an object in it).
 */
#ifndef UMBENCH_BENCH_H
#define UMBENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ut.h"

#define BENCH_MAX_SIZES 16

struct umbench_gpu;

/* Targets: what umbench checks its figures against (targets.c). */
enum bench_target_id {
	T_POOL_OVER_MALLOC,	/* pool alloc+free over malloc+free, at most */
	T_RAW_OVER_POOL,	/* raw pinning over the pool, at least */
	T_MIGRATE_RATIO,	/* evict+restore over memcpy, at least */
	T_SUBALLOC_HIT_NS,	/* a cached block's alloc, at most */
	T_SUBALLOC_PACKING,	/* device bytes over the blocks', at most */
	T_COUNT
};
#define TARGET_RAW_FROM_BYTES	(1ull << 20)

struct bench_target {
	const char *name;
	double limit;
	bool at_most;		/* else at least */
	const char *reason;	/* why the limit sits where it does */
};

extern const struct bench_target bench_targets[T_COUNT];
/* measured meets target id; *margin (may be NULL): how far inside the
 * limit, as a fraction of it (negative: missed). */
bool bench_target_met(int id, double measured, double *margin);
/* One object of a "targets" array: target, at (NULL: null), measured,
 * limit_is, limit, margin, pass, reason. */
void bench_target_json(struct ut_json *j, int id, double measured,
		       const char *at);
/* "target NAME <= LIMIT: REASON" on stdout. */
void bench_target_say(int id);

struct bench_opts {
	bool json, quick, quiet;
	int backend;			/* enum um_backend_id */
	unsigned int rounds;
	size_t nsizes;
	uint64_t sizes[BENCH_MAX_SIZES];
	uint64_t region_bytes;		/* migrate: bytes per region */
	unsigned int regions;		/* migrate: regions */
	unsigned int scale_max;		/* scale: largest count; 0 all */
	struct ut_json *j;		/* non-NULL with --json */
};

/* Each returns 0 all targets met, 1 a target missed, -errno on failure
 * (after saying why on stderr). */
int bench_pool(const struct bench_opts *o);
int bench_migrate(const struct bench_opts *o);
int bench_scale(const struct bench_opts *o);
int bench_suballoc(const struct bench_opts *o);

/* Raw pinned host memory as the backend would obtain it, without the pool:
 * sim mmap+mlock (mmap+MAP_POPULATE where mlock is refused), cuda
 * cudaHostAlloc (through umbench-gpu.so; mmap+mlock when it is missing). */
struct raw_pinned {
	const char *method;		/* e.g. "mmap+mlock+munmap" */
	int backend;
	const struct umbench_gpu *gpu;	/* cuda: cudaHostAlloc's */
	bool populate;			/* mlock refused: populate instead */
};

int raw_init(struct raw_pinned *rp, int backend);
int raw_alloc(struct raw_pinned *rp, size_t len, void **p);
void raw_free(struct raw_pinned *rp, void *p, size_t len);

/* "45 ns", "3.1 us", "12.4 ms". */
char *bench_time_str(double ns, char buf[UT_SIZE_STR]);
const char *bench_backend_name(int id);
/* libum's messages at warning level or worse, on stderr. */
void bench_log(void *arg, int level, const char *msg);

#endif /* UMBENCH_BENCH_H */
