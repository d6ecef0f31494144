// SPDX-License-Identifier: MIT
/*
 * backend_cuda.c - the cuda backend: probe, init, copy queues and fences.
 *
 * Queues are non-blocking CUDA streams (they never serialise with the legacy
 * default stream a trainer may use); fences are CUDA events with timing on,
 * so the engine gets device-timed migration figures. Memory operations
 * (pinned host, TIERED via the driver's virtual-memory API, MANAGED) live in
 * backend_cuda_mem.c. Every CUDA call is checked; a failure is logged with
 * the call's name and cudaGetErrorString and returned as -errno.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "um_numa.h"
#include "util.h"

static void cuda_log(struct um_backend *be, int level, const char *call,
		    const char *what)
{
	if (be && be->log)
		be->log(be->log_arg, level, "cuda: %s: %s", call, what);
}

/*
 * Errors that poison the context (CUDA's "sticky" errors): the process
 * cannot use the device again and device memory contents are lost.
 */
static int cuda_sticky(cudaError_t e)
{
	switch (e) {
	case cudaErrorIllegalAddress:
	case cudaErrorLaunchFailure:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorAssert:
	case cudaErrorLaunchTimeout:
	case cudaErrorECCUncorrectable:
	case cudaErrorContextIsDestroyed:
		return 1;
	default:
		return 0;
	}
}

int um__cuda_rt_errno(cudaError_t e)
{
	if (cuda_sticky(e))
		return -ENOTRECOVERABLE;
	switch (e) {
	case cudaSuccess:
		return 0;
	case cudaErrorMemoryAllocation:
		return -ENOMEM;
	case cudaErrorInvalidValue:
	case cudaErrorInvalidResourceHandle:
		return -EINVAL;
	case cudaErrorNotReady:
		return -EAGAIN;
	case cudaErrorInsufficientDriver:
	case cudaErrorNoDevice:
	case cudaErrorInvalidDevice:
		return -ENODEV;
	case cudaErrorNotSupported:
		return -EOPNOTSUPP;
	case cudaErrorNotPermitted:
		return -EPERM;
	case cudaErrorHostMemoryAlreadyRegistered:
		return -EEXIST;
	default:
		return -EIO;
	}
}

int um__cuda_drv_errno(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return 0;
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
		return -ENOTRECOVERABLE;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return -ENOMEM;
	case CUDA_ERROR_INVALID_VALUE:
	case CUDA_ERROR_INVALID_HANDLE:
		return -EINVAL;
	case CUDA_ERROR_NOT_READY:
		return -EAGAIN;
	case CUDA_ERROR_NO_DEVICE:
	case CUDA_ERROR_INVALID_DEVICE:
		return -ENODEV;
	case CUDA_ERROR_NOT_SUPPORTED:
		return -EOPNOTSUPP;
	case CUDA_ERROR_NOT_PERMITTED:
		return -EPERM;
	default:
		return -EIO;
	}
}

/* Say once, loudly, that the context died: what it held is gone. */
static void cuda_mark_dead(struct um_backend *be, int code, const char *call,
			   const char *what)
{
	struct um_cuda_backend *c = be ? cuda_of(be) : NULL;

	if (!c || __atomic_exchange_n(&c->dead, code, __ATOMIC_SEQ_CST))
		return;
	if (be->log)
		be->log(be->log_arg, UM_LOG_ERR,
			"cuda: %s: %s: context is dead: device memory and the work in flight are lost, every later call fails",
			call, what);
}

int um__cuda_dead(struct um_backend *be)
{
	struct um_cuda_backend *c = be ? cuda_of(be) : NULL;

	return c && __atomic_load_n(&c->dead, __ATOMIC_SEQ_CST) ?
	       -ENOTRECOVERABLE : 0;
}

int um__cuda_rt_check(struct um_backend *be, cudaError_t e, const char *call)
{
	if (e == cudaSuccess)
		return 0;
	/*
	 * Clear the thread's last error so a later, unrelated check does not
	 * see it again (a sticky error stays: every later call reports it).
	 */
	(void)cudaGetLastError();
	if (cuda_sticky(e))
		cuda_mark_dead(be, (int)e, call, cudaGetErrorString(e));
	else
		cuda_log(be, e == cudaErrorNotReady ? UM_LOG_DEBUG : UM_LOG_ERR,
			 call, cudaGetErrorString(e));
	return um__cuda_rt_errno(e);
}

