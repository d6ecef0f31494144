/* SPDX-License-Identifier: MIT */
/*
 * Description: every public function given bad input: NULL and foreign or
 * destroyed context pointers, handle 0, stale and foreign handles, double
 * free, bad enums and flags, wrong struct sizes, zero and absurd sizes,
 * acquire after free, release without acquire, evict or free of an
 * acquired region. Each call must give its documented errno, and a region
 * holding a pattern must come through all of it byte for byte. Programming
 * mistakes (a zeroed um_config, a struct without .size, bytes 0, a release
 * without acquire, a double free) are named in an ERR line.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

#define N (1 * MiB + 17)

FIXTURE(bad) {
	struct um_context *ctx;
	um_region_t r;		/* holds pattern 77 throughout */
};

FIXTURE_SETUP(bad)
{
	logcap_reset();
	self->ctx = ctx_sim(16 * MiB, 64 * MiB);
	ASSERT_NONNULL(self->ctx);
	self->r = region(self->ctx, UM_KIND_OPTIMIZER_STATE, 0, N, "victim");
	ASSERT_NE(0, self->r);
	ASSERT_EQ(0, put_pattern(self->ctx, self->r, N, 77));
}

FIXTURE_TEARDOWN(bad)
{
	/* whatever happened, the bytes are intact */
	EXPECT_EQ(0, get_pattern(self->ctx, self->r, N, 77));
	EXPECT_EQ(0, um_free(self->ctx, self->r));
	EXPECT_EQ(0, um_context_destroy(self->ctx));
}

