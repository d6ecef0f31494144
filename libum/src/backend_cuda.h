/* SPDX-License-Identifier: MIT */
/*
 * backend_cuda.h - internals shared by the files of the cuda backend.
 *
 * The runtime API comes from the static cudart (libcudart_static.a), so a
 * binary starts on machines without a driver: cudaGetDeviceCount then fails
 * with "driver version is insufficient" and the core falls back to sim. The
 * driver API (virtual-memory calls of the TIERED backing) is never linked:
 * its entry points are fetched at init through
 * cudaGetDriverEntryPointByVersion into the table below, with prototypes we
 * declare ourselves from the types of <cuda.h> (header-only use).
 */
#ifndef UM_BACKEND_CUDA_H
#define UM_BACKEND_CUDA_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend.h"

/* ABI version of the driver entry points we ask for (CUDA 12.0). */
#define UM_CUDA_DRIVER_ABI 12000
#define UM_CUDA_MAX_DEVICES 16

typedef CUresult (*um_cuda_pfn_reserve)(CUdeviceptr *ptr, size_t size,
				    size_t align, CUdeviceptr addr,
				    unsigned long long flags);
typedef CUresult (*um_cuda_pfn_addr_free)(CUdeviceptr ptr, size_t size);
typedef CUresult (*um_cuda_pfn_create)(CUmemGenericAllocationHandle *h,
				   size_t size, const CUmemAllocationProp *prop,
				   unsigned long long flags);
typedef CUresult (*um_cuda_pfn_release)(CUmemGenericAllocationHandle h);
typedef CUresult (*um_cuda_pfn_map)(CUdeviceptr ptr, size_t size, size_t offset,
				CUmemGenericAllocationHandle h,
				unsigned long long flags);
typedef CUresult (*um_cuda_pfn_unmap)(CUdeviceptr ptr, size_t size);
typedef CUresult (*um_cuda_pfn_set_access)(CUdeviceptr ptr, size_t size,
				       const CUmemAccessDesc *desc,
				       size_t count);
typedef CUresult (*um_cuda_pfn_granularity)(size_t *gran,
					const CUmemAllocationProp *prop,
					CUmemAllocationGranularity_flags opt);
typedef CUresult (*um_cuda_pfn_mem_info)(size_t *free_b, size_t *total_b);
typedef CUresult (*um_cuda_pfn_error_string)(CUresult err, const char **str);
typedef CUresult (*um_cuda_pfn_ctx_state)(CUdevice dev, unsigned int *flags,
					  int *active);

struct um_cuda_driver {
	um_cuda_pfn_reserve mem_address_reserve;
	um_cuda_pfn_addr_free mem_address_free;
	um_cuda_pfn_create mem_create;
	um_cuda_pfn_release mem_release;
	um_cuda_pfn_map mem_map;
	um_cuda_pfn_unmap mem_unmap;
	um_cuda_pfn_set_access mem_set_access;
	um_cuda_pfn_granularity mem_get_allocation_granularity;
	um_cuda_pfn_mem_info mem_get_info;
	um_cuda_pfn_error_string get_error_string;	/* may be NULL */
	um_cuda_pfn_ctx_state primary_ctx_state;	/* may be NULL */
	int vmm_ok;		/* every VMM entry point was found */
};

/* A host allocation pinned by cudaHostRegister (NUMA-placed). */
struct um_cuda_hostreg {
	struct um_cuda_hostreg *next;
	void *p;
	size_t len;
};

