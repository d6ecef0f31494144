// SPDX-License-Identifier: MIT
/*
 * vgpu_core.c - the virtual GPU: devices, configuration from the
 * environment, errors (sticky ones too), primary contexts, the host's
 * position on the virtual clock, and the device-level runtime entry points.
 *
 * Environment (each validated; a bad value ends the program with a message,
 * so a typo never silently turns a test into a skip):
 *   UM_VGPU_DEVICES      devices, 1..8 (1)
 *   UM_VGPU_BYTES        memory per device, 64M..1T (8G)
 *   UM_VGPU_NO_DRIVER    1: cudaGetDeviceCount fails like a machine without
 *                        a driver
 *   UM_VGPU_STICKY_AFTER N: the (N+1)th copy any stream executes poisons its
 *                        device instead (illegal address, sticky)
 *   UM_VGPU_OOM_AT       N: the Nth device allocation (cudaMalloc,
 *                        cuMemCreate) fails with out of memory
 *   UM_VGPU_MAP_WAITS    1: cuMemMap and cuMemSetAccess wait until every
 *                        stream of the device is idle (0: they do not)
 *   UM_VGPU_H2D_GBPS, UM_VGPU_D2H_GBPS, UM_VGPU_BOTH_GBPS,
 *   UM_VGPU_PAGEABLE_GBPS  the link model (55, 55, 95, 8.6: the H200 figures of
 *                        Documentation/performance.rst)
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu_int.h"

struct vg_state vg = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER,
	.maplock = PTHREAD_RWLOCK_INITIALIZER,
};

__thread int vg_in_callback;
static __thread cudaError_t vg_last;
static __thread int vg_dev_cur;
static __thread int vg_ctx_cur = -1;
static pthread_once_t vg_once = PTHREAD_ONCE_INIT;

void (*vgpu_pin_hook)(void);

double vg_max(double a, double b)
{
	return a > b ? a : b;
}

static void vg_die(const char *name, const char *val, const char *why)
{
	fprintf(stderr, "vgpu: %s=%s: %s\n", name, val, why);
	exit(2);
}

static uint64_t vg_env_u64(const char *name, uint64_t lo, uint64_t hi,
			   uint64_t def, int sizes)
{
	const char *s = getenv(name);
	char *end = NULL;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		vg_die(name, s, "not a number");
	if (sizes && *end) {
		switch (*end++) {
		case 'K': case 'k': mul = 1ull << 10; break;
		case 'M': case 'm': mul = 1ull << 20; break;
		case 'G': case 'g': mul = 1ull << 30; break;
		case 'T': case 't': mul = 1ull << 40; break;
		default: vg_die(name, s, "unknown suffix (K, M, G, T)");
		}
	}
	if (*end)
		vg_die(name, s, "trailing characters");
	if (v > hi / mul || v * mul < lo || v * mul > hi)
		vg_die(name, s, "out of range");
	return v * mul;
}

static double vg_env_gbps(const char *name, double def)
{
	const char *s = getenv(name);
	char *end = NULL;
	double v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0.1 ||
	    v > 100000)
		vg_die(name, s, "want GB/s between 0.1 and 100000");
	return v;
}

static void vg_init_once(void)
{
	uint64_t bytes;
	int i;

	vg.ndev = (int)vg_env_u64("UM_VGPU_DEVICES", 1, VG_MAX_DEV, 1, 0);
	bytes = vg_env_u64("UM_VGPU_BYTES", 64ull << 20, 1ull << 40,
			   8ull << 30, 1);
	vg.no_driver = (int)vg_env_u64("UM_VGPU_NO_DRIVER", 0, 1, 0, 0);
	vg.sticky_after = vg_env_u64("UM_VGPU_STICKY_AFTER", 0, UINT64_MAX,
				     UINT64_MAX, 0);
	vg.oom_at = vg_env_u64("UM_VGPU_OOM_AT", 1, UINT64_MAX, 0, 0);
	vg.m.map_waits = (int)vg_env_u64("UM_VGPU_MAP_WAITS", 0, 1, 0, 0);
	vg.m.h2d = vg_env_gbps("UM_VGPU_H2D_GBPS", 55.0);
	vg.m.d2h = vg_env_gbps("UM_VGPU_D2H_GBPS", 55.0);
	vg.m.both = vg_env_gbps("UM_VGPU_BOTH_GBPS", 95.0);
	vg.m.pageable = vg_env_gbps("UM_VGPU_PAGEABLE_GBPS", 8.6);
	vg.m.pf_h2d = 50.3;
	vg.m.pf_d2h = 10.0;
	vg.m.fault = 9.0;
	vg.m.hbm = 3000.0;
	vg.m.host_alloc_ns = 1.2e6;
	vg.m.host_alloc_ns_per_gib = 0.75e9;
	vg.m.host_reg_ns_per_mib = 0.09e6;
	vg.m.set_access_ns = 20e3;
	vg.ctx_bytes = 256ull << 20;
	for (i = 0; i < vg.ndev; i++)
		vg.dev[i].total = bytes;
	vg.inited = 1;
}

void vg_init(void)
{
	pthread_once(&vg_once, vg_init_once);
}

cudaError_t vg_fail(cudaError_t e)
{
	if (e != cudaSuccess)
		vg_last = e;
	return e;
}

int vg_cur_dev(void)
{
	return vg_dev_cur;
}

int vg_thread_ctx(void)
{
	return vg_ctx_cur;
}

void vg_set_cur_dev(int dev)
{
	vg_dev_cur = dev;
}

/* Make dev's primary context (once; it costs device memory) current. */
static void vg_ctx_make(int dev)
{
	pthread_mutex_lock(&vg.mu);
	if (!vg.dev[dev].ctx) {
		vg.dev[dev].ctx = 1;
		vg.dev[dev].used += vg.ctx_bytes;
	}
	pthread_mutex_unlock(&vg.mu);
	vg_ctx_cur = dev;
}

