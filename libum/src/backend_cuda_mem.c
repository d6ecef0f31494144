// SPDX-License-Identifier: MIT
/*
 * backend_cuda_mem.c - memory of the cuda backend: pinned host chunks,
 * TIERED (driver virtual-memory API) and MANAGED (cudaMallocManaged).
 *
 * TIERED: a region's device VA is reserved once (cuMemAddressReserve) and
 * stays its pointer for life; device memory is created and mapped there on
 * restore (cuMemCreate + cuMemMap + cuMemSetAccess) and unmapped and released
 * after eviction (cuMemUnmap + cuMemRelease), which is the only way measured
 * on the H200 that gives GPU memory back to the device (nvidia-smi drops by
 * 4 GiB; managed eviction leaves it unchanged: Documentation/design.rst).
 *
 * Pinned host chunks: cudaHostAlloc where no NUMA node is asked for; for a
 * node, pages bound to it and touched (um__numa_alloc), then pinned by
 * cudaHostRegister (cudaHostAlloc has no placement). Both are slow
 * (on the H200, design.rst: cudaHostAlloc about 1.2 ms per MiB,
 * cudaHostRegister of 64 MiB 5.9 ms); the pool calls them off the hot
 * path, in large chunks.
 */
#ifdef UM_HAVE_CUDA

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "um_numa.h"

#define UMC_DEFAULT_GRAN (2ull << 20)

static size_t umc_round_up(size_t len, size_t unit)
{
	if (!unit)
		return len;
	if (len > SIZE_MAX - (unit - 1))
		return 0;
	return (len + unit - 1) / unit * unit;
}

/* ---- driver entry points ------------------------------------------------ */

static int umc_sym(struct um_backend *be, const char *name, void *slot,
		   size_t slot_size)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;
	cudaError_t e;

	e = cudaGetDriverEntryPointByVersion(name, &fn, UMC_DRIVER_ABI,
					     cudaEnableDefault, &st);
	if (e != cudaSuccess || st != cudaDriverEntryPointSuccess || !fn) {
		(void)cudaGetLastError();
		if (be->log)
			be->log(be->log_arg, UM_LOG_WARN,
				"cuda: cudaGetDriverEntryPointByVersion(%s, %d): %s, status %d",
				name, UMC_DRIVER_ABI, cudaGetErrorString(e),
				(int)st);
		return -ENOSYS;
	}
	/* A data pointer to a function pointer, without a cast ISO C lacks. */
	memcpy(slot, &fn, slot_size);
	return 0;
}

#define UMC_SYM(be, d, field, name) \
	umc_sym((be), (name), &(d)->field, sizeof((d)->field))

static int umc_resolve_driver(struct um_backend *be)
{
	struct umc_driver *d = &umc(be)->drv;
	int bad = 0;

	(void)UMC_SYM(be, d, get_error_string, "cuGetErrorString");
	bad |= UMC_SYM(be, d, mem_address_reserve, "cuMemAddressReserve");
	bad |= UMC_SYM(be, d, mem_address_free, "cuMemAddressFree");
	bad |= UMC_SYM(be, d, mem_create, "cuMemCreate");
	bad |= UMC_SYM(be, d, mem_release, "cuMemRelease");
	bad |= UMC_SYM(be, d, mem_map, "cuMemMap");
	bad |= UMC_SYM(be, d, mem_unmap, "cuMemUnmap");
	bad |= UMC_SYM(be, d, mem_set_access, "cuMemSetAccess");
	bad |= UMC_SYM(be, d, mem_get_allocation_granularity,
		       "cuMemGetAllocationGranularity");
	bad |= UMC_SYM(be, d, mem_get_info, "cuMemGetInfo");
	d->vmm_ok = !bad;
	if (bad && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: driver virtual-memory API unavailable: TIERED regions refused (-EOPNOTSUPP)");
	return 0;
}

static void umc_dev_prop(int dev, CUmemAllocationProp *prop)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = dev;
}

