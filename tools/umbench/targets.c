// SPDX-License-Identifier: MIT
/*
 * targets.c - what umbench checks its figures against, each with the
 * reason for its place, and how a figure is reported against one (text
 * and JSON alike: the measured value, the limit and the margin).
 *
 * A target sits where noise cannot flip it: a loaded 2-core machine (two
 * `yes` loops beside it) moves these figures by tens of percent, so each
 * limit stands well clear of what such a machine measures, while still
 * failing the regression it is there to catch, which is a factor off.
 */
#include <math.h>
#include <stdio.h>

#include "bench.h"

const struct bench_target bench_targets[T_COUNT] = {
	[T_POOL_OVER_MALLOC] = {
		"pool_over_malloc", 4.0, true,
		"the pool's alloc+free takes a lock and a size-class lookup "
		"that malloc's thread cache skips: 2.4-3.05x at 256 bytes on "
		"the 2-core development VM, loaded or not, under 1x from "
		"4 KiB on; a pool that lost its fast path (a system call per "
		"call) is 100x and more",
	},
	[T_RAW_OVER_POOL] = {
		"raw_over_pool", 1000.0, false,
		"from 1 MiB, pinning memory anew (mmap+mlock, cudaHostAlloc) "
		"costs 0.5 ms and more, the pool's hit tens of ns: measured "
		"2000-1000000x; under 1000x the pool no longer saves what it "
		"is for",
	},
	[T_MIGRATE_RATIO] = {
		"migrate_over_memcpy", 0.5, false,
		"an eviction and a restore are a copy each on the sim's copy "
		"thread: 1.0-1.7x one memcpy on a quiet 2-core VM, 0.69 once "
		"when loaded (the copy thread waits for a CPU); under 0.5x a "
		"migration copies twice or faults its pages in",
	},
	[T_SUBALLOC_HIT_NS] = {
		"suballoc_hit_ns", 1000.0, true,
		"a cached block is a free-list pop under the lock: 40 ns "
		"measured; 1 us is the cost of a region's alloc+free it "
		"must stay far below",
	},
	[T_SUBALLOC_PACKING] = {
		"suballoc_packing", 1.2, true,
		"live blocks' device bytes over their own, past the first "
		"granule: 1.024 measured; 1.2 fails a sub-allocator that "
		"stopped sharing segments",
	},
};

bool bench_target_met(int id, double measured, double *margin)
{
	const struct bench_target *t = &bench_targets[id];
	double m = t->at_most ? (t->limit - measured) / t->limit :
				(measured - t->limit) / t->limit;

	if (margin)
		*margin = m;
	return !isnan(measured) && m >= 0;
}

void bench_target_json(struct ut_json *j, int id, double measured,
		       const char *at)
{
	const struct bench_target *t = &bench_targets[id];
	double margin;
	bool met = bench_target_met(id, measured, &margin);

	ut_json_obj_begin(j, NULL);
	ut_json_str(j, "target", t->name);
	if (at)
		ut_json_str(j, "at", at);
	else
		ut_json_null(j, "at");
	ut_json_dbl(j, "measured", measured);
	ut_json_str(j, "limit_is", t->at_most ? "max" : "min");
	ut_json_dbl(j, "limit", t->limit);
	ut_json_dbl(j, "margin", margin);
	ut_json_bool(j, "pass", met);
	ut_json_str(j, "reason", t->reason);
	ut_json_obj_end(j);
}

void bench_target_say(int id)
{
	const struct bench_target *t = &bench_targets[id];

	printf("target %s %s %g: %s\n", t->name, t->at_most ? "<=" : ">=",
	       t->limit, t->reason);
}
