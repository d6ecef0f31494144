/* SPDX-License-Identifier: MIT */
/*
 * stress.c - libum under random load from many threads, through the public
 * API only, for a set time (tests/soak; built with ASan+UBSan and with TSan).
 *
 * One context on the sim backend with a spill directory. Slots hold regions
 * of random sizes; every thread loops over random operations: acquire a
 * region on gpu0, check its bytes against the XXH3-64 its last writer
 * recorded, rewrite them and record the new sum, release it; nested
 * acquires; acquires on the host tier (where a region's bytes are not
 * reachable through um_ptr: they are checked at the next touch); evictions to the host, a node or the spill; waits; budget
 * changes; sheds; stats; pool trims; pinned host allocations; a region
 * freed and allocated again with a new size. A slot's mutex (the test's
 * own) is held only by a thread that reads or writes the region's bytes;
 * evictions, sheds and budget changes hit the regions whoever holds them.
 *
 * Every call's result is checked: success, or one of the errors the API
 * documents for a race the test creates on purpose (a region acquired by
 * another thread, a handle freed meanwhile, no room under the budget). Any
 * other error, any checksum that differs (bytes lost), any region left at
 * context destroy fails the run. At the end every region is checked once
 * more. Output: TAP with one test and a "# Totals:" line, the figures as
 * TAP comments, and with --json one JSON object on the last line.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "um.h"

#define KiB 1024ull
#define MiB (1024ull * 1024)
#define MAX_ERRNO 140
#define SHOW_MAX 8

enum op {
	OP_TOUCH, OP_NESTED, OP_HOST_HOLD, OP_EVICT, OP_WAIT, OP_WAIT_ALL, OP_BUDGET,
	OP_SHED, OP_STATS, OP_TRIM, OP_HOST_ALLOC, OP_REALLOC, OP_COUNT
};

static const char *const op_name[OP_COUNT] = {
	"touch", "nested", "host_hold", "evict", "wait", "wait_all", "budget", "shed",
	"stats", "trim", "host_alloc", "realloc",
};

/* Out of 100: mostly bytes moving, the rest stirring the books. */
static const int op_weight[OP_COUNT] = {
	35, 5, 5, 15, 5, 2, 8, 5, 5, 4, 5, 6,
};

/*
 * Errors an operation may meet because of the races this test makes on
 * purpose; anything else is a failure. The handle a thread picks without
 * the slot's lock may have been freed (ENOENT) or be held (EBUSY); there
 * may be no room under the budget (ENOMEM, ENOSPC), or not yet (EAGAIN).
 */
static bool expected_error(enum op op, int err)
{
	switch (op) {
	case OP_TOUCH:
	case OP_NESTED:
	case OP_HOST_HOLD:
	case OP_HOST_ALLOC:
	case OP_REALLOC:
		return err == -ENOMEM || err == -ENOSPC;
	case OP_EVICT:
	case OP_SHED:
		return err == -EBUSY || err == -ENOENT || err == -ENOMEM ||
		       err == -ENOSPC || err == -EAGAIN;
	case OP_WAIT:
		return err == -ENOENT;
	case OP_BUDGET:
		return err == -EBUSY;
	default:
		return false;
	}
}

/*
 * Errors libum gives today where its manual promises another (or none),
 * found by this program: counted and shown apart, and failing the run only
 * with --strict, until libum is fixed and the entry goes. None today: C
 * has no empty array, so the table holds one entry no operation matches.
 */
static const struct known_defect {
	enum op op;
	int err;
	const char *what;
} known_defects[] = {
	{ OP_COUNT, 0, "none (no operation is OP_COUNT)" },
};

static int known_defect(enum op op, int err)
{
	for (size_t i = 0; i < sizeof(known_defects) / sizeof(known_defects[0]); i++)
		if (known_defects[i].op == op && known_defects[i].err == err)
			return (int)i;
	return -1;
}

struct opts {
	unsigned int seconds, threads, regions, max_kib;
	uint64_t sim_bytes;
	unsigned long long seed;
	const char *spill_dir;
	bool json, strict;
};

