/* SPDX-License-Identifier: MIT */
/*
 * engine_vgpu_common.h - helpers of the libum tests that run on the virtual
 * GPU only (they need its fidelity or its read-outs): a context on the
 * cuda backend that logs into a buffer, TIERED regions, a stream gate (a
 * host function that holds a stream until released).
 */
#ifndef UM_TESTS_ENGINE_VGPU_COMMON_H
#define UM_TESTS_ENGINE_VGPU_COMMON_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "um.h"
#include "gpu_util.h"
#include "vgpu.h"
#include "touch.h"

#define EV_MiB (1ull << 20)

static char ev_logbuf[16384];
static pthread_mutex_t ev_logmu = PTHREAD_MUTEX_INITIALIZER;

static void ev_log(void *arg, int level, const char *msg)
{
	size_t n;

	(void)arg;
	printf("# [libum %d] %s\n", level, msg);
	fflush(stdout);
	pthread_mutex_lock(&ev_logmu);
	n = strlen(ev_logbuf);
	snprintf(ev_logbuf + n, sizeof(ev_logbuf) - n, "%s\n", msg);
	pthread_mutex_unlock(&ev_logmu);
}

static inline int ev_ctx(struct um_context **ctx, uint64_t budget)
{
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_CUDA;
	cfg.device_budget = budget;
	cfg.log = ev_log;
	cfg.log_level = UM_LOG_WARN;
	return um_context_create(&cfg, ctx);
}

static inline int ev_region(struct um_context *ctx, uint64_t bytes,
			    uint32_t backing, const char *name,
			    um_region_t *h, void **p)
{
	struct um_region_desc d;
	int ret;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.kind = UM_KIND_OPTIMIZER_STATE;
	d.backing = backing;
	d.bytes = bytes;
	d.name = name;
	ret = um_alloc(ctx, &d, h);
	return ret ? ret : um_ptr(ctx, *h, p);
}

/* A TIERED region of bytes written with salt's pattern on s, released. */
static inline int ev_filled(struct um_context *ctx, void *s, uint64_t bytes,
			    const char *name, uint32_t salt, um_region_t *h,
			    void **p)
{
	int ret = ev_region(ctx, bytes, UM_BACKING_TIERED, name, h, p);

	if (!ret)
		ret = um_acquire(ctx, *h, UM_TIER_GPU(0), s);
	if (!ret)
		ret = gu_fill(*p, bytes, salt, s);
	if (!ret)
		ret = um_release(ctx, *h);
	return ret;
}

/* A stream gate: a host function that holds the stream until opened. */
static sem_t ev_gate;

static void CUDART_CB ev_hold(void *arg)
{
	(void)arg;
	sem_wait(&ev_gate);
}

static inline int ev_gate_close(void *stream)
{
	sem_init(&ev_gate, 0, 0);
	return cudaLaunchHostFunc((cudaStream_t)stream, ev_hold, NULL);
}

static void *ev_open_later(void *arg)
{
	usleep((useconds_t)(uintptr_t)arg);
	sem_post(&ev_gate);
	return NULL;
}

/* Open the gate after us microseconds, from another thread. */
static inline void ev_gate_open_in(unsigned int us, pthread_t *t)
{
	pthread_create(t, NULL, ev_open_later, (void *)(uintptr_t)us);
}

#endif /* UM_TESTS_ENGINE_VGPU_COMMON_H */