int um__cuda_drv_check(struct um_backend *be, CUresult r, const char *call)
{
	const char *s = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (be && cuda_of(be) && cuda_of(be)->drv.get_error_string &&
	    cuda_of(be)->drv.get_error_string(r, &s) != CUDA_SUCCESS)
		s = NULL;
	if (um__cuda_drv_errno(r) == -ENOTRECOVERABLE)
		cuda_mark_dead(be, (int)r, call, s ? s : "driver error");
	else if (be && be->log)
		be->log(be->log_arg, UM_LOG_ERR, "cuda: %s: %s (CUresult %d)",
			call, s ? s : "driver error", (int)r);
	return um__cuda_drv_errno(r);
}

int um__cuda_dev_valid(struct um_backend *be, int dev)
{
	struct um_cuda_backend *c = cuda_of(be);

	return dev >= 0 && dev < c->ndev && dev < UM_CUDA_MAX_DEVICES;
}

/*
 * Make dev current on this thread for the next calls. cudaSetDevice also
 * initialises the device's primary context and makes it current (CUDA 12+),
 * which the driver-API calls of the TIERED backing need on threads that made
 * no runtime call yet (the engine's and the pool grower's).
 */
int um__cuda_dev_enter(struct um_backend *be, int dev,
		       struct um_cuda_devguard *g)
{
	int ret;

	g->prev = -1;
	g->changed = 0;
	if (!um__cuda_dev_valid(be, dev)) {
		if (be && be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: device %d out of range (%d devices)",
				dev, cuda_of(be)->ndev);
		return -ENODEV;
	}
	ret = um__cuda_rt_check(be, cudaGetDevice(&g->prev), "cudaGetDevice");
	if (ret)
		return ret;
	ret = um__cuda_rt_check(be, cudaSetDevice(dev), "cudaSetDevice");
	if (ret)
		return ret;
	g->changed = g->prev != dev;
	return 0;
}

void um__cuda_dev_leave(struct um_backend *be, struct um_cuda_devguard *g)
{
	if (g->changed)
		(void)um__cuda_rt_check(be, cudaSetDevice(g->prev),
				   "cudaSetDevice(restore)");
	g->changed = 0;
}

/* ---- probe, init ------------------------------------------------------ */

/*
 * "CUDA driver version is insufficient for CUDA runtime version" is what
 * the runtime says with no driver at all (the toolkit installed, no GPU):
 * cudaDriverGetVersion() gives 0 then, and the two cases are told apart.
 */
static const char *cuda_driver_why(cudaError_t e)
{
	static _Thread_local char buf[192];
	int drv = 0, rt = 0;

	if (e != cudaErrorInsufficientDriver)
		return cudaGetErrorString(e);
	if (cudaDriverGetVersion(&drv) != cudaSuccess || drv == 0)
		return "no NVIDIA driver is installed (the CUDA runtime needs the kernel driver and libcuda.so.1)";
	(void)cudaRuntimeGetVersion(&rt);
	snprintf(buf, sizeof(buf),
		 "the NVIDIA driver supports CUDA %d.%d, older than the CUDA %d.%d runtime libum was built with",
		 drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10);
	return buf;
}

static int cuda_probe(const char **why)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		(void)cudaGetLastError();
		if (why)
			*why = cuda_driver_why(e);
		return 0;
	}
	if (n <= 0) {
		if (why)
			*why = "no CUDA device";
		return 0;
	}
	return n;
}

static int cuda_init(struct um_backend *be, const struct um_backend_config *cfg)
{
	struct um_cuda_devguard g;
	struct um_cuda_backend *c;
	const char *why = NULL;
	int n, ret;

	n = cuda_probe(&why);
	if (n <= 0) {
		cuda_log(be, UM_LOG_WARN, "cudaGetDeviceCount",
			why ? why : "no device");
		return -ENODEV;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->ndev = n < UM_CUDA_MAX_DEVICES ? n : UM_CUDA_MAX_DEVICES;
	c->first_dev = cfg ? cfg->device : 0;
	if (pthread_mutex_init(&c->lock, NULL)) {
		free(c);
		return -ENOMEM;
	}
	be->priv = c;
	if (c->first_dev < 0 || c->first_dev >= c->ndev) {
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: device %d out of range (%d devices)",
				c->first_dev, c->ndev);
		ret = -ENODEV;
		goto err_priv;
	}
	ret = um__cuda_dev_enter(be, c->first_dev, &g);
	if (ret)
		goto err_priv;
	/* Create the primary context now, not inside the first migration. */
	ret = um__cuda_rt_check(be, cudaFree(NULL), "cudaFree(NULL)");
	if (!ret)
		ret = um__cuda_mem_init(be);
	um__cuda_dev_leave(be, &g);
	if (ret)
		goto err_priv;
	return 0;

err_priv:
	pthread_mutex_destroy(&c->lock);
	free(c);
	be->priv = NULL;
	return ret;
}