TEST_F(bad, null_context)
{
	struct um_region_desc d = { .size = sizeof(d), .bytes = 1 };
	struct um_region_info i = { .size = sizeof(i) };
	struct um_stats st = { .size = sizeof(st) };
	um_region_t h;
	uint64_t b;
	void *p;
	char buf[8];

	EXPECT_EQ(-EINVAL, um_context_create(NULL, NULL));
	EXPECT_EQ(-EINVAL, um_context_destroy(NULL));
	EXPECT_EQ(-EINVAL, um_context_backend(NULL));
	EXPECT_EQ(-EINVAL, um_alloc(NULL, &d, &h));
	EXPECT_EQ(-EINVAL, um_free(NULL, self->r));
	EXPECT_EQ(-EINVAL, um_ptr(NULL, self->r, &p));
	EXPECT_EQ(-EINVAL, um_lookup(NULL, &p, &h));
	EXPECT_EQ(-EINVAL, um_acquire(NULL, self->r, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-EINVAL, um_release(NULL, self->r));
	EXPECT_EQ(-EINVAL, um_evict(NULL, self->r, UM_TIER_HOST_ANY));
	EXPECT_EQ(-EINVAL, um_wait(NULL, self->r));
	EXPECT_EQ(-EINVAL, um_wait_all(NULL));
	EXPECT_EQ(-EINVAL, um_advise(NULL, self->r, 1, UM_TIER_GPU(0)));
	EXPECT_EQ(-EINVAL, um_region_info(NULL, self->r, &i));
	EXPECT_EQ(-EINVAL, um_budget_set(NULL, 0, 1));
	EXPECT_EQ(-EINVAL, um_budget_get(NULL, 0, &b));
	EXPECT_EQ(-EINVAL, um_shed(NULL, UM_TIER_GPU(0), 1, UM_TIER_NONE));
	EXPECT_EQ(-EINVAL, um_set_event_callback(NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, um_stats_get(NULL, &st));
	EXPECT_EQ(-EINVAL, um_stats_json(NULL, buf, sizeof(buf)));
	EXPECT_EQ(-EINVAL, um_host_alloc(NULL, 64, &p));
	EXPECT_EQ(-EINVAL, um_host_free(NULL, buf));
	EXPECT_EQ(-EINVAL, um_pool_trim(NULL));
	um_config_init(NULL);	/* no crash */
}

TEST_F(bad, foreign_and_destroyed_context)
{
	/* a pointer to something that is not a context at all */
	uint64_t junk[512];
	struct um_context *fake = (struct um_context *)junk;
	struct um_context *dead;
	um_region_t h;
	void *p;

	memset(junk, 0x5a, sizeof(junk));
	EXPECT_EQ(-EBADF, um_free(fake, self->r));
	EXPECT_EQ(-EBADF, um_ptr(fake, self->r, &p));
	EXPECT_EQ(-EBADF, um_context_destroy(fake));
	EXPECT_EQ(-EBADF, um_context_backend(fake));
	EXPECT_EQ(-EBADF, um_wait_all(fake));

	dead = ctx_sim(0, 16 * MiB);
	ASSERT_NONNULL(dead);
	ASSERT_EQ(0, um_context_destroy(dead));
	EXPECT_EQ(-EBADF, um_context_destroy(dead));	/* double destroy */
	EXPECT_EQ(-EBADF, um_alloc(dead, &(struct um_region_desc){
		.size = sizeof(struct um_region_desc), .bytes = 1 }, &h));
	EXPECT_EQ(-EBADF, um_lookup(dead, &p, &h));
}

TEST_F(bad, handles)
{
	struct um_context *other = ctx_sim(0, 16 * MiB);
	um_region_t x, y;
	void *p;

	ASSERT_NONNULL(other);
	/* handle 0 */
	EXPECT_EQ(-EINVAL, um_free(self->ctx, 0));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "handle 0 is no region", NULL));
	EXPECT_EQ(-EINVAL, um_ptr(self->ctx, 0, &p));
	EXPECT_EQ(-EINVAL, um_acquire(self->ctx, 0, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-EINVAL, um_release(self->ctx, 0));
	EXPECT_EQ(-EINVAL, um_wait(self->ctx, 0));
	/* made-up handles */
	EXPECT_EQ(-ENOENT, um_free(self->ctx, 0xdeadbeefcafef00dull));
	EXPECT_EQ(-ENOENT, um_ptr(self->ctx, self->r + 1, &p));
	EXPECT_EQ(-ENOENT, um_acquire(self->ctx, ~0ull, UM_TIER_GPU(0), NULL));
	/* a handle of another context, even one with the same slot */
	x = region(other, UM_KIND_PARAM, 0, 4096, "other");
	ASSERT_NE(0, x);
	EXPECT_EQ(-ENOENT, um_free(self->ctx, x));
	EXPECT_EQ(-ENOENT, um_acquire(self->ctx, x, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-ENOENT, um_free(other, self->r));
	/* stale: freed, then its slot reused */
	x = region(self->ctx, UM_KIND_PARAM, 0, 4096, "stale");
	ASSERT_NE(0, x);
	ASSERT_EQ(0, um_free(self->ctx, x));
	logcap_reset();
	EXPECT_EQ(-ENOENT, um_free(self->ctx, x));		/* double free */
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "free: region handle 0x",
			       "is not a region of this context", NULL))
		TH_LOG("a double free is named, and the call");
	y = region(self->ctx, UM_KIND_PARAM, 0, 4096, "reuse");
	ASSERT_NE(0, y);
	EXPECT_NE(x, y);
	EXPECT_EQ(-ENOENT, um_free(self->ctx, x));
	EXPECT_EQ(-ENOENT, um_acquire(self->ctx, x, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-ENOENT, um_release(self->ctx, x));
	EXPECT_EQ(-ENOENT, um_evict(self->ctx, x, UM_TIER_HOST_ANY));
	EXPECT_EQ(-ENOENT, um_wait(self->ctx, x));
	EXPECT_EQ(-ENOENT, um_ptr(self->ctx, x, &p));
	EXPECT_EQ(-ENOENT, um_region_info(self->ctx, x,
			&(struct um_region_info){ .size = sizeof(struct um_region_info) }));
	EXPECT_EQ(-ENOENT, um_advise(self->ctx, x, UM_ADVISE_READ_MOSTLY, 0));
	ASSERT_EQ(0, um_free(self->ctx, y));
	EXPECT_EQ(1, um_context_destroy(other));	/* x of other leaked */
}

TEST_F(bad, alloc_desc)
{
	struct um_region_desc d = { .size = sizeof(d), .bytes = 4096 };
	struct {
		struct um_region_desc d;
		uint64_t extra;
	} big = { .d = { .size = sizeof(big), .bytes = 4096 }, .extra = 1 };
	struct um_region_info info = { .size = sizeof(info) };
	um_region_t h = 0;

	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, NULL, &h));
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, NULL));
	d.size = 0;
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "um_region_desc has size 0", NULL))
		TH_LOG("a struct without .size is named");
	d.size = 8;
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	d.size = sizeof(d);
	d.kind = UM_KIND_COUNT;
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	d.kind = 0;
	d.backing = 3;
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	d.backing = 0;
	d.flags = 1u << 7;
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	d.flags = 0;
	d.device = 1;
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	d.device = 0;
	d.bytes = 0;
	logcap_reset();
	EXPECT_EQ(-EINVAL, um_alloc(self->ctx, &d, &h));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "bytes 0", "must be above 0", NULL));
	d.bytes = 1ull << 49;
	EXPECT_EQ(-E2BIG, um_alloc(self->ctx, &d, &h));
	d.bytes = UINT64_MAX;
	EXPECT_EQ(-E2BIG, um_alloc(self->ctx, &d, &h));
	d.bytes = 65 * MiB;	/* more than the device has: can never fit */
	EXPECT_EQ(-E2BIG, um_alloc(self->ctx, &d, &h));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "can never fit", NULL));
	/* a newer caller's larger struct: unknown fields must be zero */
	EXPECT_EQ(-E2BIG, um_alloc(self->ctx, &big.d, &h));
	big.extra = 0;
	ASSERT_EQ(0, um_alloc(self->ctx, &big.d, &h));
	ASSERT_EQ(0, um_free(self->ctx, h));
	EXPECT_EQ(0, h == 0);
	/* an older caller's shorter struct (no name): accepted */
	d.size = offsetof(struct um_region_desc, name);
	d.bytes = 4096;
	d.name = "ignored";
	ASSERT_EQ(0, um_alloc(self->ctx, &d, &h));
	ASSERT_EQ(0, um_region_info(self->ctx, h, &info));
	EXPECT_STREQ("", info.name);
	ASSERT_EQ(0, um_free(self->ctx, h));
}

