// SPDX-License-Identifier: MIT
/*
 * bench_gpu.cu - umbench --gpu: what moving a trainer's state costs on this
 * GPU, measured side by side in one run.
 *
 *   1. ceilings: pinned cudaMemcpyAsync host->device, device->host, and both
 *      at once (half the bytes each way, two streams);
 *   2. evict/restore of the same number of bytes by: UVM prefetch, libum
 *      MANAGED (prefetch, and copy + discard), libum TIERED; then a TIERED
 *      eviction of one region overlapped with the restore of another;
 *   3. one Adam step with offloaded optimizer state, every way the H200 probes
 *      lists (bench_gpu_adam.cu).
 *
 * Each figure is the best of --reps runs after one warm-up, as a ratio to
 * the ceiling measured in step 1. Tables to stdout (or one JSON object with
 * --json), progress to stderr only when it is a TTY. Exit status: 0 every
 * target met and every result intact, 1 a target missed, data differed or a
 * step failed, 2 bad usage, 4 no usable GPU.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_gpu.h"
#include "gpu.h"

extern "C" {
#include "ut.h"
}

/* Targets (Documentation/performance.rst). */
#define BG_T_TIERED 0.90	/* evict, restore vs one-way ceilings */
#define BG_T_OVERLAP 0.85	/* vs the both-ways ceiling */
#define BG_T_ADAM 1.15		/* (f) in, step, out vs no-overlap floor */
#define BG_T_ADAM_OVL 1.10	/* (g) pipelined vs the overlapped floor */

/* Defined by the virtual GPU (tests/gpu/vgpu) only. */
extern "C" int um_vgpu __attribute__((weak));

int bg_modeled(void)
{
	return &um_vgpu && um_vgpu;
}

cudaError_t bg_clock_init(struct bg_clock *c)
{
	cudaError_t e = cudaEventCreate(&c->a);

	if (e != cudaSuccess) {
		c->a = c->b = NULL;
		return e;
	}
	e = cudaEventCreate(&c->b);
	if (e != cudaSuccess) {
		cudaEventDestroy(c->a);
		c->a = c->b = NULL;
	}
	return e;
}

void bg_clock_fini(struct bg_clock *c)
{
	if (c->a)
		cudaEventDestroy(c->a);
	if (c->b)
		cudaEventDestroy(c->b);
	c->a = c->b = NULL;
}

cudaError_t bg_clock_start(struct bg_clock *c, cudaStream_t s)
{
	return cudaEventRecord(c->a, s);
}

cudaError_t bg_clock_stop(struct bg_clock *c, cudaStream_t s, double *ms)
{
	float f = 0;
	cudaError_t e = cudaEventRecord(c->b, s);

	if (e == cudaSuccess)
		e = cudaEventSynchronize(c->b);
	if (e == cudaSuccess)
		e = cudaEventElapsedTime(&f, c->a, c->b);
	*ms = f;
	return e;
}

double bg_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void bg_progress(const struct bg_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->progress)
		return;
	fprintf(stderr, "umbench --gpu: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
}

void bg_set_err(char *err, const char *what, const char *why, int line)
{
	if (err[0])		/* keep the first error */
		return;
	snprintf(err, BG_ERR_LEN, "%s: %s (line %d)", what, why, line);
}

void bg_um_log(void *arg, int level, const char *msg)
{
	(void)arg;
	fprintf(stderr, "umbench --gpu: libum[%d]: %s\n", level, msg);
}

static double gbps(uint64_t bytes, double s)
{
	return s > 0 ? (double)bytes / s / 1e9 : 0;
}

/* Keep the best time; rep 0 is the warm-up, a rep < 0 thrown out. */
static void keep_best(int rep, double t, double *best)
{
	if (rep > 0 && t < *best)
		*best = t;
}

/* ---- options ----------------------------------------------------------- */

