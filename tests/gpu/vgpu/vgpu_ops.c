// SPDX-License-Identifier: MIT
/*
 * vgpu_ops.c - what the virtual GPU's streams carry: copies, memset,
 * managed prefetch and discard, host functions and "kernels"; how long each
 * takes on the virtual clock (decided when it is issued) and what the worker
 * does when it runs it (through the private view of device memory).
 *
 * The link: each direction is one copy engine, busy from one copy to the
 * next in issue order. A copy runs at the one-way rate a (55 GB/s) while the
 * other direction is idle. Times are decided at issue, so a copy issued
 * first is never slowed by one issued later; the later one runs at
 * x = 2a(1 - a/B) while the other direction is busy, which makes two equal
 * copies issued together, one each way, move B (95 GB/s) in total, as
 * measured on the H200 (x = 46.3 GB/s). With equal bytes each way the total
 * is the same whichever goes first. Copies from or to pageable memory are
 * synchronous (the call returns when they are done) at 8.6 GB/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgpu_int.h"

static __thread int vg_kernel_dev = -1;

static void vg_busy_add(struct vg_busy *b, double s, double e)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;

		b->s = realloc(b->s, cap * sizeof(*b->s));
		b->e = realloc(b->e, cap * sizeof(*b->e));
		if (!b->s || !b->e)
			abort();
		b->cap = cap;
	}
	b->s[b->n] = s;
	b->e[b->n] = e;
	b->n++;
}

/* Forget intervals that end before the host's clock: nothing starts there. */
static void vg_busy_prune(struct vg_busy *b)
{
	while (b->first < b->n && b->e[b->first] < vg.host_now)
		b->first++;
	if (b->first > 4096 && b->first * 2 > b->n) {
		memmove(b->s, b->s + b->first, (b->n - b->first) * sizeof(*b->s));
		memmove(b->e, b->e + b->first, (b->n - b->first) * sizeof(*b->e));
		b->n -= b->first;
		b->first = 0;
	}
}

/*
 * End of a transfer of bytes on engine d of dev from t0 at rate alone (B/ns)
 * when the other direction is idle, at the shared rate (above) while it is
 * busy.
 * Books the engine. vg.mu held.
 */
static double vg_link_time(int dev, enum vg_dir d, double t0, double bytes,
			   double alone)
{
	struct vg_busy *me = &vg.dev[dev].eng[d];
	struct vg_busy *ot = &vg.dev[dev].eng[d == VG_H2D ? VG_D2H : VG_H2D];
	double shared = 2 * alone * (1 - alone / vg.m.both);
	double t, left = bytes, start;
	size_t k;

	if (shared > alone)
		shared = alone;
	if (shared < alone / 20)
		shared = alone / 20;
	vg_busy_prune(me);
	vg_busy_prune(ot);
	if (me->n > me->first)
		t0 = vg_max(t0, me->e[me->n - 1]);
	start = t = t0;
	for (k = ot->first; left > 0; k++) {
		double span;

		while (k < ot->n && ot->e[k] <= t)
			k++;
		if (k >= ot->n) {
			t += left / alone;
			break;
		}
		if (ot->s[k] > t) {		/* idle gap before it */
			span = ot->s[k] - t;
			if (span * alone >= left) {
				t += left / alone;
				break;
			}
			left -= span * alone;
			t = ot->s[k];
		}
		span = ot->e[k] - t;		/* both ways at once */
		if (span * shared >= left) {
			t += left / shared;
			break;
		}
		left -= span * shared;
		t = ot->e[k];
	}
	vg_busy_add(me, start, t);
	return t;
}

double vg_engine_time(int dev, enum vg_dir d, double t0, double bytes)
{
	return vg_link_time(dev, d, t0, bytes, d == VG_H2D ? vg.m.h2d :
							      vg.m.d2h);
}

/* ---- issue ---------------------------------------------------------------- */

enum vg_side { VG_SIDE_DEV, VG_SIDE_PINNED, VG_SIDE_PAGEABLE };

