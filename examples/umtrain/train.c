// SPDX-License-Identifier: MIT
/*
 * train.c - umtrain's training loop on libum.
 *
 * The model is an MLP (ReLU between layers) regressing onto a fixed random
 * teacher network (tanh hidden layer) from inputs drawn from the seed. Each
 * linear layer owns its weights (a PARAM region) and their Adam first and
 * second moments (OPTIMIZER_STATE), split in shards so the policy has many
 * victims to choose among. One GRAD region holds the weights' gradient of
 * the layer being updated, one ACTIVATION region the batch, every layer's
 * output and the deltas. The biases are packed, with their gradient and
 * moments, in one PARAM region: a region takes at least a 2 MiB device
 * granule, and a bias row kept with its weights would make a 1024 x 1024
 * layer take three granules instead of two.
 *
 * A step acquires on the device only what the next piece of math touches and
 * releases it right after: forward acquires a layer's parameters; backward
 * its parameters, computes its gradient, then updates it with Adam shard by
 * shard while the parameters are still resident. Under a small budget libum
 * evicts whatever is released (optimizer state first) to make room, so the
 * device never holds more than one layer's working set, and the result must
 * not change by a single bit. The order of a step's acquires is fixed (the
 * plan, make_plan()): a stager thread acquires the plan's next regions
 * ahead (top_up()) so their copies overlap the math of the current one. The
 * math runs on the CPU on the pointers libum hands out (on the sim backend
 * device memory is host memory).
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "kernels.h"
#include "stager.h"
#include "ut.h"
#include "train.h"
#include "workers.h"

#define ALIGN_ELEMS	16	/* thread slices: whole 64-byte lines */
#define BETA1		0.9f
#define BETA2		0.999f
#define EPSILON		1e-8f
#define AHEAD_MAX	8	/* regions acquired ahead of their use */
#define LOOKAHEAD	(2 * AHEAD_MAX)	/* uses of the plan looked at */
#define HOLD_MAX	8	/* regions the step holds at once */

/* Random streams, so every use of the seed draws independent numbers. */
enum { STREAM_DATA = 1, STREAM_TEACHER = 2, STREAM_INIT = 16 };

struct layer {
	size_t in, out, n;	/* n = in * out weights */
	um_region_t w;
	float *wp;
	float *bp, *bg, *bm, *bv;	/* biases, gradient, moments: in pack */
	unsigned int nshards;
	size_t shard;		/* elements per moment shard */
	um_region_t *m, *v;
	float **mp, **vp;
};

struct net {
	const struct train_cfg *cfg;
	struct um_context *ctx;
	struct workers *team;
	unsigned int nl;
	struct layer *ly;
	uint32_t backing;	/* enum um_backing for every region */
	uint64_t budget;	/* device bytes, as set */
	uint64_t held;		/* device bytes acquired, prefetches included */
	um_region_t ahead[AHEAD_MAX];	/* posted to the stager, not taken */
	uint64_t ahead_bytes[AHEAD_MAX];
	unsigned int nahead;
	um_region_t holding[HOLD_MAX];	/* acquired by get(), not put() */
	unsigned int nholding;
	struct stager *stager;	/* NULL: nothing is acquired ahead */
	/* The regions one step gets, in order; the run's i-th get is
	 * plan[i % plan_len]. Followed while cursor < plan_end. */
	um_region_t *plan;
	uint64_t *plan_bytes;
	size_t plan_len;
	uint64_t cursor, plan_end;
	um_region_t g;		/* the gradient of the layer being updated */
	float *gp;
	um_region_t act;
	um_region_t pack;	/* every layer's bp, bg, bm, bv */
	float **a;		/* a[0] the batch, a[l + 1] layer l's output */
	float *y, *d[2];	/* targets; deltas, ping-pong */
	float *teacher;		/* [in + 1][T] then [T + 1][out], plain memory */
	char *err;
	size_t errlen;
	um_log_fn log_fn;
	void *log_arg;
	char last_log[256];
	struct um_stats st_open;	/* when the steps began */
};

/* ---- errors and libum's log ------------------------------------------- */

static void on_log(void *arg, int level, const char *msg)
{
	struct net *n = arg;

	snprintf(n->last_log, sizeof(n->last_log), "%s", msg);
	if (n->log_fn && level <= UM_LOG_WARN)
		n->log_fn(n->log_arg, level, msg);
}

static int fail(struct net *n, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct net *n, int rc, const char *fmt, ...)
{
	size_t len;
	va_list ap;

	if (!n->err || !n->errlen || n->err[0])
		return rc;	/* keep the first error */
	va_start(ap, fmt);
	vsnprintf(n->err, n->errlen, fmt, ap);
	va_end(ap);
	len = strlen(n->err);
	snprintf(n->err + len, n->errlen - len, ": %s%s%s", strerror(-rc),
		 n->last_log[0] ? " (libum: " : "", n->last_log);
	len = strlen(n->err);
	if (n->last_log[0] && len + 1 < n->errlen)
		strcat(n->err, ")");
	return rc;
}

static const char *rname(struct net *n, um_region_t r, char *buf,
			 size_t len)
{
	struct um_region_info info = { .size = sizeof(info) };

	if (um_region_info(n->ctx, r, &info))
		snprintf(buf, len, "region %#llx", (unsigned long long)r);
	else
		snprintf(buf, len, "region '%s'", info.name);
	return buf;
}

