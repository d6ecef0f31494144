// SPDX-License-Identifier: MIT
/*
 * cudart_mock.c - a stand-in for the CUDA runtime and for the driver's
 * virtual-memory entry points, on the CPU, so that the cuda backend, libum's
 * engine on top of it, the GPU tests and umbench --gpu run end to end on
 * machines without a GPU (tests/gpu `make check`, "mock" programs).
 *
 * What it models, because that is what the code under test depends on:
 *   - device memory as a budget: cudaMalloc and cuMemCreate take from
 *     UM_MOCK_GPU_BYTES (default 8 GiB) and cudaMemGetInfo/cuMemGetInfo
 *     report what is left; cuMemRelease gives it back;
 *   - VMM for real: cuMemAddressReserve reserves PROT_NONE address space,
 *     cuMemMap + cuMemSetAccess make it readable and writable, cuMemUnmap
 *     drops the pages (their content is gone, as on a GPU), granularity and
 *     alignment rules are checked;
 *   - cudaMemDiscardBatchAsync scribbles over the range, so code that reads
 *     discarded bytes sees garbage as it would on a GPU;
 *   - error codes, cudaGetLastError, cudaGetErrorString.
 * What it does not model: asynchrony (every operation completes when it is
 * called, events are reached at once) and device code (kernels are replaced
 * by host loops in kern_mock.c and bench_kern_mock.cpp).
 * UM_MOCK_NO_GPU=1 makes cudaGetDeviceCount fail like a machine without a
 * driver.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define MOCK_GRAN (2ull << 20)

/* Tests look for it (weak) to leave timing checks out: nothing is timed here. */
int um_cudart_mock = 1;

static pthread_mutex_t mock_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread cudaError_t mock_last;
static uint64_t mock_total, mock_used;
static int mock_dev;

struct mock_alloc {
	struct mock_alloc *next;
	void *p;
	size_t len;
	enum cudaMemoryType type;
	int registered;		/* cudaHostRegister: not ours to free */
};

static struct mock_alloc *allocs;

static cudaError_t fail(cudaError_t e)
{
	mock_last = e;
	return e;
}

static void mock_init(void)
{
	const char *s;

	if (mock_total)
		return;
	s = getenv("UM_MOCK_GPU_BYTES");
	mock_total = s ? strtoull(s, NULL, 0) : 8ull << 30;
	if (!mock_total)
		mock_total = 8ull << 30;
}

static int take(uint64_t len)
{
	int ok;

	pthread_mutex_lock(&mock_lock);
	mock_init();
	ok = mock_used + len <= mock_total;
	if (ok)
		mock_used += len;
	pthread_mutex_unlock(&mock_lock);
	return ok;
}

static void give(uint64_t len)
{
	pthread_mutex_lock(&mock_lock);
	mock_used = mock_used > len ? mock_used - len : 0;
	pthread_mutex_unlock(&mock_lock);
}

static void track(void *p, size_t len, enum cudaMemoryType type, int reg)
{
	struct mock_alloc *a = calloc(1, sizeof(*a));

	if (!a)
		abort();
	a->p = p;
	a->len = len;
	a->type = type;
	a->registered = reg;
	pthread_mutex_lock(&mock_lock);
	a->next = allocs;
	allocs = a;
	pthread_mutex_unlock(&mock_lock);
}

static struct mock_alloc *untrack(const void *p)
{
	struct mock_alloc **pp, *a = NULL;

	pthread_mutex_lock(&mock_lock);
	for (pp = &allocs; *pp; pp = &(*pp)->next) {
		if ((*pp)->p == p) {
			a = *pp;
			*pp = a->next;
			break;
		}
	}
	pthread_mutex_unlock(&mock_lock);
	return a;
}

/* Address ranges of VMM reservations, for cudaPointerGetAttributes. */
struct mock_va {
	struct mock_va *next;
	uintptr_t base;
	size_t len;
};

static struct mock_va *vas;

static enum cudaMemoryType lookup(const void *p)
{
	enum cudaMemoryType t = cudaMemoryTypeUnregistered;
	uintptr_t x = (uintptr_t)p;