static int parse_size(const char *s, uint64_t *out)
{
	char *end = NULL;
	unsigned long long v;
	uint64_t mul = 1;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': mul = 1ull << 10; end++; break;
	case 'm': case 'M': mul = 1ull << 20; end++; break;
	case 'g': case 'G': mul = 1ull << 30; end++; break;
	case 't': case 'T': mul = 1ull << 40; end++; break;
	default: break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	else if (*end == 'B')
		end++;
	if (*end || (v && mul > UINT64_MAX / v))
		return -EINVAL;
	*out = v * mul;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
"usage: umbench --gpu [--gpu-bytes SIZE] [--adam-params COUNT] [--reps N]\n"
"                     [--pieces K] [--threads N] [-J] [--json-file PATH] [-q]\n"
"  --gpu-bytes SIZE     bytes per transfer test (default 4G, 64M..1T)\n"
"  --adam-params COUNT  fp32 parameters of the Adam step (default 512M;\n"
"                       K/M/G multiply by 1024; 0 skips the Adam table)\n"
"  --reps N             timed repetitions after one warm-up, best kept (3)\n"
"  --pieces K           pieces of the pipelined TIERED Adam step (16)\n"
"  --threads N          CPU Adam threads (default: online CPUs)\n"
"  -J, --json           one JSON object on stdout instead of tables\n"
"  --json-file PATH     also write that JSON object to PATH\n"
"  -q, --quiet          no progress lines (else on stderr when a TTY)\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end = NULL;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct bg_opts *o)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int i;

	o->bytes = 4 * BG_GiB;
	o->params = 512ull << 20;
	o->reps = 3;
	o->pieces = 16;
	o->threads = ncpu > 0 ? (int)(ncpu < 256 ? ncpu : 256) : 1;
	o->json = 0;
	o->json_file = NULL;
	o->progress = isatty(2);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;

		if (!strcmp(a, "--gpu"))
			continue;
		if (!strcmp(a, "--json") || !strcmp(a, "-J")) {
			o->json = 1;
			continue;
		}
		if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			o->progress = 0;
			continue;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 1;
		}
		if (!v) {
			fprintf(stderr, "umbench --gpu: %s: %s\n", a,
				strncmp(a, "--", 2) ? "unknown option" :
						      "unknown option or missing value");
			usage(stderr);
			return -EINVAL;
		}
		if (!strcmp(a, "--gpu-bytes"))
			bad = parse_size(v, &o->bytes) || o->bytes < 64 * BG_MiB ||
			      o->bytes > (1ull << 40);
		else if (!strcmp(a, "--adam-params"))
			bad = parse_size(v, &o->params) ||
			      (o->params && o->params < (1ull << 20)) ||
			      o->params > (1ull << 36);
		else if (!strcmp(a, "--reps"))
			bad = parse_int(v, 1, 100, &o->reps);
		else if (!strcmp(a, "--pieces"))
			bad = parse_int(v, 2, 1024, &o->pieces);
		else if (!strcmp(a, "--threads"))
			bad = parse_int(v, 1, 256, &o->threads);
		else if (!strcmp(a, "--json-file"))
			o->json_file = v;
		else {
			fprintf(stderr, "umbench --gpu: unknown option %s\n", a);
			usage(stderr);
			return -EINVAL;
		}
		if (bad) {
			fprintf(stderr, "umbench --gpu: bad value for %s: %s\n",
				a, v);
			return -EINVAL;
		}
		i++;
	}
	/* Whole 2 MiB pages: every buffer stays aligned for VMM and words. */
	o->bytes &= ~(2 * BG_MiB - 1);
	return 0;
}

/* ---- pinned allocation: cudaHostAlloc vs malloc + cudaHostRegister ---- */

static void bench_pinned_alloc(const struct bg_opts *o, struct bg_results *r,
			       cudaStream_t s)
{
	const size_t len = o->bytes < 256 * BG_MiB ? o->bytes : 256 * BG_MiB;
	struct bg_clock c = { NULL, NULL };
	void *p = NULL, *q = NULL;

	r->pin_bytes = len;
	bg_progress(o, "pinned allocation, %zu MiB two ways", len >> 20);
	/* Host calls between two events on an idle stream: their host time. */
	BG_CK(r->pin_err, bg_clock_init(&c));
	BG_CK(r->pin_err, bg_clock_start(&c, s));
	BG_CK(r->pin_err, cudaHostAlloc(&p, len, cudaHostAllocPortable));
	BG_CK(r->pin_err, cudaFreeHost(p));
	p = NULL;
	BG_CK(r->pin_err, bg_clock_stop(&c, s, &r->pin_alloc_ms));
	BG_CK(r->pin_err, bg_clock_start(&c, s));
	q = aligned_alloc(2 * BG_MiB, len);
	if (!q) {
		bg_set_err(r->pin_err, "aligned_alloc", strerror(ENOMEM),
			   __LINE__);
		goto fail;
	}
	memset(q, 0, len);	/* what um__numa_alloc does: touch first */
	BG_CK(r->pin_err, cudaHostRegister(q, len, cudaHostRegisterPortable));
	BG_CK(r->pin_err, cudaHostUnregister(q));
	BG_CK(r->pin_err, bg_clock_stop(&c, s, &r->pin_register_ms));
fail:
	bg_clock_fini(&c);
	free(q);
}

/* ---- ceilings ---------------------------------------------------------- */

static void bench_ceilings(const struct bg_opts *o, struct bg_results *r,
			   cudaStream_t s1, cudaStream_t s2)
{
	const uint64_t n = o->bytes, half = n / 2;
	cudaEvent_t a = NULL, b = NULL, c = NULL;
	char *h = NULL, *d = NULL;
	float ms;
	int rep, dir;

	bg_progress(o, "ceilings: pinned cudaMemcpyAsync, %llu MiB",
		    (unsigned long long)(n >> 20));
	BG_CK(r->ceil_err, cudaEventCreate(&a));
	BG_CK(r->ceil_err, cudaEventCreate(&b));
	BG_CK(r->ceil_err, cudaEventCreate(&c));
	BG_CK(r->ceil_err, cudaHostAlloc((void **)&h, n, cudaHostAllocPortable));
	BG_CK(r->ceil_err, cudaMalloc((void **)&d, n));
	memset(h, 1, n);
	for (dir = 0; dir < 2; dir++) {
		double best = 1e30;

		for (rep = 0; rep <= o->reps; rep++) {
			BG_CK(r->ceil_err, cudaEventRecord(a, s1));
			if (dir == 0)
				BG_CK(r->ceil_err, cudaMemcpyAsync(d, h, n,
					cudaMemcpyHostToDevice, s1));
			else
				BG_CK(r->ceil_err, cudaMemcpyAsync(h, d, n,
					cudaMemcpyDeviceToHost, s1));
			BG_CK(r->ceil_err, cudaEventRecord(b, s1));
			BG_CK(r->ceil_err, cudaEventSynchronize(b));
			BG_CK(r->ceil_err, cudaEventElapsedTime(&ms, a, b));
			keep_best(rep, ms, &best);
		}
		if (dir == 0)
			r->h2d = gbps(n, best / 1e3);
		else
			r->d2h = gbps(n, best / 1e3);
	}
	{
		double best = 1e30;

		for (rep = 0; rep <= o->reps; rep++) {
			BG_CK(r->ceil_err, cudaEventRecord(a, s1));
			BG_CK(r->ceil_err, cudaStreamWaitEvent(s2, a, 0));
			BG_CK(r->ceil_err, cudaMemcpyAsync(d, h, half,
				cudaMemcpyHostToDevice, s1));
			BG_CK(r->ceil_err, cudaMemcpyAsync(h + half, d + half,
				half, cudaMemcpyDeviceToHost, s2));
			BG_CK(r->ceil_err, cudaEventRecord(c, s2));
			BG_CK(r->ceil_err, cudaStreamWaitEvent(s1, c, 0));
			BG_CK(r->ceil_err, cudaEventRecord(b, s1));
			BG_CK(r->ceil_err, cudaEventSynchronize(b));
			BG_CK(r->ceil_err, cudaEventElapsedTime(&ms, a, b));
			keep_best(rep, ms, &best);
		}
		r->both = gbps(2 * half, best / 1e3);
	}
fail:
	if (d)
		cudaFree(d);
	if (h)
		cudaFreeHost(h);
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	if (c)
		cudaEventDestroy(c);
	(void)cudaGetLastError();
}