/* Device bytes a region of b bytes takes: libum maps device memory in
 * granules (2 MiB on sim and with CUDA's VMM). */
static uint64_t on_device(uint64_t b)
{
	return (b + TRAIN_GRANULE - 1) / TRAIN_GRANULE * TRAIN_GRANULE;
}

static int acquire_failed(struct net *n, um_region_t r, int rc)
{
	char name[96];

	return fail(n, rc, "acquiring %s on the device",
		    rname(n, r, name, sizeof(name)));
}

static bool in_list(const um_region_t *v, unsigned int cnt, um_region_t r,
		    unsigned int *at)
{
	unsigned int i;

	for (i = 0; i < cnt && v[i] != r; i++)
		;
	if (at)
		*at = i;
	return i < cnt;
}

/* Takes r off the list of regions posted ahead; true if it was there (its
 * bytes stay counted in held). */
static bool unahead(struct net *n, um_region_t r)
{
	unsigned int i;

	if (!in_list(n->ahead, n->nahead, r, &i))
		return false;
	n->nahead--;
	n->ahead[i] = n->ahead[n->nahead];
	n->ahead_bytes[i] = n->ahead_bytes[n->nahead];
	return true;
}

/*
 * Post the plan's next uses to the stager, in order, while they fit the
 * budget beside what is held and posted: their evictions and restores run
 * while the caller computes. Stops at the first that does not fit, so the
 * next use always finds room once what precedes it is put back, and at a
 * region held now: the room its put() frees must not be promised twice.
 */
static int top_up(struct net *n)
{
	uint64_t i, end = n->cursor + LOOKAHEAD, need;
	um_region_t r;
	int rc;

	if (!n->stager)
		return 0;
	if (end > n->plan_end)
		end = n->plan_end;
	for (i = n->cursor; i < end && n->nahead < AHEAD_MAX; i++) {
		r = n->plan[i % n->plan_len];
		need = on_device(n->plan_bytes[i % n->plan_len]);
		if (in_list(n->ahead, n->nahead, r, NULL))
			continue;
		if (in_list(n->holding, n->nholding, r, NULL) ||
		    n->held + need > n->budget)
			break;
		rc = stager_post(n->stager, r);
		if (rc)
			return fail(n, rc, "acquiring ahead");
		n->ahead[n->nahead] = r;
		n->ahead_bytes[n->nahead++] = need;
		n->held += need;
	}
	return 0;
}

/* r, posted ahead, is needed now: take it from the stager (1), or learn
 * that the stager had not started it (0). */
static int take_ahead(struct net *n, um_region_t r)
{
	int rc = top_up(n);

	if (rc)
		return rc;
	rc = stager_take(n->stager, r);
	return rc < 0 ? acquire_failed(n, r, rc) : rc;
}

/* Make r (of bytes) resident on the device and wait for its bytes. */
static int get(struct net *n, um_region_t r, uint64_t bytes)
{
	bool ahead = unahead(n, r);
	int rc = 0;

	if (n->nholding == HOLD_MAX)
		return fail(n, -EOVERFLOW, "holding %u regions", HOLD_MAX);
	if (n->cursor < n->plan_end && n->plan[n->cursor % n->plan_len] == r)
		n->cursor++;
	/* held from here: top_up() must not post r again */
	n->holding[n->nholding++] = r;
	if (ahead)
		rc = take_ahead(n, r);
	if (rc < 0)
		return rc;
	if (!rc) {
		rc = um_acquire(n->ctx, r, UM_TIER_GPU(0), NULL);
		if (rc)
			return acquire_failed(n, r, rc);
		if (!ahead)
			n->held += on_device(bytes);
	}
	rc = um_wait(n->ctx, r);
	if (rc)
		return acquire_failed(n, r, rc);
	return ahead ? 0 : top_up(n);
}

static int put(struct net *n, um_region_t r, uint64_t bytes)
{
	char name[96];
	unsigned int i;
	int rc = um_release(n->ctx, r);

	if (rc)
		return fail(n, rc, "releasing %s",
			    rname(n, r, name, sizeof(name)));
	n->held -= on_device(bytes);
	if (in_list(n->holding, n->nholding, r, &i))
		n->holding[i] = n->holding[--n->nholding];
	return top_up(n);
}

/* ---- sizes -------------------------------------------------------------- */

static size_t layer_in(const struct train_cfg *c, unsigned int l)
{
	return l == 0 ? TRAIN_IN_DIM : c->hidden;
}

static size_t layer_out(const struct train_cfg *c, unsigned int l)
{
	return l + 1 == c->layers ? TRAIN_OUT_DIM : c->hidden;
}

static size_t shard_elems(const struct train_cfg *c)
{
	size_t e = c->shard_bytes / sizeof(float) / ALIGN_ELEMS * ALIGN_ELEMS;

	return e ? e : ALIGN_ELEMS;
}

static size_t max_width(const struct train_cfg *c)
{
	size_t w = c->hidden;

	if (w < TRAIN_IN_DIM)
		w = TRAIN_IN_DIM;
	return w < TRAIN_OUT_DIM ? TRAIN_OUT_DIM : w;
}

