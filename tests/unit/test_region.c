/* SPDX-License-Identifier: MIT */
/*
 * Description: a region's life on the sim backend: alloc, a stable pointer
 * across evictions and restores, zero fill on first touch, um_lookup of
 * any interior address, um_region_info (resolved backing, residency,
 * acquire count, copied name), chunked transfers of odd sizes, moves to a
 * host node while an eviction is in flight, and free.
 */
#include <pthread.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

FIXTURE(reg) {
	struct um_context *ctx;
};

FIXTURE_SETUP(reg)
{
	logcap_reset();
	self->ctx = ctx_sim(0, 256 * MiB);
	ASSERT_NONNULL(self->ctx);
}

FIXTURE_TEARDOWN(reg)
{
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

TEST_F(reg, alloc_ptr_free)
{
	um_region_t r = region(self->ctx, UM_KIND_PARAM, 0, 1 * MiB, "w");
	void *p = NULL;

	ASSERT_NE(0, r);
	ASSERT_EQ(0, um_ptr(self->ctx, r, &p));
	ASSERT_NONNULL(p);
	ASSERT_EQ(UM_TIER_NONE, residency(self->ctx, r));
	ASSERT_EQ(0, um_free(self->ctx, r));
	ASSERT_EQ(-ENOENT, um_ptr(self->ctx, r, &p));
}

TEST_F(reg, zero_on_first_touch)
{
	um_region_t r = region(self->ctx, UM_KIND_GENERIC, 0, 3 * MiB + 5, "z");
	unsigned char *p;

	ASSERT_NE(0, r);
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_wait(self->ctx, r));
	ASSERT_EQ(0, um_ptr(self->ctx, r, (void **)&p));
	for (uint64_t i = 0; i < 3 * MiB + 5; i += 4093)
		ASSERT_EQ(0, p[i]);
	ASSERT_EQ(0, p[3 * MiB + 4]);
	ASSERT_TRUE(on_gpu(self->ctx, r));
	ASSERT_EQ(0, um_release(self->ctx, r));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(reg, pointer_stable_and_bytes_kept)
{
	const uint64_t n = 5 * MiB + 123;
	um_region_t r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, n, "m");
	void *p0, *p1;

	ASSERT_NE(0, r);
	ASSERT_EQ(0, um_ptr(self->ctx, r, &p0));
	ASSERT_EQ(0, put_pattern(self->ctx, r, n, 42));
	for (int i = 0; i < 5; i++) {
		ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, um_wait(self->ctx, r));
		ASSERT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
		ASSERT_EQ(0, get_pattern(self->ctx, r, n, 42));
		ASSERT_EQ(0, um_ptr(self->ctx, r, &p1));
		ASSERT_EQ(p0, p1);
	}
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(reg, small_chunks_odd_sizes)
{
	struct um_config cfg;
	struct um_context *ctx;
	static const uint64_t sizes[] = { 1, 63, 4096, 65537, 1 * MiB + 1,
					  3 * MiB + 4095 };

	cfg_sim(&cfg, 0, 64 * MiB);
	cfg.chunk_bytes = 64 * KiB;	/* many pieces per migration */
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		um_region_t r = region(ctx, UM_KIND_GRAD, 0, sizes[i], "odd");

		ASSERT_NE(0, r);
		ASSERT_EQ(0, put_pattern(ctx, r, sizes[i], i + 7));
		ASSERT_EQ(0, um_evict(ctx, r, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, um_wait(ctx, r));
		ASSERT_EQ(0, get_pattern(ctx, r, sizes[i], i + 7))
			TH_LOG("size %llu", (unsigned long long)sizes[i]);
		ASSERT_EQ(0, um_free(ctx, r));
	}
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_F(reg, lookup_interior_and_edges)
{
	um_region_t a = region(self->ctx, UM_KIND_PARAM, 0, 10000, "a");
	um_region_t b = region(self->ctx, UM_KIND_PARAM, 0, 20000, "b");
	um_region_t got = 0;
	char *pa, *pb, local;

	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, um_ptr(self->ctx, a, (void **)&pa));
	ASSERT_EQ(0, um_ptr(self->ctx, b, (void **)&pb));
	ASSERT_EQ(0, um_lookup(self->ctx, pa, &got));
	ASSERT_EQ(a, got);
	ASSERT_EQ(0, um_lookup(self->ctx, pa + 9999, &got));
	ASSERT_EQ(a, got);
	ASSERT_EQ(0, um_lookup(self->ctx, pb + 12345, &got));
	ASSERT_EQ(b, got);
	/* one past the end is not the region (it may be padding) */
	got = 0;
	EXPECT_EQ(-ENOENT, um_lookup(self->ctx, pa + 10000, &got));
	EXPECT_EQ(0, got);
	EXPECT_EQ(-ENOENT, um_lookup(self->ctx, &local, &got));
	ASSERT_EQ(0, um_free(self->ctx, a));
	EXPECT_EQ(-ENOENT, um_lookup(self->ctx, pa, &got));
	ASSERT_EQ(0, um_lookup(self->ctx, pb, &got));
	ASSERT_EQ(b, got);
	ASSERT_EQ(0, um_free(self->ctx, b));
}