TEST_F(bad, acquire_release_evict_order)
{
	um_region_t x = region(self->ctx, UM_KIND_PARAM, 0, 8192, "o");

	ASSERT_NE(0, x);
	EXPECT_EQ(-EPERM, um_release(self->ctx, x));	/* never acquired */
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "\"o\" is not acquired", NULL));
	EXPECT_EQ(-EINVAL, um_acquire(self->ctx, x, UM_TIER_GPU(1), NULL));
	EXPECT_EQ(-EINVAL, um_acquire(self->ctx, x, UM_TIER_DISK, NULL));
	EXPECT_EQ(-EINVAL, um_acquire(self->ctx, x, UM_TIER_NONE, NULL));
	EXPECT_EQ(-EINVAL, um_acquire(self->ctx, x, UM_TIER_MAKE(9, 0), NULL));
	EXPECT_EQ(-EINVAL, um_acquire(self->ctx, x, UM_TIER_HOST_NODE(99), NULL));
	ASSERT_EQ(0, um_acquire(self->ctx, x, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-EBUSY, um_evict(self->ctx, x, UM_TIER_HOST_ANY));
	EXPECT_EQ(-EBUSY, um_free(self->ctx, x));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "is acquired", NULL));
	EXPECT_TRUE(on_gpu(self->ctx, x));
	ASSERT_EQ(0, um_release(self->ctx, x));
	EXPECT_EQ(-EPERM, um_release(self->ctx, x));
	EXPECT_EQ(-EINVAL, um_evict(self->ctx, x, UM_TIER_GPU(0)));
	EXPECT_EQ(-EINVAL, um_evict(self->ctx, x, UM_TIER_NONE));
	EXPECT_EQ(-EINVAL, um_evict(self->ctx, x, UM_TIER_MAKE(UM_TIER_SPILL, 3)));
	ASSERT_EQ(0, um_free(self->ctx, x));
	/* acquire after free */
	EXPECT_EQ(-ENOENT, um_acquire(self->ctx, x, UM_TIER_GPU(0), NULL));
	EXPECT_EQ(-ENOENT, um_evict(self->ctx, x, UM_TIER_HOST_ANY));
}