/* ---- UVM prefetch, the driver alone ------------------------------------ */

static cudaMemLocation bg_loc(cudaMemLocationType t, int id)
{
	cudaMemLocation l;

	memset(&l, 0, sizeof(l));
	l.type = t;
	l.id = id;
	return l;
}

/* GPU memory an eviction gave back, from cudaMemGetInfo before and after */
static void note_freed(struct bg_mig *m, size_t f0, size_t f1)
{
	m->freed_gib = ((double)f1 - (double)f0) / (double)BG_GiB;
	m->freed_known = 1;
}

static void bench_uvm(const struct bg_opts *o, struct bg_results *r,
		      cudaStream_t s)
{
	struct bg_mig *m = &r->mig[r->nmig++];
	const uint64_t n = o->bytes;
	double be = 1e30, br = 1e30, t;
	struct bg_clock c = { NULL, NULL };
	size_t f0, f1, tot;
	uint64_t bad = 0;
	void *p = NULL;
	int rep;

	m->id = "uvm_prefetch";
	m->name = "UVM cudaMemPrefetchAsync";
	m->intact = -1;
	bg_progress(o, "UVM prefetch evict/restore");
	BG_CK(m->err, bg_clock_init(&c));
	BG_CK(m->err, cudaMallocManaged(&p, n, cudaMemAttachGlobal));
	BG_CK(m->err, cudaMemPrefetchAsync(p, n,
		bg_loc(cudaMemLocationTypeDevice, 0), 0, s));
	BG_CK(m->err, bgk_fill(p, n, 17, s));
	BG_CK(m->err, cudaStreamSynchronize(s));
	for (rep = 0; rep <= o->reps; rep++) {
		BG_CK(m->err, cudaMemGetInfo(&f0, &tot));
		BG_CK(m->err, bg_clock_start(&c, s));
		BG_CK(m->err, cudaMemPrefetchAsync(p, n,
			bg_loc(cudaMemLocationTypeHost, 0), 0, s));
		BG_CK(m->err, bg_clock_stop(&c, s, &t));
		keep_best(rep, t / 1e3, &be);
		BG_CK(m->err, cudaMemGetInfo(&f1, &tot));
		note_freed(m, f0, f1);
		BG_CK(m->err, bg_clock_start(&c, s));
		BG_CK(m->err, cudaMemPrefetchAsync(p, n,
			bg_loc(cudaMemLocationTypeDevice, 0), 0, s));
		BG_CK(m->err, bg_clock_stop(&c, s, &t));
		keep_best(rep, t / 1e3, &br);
	}
	m->evict_gbps = gbps(n, be);
	m->restore_gbps = gbps(n, br);
	BG_CK(m->err, bgk_check(p, n, 17, s, &bad));
	m->intact = bad == 0;
fail:
	if (p)
		cudaFree(p);
	bg_clock_fini(&c);
	(void)cudaGetLastError();
}

/* ---- libum: one region evicted and restored ---------------------------- */

static int get_stats(struct um_context *ctx, struct um_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return um_stats_get(ctx, st);
}

static uint64_t pool_now(struct um_context *ctx)
{
	struct um_stats st;

	return get_stats(ctx, &st) ? UINT64_MAX : st.pool_bytes;
}

/*
 * The timed reps of a libum row. A rep during which libum grew its pinned
 * pool (the refill thread pins when the pool falls below its mark, at a
 * moment set by thread timing) timed a one-off pin, not the steady state:
 * it is run again, up to twice the reps, and counted in r->repinned. The
 * warm-up (rep 0) is kept whatever it did.
 */
struct bg_reps {
	int kept, tries;
	uint64_t pool0;
};

static bool reps_more(const struct bg_opts *o, struct bg_reps *rp,
		      struct um_context *ctx)
{
	if (rp->kept > o->reps || rp->tries++ > 3 * o->reps)
		return false;
	rp->pool0 = pool_now(ctx);
	return true;
}

