// SPDX-License-Identifier: MIT
/*
 * bench_kern_mock.cpp - the kernels of bench_gpu_kern.cu as host loops, for
 * the mock umbench-gpu (see cudart_mock.c). Same arithmetic, in the same
 * order, as the kernels; the pattern and init values are the same functions
 * of the index.
 */
#include <math.h>
#include <string.h>

#include "bench_gpu.h"

static inline uint32_t bg_hash(uint64_t i, uint32_t salt)
{
	uint32_t x = (uint32_t)i ^ (uint32_t)(i >> 32) * 0x85ebca6bu ^ salt;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

static inline float bg_unit(uint64_t i, uint32_t salt)
{
	return (float)(bg_hash(i, salt) >> 8) * (1.0f / 16777216.0f);
}

cudaError_t bgk_fill(void *p, size_t bytes, uint32_t salt, cudaStream_t s)
{
	uint32_t *w = (uint32_t *)p;

	(void)s;
	for (uint64_t i = 0; i < bytes / 4; i++)
		w[i] = bg_hash(i, salt);
	return cudaSuccess;
}

cudaError_t bgk_check(const void *p, size_t bytes, uint32_t salt,
		      cudaStream_t s, uint64_t *bad)
{
	const uint32_t *w = (const uint32_t *)p;
	uint64_t b = 0;

	(void)s;
	for (uint64_t i = 0; i < bytes / 4; i++)
		b += w[i] != bg_hash(i, salt);
	*bad = b;
	return cudaSuccess;
}

cudaError_t bgk_init_params(float *p, float *g, size_t n, cudaStream_t s)
{
	(void)s;
	for (size_t i = 0; i < n; i++) {
		p[i] = bg_unit(i, 1) * 2.0f - 1.0f;
		g[i] = (bg_unit(i, 2) - 0.5f) * 0.02f;
	}
	return cudaSuccess;
}

cudaError_t bgk_init_state(float *m, float *v, size_t n, size_t off,
			   cudaStream_t s)
{
	(void)s;
	for (size_t i = 0; i < n; i++) {
		m[i] = (bg_unit(off + i, 3) - 0.5f) * 0.002f;
		v[i] = bg_unit(off + i, 4) * 1e-4f;
	}
	return cudaSuccess;
}

cudaError_t bgk_adam(float *p, const float *g, float *m, float *v, size_t n,
		     const struct bg_hyper *h, cudaStream_t s)
{
	(void)s;
	for (size_t i = 0; i < n; i++) {
		float gi = g[i];
		float mi = h->b1 * m[i] + h->ob1 * gi;
		float vi = h->b2 * v[i] + (h->ob2 * gi) * gi;
		float mh = mi / h->c1;
		float vh = vi / h->c2;
		float den = sqrtf(vh) + h->eps;

		m[i] = mi;
		v[i] = vi;
		p[i] = p[i] - h->lr * (mh / den);
	}
	return cudaSuccess;
}

cudaError_t bgk_compare(const float *a, const float *b, size_t n,
			cudaStream_t s, uint64_t *ndiff, float *max_diff)
{
	uint64_t c = 0;
	float mx = 0;

	(void)s;
	for (size_t i = 0; i < n; i++) {
		if (memcmp(&a[i], &b[i], sizeof(float))) {
			float d = fabsf(a[i] - b[i]);

			c++;
			if (!(d <= mx))
				mx = isnan(d) ? INFINITY : d;
		}
	}
	*ndiff = c;
	*max_diff = mx;
	return cudaSuccess;
}