	pthread_mutex_lock(&mock_lock);
	for (struct mock_alloc *a = allocs; a; a = a->next)
		if (x >= (uintptr_t)a->p && x < (uintptr_t)a->p + a->len)
			t = a->type;
	for (struct mock_va *v = vas; v; v = v->next)
		if (x >= v->base && x < v->base + v->len)
			t = cudaMemoryTypeDevice;
	pthread_mutex_unlock(&mock_lock);
	return t;
}

/* ---- errors, devices ---------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = mock_last;

	mock_last = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return mock_last;
}

const char *cudaGetErrorString(cudaError_t e)
{
	switch (e) {
	case cudaSuccess: return "no error";
	case cudaErrorInvalidValue: return "invalid argument";
	case cudaErrorMemoryAllocation: return "out of memory";
	case cudaErrorInsufficientDriver:
		return "CUDA driver version is insufficient for CUDA runtime version";
	case cudaErrorInvalidDevice: return "invalid device ordinal";
	case cudaErrorNotReady: return "device not ready";
	case cudaErrorInvalidResourceHandle: return "invalid resource handle";
	default: return "mock error";
	}
}

cudaError_t cudaGetDeviceCount(int *n)
{
	const char *s = getenv("UM_MOCK_NO_GPU");

	if (s && *s && strcmp(s, "0")) {
		*n = 0;
		return fail(cudaErrorInsufficientDriver);
	}
	*n = 1;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
	if (d != 0)
		return fail(cudaErrorInvalidDevice);
	mock_dev = d;
	return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
	*d = mock_dev;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int dev)
{
	if (dev != 0)
		return fail(cudaErrorInvalidDevice);
	*v = a == cudaDevAttrConcurrentManagedAccess ? 1 : 0;
	return cudaSuccess;
}

/* a PCI address sysfs will not know: the backend then falls back */
cudaError_t cudaDeviceGetPCIBusId(char *bdf, int len, int dev)
{
	if (dev != 0)
		return fail(cudaErrorInvalidDevice);
	if (!bdf || len < 13)
		return fail(cudaErrorInvalidValue);
	snprintf(bdf, (size_t)len, "0000:FE:1F.7");
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
	if (dev != 0)
		return fail(cudaErrorInvalidDevice);
	mock_init();
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "mock GPU (cudart_mock.c)");
	p->totalGlobalMem = mock_total;
	p->major = 9;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
	*v = 13000;
	return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
	*v = 13000;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
	pthread_mutex_lock(&mock_lock);
	mock_init();
	*f = mock_total - mock_used;
	*t = mock_total;
	pthread_mutex_unlock(&mock_lock);
	return cudaSuccess;
}

/* ---- allocations ---------------------------------------------------------- */

static void *mock_mem(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, MOCK_GRAN, len ? len : 1))
		return NULL;
	return p;
}

cudaError_t cudaMalloc(void **p, size_t len)
{
	if (!p)
		return fail(cudaErrorInvalidValue);
	if (!take(len))
		return fail(cudaErrorMemoryAllocation);
	*p = mock_mem(len);
	if (!*p) {
		give(len);
		return fail(cudaErrorMemoryAllocation);
	}
	track(*p, len, cudaMemoryTypeDevice, 0);
	return cudaSuccess;
}