/* Where one side of a copy is, as issued. vg.mu held. */
static enum vg_side vg_side_of(const void *p, size_t n)
{
	struct vg_map *m = vg_find((uintptr_t)p, n ? n : 1);

	if (!m)
		return vg_in_reservation((uintptr_t)p) ? VG_SIDE_DEV :
							   VG_SIDE_PAGEABLE;
	switch (m->kind) {
	case VG_K_HOSTALLOC:
	case VG_K_HOSTREG:
		return VG_SIDE_PINNED;
	case VG_K_MANAGED:
		return m->plan[((uintptr_t)p - m->base) / VG_PAGE] ?
			VG_SIDE_DEV : VG_SIDE_PINNED;
	default:
		return VG_SIDE_DEV;
	}
}

static struct vg_op *vg_op_new(enum vg_op_type type, const char *what)
{
	struct vg_op *op = calloc(1, sizeof(*op));

	if (op) {
		op->type = type;
		op->what = what;
	}
	return op;
}

/* Common entry of the stream operations: device, stream, an op. */
static cudaError_t vg_issue_begin(cudaStream_t sh, struct CUstream_st **s,
				  struct vg_op **op, enum vg_op_type type,
				  const char *what)
{
	cudaError_t e = vg_stream_enter(sh, s);

	if (e)
		return e;
	*op = vg_op_new(type, what);
	return *op ? cudaSuccess : vg_fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
			    enum cudaMemcpyKind k, cudaStream_t sh)
{
	enum vg_side ds, ss;
	struct CUstream_st *s;
	struct vg_op *op;
	double t0, t;
	int sync;
	cudaError_t e;

	if ((unsigned)k > cudaMemcpyDefault || (n && (!dst || !src)))
		return vg_fail(cudaErrorInvalidValue);
	e = vg_issue_begin(sh, &s, &op, VG_OP_COPY, "copy");
	if (e)
		return e;
	op->dst = dst;
	op->src = src;
	op->n = n;
	op->r[0] = (struct vgpu_range){ dst, n };
	op->r[1] = (struct vgpu_range){ src, n };
	op->nr = 2;
	pthread_mutex_lock(&vg.mu);
	ds = vg_side_of(dst, n);
	ss = vg_side_of(src, n);
	sync = (ds == VG_SIDE_PAGEABLE || ss == VG_SIDE_PAGEABLE) &&
	       (ds == VG_SIDE_DEV || ss == VG_SIDE_DEV);
	t0 = vg_stream_start(s);
	if (ds == VG_SIDE_DEV && ss == VG_SIDE_DEV)
		t = t0 + (double)n * 2 / vg.m.hbm;
	else if (ds == VG_SIDE_DEV || ss == VG_SIDE_DEV)
		t = vg_link_time(s->dev, ds == VG_SIDE_DEV ? VG_H2D : VG_D2H,
				 t0, (double)n,
				 sync ? vg.m.pageable :
				 ds == VG_SIDE_DEV ? vg.m.h2d : vg.m.d2h);
	else
		t = t0 + (double)n / 20.0;	/* host to host */
	vg_stream_push(s, op, t + 1e3);
	/* Pageable: the call returns when the copy is done (as on CUDA). */
	if (sync)
		vg_stream_drain(s);
	e = vg.dev[s->dev].sticky;
	pthread_mutex_unlock(&vg.mu);
	return vg_fail(e);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
		       enum cudaMemcpyKind k)
{
	cudaError_t e = cudaMemcpyAsync(dst, src, n, k, NULL);

	return e ? e : cudaStreamSynchronize(NULL);
}

