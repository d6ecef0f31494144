// SPDX-License-Identifier: MIT
/*
 * Description: defects of libum's cuda backend that only a GPU with real
 * asynchrony, several devices and sticky errors shows, on the virtual GPU:
 * fences recorded on a second device's streams, primary contexts made on
 * devices nobody uses, the managed cap of each device, a dead context
 * reported as such, and copies from pageable memory (synchronous on CUDA)
 * refused. Each test sets the vGPU's environment before the first CUDA call
 * of its own (forked) process.
 */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "harness.h"
#include "um.h"
#include "vgpu.h"

#define MiB (1ull << 20)

static char last_log[512];

static void be_log(void *arg, int level, const char *fmt, ...)
{
	va_list ap;

	(void)arg;
	va_start(ap, fmt);
	vsnprintf(last_log, sizeof(last_log), fmt, ap);
	va_end(ap);
	printf("# [be %d] %s\n", level, last_log);
}

static int be_init(struct um_backend *be)
{
	struct um_backend_config bc = { .sim_capacity = 0, .device = 0 };

	memset(be, 0, sizeof(*be));
	be->ops = &um__backend_cuda;
	be->log = be_log;
	return um__backend_cuda.init(be, &bc);
}

TEST(fences_record_on_a_second_devices_queues_and_streams)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	struct um_queue *q1 = NULL;
	struct um_fence *f = NULL;
	struct um_backend be;
	cudaStream_t user1;

	setenv("UM_VGPU_DEVICES", "2", 1);
	ASSERT_EQ(0, be_init(&be));
	ASSERT_EQ(0, o->queue_create(&be, 1, &q1));
	/* Made while device 0 is current, as the engine makes its fences. */
	ASSERT_EQ(0, o->fence_create(&be, &f));
	ASSERT_EQ(0, o->fence_record(&be, f, q1)) TH_LOG("%s", last_log);
	ASSERT_EQ(0, o->fence_wait(&be, f));
	ASSERT_EQ(0, o->queue_wait_fence(&be, q1, f));
	/* A trainer's stream on device 1, at um_release. */
	ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&user1,
					cudaStreamNonBlocking));
	ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
	ASSERT_EQ(0, o->stream_record_fence(&be, user1, f))
		TH_LOG("%s", last_log);
	ASSERT_EQ(0, o->fence_wait(&be, f));
	/* And back on device 0's legacy stream. */
	ASSERT_EQ(0, o->stream_record_fence(&be, NULL, f));
	ASSERT_EQ(0, o->fence_wait(&be, f));
	o->fence_destroy(&be, f);
	o->queue_destroy(&be, q1);
	o->fini(&be);
}

TEST(no_primary_context_on_devices_not_used)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;

	setenv("UM_VGPU_DEVICES", "4", 1);
	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_CUDA;
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	/* Each context costs device memory: only device 0 was asked for. */
	EXPECT_EQ(1u, vgpu_context_mask());
	um_context_destroy(ctx);
}

TEST(managed_cap_is_per_device)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	struct um_backend be;
	size_t f1 = 0, t1 = 0;
	void *other = NULL, *m = NULL;

	setenv("UM_VGPU_DEVICES", "2", 1);
	setenv("UM_VGPU_BYTES", "2G", 1);
	/* Someone else holds most of device 1 before libum starts. */
	ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
	ASSERT_EQ(cudaSuccess, cudaMalloc(&other, 1536 * MiB));
	ASSERT_EQ(cudaSuccess, cudaMemGetInfo(&f1, &t1));
	ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
	ASSERT_EQ(0, be_init(&be));
	/* Fits device 0's free memory, not device 1's: refused there. */
	ASSERT_EQ(-ENOMEM, o->managed_alloc(&be, 1, f1 + 64 * MiB, &m))
		TH_LOG("device 1 has %zu MiB free", f1 >> 20);
	ASSERT_EQ(0, o->managed_alloc(&be, 0, f1 + 64 * MiB, &m));
	o->managed_free(&be, m, f1 + 64 * MiB);
	o->fini(&be);
}

/* The toolkit without a driver: said so, not "driver version is insufficient". */
TEST(no_driver_is_named)
{
	const char *why = NULL;

	setenv("UM_VGPU_NO_DRIVER", "1", 1);
	ASSERT_EQ(0, um__backend_cuda.probe(&why));
	ASSERT_NE(NULL, why);
	EXPECT_NE(NULL, strstr(why, "no NVIDIA driver")) TH_LOG("%s", why);
}

TEST(a_dead_context_is_reported_as_such)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	struct um_queue *q = NULL;
	struct um_backend be;
	void *host = NULL, *dev = NULL;

	setenv("UM_VGPU_STICKY_AFTER", "0", 1);
	ASSERT_EQ(0, be_init(&be));
	ASSERT_EQ(0, o->queue_create(&be, 0, &q));
	ASSERT_EQ(0, o->host_alloc(&be, MiB, -1, &host));
	ASSERT_EQ(cudaSuccess, cudaMalloc(&dev, MiB));
	ASSERT_EQ(0, o->copy(&be, q, host, dev, MiB));
	/* The copy poisons the context: the device's memory is gone. */
	ASSERT_EQ(-ENOTRECOVERABLE, o->queue_sync(&be, q))
		TH_LOG("%s", last_log);
	ASSERT_NE(NULL, strstr(last_log, "context is dead"));
	/* Every later call says the same, without asking CUDA again. */
	ASSERT_EQ(-ENOTRECOVERABLE, o->copy(&be, q, host, dev, MiB));
	o->host_free(&be, host, MiB);
	o->queue_destroy(&be, q);
	o->fini(&be);
}

TEST(copies_from_pageable_memory_are_refused)
{
	const struct um_backend_ops *o = &um__backend_cuda;
	struct um_queue *q = NULL;
	struct um_backend be;
	void *dev = NULL;
	char *pageable = malloc(MiB);

	ASSERT_NONNULL(pageable);
	memset(pageable, 1, MiB);
	ASSERT_EQ(0, be_init(&be));
	ASSERT_EQ(0, o->queue_create(&be, 0, &q));
	ASSERT_EQ(cudaSuccess, cudaMalloc(&dev, MiB));
	/* On CUDA such a copy is synchronous: never on the engine's queues. */
	ASSERT_EQ(-EFAULT, o->copy(&be, q, dev, pageable, MiB));
	ASSERT_EQ(-EFAULT, o->copy(&be, q, pageable, dev, MiB));
	ASSERT_EQ(0, o->queue_sync(&be, q));
	o->queue_destroy(&be, q);
	o->fini(&be);
	free(pageable);
}

TEST_HARNESS_MAIN