cudaError_t cudaMallocManaged(void **p, size_t len, unsigned int flags)
{
	(void)flags;
	if (!p || !len)
		return fail(cudaErrorInvalidValue);
	*p = mock_mem(len);
	if (!*p)
		return fail(cudaErrorMemoryAllocation);
	memset(*p, 0, len);
	track(*p, len, cudaMemoryTypeManaged, 0);
	return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
	struct mock_alloc *a;

	if (!p)
		return cudaSuccess;
	a = untrack(p);
	if (!a || (a->type != cudaMemoryTypeDevice &&
		   a->type != cudaMemoryTypeManaged)) {
		if (a)	/* put it back: not ours to free this way */
			track(a->p, a->len, a->type, a->registered);
		free(a);
		return fail(cudaErrorInvalidValue);
	}
	if (a->type == cudaMemoryTypeDevice)
		give(a->len);
	free(a->p);
	free(a);
	return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t len, unsigned int flags)
{
	(void)flags;
	if (!p || !len)
		return fail(cudaErrorInvalidValue);
	*p = mock_mem(len);
	if (!*p)
		return fail(cudaErrorMemoryAllocation);
	track(*p, len, cudaMemoryTypeHost, 0);
	return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
	struct mock_alloc *a = untrack(p);

	if (!a || a->type != cudaMemoryTypeHost || a->registered) {
		if (a)
			track(a->p, a->len, a->type, a->registered);
		free(a);
		return fail(cudaErrorInvalidValue);
	}
	free(a->p);
	free(a);
	return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t len, unsigned int flags)
{
	(void)flags;
	if (!p || !len)
		return fail(cudaErrorInvalidValue);
	if (lookup(p) != cudaMemoryTypeUnregistered)
		return fail(cudaErrorHostMemoryAlreadyRegistered);
	track(p, len, cudaMemoryTypeHost, 1);
	return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
	struct mock_alloc *a = untrack(p);

	if (!a || !a->registered) {
		if (a)
			track(a->p, a->len, a->type, a->registered);
		free(a);
		return fail(cudaErrorHostMemoryNotRegistered);
	}
	free(a);
	return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *at,
				     const void *p)
{
	memset(at, 0, sizeof(*at));
	at->type = lookup(p);
	return cudaSuccess;
}

/* ---- streams and events --------------------------------------------------- */

struct CUstream_st {
	int magic;
};

struct CUevent_st {
	int magic;
	int recorded;
	double t;
};

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
	(void)flags;
	*s = calloc(1, sizeof(**s));
	if (!*s)
		return fail(cudaErrorMemoryAllocation);
	(*s)->magic = 0x57;
	return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	if (!s || s->magic != 0x57)
		return fail(cudaErrorInvalidResourceHandle);
	s->magic = 0;
	free(s);
	return cudaSuccess;
}

static cudaError_t check_stream(cudaStream_t s)
{
	if (s && s->magic != 0x57)
		return fail(cudaErrorInvalidResourceHandle);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	return check_stream(s);
}

static double mock_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
	(void)flags;
	*e = calloc(1, sizeof(**e));
	if (!*e)
		return fail(cudaErrorMemoryAllocation);
	(*e)->magic = 0xe7;
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
	return cudaEventCreateWithFlags(e, 0);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
	if (!e || e->magic != 0xe7)
		return fail(cudaErrorInvalidResourceHandle);
	e->magic = 0;
	free(e);
	return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
	if (!e || e->magic != 0xe7 || check_stream(s))
		return fail(cudaErrorInvalidResourceHandle);
	e->recorded = 1;
	e->t = mock_now();
	return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
	if (!e || e->magic != 0xe7)
		return fail(cudaErrorInvalidResourceHandle);
	return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
	return cudaEventQuery(e);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
	if (!a || !b || a->magic != 0xe7 || b->magic != 0xe7 ||
	    !a->recorded || !b->recorded)
		return fail(cudaErrorInvalidResourceHandle);
	*ms = (float)((b->t - a->t) * 1e3);
	return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e,
				unsigned int flags)
{
	(void)flags;
	if (!e || e->magic != 0xe7 || check_stream(s))
		return fail(cudaErrorInvalidResourceHandle);
	return cudaSuccess;
}

/* ---- copies and managed memory ------------------------------------------- */

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t s)
{
	(void)k;
	if (check_stream(s) || (n && (!dst || !src)))
		return fail(cudaErrorInvalidValue);
	memmove(dst, src, n);	/* faults here if a VA is not mapped */
	return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t s)
{
	if (check_stream(s) || (n && !dst))
		return fail(cudaErrorInvalidValue);
	memset(dst, v, n);
	return cudaSuccess;
}