static void cuda_fini(struct um_backend *be)
{
	struct um_cuda_backend *c = cuda_of(be);

	if (!c)
		return;
	um__cuda_mem_fini(be);
	pthread_mutex_destroy(&c->lock);
	free(c);
	be->priv = NULL;
}

static int cuda_device_count(struct um_backend *be)
{
	return cuda_of(be)->ndev;
}

/* 1 when dev's primary context exists (made by us or by the trainer). */
static int cuda_ctx_active(struct um_backend *be, int dev)
{
	struct um_cuda_driver *d = &cuda_of(be)->drv;
	unsigned int flags = 0;
	int active = 1;

	if (d->primary_ctx_state &&
	    d->primary_ctx_state((CUdevice)dev, &flags, &active) != CUDA_SUCCESS)
		active = 1;	/* unknown: ask the device itself */
	return active;
}

/*
 * cudaMemGetInfo needs the device's primary context, which costs device
 * memory: a device without one yet reports its total as free (nothing of
 * this process is there) instead of getting a context it may never use.
 */
static int cuda_mem_info(struct um_backend *be, int dev, uint64_t *free_b,
			 uint64_t *total_b)
{
	struct um_cuda_devguard g;
	struct cudaDeviceProp prop;
	size_t f = 0, t = 0;
	int ret;

	if (!um__cuda_dev_valid(be, dev))
		return um__cuda_dev_enter(be, dev, &g);	/* logs, -ENODEV */
	if (!cuda_ctx_active(be, dev)) {
		ret = um__cuda_rt_check(be, cudaGetDeviceProperties(&prop, dev),
					"cudaGetDeviceProperties");
		f = t = prop.totalGlobalMem;
	} else {
		ret = um__cuda_dev_enter(be, dev, &g);
		if (ret)
			return ret;
		ret = um__cuda_rt_check(be, cudaMemGetInfo(&f, &t),
					"cudaMemGetInfo");
		um__cuda_dev_leave(be, &g);
	}
	if (ret)
		return ret;
	if (free_b)
		*free_b = f;
	if (total_b)
		*total_b = t;
	return 0;
}

/* ---- queues ----------------------------------------------------------- */

/* The engine makes queues on every device; streams wait for first use. */
static int cuda_queue_create(struct um_backend *be, int dev,
			     struct um_queue **out)
{
	struct um_queue *q;

	if (!out)
		return -EINVAL;
	if (!um__cuda_dev_valid(be, dev))
		return -ENODEV;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->dev = dev;
	*out = q;
	return 0;
}

/* q's stream, made now if this is its first use (with its context). */
int um__cuda_queue_stream(struct um_backend *be, struct um_queue *q,
			  cudaStream_t *s)
{
	struct um_cuda_devguard g;
	cudaStream_t made = NULL;
	int ret = um__cuda_dead(be);

	if (ret)
		return ret;
	*s = __atomic_load_n(&q->s, __ATOMIC_ACQUIRE);
	if (*s)
		return 0;
	ret = um__cuda_dev_enter(be, q->dev, &g);
	if (ret)
		return ret;
	ret = um__cuda_rt_check(be, cudaStreamCreateWithFlags(&made,
				cudaStreamNonBlocking),
			   "cudaStreamCreateWithFlags");
	um__cuda_dev_leave(be, &g);
	if (ret)
		return ret;
	/* Two threads raced to make it: keep the first, drop ours. */
	if (!__atomic_compare_exchange_n(&q->s, s, made, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		(void)cudaStreamDestroy(made);
		return 0;
	}
	*s = made;
	return 0;
}

static void cuda_queue_destroy(struct um_backend *be, struct um_queue *q)
{
	if (!q)
		return;
	/* Destroy returns at once; pending work still completes first. */
	if (q->s)
		(void)um__cuda_rt_check(be, cudaStreamDestroy(q->s),
					"cudaStreamDestroy");
	free(q);
}

/* Kind of a copy from the pointers, for when the runtime cannot infer it. */
static enum cudaMemcpyKind cuda_copy_kind(const void *dst, const void *src)
{
	struct cudaPointerAttributes a;
	int dst_dev = 0, src_dev = 0;

	if (cudaPointerGetAttributes(&a, dst) == cudaSuccess)
		dst_dev = a.type == cudaMemoryTypeDevice ||
			  a.type == cudaMemoryTypeManaged;
	else
		(void)cudaGetLastError();
	if (cudaPointerGetAttributes(&a, src) == cudaSuccess)
		src_dev = a.type == cudaMemoryTypeDevice ||
			  a.type == cudaMemoryTypeManaged;
	else
		(void)cudaGetLastError();
	if (dst_dev && src_dev)
		return cudaMemcpyDeviceToDevice;
	if (dst_dev)
		return cudaMemcpyHostToDevice;
	if (src_dev)
		return cudaMemcpyDeviceToHost;
	return cudaMemcpyHostToHost;
}

/* 1 when p is memory CUDA does not know: pageable host memory. */
static int cuda_pageable(const void *p)
{
	struct cudaPointerAttributes a;

	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		(void)cudaGetLastError();
		return 0;	/* let the copy itself say what is wrong */
	}
	return a.type == cudaMemoryTypeUnregistered;
}

