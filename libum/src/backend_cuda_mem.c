// SPDX-License-Identifier: MIT
/*
 * backend_cuda_mem.c - memory of the cuda backend: pinned host chunks,
 * TIERED (driver virtual-memory API) and MANAGED (cudaMallocManaged).
 *
 * TIERED: a region's device VA is reserved once (cuMemAddressReserve) and
 * stays its pointer for life; device memory is created and mapped there on
 * restore (cuMemCreate + cuMemMap + cuMemSetAccess) and unmapped and released
 * after eviction (cuMemUnmap + cuMemRelease), which is the only way measured
 * on the H200 that gives GPU memory back to the device (performance.rst:
 * nvidia-smi drops by 4 GiB; managed eviction leaves it unchanged).
 *
 * Pinned host chunks: pages touched (um__numa_alloc, bound to the node
 * asked for, if any), then pinned by cudaHostRegister: faster than
 * cudaHostAlloc (H200, performance.rst: cudaHostAlloc 0.5 to 1 s per GiB,
 * cudaHostRegister of 64 MiB 5.9 ms), and placed. Still slow: the pool
 * calls it in large chunks, and um_evict grows the pool off the context
 * lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "tier.h"
#include "um_numa.h"
#include "util.h"

#define UM_CUDA_DEFAULT_GRAN (2ull << 20)

static size_t cuda_round_up(size_t len, size_t unit)
{
	if (!unit)
		return len;
	if (len > SIZE_MAX - (unit - 1))
		return 0;
	return (len + unit - 1) / unit * unit;
}

/* ---- driver entry points ------------------------------------------------ */

static int cuda_sym(struct um_backend *be, const char *name, void *slot,
		   size_t slot_size)
{
	enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	void *fn = NULL;
	cudaError_t e;

	e = cudaGetDriverEntryPointByVersion(name, &fn, UM_CUDA_DRIVER_ABI,
					     cudaEnableDefault, &st);
	if (e != cudaSuccess || st != cudaDriverEntryPointSuccess || !fn) {
		(void)cudaGetLastError();
		if (be->log)
			be->log(be->log_arg, UM_LOG_WARN,
				"cuda: cudaGetDriverEntryPointByVersion(%s, %d): %s, status %d",
				name, UM_CUDA_DRIVER_ABI, cudaGetErrorString(e),
				(int)st);
		return -ENOSYS;
	}
	/* A data pointer to a function pointer, without a cast ISO C lacks. */
	memcpy(slot, &fn, slot_size);
	return 0;
}

#define UM_CUDA_SYM(be, d, field, name) \
	cuda_sym((be), (name), &(d)->field, sizeof((d)->field))

static int cuda_resolve_driver(struct um_backend *be)
{
	struct um_cuda_driver *d = &cuda_of(be)->drv;
	int bad = 0;

	(void)UM_CUDA_SYM(be, d, get_error_string, "cuGetErrorString");
	(void)UM_CUDA_SYM(be, d, primary_ctx_state,
			  "cuDevicePrimaryCtxGetState");
	bad |= UM_CUDA_SYM(be, d, mem_address_reserve, "cuMemAddressReserve");
	bad |= UM_CUDA_SYM(be, d, mem_address_free, "cuMemAddressFree");
	bad |= UM_CUDA_SYM(be, d, mem_create, "cuMemCreate");
	bad |= UM_CUDA_SYM(be, d, mem_release, "cuMemRelease");
	bad |= UM_CUDA_SYM(be, d, mem_map, "cuMemMap");
	bad |= UM_CUDA_SYM(be, d, mem_unmap, "cuMemUnmap");
	bad |= UM_CUDA_SYM(be, d, mem_set_access, "cuMemSetAccess");
	bad |= UM_CUDA_SYM(be, d, mem_get_allocation_granularity,
		       "cuMemGetAllocationGranularity");
	bad |= UM_CUDA_SYM(be, d, mem_get_info, "cuMemGetInfo");
	d->vmm_ok = !bad;
	if (bad && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: driver virtual-memory API unavailable: TIERED regions refused (-EOPNOTSUPP)");
	return 0;
}

static void cuda_dev_prop(int dev, CUmemAllocationProp *prop)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = dev;
}

