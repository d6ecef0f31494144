// SPDX-License-Identifier: MIT
/*
 * vgpu_mem.c - memory of the virtual GPU.
 *
 * Device memory (cudaMalloc, cuMemCreate + cuMemMap, managed pages while
 * they are on the device) is a memfd mapped twice: PROT_NONE at the address
 * the program sees, so a CPU touch faults as on real hardware, and
 * read-write at a private alias that only the vGPU's workers use (copies,
 * memset, kernels). Managed memory is read-write at its address while its
 * pages are on the host and PROT_NONE while they are on the device.
 * Pinned host memory (cudaHostAlloc, cudaHostRegister) is ordinary memory
 * the vGPU remembers, so copies know their direction and whether they are
 * pageable (synchronous) or not.
 *
 * Freeing or unmapping memory that an operation still in flight uses is what
 * kills a real CUDA context; here it is reported on stderr and poisons the
 * device (sticky illegal address), so tests see it at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vgpu_int.h"

static size_t vg_round(size_t len, size_t unit)
{
	return (len + unit - 1) / unit * unit;
}

struct vg_map *vg_find(uintptr_t p, size_t len)
{
	struct vg_map *m;

	for (m = vg.maps; m; m = m->next)
		if (p >= m->base && p - m->base < m->len &&
		    len <= m->len - (p - m->base))
			return m;
	return NULL;
}

static struct vg_va *vg_va_of(uintptr_t p)
{
	struct vg_va *v;

	for (v = vg.vas; v; v = v->next)
		if (p >= v->base && p - v->base < v->len)
			return v;
	return NULL;
}

int vg_in_reservation(uintptr_t p)
{
	return vg_va_of(p) != NULL;
}

int vg_take(int dev, uint64_t len)
{
	struct vg_dev *d = &vg.dev[dev];

	vg.dev_allocs++;
	if (vg.oom_at && vg.dev_allocs == vg.oom_at) {
		fprintf(stderr, "vgpu: device allocation %llu: injected out of memory\n",
			(unsigned long long)vg.dev_allocs);
		return 0;
	}
	if (d->used + len > d->total)
		return 0;
	d->used += len;
	return 1;
}

void vg_give(int dev, uint64_t len)
{
	struct vg_dev *d = &vg.dev[dev];

	d->used = d->used > len ? d->used - len : 0;
}

/*
 * Where a worker reads or writes [p, p + len) for device dev: the alias of
 * device memory, pinned or managed memory; NULL for memory the device cannot
 * reach (unmapped VMM, no access set, another device's memory, pageable).
 * VMM pieces mapped side by side form one range through the reservation's
 * alias. Called with vg.maplock held.
 */
void *vg_resolve(const void *ptr, size_t len, int dev)
{
	uintptr_t p = (uintptr_t)ptr, q;
	struct vg_map *m;
	struct vg_va *v;
	void *out = NULL;

	pthread_mutex_lock(&vg.mu);
	m = vg_find(p, len ? len : 1);
	if (m) {
		if (m->kind == VG_K_HOSTALLOC || m->kind == VG_K_HOSTREG)
			out = (void *)p;
		else if (m->kind == VG_K_MANAGED ||
			 (m->dev == dev && (m->kind != VG_K_VMM || m->access)))
			out = m->alias + (p - m->base);
		goto out;
	}
	v = vg_va_of(p);
	if (!v || p + len > v->base + v->len)
		goto out;
	/* Every piece of a VMM range spanning several mappings. */
	for (q = p; q < p + len;) {
		m = vg_find(q, 1);
		if (!m || m->kind != VG_K_VMM || !m->access || m->dev != dev)
			goto out;
		q = m->base + m->len;
	}
	out = v->alias + (p - v->base);
out:
	pthread_mutex_unlock(&vg.mu);
	return out;
}

