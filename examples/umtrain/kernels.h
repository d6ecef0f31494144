/* SPDX-License-Identifier: MIT */
/*
 * kernels.h - the math of umtrain: dense layers, ReLU, MSE and Adam on fp32.
 *
 * Every function works on a slice [lo, hi) of its output so that a caller
 * can split the work among threads. Each output element is always computed
 * by the same sequence of operations whatever the slice bounds, so results
 * are bit-identical for any number of threads.
 *
 * Layout: activations are [batch][width] row-major; a layer's weights are
 * [in][out] (row i: the weights from input i), its biases [out] apart.
 */
#ifndef UMTRAIN_KERNELS_H
#define UMTRAIN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* y[b][o] = bias[o] + sum_i x[b][i] * w[i][o], then ReLU if relu; o in [lo, hi). */
void k_forward(const float *x, const float *w, const float *bias, float *y,
	       size_t batch, size_t in, size_t out, int relu, size_t lo,
	       size_t hi);
/*
 * g[i][o] = sum_b x[b][i] * dy[b][o] for rows i in [lo, hi) of in + 1, row
 * i = in being the biases' gradient gb[o] = sum_b dy[b][o].
 */
void k_grad_w(const float *x, const float *dy, float *g, float *gb,
	      size_t batch, size_t in, size_t out, size_t lo, size_t hi);
/*
 * dx[b][i] = (sum_o dy[b][o] * w[i][o]) * (x[b][i] > 0), i in [lo, hi):
 * the gradient through the previous layer's ReLU, whose output is x.
 */
void k_grad_x(const float *dy, const float *w, const float *x, float *dx,
	      size_t batch, size_t in, size_t out, size_t lo, size_t hi);

struct adam_hp {
	float lr, beta1, beta2, eps;
	float bc1, bc2;		/* 1 - beta^t, for bias correction */
};

/* One Adam step on elements [lo, hi) of w, g, m, v. */
void k_adam(float *w, const float *g, float *m, float *v,
	    const struct adam_hp *hp, size_t lo, size_t hi);

/* Counter-based random numbers: the same (seed, stream, index) always gives
 * the same value, in any order. */
uint64_t k_rand(uint64_t seed, uint64_t stream, uint64_t index);
/* Uniform in [-1, 1). */
float k_uniform(uint64_t seed, uint64_t stream, uint64_t index);

#endif /* UMTRAIN_KERNELS_H */