/* Biases of the whole model. */
static size_t biases(const struct train_cfg *c)
{
	size_t e = 0;
	unsigned int l;

	for (l = 0; l < c->layers; l++)
		e += layer_out(c, l);
	return e;
}

/* The pack: biases, their gradient and two moments. */
static uint64_t pack_bytes(const struct train_cfg *c)
{
	return 4 * biases(c) * sizeof(float);
}

/* Floats in the activation region: batch, outputs, targets, 2 deltas. */
static size_t act_elems(const struct train_cfg *c)
{
	size_t e = TRAIN_IN_DIM;
	unsigned int l;

	for (l = 0; l < c->layers; l++)
		e += layer_out(c, l);
	e += TRAIN_OUT_DIM + 2 * max_width(c);
	return e * c->batch;
}

/* Weights of the largest layer: the size of the one gradient region. */
static size_t largest_layer(const struct train_cfg *c)
{
	size_t most = 0, n;
	unsigned int l;

	for (l = 0; l < c->layers; l++) {
		n = layer_in(c, l) * layer_out(c, l);
		if (n > most)
			most = n;
	}
	return most;
}

void train_sizes(const struct train_cfg *c, struct train_sizes *sz)
{
	size_t se = shard_elems(c);
	unsigned int l;

	memset(sz, 0, sizeof(*sz));
	sz->act_bytes = act_elems(c) * sizeof(float);
	sz->grad_bytes = (largest_layer(c) + biases(c)) * sizeof(float);
	sz->regions = 3;
	for (l = 0; l < c->layers; l++) {
		size_t n = layer_in(c, l) * layer_out(c, l);
		size_t shards = (n + se - 1) / se;
		uint64_t ws = on_device(n * sizeof(float)) +
			      2 * on_device((n < se ? n : se) * sizeof(float));

		sz->params += n + layer_out(c, l);
		sz->regions += 1 + 2 * shards;
		sz->state_regions += 2 * shards;
		if (ws > sz->working_set)
			sz->working_set = ws;
	}
	sz->param_bytes = sz->params * sizeof(float);
	sz->state_bytes = 2 * sz->param_bytes;
	sz->working_set += on_device(largest_layer(c) * sizeof(float)) +
			   on_device(sz->act_bytes) + on_device(pack_bytes(c));
}

/* ---- regions ------------------------------------------------------------ */

static int region(struct net *n, int kind, size_t bytes, const char *name,
		  um_region_t *r, float **p)
{
	struct um_region_desc d = {
		.size = sizeof(d),
		.kind = (uint32_t)kind,
		.backing = n->backing,
		.bytes = bytes,
		.name = name,
	};
	void *ptr;
	int rc;

	rc = um_alloc(n->ctx, &d, r);
	if (rc)
		return fail(n, rc, "allocating region '%s' (%zu bytes)", name,
			    bytes);
	rc = um_ptr(n->ctx, *r, &ptr);
	if (rc)
		return fail(n, rc, "um_ptr of region '%s'", name);
	*p = ptr;
	return 0;
}

static int layer_regions(struct net *n, unsigned int l)
{
	struct layer *ly = &n->ly[l];
	char name[64];
	unsigned int k;
	int rc;

	ly->in = layer_in(n->cfg, l);
	ly->out = layer_out(n->cfg, l);
	ly->n = ly->in * ly->out;
	ly->shard = shard_elems(n->cfg);
	ly->nshards = (unsigned int)((ly->n + ly->shard - 1) / ly->shard);
	ly->m = calloc(ly->nshards, sizeof(*ly->m));
	ly->v = calloc(ly->nshards, sizeof(*ly->v));
	ly->mp = calloc(ly->nshards, sizeof(*ly->mp));
	ly->vp = calloc(ly->nshards, sizeof(*ly->vp));
	if (!ly->m || !ly->v || !ly->mp || !ly->vp)
		return fail(n, -ENOMEM, "layer %u", l);
	snprintf(name, sizeof(name), "L%u.param", l);
	rc = region(n, UM_KIND_PARAM, ly->n * sizeof(float), name, &ly->w,
		    &ly->wp);
	if (rc)
		return rc;
	for (k = 0; k < ly->nshards; k++) {
		size_t e = ly->n - k * ly->shard;
		size_t bytes = (e < ly->shard ? e : ly->shard) * sizeof(float);

		snprintf(name, sizeof(name), "L%u.adam_m.%u", l, k);
		rc = region(n, UM_KIND_OPTIMIZER_STATE, bytes, name, &ly->m[k],
			    &ly->mp[k]);
		if (rc)
			break;
		snprintf(name, sizeof(name), "L%u.adam_v.%u", l, k);
		rc = region(n, UM_KIND_OPTIMIZER_STATE, bytes, name, &ly->v[k],
			    &ly->vp[k]);
	}
	return rc;
}

/* Frees r, releasing it first if a failed step left it acquired. */
static void drop(struct net *n, um_region_t r)
{
	struct um_region_info info = { .size = sizeof(info) };

	if (!r)
		return;
	if (!um_region_info(n->ctx, r, &info))
		while (info.acquired-- && !um_release(n->ctx, r))
			;
	um_free(n->ctx, r);
}