struct slot {
	pthread_mutex_t lock;		/* held to read or write the bytes */
	_Atomic um_region_t h;		/* 0 while being replaced */
	uint64_t bytes;
	uint64_t sum;			/* XXH3-64 the last writer left */
};

struct counts {
	uint64_t ok[OP_COUNT];
	uint64_t err[OP_COUNT][MAX_ERRNO];
	uint64_t unexpected, verified_bytes, lost_bytes, lost_regions;
	uint64_t known[sizeof(known_defects) / sizeof(known_defects[0])];
};

struct stress {
	struct opts o;
	struct um_context *ctx;
	struct slot *slots;
	atomic_bool stop;
	pthread_mutex_t show_lock;	/* one thread prints at a time */
	int shown;
	atomic_uint_fast64_t log_warn, log_err, ev_error;
};

struct worker {
	pthread_t thread;
	struct stress *s;
	uint64_t rng;
	struct counts c;
};

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static unsigned int below(uint64_t *x, unsigned int n)
{
	return (unsigned int)(next_rand(x) % n);
}

static void show(struct stress *s, const char *fmt, const char *what,
		 long a, long b)
{
	pthread_mutex_lock(&s->show_lock);
	if (s->shown++ < SHOW_MAX) {
		printf("# ");
		printf(fmt, what, a, b);
		printf("\n");
		fflush(stdout);
	}
	pthread_mutex_unlock(&s->show_lock);
}

/* ret: >= 0 success, else -errno, counted against what op may meet. */
static void note(struct worker *w, enum op op, int64_t ret)
{
	if (ret >= 0) {
		w->c.ok[op]++;
		return;
	}
	if (ret > -MAX_ERRNO)
		w->c.err[op][-ret]++;
	if (known_defect(op, (int)ret) >= 0) {
		w->c.known[known_defect(op, (int)ret)]++;
		return;
	}
	if (!expected_error(op, (int)ret)) {
		w->c.unexpected++;
		show(w->s, "unexpected: %s returned %ld (%ld)", op_name[op],
		     (long)ret, (long)ret);
	}
}

/* ---- the bytes ---------------------------------------------------------- */

static void fill(void *p, uint64_t bytes, uint64_t seed)
{
	unsigned char *b = p;
	uint64_t x = seed | 1, i;

	for (i = 0; i + 8 <= bytes; i += 8) {
		uint64_t v = next_rand(&x);

		memcpy(b + i, &v, 8);
	}
	for (; i < bytes; i++)
		b[i] = (unsigned char)next_rand(&x);
}

/* Compare the bytes with the slot's sum; a difference is bytes lost. */
static void check_bytes(struct worker *w, struct slot *sl, const void *p,
			const char *when)
{
	uint64_t sum = XXH3_64bits(p, sl->bytes);

	w->c.verified_bytes += sl->bytes;
	if (sum == sl->sum)
		return;
	w->c.lost_bytes += sl->bytes;
	w->c.lost_regions++;
	show(w->s, "checksum differs (%s): region of %ld bytes, slot %ld", when,
	     (long)sl->bytes, (long)(sl - w->s->slots));
	sl->sum = sum;		/* count each loss once */
}

static int acquire_ptr(struct stress *s, um_region_t h, um_tier_t tier,
		       void **p)
{
	int ret = um_acquire(s->ctx, h, tier, NULL);

	if (ret)
		return ret;
	ret = um_wait(s->ctx, h);
	if (!ret)
		ret = um_ptr(s->ctx, h, p);
	if (ret)
		um_release(s->ctx, h);
	return ret;
}

/*
 * Acquire, check, rewrite, release; the slot is locked by the caller.
 * Returns the acquire's error (counted already) or 0.
 */
static int touch_locked(struct worker *w, struct slot *sl, bool rewrite)
{
	um_region_t h = atomic_load(&sl->h);
	void *p;
	int ret = acquire_ptr(w->s, h, UM_TIER_GPU(0), &p);

	note(w, OP_TOUCH, ret);
	if (ret)
		return ret;
	check_bytes(w, sl, p, "acquire");
	if (rewrite) {
		fill(p, sl->bytes, next_rand(&w->rng));
		sl->sum = XXH3_64bits(p, sl->bytes);
	}
	note(w, OP_TOUCH, um_release(w->s->ctx, h));
	return 0;
}

