// SPDX-License-Identifier: MIT
/*
 * Description: the virtual GPU's own semantics, the ones libum's tests rely
 * on: streams run in order and nothing completes early; events mark stream
 * positions and cross-stream waits hold; a CPU touch of device memory
 * faults; unmapping memory under a copy in flight is caught; events are
 * per device; sticky errors, out of memory and bad environment values;
 * host functions may not call CUDA; the link model's modeled times.
 * Each test sets its environment before the first CUDA call of its own
 * (forked) process.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "vgpu.h"
#include "touch.h"

#define MiB (1ull << 20)

/* A host function that blocks its stream until the test lets it go. */
static sem_t gate;

static void CUDART_CB hold(void *arg)
{
	(void)arg;
	sem_wait(&gate);
}

static int order_log[16], order_n;

static void CUDART_CB append(void *arg)
{
	order_log[order_n++] = (int)(intptr_t)arg;
}

static cudaError_t cuda_in_callback;

static void CUDART_CB call_cuda(void *arg)
{
	void *p = NULL;

	(void)arg;
	cuda_in_callback = cudaMalloc(&p, 4096);
}

static void *drv(const char *name)
{
	enum cudaDriverEntryPointQueryResult st;
	void *fn = NULL;

	if (cudaGetDriverEntryPointByVersion(name, &fn, 12000,
					     cudaEnableDefault, &st) ||
	    st != cudaDriverEntryPointSuccess)
		return NULL;
	return fn;
}

/* The driver's VMM calls, fetched as libum fetches them. */
static struct {
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
			    unsigned long long);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
			   const CUmemAllocationProp *, unsigned long long);
	CUresult (*map)(CUdeviceptr, size_t, size_t,
			CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *,
			   size_t);
	CUresult (*unmap)(CUdeviceptr, size_t);
} vmm;

/* Reserve, create, map and open len bytes of device 0 at *va. */
static CUresult vmm_map(size_t len, CUdeviceptr *va)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;
	CUmemGenericAllocationHandle h;
	CUresult r;
	void *p[5] = { drv("cuMemAddressReserve"), drv("cuMemCreate"),
		       drv("cuMemMap"), drv("cuMemSetAccess"),
		       drv("cuMemUnmap") };

	for (int i = 0; i < 5; i++)
		if (!p[i])
			return CUDA_ERROR_NOT_FOUND;
	memcpy(&vmm.reserve, &p[0], sizeof(p[0]));
	memcpy(&vmm.create, &p[1], sizeof(p[1]));
	memcpy(&vmm.map, &p[2], sizeof(p[2]));
	memcpy(&vmm.access, &p[3], sizeof(p[3]));
	memcpy(&vmm.unmap, &p[4], sizeof(p[4]));
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	memset(&acc, 0, sizeof(acc));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	r = vmm.reserve(va, len, 0, 0, 0);
	if (!r)
		r = vmm.create(&h, len, &prop, 0);
	if (!r)
		r = vmm.map(*va, len, 0, h, 0);
	if (!r)
		r = vmm.access(*va, len, &acc, 1);
	return r;
}

TEST(streams_run_in_order_and_nothing_completes_early)
{
	cudaStream_t s;
	cudaEvent_t e, right_after;
	int i;

	sem_init(&gate, 0, 0);
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s,
					cudaStreamNonBlocking));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&e));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&right_after));
	ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(s, hold, NULL));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(right_after, s));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(s, append,
						(void *)(intptr_t)i));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e, s));
	usleep(50000);
	/* Held: nothing after the gate ran, the event is not reached. */
	ASSERT_EQ(0, order_n);
	/* Due by the clock, held in fact: a query says so, and returns. */
	ASSERT_EQ(cudaErrorNotReady, cudaEventQuery(right_after));
	ASSERT_EQ(cudaErrorNotReady, cudaEventQuery(e));
	ASSERT_EQ(cudaErrorNotReady, cudaStreamQuery(s));
	(void)cudaGetLastError();
	sem_post(&gate);
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(e));
	ASSERT_EQ(cudaSuccess, cudaEventQuery(e));
	ASSERT_EQ(8, order_n);
	for (i = 0; i < 8; i++)
		ASSERT_EQ(i, order_log[i]);
	ASSERT_EQ(cudaSuccess, cudaStreamDestroy(s));
	/* A destroyed stream is no handle any more. */
	ASSERT_EQ(cudaErrorInvalidResourceHandle, cudaStreamSynchronize(s));
	ASSERT_EQ(cudaSuccess, cudaEventDestroy(e));
}

