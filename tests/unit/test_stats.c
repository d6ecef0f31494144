/* SPDX-License-Identifier: MIT */
/*
 * Description: um_stats_get and um_stats_json. Counters follow known
 * operations exactly (per tier and kind current/peak/total, migrations per
 * direction with device-timed nanoseconds, events by type, pool figures);
 * an older, smaller struct gets only its prefix, a larger one a zeroed
 * tail, a too small one -EINVAL; the JSON text has snprintf semantics and
 * is valid JSON with the same figures (parsed by python3 when present).
 */
#include "harness.h"
#include "helpers.h"

#define A (3 * MiB + 100)	/* device: rounds to 4 MiB */
#define B (1 * MiB)

static int python_ok(void)
{
	return system("python3 -c 'import json' >/dev/null 2>&1") == 0;
}

/* Pipe text into a python3 check; returns its exit status. */
static int pycheck(const char *text, const char *code)
{
	char cmd[2048];
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "python3 -c 'import json,sys\nd=json.load(sys.stdin)\n%s' ", code);
	f = popen(cmd, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return pclose(f);
}

FIXTURE(st) {
	struct um_context *ctx;
	um_region_t a, b;
};

FIXTURE_SETUP(st)
{
	self->ctx = ctx_sim(0, 64 * MiB);
	ASSERT_NONNULL(self->ctx);
	self->a = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, A, "adam\"m\\1");
	self->b = region(self->ctx, UM_KIND_PARAM, 0, B, "w");
	ASSERT_NE(0, self->a);
	ASSERT_NE(0, self->b);
}

FIXTURE_TEARDOWN(st)
{
	EXPECT_EQ(0, um_free(self->ctx, self->a));
	EXPECT_EQ(0, um_free(self->ctx, self->b));
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

TEST_F(st, counters_follow_operations)
{
	struct um_stats s = { .size = sizeof(s) };

	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	EXPECT_EQ(2, s.regions);
	EXPECT_EQ(A, s.kind[UM_KIND_OPTIMIZER_STATE].current);
	EXPECT_EQ(B, s.kind[UM_KIND_PARAM].current);
	EXPECT_EQ(0, s.device[0].current);
	EXPECT_EQ(64 * MiB, s.budget[0]);
	EXPECT_EQ(0, s.migrations);

	/* first touch is a fill, not a migration */
	ASSERT_EQ(0, put_pattern(self->ctx, self->a, A, 1));
	ASSERT_EQ(0, put_pattern(self->ctx, self->b, B, 2));
	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	EXPECT_EQ(4 * MiB + 2 * MiB, s.device[0].current);
	EXPECT_EQ(0, s.migrations);
	EXPECT_EQ(0, s.events[UM_EVENT_MIGRATED]);

	ASSERT_EQ(0, um_evict(self->ctx, self->a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, self->a));
	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	EXPECT_EQ(2 * MiB, s.device[0].current);
	EXPECT_EQ(6 * MiB, s.device[0].peak);
	EXPECT_EQ(6 * MiB, s.device[0].total);
	EXPECT_EQ(A, s.host_total.current);
	EXPECT_EQ(1, s.migrations);
	EXPECT_EQ(1, s.evict_count);
	EXPECT_EQ(A, s.evict_bytes);
	EXPECT_EQ(0, s.restore_count);
	EXPECT_LT(0, s.evict_ns);
	EXPECT_EQ(s.evict_ns, s.migration_ns);
	EXPECT_EQ(1, s.events[UM_EVENT_MIGRATED]);
	EXPECT_EQ(0, s.events[UM_EVENT_EVICTED]);	/* asked, not policy */
	EXPECT_LE(A, s.pool_used);
	EXPECT_LE(s.pool_used, s.pool_bytes);
	EXPECT_EQ(A, s.pool_requested);
	EXPECT_LE(1, s.pool_chunks);

	ASSERT_EQ(0, get_pattern(self->ctx, self->a, A, 1));
	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	EXPECT_EQ(2, s.migrations);
	EXPECT_EQ(1, s.restore_count);
	EXPECT_EQ(A, s.restore_bytes);
	EXPECT_EQ(2 * (uint64_t)A, s.migrated_bytes);
	EXPECT_EQ(0, s.host_total.current);
	EXPECT_EQ(A, s.host_total.peak);
	EXPECT_EQ(A, s.host_total.total);
	EXPECT_EQ(0, s.pool_requested);	/* host copy dropped once back */

	/* policy evictions count as EVICTED too */
	ASSERT_EQ(0, um_budget_set(self->ctx, 0, 2 * MiB));
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	EXPECT_EQ(1, s.events[UM_EVENT_EVICTED]);
	EXPECT_EQ(2 * MiB, s.budget[0]);
	EXPECT_EQ(2 * MiB, s.device[0].current);
}

TEST_F(st, struct_size_versions)
{
	struct {
		struct um_stats s;
		uint64_t newer[4];
	} big;
	struct um_stats s;
	size_t old = offsetof(struct um_stats, budget);

	ASSERT_EQ(0, put_pattern(self->ctx, self->a, A, 1));
	/* an older caller: prefix only, the rest untouched */
	memset(&s, 0xab, sizeof(s));
	s.size = (uint32_t)old;
	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	EXPECT_EQ(old, s.size);
	EXPECT_EQ(2, s.regions);
	EXPECT_EQ(4 * MiB, s.device[0].current);
	EXPECT_EQ(0xababababababababull, s.budget[0]);
	EXPECT_EQ(0xababababababababull, s.migrations);
	/* a newer caller: ours, then zeros */
	memset(&big, 0xcd, sizeof(big));
	big.s.size = sizeof(big);
	ASSERT_EQ(0, um_stats_get(self->ctx, &big.s));
	EXPECT_EQ(sizeof(big), big.s.size);
	EXPECT_EQ(2, big.s.regions);
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, big.newer[i]);
	/* too small to hold even the count */
	s.size = 7;
	EXPECT_EQ(-EINVAL, um_stats_get(self->ctx, &s));
}