/* The rep number to hand keep_best(), or -1: the rep is thrown out. */
static int rep_kept(struct bg_reps *rp, struct um_context *ctx,
		    struct bg_results *r)
{
	if (rp->kept && pool_now(ctx) != rp->pool0) {
		r->repinned++;
		return -1;
	}
	return rp->kept++;
}


static void region_desc(struct um_region_desc *d, uint32_t backing,
			uint32_t flags, uint64_t bytes, const char *name)
{
	memset(d, 0, sizeof(*d));
	d->size = sizeof(*d);
	d->kind = UM_KIND_OPTIMIZER_STATE;
	d->backing = backing;
	d->flags = flags;
	d->bytes = bytes;
	d->name = name;
}

static void bench_libum(const struct bg_opts *o, struct bg_results *r,
			struct um_context *ctx, cudaStream_t s,
			const char *id, const char *name, uint32_t backing,
			uint32_t flags)
{
	struct bg_mig *m = &r->mig[r->nmig++];
	const uint64_t n = o->bytes;
	struct um_region_desc d;
	struct um_stats s0, s1;
	double be = 1e30, br = 1e30, te, t;
	struct bg_clock c = { NULL, NULL };
	struct bg_reps rp = { 0, 0, 0 };
	um_region_t h = 0;
	size_t f0, f1, tot;
	uint64_t bad = 0;
	void *p = NULL;
	int rep, acquired = 0;

	m->id = id;
	m->name = name;
	m->intact = -1;
	bg_progress(o, "%s evict/restore", name);
	BG_CK(m->err, bg_clock_init(&c));
	region_desc(&d, backing, flags, n, id);
	BG_UK(m->err, um_alloc(ctx, &d, &h));
	BG_UK(m->err, um_ptr(ctx, h, &p));
	BG_UK(m->err, um_acquire(ctx, h, UM_TIER_GPU(0), s));
	acquired = 1;
	BG_CK(m->err, bgk_fill(p, n, 23, s));
	BG_UK(m->err, um_release(ctx, h));
	acquired = 0;
	BG_CK(m->err, cudaStreamSynchronize(s));
	BG_UK(m->err, um_wait(ctx, h));
	BG_UK(m->err, get_stats(ctx, &s0));
	while (reps_more(o, &rp, ctx)) {
		BG_CK(m->err, cudaMemGetInfo(&f0, &tot));
		/* From the caller's stream, to when the host saw it done. */
		BG_CK(m->err, bg_clock_start(&c, s));
		BG_UK(m->err, um_evict(ctx, h, UM_TIER_HOST_ANY));
		BG_UK(m->err, um_wait(ctx, h));
		BG_CK(m->err, bg_clock_stop(&c, s, &te));
		BG_CK(m->err, cudaMemGetInfo(&f1, &tot));
		note_freed(m, f0, f1);
		/* um_acquire orders s after the restore: no host wait. */
		BG_CK(m->err, bg_clock_start(&c, s));
		BG_UK(m->err, um_acquire(ctx, h, UM_TIER_GPU(0), s));
		acquired = 1;
		BG_CK(m->err, bg_clock_stop(&c, s, &t));
		rep = rep_kept(&rp, ctx, r);
		keep_best(rep, te / 1e3, &be);
		keep_best(rep, t / 1e3, &br);
		BG_UK(m->err, um_release(ctx, h));
		acquired = 0;
	}
	BG_UK(m->err, get_stats(ctx, &s1));
	m->evict_gbps = gbps(n, be);
	m->restore_gbps = gbps(n, br);
	/* libum's own, device-timed figures over all the reps. */
	if (s1.evict_ns > s0.evict_ns)
		m->dev_evict_gbps = (double)(s1.evict_bytes - s0.evict_bytes) /
				    (double)(s1.evict_ns - s0.evict_ns);
	if (s1.restore_ns > s0.restore_ns)
		m->dev_restore_gbps =
			(double)(s1.restore_bytes - s0.restore_bytes) /
			(double)(s1.restore_ns - s0.restore_ns);
	BG_UK(m->err, um_acquire(ctx, h, UM_TIER_GPU(0), s));
	acquired = 1;
	BG_CK(m->err, bgk_check(p, n, 23, s, &bad));
	m->intact = bad == 0;
fail:
	(void)cudaGetLastError();
	bg_clock_fini(&c);
	if (h) {
		if (acquired)
			um_release(ctx, h);
		cudaStreamSynchronize(s);
		um_wait(ctx, h);
		um_free(ctx, h);
	}
}

/* Evict one TIERED region while restoring another, n / 2 bytes each. */
static void bench_overlap(const struct bg_opts *o, struct bg_results *r,
			  struct um_context *ctx, cudaStream_t s)
{
	const uint64_t half = o->bytes / 2;
	struct um_region_desc d;
	um_region_t h[2] = { 0, 0 };
	void *p[2] = { NULL, NULL };
	struct bg_clock c = { NULL, NULL };
	struct bg_reps rp = { 0, 0, 0 };
	double best = 1e30, t;
	uint64_t bad = 0;
	int i, in = 1, ok = 1;