static size_t cuda_query_gran(struct um_backend *be, int dev)
{
	struct um_cuda_driver *d = &cuda_of(be)->drv;
	CUmemAllocationProp prop;
	size_t g = 0;

	if (!d->vmm_ok)
		return UM_CUDA_DEFAULT_GRAN;
	cuda_dev_prop(dev, &prop);
	if (d->mem_get_allocation_granularity(&g, &prop,
			CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) == CUDA_SUCCESS &&
	    g)
		return g;
	if (um__cuda_drv_check(be, d->mem_get_allocation_granularity(&g, &prop,
				CU_MEM_ALLOC_GRANULARITY_MINIMUM),
			  "cuMemGetAllocationGranularity") == 0 && g)
		return g;
	return UM_CUDA_DEFAULT_GRAN;
}

/* Called with the first device current (its primary context made). */
int um__cuda_mem_init(struct um_backend *be)
{
	struct um_cuda_backend *c = cuda_of(be);
	int dev, v, ret;

	ret = cuda_resolve_driver(be);
	if (ret)
		return ret;
	c->gran_max = UM_CUDA_DEFAULT_GRAN;
	/*
	 * Neither query needs the device's own context: do not create one
	 * on every GPU of the machine (each costs device memory).
	 */
	for (dev = 0; dev < c->ndev; dev++) {
		c->gran[dev] = cuda_query_gran(be, dev);
		if (c->gran[dev] > c->gran_max)
			c->gran_max = c->gran[dev];
		v = 0;
		if (um__cuda_rt_check(be, cudaDeviceGetAttribute(&v,
				cudaDevAttrConcurrentManagedAccess, dev),
				"cudaDeviceGetAttribute(ConcurrentManagedAccess)"))
			v = 0;
		c->managed_ok[dev] = v;
	}
	c->numa_ok = um__numa_available();
	if (be->log)
		be->log(be->log_arg, UM_LOG_INFO,
			"cuda: %d device(s), granularity %zu KiB, numa %s",
			c->ndev, c->gran_max >> 10,
			c->numa_ok ? "yes" : "no");
	return 0;
}

void um__cuda_mem_fini(struct um_backend *be)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_hostreg *r;

	/* Records of managed memory the core did not free (its own bug). */
	while (c->managed) {
		struct um_cuda_managed *ma = c->managed;

		c->managed = ma->next;
		free(ma);
	}
	/* Chunks the pool did not give back: unpin and free them now. */
	while ((r = c->hostregs)) {
		c->hostregs = r->next;
		(void)um__cuda_rt_check(be, cudaHostUnregister(r->p),
				   "cudaHostUnregister");
		um__numa_free(r->p, r->len);
		free(r);
	}
}

/* ---- pinned host chunks ----------------------------------------------- */

static int cuda_host_alloc_node(struct um_backend *be, size_t len, int node,
			       void **out)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_hostreg *r;
	void *p;
	int ret;

	if (node != UM_NUMA_ANY && !um__numa_node_valid(node))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	ret = um__numa_alloc(len, node, &p);
	if (ret) {
		free(r);
		return ret;
	}
	/* The pages exist (um__numa_alloc touched them): pin them. */
	ret = um__cuda_rt_check(be, cudaHostRegister(p, len,
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

/*
 * Always touch + cudaHostRegister, never cudaHostAlloc: on the H200,
 * registering 64 MiB took 5.9 ms (0.09 ms per MiB) where cudaHostAlloc took
 * 0.5 to 1 s per GiB (performance.rst), and only the register path places
 * the pages on a NUMA node.
 */
int um__cuda_host_alloc(struct um_backend *be, size_t len, int node,
			void **out)
{
	struct um_cuda_backend *c = cuda_of(be);

	if (!out || !len)
		return -EINVAL;
	if (node < 0 || node == UM_TIER_ANY_NODE)
		return cuda_host_alloc_node(be, len, UM_NUMA_ANY, out);
	if (c->numa_ok)
		return cuda_host_alloc_node(be, len, node, out);
	/* Without NUMA there is one node, 0, and no placement. */
	if (node != 0)
		return -EINVAL;
	return cuda_host_alloc_node(be, len, UM_NUMA_ANY, out);
}

void um__cuda_host_free(struct um_backend *be, void *p, size_t len)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_hostreg **pp, *r = NULL;

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
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: host_free(%p): not a chunk of host_alloc",
				p);
		return;
	}
	if (r->len != len && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: host_free(%p): %s given, %s registered",
			p, UM_SIZE(len), UM_SIZE(r->len));
	(void)um__cuda_rt_check(be, cudaHostUnregister(p), "cudaHostUnregister");
	um__numa_free(p, r->len);
	free(r);
}