static struct slot *lock_any(struct worker *w)
{
	struct slot *sl = &w->s->slots[below(&w->rng, w->s->o.regions)];

	return pthread_mutex_trylock(&sl->lock) ? NULL : sl;
}

static void op_touch(struct worker *w)
{
	struct slot *sl = lock_any(w);

	if (!sl)
		return;
	touch_locked(w, sl, true);
	pthread_mutex_unlock(&sl->lock);
}

/* Two acquires on one tier count; each release undoes one. */
static void op_nested(struct worker *w)
{
	struct slot *sl = lock_any(w);
	um_region_t h;
	void *p;
	int ret;

	if (!sl)
		return;
	h = atomic_load(&sl->h);
	ret = acquire_ptr(w->s, h, UM_TIER_GPU(0), &p);
	if (!ret) {
		ret = um_acquire(w->s->ctx, h, UM_TIER_GPU(0), NULL);
		if (!ret) {
			check_bytes(w, sl, p, "nested acquire");
			ret = um_release(w->s->ctx, h);
		}
		note(w, OP_NESTED, ret);
		ret = um_release(w->s->ctx, h);
	}
	note(w, OP_NESTED, ret);
	pthread_mutex_unlock(&sl->lock);
}

/* The bytes come to the host and stay there until the release. */
static void op_host_hold(struct worker *w)
{
	static const um_tier_t on[] = { UM_TIER_HOST_ANY, UM_TIER_HOST_NODE(0) };
	struct slot *sl = lock_any(w);
	um_region_t h;
	int ret;

	if (!sl)
		return;
	h = atomic_load(&sl->h);
	ret = um_acquire(w->s->ctx, h, on[below(&w->rng, 2)], NULL);
	if (!ret)
		ret = um_wait(w->s->ctx, h);
	note(w, OP_HOST_HOLD, ret);
	if (!ret)
		note(w, OP_HOST_HOLD, um_release(w->s->ctx, h));
	pthread_mutex_unlock(&sl->lock);
}

static um_region_t any_handle(struct worker *w)
{
	return atomic_load(&w->s->slots[below(&w->rng, w->s->o.regions)].h);
}

static void op_evict(struct worker *w)
{
	static const um_tier_t to[] = {
		UM_TIER_HOST_ANY, UM_TIER_DISK, UM_TIER_HOST_NODE(0),
	};
	um_region_t h = any_handle(w);

	if (h)
		note(w, OP_EVICT, um_evict(w->s->ctx, h, to[below(&w->rng, 3)]));
}

static void op_wait(struct worker *w)
{
	um_region_t h = any_handle(w);

	if (h)
		note(w, OP_WAIT, um_wait(w->s->ctx, h));
}

static void op_budget(struct worker *w)
{
	uint64_t cap = w->s->o.sim_bytes;
	uint64_t b = cap / 8 + (next_rand(&w->rng) % (cap - cap / 8 + 1));

	note(w, OP_BUDGET, um_budget_set(w->s->ctx, 0, b & ~(4 * KiB - 1)));
}

static void op_shed(struct worker *w)
{
	static const um_tier_t from[] = { UM_TIER_GPU(0), UM_TIER_HOST_NODE(0) };
	static const um_tier_t to[] = { UM_TIER_NONE, UM_TIER_DISK };
	uint64_t bytes = (next_rand(&w->rng) % 4 + 1) * MiB;

	note(w, OP_SHED, um_shed(w->s->ctx, from[below(&w->rng, 2)], bytes,
				 to[below(&w->rng, 2)]));
}

static void op_stats(struct worker *w)
{
	struct um_stats st = { .size = sizeof(st) };
	struct um_region_info ri = { .size = sizeof(ri) };
	um_region_t h = any_handle(w);
	char json[8192];
	int ret;

	note(w, OP_STATS, um_stats_get(w->s->ctx, &st));
	ret = um_stats_json(w->s->ctx, json, sizeof(json));
	note(w, OP_STATS, ret < 0 ? ret : 0);
	if (h) {
		ret = um_region_info(w->s->ctx, h, &ri);
		note(w, OP_STATS, ret == -ENOENT ? 0 : ret);
	}
}