static int managed_range(const void *p, size_t n)
{
	int ok = 0;
	uintptr_t x = (uintptr_t)p;

	pthread_mutex_lock(&mock_lock);
	for (struct mock_alloc *a = allocs; a; a = a->next)
		if (a->type == cudaMemoryTypeManaged &&
		    x >= (uintptr_t)a->p &&
		    x + n <= (uintptr_t)a->p + a->len)
			ok = 1;
	pthread_mutex_unlock(&mock_lock);
	return ok;
}

static int good_loc(struct cudaMemLocation l, int host_numa_ok)
{
	switch (l.type) {
	case cudaMemLocationTypeDevice:
		return l.id == 0;
	case cudaMemLocationTypeHost:
		return 1;
	case cudaMemLocationTypeHostNuma:
		return host_numa_ok && l.id == 0;
	default:
		return 0;
	}
}

cudaError_t cudaMemPrefetchAsync(const void *p, size_t n,
				 struct cudaMemLocation l, unsigned int flags,
				 cudaStream_t s)
{
	if (flags || check_stream(s) || !managed_range(p, n) ||
	    !good_loc(l, 1))
		return fail(cudaErrorInvalidValue);
	return cudaSuccess;
}

cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise a,
			  struct cudaMemLocation l)
{
	int host_numa_ok = a != cudaMemAdviseSetAccessedBy &&
			   a != cudaMemAdviseUnsetAccessedBy;

	if (!managed_range(p, n) || !good_loc(l, host_numa_ok))
		return fail(cudaErrorInvalidValue);
	return cudaSuccess;
}

cudaError_t cudaMemDiscardBatchAsync(void **ptrs, size_t *sizes, size_t count,
				     unsigned long long flags, cudaStream_t s)
{
	if (flags || check_stream(s))
		return fail(cudaErrorInvalidValue);
	for (size_t i = 0; i < count; i++) {
		if (!managed_range(ptrs[i], sizes[i]))
			return fail(cudaErrorInvalidValue);
		/* The contents are gone: make readers of them see it. */
		memset(ptrs[i], 0xa5, sizes[i]);
	}
	return cudaSuccess;
}

/* ---- driver: virtual-memory management ---------------------------------- */

struct mock_handle {
	size_t len;
	int mapped;
};

static CUresult mock_reserve(CUdeviceptr *ptr, size_t size, size_t align,
			     CUdeviceptr addr, unsigned long long flags)
{
	size_t a = align ? align : MOCK_GRAN, span;
	uintptr_t base, start;
	struct mock_va *v;
	void *p;

	if (!ptr || !size || size % MOCK_GRAN || a % MOCK_GRAN || addr ||
	    flags)
		return CUDA_ERROR_INVALID_VALUE;
	span = size + a;
	p = mmap(NULL, span, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	base = (uintptr_t)p;
	start = (base + a - 1) / a * a;
	if (start > base)
		munmap(p, start - base);
	if (base + span > start + size)
		munmap((void *)(start + size), base + span - (start + size));
	v = calloc(1, sizeof(*v));
	if (!v)
		abort();
	v->base = start;
	v->len = size;
	pthread_mutex_lock(&mock_lock);
	v->next = vas;
	vas = v;
	pthread_mutex_unlock(&mock_lock);
	*ptr = (CUdeviceptr)start;
	return CUDA_SUCCESS;
}

static CUresult mock_addr_free(CUdeviceptr ptr, size_t size)
{
	struct mock_va **pp, *v = NULL;

	pthread_mutex_lock(&mock_lock);
	for (pp = &vas; *pp; pp = &(*pp)->next) {
		if ((*pp)->base == (uintptr_t)ptr) {
			v = *pp;
			if (v->len != size)
				v = NULL;
			else
				*pp = v->next;
			break;
		}
	}
	pthread_mutex_unlock(&mock_lock);
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)v->base, v->len);
	free(v);
	return CUDA_SUCCESS;
}