TEST_F(bad, spill_without_store)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;
	um_region_t r;

	cfg_sim(&cfg, 16 * MiB, 64 * MiB);
	cfg.spill_dir = "off";
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, N, "no store");
	ASSERT_NE(0, r);
	ASSERT_EQ(0, put_pattern(ctx, r, N, 78));
	EXPECT_EQ(-EOPNOTSUPP, um_evict(ctx, r, UM_TIER_DISK));
	EXPECT_EQ(-EOPNOTSUPP, um_shed(ctx, UM_TIER_GPU(0), MiB,
				       UM_TIER_DISK));
	EXPECT_TRUE(on_gpu(ctx, r));
	EXPECT_EQ(0, get_pattern(ctx, r, N, 78));
	EXPECT_EQ(0, um_free(ctx, r));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST_F(bad, advise)
{
	EXPECT_EQ(-EINVAL, um_advise(self->ctx, self->r, 0, UM_TIER_GPU(0)));
	EXPECT_EQ(-EINVAL, um_advise(self->ctx, self->r, 7, UM_TIER_GPU(0)));
	EXPECT_EQ(-EINVAL, um_advise(self->ctx, self->r,
				     UM_ADVISE_PREFERRED_LOCATION, UM_TIER_GPU(5)));
	EXPECT_EQ(-EINVAL, um_advise(self->ctx, self->r,
				     UM_ADVISE_ACCESSED_BY, UM_TIER_DISK));
	/* TIERED: accepted, no effect */
	EXPECT_EQ(0, um_advise(self->ctx, self->r, UM_ADVISE_PREFERRED_LOCATION,
			       UM_TIER_HOST_ANY));
	EXPECT_EQ(0, um_advise(self->ctx, self->r, UM_ADVISE_READ_MOSTLY, 0));
}

TEST_F(bad, struct_sizes)
{
	struct um_region_info i;
	struct um_stats st;
	char buf[16];

	memset(&i, 0, sizeof(i));
	EXPECT_EQ(-EINVAL, um_region_info(self->ctx, self->r, NULL));
	i.size = 0;
	EXPECT_EQ(-EINVAL, um_region_info(self->ctx, self->r, &i));
	i.size = 7;
	EXPECT_EQ(-EINVAL, um_region_info(self->ctx, self->r, &i));
	i.size = 1u << 20;
	EXPECT_EQ(-EINVAL, um_region_info(self->ctx, self->r, &i));
	/* an older, shorter struct: only its prefix is written */
	memset(&i, 0xee, sizeof(i));
	i.size = offsetof(struct um_region_info, bytes);
	ASSERT_EQ(0, um_region_info(self->ctx, self->r, &i));
	EXPECT_EQ(offsetof(struct um_region_info, bytes), i.size);
	EXPECT_EQ(UM_KIND_OPTIMIZER_STATE, i.kind);
	EXPECT_EQ(0xeeeeeeeeeeeeeeeeull, i.bytes);

	memset(&st, 0, sizeof(st));
	EXPECT_EQ(-EINVAL, um_stats_get(self->ctx, NULL));
	st.size = 4;
	EXPECT_EQ(-EINVAL, um_stats_get(self->ctx, &st));
	st.size = 0;
	EXPECT_EQ(-EINVAL, um_stats_get(self->ctx, &st));
	EXPECT_EQ(-EINVAL, um_stats_json(self->ctx, NULL, 5));
	EXPECT_LT(10, um_stats_json(self->ctx, NULL, 0));
	EXPECT_LT(10, um_stats_json(self->ctx, buf, sizeof(buf)));
	EXPECT_EQ(15, strlen(buf));	/* truncated, terminated */
}