cudaError_t vg_check_dev(int dev)
{
	cudaError_t e;

	pthread_mutex_lock(&vg.mu);
	e = vg.dev[dev].sticky;
	pthread_mutex_unlock(&vg.mu);
	return e;
}

/*
 * Entry of a runtime call that uses the current device: CUDA forbids calls
 * from host-function callbacks; the runtime makes the device's primary
 * context on first use; a poisoned context fails every call.
 */
cudaError_t vg_enter(int *dev)
{
	cudaError_t e;

	vg_init();
	if (vg_in_callback) {
		fprintf(stderr, "vgpu: CUDA call from a cudaLaunchHostFunc callback\n");
		return vg_fail(cudaErrorNotPermitted);
	}
	if (vg.no_driver)
		return vg_fail(cudaErrorInsufficientDriver);
	if (vg_ctx_cur != vg_dev_cur)
		vg_ctx_make(vg_dev_cur);
	e = vg_check_dev(vg_dev_cur);
	if (dev)
		*dev = vg_dev_cur;
	return vg_fail(e);
}

void vg_make_sticky(int dev, const char *why)
{
	if (!vg.dev[dev].sticky)
		fprintf(stderr, "vgpu: device %d: %s: sticky illegal-address error\n",
			dev, why);
	vg.dev[dev].sticky = cudaErrorIllegalAddress;
}

/* Host functions due by the new time may run now: wake their workers. */
void vg_advance_host(double t)
{
	if (t > vg.host_now) {
		vg.host_now = t;
		pthread_cond_broadcast(&vg.cv);
	}
}

/* ---- vgpu.h read-outs ------------------------------------------------- */

unsigned vgpu_context_mask(void)
{
	unsigned m = 0;
	int i;

	pthread_mutex_lock(&vg.mu);
	for (i = 0; i < vg.ndev; i++)
		if (vg.dev[i].ctx)
			m |= 1u << i;
	pthread_mutex_unlock(&vg.mu);
	return m;
}

uint64_t vgpu_host_alloc_calls(void)
{
	uint64_t n;

	pthread_mutex_lock(&vg.mu);
	n = vg.host_alloc_calls;
	pthread_mutex_unlock(&vg.mu);
	return n;
}

double vgpu_host_now_ms(void)
{
	double t;

	pthread_mutex_lock(&vg.mu);
	t = vg.host_now / 1e6;
	pthread_mutex_unlock(&vg.mu);
	return t;
}

/* ---- errors ------------------------------------------------------------ */

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = vg_last;

	vg_init();
	vg_last = cudaSuccess;
	/* A poisoned context reports its error again and again. */
	if (e == cudaSuccess && !vg.no_driver)
		e = vg_check_dev(vg_dev_cur);
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	vg_init();
	if (vg_last == cudaSuccess && !vg.no_driver)
		return vg_check_dev(vg_dev_cur);
	return vg_last;
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
	case cudaErrorIllegalAddress:
		return "an illegal memory access was encountered";
	case cudaErrorNotPermitted: return "operation not permitted";
	case cudaErrorHostMemoryAlreadyRegistered:
		return "part or all of the requested memory range is already mapped";
	case cudaErrorHostMemoryNotRegistered:
		return "pointer does not correspond to a registered memory region";
	default: return "vgpu error";
	}
}