	r->ovl_intact = -1;
	bg_progress(o, "TIERED evict overlapped with restore");
	BG_CK(r->ovl_err, bg_clock_init(&c));
	region_desc(&d, UM_BACKING_TIERED, 0, half, "overlap");
	for (i = 0; i < 2; i++) {
		BG_UK(r->ovl_err, um_alloc(ctx, &d, &h[i]));
		BG_UK(r->ovl_err, um_ptr(ctx, h[i], &p[i]));
		BG_UK(r->ovl_err, um_acquire(ctx, h[i], UM_TIER_GPU(0), s));
		BG_CK(r->ovl_err, bgk_fill(p[i], half, 31 + i, s));
		BG_UK(r->ovl_err, um_release(ctx, h[i]));
	}
	BG_CK(r->ovl_err, cudaStreamSynchronize(s));
	BG_UK(r->ovl_err, um_evict(ctx, h[1], UM_TIER_HOST_ANY));
	BG_UK(r->ovl_err, um_wait_all(ctx));
	while (reps_more(o, &rp, ctx)) {
		int out = 1 - in;

		/* h[out] is on the GPU, h[in] on the host: swap them. */
		BG_CK(r->ovl_err, bg_clock_start(&c, s));
		BG_UK(r->ovl_err, um_evict(ctx, h[out], UM_TIER_HOST_ANY));
		BG_UK(r->ovl_err, um_acquire(ctx, h[in], UM_TIER_GPU(0), s));
		BG_UK(r->ovl_err, um_wait_all(ctx));
		BG_CK(r->ovl_err, bg_clock_stop(&c, s, &t));
		BG_UK(r->ovl_err, um_release(ctx, h[in]));
		keep_best(rep_kept(&rp, ctx, r), t / 1e3, &best);
		in = out;
	}
	r->ovl_gbps = gbps(2 * half, best);
	for (i = 0; i < 2; i++) {
		BG_UK(r->ovl_err, um_acquire(ctx, h[i], UM_TIER_GPU(0), s));
		BG_CK(r->ovl_err, bgk_check(p[i], half, 31 + i, s, &bad));
		BG_UK(r->ovl_err, um_release(ctx, h[i]));
		ok &= bad == 0;
	}
	r->ovl_intact = ok;
fail:
	(void)cudaGetLastError();
	bg_clock_fini(&c);
	cudaStreamSynchronize(s);
	um_wait_all(ctx);
	for (i = 0; i < 2; i++)
		if (h[i])
			um_free(ctx, h[i]);
}

/* ---- output ------------------------------------------------------------ */

static double ratio(double v, double ceil)
{
	return ceil > 0 ? v / ceil : 0;
}

struct bg_target {
	const char *name;
	double value, target;
	int le;			/* pass when value <= target, else >= */
	int known;
};

static int collect_targets(const struct bg_results *r, struct bg_target *t)
{
	const struct bg_mig *tm = NULL;
	int i, n = 0;

	for (i = 0; i < r->nmig; i++)
		if (!strcmp(r->mig[i].id, "libum_tiered"))
			tm = &r->mig[i];
	t[n++] = (struct bg_target){ "tiered_evict_vs_d2h",
		tm ? ratio(tm->evict_gbps, r->d2h) : 0, BG_T_TIERED, 0,
		tm && !tm->err[0] && r->d2h > 0 };
	t[n++] = (struct bg_target){ "tiered_restore_vs_h2d",
		tm ? ratio(tm->restore_gbps, r->h2d) : 0, BG_T_TIERED, 0,
		tm && !tm->err[0] && r->h2d > 0 };
	t[n++] = (struct bg_target){ "tiered_overlap_vs_both",
		ratio(r->ovl_gbps, r->both), BG_T_OVERLAP, 0,
		!r->ovl_err[0] && r->both > 0 };
	for (i = 0; i < r->nadam; i++) {
		const struct bg_adam *a = &r->adam[i];

		/* (f) moves one way at a time; (g) must overlap both ways. */
		if (!strcmp(a->id, "f"))
			t[n++] = (struct bg_target){ "adam_tiered_vs_floor",
				ratio(a->total_ms, r->floor_ms), BG_T_ADAM, 1,
				!a->err[0] && r->floor_ms > 0 };
		else if (!strcmp(a->id, "g"))
			t[n++] = (struct bg_target){
				"adam_pipelined_vs_overlapped_floor",
				ratio(a->total_ms, r->floor_ovl_ms),
				BG_T_ADAM_OVL, 1,
				!a->err[0] && r->floor_ovl_ms > 0 };
	}
	return n;
}

static int target_pass(const struct bg_target *t)
{
	if (!t->known)
		return 0;
	return t->le ? t->value <= t->target : t->value >= t->target;
}

static const char *yn(int v)
{
	return v > 0 ? "yes" : v == 0 ? "NO" : "-";
}