TEST_F(bad, budget_and_shed)
{
	uint64_t b;

	EXPECT_EQ(-EINVAL, um_budget_set(self->ctx, 1, 1));
	EXPECT_EQ(-EINVAL, um_budget_set(self->ctx, ~0u, 1));
	EXPECT_EQ(-EINVAL, um_budget_set(self->ctx, 0, 65 * MiB));
	EXPECT_EQ(-EINVAL, um_budget_get(self->ctx, 0, NULL));
	EXPECT_EQ(-EINVAL, um_budget_get(self->ctx, 3, &b));
	ASSERT_EQ(0, um_budget_get(self->ctx, 0, &b));
	EXPECT_EQ(16 * MiB, b);
	EXPECT_EQ(-EINVAL, um_shed(self->ctx, UM_TIER_GPU(4), 1, UM_TIER_NONE));
	EXPECT_EQ(-EINVAL, um_shed(self->ctx, UM_TIER_DISK, 1, UM_TIER_NONE));
	EXPECT_EQ(-EINVAL, um_shed(self->ctx, UM_TIER_NONE, 1, UM_TIER_NONE));
	EXPECT_EQ(-EINVAL, um_shed(self->ctx, UM_TIER_GPU(0), 1,
				   UM_TIER_GPU(0)));
	EXPECT_EQ(-EINVAL, um_shed(self->ctx, UM_TIER_HOST_ANY, 1,
				   UM_TIER_HOST_ANY));
	EXPECT_EQ(0, um_shed(self->ctx, UM_TIER_GPU(0), 0, UM_TIER_NONE));
	EXPECT_TRUE(on_gpu(self->ctx, self->r));
}

TEST_F(bad, host_memory)
{
	void *p = NULL, *q = NULL;
	char local[64];

	EXPECT_EQ(-EINVAL, um_host_alloc(self->ctx, 0, &p));
	EXPECT_EQ(-EINVAL, um_host_alloc(self->ctx, 64, NULL));
	EXPECT_EQ(-ENOMEM, um_host_alloc(self->ctx, SIZE_MAX, &p));
	EXPECT_EQ(-EINVAL, um_host_free(self->ctx, NULL));
	EXPECT_EQ(-EINVAL, um_host_free(self->ctx, local));
	ASSERT_EQ(0, um_host_alloc(self->ctx, 1000, &p));
	ASSERT_EQ(0, um_host_alloc(self->ctx, 3 * MiB, &q));
	memset(p, 1, 1000);
	memset(q, 2, 3 * MiB);
	EXPECT_EQ(-EINVAL, um_host_free(self->ctx, (char *)p + 8));
	ASSERT_EQ(0, um_host_free(self->ctx, p));
	EXPECT_EQ(-EINVAL, um_host_free(self->ctx, p));	/* double free */
	ASSERT_EQ(0, um_host_free(self->ctx, q));
	EXPECT_LE(0, um_pool_trim(self->ctx));
}

TEST_F(bad, region_host_copy_is_not_a_host_block)
{
	/* evict: the bytes now sit in a pool block the caller never got */
	struct um_stats st = { .size = sizeof(st) };

	ASSERT_EQ(0, um_evict(self->ctx, self->r, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(self->ctx, self->r));
	ASSERT_EQ(0, um_stats_get(self->ctx, &st));
	EXPECT_EQ(N, st.host_total.current);
	/* a pointer the caller never got from um_host_alloc is refused */
	EXPECT_EQ(-EINVAL, um_host_free(self->ctx, &st));
}

/* A zeroed um_config (no um_config_init) has no callback to trust: stderr. */
TEST(zeroed_config_is_named_on_stderr)
{
	struct um_config zero;
	struct um_context *ctx = NULL;
	char buf[512] = "";
	FILE *tmp = tmpfile();
	int saved, n;

	ASSERT_NONNULL(tmp);
	memset(&zero, 0, sizeof(zero));
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	ASSERT_LE(0, saved);
	ASSERT_LE(0, dup2(fileno(tmp), STDERR_FILENO));
	unsetenv("LIBUM_LOG_LEVEL");
	EXPECT_EQ(-EINVAL, um_context_create(&zero, &ctx));
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(tmp);
	n = (int)fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n > 0 ? n : 0] = '\0';
	fclose(tmp);
	EXPECT_NULL(ctx);
	EXPECT_NE(NULL, strstr(buf, "libum: error: context: struct um_config has size 0"))
		TH_LOG("stderr: %s", buf);
	EXPECT_NE(NULL, strstr(buf, "um_config_init")) TH_LOG("stderr: %s", buf);
}

TEST_HARNESS_MAIN
