/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the one interface between libum's core and a device backend.
 *
 * A backend does one thing: it talks to a device (or simulates one). Policy,
 * budgets, pools and the migration engine live in the core and only call
 * these operations. Operations that take a queue are asynchronous and ordered
 * on that queue; completion is observed through fences. No operation blocks
 * except fence_wait and queue_sync.
 */
#ifndef UM_BACKEND_H
#define UM_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "um.h"

struct um_backend;
struct um_queue;		/* a copy stream, owned by the backend */
struct um_fence;		/* a point in a queue, with a timestamp */

struct um_backend_config {
	uint64_t sim_capacity;		/* sim: bytes of fake device memory */
	int device;			/* first device to use */
};

struct um_backend_ops {
	enum um_backend_id id;
	const char *name;

	/* > 0 devices usable, 0 none, < 0 -errno; *why explains a refusal. */
	int (*probe)(const char **why);
	int (*init)(struct um_backend *be, const struct um_backend_config *cfg);
	void (*fini)(struct um_backend *be);

	int (*device_count)(struct um_backend *be);
	/* Physical free/total as the device sees it. */
	int (*mem_info)(struct um_backend *be, int dev, uint64_t *free_b,
			uint64_t *total_b);
	/* Size unit of va_reserve/phys_map. */
	size_t (*granularity)(struct um_backend *be, int dev);

	/* Pinned host memory, for pool chunks only (slow: never on a hot path). */
	int (*host_alloc)(struct um_backend *be, size_t len, int node,
			  void **out);
	void (*host_free)(struct um_backend *be, void *p, size_t len);

	/* TIERED backing: stable VA, device memory mapped there on demand. */
	int (*va_reserve)(struct um_backend *be, int dev, size_t len,
			  void **va);
	void (*va_release)(struct um_backend *be, void *va, size_t len);
	/* Create len bytes of device memory and map them at va (whole). */
	int (*phys_map)(struct um_backend *be, int dev, void *va, size_t len,
			void **handle);
	/* Unmap and give the memory back to the device (synchronous). */
	void (*phys_unmap)(struct um_backend *be, int dev, void *va, size_t len,
			   void *handle);

	/* MANAGED backing; NULL where the backend has no managed memory. */
	int (*managed_alloc)(struct um_backend *be, int dev, size_t len,
			     void **out);
	void (*managed_free)(struct um_backend *be, void *p, size_t len);
	int (*advise)(struct um_backend *be, void *p, size_t len, int advice,
		      um_tier_t where);
	int (*prefetch)(struct um_backend *be, struct um_queue *q, void *p,
			size_t len, um_tier_t where);
	/* Drop the contents of managed pages (may be NULL). */
	int (*discard)(struct um_backend *be, struct um_queue *q, void *p,
		       size_t len);

	/* Copy queues. */
	int (*queue_create)(struct um_backend *be, int dev,
			    struct um_queue **q);
	void (*queue_destroy)(struct um_backend *be, struct um_queue *q);
	int (*copy)(struct um_backend *be, struct um_queue *q, void *dst,
		    const void *src, size_t len);
	int (*fill)(struct um_backend *be, struct um_queue *q, void *dst,
		    int byte, size_t len);
	int (*queue_sync)(struct um_backend *be, struct um_queue *q);

	/* Fences: record after prior work on a queue, then query or wait. */
	int (*fence_create)(struct um_backend *be, struct um_fence **f);
	void (*fence_destroy)(struct um_backend *be, struct um_fence *f);
	int (*fence_record)(struct um_backend *be, struct um_fence *f,
			    struct um_queue *q);
	/* 0 reached, -EAGAIN not yet, other -errno: the queue failed. */
	int (*fence_query)(struct um_backend *be, struct um_fence *f);
	int (*fence_wait)(struct um_backend *be, struct um_fence *f);
	/* Device-timed interval between two reached fences. */
	int (*fence_elapsed_ns)(struct um_backend *be, struct um_fence *start,
				struct um_fence *end, uint64_t *ns);
	/* Later work on q waits for f. */
	int (*queue_wait_fence)(struct um_backend *be, struct um_queue *q,
				struct um_fence *f);
	/* Later work on the caller's stream (cudaStream_t or NULL) waits. */
	int (*stream_wait_fence)(struct um_backend *be, void *stream,
				 struct um_fence *f);
	/*
	 * Record f after all work submitted so far to the caller's stream
	 * (cudaStream_t or NULL). um_release() takes no stream, so it records
	 * f on the stream of the acquire: an eviction then waits for the
	 * kernels that still use the region. May be NULL where the caller's
	 * work is synchronous: release is then immediate.
	 */
	int (*stream_record_fence)(struct um_backend *be, void *stream,
				   struct um_fence *f);
	/*
	 * Host NUMA node nearest to device dev (cuda: from its PCI address),
	 * so that host copies go there by default (um_context_create() sets
	 * the context's home node from it); < 0 when unknown. May be NULL
	 * (sim: no real device, no node).
	 */
	int (*device_numa_node)(struct um_backend *be, int dev);
	/*
	 * Once the work submitted to q so far is done, add 1 to the eventfd
	 * fd, from the backend's own completion context (cuda: a
	 * cudaLaunchHostFunc callback, which makes no CUDA call). The engine
	 * uses it so a libum thread reaps an eviction, and gives the device
	 * memory back, without waiting for the next libum call. May be NULL
	 * (sim): memory then comes back at the next call.
	 */
	int (*queue_notify)(struct um_backend *be, struct um_queue *q, int fd);
};

struct um_backend {
	const struct um_backend_ops *ops;
	void *priv;
	/* log through the context: level as enum um_log_level */
	void (*log)(void *log_arg, int level, const char *fmt, ...)
		__attribute__((format(printf, 3, 4)));
	void *log_arg;
};

extern const struct um_backend_ops um__backend_sim;
#ifdef UM_HAVE_CUDA
extern const struct um_backend_ops um__backend_cuda;
#endif
/*
 * The cuda backend's operations: linked in (backend_cuda_builtin.c) or
 * loaded from the plugin (backend_load.c). NULL, with *why, when there is
 * none.
 */
const struct um_backend_ops *um__backend_cuda_ops(const char **why);

#endif /* UM_BACKEND_H */
