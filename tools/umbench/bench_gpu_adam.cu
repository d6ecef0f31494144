// SPDX-License-Identifier: MIT
/*
 * bench_gpu_adam.cu - one Adam step with the optimizer state (m and v, fp32)
 * in every place measured before libum existed (Documentation/design.rst),
 * side by side:
 *
 *   (a) on the GPU (the unconstrained reference)
 *   (b) CPU offload: grads device->host, multithreaded CPU Adam, params
 *       host->device (ZeRO-Offload's shape)
 *   (c) managed memory left to faults, then evicted by prefetch
 *   (d) managed memory prefetched in, step, prefetched out
 *   (e) libum MANAGED, copy + discard eviction, and (e2) prefetch eviction
 *   (f) libum TIERED: acquire (map + copy in), step, evict (copy out + unmap)
 *   (g) libum TIERED pipelined: the state in --pieces regions, restore of
 *       piece k+1 and eviction of piece k overlapping, budget ~3 pieces
 *
 * Params and grads stay on the GPU (cudaMalloc) except in (b). Every variant
 * starts from the same state and runs the same steps (one warm-up and
 * --reps timed, best kept); afterwards its params are compared bitwise with
 * (a)'s. Rows (c)..(g) run the same kernel as (a); (b) runs its CPU twin,
 * same fp32 operations in the same order (bench_gpu_kern.cu), so it too is
 * expected to be bit-identical.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_gpu.h"

struct adam_env {
	const struct bg_opts *o;
	struct bg_results *r;
	struct um_context *ctx;
	cudaStream_t s;
	size_t n;		/* params */
	size_t N;		/* bytes of one fp32 tensor */
	int steps;		/* warm-up + reps */
	float *p, *g, *pref;	/* device */
};

static struct bg_adam *row(struct adam_env *e, const char *id,
			   const char *name)
{
	struct bg_adam *a = &e->r->adam[e->r->nadam++];

	a->id = id;
	a->name = name;
	a->identical = -1;
	a->in_ms = a->step_ms = a->out_ms = a->total_ms = 1e30;
	return a;
}

/* Keep the best of each part; rep 0 is the warm-up. */
static void keep(struct bg_adam *a, int t, double in, double step, double out)
{
	if (t == 1)
		return;
	if (in < a->in_ms)
		a->in_ms = in;
	if (step < a->step_ms)
		a->step_ms = step;
	if (out < a->out_ms)
		a->out_ms = out;
	if (in + step + out < a->total_ms)
		a->total_ms = in + step + out;
}

static void unset(struct bg_adam *a)
{
	if (a->in_ms >= 1e30)
		a->in_ms = 0;
	if (a->step_ms >= 1e30)
		a->step_ms = 0;
	if (a->out_ms >= 1e30)
		a->out_ms = 0;
	if (a->total_ms >= 1e30)
		a->total_ms = 0;
}

static cudaError_t compare(struct adam_env *e, struct bg_adam *a)
{
	float mx = 0;
	cudaError_t err;

	err = bgk_compare(e->p, e->pref, e->n, e->s, &a->ndiff, &mx);
	if (err == cudaSuccess) {
		a->identical = a->ndiff == 0;
		a->max_diff = mx;
	}
	return err;
}

static cudaMemLocation loc(cudaMemLocationType t)
{
	cudaMemLocation l;

	memset(&l, 0, sizeof(l));
	l.type = t;
	l.id = 0;
	return l;
}

static double ms_since(double t0)
{
	return (bg_now() - t0) * 1e3;
}

/* Device (or managed) m and v of one row, either possibly never made. */
static void free_mv(float *m, float *v)
{
	if (m)
		cudaFree(m);
	if (v)
		cudaFree(v);
}

/* Both state tensors of a UVM row to dst, and wait for them. */
static cudaError_t prefetch_mv(struct adam_env *e, float *m, float *v,
			       cudaMemLocation dst)
{
	cudaError_t err = cudaMemPrefetchAsync(m, e->N, dst, 0, e->s);

	if (err == cudaSuccess)
		err = cudaMemPrefetchAsync(v, e->N, dst, 0, e->s);
	if (err == cudaSuccess)
		err = cudaStreamSynchronize(e->s);
	return err;
}