/* ---- TIERED: driver virtual-memory API ------------------------------- */

size_t um__cuda_granularity(struct um_backend *be, int dev)
{
	struct um_cuda_backend *c = cuda_of(be);

	if (!um__cuda_dev_valid(be, dev))
		return c->gran_max;
	return c->gran[dev];
}

/* A mapping made by phys_map: what phys_unmap must undo. */
struct cuda_phys {
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	size_t len;
	int dev;
};

static int cuda_vmm_ready(struct um_backend *be)
{
	if (cuda_of(be)->drv.vmm_ok)
		return 0;
	if (be->log)
		be->log(be->log_arg, UM_LOG_ERR,
			"cuda: TIERED needs the driver virtual-memory API, which this driver lacks");
	return -EOPNOTSUPP;
}

int um__cuda_va_reserve(struct um_backend *be, int dev, size_t len, void **va)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_devguard g;
	CUdeviceptr p = 0;
	size_t rlen;
	int ret;

	if (!va || !len)
		return -EINVAL;
	ret = cuda_vmm_ready(be);
	if (ret)
		return ret;
	rlen = cuda_round_up(len, c->gran_max);
	if (!rlen)
		return -ENOMEM;
	ret = um__cuda_dev_enter(be, dev, &g);
	if (ret)
		return ret;
	ret = um__cuda_drv_check(be, c->drv.mem_address_reserve(&p, rlen,
				c->gran_max, 0, 0),
			    "cuMemAddressReserve");
	um__cuda_dev_leave(be, &g);
	if (ret)
		return ret;
	*va = (void *)(uintptr_t)p;
	return 0;
}

void um__cuda_va_release(struct um_backend *be, void *va, size_t len)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_devguard g;

	if (!va || !c->drv.vmm_ok)
		return;
	if (um__cuda_dev_enter(be, c->first_dev, &g))
		return;
	(void)um__cuda_drv_check(be, c->drv.mem_address_free(
				(CUdeviceptr)(uintptr_t)va,
				cuda_round_up(len, c->gran_max)),
			    "cuMemAddressFree");
	um__cuda_dev_leave(be, &g);
}

static int cuda_map_locked(struct um_backend *be, struct cuda_phys *ph)
{
	struct um_cuda_driver *d = &cuda_of(be)->drv;
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	int ret;

	cuda_dev_prop(ph->dev, &prop);
	ret = um__cuda_drv_check(be, d->mem_create(&ph->h, ph->len, &prop, 0),
			    "cuMemCreate");
	if (ret)
		return ret;
	ret = um__cuda_drv_check(be, d->mem_map(ph->va, ph->len, 0, ph->h, 0),
			    "cuMemMap");
	if (ret)
		goto err_release;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	ret = um__cuda_drv_check(be, d->mem_set_access(ph->va, ph->len, &acc, 1),
			    "cuMemSetAccess");
	if (ret)
		goto err_unmap;
	return 0;

err_unmap:
	(void)um__cuda_drv_check(be, d->mem_unmap(ph->va, ph->len), "cuMemUnmap");
err_release:
	(void)um__cuda_drv_check(be, d->mem_release(ph->h), "cuMemRelease");
	return ret;
}