static int cuda_copy(struct um_backend *be, struct um_queue *q, void *dst,
		     const void *src, size_t len)
{
	cudaStream_t s;
	cudaError_t e;
	int ret;

	if (!q || !dst || !src)
		return -EINVAL;
	if (!len)
		return 0;
	ret = um__cuda_queue_stream(be, q, &s);
	if (ret)
		return ret;
	/*
	 * A copy from or to pageable memory is synchronous on CUDA (staged
	 * through the driver's own buffers at a fraction of link speed):
	 * the engine's copies must be between device and pinned memory.
	 */
	if (cuda_pageable(dst) || cuda_pageable(src)) {
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: copy of %s %p -> %p refused: %s is pageable host memory (the copy would be synchronous)",
				UM_SIZE(len), src, dst,
				cuda_pageable(src) ? "the source" :
						     "the destination");
		return -EFAULT;
	}
	/*
	 * Every pointer we copy between is in the unified address space
	 * (pinned host, managed, VMM mappings), so the runtime infers the
	 * direction. Should it refuse, name the direction ourselves once.
	 */
	e = cudaMemcpyAsync(dst, src, len, cudaMemcpyDefault, s);
	if (e == cudaErrorInvalidValue) {
		(void)cudaGetLastError();
		e = cudaMemcpyAsync(dst, src, len, cuda_copy_kind(dst, src),
				    s);
	}
	return um__cuda_rt_check(be, e, "cudaMemcpyAsync");
}

static int cuda_fill(struct um_backend *be, struct um_queue *q, void *dst,
		    int byte, size_t len)
{
	struct cudaPointerAttributes a;
	cudaStream_t s;
	cudaError_t e;
	int ret;

	if (!q || !dst)
		return -EINVAL;
	if (!len)
		return 0;
	ret = um__cuda_queue_stream(be, q, &s);
	if (ret)
		return ret;
	e = cudaMemsetAsync(dst, byte, len, s);
	if (e != cudaErrorInvalidValue)
		return um__cuda_rt_check(be, e, "cudaMemsetAsync");
	(void)cudaGetLastError();
	/*
	 * Plain host memory the device cannot write: order after the queue's
	 * work and set it from the CPU (only small, cold paths get here).
	 */
	if (cudaPointerGetAttributes(&a, dst) != cudaSuccess) {
		(void)cudaGetLastError();
		a.type = cudaMemoryTypeUnregistered;
	}
	if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged)
		return um__cuda_rt_check(be, e, "cudaMemsetAsync");
	ret = um__cuda_rt_check(be, cudaStreamSynchronize(s),
			   "cudaStreamSynchronize");
	if (ret)
		return ret;
	memset(dst, byte, len);
	return 0;
}

/* Runs on CUDA's callback thread: no CUDA call here, only the write. */
static void CUDART_CB cuda_notify_cb(void *arg)
{
	uint64_t one = 1;
	ssize_t n = write((int)(intptr_t)arg, &one, sizeof(one));

	(void)n;	/* a full counter still wakes the reader */
}