static void print_text(const struct bg_opts *o, const struct bg_results *r,
		       const struct bg_target *t, int nt)
{
	int i;

	printf("umbench --gpu: %s, %.1f GiB, driver %d, runtime %d\n",
	       r->device, (double)r->dev_total / (double)BG_GiB,
	       r->driver_version, r->runtime_version);
	if (r->modeled)
		printf("MODELED: every time below is the virtual GPU's model (tests/gpu/vgpu), not a measurement on a GPU\n");
	printf("%.2f GiB per transfer, best of %d after a warm-up\n\n",
	       (double)o->bytes / (double)BG_GiB, o->reps);
	if (r->pin_err[0])
		printf("pinned allocation: error: %s\n\n", r->pin_err);
	else
		printf("pinned allocation of %llu MiB: cudaHostAlloc %.1f ms, touch + cudaHostRegister %.1f ms\n\n",
		       (unsigned long long)(r->pin_bytes >> 20),
		       r->pin_alloc_ms, r->pin_register_ms);
	if (r->ctx_err[0])
		printf("libum: error: %s (no libum rows)\n\n", r->ctx_err);
	printf("%-34s %9s\n", "ceiling (pinned cudaMemcpyAsync)", "GB/s");
	if (r->ceil_err[0])
		printf("error: %s\n", r->ceil_err);
	printf("%-34s %9.1f\n", "host -> device", r->h2d);
	printf("%-34s %9.1f\n", "device -> host", r->d2h);
	printf("%-34s %9.1f\n\n", "both at once (total)", r->both);

	printf("%-30s %8s %6s %8s %6s %9s %9s %7s\n", "evict / restore", "evict",
	       "ratio", "restore", "ratio", "dev-timed", "gpu freed", "intact");
	printf("%-30s %8s %6s %8s %6s %9s %9s %7s\n", "", "GB/s", "", "GB/s", "",
	       "e/r GB/s", "GiB", "");
	for (i = 0; i < r->nmig; i++) {
		const struct bg_mig *m = &r->mig[i];
		char dev[32] = "-", fr[32] = "-";

		if (m->dev_evict_gbps > 0 || m->dev_restore_gbps > 0)
			snprintf(dev, sizeof(dev), "%.0f/%.0f",
				 m->dev_evict_gbps, m->dev_restore_gbps);
		if (m->freed_known)
			snprintf(fr, sizeof(fr), "%.2f", m->freed_gib);
		printf("%-30s %8.1f %6.2f %8.1f %6.2f %9s %9s %7s\n", m->name,
		       m->evict_gbps, ratio(m->evict_gbps, r->d2h),
		       m->restore_gbps, ratio(m->restore_gbps, r->h2d), dev,
		       fr, yn(m->intact));
		if (m->err[0])
			printf("  error: %s\n", m->err);
	}
	printf("%-30s %8.1f %6.2f %33s %7s\n",
	       "TIERED evict+restore at once", r->ovl_gbps,
	       ratio(r->ovl_gbps, r->both), "(total GB/s, ratio to both-ways)",
	       yn(r->ovl_intact));
	if (r->ovl_err[0])
		printf("  error: %s\n", r->ovl_err);
	if (r->repinned)
		printf("timed reps run again: libum grew its pinned pool during %d of them\n",
		       r->repinned);

	if (r->nadam) {
		printf("\nAdam step, %llu M fp32 parameters, optimizer state m+v = %.2f GiB\n",
		       (unsigned long long)(r->adam_params >> 20),
		       (double)r->state_bytes / (double)BG_GiB);
		printf("floor: state in and out at the measured ceilings, one way at a time %.1f ms; both ways overlapped %.1f ms\n",
		       r->floor_ms, r->floor_ovl_ms);
		printf("%-46s %8s %8s %8s %9s %6s %7s %9s\n",
		       "where the state lives", "in ms", "step ms", "out ms",
		       "total ms", "floor", "ovl fl", "p,m,v ident");
		for (i = 0; i < r->nadam; i++) {
			const struct bg_adam *a = &r->adam[i];
			char in[16] = "-", out[16] = "-", st[16] = "-";

			if (a->parts) {
				snprintf(in, sizeof(in), "%.1f", a->in_ms);
				snprintf(out, sizeof(out), "%.1f", a->out_ms);
			}
			if (a->parts || a->step_ms > 0)
				snprintf(st, sizeof(st), "%.1f", a->step_ms);
			printf("(%s) %-42s %8s %8s %8s %9.1f %6.2f %7.2f %9s\n",
			       a->id, a->name, in, st, out, a->total_ms,
			       ratio(a->total_ms, r->floor_ms),
			       ratio(a->total_ms, r->floor_ovl_ms),
			       yn(a->identical));
			if (a->identical == 0)
				printf("  %llu values of p, m, v differ from (a), largest difference %g\n",
				       (unsigned long long)a->ndiff,
				       a->max_diff);
			if (a->note[0])
				printf("  %s\n", a->note);
			if (a->err[0])
				printf("  error: %s\n", a->err);
		}
	}
	printf("\n%-36s %8s %8s %6s%s\n", "target", "value",
	       "target", "result", r->modeled ? "  (modeled)" : "");
	for (i = 0; i < nt; i++)
		printf("%-36s %8.3f %s%7.2f %6s\n", t[i].name, t[i].value,
		       t[i].le ? "<=" : ">=", t[i].target,
		       !t[i].known ? "n/a" : target_pass(&t[i]) ? "PASS" :
								   "FAIL");
}

/*
 * The JSON object (umbench(1)), on one line through tools/common's writer;
 * figures with four decimals.
 */
static void json_num(struct ut_json *j, const char *key, double v)
{
	ut_json_fixed(j, key, v, 4);
}

/* null when the figure was not measured */
static void json_opt(struct ut_json *j, const char *key, int known, double v)
{
	if (known)
		json_num(j, key, v);
	else
		ut_json_null(j, key);
}

/* null when there was no error */
static void json_err(struct ut_json *j, const char *key, const char *err)
{
	ut_json_str(j, key, err[0] ? err : NULL);
}

/* 1 true, 0 false, -1 (not checked) null */
static void json_tri(struct ut_json *j, const char *key, int v)
{
	if (v < 0)
		ut_json_null(j, key);
	else
		ut_json_bool(j, key, v > 0);
}

/* {"id":...,"name":... opening a row of an array */
static void json_row(struct ut_json *j, const char *id, const char *name)
{
	ut_json_obj_begin(j, NULL);
	ut_json_str(j, "id", id);
	ut_json_str(j, "name", name);
}