TEST_F(st, json_snprintf_semantics)
{
	char small[10], *buf;
	int n, m;

	n = um_stats_json(self->ctx, NULL, 0);
	ASSERT_LT(100, n);
	m = um_stats_json(self->ctx, small, sizeof(small));
	EXPECT_EQ(n, m);
	EXPECT_EQ(9, strlen(small));
	EXPECT_EQ(0, strncmp(small, "{\"version", 9));
	buf = malloc((size_t)n + 1);
	ASSERT_NONNULL(buf);
	memset(buf, 'x', (size_t)n + 1);
	EXPECT_EQ(n, um_stats_json(self->ctx, buf, (size_t)n + 1));
	EXPECT_EQ(n, strlen(buf));
	EXPECT_EQ('}', buf[n - 1]);
	/* exactly n bytes: one short, truncated by one */
	EXPECT_EQ(n, um_stats_json(self->ctx, buf, (size_t)n));
	EXPECT_EQ(n - 1, strlen(buf));
	free(buf);
}

TEST_F(st, json_is_valid_and_matches)
{
	char buf[16384], code[1024];
	struct um_stats s = { .size = sizeof(s) };
	int n;

	if (!python_ok())
		SKIP(return, "python3 is not installed");
	ASSERT_EQ(0, put_pattern(self->ctx, self->a, A, 1));
	ASSERT_EQ(0, um_evict(self->ctx, self->a, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, self->a));
	ASSERT_EQ(0, get_pattern(self->ctx, self->a, A, 1));
	ASSERT_EQ(0, um_acquire(self->ctx, self->b, UM_TIER_GPU(0), NULL));
	n = um_stats_json(self->ctx, buf, sizeof(buf));
	ASSERT_LT(0, n);
	ASSERT_GT((int)sizeof(buf), n);
	ASSERT_EQ(0, um_stats_get(self->ctx, &s));
	snprintf(code, sizeof(code),
		 "assert d[\"regions\"] == 2\n"
		 "assert d[\"backend\"] == \"sim\"\n"
		 "assert d[\"devices\"][0][\"bytes\"][\"current\"] == %llu\n"
		 "assert d[\"devices\"][0][\"budget\"] == %llu\n"
		 "assert d[\"migrations\"][\"count\"] == 2\n"
		 "assert d[\"migrations\"][\"evict_count\"] == 1\n"
		 "assert d[\"kinds\"][\"optimizer_state\"][\"current\"] == %llu\n"
		 "assert d[\"events\"][\"migrated\"] == 2\n"
		 "assert float(d[\"migrations\"][\"gbps\"]) >= 0\n"
		 "names = sorted(r[\"name\"] for r in d[\"live\"])\n"
		 "assert names == [\"adam\\\"m\\\\1\", \"w\"], names\n"
		 "assert [r[\"acquired\"] for r in d[\"live\"] if r[\"name\"] == \"w\"] == [1]\n",
		 (unsigned long long)s.device[0].current,
		 (unsigned long long)s.budget[0], (unsigned long long)A);
	EXPECT_EQ(0, pycheck(buf, code)) TH_LOG("%s", buf);
	ASSERT_EQ(0, um_release(self->ctx, self->b));
}

TEST_HARNESS_MAIN