static void op_host_alloc(struct worker *w)
{
	size_t bytes = (size_t)(next_rand(&w->rng) % (256 * KiB)) + 1;
	void *p;
	int ret = um_host_alloc(w->s->ctx, bytes, &p);

	note(w, OP_HOST_ALLOC, ret);
	if (ret)
		return;
	fill(p, bytes, bytes);
	note(w, OP_HOST_ALLOC, um_host_free(w->s->ctx, p));
}

static uint64_t random_size(struct worker *w)
{
	uint64_t max = (uint64_t)w->s->o.max_kib * KiB;

	/* a quarter of odd sizes, the rest whole pages */
	if (!below(&w->rng, 4))
		return next_rand(&w->rng) % max + 1;
	return (next_rand(&w->rng) % (max / (4 * KiB)) + 1) * 4 * KiB;
}

/* Give the slot a region of a new size, filled, its sum recorded. */
static int new_region(struct worker *w, struct slot *sl)
{
	static const uint32_t kinds[] = {
		UM_KIND_OPTIMIZER_STATE, UM_KIND_PARAM, UM_KIND_GRAD,
		UM_KIND_ACTIVATION, UM_KIND_GENERIC,
	};
	struct um_region_desc d = {
		.size = sizeof(d),
		.kind = kinds[below(&w->rng, 5)],
		.priority = (int32_t)below(&w->rng, 21) - 10,
		.bytes = random_size(w),
		.name = "stress",
	};
	um_region_t h;
	void *p;
	int ret = um_alloc(w->s->ctx, &d, &h);

	if (ret)
		return ret;
	sl->bytes = d.bytes;
	ret = acquire_ptr(w->s, h, UM_TIER_GPU(0), &p);
	if (ret) {
		um_free(w->s->ctx, h);
		return ret;
	}
	fill(p, sl->bytes, next_rand(&w->rng));
	sl->sum = XXH3_64bits(p, sl->bytes);
	ret = um_release(w->s->ctx, h);
	atomic_store(&sl->h, h);
	return ret;
}

static void op_realloc(struct worker *w)
{
	struct slot *sl = lock_any(w);
	um_region_t h;
	int ret;

	if (!sl)
		return;
	touch_locked(w, sl, false);	/* its last bytes count too */
	h = atomic_exchange(&sl->h, 0);
	note(w, OP_REALLOC, um_free(w->s->ctx, h));
	/* no room for a new one now: try until there is (the slot waits) */
	while ((ret = new_region(w, sl)) && !atomic_load(&w->s->stop)) {
		note(w, OP_REALLOC, ret);
		usleep(1000);
	}
	if (ret)
		note(w, OP_REALLOC, ret);
	pthread_mutex_unlock(&sl->lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load(&w->s->stop)) {
		int pick = (int)below(&w->rng, 100), op = 0;

		while (pick >= op_weight[op])
			pick -= op_weight[op++];
		switch (op) {
		case OP_TOUCH: op_touch(w); break;
		case OP_NESTED: op_nested(w); break;
		case OP_HOST_HOLD: op_host_hold(w); break;
		case OP_EVICT: op_evict(w); break;
		case OP_WAIT: op_wait(w); break;
		case OP_WAIT_ALL: note(w, OP_WAIT_ALL, um_wait_all(w->s->ctx)); break;
		case OP_BUDGET: op_budget(w); break;
		case OP_SHED: op_shed(w); break;
		case OP_STATS: op_stats(w); break;
		case OP_TRIM: note(w, OP_TRIM, um_pool_trim(w->s->ctx)); break;
		case OP_HOST_ALLOC: op_host_alloc(w); break;
		default: op_realloc(w); break;
		}
	}
	return NULL;
}

/* ---- context, setup, final check ------------------------------------- */