static int cuda_queue_notify(struct um_backend *be, struct um_queue *q,
			     int fd)
{
	cudaStream_t s;
	int ret;

	if (!q || fd < 0)
		return -EINVAL;
	ret = um__cuda_queue_stream(be, q, &s);
	if (ret)
		return ret;
	return um__cuda_rt_check(be, cudaLaunchHostFunc(s, cuda_notify_cb,
							(void *)(intptr_t)fd),
				 "cudaLaunchHostFunc");
}

static int cuda_queue_sync(struct um_backend *be, struct um_queue *q)
{
	int ret;

	if (!q)
		return -EINVAL;
	ret = um__cuda_dead(be);
	if (ret || !q->s)	/* never used: nothing to wait for */
		return ret;
	return um__cuda_rt_check(be, cudaStreamSynchronize(q->s),
			    "cudaStreamSynchronize");
}

/* ---- fences ----------------------------------------------------------- */

static int cuda_fence_create(struct um_backend *be, struct um_fence **out)
{
	struct um_fence *f;

	if (!out)
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->dev = -1;	/* its event is made on the device it is recorded on */
	*out = f;
	return 0;
}

/*
 * Make f's event belong to dev. Destroying the old one is safe even while
 * waits on its last record are queued: CUDA releases it once it completed.
 * Timing on: migrations are measured by the device, not the host.
 */
static int cuda_fence_on(struct um_backend *be, struct um_fence *f, int dev)
{
	struct um_cuda_devguard g;
	cudaEvent_t ev = NULL;
	int ret;

	if (f->ev && f->dev == dev)
		return 0;
	ret = um__cuda_dev_enter(be, dev, &g);
	if (ret)
		return ret;
	ret = um__cuda_rt_check(be, cudaEventCreateWithFlags(&ev,
				cudaEventDefault),
			   "cudaEventCreateWithFlags");
	um__cuda_dev_leave(be, &g);
	if (ret)
		return ret;
	if (f->ev)
		(void)um__cuda_rt_check(be, cudaEventDestroy(f->ev),
					"cudaEventDestroy");
	f->ev = ev;
	f->dev = dev;
	return 0;
}

static void cuda_fence_destroy(struct um_backend *be, struct um_fence *f)
{
	if (!f)
		return;
	if (f->ev)
		(void)um__cuda_rt_check(be, cudaEventDestroy(f->ev),
					"cudaEventDestroy");
	free(f);
}

static int cuda_fence_record(struct um_backend *be, struct um_fence *f,
			     struct um_queue *q)
{
	cudaStream_t s;
	int ret;

	if (!f || !q)
		return -EINVAL;
	ret = um__cuda_queue_stream(be, q, &s);
	if (!ret)
		ret = cuda_fence_on(be, f, q->dev);
	if (ret)
		return ret;
	return um__cuda_rt_check(be, cudaEventRecord(f->ev, s),
				 "cudaEventRecord");
}

/* A fence never recorded is complete, as a CUDA event never recorded is. */
static int cuda_fence_query(struct um_backend *be, struct um_fence *f)
{
	cudaError_t e;
	int ret;

	if (!f)
		return -EINVAL;
	ret = um__cuda_dead(be);
	if (ret || !f->ev)
		return ret;
	e = cudaEventQuery(f->ev);
	if (e == cudaErrorNotReady) {
		(void)cudaGetLastError();
		return -EAGAIN;
	}
	return um__cuda_rt_check(be, e, "cudaEventQuery");
}

static int cuda_fence_wait(struct um_backend *be, struct um_fence *f)
{
	int ret;

	if (!f)
		return -EINVAL;
	ret = um__cuda_dead(be);
	if (ret || !f->ev)
		return ret;
	return um__cuda_rt_check(be, cudaEventSynchronize(f->ev),
				 "cudaEventSynchronize");
}

static int cuda_fence_elapsed_ns(struct um_backend *be, struct um_fence *start,
				 struct um_fence *end, uint64_t *ns)
{
	cudaError_t e;
	float ms = 0;

	if (!start || !end || !ns || !start->ev || !end->ev ||
	    start->dev != end->dev)
		return -EINVAL;
	e = cudaEventElapsedTime(&ms, start->ev, end->ev);
	if (e == cudaErrorNotReady) {
		(void)cudaGetLastError();
		return -EAGAIN;
	}
	if (e != cudaSuccess)
		return um__cuda_rt_check(be, e, "cudaEventElapsedTime");
	/* Events on different queues can land in either order. */
	*ns = ms > 0 ? (uint64_t)((double)ms * 1e6) : 0;
	return 0;
}

