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

#ifdef UM_HAVE_CUDA

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend.h"

/* ABI version of the driver entry points we ask for (CUDA 12.0). */
#define UMC_DRIVER_ABI 12000
#define UMC_MAX_DEVICES 16

typedef CUresult (*umc_pfn_reserve)(CUdeviceptr *ptr, size_t size,
				    size_t align, CUdeviceptr addr,
				    unsigned long long flags);
typedef CUresult (*umc_pfn_addr_free)(CUdeviceptr ptr, size_t size);
typedef CUresult (*umc_pfn_create)(CUmemGenericAllocationHandle *h,
				   size_t size, const CUmemAllocationProp *prop,
				   unsigned long long flags);
typedef CUresult (*umc_pfn_release)(CUmemGenericAllocationHandle h);
typedef CUresult (*umc_pfn_map)(CUdeviceptr ptr, size_t size, size_t offset,
				CUmemGenericAllocationHandle h,
				unsigned long long flags);
typedef CUresult (*umc_pfn_unmap)(CUdeviceptr ptr, size_t size);
typedef CUresult (*umc_pfn_set_access)(CUdeviceptr ptr, size_t size,
				       const CUmemAccessDesc *desc,
				       size_t count);
typedef CUresult (*umc_pfn_granularity)(size_t *gran,
					const CUmemAllocationProp *prop,
					CUmemAllocationGranularity_flags opt);
typedef CUresult (*umc_pfn_mem_info)(size_t *free_b, size_t *total_b);
typedef CUresult (*umc_pfn_error_string)(CUresult err, const char **str);

struct umc_driver {
	umc_pfn_reserve mem_address_reserve;
	umc_pfn_addr_free mem_address_free;
	umc_pfn_create mem_create;
	umc_pfn_release mem_release;
	umc_pfn_map mem_map;
	umc_pfn_unmap mem_unmap;
	umc_pfn_set_access mem_set_access;
	umc_pfn_granularity mem_get_allocation_granularity;
	umc_pfn_mem_info mem_get_info;
	umc_pfn_error_string get_error_string;	/* may be NULL */
	int vmm_ok;		/* every VMM entry point was found */
};

/* A host allocation pinned by cudaHostRegister (NUMA-placed). */
struct umc_hostreg {
	struct umc_hostreg *next;
	void *p;
	size_t len;
};

struct umc_backend {
	int first_dev;
	int ndev;
	struct umc_driver drv;
	size_t gran[UMC_MAX_DEVICES];	/* recommended VMM granularity */
	size_t gran_max;		/* rounding unit of va_reserve */
	int managed_ok[UMC_MAX_DEVICES];	/* concurrentManagedAccess */
	uint64_t managed_cap;		/* managed bytes we allow at once */
	uint64_t managed_live;
	int numa_ok;			/* libnuma usable */
	pthread_mutex_t lock;		/* hostregs, managed_live */
	struct umc_hostreg *hostregs;
};

struct um_queue {
	cudaStream_t s;
	int dev;
};

struct um_fence {
	cudaEvent_t ev;
};

/* Keeps the caller's current device across a call on another device. */
struct umc_devguard {
	int prev;
	int changed;
};

static inline struct umc_backend *umc(struct um_backend *be)
{
	return (struct umc_backend *)be->priv;
}

/* Error checks: log "call: error string" and return -errno (0 on success). */
int umc_rt_check(struct um_backend *be, cudaError_t e, const char *call);
int umc_drv_check(struct um_backend *be, CUresult r, const char *call);
int umc_rt_errno(cudaError_t e);
int umc_drv_errno(CUresult r);

int umc_dev_enter(struct um_backend *be, int dev, struct umc_devguard *g);
void umc_dev_leave(struct um_backend *be, struct umc_devguard *g);
int umc_dev_valid(struct um_backend *be, int dev);

/* backend_cuda_mem.c: resolves driver entry points and granularities. */
int umc_mem_init(struct um_backend *be);
void umc_mem_fini(struct um_backend *be);

/* Memory ops (backend_cuda_mem.c). */
int umc_host_alloc(struct um_backend *be, size_t len, int node, void **out);
void umc_host_free(struct um_backend *be, void *p, size_t len);
size_t umc_granularity(struct um_backend *be, int dev);
int umc_va_reserve(struct um_backend *be, int dev, size_t len, void **va);
void umc_va_release(struct um_backend *be, void *va, size_t len);
int umc_phys_map(struct um_backend *be, int dev, void *va, size_t len,
		 void **handle);
void umc_phys_unmap(struct um_backend *be, int dev, void *va, size_t len,
		    void *handle);
int umc_managed_alloc(struct um_backend *be, int dev, size_t len, void **out);
void umc_managed_free(struct um_backend *be, void *p, size_t len);
int umc_advise(struct um_backend *be, void *p, size_t len, int advice,
	       um_tier_t where);
int umc_prefetch(struct um_backend *be, struct um_queue *q, void *p,
		 size_t len, um_tier_t where);
int umc_discard(struct um_backend *be, struct um_queue *q, void *p,
		size_t len);

#endif /* UM_HAVE_CUDA */
#endif /* UM_BACKEND_CUDA_H */
