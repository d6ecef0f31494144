// SPDX-License-Identifier: MIT
/*
 * map_under_copy - settles one question of the engine's design on a real GPU: does
 * mapping device memory (cuMemCreate + cuMemMap + cuMemSetAccess, the last
 * documented as synchronous) wait for a device-to-host copy in flight on
 * another stream? If it does, a restore that maps its region before its
 * copies stalls behind any eviction running at the same time.
 *
 *   1. map + set access + unmap of SIZE bytes on an idle device: t_idle;
 *   2. a D2H copy of SIZE bytes (pinned) alone: t_copy (events);
 *   3. the same copy issued, then map + set access of SIZE at once, timed
 *      on the host; right after, is the copy done?
 * "waits": the copy was done when mapping returned and mapping under the
 * copy took at least half the copy's time beyond t_idle.
 *
 * usage: map_under_copy [--bytes SIZE] [--json]   (SIZE default 2G)
 * Exit: 0 measured, 1 a CUDA call failed, 2 bad usage, 4 no GPU.
 * Built with nvcc's runtime for the GPU and against the virtual GPU
 * (tests/gpu/vgpu) from the same source, where UM_VGPU_MAP_WAITS decides.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef CUresult (*pfn_create)(CUmemGenericAllocationHandle *, size_t,
			       const CUmemAllocationProp *,
			       unsigned long long);
typedef CUresult (*pfn_release)(CUmemGenericAllocationHandle);
typedef CUresult (*pfn_reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
				unsigned long long);
typedef CUresult (*pfn_addr_free)(CUdeviceptr, size_t);
typedef CUresult (*pfn_map)(CUdeviceptr, size_t, size_t,
			    CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*pfn_unmap)(CUdeviceptr, size_t);
typedef CUresult (*pfn_access)(CUdeviceptr, size_t, const CUmemAccessDesc *,
			       size_t);

static struct {
	pfn_create create;
	pfn_release release;
	pfn_reserve reserve;
	pfn_addr_free addr_free;
	pfn_map map;
	pfn_unmap unmap;
	pfn_access access;
} drv;

static const char *fail_what = "";

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int sym(const char *name, void *slot, size_t size)
{
	enum cudaDriverEntryPointQueryResult st;
	void *fn = NULL;

	if (cudaGetDriverEntryPointByVersion(name, &fn, 12000,
					     cudaEnableDefault, &st) ||
	    st != cudaDriverEntryPointSuccess || !fn) {
		fail_what = name;
		return -1;
	}
	memcpy(slot, &fn, size);
	return 0;
}

#define SYM(field, name) sym(name, &drv.field, sizeof(drv.field))

static int resolve(void)
{
	return SYM(create, "cuMemCreate") || SYM(release, "cuMemRelease") ||
	       SYM(reserve, "cuMemAddressReserve") ||
	       SYM(addr_free, "cuMemAddressFree") || SYM(map, "cuMemMap") ||
	       SYM(unmap, "cuMemUnmap") || SYM(access, "cuMemSetAccess");
}

#define CK(call) do {							\
		if ((call)) {						\
			fail_what = #call;				\
			return -1;					\
		}							\
	} while (0)

/* Create, map and open [va, va + n) for device 0; *h gets the handle. */
static int map_region(CUdeviceptr va, size_t n,
		      CUmemGenericAllocationHandle *h)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(drv.create(h, n, &prop, 0));
	CK(drv.map(va, n, 0, *h, 0));
	CK(drv.access(va, n, &acc, 1));
	return 0;
}

static int unmap_region(CUdeviceptr va, size_t n,
			CUmemGenericAllocationHandle h)
{
	CK(drv.unmap(va, n));
	CK(drv.release(h));
	return 0;
}

struct result {
	double idle_ms, copy_ms, under_ms;
	int copy_done_after_map, waits;
};