/* Report and poison when [lo, hi) is still used by work in flight. */
static int vg_busy_range(uintptr_t lo, uintptr_t hi, int dev, const char *call)
{
	struct CUstream_st *s = NULL;
	const struct vg_op *op = vg_inflight_user(lo, hi, &s);
	char why[160];

	if (!op)
		return 0;
	snprintf(why, sizeof(why), "%s(%p, %zu) while a %s on stream %p still uses it",
		 call, (void *)lo, (size_t)(hi - lo), op->what, (void *)s);
	vg_make_sticky(dev, why);
	if (s->dev != dev)
		vg_make_sticky(s->dev, why);
	return 1;
}

static void vg_map_add(struct vg_map *m)
{
	m->next = vg.maps;
	vg.maps = m;
}

static void vg_map_del(struct vg_map *m)
{
	struct vg_map **pp;

	for (pp = &vg.maps; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			return;
		}
}

/* A memfd of len bytes (plus its alias) for device memory. */
static int vg_memfd(size_t len, char **alias)
{
	int fd = memfd_create("vgpu", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len)) {
		close(fd);
		return -1;
	}
	if (alias) {
		*alias = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			      fd, 0);
		if (*alias == MAP_FAILED) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* ---- cudaMalloc, cudaMallocManaged, cudaFree ----------------------------- */

static cudaError_t vg_dev_alloc(void **out, size_t len, enum vg_kind kind,
				int dev)
{
	size_t rl = vg_round(len ? len : 1, VG_GRAN);
	struct vg_map *m = calloc(1, sizeof(*m));
	void *user;
	int prot = kind == VG_K_MANAGED ? PROT_READ | PROT_WRITE : PROT_NONE;

	if (!m)
		return vg_fail(cudaErrorMemoryAllocation);
	m->fd = vg_memfd(rl, &m->alias);
	if (m->fd < 0) {
		free(m);
		return vg_fail(cudaErrorMemoryAllocation);
	}
	user = mmap(NULL, rl, prot, MAP_SHARED, m->fd, 0);
	if (user == MAP_FAILED) {
		munmap(m->alias, rl);
		close(m->fd);
		free(m);
		return vg_fail(cudaErrorMemoryAllocation);
	}
	m->base = (uintptr_t)user;
	m->len = rl;
	m->kind = kind;
	m->dev = dev;
	if (kind == VG_K_MANAGED) {
		m->plan = calloc(rl / VG_PAGE, 1);
		m->live = calloc(rl / VG_PAGE, 1);
		if (!m->plan || !m->live)
			abort();
	}
	pthread_mutex_lock(&vg.mu);
	vg_map_add(m);
	pthread_mutex_unlock(&vg.mu);
	*out = user;
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t len)
{
	int dev, ok;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	if (!p)
		return vg_fail(cudaErrorInvalidValue);
	pthread_mutex_lock(&vg.mu);
	ok = vg_take(dev, vg_round(len ? len : 1, VG_GRAN));
	vg_advance_host(vg.host_now + 87e3);	/* H200: 1 MiB + free */
	pthread_mutex_unlock(&vg.mu);
	if (!ok)
		return vg_fail(cudaErrorMemoryAllocation);
	e = vg_dev_alloc(p, len, VG_K_DEVICE, dev);
	if (e) {
		pthread_mutex_lock(&vg.mu);
		vg_give(dev, vg_round(len ? len : 1, VG_GRAN));
		pthread_mutex_unlock(&vg.mu);
	}
	return e;
}

/* Managed memory is not counted by cudaMemGetInfo (H200). */
cudaError_t cudaMallocManaged(void **p, size_t len, unsigned int flags)
{
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	if (!p || !len || (flags != cudaMemAttachGlobal &&
			   flags != cudaMemAttachHost))
		return vg_fail(cudaErrorInvalidValue);
	return vg_dev_alloc(p, len, VG_K_MANAGED, dev);
}

static void vg_map_free(struct vg_map *m)
{
	munmap((void *)m->base, m->len);
	if (m->alias)
		munmap(m->alias, m->len);
	if (m->fd >= 0)
		close(m->fd);
	free(m->plan);
	free(m->live);
	free(m);
}