/* (a) */
static void adam_gpu(struct adam_env *e)
{
	struct bg_adam *a = row(e, "a", "resident on the GPU (reference)");
	struct bg_hyper h;
	float *m = NULL, *v = NULL;
	double t0;
	int t;

	BG_CK(a->err, cudaMalloc((void **)&m, e->N));
	BG_CK(a->err, cudaMalloc((void **)&v, e->N));
	BG_CK(a->err, bgk_init_params(e->p, e->g, e->n, e->s));
	BG_CK(a->err, bgk_init_state(m, v, e->n, 0, e->s));
	BG_CK(a->err, cudaStreamSynchronize(e->s));
	for (t = 1; t <= e->steps; t++) {
		bg_hyper_step(&h, t);
		t0 = bg_now();
		BG_CK(a->err, bgk_adam(e->p, e->g, m, v, e->n, &h, e->s));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		keep(a, t, 0, ms_since(t0), 0);
	}
	BG_CK(a->err, cudaMemcpyAsync(e->pref, e->p, e->N,
				      cudaMemcpyDeviceToDevice, e->s));
	BG_CK(a->err, cudaStreamSynchronize(e->s));
	a->identical = 1;
fail:
	unset(a);
	free_mv(m, v);
	(void)cudaGetLastError();
}

/* (b) */
static void adam_cpu(struct adam_env *e)
{
	struct bg_adam *a = row(e, "b", "CPU offload (grads D2H, CPU Adam, params H2D)");
	float *hp = NULL, *hg = NULL, *hm = NULL, *hv = NULL;
	float *m = NULL, *v = NULL;
	double t0, t1, t2;
	struct bg_hyper h;
	int t;

	a->parts = 1;
	snprintf(a->note, sizeof(a->note),
		 "in = grads D2H, step = CPU Adam on %d threads, out = params H2D",
		 e->o->threads);
	BG_CK(a->err, cudaHostAlloc((void **)&hp, e->N, cudaHostAllocPortable));
	BG_CK(a->err, cudaHostAlloc((void **)&hg, e->N, cudaHostAllocPortable));
	BG_CK(a->err, cudaHostAlloc((void **)&hm, e->N, cudaHostAllocPortable));
	BG_CK(a->err, cudaHostAlloc((void **)&hv, e->N, cudaHostAllocPortable));
	BG_CK(a->err, cudaMalloc((void **)&m, e->N));
	BG_CK(a->err, cudaMalloc((void **)&v, e->N));
	BG_CK(a->err, bgk_init_params(e->p, e->g, e->n, e->s));
	BG_CK(a->err, bgk_init_state(m, v, e->n, 0, e->s));
	BG_CK(a->err, cudaMemcpyAsync(hp, e->p, e->N, cudaMemcpyDeviceToHost,
				      e->s));
	BG_CK(a->err, cudaMemcpyAsync(hm, m, e->N, cudaMemcpyDeviceToHost,
				      e->s));
	BG_CK(a->err, cudaMemcpyAsync(hv, v, e->N, cudaMemcpyDeviceToHost,
				      e->s));
	BG_CK(a->err, cudaStreamSynchronize(e->s));
	cudaFree(m);
	cudaFree(v);
	m = v = NULL;
	for (t = 1; t <= e->steps; t++) {
		bg_hyper_step(&h, t);
		t0 = bg_now();
		BG_CK(a->err, cudaMemcpyAsync(hg, e->g, e->N,
					      cudaMemcpyDeviceToHost, e->s));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		t1 = bg_now();
		bg_cpu_adam(hp, hg, hm, hv, e->n, &h, e->o->threads);
		t2 = bg_now();
		BG_CK(a->err, cudaMemcpyAsync(e->p, hp, e->N,
					      cudaMemcpyHostToDevice, e->s));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		keep(a, t, (t1 - t0) * 1e3, (t2 - t1) * 1e3, ms_since(t2));
	}
	BG_CK(a->err, compare(e, a));
fail:
	unset(a);
	free_mv(m, v);
	if (hp)
		cudaFreeHost(hp);
	if (hg)
		cudaFreeHost(hg);
	if (hm)
		cudaFreeHost(hm);
	if (hv)
		cudaFreeHost(hv);
	(void)cudaGetLastError();
}

