/* SPDX-License-Identifier: MIT */
/*
 * vgpu_int.h - internals of the virtual GPU, shared by its files:
 *   vgpu_core.c    devices, configuration, errors, contexts, the clock
 *   vgpu_stream.c  streams (FIFOs run by worker threads), events, waits
 *   vgpu_mem.c     the address map, allocations, managed memory, VMM
 *   vgpu_ops.c     copies, memset, prefetch, discard, kernels: what the
 *                  workers execute and what it costs on the virtual clock
 *
 * Locking: vg.mu guards everything but the bytes; vg.cv is broadcast
 * whenever an operation completes. vg.maplock (read) is held by a worker
 * while it touches device memory through the private view, (write) by
 * whatever changes the address map, so memory never disappears under a copy.
 */
#ifndef UM_TESTS_VGPU_INT_H
#define UM_TESTS_VGPU_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "vgpu.h"

#define VG_MAX_DEV 8
#define VG_GRAN (2ull << 20)
#define VG_PAGE 4096ull

/* The link and the device, on the virtual clock (bytes per ns = GB/s). */
struct vg_model {
	double h2d, d2h, both;	/* pinned copies; both = total, both ways */
	double pageable;	/* copies from/to pageable memory, synchronous */
	double pf_h2d, pf_d2h;	/* managed prefetch */
	double fault;		/* a kernel faulting managed pages in */
	double hbm;		/* kernels and device-to-device copies */
	double host_alloc_ns_per_gib, host_alloc_ns; /* cudaHostAlloc */
	double host_reg_ns_per_mib;	/* cudaHostRegister */
	double set_access_ns;		/* cuMemSetAccess, per call */
	int map_waits;		/* cuMemMap/SetAccess wait for the device */
};

enum vg_dir { VG_H2D, VG_D2H, VG_NDIR };

/* Busy intervals of one copy engine, in issue order (they never overlap). */
struct vg_busy {
	double *s, *e;
	size_t n, cap, first;
};

struct vg_dev {
	uint64_t total, used;
	int ctx;			/* primary context made */
	cudaError_t sticky;		/* poisoned context: every call fails */
	struct vg_busy eng[VG_NDIR];
	struct CUstream_st *legacy;	/* the NULL stream, made on first use */
};

/* A point on a stream: done once the worker passed it. */
struct vg_mark {
	int refs;
	int done;
	double t;		/* virtual time, ns */
	int dev;
};

enum vg_op_type {
	VG_OP_RECORD, VG_OP_WAIT, VG_OP_COPY, VG_OP_MEMSET, VG_OP_PREFETCH,
	VG_OP_DISCARD, VG_OP_KERNEL, VG_OP_HOSTFN
};

struct vg_op {
	struct vg_op *next;
	enum vg_op_type type;
	struct vg_mark *mark;		/* RECORD: reached; WAIT: awaited */
	void *dst;
	const void *src;
	size_t n;
	int byte;			/* MEMSET */
	int to_dev;			/* PREFETCH */
	int (*kfn)(void *);		/* KERNEL */
	cudaHostFn_t hfn;		/* HOSTFN */
	void *arg;			/* KERNEL (owned) or HOSTFN */
	struct vgpu_range r[VGPU_MAX_RANGES];
	int nr;
	const char *what;
	double t_end;			/* on the virtual clock */
};

struct CUstream_st {
	int magic;			/* VG_STREAM_MAGIC while valid */
	int dev;
	struct vg_op *head, *tail;
	uint64_t queued, done;		/* operations counted */
	double vtail;			/* virtual time its last op ends */
	int dying;			/* destroyed: drain, then exit */
	pthread_t thread;
	struct CUstream_st *next;	/* every stream ever made, for scans */
};

struct CUevent_st {
	int magic;
	int dev;
	unsigned flags;
	struct vg_mark *last;		/* the latest record */
};

/* An address range the vGPU knows. */
enum vg_kind {
	VG_K_DEVICE = 1,	/* cudaMalloc */
	VG_K_MANAGED,		/* cudaMallocManaged */
	VG_K_VMM,		/* cuMemMap'ed piece of a reservation */
	VG_K_HOSTALLOC,		/* cudaHostAlloc */
	VG_K_HOSTREG,		/* cudaHostRegister */
};