TEST_F(reg, many_regions_lookup)
{
	enum { N = 300 };
	um_region_t r[N];
	char *p[N];

	for (int i = 0; i < N; i++) {
		r[i] = region(self->ctx, i % UM_KIND_COUNT, i, 4096 * (1 + i % 7),
			      NULL);
		ASSERT_NE(0, r[i]);
		ASSERT_EQ(0, um_ptr(self->ctx, r[i], (void **)&p[i]));
	}
	for (int i = 0; i < N; i += 2)
		ASSERT_EQ(0, um_free(self->ctx, r[i]));
	for (int i = 0; i < N; i++) {
		um_region_t got = 0;
		int ret = um_lookup(self->ctx, p[i] + 100, &got);

		if (i % 2 == 0) {
			ASSERT_EQ(-ENOENT, ret);
		} else {
			ASSERT_EQ(0, ret);
			ASSERT_EQ(r[i], got);
		}
	}
	for (int i = 1; i < N; i += 2)
		ASSERT_EQ(0, um_free(self->ctx, r[i]));
}

/*
 * Thousands of regions: past the first few hundred their objects come
 * from the context's chunks (region_slab.c), and a freed one is reused
 * zeroed, whatever its last life left in it (a victim node linked, a
 * residency, a name).
 */
TEST_F(reg, thousands_of_regions_reuse_their_objects)
{
	enum { N = 2000 };
	static um_region_t r[N + N / 2];
	struct um_region_info info = { .size = sizeof(info) };
	char name[16];

	for (int i = 0; i < N + N / 2; i++) {
		int k = i < N ? i : 2 * (i - N);	/* the freed ones' places */

		if (i == N)
			for (int j = 0; j < N; j += 2)
				ASSERT_EQ(0, um_free(self->ctx, r[j]));
		snprintf(name, sizeof(name), "r%d", i);
		r[k] = region(self->ctx, i % UM_KIND_COUNT, i, 4096, name);
		ASSERT_NE(0, r[k]) TH_LOG("region %d", i);
		if (i % 7 == 0) {
			/* on the device, then a victim there */
			ASSERT_EQ(0, um_acquire(self->ctx, r[k], UM_TIER_GPU(0),
						NULL));
			ASSERT_EQ(0, um_release(self->ctx, r[k]));
		}
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	for (int k = 0; k < N; k++) {
		int i = k % 2 ? k : N + k / 2;	/* who holds place k now */

		snprintf(name, sizeof(name), "r%d", i);
		ASSERT_EQ(0, um_region_info(self->ctx, r[k], &info));
		ASSERT_STREQ(name, info.name);
		ASSERT_EQ((uint32_t)(i % UM_KIND_COUNT), info.kind);
		ASSERT_EQ(i, info.priority);
		ASSERT_EQ(0u, info.acquired);
		if (i % 7)
			ASSERT_EQ(UM_TIER_NONE, info.residency)
				TH_LOG("region %d", i);
	}
	for (int k = 0; k < N; k++)
		ASSERT_EQ(0, um_free(self->ctx, r[k]));
}

/*
 * Past 16384 regions the handles' slot table and the range map's table
 * are mapped on huge pages (um__table_alloc), each move a copy into a new
 * table: every handle, every pointer and every freed slot's reuse must
 * come through the moves.
 */
TEST_F(reg, tens_of_thousands_of_regions_through_the_table_moves)
{
	enum { N = 20000 };
	static um_region_t r[N];
	static char *p[N];
	struct um_region_info info = { .size = sizeof(info) };
	um_region_t got;

	for (int i = 0; i < N; i++) {
		r[i] = region(self->ctx, UM_KIND_ACTIVATION, i, 4096, NULL);
		ASSERT_NE(0, r[i]) TH_LOG("region %d", i);
		ASSERT_EQ(0, um_ptr(self->ctx, r[i], (void **)&p[i]));
		if (i == N / 2)	/* a freed slot reused across a move */
			for (int j = 0; j < N / 2; j += 3) {
				ASSERT_EQ(0, um_free(self->ctx, r[j]));
				r[j] = region(self->ctx, UM_KIND_ACTIVATION, j,
					      4096, NULL);
				ASSERT_NE(0, r[j]);
				ASSERT_EQ(0, um_ptr(self->ctx, r[j],
						    (void **)&p[j]));
			}
	}
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(0, um_region_info(self->ctx, r[i], &info));
		ASSERT_EQ(i, info.priority);
		ASSERT_EQ(0, um_lookup(self->ctx, p[i] + 4095, &got));
		ASSERT_EQ(r[i], got) TH_LOG("region %d", i);
	}
	for (int i = 0; i < N; i += 2)
		ASSERT_EQ(0, um_free(self->ctx, r[i]));
	for (int i = 0; i < N; i++) {
		int want = i % 2 ? 0 : -ENOENT;

		EXPECT_EQ(want, um_region_info(self->ctx, r[i], &info));
		EXPECT_EQ(want, um_lookup(self->ctx, p[i], &got));
	}
	for (int i = 1; i < N; i += 2)
		ASSERT_EQ(0, um_free(self->ctx, r[i]));
}

