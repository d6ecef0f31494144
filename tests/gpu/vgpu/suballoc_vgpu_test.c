// SPDX-License-Identifier: MIT
/*
 * Description: the sub-allocator (um_suballoc_*) on the cuda backend over
 * the virtual GPU, where streams run behind the caller: a block freed on a
 * stream whose kernel is held back is reused on that stream at once, not
 * on another stream (which gets other bytes, and the held kernel's write
 * lands in the block it was queued for), and on every stream once the
 * freeing stream's work is done; a segment is device memory the CPU
 * cannot touch, its blocks written and checked by kernels on two streams.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "engine_vgpu_common.h"

#define MiB EV_MiB

static struct um_suballoc *sa_held(struct um_context *ctx)
{
	struct um_suballoc_desc d = {
		.size = sizeof(d), .flags = UM_SUBALLOC_HOLD, .name = "small",
	};
	struct um_suballoc *sa = NULL;

	return um_suballoc_create(ctx, &d, &sa) ? NULL : sa;
}

static uint64_t pending_of(struct um_context *ctx)
{
	struct um_stats st = { .size = sizeof(st) };

	return um_stats_get(ctx, &st) ? UINT64_MAX : st.suballoc_pending;
}

TEST(reuse_waits_for_the_freeing_stream)
{
	struct um_context *ctx = NULL;
	struct um_suballoc *sa;
	void *a = NULL, *b = NULL, *c = NULL, *p, *q, *r;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&a));
	ASSERT_EQ(0, gu_stream_create(&b));
	ASSERT_EQ(0, gu_stream_create(&c));
	ASSERT_EQ(0, ev_ctx(&ctx, 64 * MiB));
	sa = sa_held(ctx);
	ASSERT_NONNULL(sa);
	ASSERT_EQ(0, um_suballoc_alloc(sa, 4096, a, &p));
	/* a's kernel on p is held back; p is freed behind it */
	ASSERT_EQ(cudaSuccess, ev_gate_close(a));
	ASSERT_EQ(0, gu_fill(p, 4096, 7, a));
	ASSERT_EQ(0, um_suballoc_free(sa, p, a));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 4096, a, &q));
	EXPECT_EQ((uintptr_t)p, (uintptr_t)q);	/* a's own: at once */
	ASSERT_EQ(0, um_suballoc_free(sa, q, a));
	EXPECT_EQ(4096, pending_of(ctx));
	/* b must not get p while a's kernel may still write it */
	ASSERT_EQ(0, um_suballoc_alloc(sa, 4096, b, &q));
	EXPECT_NE((uintptr_t)p, (uintptr_t)q);
	ASSERT_EQ(0, gu_fill(q, 4096, 8, b));
	/* an allocation polls a's fence, still not reached */
	ASSERT_EQ(0, um_suballoc_alloc(sa, MiB, b, &r));
	EXPECT_EQ(4096, pending_of(ctx));
	ASSERT_EQ(0, um_suballoc_free(sa, r, b));
	sem_post(&ev_gate);
	ASSERT_EQ(0, gu_stream_sync(a));
	ASSERT_EQ(0, gu_check(p, 4096, 7, b)) TH_LOG("a's write was lost");
	ASSERT_EQ(0, gu_check(q, 4096, 8, b)) TH_LOG("b's block overwritten");
	ASSERT_EQ(0, gu_stream_sync(b));
	/* a is done: p is every stream's now */
	ASSERT_EQ(0, um_suballoc_free(sa, q, b));
	ASSERT_EQ(0, gu_stream_sync(b));
	ASSERT_EQ(0, um_suballoc_alloc(sa, 4096, c, &r));
	EXPECT_EQ((uintptr_t)p, (uintptr_t)r);
	EXPECT_EQ(0, pending_of(ctx));
	ASSERT_EQ(0, um_suballoc_free(sa, r, c));
	ASSERT_EQ(0, gu_stream_sync(c));
	EXPECT_EQ(2 * MiB, um_suballoc_trim(sa));
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
	gu_stream_destroy(a);
	gu_stream_destroy(b);
	gu_stream_destroy(c);
}

TEST(blocks_of_a_segment_on_two_streams)
{
	struct um_context *ctx = NULL;
	struct um_suballoc *sa;
	void *a = NULL, *b = NULL, *p[64];
	int faulted;

	ASSERT_EQ(0, gu_warmup());
	ASSERT_EQ(0, gu_stream_create(&a));
	ASSERT_EQ(0, gu_stream_create(&b));
	ASSERT_EQ(0, ev_ctx(&ctx, 64 * MiB));
	sa = sa_held(ctx);
	ASSERT_NONNULL(sa);
	for (int i = 0; i < 64; i++) {
		void *s = i % 2 ? b : a;

		ASSERT_EQ(0, um_suballoc_alloc(sa, 1000 + (size_t)i * 512, s,
					       &p[i]));
		ASSERT_EQ(0, gu_fill(p[i], 1000 + (size_t)i * 512,
				     (uint32_t)i, s));
	}
	ASSERT_EQ(0, gu_stream_sync(a));
	ASSERT_EQ(0, gu_stream_sync(b));
	for (int i = 0; i < 64; i++)
		EXPECT_EQ(0, gu_check(p[i], 1000 + (size_t)i * 512,
				      (uint32_t)i, i % 2 ? a : b));
	faulted = vgpu_touch_faults(p[0]);
	EXPECT_EQ(1, faulted) TH_LOG("the CPU touched device memory");
	for (int i = 0; i < 64; i++)
		EXPECT_EQ(0, um_suballoc_free(sa, p[i], i % 2 ? b : a));
	EXPECT_EQ(0, um_suballoc_destroy(sa));
	EXPECT_EQ(0, um_context_destroy(ctx));
	gu_stream_destroy(a);
	gu_stream_destroy(b);
}

TEST_HARNESS_MAIN