static size_t umc_query_gran(struct um_backend *be, int dev)
{
	struct umc_driver *d = &umc(be)->drv;
	CUmemAllocationProp prop;
	size_t g = 0;

	if (!d->vmm_ok)
		return UMC_DEFAULT_GRAN;
	umc_dev_prop(dev, &prop);
	if (d->mem_get_allocation_granularity(&g, &prop,
			CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS &&
	    g)
		return g;
	if (umc_drv_check(be, d->mem_get_allocation_granularity(&g, &prop,
				CU_MEM_ALLOC_GRANULARITY_MINIMUM),
			  "cuMemGetAllocationGranularity") == 0 && g)
		return g;
	return UMC_DEFAULT_GRAN;
}

/* Called with the first device current (its primary context made). */
int umc_mem_init(struct um_backend *be)
{
	struct umc_backend *c = umc(be);
	size_t f = 0, t = 0;
	int dev, v, ret;

	ret = umc_resolve_driver(be);
	if (ret)
		return ret;
	c->gran_max = UMC_DEFAULT_GRAN;
	/*
	 * Neither query needs the device's own context: do not create one
	 * on every GPU of the machine (each costs device memory).
	 */
	for (dev = 0; dev < c->ndev; dev++) {
		c->gran[dev] = umc_query_gran(be, dev);
		if (c->gran[dev] > c->gran_max)
			c->gran_max = c->gran[dev];
		v = 0;
		if (umc_rt_check(be, cudaDeviceGetAttribute(&v,
				cudaDevAttrConcurrentManagedAccess, dev),
				"cudaDeviceGetAttribute(ConcurrentManagedAccess)"))
			v = 0;
		c->managed_ok[dev] = v;
	}
	/*
	 * Asking for more managed memory than the card has free can hang
	 * the GPU, not only the program (seen on the H200, design.rst). Cap
	 * what we hand out at what was free when we started.
	 */
	ret = umc_rt_check(be, cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
	if (ret)
		return ret;
	c->managed_cap = f;
	c->numa_ok = um__numa_available();
	if (be->log)
		be->log(be->log_arg, UM_LOG_INFO,
			"cuda: %d device(s), granularity %zu KiB, managed cap %llu MiB, numa %s",
			c->ndev, c->gran_max >> 10,
			(unsigned long long)(c->managed_cap >> 20),
			c->numa_ok ? "yes" : "no");
	return 0;
}

void umc_mem_fini(struct um_backend *be)
{
	struct umc_backend *c = umc(be);
	struct umc_hostreg *r;

	/* Chunks the pool did not give back: unpin and free them now. */
	while ((r = c->hostregs)) {
		c->hostregs = r->next;
		(void)umc_rt_check(be, cudaHostUnregister(r->p),
				   "cudaHostUnregister");
		um__numa_free(r->p, r->len);
		free(r);
	}
}

/* ---- pinned host chunks ----------------------------------------------- */

static int umc_host_alloc_node(struct um_backend *be, size_t len, int node,
			       void **out)
{
	struct umc_backend *c = umc(be);
	struct umc_hostreg *r;
	void *p;
	int ret;

	if (!um__numa_node_valid(node))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = um__numa_alloc(len, node, &p);
	if (ret) {
		free(r);
		return ret;
	}
	/* The pages exist on node (um__numa_alloc touched them): pin them. */
	ret = umc_rt_check(be, cudaHostRegister(p, len,
				cudaHostRegisterPortable),
			   "cudaHostRegister");
	if (ret) {
		um__numa_free(p, len);
		free(r);
		return ret;
	}
	r->p = p;
	r->len = len;
	pthread_mutex_lock(&c->lock);
	r->next = c->hostregs;
	c->hostregs = r;
	pthread_mutex_unlock(&c->lock);
	*out = p;
	return 0;
}

int umc_host_alloc(struct um_backend *be, size_t len, int node, void **out)
{
	struct umc_backend *c = umc(be);
	void *p = NULL;
	int ret;

	if (!out || !len)
		return -EINVAL;
	if (node >= 0 && node != UM_TIER_ANY_NODE) {
		if (c->numa_ok)
			return umc_host_alloc_node(be, len, node, out);
		/* Without NUMA there is one node, 0, and no placement. */
		if (node != 0)
			return -EINVAL;
	}
	ret = umc_rt_check(be, cudaHostAlloc(&p, len, cudaHostAllocPortable),
			   "cudaHostAlloc");
	if (ret)
		return ret;
	*out = p;
	return 0;
}

void umc_host_free(struct um_backend *be, void *p, size_t len)
{
	struct umc_backend *c = umc(be);
	struct umc_hostreg **pp, *r = NULL;

	if (!p)
		return;
	pthread_mutex_lock(&c->lock);
	for (pp = &c->hostregs; *pp; pp = &(*pp)->next) {
		if ((*pp)->p == p) {
			r = *pp;
			*pp = r->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!r) {
		(void)umc_rt_check(be, cudaFreeHost(p), "cudaFreeHost");
		return;
	}
	if (r->len != len && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: host_free(%p): %zu bytes given, %zu registered",
			p, len, r->len);
	(void)umc_rt_check(be, cudaHostUnregister(p), "cudaHostUnregister");
	um__numa_free(p, r->len);
	free(r);
}

/* ---- TIERED: driver virtual-memory API ------------------------------- */

size_t umc_granularity(struct um_backend *be, int dev)
{
	struct umc_backend *c = umc(be);

	if (!umc_dev_valid(be, dev))
		return c->gran_max;
	return c->gran[dev];
}

/* A mapping made by phys_map: what phys_unmap must undo. */
struct umc_phys {
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	size_t len;
	int dev;
};

static int umc_vmm_ready(struct um_backend *be)
{
	if (umc(be)->drv.vmm_ok)
		return 0;
	if (be->log)
		be->log(be->log_arg, UM_LOG_ERR,
			"cuda: TIERED needs the driver virtual-memory API, which this driver lacks");
	return -EOPNOTSUPP;
}

int umc_va_reserve(struct um_backend *be, int dev, size_t len, void **va)
{
	struct umc_backend *c = umc(be);
	struct umc_devguard g;
	CUdeviceptr p = 0;
	size_t rlen;
	int ret;

	if (!va || !len)
		return -EINVAL;
	ret = umc_vmm_ready(be);
	if (ret)
		return ret;
	rlen = umc_round_up(len, c->gran_max);
	if (!rlen)
		return -ENOMEM;
	ret = umc_dev_enter(be, dev, &g);
	if (ret)
		return ret;
	ret = umc_drv_check(be, c->drv.mem_address_reserve(&p, rlen,
				c->gran_max, 0, 0),
			    "cuMemAddressReserve");
	umc_dev_leave(be, &g);
	if (ret)
		return ret;
	*va = (void *)(uintptr_t)p;
	return 0;
}

void umc_va_release(struct um_backend *be, void *va, size_t len)
{
	struct umc_backend *c = umc(be);
	struct umc_devguard g;

	if (!va || !c->drv.vmm_ok)
		return;
	if (umc_dev_enter(be, c->first_dev, &g))
		return;
	(void)umc_drv_check(be, c->drv.mem_address_free((CUdeviceptr)(uintptr_t)va,
				umc_round_up(len, c->gran_max)),
			    "cuMemAddressFree");
	umc_dev_leave(be, &g);
}

static int umc_map_locked(struct um_backend *be, struct umc_phys *ph)
{
	struct umc_driver *d = &umc(be)->drv;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	int ret;

	umc_dev_prop(ph->dev, &prop);
	ret = umc_drv_check(be, d->mem_create(&ph->h, ph->len, &prop, 0),
			    "cuMemCreate");
	if (ret)
		return ret;
	ret = umc_drv_check(be, d->mem_map(ph->va, ph->len, 0, ph->h, 0),
			    "cuMemMap");
	if (ret)
		goto err_release;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	ret = umc_drv_check(be, d->mem_set_access(ph->va, ph->len, &acc, 1),
			    "cuMemSetAccess");
	if (ret)
		goto err_unmap;
	return 0;

err_unmap:
	(void)umc_drv_check(be, d->mem_unmap(ph->va, ph->len), "cuMemUnmap");
err_release:
	(void)umc_drv_check(be, d->mem_release(ph->h), "cuMemRelease");
	return ret;
}

int umc_phys_map(struct um_backend *be, int dev, void *va, size_t len,
		 void **handle)
{
	struct umc_devguard g;
	struct umc_phys *ph;
	size_t gran;
	int ret;

	if (!va || !len || !handle)
		return -EINVAL;
	ret = umc_vmm_ready(be);
	if (ret)
		return ret;
	if (!umc_dev_valid(be, dev))
		return -ENODEV;
	gran = umc(be)->gran[dev];
	if ((uintptr_t)va % gran) {
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: phys_map at %p: not aligned to the %zu-byte granularity",
				va, gran);
		return -EINVAL;
	}
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	ph->va = (CUdeviceptr)(uintptr_t)va;
	ph->len = umc_round_up(len, gran);
	ph->dev = dev;
	ret = umc_dev_enter(be, dev, &g);
	if (ret)
		goto err_free;
	ret = umc_map_locked(be, ph);
	umc_dev_leave(be, &g);
	if (ret)
		goto err_free;
	*handle = ph;
	return 0;

err_free:
	free(ph);
	return ret;
}

/*
 * Synchronous. The caller must have seen the fence after the last copy out
 * of (and every kernel on) this memory reach: unmapping under in-flight work
 * is undefined behaviour in CUDA, not an error it reports.
 */
void umc_phys_unmap(struct um_backend *be, int dev, void *va, size_t len,
		    void *handle)
{
	struct umc_driver *d = &umc(be)->drv;
	struct umc_phys *ph = handle;
	struct umc_devguard g;

	if (!ph)
		return;
	if ((ph->va != (CUdeviceptr)(uintptr_t)va || ph->dev != dev ||
	     ph->len < len) && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: phys_unmap(%p, %zu, dev %d) of a mapping made at %p, %zu, dev %d: undoing the mapping as made",
			va, len, dev, (void *)(uintptr_t)ph->va, ph->len,
			ph->dev);
	if (umc_dev_enter(be, ph->dev, &g) == 0) {
		(void)umc_drv_check(be, d->mem_unmap(ph->va, ph->len),
				    "cuMemUnmap");
		/* Memory goes back to the device once handle and map are gone. */
		(void)umc_drv_check(be, d->mem_release(ph->h), "cuMemRelease");
		umc_dev_leave(be, &g);
	}
	free(ph);
}

/* ---- MANAGED ---------------------------------------------------------- */

int umc_managed_alloc(struct um_backend *be, int dev, size_t len, void **out)
{
	struct umc_backend *c = umc(be);
	struct umc_devguard g;
	void *p = NULL;
	int ret;

	if (!out || !len)
		return -EINVAL;
	if (!umc_dev_valid(be, dev))
		return -ENODEV;
	if (!c->managed_ok[dev]) {
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: device %d lacks concurrent managed access: MANAGED refused",
				dev);
		return -EOPNOTSUPP;
	}
	pthread_mutex_lock(&c->lock);
	if (len > c->managed_cap || c->managed_live > c->managed_cap - len) {
		pthread_mutex_unlock(&c->lock);
		if (be->log)
			be->log(be->log_arg, UM_LOG_WARN,
				"cuda: managed %zu bytes refused: %llu live, cap %llu (device memory free at start)",
				len, (unsigned long long)c->managed_live,
				(unsigned long long)c->managed_cap);
		return -ENOMEM;
	}
	c->managed_live += len;
	pthread_mutex_unlock(&c->lock);
	ret = umc_dev_enter(be, dev, &g);
	if (!ret) {
		ret = umc_rt_check(be, cudaMallocManaged(&p, len,
					cudaMemAttachGlobal),
				   "cudaMallocManaged");
		umc_dev_leave(be, &g);
	}
	if (ret) {
		pthread_mutex_lock(&c->lock);
		c->managed_live -= len;
		pthread_mutex_unlock(&c->lock);
		return ret;
	}
	*out = p;
	return 0;
}

void umc_managed_free(struct um_backend *be, void *p, size_t len)
{
	struct umc_backend *c = umc(be);

	if (!p)
		return;
	/* cudaFree waits for the device to be idle: no migration is cut. */
	if (umc_rt_check(be, cudaFree(p), "cudaFree(managed)"))
		return;
	pthread_mutex_lock(&c->lock);
	c->managed_live = c->managed_live > len ? c->managed_live - len : 0;
	pthread_mutex_unlock(&c->lock);
}

/*
 * Where a tier is, for cudaMemAdvise/cudaMemPrefetchAsync. host_only:
 * accessed-by takes only a device or "the host", not a host NUMA node.
 */
static int umc_tier_loc(struct um_backend *be, um_tier_t t, int host_only,
			struct cudaMemLocation *loc)
{
	memset(loc, 0, sizeof(*loc));
	switch (UM_TIER_TYPE(t)) {
	case UM_TIER_DEVICE:
		if (!umc_dev_valid(be, (int)UM_TIER_ID(t)))
			return -ENODEV;
		loc->type = cudaMemLocationTypeDevice;
		loc->id = (int)UM_TIER_ID(t);
		return 0;
	case UM_TIER_HOST:
		if (UM_TIER_ID(t) == UM_TIER_ANY_NODE || host_only) {
			loc->type = cudaMemLocationTypeHost;
			loc->id = 0;
		} else {
			loc->type = cudaMemLocationTypeHostNuma;
			loc->id = (int)UM_TIER_ID(t);
		}
		return 0;
	default:
		return -EINVAL;
	}
}

int umc_advise(struct um_backend *be, void *p, size_t len, int advice,
	       um_tier_t where)
{
	struct cudaMemLocation loc;
	enum cudaMemoryAdvise a;
	int ret, host_only = 0, needs_loc = 1;

	if (!p || !len)
		return -EINVAL;
	switch (advice) {
	case UM_ADVISE_PREFERRED_LOCATION:
		a = cudaMemAdviseSetPreferredLocation;
		break;
	case UM_ADVISE_UNSET_PREFERRED_LOCATION:
		a = cudaMemAdviseUnsetPreferredLocation;
		needs_loc = 0;
		break;
	case UM_ADVISE_ACCESSED_BY:
		a = cudaMemAdviseSetAccessedBy;
		host_only = 1;
		break;
	case UM_ADVISE_UNSET_ACCESSED_BY:
		a = cudaMemAdviseUnsetAccessedBy;
		host_only = 1;
		break;
	case UM_ADVISE_READ_MOSTLY:
		a = cudaMemAdviseSetReadMostly;
		needs_loc = 0;
		break;
	case UM_ADVISE_UNSET_READ_MOSTLY:
		a = cudaMemAdviseUnsetReadMostly;
		needs_loc = 0;
		break;
	default:
		return -EINVAL;
	}
	ret = umc_tier_loc(be, where, host_only, &loc);
	if (ret && needs_loc)
		return ret;
	if (ret) {
		/* The runtime ignores the location of these advices. */
		loc.type = cudaMemLocationTypeDevice;
		loc.id = umc(be)->first_dev;
	}
	return umc_rt_check(be, cudaMemAdvise(p, len, a, loc), "cudaMemAdvise");
}

int umc_prefetch(struct um_backend *be, struct um_queue *q, void *p,
		 size_t len, um_tier_t where)
{
	struct cudaMemLocation loc;
	cudaError_t e;
	int ret;

	if (!q || !p || !len)
		return -EINVAL;
	ret = umc_tier_loc(be, where, 0, &loc);
	if (ret)
		return ret;
	if (loc.type == cudaMemLocationTypeDevice &&
	    !umc(be)->managed_ok[loc.id])
		return -EOPNOTSUPP;
	e = cudaMemPrefetchAsync(p, len, loc, 0, q->s);
	if (e == cudaErrorInvalidValue &&
	    loc.type == cudaMemLocationTypeHostNuma) {
		/* A driver without host NUMA placement: the host will do. */
		(void)cudaGetLastError();
		if (be->log)
			be->log(be->log_arg, UM_LOG_DEBUG,
				"cuda: prefetch to host node %d refused, prefetching to the host",
				loc.id);
		loc.type = cudaMemLocationTypeHost;
		loc.id = 0;
		e = cudaMemPrefetchAsync(p, len, loc, 0, q->s);
	}
	return umc_rt_check(be, e, "cudaMemPrefetchAsync");
}

/*
 * Discard only the whole CPU pages inside [p, p + len): CUDA documents no
 * rounding for discard (prefetch and advise round outwards), and leaving a
 * partial page undiscarded is always correct, discarding a neighbour's bytes
 * never is.
 */
int umc_discard(struct um_backend *be, struct um_queue *q, void *p,
		size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	void *ptrs[1];
	size_t sizes[1];

	if (!q || !p || !len)
		return -EINVAL;
	if (pg < 4096)
		pg = 4096;
	lo = (lo + pg - 1) / pg * pg;
	hi = hi / pg * pg;
	if (hi <= lo)
		return 0;
	ptrs[0] = (void *)lo;
	sizes[0] = hi - lo;
	return umc_rt_check(be, cudaMemDiscardBatchAsync(ptrs, sizes, 1, 0,
							 q->s),
			    "cudaMemDiscardBatchAsync");
}

#else /* !UM_HAVE_CUDA */

typedef int um_backend_cuda_mem_absent;

#endif /* UM_HAVE_CUDA */