TEST(wait_event_orders_another_stream_at_the_record_of_the_call)
{
	cudaStream_t a, b;
	cudaEvent_t e;

	sem_init(&gate, 0, 0);
	order_n = 0;
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&a, 1));
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&b, 1));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&e));
	/* Never recorded: waiting on it waits for nothing. */
	ASSERT_EQ(cudaSuccess, cudaStreamWaitEvent(b, e, 0));
	ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(a, hold, NULL));
	ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(a, append, (void *)1));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e, a));
	ASSERT_EQ(cudaSuccess, cudaStreamWaitEvent(b, e, 0));
	ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(b, append, (void *)2));
	/* Re-recorded later on an idle stream: b still waits for a's. */
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e, NULL));
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(e));
	usleep(50000);
	ASSERT_EQ(0, order_n);
	sem_post(&gate);
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(b));
	ASSERT_EQ(2, order_n);
	ASSERT_EQ(1, order_log[0]);
	ASSERT_EQ(2, order_log[1]);
	/* Bad handles and flags are refused. */
	ASSERT_EQ(cudaErrorInvalidValue, cudaStreamWaitEvent(b, e, 77));
	ASSERT_EQ(cudaErrorInvalidResourceHandle,
		  cudaStreamWaitEvent(b, NULL, 0));
	(void)cudaGetLastError();
}

TEST(host_functions_may_not_call_cuda)
{
	cudaStream_t s;

	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, 1));
	ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(s, call_cuda, NULL));
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s));
	ASSERT_EQ(cudaErrorNotPermitted, cuda_in_callback);
	ASSERT_EQ(cudaErrorInvalidValue, cudaLaunchHostFunc(s, NULL, NULL));
	(void)cudaGetLastError();
}

TEST(cpu_touch_of_device_memory_faults)
{
	struct cudaMemLocation dev = { cudaMemLocationTypeDevice, 0 };
	struct cudaMemLocation host = { cudaMemLocationTypeHost, 0 };
	CUdeviceptr va;
	char *d = NULL, *m = NULL, *pin = NULL;

	ASSERT_EQ(cudaSuccess, cudaMalloc((void **)&d, MiB));
	ASSERT_EQ(1, vgpu_touch_faults(d));
	ASSERT_EQ(CUDA_SUCCESS, vmm_map(2 * MiB, &va));
	ASSERT_EQ(1, vgpu_touch_faults((char *)va));
	/* Managed: readable on the host, faults while on the device. */
	ASSERT_EQ(cudaSuccess, cudaMallocManaged((void **)&m, MiB,
						 cudaMemAttachGlobal));
	m[0] = 7;
	ASSERT_EQ(0, vgpu_touch_faults(m));
	ASSERT_EQ(cudaSuccess, cudaMemPrefetchAsync(m, MiB, dev, 0, NULL));
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(NULL));
	ASSERT_EQ(1, vgpu_touch_faults(m));
	ASSERT_EQ(cudaSuccess, cudaMemPrefetchAsync(m, MiB, host, 0, NULL));
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(NULL));
	ASSERT_EQ(7, m[0]);
	/* Pinned host memory is the host's. */
	ASSERT_EQ(cudaSuccess, cudaHostAlloc((void **)&pin, MiB, 0));
	ASSERT_EQ(0, vgpu_touch_faults(pin));
	/* The device's own copies reach device memory. */
	memset(pin, 0x3c, MiB);
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(d, pin, MiB,
					       cudaMemcpyDefault, NULL));
	/* Asynchronous: the source may not be reused before the copy ran. */
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(NULL));
	memset(pin, 0, MiB);
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(pin, d, MiB,
					       cudaMemcpyDefault, NULL));
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(NULL));
	ASSERT_EQ(0x3c, pin[MiB - 1]);
}

TEST(unmap_under_a_copy_in_flight_poisons_the_device)
{
	cudaStream_t s;
	CUdeviceptr va;
	char *pin = NULL;

	sem_init(&gate, 0, 0);
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s, 1));
	ASSERT_EQ(cudaSuccess, cudaHostAlloc((void **)&pin, 2 * MiB, 0));
	ASSERT_EQ(CUDA_SUCCESS, vmm_map(2 * MiB, &va));
	ASSERT_EQ(cudaSuccess, cudaLaunchHostFunc(s, hold, NULL));
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(pin, (void *)va, 2 * MiB,
					       cudaMemcpyDefault, s));
	/* The copy has not run: unmapping now is the bug the GPU punishes. */
	ASSERT_EQ(CUDA_SUCCESS, vmm.unmap(va, 2 * MiB));
	sem_post(&gate);
	ASSERT_EQ(cudaErrorIllegalAddress, cudaStreamSynchronize(s));
	/* Sticky: every later call fails the same way. */
	ASSERT_EQ(cudaErrorIllegalAddress, cudaMalloc((void **)&pin, 4096));
	ASSERT_EQ(cudaErrorIllegalAddress, cudaGetLastError());
	ASSERT_EQ(cudaErrorIllegalAddress, cudaGetLastError());
}

