// SPDX-License-Identifier: MIT
/*
 * bench_kern_vgpu.cpp - the kernels of bench_gpu_kern.cu for the virtual
 * GPU: the same arithmetic in the same order, run as "kernels" on the stream
 * (vgpu_launch) through the vGPU's private view of device memory, and
 * charged on the virtual clock for the device-memory traffic they make.
 * Built with -ffp-contract=off, as the CPU twin, so results are bitwise
 * those of the GPU kernels.
 */
#include <math.h>
#include <string.h>

#include "bench_gpu.h"
#include "vgpu.h"

/* Arguments of every kernel here: up to four tensors and what else. */
struct kargs {
	const void *t[4];
	size_t n, off;
	uint32_t salt;
	struct bg_hyper h;
	uint64_t *out;		/* host: counts the host waits for */
	float *fout;
};

/* The private view of tensor i of k (n elements of size sz), or NULL. */
static void *kp(const struct kargs *k, int i, size_t sz)
{
	return vgpu_kptr(k->t[i], k->n * sz);
}

static int k_fill(void *arg)
{
	struct kargs *k = (struct kargs *)arg;
	uint32_t *w = (uint32_t *)kp(k, 0, 4);

	if (!w)
		return -1;
	for (uint64_t i = 0; i < k->n; i++)
		w[i] = bg_hash(i, k->salt);
	return 0;
}

static int k_check(void *arg)
{
	struct kargs *k = (struct kargs *)arg;
	const uint32_t *w = (const uint32_t *)kp(k, 0, 4);
	uint64_t b = 0;

	if (!w)
		return -1;
	for (uint64_t i = 0; i < k->n; i++)
		b += w[i] != bg_hash(i, k->salt);
	*k->out = b;
	return 0;
}

static int k_init_params(void *arg)
{
	struct kargs *k = (struct kargs *)arg;
	float *p = (float *)kp(k, 0, 4), *g = (float *)kp(k, 1, 4);

	if (!p || !g)
		return -1;
	for (size_t i = 0; i < k->n; i++) {
		p[i] = bg_unit(i, 1) * 2.0f - 1.0f;
		g[i] = (bg_unit(i, 2) - 0.5f) * 0.02f;
	}
	return 0;
}

static int k_init_state(void *arg)
{
	struct kargs *k = (struct kargs *)arg;
	float *m = (float *)kp(k, 0, 4), *v = (float *)kp(k, 1, 4);

	if (!m || !v)
		return -1;
	for (size_t i = 0; i < k->n; i++) {
		m[i] = (bg_unit(k->off + i, 3) - 0.5f) * 0.002f;
		v[i] = bg_unit(k->off + i, 4) * 1e-4f;
	}
	return 0;
}

static int k_adam(void *arg)
{
	struct kargs *k = (struct kargs *)arg;
	float *p = (float *)kp(k, 0, 4), *m = (float *)kp(k, 2, 4);
	const float *g = (const float *)kp(k, 1, 4);
	float *v = (float *)kp(k, 3, 4);
	const struct bg_hyper h = k->h;

	if (!p || !g || !m || !v)
		return -1;
	for (size_t i = 0; i < k->n; i++) {
		float gi = g[i];
		float mi = h.b1 * m[i] + h.ob1 * gi;
		float vi = h.b2 * v[i] + (h.ob2 * gi) * gi;
		float mh = mi / h.c1;
		float vh = vi / h.c2;
		float den = sqrtf(vh) + h.eps;

		m[i] = mi;
		v[i] = vi;
		p[i] = p[i] - h.lr * (mh / den);
	}
	return 0;
}

static int k_compare(void *arg)
{
	struct kargs *k = (struct kargs *)arg;
	const float *a = (const float *)kp(k, 0, 4);
	const float *b = (const float *)kp(k, 1, 4);
	uint64_t c = 0;
	float mx = 0;

	if (!a || !b)
		return -1;
	for (size_t i = 0; i < k->n; i++) {
		if (memcmp(&a[i], &b[i], sizeof(float))) {
			float d = fabsf(a[i] - b[i]);

			c++;
			if (!(d <= mx))
				mx = isnan(d) ? INFINITY : d;
		}
	}
	*k->out = c;
	*k->fout = mx;
	return 0;
}

/* Launch fn over the first nt tensors of k, each k->n * 4 bytes. */
static cudaError_t launch(int (*fn)(void *), const struct kargs *k, int nt,
			  uint64_t traffic, cudaStream_t s)
{
	struct vgpu_range r[4];

	for (int i = 0; i < nt; i++)
		r[i] = (struct vgpu_range){ k->t[i], k->n * 4 };
	return (cudaError_t)vgpu_launch(s, fn, k, sizeof(*k), r, nt, traffic);
}

cudaError_t bgk_fill(void *p, size_t bytes, uint32_t salt, cudaStream_t s)
{
	struct kargs k = {};

	k.t[0] = p;
	k.n = bytes / 4;
	k.salt = salt;
	return launch(k_fill, &k, 1, bytes, s);
}

cudaError_t bgk_check(const void *p, size_t bytes, uint32_t salt,
		      cudaStream_t s, uint64_t *bad)
{
	struct kargs k = {};
	uint64_t b = 0;
	cudaError_t e;

	k.t[0] = p;
	k.n = bytes / 4;
	k.salt = salt;
	k.out = &b;
	e = launch(k_check, &k, 1, bytes, s);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	*bad = b;
	return e;
}

cudaError_t bgk_init_params(float *p, float *g, size_t n, cudaStream_t s)
{
	struct kargs k = {};

	k.t[0] = p;
	k.t[1] = g;
	k.n = n;
	return launch(k_init_params, &k, 2, 8 * n, s);
}

cudaError_t bgk_init_state(float *m, float *v, size_t n, size_t off,
			   cudaStream_t s)
{
	struct kargs k = {};

	k.t[0] = m;
	k.t[1] = v;
	k.n = n;
	k.off = off;
	return launch(k_init_state, &k, 2, 8 * n, s);
}

/* Reads p, g, m, v and writes p, m, v: 28 bytes per parameter. */
cudaError_t bgk_adam(float *p, const float *g, float *m, float *v, size_t n,
		     const struct bg_hyper *h, cudaStream_t s)
{
	struct kargs k = {};

	k.t[0] = p;
	k.t[1] = g;
	k.t[2] = m;
	k.t[3] = v;
	k.n = n;
	k.h = *h;
	return launch(k_adam, &k, 4, 28 * n, s);
}

cudaError_t bgk_compare(const float *a, const float *b, size_t n,
			cudaStream_t s, uint64_t *ndiff, float *max_diff)
{
	struct kargs k = {};
	uint64_t c = 0;
	float mx = 0;
	cudaError_t e;

	k.t[0] = a;
	k.t[1] = b;
	k.n = n;
	k.out = &c;
	k.fout = &mx;
	e = launch(k_compare, &k, 2, 8 * n, s);
	if (e == cudaSuccess)
		e = cudaStreamSynchronize(s);
	*ndiff = c;
	*max_diff = mx;
	return e;
}