static CUresult mock_create(CUmemGenericAllocationHandle *h, size_t size,
			    const CUmemAllocationProp *prop,
			    unsigned long long flags)
{
	struct mock_handle *m;

	if (!h || !size || size % MOCK_GRAN || !prop || flags ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!take(size))
		return CUDA_ERROR_OUT_OF_MEMORY;
	m = calloc(1, sizeof(*m));
	if (!m) {
		give(size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->len = size;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)m;
	return CUDA_SUCCESS;
}

static CUresult mock_release(CUmemGenericAllocationHandle h)
{
	struct mock_handle *m = (struct mock_handle *)(uintptr_t)h;

	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	give(m->len);
	free(m);
	return CUDA_SUCCESS;
}

static CUresult mock_map(CUdeviceptr ptr, size_t size, size_t offset,
			 CUmemGenericAllocationHandle h,
			 unsigned long long flags)
{
	struct mock_handle *m = (struct mock_handle *)(uintptr_t)h;

	if (!m || offset || flags || size != m->len || ptr % MOCK_GRAN ||
	    lookup((void *)ptr) != cudaMemoryTypeDevice)
		return CUDA_ERROR_INVALID_VALUE;
	/* Fresh pages, still inaccessible until cuMemSetAccess. */
	if (mmap((void *)ptr, size, PROT_NONE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->mapped = 1;
	return CUDA_SUCCESS;
}

static CUresult mock_unmap(CUdeviceptr ptr, size_t size)
{
	if (ptr % MOCK_GRAN || size % MOCK_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	if (mmap((void *)ptr, size, PROT_NONE,
		 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		 0) == MAP_FAILED)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult mock_set_access(CUdeviceptr ptr, size_t size,
				const CUmemAccessDesc *d, size_t count)
{
	if (!d || count != 1 || d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
	    ptr % MOCK_GRAN || size % MOCK_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	if (mprotect((void *)ptr, size, PROT_READ | PROT_WRITE))
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

static CUresult mock_granularity(size_t *g, const CUmemAllocationProp *prop,
				 CUmemAllocationGranularity_flags o)
{
	(void)o;
	if (!g || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*g = MOCK_GRAN;
	return CUDA_SUCCESS;
}

static CUresult mock_mem_info(size_t *f, size_t *t)
{
	cudaMemGetInfo(f, t);
	return CUDA_SUCCESS;
}

static CUresult mock_error_string(CUresult r, const char **s)
{
	*s = r == CUDA_SUCCESS ? "no error" :
	     r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" :
	     r == CUDA_ERROR_INVALID_VALUE ? "invalid argument" :
					      "mock driver error";
	return CUDA_SUCCESS;
}

static const struct {
	const char *name;
	void *fn;
} mock_syms[] = {
	{ "cuMemAddressReserve", (void *)mock_reserve },
	{ "cuMemAddressFree", (void *)mock_addr_free },
	{ "cuMemCreate", (void *)mock_create },
	{ "cuMemRelease", (void *)mock_release },
	{ "cuMemMap", (void *)mock_map },
	{ "cuMemUnmap", (void *)mock_unmap },
	{ "cuMemSetAccess", (void *)mock_set_access },
	{ "cuMemGetAllocationGranularity", (void *)mock_granularity },
	{ "cuMemGetInfo", (void *)mock_mem_info },
	{ "cuGetErrorString", (void *)mock_error_string },
};

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
		unsigned int version, unsigned long long flags,
		enum cudaDriverEntryPointQueryResult *status)
{
	(void)flags;
	if (!symbol || !fn || version < 10020 || version > 13000)
		return fail(cudaErrorInvalidValue);
	for (size_t i = 0; i < sizeof(mock_syms) / sizeof(mock_syms[0]); i++) {
		if (!strcmp(symbol, mock_syms[i].name)) {
			*fn = mock_syms[i].fn;
			if (status)
				*status = cudaDriverEntryPointSuccess;
			return cudaSuccess;
		}
	}
	*fn = NULL;
	if (status)
		*status = cudaDriverEntryPointSymbolNotFound;
	return cudaSuccess;
}
