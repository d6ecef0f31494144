// SPDX-License-Identifier: MIT
/*
 * bench_gpu_cpu.cu - host-only parts of umbench --gpu's Adam: the
 * hyper-parameters of step t, and the CPU twin of the Adam kernel (same fp32
 * operations in the same order as k_adam in bench_gpu_kern.cu; compiled with
 * -ffp-contract=off so no multiply-add is fused), on threads.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"

void bg_hyper_step(struct bg_hyper *h, int t)
{
	h->lr = 1e-3f;
	h->b1 = 0.9f;
	h->b2 = 0.999f;
	h->ob1 = 1.0f - h->b1;
	h->ob2 = 1.0f - h->b2;
	h->eps = 1e-8f;
	h->c1 = 1.0f - powf(h->b1, (float)t);
	h->c2 = 1.0f - powf(h->b2, (float)t);
}

/* ---- CPU Adam: the kernel's operations, in order, on threads --------- */

struct bg_cpu_job {
	float *p, *m, *v;
	const float *g;
	size_t lo, hi;
	const struct bg_hyper *h;
};

static void *bg_cpu_adam_part(void *arg)
{
	const struct bg_cpu_job *j = (const struct bg_cpu_job *)arg;
	const struct bg_hyper h = *j->h;

	for (size_t i = j->lo; i < j->hi; i++) {
		float gi = j->g[i];
		float mi = h.b1 * j->m[i] + h.ob1 * gi;
		float vi = h.b2 * j->v[i] + (h.ob2 * gi) * gi;
		float mh = mi / h.c1;
		float vh = vi / h.c2;
		float den = sqrtf(vh) + h.eps;

		j->m[i] = mi;
		j->v[i] = vi;
		j->p[i] = j->p[i] - h.lr * (mh / den);
	}
	return NULL;
}

void bg_cpu_adam(float *p, const float *g, float *m, float *v, size_t n,
		 const struct bg_hyper *h, int threads)
{
	struct bg_cpu_job jobs[256];
	pthread_t tid[256];
	int started[256];
	size_t per;
	int t;

	if (threads < 1)
		threads = 1;
	if (threads > 256)
		threads = 256;
	per = (n + (size_t)threads - 1) / (size_t)threads;
	for (t = 0; t < threads; t++) {
		size_t lo = per * (size_t)t;

		jobs[t].p = p;
		jobs[t].g = g;
		jobs[t].m = m;
		jobs[t].v = v;
		jobs[t].lo = lo < n ? lo : n;
		jobs[t].hi = lo + per < n ? lo + per : n;
		jobs[t].h = h;
		started[t] = t > 0 &&
			     pthread_create(&tid[t], NULL, bg_cpu_adam_part,
					    &jobs[t]) == 0;
	}
	/* Slice 0 here, and any slice whose thread did not start. */
	for (t = 0; t < threads; t++)
		if (!started[t])
			bg_cpu_adam_part(&jobs[t]);
	for (t = 1; t < threads; t++)
		if (started[t])
			pthread_join(tid[t], NULL);
}