/* (c) faults, (d) prefetch */
static void adam_uvm(struct adam_env *e, int prefetch)
{
	struct bg_adam *a = prefetch ?
		row(e, "d", "UVM: prefetch in, step, prefetch out") :
		row(e, "c", "UVM: faults in, step, prefetch out");
	cudaMemLocation dev = loc(cudaMemLocationTypeDevice);
	cudaMemLocation host = loc(cudaMemLocationTypeHost);
	float *m = NULL, *v = NULL;
	double t0, tin = 0, tstep, tout;
	struct bg_hyper h;
	int t;

	a->parts = 1;
	if (!prefetch)
		snprintf(a->note, sizeof(a->note),
			 "step includes the fault-driven migration in");
	BG_CK(a->err, cudaMallocManaged((void **)&m, e->N, cudaMemAttachGlobal));
	BG_CK(a->err, cudaMallocManaged((void **)&v, e->N, cudaMemAttachGlobal));
	BG_CK(a->err, cudaMemPrefetchAsync(m, e->N, dev, 0, e->s));
	BG_CK(a->err, cudaMemPrefetchAsync(v, e->N, dev, 0, e->s));
	BG_CK(a->err, bgk_init_params(e->p, e->g, e->n, e->s));
	BG_CK(a->err, bgk_init_state(m, v, e->n, 0, e->s));
	BG_CK(a->err, prefetch_mv(e, m, v, host));
	for (t = 1; t <= e->steps; t++) {
		bg_hyper_step(&h, t);
		if (prefetch) {
			t0 = bg_now();
			BG_CK(a->err, prefetch_mv(e, m, v, dev));
			tin = ms_since(t0);
		}
		t0 = bg_now();
		BG_CK(a->err, bgk_adam(e->p, e->g, m, v, e->n, &h, e->s));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		tstep = ms_since(t0);
		t0 = bg_now();
		BG_CK(a->err, prefetch_mv(e, m, v, host));
		tout = ms_since(t0);
		keep(a, t, tin, tstep, tout);
	}
	BG_CK(a->err, compare(e, a));
fail:
	unset(a);
	free_mv(m, v);
	(void)cudaGetLastError();
}

static int region(struct um_context *ctx, size_t bytes, uint32_t backing,
		  uint32_t flags, const char *name, um_region_t *h, void **p)
{
	struct um_region_desc d;
	int ret;

	memset(&d, 0, sizeof(d));
	d.size = sizeof(d);
	d.kind = UM_KIND_OPTIMIZER_STATE;
	d.backing = backing;
	d.flags = flags;
	d.bytes = bytes;
	d.name = name;
	ret = um_alloc(ctx, &d, h);
	if (ret)
		return ret;
	ret = um_ptr(ctx, *h, p);
	if (ret) {
		um_free(ctx, *h);
		*h = 0;
	}
	return ret;
}

/* m's region then v's: the first error, or 0. */
static int mv_acquire(struct adam_env *e, um_region_t hm, um_region_t hv)
{
	int ret = um_acquire(e->ctx, hm, UM_TIER_GPU(0), e->s);

	if (ret < 0)
		return ret;
	return um_acquire(e->ctx, hv, UM_TIER_GPU(0), e->s);
}

static int mv_release(struct um_context *ctx, um_region_t hm, um_region_t hv)
{
	int ret = um_release(ctx, hm);

	if (ret < 0)
		return ret;
	return um_release(ctx, hv);
}

/* Evict both to the host and wait until they are there. */
static int mv_evict(struct um_context *ctx, um_region_t hm, um_region_t hv)
{
	int ret = um_evict(ctx, hm, UM_TIER_HOST_ANY);

	if (ret < 0)
		return ret;
	ret = um_evict(ctx, hv, UM_TIER_HOST_ANY);
	if (ret < 0)
		return ret;
	return um_wait_all(ctx);
}

/* (e), (e2), (f): two regions, m and v, moved whole each step. */
static void adam_libum(struct adam_env *e, const char *id, const char *name,
		       uint32_t backing, uint32_t flags)
{
	struct bg_adam *a = row(e, id, name);
	struct um_context *ctx = e->ctx;
	um_region_t hm = 0, hv = 0;
	void *m = NULL, *v = NULL;
	double t0, tin, tstep, tout;
	size_t f0, f1, tot;
	struct bg_hyper h;
	int t, held = 0;

	a->parts = 1;
	BG_UK(a->err, region(ctx, e->N, backing, flags, "adam-m", &hm, &m));
	BG_UK(a->err, region(ctx, e->N, backing, flags, "adam-v", &hv, &v));
	BG_UK(a->err, mv_acquire(e, hm, hv));
	held = 1;
	BG_CK(a->err, bgk_init_params(e->p, e->g, e->n, e->s));
	BG_CK(a->err, bgk_init_state((float *)m, (float *)v, e->n, 0, e->s));
	BG_UK(a->err, mv_release(ctx, hm, hv));
	held = 0;
	BG_UK(a->err, mv_evict(ctx, hm, hv));
	BG_CK(a->err, cudaStreamSynchronize(e->s));
	for (t = 1; t <= e->steps; t++) {
		bg_hyper_step(&h, t);
		t0 = bg_now();
		BG_UK(a->err, mv_acquire(e, hm, hv));
		held = 1;
		BG_UK(a->err, um_wait(ctx, hm));
		BG_UK(a->err, um_wait(ctx, hv));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		tin = ms_since(t0);
		t0 = bg_now();
		BG_CK(a->err, bgk_adam(e->p, e->g, (float *)m, (float *)v,
				       e->n, &h, e->s));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		tstep = ms_since(t0);
		BG_CK(a->err, cudaMemGetInfo(&f0, &tot));
		t0 = bg_now();
		BG_UK(a->err, mv_release(ctx, hm, hv));
		held = 0;
		BG_UK(a->err, mv_evict(ctx, hm, hv));
		tout = ms_since(t0);
		BG_CK(a->err, cudaMemGetInfo(&f1, &tot));
		a->freed_gib = ((double)f1 - (double)f0) / (double)BG_GiB;
		a->freed_known = 1;
		keep(a, t, tin, tstep, tout);
	}
	BG_CK(a->err, compare(e, a));
fail:
	unset(a);
	(void)cudaGetLastError();
	if (held) {
		um_release(ctx, hm);
		um_release(ctx, hv);
	}
	cudaStreamSynchronize(e->s);
	um_wait_all(ctx);
	if (hm)
		um_free(ctx, hm);
	if (hv)
		um_free(ctx, hv);
}