static void free_regions(struct net *n)
{
	unsigned int l, k;

	for (l = 0; n->ly && l < n->nl; l++) {
		struct layer *ly = &n->ly[l];

		for (k = 0; k < ly->nshards; k++) {
			if (ly->m)
				drop(n, ly->m[k]);
			if (ly->v)
				drop(n, ly->v[k]);
		}
		drop(n, ly->w);
		free(ly->m);
		free(ly->v);
		free(ly->mp);
		free(ly->vp);
	}
	drop(n, n->g);
	drop(n, n->act);
	drop(n, n->pack);
	free(n->ly);
	free(n->a);
	n->ly = NULL;
	n->a = NULL;
	n->g = 0;
	n->act = 0;
	n->pack = 0;
}

static int pack_regions(struct net *n)
{
	size_t nb = biases(n->cfg);
	float *p;
	unsigned int l;
	int rc = region(n, UM_KIND_PARAM, pack_bytes(n->cfg), "biases",
			&n->pack, &p);

	for (l = 0; !rc && l < n->nl; l++) {
		struct layer *ly = &n->ly[l];

		ly->bp = p;
		ly->bg = p + nb;
		ly->bm = p + 2 * nb;
		ly->bv = p + 3 * nb;
		p += ly->out;
	}
	return rc;
}

static int make_regions(struct net *n)
{
	const struct train_cfg *c = n->cfg;
	float *p;
	unsigned int l;
	int rc;

	n->nl = c->layers;
	n->ly = calloc(n->nl, sizeof(*n->ly));
	n->a = calloc(n->nl + 1, sizeof(*n->a));
	if (!n->ly || !n->a)
		return fail(n, -ENOMEM, "model");
	for (l = 0; l < n->nl; l++) {
		rc = layer_regions(n, l);
		if (rc)
			return rc;
	}
	rc = region(n, UM_KIND_GRAD, largest_layer(c) * sizeof(float),
		    "gradient", &n->g, &n->gp);
	if (rc)
		return rc;
	rc = region(n, UM_KIND_ACTIVATION, act_elems(c) * sizeof(float),
		    "activations", &n->act, &p);
	if (rc)
		return rc;
	n->a[0] = p;
	p += (size_t)c->batch * TRAIN_IN_DIM;
	for (l = 0; l < n->nl; l++) {
		n->a[l + 1] = p;
		p += (size_t)c->batch * n->ly[l].out;
	}
	n->y = p;
	p += (size_t)c->batch * TRAIN_OUT_DIM;
	n->d[0] = p;
	n->d[1] = p + (size_t)c->batch * max_width(c);
	return pack_regions(n);
}

/* ---- initial values ----------------------------------------------------- */

/* Bytes of moment shard k of ly (the last one may be short). */
static size_t shard_bytes(const struct layer *ly, unsigned int k)
{
	size_t e = ly->n - k * ly->shard;

	return (e < ly->shard ? e : ly->shard) * sizeof(float);
}

/* Bytes of ly's weight region (the biases are in the pack). */
static size_t param_bytes(const struct layer *ly)
{
	return ly->n * sizeof(float);
}

/* He-uniform weights (variance 2/in) before a ReLU, 1/in for the output. */
static int init_layer(struct net *n, unsigned int l)
{
	struct layer *ly = &n->ly[l];
	float scale = sqrtf((l + 1 < n->nl ? 6.0f : 3.0f) / (float)ly->in);
	size_t i;
	unsigned int k;
	int rc;

	rc = get(n, ly->w, param_bytes(ly));
	if (rc)
		return rc;
	for (i = 0; i < ly->n; i++)
		ly->wp[i] = scale * k_uniform(n->cfg->seed, STREAM_INIT + l, i);
	rc = put(n, ly->w, param_bytes(ly));
	for (k = 0; !rc && k < ly->nshards; k++) {
		rc = get(n, ly->m[k], shard_bytes(ly, k));
		if (rc)
			break;
		memset(ly->mp[k], 0, shard_bytes(ly, k));
		rc = put(n, ly->m[k], shard_bytes(ly, k));
		if (!rc)
			rc = get(n, ly->v[k], shard_bytes(ly, k));
		if (rc)
			break;
		memset(ly->vp[k], 0, shard_bytes(ly, k));
		rc = put(n, ly->v[k], shard_bytes(ly, k));
	}
	return rc;
}

static int make_teacher(struct net *n)
{
	size_t a = (TRAIN_IN_DIM + 1) * TRAIN_TEACHER;
	size_t b = (TRAIN_TEACHER + 1) * TRAIN_OUT_DIM, i;

	n->teacher = malloc((a + b) * sizeof(float));
	if (!n->teacher)
		return fail(n, -ENOMEM, "teacher network");
	/* Hidden pre-activations of variance ~1, outputs of variance ~1. */
	for (i = 0; i < a; i++)
		n->teacher[i] = 0.375f * k_uniform(n->cfg->seed,
						   STREAM_TEACHER, i);
	for (i = 0; i < b; i++)
		n->teacher[a + i] = 0.34f * k_uniform(n->cfg->seed,
						      STREAM_TEACHER, a + i);
	return 0;
}