TEST_F(reg, info_fields_and_name_copy)
{
	char name[80];
	struct um_region_info i = { .size = sizeof(i) };
	um_region_t r;

	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memcpy(name, "adam.m", 6);
	r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, -3, 12345, name);
	ASSERT_NE(0, r);
	memset(name, 'Q', 6);	/* the region keeps its own copy */
	ASSERT_EQ(0, um_region_info(self->ctx, r, &i));
	EXPECT_EQ(sizeof(i), i.size);
	EXPECT_EQ(UM_KIND_OPTIMIZER_STATE, i.kind);
	EXPECT_EQ(-3, i.priority);
	EXPECT_EQ(UM_BACKING_TIERED, i.backing);	/* DEFAULT resolved */
	EXPECT_EQ(12345, i.bytes);
	EXPECT_EQ(0, i.acquired);
	EXPECT_EQ(0, strncmp(i.name, "adam.mxxx", 9));
	EXPECT_EQ(63, strlen(i.name));			/* truncated */

	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_region_info(self->ctx, r, &i));
	EXPECT_EQ(2, i.acquired);
	EXPECT_EQ(UM_TIER_GPU(0), i.residency);
	ASSERT_EQ(0, um_release(self->ctx, r));
	ASSERT_EQ(0, um_release(self->ctx, r));
	ASSERT_EQ(-EPERM, um_release(self->ctx, r));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(reg, managed_resolves_to_tiered_on_sim)
{
	struct um_region_desc d = {
		.size = sizeof(d), .kind = UM_KIND_PARAM,
		.backing = UM_BACKING_MANAGED, .bytes = 8192, .name = "mg",
	};
	struct um_region_info i = { .size = sizeof(i) };
	um_region_t r1, r2;
	int n = 0;

	ASSERT_EQ(0, um_alloc(self->ctx, &d, &r1));
	ASSERT_EQ(0, um_alloc(self->ctx, &d, &r2));
	ASSERT_EQ(0, um_region_info(self->ctx, r1, &i));
	EXPECT_EQ(UM_BACKING_TIERED, i.backing);
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "no managed memory", NULL));
	/* one line per context, not per region */
	for (const char *t = g_log.text; (t = strstr(t, "no managed memory"));
	     t++)
		n++;
	EXPECT_EQ(1, n);
	ASSERT_EQ(0, um_free(self->ctx, r1));
	ASSERT_EQ(0, um_free(self->ctx, r2));
}