/*
 * Acquire piece k; when the budget is full of pieces still draining, wait
 * for the oldest one and try again, so the pipeline works whether libum
 * waits inside um_acquire or refuses with -ENOMEM.
 */
static int acquire_piece(struct adam_env *e, um_region_t *h, int k,
			 int *waited)
{
	int ret, j;

	ret = um_acquire(e->ctx, h[k], UM_TIER_GPU(0), e->s);
	for (j = 0; ret == -ENOMEM && j < k; j++) {
		(*waited)++;
		um_wait(e->ctx, h[j]);
		ret = um_acquire(e->ctx, h[k], UM_TIER_GPU(0), e->s);
	}
	return ret;
}

/* (g) */
static void adam_pipelined(struct adam_env *e)
{
	struct bg_adam *a = row(e, "g", "libum TIERED, pipelined pieces");
	const int K = e->o->pieces;
	struct um_context *ctx = e->ctx;
	um_region_t *h = (um_region_t *)calloc((size_t)K, sizeof(*h));
	float **ptr = (float **)calloc((size_t)K, sizeof(*ptr));
	size_t *cnt = (size_t *)calloc((size_t)K, sizeof(*cnt));
	size_t *off = (size_t *)calloc((size_t)K, sizeof(*off));
	uint64_t budget = 0, old_budget = 0, piece_max;
	struct bg_hyper hy;
	double t0;
	int k, t, waited = 0, held = -1;

	if (!h || !ptr || !cnt || !off) {
		bg_set_err(a->err, "calloc", strerror(ENOMEM), __LINE__);
		goto fail;
	}
	for (k = 0; k < K; k++) {
		off[k] = e->n / (size_t)K * (size_t)k;
		cnt[k] = k == K - 1 ? e->n - off[k] : e->n / (size_t)K;
	}
	/* One region per piece: [m slice | v slice]. */
	for (k = 0; k < K; k++)
		BG_UK(a->err, region(ctx, 2 * cnt[k] * sizeof(float),
				     UM_BACKING_TIERED, 0, "adam-piece",
				     &h[k], (void **)&ptr[k]));
	piece_max = 2 * cnt[K - 1] * sizeof(float);
	piece_max = (piece_max + 2 * BG_MiB - 1) & ~(2 * BG_MiB - 1);
	budget = 3 * piece_max;
	BG_UK(a->err, um_budget_get(ctx, 0, &old_budget));
	BG_CK(a->err, bgk_init_params(e->p, e->g, e->n, e->s));
	for (k = 0; k < K; k++) {
		BG_UK(a->err, acquire_piece(e, h, k, &waited));
		held = k;
		BG_CK(a->err, bgk_init_state(ptr[k], ptr[k] + cnt[k], cnt[k],
					     off[k], e->s));
		BG_UK(a->err, um_release(ctx, h[k]));
		held = -1;
		BG_UK(a->err, um_evict(ctx, h[k], UM_TIER_HOST_ANY));
	}
	BG_UK(a->err, um_wait_all(ctx));
	BG_CK(a->err, cudaStreamSynchronize(e->s));
	/* Only now: setting it earlier would evict the init writes. */
	BG_UK(a->err, um_budget_set(ctx, 0, budget));
	e->r->piece_budget = budget;
	waited = 0;
	for (t = 1; t <= e->steps; t++) {
		bg_hyper_step(&hy, t);
		t0 = bg_now();
		BG_UK(a->err, acquire_piece(e, h, 0, &waited));
		held = 0;
		for (k = 0; k < K; k++) {
			BG_CK(a->err, bgk_adam(e->p + off[k], e->g + off[k],
					       ptr[k], ptr[k] + cnt[k], cnt[k],
					       &hy, e->s));
			BG_UK(a->err, um_release(ctx, h[k]));
			held = -1;
			BG_UK(a->err, um_evict(ctx, h[k], UM_TIER_HOST_ANY));
			if (k + 1 < K) {
				BG_UK(a->err, acquire_piece(e, h, k + 1,
							    &waited));
				held = k + 1;
			}
		}
		BG_UK(a->err, um_wait_all(ctx));
		BG_CK(a->err, cudaStreamSynchronize(e->s));
		keep(a, t, 0, 0, ms_since(t0));
	}
	snprintf(a->note, sizeof(a->note),
		 "%d pieces of %.0f MiB, budget %.0f MiB (3 pieces)%s", K,
		 (double)piece_max / (double)BG_MiB,
		 (double)budget / (double)BG_MiB,
		 waited ? "; um_acquire said -ENOMEM and waited" : "");
	a->step_ms = 0;
	BG_CK(a->err, compare(e, a));
fail:
	unset(a);
	a->in_ms = a->out_ms = 0;
	(void)cudaGetLastError();
	if (held >= 0)
		um_release(ctx, h[held]);
	cudaStreamSynchronize(e->s);
	um_wait_all(ctx);
	if (old_budget)
		um_budget_set(ctx, 0, old_budget);
	for (k = 0; h && k < K; k++)
		if (h[k])
			um_free(ctx, h[k]);
	free(h);
	free(ptr);
	free(cnt);
	free(off);
}