/* The batch of step s and its targets, into the activation region. */
static void make_batch(struct net *n, unsigned int s)
{
	const float *ta = n->teacher;
	const float *tb = ta + (TRAIN_IN_DIM + 1) * TRAIN_TEACHER;
	size_t bsz = n->cfg->batch, b, i, j;
	float h[TRAIN_TEACHER];

	for (b = 0; b < bsz; b++) {
		float *x = n->a[0] + b * TRAIN_IN_DIM, *y = n->y + b *
			TRAIN_OUT_DIM;

		for (i = 0; i < TRAIN_IN_DIM; i++)
			x[i] = k_uniform(n->cfg->seed, STREAM_DATA,
					 ((uint64_t)s * bsz + b) *
					 TRAIN_IN_DIM + i);
		for (j = 0; j < TRAIN_TEACHER; j++) {
			float z = ta[TRAIN_IN_DIM * TRAIN_TEACHER + j];

			for (i = 0; i < TRAIN_IN_DIM; i++)
				z += x[i] * ta[i * TRAIN_TEACHER + j];
			h[j] = tanhf(z);
		}
		for (j = 0; j < TRAIN_OUT_DIM; j++) {
			float z = tb[TRAIN_TEACHER * TRAIN_OUT_DIM + j];

			for (i = 0; i < TRAIN_TEACHER; i++)
				z += h[i] * tb[i * TRAIN_OUT_DIM + j];
			y[j] = z;
		}
	}
}

/* ---- parallel jobs ------------------------------------------------------ */

enum job_type { JOB_FORWARD, JOB_GRAD_W, JOB_GRAD_X, JOB_ADAM };

struct job {
	enum job_type type;
	const struct layer *ly;
	size_t batch;
	const float *x, *dy;
	float *y, *dx;
	int relu;
	float *g;	/* gradient: written by GRAD_W, read by ADAM */
	/* Adam */
	size_t count;
	float *w, *m, *v;
	const struct adam_hp *hp;
};

static void run_job(void *arg, unsigned int id, unsigned int nt)
{
	const struct job *j = arg;
	const struct layer *ly = j->ly;
	size_t lo, hi;

	switch (j->type) {
	case JOB_FORWARD:
		slice(ly->out, ALIGN_ELEMS, id, nt, &lo, &hi);
		k_forward(j->x, ly->wp, ly->bp, j->y, j->batch, ly->in,
			  ly->out, j->relu, lo, hi);
		break;
	case JOB_GRAD_W:
		slice(ly->in + 1, 1, id, nt, &lo, &hi);
		k_grad_w(j->x, j->dy, j->g, ly->bg, j->batch, ly->in,
			 ly->out, lo, hi);
		break;
	case JOB_GRAD_X:
		slice(ly->in, ALIGN_ELEMS, id, nt, &lo, &hi);
		k_grad_x(j->dy, ly->wp, j->x, j->dx, j->batch, ly->in, ly->out,
			 lo, hi);
		break;
	case JOB_ADAM:
		slice(j->count, ALIGN_ELEMS, id, nt, &lo, &hi);
		k_adam(j->w, j->g, j->m, j->v, j->hp, lo, hi);
		break;
	}
}

/* ---- one step ----------------------------------------------------------- */

static int forward(struct net *n)
{
	struct job j = { .type = JOB_FORWARD, .batch = n->cfg->batch };
	unsigned int l;
	int rc;

	for (l = 0; l < n->nl; l++) {
		struct layer *ly = &n->ly[l];

		rc = get(n, ly->w, param_bytes(ly));
		if (rc)
			return rc;
		j.ly = ly;
		j.x = n->a[l];
		j.y = n->a[l + 1];
		j.relu = l + 1 < n->nl;
		workers_run(n->team, run_job, &j);
		rc = put(n, ly->w, param_bytes(ly));
		if (rc)
			return rc;
	}
	return 0;
}

/* Mean squared error; its gradient goes to d[0]. Summed in a fixed order. */
static double loss_and_delta(struct net *n)
{
	size_t cnt = (size_t)n->cfg->batch * TRAIN_OUT_DIM, i;
	const float *out = n->a[n->nl];
	float scale = 2.0f / (float)cnt;
	double sum = 0.0;

	for (i = 0; i < cnt; i++) {
		float diff = out[i] - n->y[i];

		sum += (double)diff * diff;
		n->d[0][i] = scale * diff;
	}
	return sum / (double)cnt;
}

/*
 * Adam on layer ly, whose parameters and gradient are held, one moment
 * shard pair at a time, so the pairs that follow (and the next layer's
 * parameters) are staged while this one is computed.
 */
static int adam_layer(struct net *n, struct layer *ly,
		      const struct adam_hp *hp)
{
	struct job j = { .type = JOB_ADAM, .hp = hp };
	unsigned int k;
	int rc = 0;

	for (k = 0; !rc && k < ly->nshards; k++) {
		size_t off = k * ly->shard, b = shard_bytes(ly, k);

		rc = get(n, ly->m[k], b);
		if (!rc)
			rc = get(n, ly->v[k], b);
		if (rc)
			break;
		j.count = b / sizeof(float);
		j.w = ly->wp + off;
		j.g = n->gp + off;
		j.m = ly->mp[k];
		j.v = ly->vp[k];
		workers_run(n->team, run_job, &j);
		rc = put(n, ly->v[k], b);
		if (!rc)
			rc = put(n, ly->m[k], b);
	}
	if (rc)
		return rc;
	/* the biases: too few to be worth waking the team for */
	j.count = ly->out;
	j.w = ly->bp;
	j.g = ly->bg;
	j.m = ly->bm;
	j.v = ly->bv;
	run_job(&j, 0, 1);
	return 0;
}

