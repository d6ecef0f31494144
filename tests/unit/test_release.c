/* SPDX-License-Identifier: MIT */
/*
 * Description: the fence um_release records on the caller's stream. A free
 * waits for it (on CUDA, unmapping under a running kernel kills the
 * context), with the context lock dropped; a second free of the same handle
 * meanwhile is -ENOENT. A release whose stream cannot be fenced leaves the
 * region unevictable (-EBUSY, skipped by the policy) until a release fences
 * it. The stream is simulated with fake ops: its fence is recorded on a sim
 * queue that the test holds, or recording fails.
 */
#include <pthread.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

#define SZ (2 * MiB)

static struct um_backend_ops fake;
static struct um_queue *user_q;	/* stands for the caller's stream */
static int record_fails;

static int fake_record(struct um_backend *be, void *stream, struct um_fence *f)
{
	if (record_fails)
		return -EINVAL;
	return um__backend_sim.fence_record(be, f, user_q);
}

/* The sim's test hooks want the sim's own ops in place. */
static int hold(struct um_context *ctx, bool on)
{
	int ret;

	ctx->be.ops = &um__backend_sim;
	ret = um__sim_hold(&ctx->be, on);
	ctx->be.ops = &fake;
	return ret;
}

static struct um_context *ctx_fake(void)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);

	if (!ctx)
		return NULL;
	if (um__backend_sim.queue_create(&ctx->be, 0, &user_q))
		return NULL;
	fake = um__backend_sim;
	fake.stream_record_fence = fake_record;
	ctx->be.ops = &fake;
	return ctx;
}

struct freer {
	struct um_context *ctx;
	um_region_t r;
	int ret;
	volatile int done;
};

static void *do_free(void *arg)
{
	struct freer *f = arg;

	f->ret = um_free(f->ctx, f->r);
	__atomic_store_n(&f->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

TEST(free_waits_for_release_fence)
{
	struct um_context *ctx = ctx_fake();
	struct freer f = { 0 };
	um_region_t other;
	pthread_t t;

	ASSERT_NONNULL(ctx);
	f.ctx = ctx;
	f.r = region(ctx, UM_KIND_PARAM, 0, SZ, "busy");
	other = region(ctx, UM_KIND_PARAM, 0, SZ, "other");
	ASSERT_EQ(0, um_acquire(ctx, f.r, UM_TIER_GPU(0), NULL));
	/* the "kernels" on the caller's stream have not run yet */
	ASSERT_EQ(0, hold(ctx, true));
	ASSERT_EQ(0, um_release(ctx, f.r));
	ASSERT_EQ(0, pthread_create(&t, NULL, do_free, &f));
	usleep(100 * 1000);
	EXPECT_EQ(0, __atomic_load_n(&f.done, __ATOMIC_ACQUIRE));
	/* the lock is not held meanwhile; the handle is already dead */
	EXPECT_EQ(0, um_budget_set(ctx, 0, 32 * MiB));
	EXPECT_EQ(-ENOENT, um_free(ctx, f.r));
	EXPECT_EQ(-ENOENT, um_acquire(ctx, f.r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, hold(ctx, false));
	pthread_join(t, NULL);
	EXPECT_EQ(0, f.ret);
	EXPECT_EQ(-ENOENT, um_free(ctx, f.r));
	ASSERT_EQ(0, um_free(ctx, other));
	um__backend_sim.queue_destroy(&ctx->be, user_q);
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(unfenced_release_is_not_evicted)
{
	struct um_context *ctx = ctx_fake();
	um_region_t r;

	ASSERT_NONNULL(ctx);
	logcap_reset();
	r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "unfenced");
	ASSERT_EQ(0, put_pattern(ctx, r, SZ, 9));
	ASSERT_EQ(0, um_acquire(ctx, r, UM_TIER_GPU(0), NULL));
	record_fails = 1;
	ASSERT_EQ(0, um_release(ctx, r));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "cannot fence", "unfenced", NULL));
	EXPECT_EQ(-EBUSY, um_evict(ctx, r, UM_TIER_HOST_ANY));
	EXPECT_EQ(0, um_shed(ctx, UM_TIER_GPU(0), SZ, UM_TIER_NONE));
	EXPECT_TRUE(on_gpu(ctx, r));
	/* a release that fences makes it a victim again */
	record_fails = 0;
	ASSERT_EQ(0, um_acquire(ctx, r, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_release(ctx, r));
	ASSERT_EQ(0, um_evict(ctx, r, UM_TIER_HOST_ANY));
	ASSERT_EQ(0, um_wait(ctx, r));
	EXPECT_FALSE(on_gpu(ctx, r));
	EXPECT_EQ(0, get_pattern(ctx, r, SZ, 9));
	ASSERT_EQ(0, um_free(ctx, r));
	um__backend_sim.queue_destroy(&ctx->be, user_q);
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
