// SPDX-License-Identifier: MIT
/*
 * kernels.c - umtrain's fp32 math, written so the compiler vectorizes it
 * without reassociating any sum (no -ffast-math): every reduction has a
 * fixed order, so results depend only on the inputs.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

/* Rows of w per block: a block stays in cache while every sample uses it. */
#define ROW_BLOCK 16

void k_forward(const float *x, const float *w, const float *bias, float *y,
	       size_t batch, size_t in, size_t out, int relu, size_t lo,
	       size_t hi)
{
	size_t b, i, i0, o;

	for (b = 0; b < batch; b++)
		memcpy(y + b * out + lo, bias + lo, (hi - lo) * sizeof(*y));
	for (i0 = 0; i0 < in; i0 += ROW_BLOCK) {
		size_t i1 = i0 + ROW_BLOCK < in ? i0 + ROW_BLOCK : in;

		for (b = 0; b < batch; b++) {
			float *yb = y + b * out;

			for (i = i0; i < i1; i++) {
				const float xi = x[b * in + i];
				const float *wi = w + i * out;

				for (o = lo; o < hi; o++)
					yb[o] += xi * wi[o];
			}
		}
	}
	if (!relu)
		return;
	for (b = 0; b < batch; b++)
		for (o = lo; o < hi; o++)
			if (!(y[b * out + o] > 0.0f))
				y[b * out + o] = 0.0f;
}

void k_grad_w(const float *x, const float *dy, float *g, float *gb,
	      size_t batch, size_t in, size_t out, size_t lo, size_t hi)
{
	size_t b, i, o;

	for (i = lo; i < hi; i++) {
		float *gi = i < in ? g + i * out : gb;

		memset(gi, 0, out * sizeof(*gi));
		for (b = 0; b < batch; b++) {
			const float xi = i < in ? x[b * in + i] : 1.0f;
			const float *d = dy + b * out;

			for (o = 0; o < out; o++)
				gi[o] += xi * d[o];
		}
	}
}

/* Dot product with eight running sums in a fixed lane order. */
static float dot(const float *a, const float *b, size_t n)
{
	float acc[8] = { 0 };
	size_t k, j;
	float s;

	for (k = 0; k + 8 <= n; k += 8)
		for (j = 0; j < 8; j++)
			acc[j] += a[k + j] * b[k + j];
	s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) +
	    ((acc[4] + acc[5]) + (acc[6] + acc[7]));
	for (; k < n; k++)
		s += a[k] * b[k];
	return s;
}

void k_grad_x(const float *dy, const float *w, const float *x, float *dx,
	      size_t batch, size_t in, size_t out, size_t lo, size_t hi)
{
	size_t b, i, i0;

	for (i0 = lo; i0 < hi; i0 += ROW_BLOCK) {
		size_t i1 = i0 + ROW_BLOCK < hi ? i0 + ROW_BLOCK : hi;

		for (b = 0; b < batch; b++)
			for (i = i0; i < i1; i++) {
				float s = dot(dy + b * out, w + i * out, out);

				dx[b * in + i] = x[b * in + i] > 0.0f ? s
								      : 0.0f;
			}
	}
}

void k_adam(float *w, const float *g, float *m, float *v,
	    const struct adam_hp *hp, size_t lo, size_t hi)
{
	const float b1 = hp->beta1, b2 = hp->beta2;
	const float a1 = 1.0f - b1, a2 = 1.0f - b2;
	const float lr = hp->lr, eps = hp->eps;
	const float ibc1 = 1.0f / hp->bc1, ibc2 = 1.0f / hp->bc2;
	size_t k;

	for (k = lo; k < hi; k++) {
		float gk = g[k];
		float mk = b1 * m[k] + a1 * gk;
		float vk = b2 * v[k] + a2 * gk * gk;

		m[k] = mk;
		v[k] = vk;
		w[k] -= lr * (mk * ibc1) / (sqrtf(vk * ibc2) + eps);
	}
}

/* splitmix64's finaliser: a good 64-bit mix, cheap and fully specified. */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t k_rand(uint64_t seed, uint64_t stream, uint64_t index)
{
	return mix(mix(seed + 0x9e3779b97f4a7c15ull * (stream + 1)) ^
		   (index * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
}

float k_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
	/* 24 random bits: exactly representable in a float. */
	uint32_t r = (uint32_t)(k_rand(seed, stream, index) >> 40);

	return (float)r * (2.0f / 16777216.0f) - 1.0f;
}