static void on_log(void *arg, int level, const char *msg)
{
	struct stress *s = arg;

	(void)msg;
	if (level <= UM_LOG_ERR)
		atomic_fetch_add(&s->log_err, 1);
	else if (level == UM_LOG_WARN)
		atomic_fetch_add(&s->log_warn, 1);
}

static void on_event(void *arg, const struct um_event *ev)
{
	struct stress *s = arg;

	if (ev->type == UM_EVENT_ERROR)
		atomic_fetch_add(&s->ev_error, 1);
}

static int setup(struct stress *s, struct worker *w0)
{
	struct um_config c;
	int ret;

	um_config_init(&c);
	c.backend = UM_BACKEND_SIM;
	c.sim_capacity = s->o.sim_bytes;
	c.device_budget = s->o.sim_bytes / 2;
	c.spill_dir = s->o.spill_dir;
	c.log = on_log;
	c.log_arg = s;
	c.log_level = UM_LOG_WARN;
	ret = um_context_create(&c, &s->ctx);
	if (ret)
		return ret;
	um_set_event_callback(s->ctx, on_event, s);
	s->slots = calloc(s->o.regions, sizeof(*s->slots));
	if (!s->slots)
		return -ENOMEM;
	for (unsigned int i = 0; i < s->o.regions; i++) {
		pthread_mutex_init(&s->slots[i].lock, NULL);
		ret = new_region(w0, &s->slots[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* What setup() made before it failed, so that ASan's leak check speaks only of libum. */
static void teardown_failed_setup(struct stress *s)
{
	if (s->slots) {
		for (unsigned int i = 0; i < s->o.regions; i++) {
			um_region_t h = atomic_load(&s->slots[i].h);

			if (h)
				um_free(s->ctx, h);
		}
		free(s->slots);
	}
	if (s->ctx)
		um_context_destroy(s->ctx);
}

/* Every region once more, with room for it, then freed. */
static int finish(struct stress *s, struct worker *w0)
{
	int leaks;

	note(w0, OP_WAIT_ALL, um_wait_all(s->ctx));
	note(w0, OP_BUDGET, um_budget_set(s->ctx, 0, s->o.sim_bytes));
	for (unsigned int i = 0; i < s->o.regions; i++) {
		struct slot *sl = &s->slots[i];
		um_region_t h = atomic_load(&sl->h);

		if (!h)
			continue;
		/* nothing else runs now: a region that cannot be checked fails */
		if (touch_locked(w0, sl, false)) {
			w0->c.unexpected++;
			printf("# final check: slot %u could not be acquired\n", i);
		}
		note(w0, OP_REALLOC, um_free(s->ctx, h));
		pthread_mutex_destroy(&sl->lock);
	}
	leaks = um_context_destroy(s->ctx);
	if (leaks)
		printf("# %d region(s) left at context destroy\n", leaks);
	return leaks;
}

/* ---- report ------------------------------------------------------------- */

static void add_counts(struct counts *sum, const struct counts *c)
{
	for (int op = 0; op < OP_COUNT; op++) {
		sum->ok[op] += c->ok[op];
		for (int e = 0; e < MAX_ERRNO; e++)
			sum->err[op][e] += c->err[op][e];
	}
	sum->unexpected += c->unexpected;
	for (size_t i = 0; i < sizeof(c->known) / sizeof(c->known[0]); i++)
		sum->known[i] += c->known[i];
	sum->verified_bytes += c->verified_bytes;
	sum->lost_bytes += c->lost_bytes;
	sum->lost_regions += c->lost_regions;
}

static uint64_t total_ops(const struct counts *c)
{
	uint64_t n = 0;

	for (int op = 0; op < OP_COUNT; op++) {
		n += c->ok[op];
		for (int e = 0; e < MAX_ERRNO; e++)
			n += c->err[op][e];
	}
	return n;
}

static const char *errno_name(int e)
{
	const char *n = strerrorname_np(e);

	return n ? n : "E?";
}

static void print_ops(const struct counts *c, bool json)
{
	for (int op = 0; op < OP_COUNT; op++) {
		if (json)
			printf("%s\"%s\":{\"ok\":%llu", op ? "," : "",
			       op_name[op], (unsigned long long)c->ok[op]);
		else
			printf("#   %-10s %9llu ok", op_name[op],
			       (unsigned long long)c->ok[op]);
		for (int e = 1; e < MAX_ERRNO; e++) {
			if (!c->err[op][e])
				continue;
			if (json)
				printf(",\"%s\":%llu", errno_name(e),
				       (unsigned long long)c->err[op][e]);
			else
				printf(", %s %llu", errno_name(e),
				       (unsigned long long)c->err[op][e]);
		}
		printf(json ? "}" : "\n");
	}
}

static uint64_t known_total(const struct counts *c)
{
	uint64_t n = 0;

	for (size_t i = 0; i < sizeof(c->known) / sizeof(c->known[0]); i++)
		n += c->known[i];
	return n;
}

static void report(const struct stress *s, const struct counts *c, int leaks,
		   double secs, bool pass)
{
	const struct opts *o = &s->o;

	printf("# stress: %u threads, %u regions of 1 byte..%u KiB, sim device %llu MiB, %.1f s, seed %llu\n",
	       o->threads, o->regions, o->max_kib,
	       (unsigned long long)(o->sim_bytes / MiB), secs, o->seed);
	printf("# stress: %llu operations (%.0f/s), %llu MiB verified by checksum, %llu bytes lost in %llu region(s), %llu unexpected error(s), %d region(s) leaked\n",
	       (unsigned long long)total_ops(c), (double)total_ops(c) / secs,
	       (unsigned long long)(c->verified_bytes / MiB),
	       (unsigned long long)c->lost_bytes,
	       (unsigned long long)c->lost_regions,
	       (unsigned long long)c->unexpected, leaks);
	printf("# stress: libum log: %llu warning(s), %llu error(s); %llu ERROR event(s) (failed migrations, bytes kept)\n",
	       (unsigned long long)s->log_warn, (unsigned long long)s->log_err,
	       (unsigned long long)s->ev_error);
	for (size_t i = 0; i < sizeof(c->known) / sizeof(c->known[0]); i++)
		if (c->known[i])
			printf("# stress: known libum defect, %llu time(s)%s: %s\n",
			       (unsigned long long)c->known[i],
			       o->strict ? " (--strict: fails the run)" : "",
			       known_defects[i].what);
	print_ops(c, false);
	printf("%s 1 stress\n# Totals: pass:%d fail:%d xfail:0 xpass:0 skip:0 error:0\n",
	       pass ? "ok" : "not ok", pass, !pass);
	if (!o->json)
		return;
	printf("{\"threads\":%u,\"regions\":%u,\"seconds\":%.1f,\"seed\":%llu,\"ops\":%llu,\"verified_bytes\":%llu,\"lost_bytes\":%llu,\"lost_regions\":%llu,\"unexpected_errors\":%llu,\"known_defects\":%llu,\"leaked_regions\":%d,\"log_warnings\":%llu,\"log_errors\":%llu,\"error_events\":%llu,\"pass\":%s,\"by_op\":{",
	       o->threads, o->regions, secs, o->seed,
	       (unsigned long long)total_ops(c),
	       (unsigned long long)c->verified_bytes,
	       (unsigned long long)c->lost_bytes,
	       (unsigned long long)c->lost_regions,
	       (unsigned long long)c->unexpected,
	       (unsigned long long)known_total(c), leaks,
	       (unsigned long long)s->log_warn, (unsigned long long)s->log_err,
	       (unsigned long long)s->ev_error, pass ? "true" : "false");
	print_ops(c, true);
	printf("}}\n");
}

/* ---- options and main ------------------------------------------------- */

static int parse_num(const char *what, const char *v, unsigned long long lo,
		     unsigned long long hi, unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || v[0] < '0' || v[0] > '9' || *end || *out < lo || *out > hi) {
		fprintf(stderr, "stress: %s wants a decimal number in %llu..%llu, not '%s'\n",
			what, lo, hi, v);
		return -EINVAL;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: stress [--seconds S] [--threads N] [--regions N] [--max-kib K]\n"
		   "              [--sim-mib M] [--seed N] --spill-dir DIR [--json] [--strict]\n"
		   "Random acquire/release/evict/budget/shed/free from N threads on one\n"
		   "libum context (sim backend) for S seconds; bytes checked by XXH3-64.\n"
		   "Defaults: 10 s, 8 threads, 48 regions up to 1024 KiB, 16 MiB device,\n"
		   "seed from the clock. --strict: the known libum defects listed in\n"
		   "stress.c fail the run too. Exit 0 pass, 1 fail, 2 usage.\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "regions", required_argument, NULL, 'r' },
		{ "max-kib", required_argument, NULL, 'k' },
		{ "sim-mib", required_argument, NULL, 'm' },
		{ "seed", required_argument, NULL, 'S' },
		{ "spill-dir", required_argument, NULL, 'd' },
		{ "json", no_argument, NULL, 'j' },
		{ "strict", no_argument, NULL, 'x' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long v;
	int c, ret = 0;

	*o = (struct opts){ .seconds = 10, .threads = 8, .regions = 48,
			    .max_kib = 1024, .sim_bytes = 16 * MiB,
			    .seed = (unsigned long long)time(NULL) };
	while (!ret && (c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 's': ret = parse_num("--seconds", optarg, 1, 86400, &v); o->seconds = (unsigned int)v; break;
		case 't': ret = parse_num("--threads", optarg, 1, 256, &v); o->threads = (unsigned int)v; break;
		case 'r': ret = parse_num("--regions", optarg, 1, 4096, &v); o->regions = (unsigned int)v; break;
		case 'k': ret = parse_num("--max-kib", optarg, 4, 65536, &v); o->max_kib = (unsigned int)v; break;
		case 'm': ret = parse_num("--sim-mib", optarg, 1, 4096, &v); o->sim_bytes = v * MiB; break;
		case 'S': ret = parse_num("--seed", optarg, 1, ~0ull, &o->seed); break;
		case 'd': o->spill_dir = optarg; break;
		case 'j': o->json = true; break;
		case 'x': o->strict = true; break;
		case 'h': usage(stdout); exit(0);
		default: ret = -EINVAL;
		}
	}
	if (!ret && (optind != argc || !o->spill_dir))
		ret = -EINVAL;
	if (ret)
		usage(stderr);
	return ret;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct stress s = { .show_lock = PTHREAD_MUTEX_INITIALIZER };
	struct worker *w;
	struct counts sum = { 0 };
	double t0;
	int ret, leaks;
	bool pass;

	if (parse_opts(argc, argv, &s.o))
		return 2;
	/* a sanitizer's report ends the process with _exit: TAP lines must be out by then */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..1\n");
	w = calloc(s.o.threads, sizeof(*w));
	if (!w)
		return 1;
	for (unsigned int i = 0; i < s.o.threads; i++) {
		w[i].s = &s;
		w[i].rng = s.o.seed * 0x9e3779b97f4a7c15ull + i + 1;
	}
	ret = setup(&s, &w[0]);
	if (ret) {
		printf("not ok 1 stress # setup: %s\n# Totals: pass:0 fail:1 xfail:0 xpass:0 skip:0 error:0\n",
		       strerror(-ret));
		teardown_failed_setup(&s);
		free(w);
		return 1;
	}
	t0 = now_s();
	for (unsigned int i = 0; i < s.o.threads; i++)
		pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
	while (now_s() - t0 < s.o.seconds)
		usleep(100 * 1000);
	atomic_store(&s.stop, true);
	for (unsigned int i = 0; i < s.o.threads; i++)
		pthread_join(w[i].thread, NULL);
	leaks = finish(&s, &w[0]);
	for (unsigned int i = 0; i < s.o.threads; i++)
		add_counts(&sum, &w[i].c);
	pass = !sum.lost_bytes && !sum.unexpected && !leaks &&
	       !(s.o.strict && known_total(&sum));
	report(&s, &sum, leaks, now_s() - t0, pass);
	free(s.slots);
	free(w);
	return pass ? 0 : 1;
}