struct vg_phys;

struct vg_map {
	struct vg_map *next;
	uintptr_t base;
	size_t len;
	enum vg_kind kind;
	int dev;
	char *alias;		/* workers' view (device kinds) */
	int fd;
	int access;		/* VMM: cuMemSetAccess done */
	uint8_t *plan;		/* managed: page on device, as issued */
	uint8_t *live;		/* managed: page on device, as executed */
	struct vg_phys *phys;	/* VMM */
};

/* A reservation of cuMemAddressReserve, with its private view. */
struct vg_va {
	struct vg_va *next;
	uintptr_t base;
	size_t len;
	char *alias;
};

struct vg_phys {
	int magic;
	int dev;
	size_t len;
	int fd;
	int maps;		/* live cuMemMap's of it */
	int released;
};

struct vg_state {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_rwlock_t maplock;
	int inited, ndev, no_driver;
	struct vg_dev dev[VG_MAX_DEV];
	struct vg_model m;
	double host_now;		/* ns */
	struct CUstream_st *streams;
	struct vg_map *maps;
	struct vg_va *vas;
	uint64_t copies_run, sticky_after;	/* injection */
	uint64_t dev_allocs, oom_at;		/* injection */
	uint64_t host_alloc_calls;
	uint64_t ctx_bytes;
};

extern struct vg_state vg;
extern __thread int vg_in_callback;	/* running a cudaLaunchHostFunc */

#define VG_STREAM_MAGIC 0x5743
#define VG_EVENT_MAGIC 0xe7e7
#define VG_PHYS_MAGIC 0x9411

/* vgpu_core.c */
void vg_init(void);			/* idempotent; exits on a bad env */
cudaError_t vg_fail(cudaError_t e);	/* sets the thread's last error */
cudaError_t vg_enter(int *dev);		/* current device, context made */
cudaError_t vg_check_dev(int dev);	/* sticky error of dev, or success */
void vg_make_sticky(int dev, const char *why);
void vg_advance_host(double t);		/* vg.mu held */
double vg_max(double a, double b);
int vg_cur_dev(void);
void vg_set_cur_dev(int dev);
int vg_thread_ctx(void);		/* device whose context is current */

/* vgpu_stream.c */
cudaError_t vg_stream_get(cudaStream_t s, int dev, struct CUstream_st **out);
cudaError_t vg_stream_enter(cudaStream_t sh, struct CUstream_st **out);
double vg_stream_start(struct CUstream_st *s);	/* vg.mu held */
void vg_stream_push(struct CUstream_st *s, struct vg_op *op,
		    double t_end);			/* vg.mu held */
void vg_stream_drain(struct CUstream_st *s);		/* vg.mu held */
void vg_device_drain(int dev);				/* vg.mu held */
void vg_mark_put(struct vg_mark *m);			/* vg.mu held */
const struct vg_op *vg_inflight_user(uintptr_t lo, uintptr_t hi,
				     struct CUstream_st **on); /* vg.mu held */

/* vgpu_mem.c */
struct vg_map *vg_find(uintptr_t p, size_t len);	/* vg.mu held */
int vg_in_reservation(uintptr_t p);			/* vg.mu held */
void *vg_resolve(const void *p, size_t len, int dev);	/* maplock held */
int vg_take(int dev, uint64_t len);			/* vg.mu held */
void vg_give(int dev, uint64_t len);			/* vg.mu held */
void vg_managed_set(struct vg_map *m, uintptr_t lo, uintptr_t hi,
		    int on_dev);			/* maplock write */
CUresult vg_drv_mem_info(size_t *f, size_t *t);
CUresult vg_drv_ctx_state(CUdevice dev, unsigned int *flags, int *active);

/* vgpu_ops.c */
void vg_op_run(struct CUstream_st *s, struct vg_op *op);
double vg_engine_time(int dev, enum vg_dir d, double t0, double bytes);

#endif /* UM_TESTS_VGPU_INT_H */
