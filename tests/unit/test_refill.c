/* SPDX-License-Identifier: MIT */
/*
 * Description: the pinned pool grows with the context lock not held, on
 * every path that evicts (um_acquire needing room, um_budget_set lowering
 * the budget, um_shed, um_release meeting a lowered budget), from an empty
 * pool (pool_size 0): a probe called right before each host_alloc finds
 * that the growing thread does not hold the context lock. With the refill thread on (the
 * default) the pool is grown ahead, before any eviction; it holds off after
 * a trim; it stops with its context, and a fork() child's copy of the
 * context is inert. With LIBUM_POOL_REFILL=0 the fallback alone keeps the
 * lock free. Every evicted byte comes back intact.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"

#define SZ (8 * MiB)

/* ThreadSanitizer does not follow a fork() child of a threaded process */
#define UNDER_TSAN 0
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#undef UNDER_TSAN
#define UNDER_TSAN 1
#endif
#endif

/* ---- the probe: is the context lock held by whoever grows the pool? ---- */

static struct um_context *probe_ctx;
static int probe_grows, probe_under_lock;

/*
 * Called by the growing thread: does it hold the context lock? Read from
 * the lock (glibc keeps its owner's thread id there): exact, where timing
 * another thread's call would also count a lock some other thread held a
 * while on a loaded machine.
 */
static void probe(void)
{
	struct um_context *ctx = __atomic_load_n(&probe_ctx, __ATOMIC_ACQUIRE);

	if (!ctx)
		return;
	__atomic_fetch_add(&probe_grows, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&ctx->lock.__data.__owner, __ATOMIC_RELAXED) ==
	    (int)syscall(SYS_gettid))
		__atomic_fetch_add(&probe_under_lock, 1, __ATOMIC_RELAXED);
}

static void probe_arm(struct um_context *ctx)
{
	probe_grows = probe_under_lock = 0;
	um__pool_grow_hook = probe;
	__atomic_store_n(&probe_ctx, ctx, __ATOMIC_RELEASE);
}

static void probe_disarm(void)
{
	__atomic_store_n(&probe_ctx, NULL, __ATOMIC_RELEASE);
	um__pool_grow_hook = NULL;
}

/* ---- contexts ----------------------------------------------------------- */

/* Budget for two 8 MiB regions, 4 MiB pool chunks, refill on or off. */
static struct um_context *ctx_refill(bool refill)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;

	cfg_sim(&cfg, 2 * SZ, 64 * MiB);
	cfg.pool_chunk = 4 * MiB;
	setenv("LIBUM_PRESSURE", "0", 1);
	setenv("LIBUM_POOL_REFILL", refill ? "1" : "0", 1);
	if (um_context_create(&cfg, &ctx))
		ctx = NULL;
	unsetenv("LIBUM_POOL_REFILL");
	return ctx;
}

static uint64_t pool_bytes(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	return um_stats_get(ctx, &st) ? 0 : st.pool_bytes;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Pool bytes once they reach want, polled for up to 10 s. */
static uint64_t pool_bytes_reach(struct um_context *ctx, uint64_t want)
{
	uint64_t b = 0;

	for (int i = 0; i < 1000 && (b = pool_bytes(ctx)) < want; i++)
		sleep_ms(10);
	return b;
}

/* Two released regions on the device, a and b, with patterns 1 and 2. */
static void two_on_device(struct __test_metadata *_metadata,
			  struct um_context *ctx, um_region_t *a,
			  um_region_t *b)
{
	*a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "a");
	*b = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "b");
	ASSERT_NE(0, *a);
	ASSERT_NE(0, *b);
	ASSERT_EQ(0, put_pattern(ctx, *a, SZ, 1));
	ASSERT_EQ(0, put_pattern(ctx, *b, SZ, 2));
	ASSERT_EQ(1, on_gpu(ctx, *a));
	ASSERT_EQ(1, on_gpu(ctx, *b));
}