struct um_cuda_backend {
	int first_dev;
	int ndev;
	struct um_cuda_driver drv;
	size_t gran[UM_CUDA_MAX_DEVICES];	/* recommended VMM granularity */
	size_t gran_max;		/* rounding unit of va_reserve */
	int managed_ok[UM_CUDA_MAX_DEVICES];	/* concurrentManagedAccess */
	/*
	 * Managed bytes we allow at once on each device: what it had free
	 * when libum first made managed memory there (0: not yet known).
	 */
	uint64_t managed_cap[UM_CUDA_MAX_DEVICES];
	uint64_t managed_live[UM_CUDA_MAX_DEVICES];
	struct um_cuda_managed *managed;	/* live allocations */
	int numa_ok;			/* libnuma usable */
	pthread_mutex_t lock;		/* hostregs, managed* */
	struct um_cuda_hostreg *hostregs;
	/*
	 * A sticky error poisoned the context (cudaError_t, 0 if alive):
	 * device memory and work in flight are lost, every call fails.
	 */
	int dead;
};

/* A managed allocation: which device's cap it counts against. */
struct um_cuda_managed {
	struct um_cuda_managed *next;
	void *p;
	size_t len;
	int dev;
};

/*
 * A queue's stream is made on first use, so a device libum never moves
 * data on gets no primary context (each costs device memory).
 */
struct um_queue {
	cudaStream_t s;		/* NULL until first use */
	int dev;
};

/*
 * A fence's event belongs to the device it was last recorded on: CUDA
 * refuses to record an event on another device's stream, so the event is
 * made (again) on the device of the stream it is recorded on.
 */
struct um_fence {
	cudaEvent_t ev;		/* NULL until first recorded */
	int dev;
};

/* Keeps the caller's current device across a call on another device. */
struct um_cuda_devguard {
	int prev;
	int changed;
};

static inline struct um_cuda_backend *cuda_of(struct um_backend *be)
{
	return (struct um_cuda_backend *)be->priv;
}

/* Error checks: log "call: error string" and return -errno (0 on success). */
int um__cuda_rt_check(struct um_backend *be, cudaError_t e, const char *call);
int um__cuda_drv_check(struct um_backend *be, CUresult r, const char *call);
int um__cuda_rt_errno(cudaError_t e);
/* -ENOTRECOVERABLE once a sticky error killed the context, else 0. */
int um__cuda_dead(struct um_backend *be);
/* q's stream, made (with its device's primary context) on first use. */
int um__cuda_queue_stream(struct um_backend *be, struct um_queue *q,
			  cudaStream_t *s);
int um__cuda_drv_errno(CUresult r);

int um__cuda_dev_enter(struct um_backend *be, int dev,
		       struct um_cuda_devguard *g);
void um__cuda_dev_leave(struct um_backend *be, struct um_cuda_devguard *g);
int um__cuda_dev_valid(struct um_backend *be, int dev);

/* backend_cuda_mem.c: resolves driver entry points and granularities. */
int um__cuda_mem_init(struct um_backend *be);
void um__cuda_mem_fini(struct um_backend *be);

/* Memory ops (backend_cuda_mem.c). */
int um__cuda_host_alloc(struct um_backend *be, size_t len, int node,
			void **out);
void um__cuda_host_free(struct um_backend *be, void *p, size_t len);
size_t um__cuda_granularity(struct um_backend *be, int dev);
int um__cuda_va_reserve(struct um_backend *be, int dev, size_t len, void **va);
void um__cuda_va_release(struct um_backend *be, void *va, size_t len);
int um__cuda_phys_map(struct um_backend *be, int dev, void *va, size_t len,
		 void **handle);
void um__cuda_phys_unmap(struct um_backend *be, int dev, void *va, size_t len,
		    void *handle);
int um__cuda_managed_alloc(struct um_backend *be, int dev, size_t len,
			   void **out);
void um__cuda_managed_free(struct um_backend *be, void *p, size_t len);
int um__cuda_advise(struct um_backend *be, void *p, size_t len, int advice,
	       um_tier_t where);
int um__cuda_prefetch(struct um_backend *be, struct um_queue *q, void *p,
		 size_t len, um_tier_t where);
int um__cuda_discard(struct um_backend *be, struct um_queue *q, void *p,
		size_t len);

#endif /* UM_BACKEND_CUDA_H */