TEST(events_belong_to_their_device)
{
	cudaStream_t s1;
	cudaEvent_t e0, e1;
	int n = 0, v = 0;
	float ms;

	setenv("UM_VGPU_DEVICES", "2", 1);
	ASSERT_EQ(0u, vgpu_context_mask());
	ASSERT_EQ(cudaSuccess, cudaGetDeviceCount(&n));
	ASSERT_EQ(2, n);
	/* Attribute queries make no context. */
	ASSERT_EQ(cudaSuccess, cudaDeviceGetAttribute(&v,
			cudaDevAttrConcurrentManagedAccess, 1));
	ASSERT_EQ(0u, vgpu_context_mask());
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&e0));	/* device 0 */
	ASSERT_EQ(1u, vgpu_context_mask());
	ASSERT_EQ(cudaSuccess, cudaSetDevice(1));
	ASSERT_EQ(3u, vgpu_context_mask());
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s1, 1));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&e1));
	/* Device 0's event on device 1's stream: refused, as by the driver. */
	ASSERT_EQ(cudaErrorInvalidResourceHandle, cudaEventRecord(e0, s1));
	(void)cudaGetLastError();
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e1, s1));
	/* Waiting across devices is legal. */
	ASSERT_EQ(cudaSuccess, cudaSetDevice(0));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(e0, NULL));
	ASSERT_EQ(cudaSuccess, cudaStreamWaitEvent(s1, e0, 0));
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(s1));
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(e0));
	ASSERT_EQ(cudaErrorInvalidResourceHandle,
		  cudaEventElapsedTime(&ms, e0, e1));
	(void)cudaGetLastError();
	ASSERT_EQ(cudaErrorInvalidDevice, cudaSetDevice(2));
	(void)cudaGetLastError();
}

TEST(modeled_times_follow_the_link_model)
{
	const size_t n = 256 * MiB;
	cudaStream_t s1, s2;
	cudaEvent_t a, b, c;
	char *h = NULL, *d = NULL, *pageable, *x = NULL;
	float ms = 0;
	double gbps, t0;

	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s1, 1));
	ASSERT_EQ(cudaSuccess, cudaStreamCreateWithFlags(&s2, 1));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&a));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&b));
	ASSERT_EQ(cudaSuccess, cudaEventCreate(&c));
	ASSERT_EQ(cudaSuccess, cudaHostAlloc((void **)&h, n, 0));
	ASSERT_EQ(cudaSuccess, cudaMalloc((void **)&d, n));
	/* One way, pinned: 55 GB/s. */
	ASSERT_EQ(cudaSuccess, cudaEventRecord(a, s1));
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(d, h, n, cudaMemcpyDefault, s1));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(b, s1));
	/* Not done before the copy is (whatever the clock says). */
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(b));
	ASSERT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
	gbps = (double)n / (ms * 1e6);
	EXPECT_LT(54.0, gbps);
	EXPECT_GT(56.0, gbps);
	/* Both ways at once, equal halves: 95 GB/s in total. */
	ASSERT_EQ(cudaSuccess, cudaEventRecord(a, s1));
	ASSERT_EQ(cudaSuccess, cudaStreamWaitEvent(s2, a, 0));
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(d, h, n / 2, cudaMemcpyDefault,
					       s1));
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(h + n / 2, d + n / 2, n / 2,
					       cudaMemcpyDefault, s2));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(c, s2));
	ASSERT_EQ(cudaSuccess, cudaStreamWaitEvent(s1, c, 0));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(b, s1));
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(b));
	ASSERT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
	gbps = (double)n / (ms * 1e6);
	EXPECT_LT(94.0, gbps);
	EXPECT_GT(96.0, gbps);
	/* Pageable: synchronous, 8.6 GB/s, the host's clock moves. */
	pageable = malloc(n);
	ASSERT_NONNULL(pageable);
	memset(pageable, 1, n);
	ASSERT_EQ(cudaSuccess, cudaEventRecord(a, s1));
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(d, pageable, n,
					       cudaMemcpyDefault, s1));
	ASSERT_EQ(cudaSuccess, cudaEventQuery(a));
	ASSERT_EQ(cudaSuccess, cudaEventRecord(b, s1));
	ASSERT_EQ(cudaSuccess, cudaEventSynchronize(b));
	ASSERT_EQ(cudaSuccess, cudaEventElapsedTime(&ms, a, b));
	gbps = (double)n / (ms * 1e6);
	EXPECT_LT(8.5, gbps);
	EXPECT_GT(8.7, gbps);
	/* cudaHostAlloc is slow on the host clock: >= 1.2 ms + 0.5 s/GiB. */
	t0 = vgpu_host_now_ms();
	ASSERT_EQ(cudaSuccess, cudaHostAlloc((void **)&x, n, 0));
	EXPECT_LE(1.2 + 0.5 * 256, vgpu_host_now_ms() - t0);
	ASSERT_EQ(cudaSuccess, cudaFreeHost(x));
	free(pageable);
	ASSERT_EQ(cudaSuccess, cudaFree(d));
	ASSERT_EQ(cudaSuccess, cudaFreeHost(h));
}