/* Nothing grew under the lock, something grew, and the bytes came back. */
static void check_off_lock(struct __test_metadata *_metadata,
			   struct um_context *ctx, um_region_t a,
			   um_region_t b)
{
	probe_disarm();
	TH_LOG("pool grows: %d, with the context lock held: %d", probe_grows,
	       probe_under_lock);
	EXPECT_EQ(0, probe_under_lock);
	EXPECT_LT(0, probe_grows);
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(0, um_budget_set(ctx, 0, 2 * SZ));
	EXPECT_EQ(0, get_pattern(ctx, a, SZ, 1));
	EXPECT_EQ(0, get_pattern(ctx, b, SZ, 2));
	EXPECT_EQ(0, um_free(ctx, a));
	EXPECT_EQ(0, um_free(ctx, b));
}

/* A third region's acquire evicts a or b; then the checks, and destroy. */
static void acquire_a_third(struct __test_metadata *_metadata,
			    struct um_context *ctx, um_region_t a,
			    um_region_t b)
{
	um_region_t c = region(ctx, UM_KIND_PARAM, 0, SZ, "c");

	ASSERT_NE(0, c);
	ASSERT_EQ(0, um_acquire(ctx, c, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(ctx, c));
	check_off_lock(_metadata, ctx, a, b);
	EXPECT_EQ(0, um_free(ctx, c));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* ---- every path that evicts, fallback only (refill off) ----------------- */

TEST(acquire_needing_room_grows_the_pool_off_the_lock)
{
	struct um_context *ctx = ctx_refill(false);
	um_region_t a, b;

	ASSERT_NE(NULL, ctx);
	two_on_device(_metadata, ctx, &a, &b);
	probe_arm(ctx);
	acquire_a_third(_metadata, ctx, a, b);
}

/* Both regions leave the device, by a budget cut to 0 or by um_shed. */
static void both_leave(struct __test_metadata *_metadata, bool by_shed)
{
	struct um_context *ctx = ctx_refill(false);
	um_region_t a, b;

	ASSERT_NE(NULL, ctx);
	two_on_device(_metadata, ctx, &a, &b);
	probe_arm(ctx);
	if (by_shed)
		EXPECT_EQ((int64_t)(2 * SZ),
			  um_shed(ctx, UM_TIER_GPU(0), 2 * SZ, UM_TIER_NONE));
	else
		ASSERT_EQ(0, um_budget_set(ctx, 0, 0));
	EXPECT_EQ(0, on_gpu(ctx, a));
	EXPECT_EQ(0, on_gpu(ctx, b));
	check_off_lock(_metadata, ctx, a, b);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(budget_cut_grows_the_pool_off_the_lock)
{
	both_leave(_metadata, false);
}

TEST(shed_grows_the_pool_off_the_lock)
{
	both_leave(_metadata, true);
}

TEST(release_over_a_cut_budget_grows_the_pool_off_the_lock)
{
	struct um_context *ctx = ctx_refill(false);
	um_region_t a, b;
	void *p;

	ASSERT_NE(NULL, ctx);
	two_on_device(_metadata, ctx, &a, &b);
	ASSERT_EQ(0, acquire_ptr(ctx, a, &p));
	ASSERT_EQ(0, acquire_ptr(ctx, b, &p));
	EXPECT_EQ(-EBUSY, um_budget_set(ctx, 0, SZ));
	probe_arm(ctx);
	ASSERT_EQ(0, um_release(ctx, a));	/* over budget: a goes */
	EXPECT_EQ(0, on_gpu(ctx, a));
	ASSERT_EQ(0, um_release(ctx, b));
	check_off_lock(_metadata, ctx, a, b);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* ---- the refill thread (the default) ------------------------------------ */

TEST(refill_grows_the_pool_before_the_first_eviction)
{
	struct um_context *ctx = ctx_refill(true);
	um_region_t a, b;

	ASSERT_NE(NULL, ctx);
	probe_arm(ctx);
	two_on_device(_metadata, ctx, &a, &b);
	/* no eviction yet: room for the two regions' copies, made ahead */
	EXPECT_LE(2 * SZ, pool_bytes_reach(ctx, 2 * SZ));
	acquire_a_third(_metadata, ctx, a, b);
}

TEST(refill_holds_off_after_a_trim)
{
	struct um_context *ctx = ctx_refill(true);
	um_region_t a, b;

	ASSERT_NE(NULL, ctx);
	two_on_device(_metadata, ctx, &a, &b);
	ASSERT_LE(2 * SZ, pool_bytes_reach(ctx, 2 * SZ));
	/* what pressure does: give the free chunks back */
	EXPECT_LE((int64_t)(2 * SZ), um_pool_trim(ctx));
	EXPECT_EQ(0, pool_bytes(ctx));
	sleep_ms(1500);		/* more than a refill poll, less than hold-off */
	EXPECT_EQ(0, pool_bytes(ctx)) TH_LOG("the refill pinned them again");
	/* an eviction still works meanwhile, growing off the lock */
	probe_arm(ctx);
	ASSERT_EQ(0, um_budget_set(ctx, 0, SZ));
	check_off_lock(_metadata, ctx, a, b);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(refill_thread_stops_with_its_context)
{
	int before = -1, i;

	for (i = 0; i < 4; i++) {
		struct um_context *ctx = ctx_refill(true);
		um_region_t a, b;

		ASSERT_NE(NULL, ctx);
		two_on_device(_metadata, ctx, &a, &b);
		/* i = 1: destroyed while the refill may still be growing */
		if (i != 1)
			ASSERT_LE(2 * SZ, pool_bytes_reach(ctx, 2 * SZ));
		EXPECT_EQ(0, um_free(ctx, a));
		EXPECT_EQ(0, um_free(ctx, b));
		EXPECT_EQ(0, um_context_destroy(ctx));
		/* the first round may start threads a process keeps (TSan's) */
		if (!i)
			before = dir_entries("/proc/self/task");
		else
			EXPECT_EQ(before, threads_settle(before));
	}
	EXPECT_LT(0, before);
}

TEST(fork_child_copy_is_inert_and_parent_refills)
{
	struct um_context *ctx = ctx_refill(true);
	struct um_stats st = { .size = sizeof(st) };
	um_region_t a, b;
	int status = 0;
	pid_t pid;

	if (UNDER_TSAN) {
		um_context_destroy(ctx);
		SKIP(return, "fork() under ThreadSanitizer (test_fork is not run there either)");
	}
	ASSERT_NE(NULL, ctx);
	two_on_device(_metadata, ctx, &a, &b);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* no refill thread here: every call -ECHILD, destroy forgets */
		int bad = um_stats_get(ctx, &st) != -ECHILD;

		bad |= um_shed(ctx, UM_TIER_GPU(0), SZ, UM_TIER_NONE) !=
		       -ECHILD;
		bad |= um_context_destroy(ctx) != 0;
		_exit(bad);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_LE(2 * SZ, pool_bytes_reach(ctx, 2 * SZ));
	probe_arm(ctx);
	ASSERT_EQ(0, um_budget_set(ctx, 0, 0));
	check_off_lock(_metadata, ctx, a, b);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(refill_switch_is_validated)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;

	cfg_sim(&cfg, 0, 64 * MiB);
	setenv("LIBUM_POOL_REFILL", "sometimes", 1);
	EXPECT_EQ(-EINVAL, um_context_create(&cfg, &ctx));
	unsetenv("LIBUM_POOL_REFILL");
	EXPECT_EQ(1, logcap_has(UM_LOG_ERR, "LIBUM_POOL_REFILL", "sometimes",
				NULL));
	EXPECT_EQ(NULL, ctx);
}

TEST_TIMEOUT_SET(refill_thread_stops_with_its_context, 60);
TEST_TIMEOUT_SET(refill_holds_off_after_a_trim, 60);
TEST_TIMEOUT_SET(fork_child_copy_is_inert_and_parent_refills, 60);
TEST_TIMEOUT_SET(refill_grows_the_pool_before_the_first_eviction, 60);

/* ---- the watermark's figures against a walk over every region ---------- */

/* What an eviction of r would take from the pool, as refill.c defines it. */
static uint64_t model_need(const struct um_region *r)
{
	if (!um__tier_is_dev(r->residency) || r->host)
		return 0;
	if (r->backing != UM_BACKING_TIERED &&
	    !(r->flags & UM_REGION_DISCARD_EVICT))
		return 0;
	return r->bytes;
}

static bool figures_match_walk(struct um_context *ctx)
{
	uint64_t total = 0, largest = 0, t, l;

	pthread_mutex_lock(&ctx->lock);
	for (const struct um_region *r = ctx->regions.next;
	     r != &ctx->regions; r = r->next) {
		total += model_need(r);
		if (model_need(r) > largest)
			largest = model_need(r);
	}
	um__hostneed_figures(ctx, &t, &l);
	pthread_mutex_unlock(&ctx->lock);
	if (t != total || l != largest)
		TH_LOG("kept: %llu bytes, largest %llu; walk: %llu, %llu",
		       (unsigned long long)t, (unsigned long long)l,
		       (unsigned long long)total, (unsigned long long)largest);
	return t == total && l == largest;
}

/*
 * 2,000 steps over 48 regions of 4 KiB to 6 MiB (some with
 * DISCARD_EVICT, some READ_MOSTLY, so that a host copy stays on the
 * device): allocate, acquire on the device or the host, release, evict,
 * free. After each one the total and the largest copy kept for the
 * refill thread must be what a walk over every region gives.
 */
TEST(watermark_figures_follow_every_change)
{
	enum { N = 48 };
	static const uint64_t sizes[] = { 4096, 64 << 10, MiB, 3 * MiB,
					  6 * MiB };
	struct um_context *ctx = ctx_refill(false);
	um_region_t r[N] = { 0 };
	bool held[N] = { false };
	uint64_t seed = 0xa4093822299f31d0ull;

	ASSERT_NONNULL(ctx);
	for (int step = 0; step < 2000; step++) {
		int i, op;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		i = (int)((seed >> 8) % N);
		op = (int)((seed >> 40) % 8);
		if (!r[i]) {
			struct um_region_desc d = {
				.size = sizeof(d), .kind = UM_KIND_GENERIC,
				.bytes = sizes[(seed >> 20) % 5],
				.flags = (seed >> 30) % 3 == 0 ?
					 UM_REGION_DISCARD_EVICT : 0,
			};

			ASSERT_EQ(0, um_alloc(ctx, &d, &r[i]));
			if ((seed >> 50) % 3 == 0)
				ASSERT_EQ(0, um_advise(ctx, r[i],
						       UM_ADVISE_READ_MOSTLY,
						       UM_TIER_HOST_ANY));
		} else if (held[i]) {
			ASSERT_EQ(0, um_release(ctx, r[i]));
			held[i] = false;
		} else if (op <= 3) {
			um_tier_t t = op == 3 ? UM_TIER_HOST_ANY : UM_TIER_GPU(0);
			int ret = um_acquire(ctx, r[i], t, NULL);

			/* the budget may hold no more: that is fine too */
			ASSERT_TRUE(!ret || ret == -ENOMEM || ret == -EDEADLK)
				TH_LOG("step %d: acquire: %d", step, ret);
			held[i] = !ret;
		} else if (op < 6) {
			int ret = um_evict(ctx, r[i], UM_TIER_HOST_ANY);

			ASSERT_TRUE(ret >= 0 || ret == -EINVAL ||
				    ret == -EBUSY || ret == -ENOMEM)
				TH_LOG("step %d: evict: %d", step, ret);
		} else if (op == 6) {
			ASSERT_EQ(0, um_wait_all(ctx));
		} else {
			ASSERT_EQ(0, um_free(ctx, r[i]));
			r[i] = 0;
		}
		ASSERT_TRUE(figures_match_walk(ctx)) TH_LOG("step %d", step);
	}
	ASSERT_EQ(0, um_wait_all(ctx));
	EXPECT_TRUE(figures_match_walk(ctx));
	for (int i = 0; i < N; i++) {
		if (held[i])
			ASSERT_EQ(0, um_release(ctx, r[i]));
		if (r[i])
			ASSERT_EQ(0, um_free(ctx, r[i]));
	}
	EXPECT_TRUE(figures_match_walk(ctx));
	EXPECT_EQ(0, ctx->need_n);
	um_context_destroy(ctx);
}

TEST_HARNESS_MAIN