/* Waiting across devices is legal in CUDA: only recording is not. */
static int cuda_queue_wait_fence(struct um_backend *be, struct um_queue *q,
				 struct um_fence *f)
{
	cudaStream_t s;
	int ret;

	if (!q || !f)
		return -EINVAL;
	ret = um__cuda_queue_stream(be, q, &s);
	if (ret || !f->ev)
		return ret;
	return um__cuda_rt_check(be, cudaStreamWaitEvent(s, f->ev, 0),
				 "cudaStreamWaitEvent");
}

static int cuda_stream_wait_fence(struct um_backend *be, void *stream,
				  struct um_fence *f)
{
	int ret;

	if (!f)
		return -EINVAL;
	ret = um__cuda_dead(be);
	if (ret || !f->ev)
		return ret;
	/* NULL is the caller's legacy default stream; that is what it means. */
	return um__cuda_rt_check(be, cudaStreamWaitEvent((cudaStream_t)stream,
							 f->ev, 0),
				 "cudaStreamWaitEvent(caller stream)");
}

/*
 * At um_release: a point on the caller's stream after every kernel that may
 * still use the region, for the eviction to wait on. The event is made on
 * the stream's device (NULL: the calling thread's current device).
 * cudaStreamWaitEvent waits for the record current when it is called, so
 * re-recording the same event at the next release does not disturb
 * evictions already queued.
 */
static int cuda_stream_record_fence(struct um_backend *be, void *stream,
				    struct um_fence *f)
{
	int dev = 0, ret;

	if (!f)
		return -EINVAL;
	ret = um__cuda_dead(be);
	if (ret)
		return ret;
	ret = um__cuda_rt_check(be, cudaStreamGetDevice((cudaStream_t)stream,
							&dev),
				"cudaStreamGetDevice(caller stream)");
	if (!ret)
		ret = cuda_fence_on(be, f, dev);
	if (ret)
		return ret;
	return um__cuda_rt_check(be, cudaEventRecord(f->ev,
						      (cudaStream_t)stream),
				 "cudaEventRecord(caller stream)");
}

/*
 * The GPU's host NUMA node, from its PCI address in sysfs: the runtime's
 * own attribute (cudaDevAttrHostNumaId) is newer than some drivers we run
 * on, and sysfs is what the kernel itself uses for the device.
 */
static int cuda_device_numa_node(struct um_backend *be, int dev)
{
	char bdf[32];
	int ret;

	if (dev < 0 || dev >= cuda_of(be)->ndev)
		return -EINVAL;
	ret = um__cuda_rt_check(be, cudaDeviceGetPCIBusId(bdf, sizeof(bdf), dev),
			   "cudaDeviceGetPCIBusId");
	if (ret)
		return ret;
	return um__numa_pci_node(bdf);
}

const struct um_backend_ops um__backend_cuda = {
	.id = UM_BACKEND_CUDA,
	.name = "cuda",
	.probe = cuda_probe,
	.init = cuda_init,
	.fini = cuda_fini,
	.device_count = cuda_device_count,
	.mem_info = cuda_mem_info,
	.granularity = um__cuda_granularity,
	.host_alloc = um__cuda_host_alloc,
	.host_free = um__cuda_host_free,
	.va_reserve = um__cuda_va_reserve,
	.va_release = um__cuda_va_release,
	.phys_map = um__cuda_phys_map,
	.phys_unmap = um__cuda_phys_unmap,
	.managed_alloc = um__cuda_managed_alloc,
	.managed_free = um__cuda_managed_free,
	.advise = um__cuda_advise,
	.prefetch = um__cuda_prefetch,
	.discard = um__cuda_discard,
	.queue_create = cuda_queue_create,
	.queue_destroy = cuda_queue_destroy,
	.copy = cuda_copy,
	.fill = cuda_fill,
	.queue_sync = cuda_queue_sync,
	.fence_create = cuda_fence_create,
	.fence_destroy = cuda_fence_destroy,
	.fence_record = cuda_fence_record,
	.fence_query = cuda_fence_query,
	.fence_wait = cuda_fence_wait,
	.fence_elapsed_ns = cuda_fence_elapsed_ns,
	.queue_wait_fence = cuda_queue_wait_fence,
	.stream_wait_fence = cuda_stream_wait_fence,
	.stream_record_fence = cuda_stream_record_fence,
	.device_numa_node = cuda_device_numa_node,
	.queue_notify = cuda_queue_notify,
};