/*
 * Between two updates only the forward and backward passes use a layer's
 * weights, and they only read them: under UM_ADVISE_READ_MOSTLY libum
 * keeps the host copy it restored them from, so their evictions copy
 * nothing back. Unset (which drops that copy) while Adam writes them.
 * TIERED regions only: a MANAGED region would pass the advice to the
 * driver, whose duplicated pages the CPU math (on a GPU machine) gains
 * nothing from.
 */
static int weights_read_mostly(struct net *n, struct layer *ly, bool on)
{
	char name[96];
	int rc;

	if (n->backing == UM_BACKING_MANAGED)
		return 0;
	rc = um_advise(n->ctx, ly->w, on ? UM_ADVISE_READ_MOSTLY :
					   UM_ADVISE_UNSET_READ_MOSTLY,
		       UM_TIER_HOST_ANY);
	return rc ? fail(n, rc, "advising %s",
			 rname(n, ly->w, name, sizeof(name))) : 0;
}

/*
 * Backward pass with each layer's Adam update fused in: once layer l's
 * gradient (and the delta for layer l - 1, which needs l's weights before
 * the update) are computed, l is updated while its parameters are still
 * resident, so they are restored once per pass and one gradient region
 * serves every layer. The arithmetic is the one of separate passes.
 */
static int backward_and_update(struct net *n, unsigned int t)
{
	struct adam_hp hp = {
		.lr = n->cfg->lr, .beta1 = BETA1, .beta2 = BETA2,
		.eps = EPSILON,
		.bc1 = (float)(1.0 - pow(BETA1, t)),
		.bc2 = (float)(1.0 - pow(BETA2, t)),
	};
	struct job j = { .batch = n->cfg->batch };
	unsigned int l = n->nl, cur = 0;
	int rc;

	while (l--) {
		struct layer *ly = &n->ly[l];

		rc = get(n, ly->w, param_bytes(ly));
		if (rc)
			return rc;
		j.ly = ly;
		j.x = n->a[l];
		j.dy = n->d[cur];
		j.g = n->gp;
		j.type = JOB_GRAD_W;
		workers_run(n->team, run_job, &j);
		if (l) {
			j.type = JOB_GRAD_X;
			j.dx = n->d[cur ^ 1];
			workers_run(n->team, run_job, &j);
			cur ^= 1;
		}
		rc = weights_read_mostly(n, ly, false);
		if (!rc)
			rc = adam_layer(n, ly, &hp);
		if (!rc)
			rc = weights_read_mostly(n, ly, true);
		if (!rc)
			rc = put(n, ly->w, param_bytes(ly));
		if (rc)
			return rc;
	}
	return 0;
}

/* The activations and the gradient are held from the first step to the
 * last (hold_step_buffers()). */
static int step(struct net *n, unsigned int s, double *loss)
{
	int rc;

	make_batch(n, s);
	rc = forward(n);
	if (!rc) {
		*loss = loss_and_delta(n);
		rc = backward_and_update(n, s + 1);
	}
	return rc;
}

/* ---- checksums and the run ---------------------------------------------- */

static int hash_region(struct net *n, XXH3_state_t *h, um_region_t r,
		       const void *p, size_t bytes)
{
	int rc = get(n, r, bytes);

	if (rc)
		return rc;
	XXH3_64bits_update(h, p, bytes);
	return put(n, r, bytes);
}

static int checksums(struct net *n, struct train_result *res)
{
	XXH3_state_t *hw = XXH3_createState(), *hs = XXH3_createState();
	unsigned int l, k;
	int rc = 0;

	if (!hw || !hs) {
		rc = fail(n, -ENOMEM, "checksum state");
		goto out;
	}
	XXH3_64bits_reset(hw);
	XXH3_64bits_reset(hs);
	for (l = 0; !rc && l < n->nl; l++) {
		struct layer *ly = &n->ly[l];

		size_t bb = ly->out * sizeof(float);

		/* the pack is held: its parts are hashed in place */
		rc = hash_region(n, hw, ly->w, ly->wp, param_bytes(ly));
		XXH3_64bits_update(hw, ly->bp, bb);
		for (k = 0; !rc && k < ly->nshards; k++) {
			size_t b = shard_bytes(ly, k);

			rc = hash_region(n, hs, ly->m[k], ly->mp[k], b);
			if (!rc)
				rc = hash_region(n, hs, ly->v[k], ly->vp[k], b);
		}
		XXH3_64bits_update(hs, ly->bm, bb);
		XXH3_64bits_update(hs, ly->bv, bb);
	}
	res->checksum = XXH3_64bits_digest(hw);
	res->state_checksum = XXH3_64bits_digest(hs);
out:
	XXH3_freeState(hw);
	XXH3_freeState(hs);
	return rc;
}

/* Device bytes that hold every region at once, with room to spare. */
static uint64_t everything(const struct train_cfg *c)
{
	struct train_sizes sz;

	train_sizes(c, &sz);
	/* 2 MiB of rounding per region covers any allocation granularity. */
	return sz.param_bytes + sz.grad_bytes + sz.state_bytes +
	       sz.act_bytes + sz.regions * (2ull << 20) + (64ull << 20);
}