TEST_F(reg, acquire_on_host_then_device)
{
	const uint64_t n = 2 * MiB;
	um_region_t r = region(self->ctx, UM_KIND_PARAM, 0, n, "h");

	ASSERT_NE(0, r);
	/* first touch on the host: zeroed host copy, nothing on the device */
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_HOST_ANY, NULL));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
	EXPECT_EQ(0, dev_current(self->ctx));
	/* acquired on another tier: busy */
	EXPECT_EQ(-EBUSY, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(self->ctx, r));
	ASSERT_EQ(0, put_pattern(self->ctx, r, n, 9));
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_HOST_ANY, NULL));
	EXPECT_EQ(UM_TIER_HOST, UM_TIER_TYPE(residency(self->ctx, r)));
	EXPECT_EQ(0, um_region_info(self->ctx, r,
			&(struct um_region_info){ .size = 64 }));
	ASSERT_EQ(0, um_release(self->ctx, r));
	ASSERT_EQ(0, get_pattern(self->ctx, r, n, 9));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

TEST_F(reg, reacquire_during_eviction)
{
	const uint64_t n = 8 * MiB;
	um_region_t r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, n, "re");

	ASSERT_NE(0, r);
	for (int i = 0; i < 20; i++) {
		ASSERT_EQ(0, put_pattern(self->ctx, r, n, (uint64_t)i));
		/* no wait: the acquire lands while the copy may be in flight */
		ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
		ASSERT_EQ(0, get_pattern(self->ctx, r, n, (uint64_t)i));
	}
	ASSERT_EQ(0, um_wait_all(self->ctx));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

static void *let_go(void *arg)
{
	usleep(100 * 1000);
	um__sim_hold(arg, false);
	return NULL;
}

/*
 * An acquire that supersedes an eviction in flight must not let the caller
 * write while the eviction still reads the device bytes (a race TSan sees):
 * on sim, where the caller's thread is its stream, it returns only after.
 */
TEST_F(reg, acquire_waits_for_superseded_eviction)
{
	const uint64_t n = 4 * MiB;
	um_region_t r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, n, "s");
	struct um_region_info i = { .size = sizeof(i) };
	pthread_t t;
	void *p;

	ASSERT_EQ(0, put_pattern(self->ctx, r, n, 3));
	ASSERT_EQ(0, um__sim_hold(&self->ctx->be, true));
	ASSERT_EQ(0, um_evict(self->ctx, r, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, pthread_create(&t, NULL, let_go, &self->ctx->be));
	ASSERT_EQ(0, um_acquire(self->ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_region_info(self->ctx, r, &i));
	EXPECT_EQ(0, i.pending);
	EXPECT_EQ(UM_TIER_GPU(0), i.residency);
	ASSERT_EQ(0, um_ptr(self->ctx, r, &p));
	EXPECT_EQ(-1, pattern_check(p, n, 3));
	pattern_fill(p, n, 4);
	ASSERT_EQ(0, um_release(self->ctx, r));
	pthread_join(t, NULL);
	EXPECT_EQ(0, get_pattern(self->ctx, r, n, 4));
	ASSERT_EQ(0, um_free(self->ctx, r));
}

/*
 * A sim context whose evictions to UM_TIER_HOST_ANY stay on that tier (no
 * home node), so that a named node is another tier, even on one node; and
 * one region of it.
 */
FIXTURE(nodes) {
	struct um_context *ctx;
	um_region_t r;
	uint64_t n;
	pthread_t let_go;
};

FIXTURE_SETUP(nodes)
{
	logcap_reset();
	setenv("LIBUM_HOME_NODE", "any", 1);
	self->ctx = ctx_sim(0, 64 * MiB);
	unsetenv("LIBUM_HOME_NODE");
	ASSERT_NONNULL(self->ctx);
	self->n = 4 * MiB;
	self->r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, self->n,
			 "node");
	ASSERT_NE(0, self->r);
}