/* ---- devices ------------------------------------------------------------ */

cudaError_t cudaGetDeviceCount(int *n)
{
	vg_init();
	if (!n)
		return vg_fail(cudaErrorInvalidValue);
	if (vg.no_driver) {
		*n = 0;
		return vg_fail(cudaErrorInsufficientDriver);
	}
	*n = vg.ndev;
	return cudaSuccess;
}

/* CUDA 12+: cudaSetDevice makes the device's primary context current. */
cudaError_t cudaSetDevice(int d)
{
	vg_init();
	if (vg_in_callback)
		return vg_fail(cudaErrorNotPermitted);
	if (vg.no_driver)
		return vg_fail(cudaErrorInsufficientDriver);
	if (d < 0 || d >= vg.ndev)
		return vg_fail(cudaErrorInvalidDevice);
	vg_dev_cur = d;
	vg_ctx_make(d);
	return vg_fail(vg_check_dev(d));
}

cudaError_t cudaGetDevice(int *d)
{
	vg_init();
	if (!d)
		return vg_fail(cudaErrorInvalidValue);
	*d = vg_dev_cur;
	return cudaSuccess;
}

static cudaError_t vg_dev_arg(int dev)
{
	vg_init();
	if (vg.no_driver)
		return vg_fail(cudaErrorInsufficientDriver);
	if (dev < 0 || dev >= vg.ndev)
		return vg_fail(cudaErrorInvalidDevice);
	return cudaSuccess;
}

/* Attribute queries need no context (as on CUDA). */
cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr a, int dev)
{
	cudaError_t e = vg_dev_arg(dev);

	if (e)
		return e;
	if (!v)
		return vg_fail(cudaErrorInvalidValue);
	*v = a == cudaDevAttrConcurrentManagedAccess ? 1 : 0;
	return cudaSuccess;
}

/* A PCI address sysfs will not know: the backend then falls back. */
cudaError_t cudaDeviceGetPCIBusId(char *bdf, int len, int dev)
{
	cudaError_t e = vg_dev_arg(dev);

	if (e)
		return e;
	if (!bdf || len < 13)
		return vg_fail(cudaErrorInvalidValue);
	snprintf(bdf, (size_t)len, "0000:F%d:1F.7", dev);
	return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
	cudaError_t e = vg_dev_arg(dev);

	if (e)
		return e;
	if (!p)
		return vg_fail(cudaErrorInvalidValue);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name),
		 "vGPU %d (modeled: %.0f/%.0f GB/s one way, %.0f both)", dev,
		 vg.m.h2d, vg.m.d2h, vg.m.both);
	p->totalGlobalMem = vg.dev[dev].total;
	p->major = 9;
	return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
	vg_init();
	if (!v)
		return vg_fail(cudaErrorInvalidValue);
	/* the runtime's documented answer when no driver is installed */
	*v = vg.no_driver ? 0 : 13000;
	return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
	if (!v)
		return vg_fail(cudaErrorInvalidValue);
	*v = 13000;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	vg_device_drain(dev);
	e = vg.dev[dev].sticky;
	pthread_mutex_unlock(&vg.mu);
	return vg_fail(e);
}

cudaError_t cudaMemGetInfo(size_t *f, size_t *t)
{
	int dev;
	cudaError_t e = vg_enter(&dev);

	if (e)
		return e;
	if (!f || !t)
		return vg_fail(cudaErrorInvalidValue);
	pthread_mutex_lock(&vg.mu);
	*t = vg.dev[dev].total;
	*f = vg.dev[dev].total - vg.dev[dev].used;
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* Driver API: whether dev's primary context exists (it makes none). */
CUresult vg_drv_ctx_state(CUdevice dev, unsigned int *flags, int *active)
{
	vg_init();
	if (dev < 0 || dev >= vg.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vg.mu);
	*flags = 0;
	*active = vg.dev[dev].ctx;
	pthread_mutex_unlock(&vg.mu);
	return CUDA_SUCCESS;
}

/* Driver API with the current context's device. */
CUresult vg_drv_mem_info(size_t *f, size_t *t)
{
	int dev = vg_ctx_cur;

	if (dev < 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!f || !t)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&vg.mu);
	*t = vg.dev[dev].total;
	*f = vg.dev[dev].total - vg.dev[dev].used;
	pthread_mutex_unlock(&vg.mu);
	return vg.dev[dev].sticky ? CUDA_ERROR_ILLEGAL_ADDRESS : CUDA_SUCCESS;
}

/* Tests look for it (weak, gpu_util_host.c) to scale their sizes down. */
int um_vgpu = 1;