static int open_context(struct net *n, struct train_result *res)
{
	const struct train_cfg *c = n->cfg;
	uint64_t all = everything(c);
	struct um_config uc;
	int rc;

	um_config_init(&uc);
	uc.backend = (uint32_t)c->backend;
	uc.device_budget = c->unlimited ? all : c->budget;
	/* The simulated card is big enough for everything: the budget, not
	 * the card, is what makes libum evict. */
	uc.sim_capacity = all > c->budget ? all : c->budget;
	uc.log = on_log;
	uc.log_arg = n;
	uc.log_level = UM_LOG_WARN;
	rc = um_context_create(&uc, &n->ctx);
	if (rc)
		return fail(n, rc, "creating the libum context");
	res->backend = um_context_backend(n->ctx);
	res->budget = uc.device_budget;
	n->budget = uc.device_budget;
	/* The math runs on the CPU: with a real GPU only managed memory is
	 * reachable from it (sim device memory is host memory anyway). */
	n->backing = res->backend == UM_BACKEND_CUDA ? UM_BACKING_MANAGED
						     : UM_BACKING_DEFAULT;
	return 0;
}

static void plan_add(struct net *n, um_region_t r, uint64_t bytes)
{
	n->plan[n->plan_len] = r;
	n->plan_bytes[n->plan_len++] = bytes;
}

/* The order in which step() gets the layers' regions. */
static int make_plan(struct net *n)
{
	size_t most = 2 * n->nl, l, k;

	for (l = 0; l < n->nl; l++)
		most += 2 * n->ly[l].nshards;
	n->plan = calloc(most, sizeof(*n->plan));
	n->plan_bytes = calloc(most, sizeof(*n->plan_bytes));
	if (!n->plan || !n->plan_bytes)
		return fail(n, -ENOMEM, "the plan of a step");
	for (l = 0; l < n->nl; l++)
		plan_add(n, n->ly[l].w, param_bytes(&n->ly[l]));
	for (l = n->nl; l--;) {
		const struct layer *ly = &n->ly[l];

		plan_add(n, ly->w, param_bytes(ly));
		for (k = 0; k < ly->nshards; k++) {
			plan_add(n, ly->m[k], shard_bytes(ly, k));
			plan_add(n, ly->v[k], shard_bytes(ly, k));
		}
	}
	return 0;
}

/*
 * Every step uses the activations, the gradient and the pack whole: they
 * stay held from the start to the last step (released between steps,
 * acquiring ahead could evict them, and their bytes would travel for
 * nothing). The pack starts as zero biases and moments.
 */
static int hold_whole_buffers(struct net *n)
{
	int rc = get(n, n->act, act_elems(n->cfg) * sizeof(float));

	if (!rc)
		rc = get(n, n->g, largest_layer(n->cfg) * sizeof(float));
	if (!rc)
		rc = get(n, n->pack, pack_bytes(n->cfg));
	if (!rc)
		memset(n->ly[0].bp, 0, pack_bytes(n->cfg));
	return rc;
}

static int put_whole_buffers(struct net *n)
{
	int rc = put(n, n->pack, pack_bytes(n->cfg));

	if (!rc)
		rc = put(n, n->g, largest_layer(n->cfg) * sizeof(float));
	return rc ? rc : put(n, n->act, act_elems(n->cfg) * sizeof(float));
}

/* libum's stats into st: 0 or the failure's -errno. */
static int read_stats(struct net *n, struct um_stats *st)
{
	int rc;

	st->size = sizeof(*st);
	rc = um_stats_get(n->ctx, st);
	return rc ? fail(n, rc, "um_stats_get") : 0;
}

/* Follow the plan from its start, acquiring ahead unless told not to. */
static int start_steps(struct net *n)
{
	int rc = make_plan(n);

	if (!rc && !n->cfg->no_prefetch) {
		rc = stager_start(&n->stager, n->ctx);
		if (rc)
			return fail(n, rc, "starting the stager thread");
	}
	if (rc)
		return rc;
	n->cursor = 0;
	n->plan_end = (uint64_t)n->cfg->steps * n->plan_len;
	rc = read_stats(n, &n->st_open);
	return rc ? rc : top_up(n);
}

/* CPUs this process may run on (its affinity: taskset, cpusets). */
static unsigned int usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n < 1 ? 1 : (unsigned int)n;
}

/*
 * Math threads for a run of c on backend (the one in use). On a GPU the
 * copies of a migration run on DMA engines beside the cores that compute;
 * on sim they are memcpy on libum's threads and the stager's, and on CPUs
 * that all compute every byte moved takes math time a card would not lose
 * (Documentation/performance.rst). So on sim one CPU is left to the copies
 * by default, as the card's copy engine.
 */
static unsigned int train_threads(const struct train_cfg *c, int backend)
{
	unsigned int n = usable_cpus();

	if (c->threads)
		return c->threads;
	if (n > 1 && backend == UM_BACKEND_SIM)
		n--;
	return n > 16 ? 16 : n;
}

/* Regions made and initialised: ready for step 0. */
static int net_open(struct net *n, struct train_result *res)
{
	const struct train_cfg *cfg = n->cfg;
	unsigned int l;
	int rc;

	if (cfg->layers < 2 || !cfg->hidden || !cfg->batch)
		return fail(n, -EINVAL, "model shape");
	rc = open_context(n, res);
	if (rc)
		return rc;
	res->threads = train_threads(cfg, res->backend);
	rc = workers_start(&n->team, res->threads);
	if (rc)
		return fail(n, rc, "starting %u threads", res->threads);
	rc = make_teacher(n);
	if (!rc)
		rc = make_regions(n);
	if (!rc)
		rc = hold_whole_buffers(n);
	for (l = 0; !rc && l < n->nl; l++)
		rc = init_layer(n, l);
	return rc ? rc : start_steps(n);
}