cudaError_t cudaMemsetAsync(void *dst, int v, size_t n, cudaStream_t sh)
{
	struct CUstream_st *s;
	struct vg_op *op;
	enum vg_side ds;
	cudaError_t e;

	if (n && !dst)
		return vg_fail(cudaErrorInvalidValue);
	e = vg_issue_begin(sh, &s, &op, VG_OP_MEMSET, "memset");
	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	ds = vg_side_of(dst, n);
	if (ds == VG_SIDE_PAGEABLE) {
		pthread_mutex_unlock(&vg.mu);
		free(op);
		return vg_fail(cudaErrorInvalidValue);
	}
	op->dst = dst;
	op->n = n;
	op->byte = v;
	op->r[0] = (struct vgpu_range){ dst, n };
	op->nr = 1;
	vg_stream_push(s, op, vg_stream_start(s) + 2e3 +
			      (double)n / (ds == VG_SIDE_DEV ? vg.m.hbm :
							       vg.m.h2d));
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* The managed allocation holding all of [p, p + n), or NULL. vg.mu held. */
static struct vg_map *vg_managed(const void *p, size_t n)
{
	struct vg_map *m = vg_find((uintptr_t)p, n ? n : 1);

	return m && m->kind == VG_K_MANAGED ? m : NULL;
}

static int vg_loc_ok(struct cudaMemLocation l, int host_numa_ok)
{
	switch (l.type) {
	case cudaMemLocationTypeDevice:
		return l.id >= 0 && l.id < vg.ndev;
	case cudaMemLocationTypeHost:
		return 1;
	case cudaMemLocationTypeHostNuma:
		return host_numa_ok && l.id == 0;
	default:
		return 0;
	}
}

/* Bytes of pages of [lo, hi) of m that change side; the plan follows. */
static double vg_plan_move(struct vg_map *m, uintptr_t lo, uintptr_t hi,
			   int to_dev)
{
	size_t a = (lo - m->base) / VG_PAGE;
	size_t b = (hi - m->base + VG_PAGE - 1) / VG_PAGE, i;
	double moved = 0;

	for (i = a; i < b; i++) {
		if (m->plan[i] != to_dev)
			moved += VG_PAGE;
		m->plan[i] = (uint8_t)to_dev;
	}
	return moved;
}

cudaError_t cudaMemPrefetchAsync(const void *p, size_t n,
				 struct cudaMemLocation l, unsigned int flags,
				 cudaStream_t sh)
{
	struct CUstream_st *s;
	struct vg_map *m;
	struct vg_op *op;
	double bytes, t0;
	int to_dev = l.type == cudaMemLocationTypeDevice;
	cudaError_t e;

	e = vg_issue_begin(sh, &s, &op, VG_OP_PREFETCH, "prefetch");
	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	m = vg_managed(p, n);
	if (flags || !n || !m || !vg_loc_ok(l, 1)) {
		pthread_mutex_unlock(&vg.mu);
		free(op);
		return vg_fail(cudaErrorInvalidValue);
	}
	op->dst = (void *)p;
	op->n = n;
	op->to_dev = to_dev;
	bytes = vg_plan_move(m, (uintptr_t)p, (uintptr_t)p + n, to_dev);
	t0 = vg_stream_start(s);
	vg_stream_push(s, op, bytes == 0 ? t0 + 2e3 :
		       vg_link_time(s->dev, to_dev ? VG_H2D : VG_D2H, t0,
				    bytes, to_dev ? vg.m.pf_h2d :
						    vg.m.pf_d2h));
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise a,
			  struct cudaMemLocation l)
{
	int host_numa_ok = a != cudaMemAdviseSetAccessedBy &&
			   a != cudaMemAdviseUnsetAccessedBy;
	cudaError_t e = vg_enter(NULL);
	int ok;

	if (e)
		return e;
	pthread_mutex_lock(&vg.mu);
	ok = n && vg_managed(p, n) && vg_loc_ok(l, host_numa_ok);
	pthread_mutex_unlock(&vg.mu);
	return ok ? cudaSuccess : vg_fail(cudaErrorInvalidValue);
}

cudaError_t cudaMemDiscardBatchAsync(void **ptrs, size_t *sizes, size_t count,
				     unsigned long long flags, cudaStream_t sh)
{
	struct CUstream_st *s;
	struct vg_op *op;
	size_t i;
	cudaError_t e;

	if (flags || !ptrs || !sizes)
		return vg_fail(cudaErrorInvalidValue);
	for (i = 0; i < count; i++) {
		e = vg_issue_begin(sh, &s, &op, VG_OP_DISCARD, "discard");
		if (e)
			return e;
		pthread_mutex_lock(&vg.mu);
		if (!vg_managed(ptrs[i], sizes[i])) {
			pthread_mutex_unlock(&vg.mu);
			free(op);
			return vg_fail(cudaErrorInvalidValue);
		}
		op->dst = ptrs[i];
		op->n = sizes[i];
		op->r[0] = (struct vgpu_range){ ptrs[i], sizes[i] };
		op->nr = 1;
		vg_stream_push(s, op, vg_stream_start(s) + 2e3);
		pthread_mutex_unlock(&vg.mu);
	}
	return cudaSuccess;
}

int vgpu_launch(void *stream, int (*fn)(void *arg), const void *arg,
		size_t argsize, const struct vgpu_range *ranges, int nranges,
		uint64_t hbm_bytes)
{
	struct CUstream_st *s;
	struct vg_op *op;
	double t, faulted = 0;
	int i;
	cudaError_t e;

	if (!fn || nranges < 0 || nranges > VGPU_MAX_RANGES ||
	    (nranges && !ranges))
		return vg_fail(cudaErrorInvalidValue);
	e = vg_issue_begin((cudaStream_t)stream, &s, &op, VG_OP_KERNEL,
			   "kernel");
	if (e)
		return e;
	op->kfn = fn;
	op->arg = malloc(argsize ? argsize : 1);
	if (!op->arg) {
		free(op);
		return vg_fail(cudaErrorMemoryAllocation);
	}
	memcpy(op->arg, arg, argsize);
	op->nr = nranges;
	for (i = 0; i < nranges; i++)
		op->r[i] = ranges[i];
	pthread_mutex_lock(&vg.mu);
	/* Managed pages on the host fault in as the kernel touches them. */
	for (i = 0; i < nranges; i++) {
		struct vg_map *m = vg_managed(ranges[i].p, ranges[i].len);

		if (m)
			faulted += vg_plan_move(m, (uintptr_t)ranges[i].p,
						(uintptr_t)ranges[i].p +
						ranges[i].len, 1);
	}
	t = vg_stream_start(s) + 5e3 + (double)hbm_bytes / vg.m.hbm;
	if (faulted)
		t = vg_link_time(s->dev, VG_H2D, t, faulted, vg.m.fault);
	vg_stream_push(s, op, t);
	pthread_mutex_unlock(&vg.mu);
	return cudaSuccess;
}

/* ---- execution (workers) -------------------------------------------------- */

void *vgpu_kptr(const void *p, size_t len)
{
	if (vg_kernel_dev < 0 || !p)
		return NULL;
	return vg_resolve(p, len, vg_kernel_dev);
}

/*
 * Where the worker of dev reads or writes [p, p + n): device memory through
 * the alias; host memory (pinned or pageable) as it is. NULL: device memory
 * this device cannot reach now. maplock held.
 */
static void *vg_xlat(const void *p, size_t n, int dev)
{
	void *a = vg_resolve(p, n, dev);
	int host;

	if (a)
		return a;
	pthread_mutex_lock(&vg.mu);
	host = !vg_find((uintptr_t)p, 1) && !vg_in_reservation((uintptr_t)p);
	pthread_mutex_unlock(&vg.mu);
	return host ? (void *)p : NULL;
}

static void vg_fault(struct CUstream_st *s, const struct vg_op *op,
		     const void *p)
{
	char why[128];

	snprintf(why, sizeof(why), "%s on stream %p touches %p, not mapped for it",
		 op->what, (void *)s, p);
	pthread_mutex_lock(&vg.mu);
	vg_make_sticky(s->dev, why);
	pthread_mutex_unlock(&vg.mu);
}

/* Copies count for UM_VGPU_STICKY_AFTER: 1 when this one poisons instead. */
static int vg_inject_sticky(struct CUstream_st *s)
{
	int hit;

	pthread_mutex_lock(&vg.mu);
	hit = ++vg.copies_run > vg.sticky_after;
	if (hit)
		vg_make_sticky(s->dev, "injected (UM_VGPU_STICKY_AFTER)");
	pthread_mutex_unlock(&vg.mu);
	return hit;
}

static void vg_run_copy(struct CUstream_st *s, struct vg_op *op)
{
	void *d, *src;

	if (vg_inject_sticky(s))
		return;
	pthread_rwlock_rdlock(&vg.maplock);
	d = vg_xlat(op->dst, op->n, s->dev);
	src = vg_xlat(op->src, op->n, s->dev);
	if (!d || !src)
		vg_fault(s, op, d ? op->src : op->dst);
	else
		memmove(d, src, op->n);
	pthread_rwlock_unlock(&vg.maplock);
}

static void vg_run_prefetch(struct vg_op *op)
{
	struct vg_map *m;

	pthread_rwlock_wrlock(&vg.maplock);
	pthread_mutex_lock(&vg.mu);
	m = vg_managed(op->dst, op->n);
	pthread_mutex_unlock(&vg.mu);
	if (m)
		vg_managed_set(m, (uintptr_t)op->dst,
			       (uintptr_t)op->dst + op->n, op->to_dev);
	pthread_rwlock_unlock(&vg.maplock);
}

/* Managed pages a kernel touches are on the device while it runs. */
static void vg_kernel_fault_in(const struct vg_op *op)
{
	int i;

	pthread_rwlock_wrlock(&vg.maplock);
	for (i = 0; i < op->nr; i++) {
		struct vg_map *m;

		pthread_mutex_lock(&vg.mu);
		m = vg_managed(op->r[i].p, op->r[i].len);
		pthread_mutex_unlock(&vg.mu);
		if (m)
			vg_managed_set(m, (uintptr_t)op->r[i].p,
				       (uintptr_t)op->r[i].p + op->r[i].len, 1);
	}
	pthread_rwlock_unlock(&vg.maplock);
}

static void vg_run_kernel(struct CUstream_st *s, struct vg_op *op)
{
	int i, bad = -1;

	vg_kernel_fault_in(op);
	pthread_rwlock_rdlock(&vg.maplock);
	for (i = 0; i < op->nr && bad < 0; i++)
		if (op->r[i].len && !vg_resolve(op->r[i].p, op->r[i].len,
						s->dev))
			bad = i;
	if (bad < 0) {
		vg_kernel_dev = s->dev;
		if (op->kfn(op->arg))
			bad = 0;
		vg_kernel_dev = -1;
	}
	pthread_rwlock_unlock(&vg.maplock);
	if (bad >= 0)
		vg_fault(s, op, op->r[bad].p);
}

void vg_op_run(struct CUstream_st *s, struct vg_op *op)
{
	void *d;

	switch (op->type) {
	case VG_OP_COPY:
		vg_run_copy(s, op);
		break;
	case VG_OP_MEMSET:
	case VG_OP_DISCARD:
		pthread_rwlock_rdlock(&vg.maplock);
		d = vg_xlat(op->dst, op->n, s->dev);
		if (!d)
			vg_fault(s, op, op->dst);
		else	/* discarded bytes are garbage: make readers see it */
			memset(d, op->type == VG_OP_MEMSET ? op->byte : 0xa5,
			       op->n);
		pthread_rwlock_unlock(&vg.maplock);
		break;
	case VG_OP_PREFETCH:
		vg_run_prefetch(op);
		break;
	case VG_OP_KERNEL:
		vg_run_kernel(s, op);
		break;
	case VG_OP_HOSTFN:
		vg_in_callback = 1;
		op->hfn(op->arg);
		vg_in_callback = 0;
		break;
	default:
		break;
	}
}