TEST(sticky_error_injected_after_n_copies)
{
	char *h = NULL, *d = NULL;

	setenv("UM_VGPU_STICKY_AFTER", "1", 1);
	ASSERT_EQ(cudaSuccess, cudaHostAlloc((void **)&h, MiB, 0));
	ASSERT_EQ(cudaSuccess, cudaMalloc((void **)&d, MiB));
	memset(h, 5, MiB);
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(d, h, MiB, cudaMemcpyDefault,
					       NULL));
	ASSERT_EQ(cudaSuccess, cudaStreamSynchronize(NULL));
	memset(h, 0, MiB);
	ASSERT_EQ(cudaSuccess, cudaMemcpyAsync(h, d, MiB, cudaMemcpyDefault,
					       NULL));
	ASSERT_EQ(cudaErrorIllegalAddress, cudaStreamSynchronize(NULL));
	/* The copy that poisoned never ran: its bytes are lost. */
	ASSERT_EQ(0, h[0]);
	ASSERT_EQ(cudaErrorIllegalAddress, cudaMemGetInfo(NULL, NULL));
}

TEST(out_of_memory_injected_and_real)
{
	size_t f = 0, t = 0;
	void *a = NULL, *b = NULL;

	setenv("UM_VGPU_OOM_AT", "2", 1);
	setenv("UM_VGPU_BYTES", "1G", 1);
	ASSERT_EQ(cudaSuccess, cudaMalloc(&a, MiB));
	ASSERT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&b, MiB));
	ASSERT_EQ(cudaErrorMemoryAllocation, cudaGetLastError());
	ASSERT_EQ(cudaSuccess, cudaMalloc(&b, MiB));
	ASSERT_EQ(cudaSuccess, cudaMemGetInfo(&f, &t));
	ASSERT_EQ(1ull << 30, t);
	ASSERT_EQ(cudaErrorMemoryAllocation, cudaMalloc(&b, f + 1));
}

/* Child: set name=val, call CUDA; returns the exit status (2: refused). */
static int env_status(const char *name, const char *val)
{
	pid_t pid = fork();
	int st = 0, n;

	if (pid == 0) {
		setenv(name, val, 1);
		if (!freopen("/dev/null", "w", stderr))
			_exit(3);
		_exit(cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

TEST(environment_is_validated)
{
	ASSERT_EQ(2, env_status("UM_VGPU_DEVICES", "abc"));
	ASSERT_EQ(2, env_status("UM_VGPU_DEVICES", "0"));
	ASSERT_EQ(2, env_status("UM_VGPU_DEVICES", "9"));
	ASSERT_EQ(2, env_status("UM_VGPU_BYTES", "1X"));
	ASSERT_EQ(2, env_status("UM_VGPU_BYTES", "1M"));
	ASSERT_EQ(2, env_status("UM_VGPU_STICKY_AFTER", "-1"));
	ASSERT_EQ(2, env_status("UM_VGPU_OOM_AT", "0"));
	ASSERT_EQ(2, env_status("UM_VGPU_MAP_WAITS", "2"));
	ASSERT_EQ(2, env_status("UM_VGPU_H2D_GBPS", "fast"));
	ASSERT_EQ(2, env_status("UM_VGPU_BOTH_GBPS", "0"));
	ASSERT_EQ(0, env_status("UM_VGPU_DEVICES", "3"));
	ASSERT_EQ(0, env_status("UM_VGPU_BYTES", "2G"));
	ASSERT_EQ(1, env_status("UM_VGPU_NO_DRIVER", "1"));
}

TEST_HARNESS_MAIN