int um__cuda_phys_map(struct um_backend *be, int dev, void *va, size_t len,
		 void **handle)
{
	struct um_cuda_devguard g;
	struct cuda_phys *ph;
	size_t gran;
	int ret;

	if (!va || !len || !handle)
		return -EINVAL;
	ret = cuda_vmm_ready(be);
	if (ret)
		return ret;
	if (!um__cuda_dev_valid(be, dev))
		return -ENODEV;
	gran = cuda_of(be)->gran[dev];
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
	ph->len = cuda_round_up(len, gran);
	ph->dev = dev;
	ret = um__cuda_dev_enter(be, dev, &g);
	if (ret)
		goto err_free;
	ret = cuda_map_locked(be, ph);
	um__cuda_dev_leave(be, &g);
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
void um__cuda_phys_unmap(struct um_backend *be, int dev, void *va, size_t len,
		    void *handle)
{
	struct um_cuda_driver *d = &cuda_of(be)->drv;
	struct cuda_phys *ph = handle;
	struct um_cuda_devguard g;

	if (!ph)
		return;
	if ((ph->va != (CUdeviceptr)(uintptr_t)va || ph->dev != dev ||
	     ph->len < len) && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: phys_unmap(%p, %zu, dev %d) of a mapping made at %p, %zu, dev %d: undoing the mapping as made",
			va, len, dev, (void *)(uintptr_t)ph->va, ph->len,
			ph->dev);
	if (um__cuda_dev_enter(be, ph->dev, &g) == 0) {
		(void)um__cuda_drv_check(be, d->mem_unmap(ph->va, ph->len),
				    "cuMemUnmap");
		/* Memory goes back to the device once handle and map are gone. */
		(void)um__cuda_drv_check(be, d->mem_release(ph->h), "cuMemRelease");
		um__cuda_dev_leave(be, &g);
	}
	free(ph);
}

/* ---- MANAGED ---------------------------------------------------------- */

/*
 * H200 figures: asking for more managed memory than the card has free can hang
 * the GPU, not only the program. Cap what we hand out on each device at
 * what it had free when we first made managed memory there (its context
 * is current: the caller entered dev).
 */
static int cuda_managed_cap(struct um_backend *be, int dev)
{
	struct um_cuda_backend *c = cuda_of(be);
	size_t f = 0, t = 0;
	int ret;

	if (__atomic_load_n(&c->managed_cap[dev], __ATOMIC_ACQUIRE))
		return 0;
	ret = um__cuda_rt_check(be, cudaMemGetInfo(&f, &t), "cudaMemGetInfo");
	if (ret)
		return ret;
	pthread_mutex_lock(&c->lock);
	if (!c->managed_cap[dev]) {
		c->managed_cap[dev] = f ? f : 1;
		if (be->log)
			be->log(be->log_arg, UM_LOG_INFO,
				"cuda: device %d: managed cap %llu MiB (free now)",
				dev, (unsigned long long)(f >> 20));
	}
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Count len against dev's cap, or say why not. */
static int cuda_managed_take(struct um_backend *be, int dev, size_t len)
{
	struct um_cuda_backend *c = cuda_of(be);
	uint64_t cap, live;

	pthread_mutex_lock(&c->lock);
	cap = c->managed_cap[dev];
	live = c->managed_live[dev];
	if (len <= cap && live <= cap - len) {
		c->managed_live[dev] += len;
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	pthread_mutex_unlock(&c->lock);
	if (be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: managed %s on device %d refused: %s live, cap %s (device memory free at first use)",
			UM_SIZE(len), dev, UM_SIZE(live), UM_SIZE(cap));
	return -ENOMEM;
}

static void cuda_managed_give(struct um_backend *be, int dev, size_t len)
{
	struct um_cuda_backend *c = cuda_of(be);

	pthread_mutex_lock(&c->lock);
	c->managed_live[dev] = c->managed_live[dev] > len ?
			       c->managed_live[dev] - len : 0;
	pthread_mutex_unlock(&c->lock);
}

int um__cuda_managed_alloc(struct um_backend *be, int dev, size_t len,
			   void **out)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_managed *ma;
	struct um_cuda_devguard g;
	void *p = NULL;
	int ret;

	if (!out || !len)
		return -EINVAL;
	if (!um__cuda_dev_valid(be, dev))
		return -ENODEV;
	if (!c->managed_ok[dev]) {
		if (be->log)
			be->log(be->log_arg, UM_LOG_ERR,
				"cuda: device %d lacks concurrent managed access: MANAGED refused",
				dev);
		return -EOPNOTSUPP;
	}
	ma = calloc(1, sizeof(*ma));
	if (!ma)
		return -ENOMEM;
	ret = um__cuda_dev_enter(be, dev, &g);
	if (ret)
		goto err_free;
	ret = cuda_managed_cap(be, dev);
	if (!ret)
		ret = cuda_managed_take(be, dev, len);
	if (!ret) {
		ret = um__cuda_rt_check(be, cudaMallocManaged(&p, len,
					cudaMemAttachGlobal),
				   "cudaMallocManaged");
		if (ret)
			cuda_managed_give(be, dev, len);
	}
	um__cuda_dev_leave(be, &g);
	if (ret)
		goto err_free;
	ma->p = p;
	ma->len = len;
	ma->dev = dev;
	pthread_mutex_lock(&c->lock);
	ma->next = c->managed;
	c->managed = ma;
	pthread_mutex_unlock(&c->lock);
	*out = p;
	return 0;

err_free:
	free(ma);
	return ret;
}

void um__cuda_managed_free(struct um_backend *be, void *p, size_t len)
{
	struct um_cuda_backend *c = cuda_of(be);
	struct um_cuda_managed **pp, *ma = NULL;

	if (!p)
		return;
	/* cudaFree waits for the device to be idle: no migration is cut. */
	if (um__cuda_rt_check(be, cudaFree(p), "cudaFree(managed)"))
		return;
	pthread_mutex_lock(&c->lock);
	for (pp = &c->managed; *pp; pp = &(*pp)->next) {
		if ((*pp)->p == p) {
			ma = *pp;
			*pp = ma->next;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (!ma)
		return;
	if (ma->len != len && be->log)
		be->log(be->log_arg, UM_LOG_WARN,
			"cuda: managed_free(%p): %s given, %s allocated",
			p, UM_SIZE(len), UM_SIZE(ma->len));
	cuda_managed_give(be, ma->dev, ma->len);
	free(ma);
}

/*
 * Where a tier is, for cudaMemAdvise/cudaMemPrefetchAsync. host_only:
 * accessed-by takes only a device or "the host", not a host NUMA node.
 */
static int cuda_tier_loc(struct um_backend *be, um_tier_t t, int host_only,
			struct cudaMemLocation *loc)
{
	memset(loc, 0, sizeof(*loc));
	if (um__tier_is_dev(t)) {
		if (!um__cuda_dev_valid(be, (int)UM_TIER_ID(t)))
			return -ENODEV;
		loc->type = cudaMemLocationTypeDevice;
		loc->id = (int)UM_TIER_ID(t);
		return 0;
	}
	if (!um__tier_is_host(t))
		return -EINVAL;
	if (um__tier_is_any(t) || host_only) {
		loc->type = cudaMemLocationTypeHost;
		loc->id = 0;
	} else {
		loc->type = cudaMemLocationTypeHostNuma;
		loc->id = (int)UM_TIER_ID(t);
	}
	return 0;
}

int um__cuda_advise(struct um_backend *be, void *p, size_t len, int advice,
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
	ret = cuda_tier_loc(be, where, host_only, &loc);
	if (ret && needs_loc)
		return ret;
	if (ret) {
		/* The runtime ignores the location of these advices. */
		loc.type = cudaMemLocationTypeDevice;
		loc.id = cuda_of(be)->first_dev;
	}
	return um__cuda_rt_check(be, cudaMemAdvise(p, len, a, loc), "cudaMemAdvise");
}

int um__cuda_prefetch(struct um_backend *be, struct um_queue *q, void *p,
		 size_t len, um_tier_t where)
{
	struct cudaMemLocation loc;
	cudaStream_t s;
	cudaError_t e;
	int ret;

	if (!q || !p || !len)
		return -EINVAL;
	ret = cuda_tier_loc(be, where, 0, &loc);
	if (!ret)
		ret = um__cuda_queue_stream(be, q, &s);
	if (ret)
		return ret;
	if (loc.type == cudaMemLocationTypeDevice &&
	    !cuda_of(be)->managed_ok[loc.id])
		return -EOPNOTSUPP;
	e = cudaMemPrefetchAsync(p, len, loc, 0, s);
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
		e = cudaMemPrefetchAsync(p, len, loc, 0, s);
	}
	return um__cuda_rt_check(be, e, "cudaMemPrefetchAsync");
}

/*
 * Discard only the whole CPU pages inside [p, p + len): CUDA documents no
 * rounding for discard (prefetch and advise round outwards), and leaving a
 * partial page undiscarded is always correct, discarding a neighbour's bytes
 * never is.
 */
int um__cuda_discard(struct um_backend *be, struct um_queue *q, void *p,
		size_t len)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)p, hi = lo + len;
	void *ptrs[1];
	size_t sizes[1];
	cudaStream_t s;
	int ret;

	if (!q || !p || !len)
		return -EINVAL;
	ret = um__cuda_queue_stream(be, q, &s);
	if (ret)
		return ret;
	if (pg < 4096)
		pg = 4096;
	lo = (lo + pg - 1) / pg * pg;
	hi = hi / pg * pg;
	if (hi <= lo)
		return 0;
	ptrs[0] = (void *)lo;
	sizes[0] = hi - lo;
	return um__cuda_rt_check(be, cudaMemDiscardBatchAsync(ptrs, sizes, 1, 0,
							      s),
			    "cudaMemDiscardBatchAsync");
}