void bg_adam_table(const struct bg_opts *o, struct bg_results *r,
		   struct um_context *ctx, cudaStream_t s)
{
	struct adam_env e;

	memset(&e, 0, sizeof(e));
	e.o = o;
	e.r = r;
	e.ctx = ctx;
	e.s = s;
	e.n = o->params;
	e.N = e.n * sizeof(float);
	e.steps = o->reps + 1;
	r->adam_params = e.n;
	r->state_bytes = 2 * e.N;
	r->pieces = o->pieces;
	if (r->h2d > 0 && r->d2h > 0)
		r->floor_ms = ((double)r->state_bytes / r->h2d +
			       (double)r->state_bytes / r->d2h) / 1e6;
	if (r->both > 0)
		r->floor_ovl_ms = 2.0 * (double)r->state_bytes / r->both / 1e6;
	if (cudaMalloc((void **)&e.p, e.N) != cudaSuccess ||
	    cudaMalloc((void **)&e.g, e.N) != cudaSuccess ||
	    cudaMalloc((void **)&e.pref, e.N) != cudaSuccess) {
		struct bg_adam *a = row(&e, "a", "resident on the GPU (reference)");

		bg_set_err(a->err, "cudaMalloc(params, grads)",
			   cudaGetErrorString(cudaGetLastError()), __LINE__);
		unset(a);
		goto out;
	}
	bg_progress(o, "Adam (a) GPU-resident");
	adam_gpu(&e);
	if (r->adam[0].err[0])
		goto out;	/* no reference to compare with */
	bg_progress(o, "Adam (b) CPU offload, %d threads", o->threads);
	adam_cpu(&e);
	bg_progress(o, "Adam (c) UVM faults");
	adam_uvm(&e, 0);
	bg_progress(o, "Adam (d) UVM prefetch");
	adam_uvm(&e, 1);
	bg_progress(o, "Adam (e) libum MANAGED, copy + discard");
	adam_libum(&e, "e", "libum MANAGED (copy+discard)", UM_BACKING_MANAGED,
		   UM_REGION_DISCARD_EVICT);
	bg_progress(o, "Adam (e2) libum MANAGED, prefetch");
	adam_libum(&e, "e2", "libum MANAGED (prefetch)", UM_BACKING_MANAGED, 0);
	bg_progress(o, "Adam (f) libum TIERED");
	adam_libum(&e, "f", "libum TIERED (in, step, out)", UM_BACKING_TIERED,
		   0);
	bg_progress(o, "Adam (g) libum TIERED pipelined, %d pieces", o->pieces);
	adam_pipelined(&e);
out:
	if (e.p)
		cudaFree(e.p);
	if (e.g)
		cudaFree(e.g);
	if (e.pref)
		cudaFree(e.pref);
	(void)cudaGetLastError();
}