static void json_head(struct ut_json *j, FILE *f)
{
	ut_json_init_line(j, f);
	ut_json_obj_begin(j, NULL);
	ut_json_str(j, "tool", "umbench");
	ut_json_str(j, "mode", "gpu");
}

static void json_skipped(FILE *f, const char *why)
{
	struct ut_json j;

	json_head(&j, f);
	ut_json_bool(&j, "skipped", true);
	ut_json_str(&j, "reason", why);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
}

static void json_results(struct ut_json *j, const struct bg_results *r)
{
	int i;

	ut_json_obj_begin(j, "pinned_alloc");
	ut_json_u64(j, "bytes", r->pin_bytes);
	json_num(j, "cudaHostAlloc_ms", r->pin_alloc_ms);
	json_num(j, "touch_register_ms", r->pin_register_ms);
	json_err(j, "error", r->pin_err);
	ut_json_obj_end(j);
	ut_json_obj_begin(j, "ceilings");
	json_num(j, "h2d_gbps", r->h2d);
	json_num(j, "d2h_gbps", r->d2h);
	json_num(j, "both_gbps", r->both);
	json_err(j, "error", r->ceil_err);
	ut_json_obj_end(j);
	json_err(j, "libum_error", r->ctx_err);
	ut_json_arr_begin(j, "migrations");
	for (i = 0; i < r->nmig; i++) {
		const struct bg_mig *m = &r->mig[i];

		json_row(j, m->id, m->name);
		json_num(j, "evict_gbps", m->evict_gbps);
		json_num(j, "evict_ratio", ratio(m->evict_gbps, r->d2h));
		json_num(j, "restore_gbps", m->restore_gbps);
		json_num(j, "restore_ratio", ratio(m->restore_gbps, r->h2d));
		json_num(j, "device_timed_evict_gbps", m->dev_evict_gbps);
		json_num(j, "device_timed_restore_gbps", m->dev_restore_gbps);
		json_opt(j, "gpu_freed_gib", m->freed_known, m->freed_gib);
		json_tri(j, "intact", m->intact);
		json_err(j, "error", m->err);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
	ut_json_obj_begin(j, "overlap");
	json_num(j, "gbps", r->ovl_gbps);
	json_num(j, "ratio", ratio(r->ovl_gbps, r->both));
	json_tri(j, "intact", r->ovl_intact);
	json_err(j, "error", r->ovl_err);
	ut_json_obj_end(j);
	ut_json_i64(j, "repinned_reps", r->repinned);
}

static void json_adam(struct ut_json *j, const struct bg_results *r)
{
	int i;

	ut_json_obj_begin(j, "adam");
	ut_json_u64(j, "params", r->adam_params);
	ut_json_u64(j, "state_bytes", r->state_bytes);
	ut_json_i64(j, "pieces", r->pieces);
	ut_json_u64(j, "piece_budget_bytes", r->piece_budget);
	json_num(j, "floor_ms", r->floor_ms);
	json_num(j, "floor_overlap_ms", r->floor_ovl_ms);
	ut_json_arr_begin(j, "rows");
	for (i = 0; i < r->nadam; i++) {
		const struct bg_adam *a = &r->adam[i];

		json_row(j, a->id, a->name);
		json_opt(j, "in_ms", a->parts, a->in_ms);
		json_opt(j, "step_ms", a->parts || a->step_ms > 0, a->step_ms);
		json_opt(j, "out_ms", a->parts, a->out_ms);
		json_num(j, "total_ms", a->total_ms);
		json_num(j, "floor_ratio", ratio(a->total_ms, r->floor_ms));
		json_num(j, "overlapped_floor_ratio",
			 ratio(a->total_ms, r->floor_ovl_ms));
		json_tri(j, "identical", a->identical);
		ut_json_u64(j, "pmv_differing", a->ndiff);
		json_num(j, "max_abs_diff", a->max_diff);
		json_opt(j, "gpu_freed_gib", a->freed_known, a->freed_gib);
		json_err(j, "note", a->note);
		json_err(j, "error", a->err);
		ut_json_obj_end(j);
	}
	ut_json_arr_end(j);
	ut_json_obj_end(j);
}

static void print_json(FILE *f, const struct bg_opts *o,
		       const struct bg_results *r, const struct bg_target *t,
		       int nt, int ok)
{
	struct ut_json j;
	int i;

	json_head(&j, f);
	ut_json_bool(&j, "modeled", r->modeled);
	ut_json_str(&j, "device", r->device);
	ut_json_u64(&j, "device_total_bytes", r->dev_total);
	ut_json_i64(&j, "driver_version", r->driver_version);
	ut_json_i64(&j, "runtime_version", r->runtime_version);
	ut_json_u64(&j, "bytes", o->bytes);
	ut_json_i64(&j, "reps", o->reps);
	json_results(&j, r);
	json_adam(&j, r);
	ut_json_arr_begin(&j, "targets");
	for (i = 0; i < nt; i++) {
		ut_json_obj_begin(&j, NULL);
		ut_json_str(&j, "name", t[i].name);
		json_num(&j, "value", t[i].value);
		ut_json_str(&j, "op", t[i].le ? "<=" : ">=");
		json_num(&j, "target", t[i].target);
		json_tri(&j, "pass", t[i].known ? target_pass(&t[i]) : -1);
		ut_json_obj_end(&j);
	}
	ut_json_arr_end(&j);
	ut_json_bool(&j, "pass", ok);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
}

static int all_ok(const struct bg_results *r, const struct bg_target *t,
		  int nt)
{
	int i, ok = !r->ceil_err[0] && !r->ctx_err[0] && !r->ovl_err[0] &&
		    r->ovl_intact == 1;

	for (i = 0; i < r->nmig; i++)
		ok &= !r->mig[i].err[0] && r->mig[i].intact == 1;
	for (i = 0; i < r->nadam; i++)
		ok &= !r->adam[i].err[0] && r->adam[i].identical == 1;
	for (i = 0; i < nt; i++)
		ok &= target_pass(&t[i]);
	return ok;
}

/* ---- main -------------------------------------------------------------- */

static int make_ctx(const struct bg_opts *o, struct um_context **ctx)
{
	uint64_t state = 2 * o->params * sizeof(float);
	struct um_config cfg;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_CUDA;
	/* Host copies of the largest test, pinned before any timing. */
	cfg.pool_size = (o->bytes > state ? o->bytes : state) + 64 * BG_MiB;
	cfg.log = bg_um_log;
	cfg.log_level = UM_LOG_WARN;
	return um_context_create(&cfg, ctx);
}

extern "C" int umbench_gpu_main(int argc, char **argv)
{
	struct bg_target targets[8];
	struct um_context *ctx = NULL;
	cudaStream_t s1 = NULL, s2 = NULL;
	struct bg_results *r;
	struct cudaDeviceProp prop;
	struct bg_opts o;
	size_t f = 0, tot = 0;
	int n = 0, nt, ok, ret;
	cudaError_t e;

	ret = parse_opts(argc, argv, &o);
	if (ret)
		return ret > 0 ? 0 : 2;
	e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n <= 0) {
		const char *why = e != cudaSuccess ? cudaGetErrorString(e) :
						     "no CUDA device";

		if (o.json)
			json_skipped(stdout, why);
		else
			printf("umbench --gpu: skipped: no usable GPU (%s)\n",
			       why);
		if (o.json_file) {
			FILE *jf = fopen(o.json_file, "w");

			if (jf) {
				json_skipped(jf, why);
				fclose(jf);
			}
		}
		return 4;
	}
	r = (struct bg_results *)calloc(1, sizeof(*r));
	if (!r) {
		fprintf(stderr, "umbench --gpu: out of memory\n");
		return 1;
	}
	r->modeled = bg_modeled();
	if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
		snprintf(r->device, sizeof(r->device), "%s", prop.name);
		r->dev_total = prop.totalGlobalMem;
	}
	cudaDriverGetVersion(&r->driver_version);
	cudaRuntimeGetVersion(&r->runtime_version);
	(void)cudaGetLastError();
	if (cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaMemGetInfo(&f, &tot) != cudaSuccess) {
		fprintf(stderr, "umbench --gpu: cannot use the GPU: %s\n",
			cudaGetErrorString(cudaGetLastError()));
		free(r);
		return 1;
	}
	/* Managed and device buffers of the largest test, at once. */
	if ((double)f < 4.5 * (double)o.bytes ||
	    (double)f < 10.0 * (double)(o.params * sizeof(float))) {
		fprintf(stderr, "umbench --gpu: %zu MiB free on the GPU is too little for --gpu-bytes %llu MiB and --adam-params %lluM\n",
			f >> 20, (unsigned long long)(o.bytes >> 20),
			(unsigned long long)(o.params >> 20));
		free(r);
		return 2;
	}

	bench_pinned_alloc(&o, r, s1);
	bench_ceilings(&o, r, s1, s2);
	bench_uvm(&o, r, s1);
	bg_progress(&o, "libum context (pins the pool first)");
	ret = make_ctx(&o, &ctx);
	if (ret) {
		snprintf(r->ctx_err, BG_ERR_LEN,
			 "um_context_create: %s", strerror(-ret));
	} else if (um_context_backend(ctx) != UM_BACKEND_CUDA) {
		snprintf(r->ctx_err, BG_ERR_LEN,
			 "libum did not pick the cuda backend");
	} else {
		bench_libum(&o, r, ctx, s1, "libum_managed_prefetch",
			    "libum MANAGED (prefetch)", UM_BACKING_MANAGED, 0);
		bench_libum(&o, r, ctx, s1, "libum_managed_discard",
			    "libum MANAGED (copy+discard)", UM_BACKING_MANAGED,
			    UM_REGION_DISCARD_EVICT);
		bench_libum(&o, r, ctx, s1, "libum_tiered", "libum TIERED",
			    UM_BACKING_TIERED, 0);
		bench_overlap(&o, r, ctx, s1);
		if (o.params)
			bg_adam_table(&o, r, ctx, s1);
	}
	nt = collect_targets(r, targets);
	ok = all_ok(r, targets, nt);
	if (o.json)
		print_json(stdout, &o, r, targets, nt, ok);
	else
		print_text(&o, r, targets, nt);
	fflush(stdout);
	if (o.json_file) {
		FILE *jf = fopen(o.json_file, "w");

		if (jf) {
			print_json(jf, &o, r, targets, nt, ok);
			if (fclose(jf))
				jf = NULL;
		}
		if (!jf) {
			fprintf(stderr, "umbench --gpu: %s: %s\n", o.json_file,
				strerror(errno));
			ok = 0;
		}
	}
	if (ctx)
		um_context_destroy(ctx);
	cudaStreamDestroy(s1);
	cudaStreamDestroy(s2);
	free(r);
	return ok ? 0 : 1;
}
