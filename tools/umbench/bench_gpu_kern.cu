// SPDX-License-Identifier: MIT
/*
 * bench_gpu_kern.cu - kernels of umbench --gpu (the CPU twin of the Adam
 * kernel is in bench_gpu_cpu.cu).
 *
 * Bit-identical results across variants: every GPU variant runs the same
 * kernel on the same inputs. The CPU variant does the same fp32 operations
 * in the same order; the kernel spells each one with an IEEE
 * round-to-nearest intrinsic (__fmul_rn, __fadd_rn, __fdiv_rn, __fsqrt_rn),
 * which nvcc never fuses into an FMA, and the host side is compiled with
 * -ffp-contract=off (and x86-64 SSE arithmetic), so both round exactly alike.
 */
#include <math.h>
#include <string.h>

#include "bench_gpu.h"

#define BG_GRID 1056
#define BG_BLOCK 256

__global__ static void k_fill(uint32_t *w, uint64_t nw, uint32_t salt)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;

	for (; i < nw; i += st)
		w[i] = bg_hash(i, salt);
}

__global__ static void k_check(const uint32_t *w, uint64_t nw, uint32_t salt,
			       unsigned long long *bad)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;
	unsigned long long b = 0;

	for (; i < nw; i += st)
		b += w[i] != bg_hash(i, salt);
	if (b)
		atomicAdd(bad, b);
}

__global__ static void k_init_params(float *p, float *g, uint64_t n)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;

	for (; i < n; i += st) {
		p[i] = bg_unit(i, 1) * 2.0f - 1.0f;
		g[i] = (bg_unit(i, 2) - 0.5f) * 0.02f;
	}
}

__global__ static void k_init_state(float *m, float *v, uint64_t n,
				    uint64_t off)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;

	for (; i < n; i += st) {
		m[i] = (bg_unit(off + i, 3) - 0.5f) * 0.002f;
		v[i] = bg_unit(off + i, 4) * 1e-4f;
	}
}

__global__ static void k_adam(float *p, const float *g, float *m, float *v,
			      uint64_t n, struct bg_hyper h)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;

	for (; i < n; i += st) {
		float gi = g[i];
		float mi = __fadd_rn(__fmul_rn(h.b1, m[i]), __fmul_rn(h.ob1, gi));
		float vi = __fadd_rn(__fmul_rn(h.b2, v[i]),
				     __fmul_rn(__fmul_rn(h.ob2, gi), gi));
		float mh = __fdiv_rn(mi, h.c1);
		float vh = __fdiv_rn(vi, h.c2);
		float den = __fadd_rn(__fsqrt_rn(vh), h.eps);

		m[i] = mi;
		v[i] = vi;
		p[i] = __fsub_rn(p[i], __fmul_rn(h.lr, __fdiv_rn(mh, den)));
	}
}

__global__ static void k_compare(const uint32_t *a, const uint32_t *b,
				 uint64_t n, unsigned long long *ndiff,
				 unsigned int *maxbits)
{
	uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
	uint64_t st = (uint64_t)gridDim.x * blockDim.x;
	unsigned long long c = 0;
	float mx = 0.0f;

	for (; i < n; i += st) {
		if (a[i] != b[i]) {
			float d = fabsf(__uint_as_float(a[i]) -
					__uint_as_float(b[i]));

			c++;
			if (!(d <= mx))		/* NaN counts as largest */
				mx = isnan(d) ? INFINITY : d;
		}
	}
	if (c) {
		atomicAdd(ndiff, c);
		/* Non-negative floats order like their bit patterns. */
		atomicMax(maxbits, __float_as_uint(mx));
	}
}

/* Scratch counters, made once (before any memory figure is taken). */
static unsigned long long *bg_scratch(void)
{
	static unsigned long long *d;

	if (!d && cudaMalloc((void **)&d, 2 * sizeof(*d)) != cudaSuccess) {
		(void)cudaGetLastError();
		d = NULL;
	}
	return d;
}

cudaError_t bgk_fill(void *p, size_t bytes, uint32_t salt, cudaStream_t s)
{
	k_fill<<<BG_GRID, BG_BLOCK, 0, s>>>((uint32_t *)p, bytes / 4, salt);
	return cudaGetLastError();
}

cudaError_t bgk_check(const void *p, size_t bytes, uint32_t salt,
		      cudaStream_t s, uint64_t *bad)
{
	unsigned long long *d = bg_scratch(), h = 0;
	cudaError_t e;

	if (!d)
		return cudaErrorMemoryAllocation;
	e = cudaMemsetAsync(d, 0, sizeof(*d), s);
	if (e != cudaSuccess)
		return e;
	k_check<<<BG_GRID, BG_BLOCK, 0, s>>>((const uint32_t *)p, bytes / 4,
					     salt, d);
	e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	e = cudaMemcpyAsync(&h, d, sizeof(h), cudaMemcpyDeviceToHost, s);
	if (e != cudaSuccess)
		return e;
	e = cudaStreamSynchronize(s);
	*bad = h;
	return e;
}

cudaError_t bgk_init_params(float *p, float *g, size_t n, cudaStream_t s)
{
	k_init_params<<<BG_GRID, BG_BLOCK, 0, s>>>(p, g, n);
	return cudaGetLastError();
}

cudaError_t bgk_init_state(float *m, float *v, size_t n, size_t off,
			   cudaStream_t s)
{
	k_init_state<<<BG_GRID, BG_BLOCK, 0, s>>>(m, v, n, off);
	return cudaGetLastError();
}

cudaError_t bgk_adam(float *p, const float *g, float *m, float *v, size_t n,
		     const struct bg_hyper *h, cudaStream_t s)
{
	k_adam<<<BG_GRID, BG_BLOCK, 0, s>>>(p, g, m, v, n, *h);
	return cudaGetLastError();
}

cudaError_t bgk_compare(const float *a, const float *b, size_t n,
			cudaStream_t s, uint64_t *ndiff, float *max_diff)
{
	unsigned long long *d = bg_scratch(), h[2] = { 0, 0 };
	unsigned int bits;
	cudaError_t e;

	if (!d)
		return cudaErrorMemoryAllocation;
	e = cudaMemsetAsync(d, 0, 2 * sizeof(*d), s);
	if (e != cudaSuccess)
		return e;
	k_compare<<<BG_GRID, BG_BLOCK, 0, s>>>((const uint32_t *)a,
					       (const uint32_t *)b, n, d,
					       (unsigned int *)(d + 1));
	e = cudaGetLastError();
	if (e != cudaSuccess)
		return e;
	e = cudaMemcpyAsync(h, d, sizeof(h), cudaMemcpyDeviceToHost, s);
	if (e != cudaSuccess)
		return e;
	e = cudaStreamSynchronize(s);
	*ndiff = h[0];
	bits = (unsigned int)h[1];
	memcpy(max_diff, &bits, sizeof(*max_diff));
	return e;
}