static int measure(size_t n, struct result *r)
{
	CUmemGenericAllocationHandle h;
	cudaStream_t s;
	cudaEvent_t a, b;
	CUdeviceptr va;
	void *host = NULL, *src = NULL;
	float ms = 0;
	double t;
	cudaError_t q;

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaEventCreate(&a));
	CK(cudaEventCreate(&b));
	CK(cudaHostAlloc(&host, n, cudaHostAllocPortable));
	CK(cudaMalloc(&src, n));
	CK(drv.reserve(&va, n, 0, 0, 0));
	/* 1: mapping alone (twice: the first may pay one-time costs). */
	for (int i = 0; i < 2; i++) {
		t = now_ms();
		if (map_region(va, n, &h))
			return -1;
		r->idle_ms = now_ms() - t;
		if (unmap_region(va, n, h))
			return -1;
	}
	/* 2: the copy alone. */
	CK(cudaEventRecord(a, s));
	CK(cudaMemcpyAsync(host, src, n, cudaMemcpyDeviceToHost, s));
	CK(cudaEventRecord(b, s));
	CK(cudaEventSynchronize(b));
	CK(cudaEventElapsedTime(&ms, a, b));
	r->copy_ms = ms;
	/* 3: the copy, and mapping while it runs. */
	CK(cudaMemcpyAsync(host, src, n, cudaMemcpyDeviceToHost, s));
	CK(cudaEventRecord(b, s));
	t = now_ms();
	if (map_region(va, n, &h))
		return -1;
	r->under_ms = now_ms() - t;
	q = cudaEventQuery(b);
	if (q != cudaSuccess && q != cudaErrorNotReady) {
		fail_what = "cudaEventQuery";
		return -1;
	}
	(void)cudaGetLastError();
	r->copy_done_after_map = q == cudaSuccess;
	r->waits = r->copy_done_after_map &&
		   r->under_ms - r->idle_ms >= r->copy_ms / 2;
	CK(cudaEventSynchronize(b));
	if (unmap_region(va, n, h))
		return -1;
	CK(drv.addr_free(va, n));
	CK(cudaFree(src));
	CK(cudaFreeHost(host));
	CK(cudaStreamDestroy(s));
	return 0;
}

static int parse_bytes(const char *s, size_t *out)
{
	char *end = NULL;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return -1;
	if (*end == 'M')
		v <<= 20, end++;
	else if (*end == 'G')
		v <<= 30, end++;
	if (*end || v < (2u << 20) || v > (64ull << 30) || v % (2u << 20))
		return -1;
	*out = (size_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	size_t n = 2ull << 30;
	struct result r;
	int json = 0, i, dev = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) {
			if (parse_bytes(argv[++i], &n)) {
				fprintf(stderr, "map_under_copy: bad --bytes %s (2M multiple, 2M..64G)\n",
					argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: map_under_copy [--bytes SIZE] [--json]\n");
			return 2;
		}
	}
	if (cudaGetDeviceCount(&dev) != cudaSuccess || dev < 1) {
		printf("map_under_copy: skipped: no usable GPU\n");
		return 4;
	}
	memset(&r, 0, sizeof(r));
	if (resolve() || measure(n, &r)) {
		fprintf(stderr, "map_under_copy: %s failed: %s\n", fail_what,
			cudaGetErrorString(cudaGetLastError()));
		return 1;
	}
	if (json)
		printf("{\"tool\":\"map_under_copy\",\"bytes\":%zu,\"map_idle_ms\":%.3f,\"copy_ms\":%.3f,\"map_under_copy_ms\":%.3f,\"copy_done_after_map\":%s,\"map_waits_for_copy\":%s}\n",
		       n, r.idle_ms, r.copy_ms, r.under_ms,
		       r.copy_done_after_map ? "true" : "false",
		       r.waits ? "true" : "false");
	else
		printf("map + set access of %zu MiB: idle %.3f ms; D2H copy alone %.3f ms; under the copy %.3f ms, copy %s when it returned: mapping %s for work in flight\n",
		       n >> 20, r.idle_ms, r.copy_ms, r.under_ms,
		       r.copy_done_after_map ? "done" : "still running",
		       r.waits ? "WAITS" : "does not wait");
	return 0;
}