FIXTURE_TEARDOWN(nodes)
{
	EXPECT_EQ(0, um_free(self->ctx, self->r));
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

/*
 * Write seed's pattern into the region and evict it to the host with the
 * sim's queues held: the eviction stays in flight (pending, the region
 * already on the host tier) until self->let_go lets go, 100 ms later; with
 * fail (an errno), its copy then fails.
 */
static int evict_held(FIXTURE_DATA(nodes) *self, uint64_t seed, int fail)
{
	struct um_context *ctx = self->ctx;
	struct um_region_info i = { .size = sizeof(i) };

	if (put_pattern(ctx, self->r, self->n, seed) ||
	    um__sim_hold(&ctx->be, true))
		return -1;
	if (fail && um__sim_fail_next(&ctx->be, fail, 1))
		return -1;
	if (um_evict(ctx, self->r, UM_TIER_HOST_ANY) ||
	    um_region_info(ctx, self->r, &i) || i.pending != 1 ||
	    i.residency != UM_TIER_HOST_ANY) {
		um__sim_hold(&ctx->be, false);
		return -1;
	}
	return pthread_create(&self->let_go, NULL, let_go, &ctx->be) ? -1 : 0;
}

/*
 * Moving a region to a host node while its eviction from the device is in
 * flight waits for the eviction, then moves, rather than fail with
 * -EOPNOTSUPP, which um_evict(3) does not list (tests/soak/stress races it).
 * Evicting it again to any node still returns at once.
 */
TEST_F(nodes, evict_to_node_waits_for_eviction_in_flight)
{
	struct um_region_info i = { .size = sizeof(i) };

	ASSERT_EQ(0, evict_held(self, 5, 0));
	EXPECT_EQ(0, um_evict(self->ctx, self->r, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_region_info(self->ctx, self->r, &i));
	EXPECT_EQ(1, i.pending);
	EXPECT_EQ(0, um_evict(self->ctx, self->r, UM_TIER_HOST_NODE(0)));
	pthread_join(self->let_go, NULL);
	ASSERT_EQ(0, um_region_info(self->ctx, self->r, &i));
	EXPECT_EQ(0, i.pending);
	EXPECT_EQ(UM_TIER_HOST_NODE(0), i.residency);
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, self->n, 5));
}

/* The same for um_acquire on a host node: the acquire waits, then moves. */
TEST_F(nodes, acquire_on_node_waits_for_eviction_in_flight)
{
	struct um_region_info i = { .size = sizeof(i) };

	ASSERT_EQ(0, evict_held(self, 6, 0));
	EXPECT_EQ(0, um_acquire(self->ctx, self->r, UM_TIER_HOST_NODE(0), NULL));
	pthread_join(self->let_go, NULL);
	ASSERT_EQ(0, um_region_info(self->ctx, self->r, &i));
	EXPECT_EQ(0, i.pending);
	EXPECT_EQ(1, i.acquired);
	EXPECT_EQ(UM_TIER_HOST_NODE(0), i.residency);
	ASSERT_EQ(0, um_release(self->ctx, self->r));
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, self->n, 6));
}

/*
 * The eviction such a move waits for fails: the move returns its error
 * (once: um_wait does not report it again) and the bytes stay on the
 * device, whole.
 */
TEST_F(nodes, evict_to_node_reports_failed_eviction_in_flight)
{
	ASSERT_EQ(0, evict_held(self, 7, -EIO));
	EXPECT_EQ(-EIO, um_evict(self->ctx, self->r, UM_TIER_HOST_NODE(0)));
	pthread_join(self->let_go, NULL);
	EXPECT_EQ(UM_TIER_GPU(0), residency(self->ctx, self->r));
	EXPECT_EQ(0, um_wait(self->ctx, self->r));
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, self->n, 7));
}

TEST_HARNESS_MAIN