static int net_step(struct net *n, unsigned int s, struct train_result *res)
{
	double loss = 0.0;
	int rc = step(n, s, &loss);

	if (rc)
		return rc;
	if (s == 0)
		res->loss_first = loss;
	res->loss_last = loss;
	return 0;
}

/* After the last step: checksums and libum's stats into res. */
static int net_finish(struct net *n, struct train_result *res)
{
	int rc;

	n->plan_end = n->cursor;
	rc = um_wait_all(n->ctx);
	if (rc)
		return fail(n, rc, "um_wait_all");
	rc = read_stats(n, &res->st);
	if (rc)
		return rc;
	res->steps_migrated_bytes = res->st.migrated_bytes -
				    n->st_open.migrated_bytes;
	res->steps_migration_ns = res->st.migration_ns -
				  n->st_open.migration_ns;
	rc = checksums(n, res);
	if (!rc)
		rc = put_whole_buffers(n);
	return rc ? rc : read_stats(n, &res->st);
}

/* Frees everything net_open() made; returns rc, or the leak error. */
static int net_close(struct net *n, int rc)
{
	int leaks;

	stager_stop(n->stager);
	n->stager = NULL;
	free(n->plan);
	free(n->plan_bytes);
	n->plan = NULL;
	n->plan_bytes = NULL;
	if (n->ctx) {
		free_regions(n);
		leaks = um_context_destroy(n->ctx);
		n->ctx = NULL;
		if (!rc && leaks)
			rc = fail(n, leaks < 0 ? leaks : -EBUSY,
				  "libum reported %d leaked regions", leaks);
	}
	workers_stop(n->team);
	n->team = NULL;
	free(n->teacher);
	n->teacher = NULL;
	return rc;
}

static void net_init(struct net *n, const struct train_cfg *cfg,
		     struct train_result *res, um_log_fn log_fn,
		     void *log_arg, char *err, size_t errlen)
{
	memset(n, 0, sizeof(*n));
	n->cfg = cfg;
	n->err = err;
	n->errlen = errlen;
	n->log_fn = log_fn;
	n->log_arg = log_arg;
	memset(res, 0, sizeof(*res));
}

int train_run(const struct train_cfg *cfg, struct train_result *res,
	      train_step_fn step_fn, void *step_arg, um_log_fn log_fn,
	      void *log_arg, char *err, size_t errlen)
{
	struct um_stats st = { .size = sizeof(st) };
	struct net n;
	unsigned int s;
	uint64_t t0;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	net_init(&n, cfg, res, log_fn, log_arg, err, errlen);
	rc = net_open(&n, res);
	t0 = ut_now_ns();
	for (s = 0; !rc && s < cfg->steps; s++) {
		rc = net_step(&n, s, res);
		if (!rc && step_fn) {
			rc = read_stats(&n, &st);
			if (!rc)
				step_fn(step_arg, s + 1, res->loss_last, &st);
		}
	}
	res->seconds = (double)(ut_now_ns() - t0) * 1e-9;
	if (!rc)
		rc = net_finish(&n, res);
	return net_close(&n, rc);
}

/*
 * Finish the work a step left running in the background (the stager's
 * acquires ahead, the evictions and restores they started), so that none
 * of it runs while the other lockstep run's step is timed: the caller
 * charges the wait to this run's step.
 */
static int net_quiesce(struct net *n)
{
	int rc;

	stager_drain(n->stager);
	rc = um_wait_all(n->ctx);
	return rc ? fail(n, rc, "waiting for the step's migrations") : 0;
}

int train_lockstep(const struct train_cfg *cfg[2],
		   struct train_result res[2], uint64_t *step_ns[2],
		   um_log_fn log_fn, void *log_arg, char *err, size_t errlen)
{
	struct net n[2];
	unsigned int s, k, i;
	uint64_t t0;
	int rc = 0;

	if (err && errlen)
		err[0] = '\0';
	if (cfg[0]->steps != cfg[1]->steps)
		return -EINVAL;
	for (k = 0; k < 2; k++)
		net_init(&n[k], cfg[k], &res[k], log_fn, log_arg, err, errlen);
	for (k = 0; !rc && k < 2; k++)
		rc = net_open(&n[k], &res[k]);
	for (s = 0; !rc && s < cfg[0]->steps; s++) {
		for (k = 0; !rc && k < 2; k++) {
			i = k ^ (s & 1);	/* odd steps: the other first */
			t0 = ut_now_ns();
			rc = net_step(&n[i], s, &res[i]);
			if (!rc)
				rc = net_quiesce(&n[i]);
			step_ns[i][s] = ut_now_ns() - t0;
			res[i].seconds += (double)step_ns[i][s] * 1e-9;
		}
	}
	for (k = 0; !rc && k < 2; k++)
		rc = net_finish(&n[k], &res[k]);
	for (k = 0; k < 2; k++)
		rc = net_close(&n[k], rc);
	return rc;
}