/* cudaFree synchronises the device first, as CUDA's does. */
cudaError_t cudaFree(void *p)
{
	struct vg_map *m;
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e || !p)
		return e;
	pthread_mutex_lock(&vg.mu);
	m = vg_find((uintptr_t)p, 1);
	if (!m || m->base != (uintptr_t)p ||
	    (m->kind != VG_K_DEVICE && m->kind != VG_K_MANAGED)) {
		pthread_mutex_unlock(&vg.mu);
		return vg_fail(cudaErrorInvalidValue);
	}
	vg_device_drain(m->dev);
	vg_map_del(m);
	if (m->kind == VG_K_DEVICE)
		vg_give(m->dev, m->len);
	pthread_mutex_unlock(&vg.mu);
	pthread_rwlock_wrlock(&vg.maplock);
	vg_map_free(m);
	pthread_rwlock_unlock(&vg.maplock);
	return cudaSuccess;
}

/* ---- pinned host memory ------------------------------------------------ */

static cudaError_t vg_host_track(void *p, size_t len, enum vg_kind kind)
{
	struct vg_map *m = calloc(1, sizeof(*m));

	if (!m)
		return vg_fail(cudaErrorMemoryAllocation);
	m->base = (uintptr_t)p;
	m->len = len;
	m->kind = kind;
	m->fd = -1;
	pthread_mutex_lock(&vg.mu);
	vg_map_add(m);
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* Slow on purpose, on the virtual clock: H200, 1.2 ms + 0.5..1 s per GiB. */
cudaError_t cudaHostAlloc(void **p, size_t len, unsigned int flags)
{
	cudaError_t e = vg_enter(NULL);
	void *mem;

	if (e)
		return e;
	if (vgpu_pin_hook)
		vgpu_pin_hook();
	if (!p || !len || (flags & ~(unsigned)(cudaHostAllocPortable |
					      cudaHostAllocMapped |
					      cudaHostAllocWriteCombined)))
		return vg_fail(cudaErrorInvalidValue);
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return vg_fail(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&vg.mu);
	vg.host_alloc_calls++;
	vg_advance_host(vg.host_now + vg.m.host_alloc_ns +
			vg.m.host_alloc_ns_per_gib * (double)len / (1ull << 30));
	pthread_mutex_unlock(&vg.mu);
	e = vg_host_track(mem, len, VG_K_HOSTALLOC);
	if (e)
		munmap(mem, len);
	else
		*p = mem;
	return e;
}

static struct vg_map *vg_host_untrack(void *p, enum vg_kind kind, int dev)
{
	struct vg_map *m;

	pthread_mutex_lock(&vg.mu);
	m = vg_find((uintptr_t)p, 1);
	if (!m || m->base != (uintptr_t)p || m->kind != kind) {
		pthread_mutex_unlock(&vg.mu);
		return NULL;
	}
	if (kind == VG_K_HOSTALLOC)
		vg_device_drain(dev);	/* cudaFreeHost synchronises */
	else
		vg_busy_range(m->base, m->base + m->len, dev,
			      "cudaHostUnregister");
	vg_map_del(m);
	pthread_mutex_unlock(&vg.mu);
	return m;
}

cudaError_t cudaFreeHost(void *p)
{
	struct vg_map *m;
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	if (!p)
		return cudaSuccess;
	m = vg_host_untrack(p, VG_K_HOSTALLOC, dev);
	if (!m)
		return vg_fail(cudaErrorInvalidValue);
	pthread_rwlock_wrlock(&vg.maplock);
	munmap((void *)m->base, m->len);
	pthread_rwlock_unlock(&vg.maplock);
	free(m);
	return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t len, unsigned int flags)
{
	struct vg_map *m;
	cudaError_t e = vg_enter(NULL);

	if (e)
		return e;
	if (vgpu_pin_hook)
		vgpu_pin_hook();
	if (!p || !len || (flags & ~(unsigned)(cudaHostRegisterPortable |
					      cudaHostRegisterMapped)))
		return vg_fail(cudaErrorInvalidValue);
	pthread_mutex_lock(&vg.mu);
	for (m = vg.maps; m; m = m->next)
		if ((uintptr_t)p < m->base + m->len &&
		    m->base < (uintptr_t)p + len)
			break;
	vg_advance_host(vg.host_now +
			vg.m.host_reg_ns_per_mib * (double)len / (1 << 20));
	pthread_mutex_unlock(&vg.mu);
	if (m)
		return vg_fail(cudaErrorHostMemoryAlreadyRegistered);
	return vg_host_track(p, len, VG_K_HOSTREG);
}

cudaError_t cudaHostUnregister(void *p)
{
	struct vg_map *m;
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	m = vg_host_untrack(p, VG_K_HOSTREG, dev);
	if (!m)
		return vg_fail(cudaErrorHostMemoryNotRegistered);
	free(m);
	return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *at,
				     const void *p)
{
	struct vg_map *m;
	cudaError_t e = vg_enter(NULL);

	if (e)
		return e;
	if (!at)
		return vg_fail(cudaErrorInvalidValue);
	memset(at, 0, sizeof(*at));
	at->type = cudaMemoryTypeUnregistered;
	pthread_mutex_lock(&vg.mu);
	m = vg_find((uintptr_t)p, 1);
	if (m) {
		at->device = m->dev;
		at->type = m->kind == VG_K_MANAGED ? cudaMemoryTypeManaged :
			   m->kind == VG_K_HOSTALLOC || m->kind == VG_K_HOSTREG ?
			   cudaMemoryTypeHost : cudaMemoryTypeDevice;
		at->hostPointer = at->type == cudaMemoryTypeDevice ? NULL :
				  (void *)p;
		at->devicePointer = (void *)p;
	} else if (vg_in_reservation((uintptr_t)p)) {
		at->type = cudaMemoryTypeDevice;
	}
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/*
 * Managed pages [lo, hi) of m are now on the device (PROT_NONE at the
 * program's address) or on the host (read-write). maplock held for writing.
 */
void vg_managed_set(struct vg_map *m, uintptr_t lo, uintptr_t hi, int on_dev)
{
	size_t a = (lo - m->base) / VG_PAGE;
	size_t b = (hi - m->base + VG_PAGE - 1) / VG_PAGE;

	memset(m->live + a, on_dev, b - a);
	mprotect((void *)(m->base + a * VG_PAGE), (b - a) * VG_PAGE,
		 on_dev ? PROT_NONE : PROT_READ | PROT_WRITE);
}

/* ---- driver: virtual-memory management ---------------------------------- */

static int vg_drv_ctx(void)
{
	vg_init();
	if (vg_in_callback || vg.no_driver)
		return -1;
	return vg_thread_ctx();
}

static CUresult vg_reserve(CUdeviceptr *ptr, size_t size, size_t align,
			   CUdeviceptr addr, unsigned long long flags)
{
	size_t a = align ? align : VG_GRAN, span;
	uintptr_t base, start;
	struct vg_va *v;
	void *p;

	if (vg_drv_ctx() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ptr || !size || size % VG_GRAN || a % VG_GRAN || addr || flags)
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
	v->alias = mmap(NULL, size, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (v->alias == MAP_FAILED)
		abort();
	v->base = start;
	v->len = size;
	pthread_mutex_lock(&vg.mu);
	v->next = vg.vas;
	vg.vas = v;
	pthread_mutex_unlock(&vg.mu);
	*ptr = (CUdeviceptr)start;
	return CUDA_SUCCESS;
}

static CUresult vg_addr_free(CUdeviceptr ptr, size_t size)
{
	struct vg_va **pp, *v = NULL;
	struct vg_map *m;

	if (vg_drv_ctx() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&vg.mu);
	for (pp = &vg.vas; *pp; pp = &(*pp)->next) {
		if ((*pp)->base == (uintptr_t)ptr && (*pp)->len == size) {
			v = *pp;
			break;
		}
	}
	/* Still mapped inside: refused, as by the driver. */
	for (m = vg.maps; v && m; m = m->next)
		if (m->kind == VG_K_VMM && m->base >= v->base &&
		    m->base < v->base + v->len)
			v = NULL;
	if (v)
		*pp = v->next;
	pthread_mutex_unlock(&vg.mu);
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	munmap((void *)v->base, v->len);
	munmap(v->alias, v->len);
	free(v);
	return CUDA_SUCCESS;
}

static CUresult vg_create(CUmemGenericAllocationHandle *h, size_t size,
			  const CUmemAllocationProp *prop,
			  unsigned long long flags)
{
	struct vg_phys *ph;
	int ok;

	if (vg_drv_ctx() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!h || !size || size % VG_GRAN || !prop || flags ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= vg.ndev)
		return CUDA_ERROR_INVALID_VALUE;
	if (vg.dev[prop->location.id].sticky)
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	pthread_mutex_lock(&vg.mu);
	ok = vg_take(prop->location.id, size);
	pthread_mutex_unlock(&vg.mu);
	if (!ok)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ph = calloc(1, sizeof(*ph));
	if (ph)
		ph->fd = vg_memfd(size, NULL);
	if (!ph || ph->fd < 0) {
		free(ph);
		pthread_mutex_lock(&vg.mu);
		vg_give(prop->location.id, size);
		pthread_mutex_unlock(&vg.mu);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	ph->magic = VG_PHYS_MAGIC;
	ph->dev = prop->location.id;
	ph->len = size;
	*h = (CUmemGenericAllocationHandle)(uintptr_t)ph;
	return CUDA_SUCCESS;
}

/* The memory goes back once released and no longer mapped. */
static void vg_phys_put(struct vg_phys *ph)
{
	if (!ph->released || ph->maps)
		return;
	vg_give(ph->dev, ph->len);
	close(ph->fd);
	ph->magic = 0;
	free(ph);
}

static CUresult vg_release(CUmemGenericAllocationHandle h)
{
	struct vg_phys *ph = (struct vg_phys *)(uintptr_t)h;

	if (vg_drv_ctx() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ph || ph->magic != VG_PHYS_MAGIC || ph->released)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vg.mu);
	ph->released = 1;
	vg_phys_put(ph);
	pthread_mutex_unlock(&vg.mu);
	return CUDA_SUCCESS;
}

/* UM_VGPU_MAP_WAITS=1: mapping waits for the device's work in flight. */
static void vg_map_wait(int dev)
{
	if (vg.m.map_waits)
		vg_device_drain(dev);
}

static CUresult vg_map(CUdeviceptr ptr, size_t size, size_t offset,
		       CUmemGenericAllocationHandle h, unsigned long long flags)
{
	struct vg_phys *ph = (struct vg_phys *)(uintptr_t)h;
	struct vg_map *m;
	struct vg_va *v;
	void *a, *u;

	if (vg_drv_ctx() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ph || ph->magic != VG_PHYS_MAGIC || offset || flags ||
	    size != ph->len || ptr % VG_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vg.mu);
	v = vg_va_of(ptr);
	if (!v || ptr + size > v->base + v->len || vg_find(ptr, size) ||
	    vg_find(ptr + size - 1, 1)) {
		pthread_mutex_unlock(&vg.mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	vg_map_wait(ph->dev);
	pthread_mutex_unlock(&vg.mu);
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_rwlock_wrlock(&vg.maplock);
	u = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, ph->fd,
		 0);
	a = mmap(v->alias + (ptr - v->base), size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, ph->fd, 0);
	pthread_rwlock_unlock(&vg.maplock);
	if (u == MAP_FAILED || a == MAP_FAILED)
		abort();	/* MAP_FIXED inside our own reservation */
	m->base = ptr;
	m->len = size;
	m->alias = a;
	m->kind = VG_K_VMM;
	m->dev = ph->dev;
	m->fd = -1;
	m->phys = ph;
	pthread_mutex_lock(&vg.mu);
	ph->maps++;
	vg_map_add(m);
	pthread_mutex_unlock(&vg.mu);
	return CUDA_SUCCESS;
}

static CUresult vg_unmap(CUdeviceptr ptr, size_t size)
{
	struct vg_map *m, *list = NULL, **pp;
	struct vg_va *v;
	int dev = vg_drv_ctx();

	if (dev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ptr % VG_GRAN || !size || size % VG_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vg.mu);
	v = vg_va_of(ptr);
	if (!v || ptr + size > v->base + v->len) {
		pthread_mutex_unlock(&vg.mu);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* No wait: unmapping under work in flight is the caller's bug. */
	for (pp = &vg.maps; (m = *pp);) {
		if (m->kind == VG_K_VMM && m->base >= ptr &&
		    m->base + m->len <= ptr + size) {
			vg_busy_range(m->base, m->base + m->len, m->dev,
				      "cuMemUnmap");
			*pp = m->next;
			m->next = list;
			list = m;
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&vg.mu);
	pthread_rwlock_wrlock(&vg.maplock);
	mmap((void *)ptr, size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	mmap(v->alias + (ptr - v->base), size, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	pthread_rwlock_unlock(&vg.maplock);
	pthread_mutex_lock(&vg.mu);
	while ((m = list)) {
		list = m->next;
		m->alias = NULL;	/* the reservation's view: not ours */
		m->phys->maps--;
		vg_phys_put(m->phys);
		free(m);
	}
	pthread_mutex_unlock(&vg.mu);
	return CUDA_SUCCESS;
}

/* Synchronous, as documented: the host's clock pays for it. */
static CUresult vg_set_access(CUdeviceptr ptr, size_t size,
			      const CUmemAccessDesc *d, size_t count)
{
	struct vg_map *m;
	uintptr_t q;

	if (vg_drv_ctx() < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!d || count != 1 ||
	    d->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    d->flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
	    ptr % VG_GRAN || !size || size % VG_GRAN)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vg.mu);
	for (q = ptr; q < ptr + size; q = m->base + m->len) {
		m = vg_find(q, 1);
		if (!m || m->kind != VG_K_VMM || m->dev != d->location.id) {
			pthread_mutex_unlock(&vg.mu);
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	vg_map_wait(d->location.id);
	for (q = ptr; q < ptr + size; q = m->base + m->len) {
		m = vg_find(q, 1);
		m->access = 1;
	}
	vg_advance_host(vg.host_now + vg.m.set_access_ns);
	pthread_mutex_unlock(&vg.mu);
	return CUDA_SUCCESS;
}

static CUresult vg_granularity(size_t *g, const CUmemAllocationProp *prop,
			       CUmemAllocationGranularity_flags o)
{
	(void)o;
	vg_init();
	if (!g || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*g = VG_GRAN;
	return CUDA_SUCCESS;
}

static CUresult vg_error_string(CUresult r, const char **s)
{
	if (!s)
		return CUDA_ERROR_INVALID_VALUE;
	*s = r == CUDA_SUCCESS ? "no error" :
	     r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" :
	     r == CUDA_ERROR_INVALID_VALUE ? "invalid argument" :
	     r == CUDA_ERROR_INVALID_CONTEXT ? "invalid device context" :
	     r == CUDA_ERROR_ILLEGAL_ADDRESS ?
		"an illegal memory access was encountered" :
		"vgpu driver error";
	return CUDA_SUCCESS;
}

static const struct {
	const char *name;
	void *fn;
} vg_syms[] = {
	{ "cuMemAddressReserve", (void *)vg_reserve },
	{ "cuMemAddressFree", (void *)vg_addr_free },
	{ "cuMemCreate", (void *)vg_create },
	{ "cuMemRelease", (void *)vg_release },
	{ "cuMemMap", (void *)vg_map },
	{ "cuMemUnmap", (void *)vg_unmap },
	{ "cuMemSetAccess", (void *)vg_set_access },
	{ "cuMemGetAllocationGranularity", (void *)vg_granularity },
	{ "cuMemGetInfo", (void *)vg_drv_mem_info },
	{ "cuGetErrorString", (void *)vg_error_string },
	{ "cuDevicePrimaryCtxGetState", (void *)vg_drv_ctx_state },
};

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
		unsigned int version, unsigned long long flags,
		enum cudaDriverEntryPointQueryResult *status)
{
	size_t i;

	(void)flags;
	vg_init();
	if (!symbol || !fn || version < 10020 || version > 13000)
		return vg_fail(cudaErrorInvalidValue);
	for (i = 0; i < sizeof(vg_syms) / sizeof(vg_syms[0]); i++) {
		if (!strcmp(symbol, vg_syms[i].name)) {
			*fn = vg_syms[i].fn;
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
