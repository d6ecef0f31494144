// SPDX-License-Identifier: MIT
/*
 * umtrain - a small trainer on libum: an MLP learns a random teacher network
 * with Adam whose state lives in optimizer-state regions, under a device
 * budget that can be far below that state. See umtrain(1).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "train.h"
#include "ut.h"

#define MiB (1ull << 20)
#define MAX_ROUNDS 50

struct opts {
	struct train_cfg cfg;
	bool auto_budget;
	bool json, quiet, compare;
	unsigned int rounds;	/* --bench: unlimited/budget pairs to time */
};

/* Times of every step of every run, for the medians --bench prints. */
struct timing {
	double *step_s[2];	/* [0] unlimited, [1] budget: n each */
	size_t n;
	unsigned int rounds;
};

struct run {
	const char *label;
	struct train_result res;
	struct ut_progress prog;
	bool ok;
};

static void usage(void)
{
	printf("Usage: %s [options]\n\n"
"Train a small MLP on libum with Adam whose state lives in optimizer-state\n"
"regions, under a device budget; print losses, memory, migrations and a\n"
"checksum of the final weights.\n\n"
"Options:\n"
"  -H, --hidden N       width of the hidden layers (default 1024)\n"
"  -L, --layers N       linear layers, 2..64 (default 16)\n"
"  -b, --batch N        samples per step (default 32)\n"
"  -n, --steps N        training steps (default 20)\n"
"  -s, --seed N         seed of data, teacher and initial weights (default 1)\n"
"  -l, --lr X           Adam learning rate (default 0.0001)\n"
"  -B, --budget SIZE    device budget: bytes with K/M/G suffix, 'unlimited',\n"
"                       or 'auto' (default: a quarter of the optimizer state,\n"
"                       at least one step's working set)\n"
"      --shard SIZE     optimizer state per region, at most (default 2M)\n"
"  -t, --threads N      math threads; never changes results (default: one per\n"
"                       CPU, less one on the sim backend for its copies)\n"
"      --backend NAME   sim, cuda or auto (default sim: the math runs on the CPU)\n"
"  -c, --compare        run with an unlimited budget, then with --budget, and\n"
"                       fail unless the final checksums are equal\n"
"      --bench N        --compare, the two runs trained in lockstep (a step of\n"
"                       each in turn, timed until the work it started in the\n"
"                       background is done), N times; print the median step\n"
"                       rate of each and their ratio\n"
"      --no-prefetch    acquire each region only when it is used, on the\n"
"                       math's thread (to measure what acquiring ahead gains)\n"
"  -J, --json           print the summary as JSON\n"
"  -q, --quiet          print only the checksum line\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n\n"
"Exit status: 0 success, 1 failure or checksum mismatch, 2 bad usage.\n",
	       ut_progname);
}

static unsigned int parse_uint(const char *opt, const char *s,
			       uint64_t min, uint64_t max)
{
	uint64_t v;

	if (ut_parse_u64(s, min, max, &v))
		ut_die_usage("invalid %s '%s': need an integer in [%llu, %llu]",
			     opt, s, (unsigned long long)min,
			     (unsigned long long)max);
	return (unsigned int)v;
}

static void parse_budget(struct opts *o, const char *s)
{
	uint64_t v;
	int rc;

	o->cfg.unlimited = false;
	o->auto_budget = false;
	if (!strcmp(s, "unlimited")) {
		o->cfg.unlimited = true;
		return;
	}
	if (!strcmp(s, "auto")) {
		o->auto_budget = true;
		return;
	}
	rc = ut_parse_size(s, &v);
	if (rc || !v)
		ut_die_usage("invalid --budget '%s': need a size such as 64M, "
			     "'unlimited' or 'auto'", s);
	o->cfg.budget = v;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum { OPT_SHARD = 256, OPT_BACKEND, OPT_BENCH, OPT_NO_PREFETCH };
	static const struct option longopts[] = {
		{ "hidden", required_argument, NULL, 'H' },
		{ "layers", required_argument, NULL, 'L' },
		{ "batch", required_argument, NULL, 'b' },
		{ "steps", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "lr", required_argument, NULL, 'l' },
		{ "budget", required_argument, NULL, 'B' },
		{ "shard", required_argument, NULL, OPT_SHARD },
		{ "threads", required_argument, NULL, 't' },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "compare", no_argument, NULL, 'c' },
		{ "bench", required_argument, NULL, OPT_BENCH },
		{ "no-prefetch", no_argument, NULL, OPT_NO_PREFETCH },
		{ "json", no_argument, NULL, 'J' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t v;
	double d;
	int c, ret;

	while ((c = getopt_long(argc, argv, "H:L:b:n:s:l:B:t:cJqhV", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'H':
			o->cfg.hidden = parse_uint("--hidden", optarg, 1,
						   65536);
			break;
		case 'L':
			o->cfg.layers = parse_uint("--layers", optarg, 2, 64);
			break;
		case 'b':
			o->cfg.batch = parse_uint("--batch", optarg, 1, 65536);
			break;
		case 'n':
			o->cfg.steps = parse_uint("--steps", optarg, 1,
						  10000000);
			break;
		case 's':
			if (ut_parse_u64(optarg, 0, UINT64_MAX, &v))
				ut_die_usage("invalid --seed '%s'", optarg);
			o->cfg.seed = v;
			break;
		case 'l':
			if (ut_parse_double(optarg, 1e-12, 10.0, &d))
				ut_die_usage("invalid --lr '%s': need a number "
					     "in (0, 10]", optarg);
			o->cfg.lr = (float)d;
			break;
		case 'B':
			parse_budget(o, optarg);
			break;
		case OPT_SHARD:
			if (ut_parse_size_range(optarg, 64, 1ull << 40, &v))
				ut_die_usage("invalid --shard '%s': need a size "
					     "of at least 64 bytes", optarg);
			o->cfg.shard_bytes = v;
			break;
		case 't':
			o->cfg.threads = parse_uint("--threads", optarg, 1,
						    256);
			break;
		case OPT_BACKEND:
			ret = ut_parse_backend(optarg);
			if (ret < 0)
				ut_die_usage("invalid --backend '%s': need sim, "
					     "cuda or auto", optarg);
			o->cfg.backend = ret;
			break;
		case 'c':
			o->compare = true;
			break;
		case OPT_NO_PREFETCH:
			o->cfg.no_prefetch = true;
			break;
		case OPT_BENCH:
			o->rounds = parse_uint("--bench", optarg, 1,
					       MAX_ROUNDS);
			o->compare = true;
			break;
		case 'J':
			o->json = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		case 'h':
			usage();
			exit(0);
		case 'V':
			printf("umtrain (um) %d.%d\n", UM_VERSION_MAJOR,
			       UM_VERSION_MINOR);
			exit(0);
		default:
			ut_die_try_help();
		}
	}
	if (optind < argc)
		ut_die_usage("unexpected argument '%s'", argv[optind]);
}

/* Resolves 'auto' and refuses budgets below one step's working set. */
static void check_budget(struct opts *o, const struct train_sizes *sz)
{
	char a[UT_SIZE_STR], b[UT_SIZE_STR];
	uint64_t min = sz->working_set;

	if (o->compare && o->cfg.unlimited)
		ut_die_usage("--compare needs a limited --budget");
	if (o->auto_budget) {
		uint64_t want = sz->state_bytes / 4;

		if (want < min + min / 4)
			want = min + min / 4;
		o->cfg.budget = (want + MiB - 1) / MiB * MiB;
	}
	if (!o->cfg.unlimited && o->cfg.budget < min)
		ut_die_usage("--budget %s is below one step's working set of "
			     "%s (a layer's weights and gradient, two "
			     "optimizer shards, the activations, the biases)",
			     ut_size_str(o->cfg.budget, a),
			     ut_size_str(min, b));
}

/* ---- reporting ---------------------------------------------------------- */

static void on_libum_log(void *arg, int level, const char *msg)
{
	struct run *r = arg;

	ut_progress_end(&r->prog);
	fprintf(stderr, "%s: libum: %s\n", ut_progname, msg);
}

static void on_step(void *arg, unsigned int step, double loss,
		    const struct um_stats *st)
{
	struct run *r = arg;

	ut_progress_update(&r->prog, step, "%s  loss %.5f  migrations %llu",
			   r->label, loss,
			   (unsigned long long)st->migrations);
}

static double gbps(uint64_t bytes, uint64_t ns)
{
	return ns ? (double)bytes / (double)ns : 0.0;
}

static const char *budget_str(const struct opts *o, const struct run *r,
			      char buf[UT_SIZE_STR])
{
	return r->label[0] == 'u' ? "unlimited" : ut_size_str(r->res.budget,
							      buf);
}

static void print_header(const struct opts *o, const struct train_sizes *sz)
{
	const struct train_cfg *c = &o->cfg;
	char p[UT_SIZE_STR], g[UT_SIZE_STR], s[UT_SIZE_STR], a[UT_SIZE_STR];

	printf("model: MLP %d -> %u x %u -> %d, %.2f M parameters, batch %u, "
	       "%u steps, seed %llu, lr %g\n",
	       TRAIN_IN_DIM, c->layers - 1, c->hidden, TRAIN_OUT_DIM,
	       (double)sz->params / 1e6, c->batch, c->steps,
	       (unsigned long long)c->seed, (double)c->lr);
	printf("regions: %llu; parameters %s, gradients %s, optimizer state "
	       "%s in %llu regions, activations %s\n",
	       (unsigned long long)sz->regions,
	       ut_size_str(sz->param_bytes, p), ut_size_str(sz->grad_bytes, g),
	       ut_size_str(sz->state_bytes, s),
	       (unsigned long long)sz->state_regions,
	       ut_size_str(sz->act_bytes, a));
	if (!c->unlimited)
		printf("budget: %s (%.2fx the optimizer state)\n",
		       ut_size_str(c->budget, p),
		       (double)c->budget / (double)sz->state_bytes);
	putchar('\n');
}

#define NROWS 19

static void fill_column(const struct opts *o, const struct run *r,
			char cells[NROWS][32])
{
	const struct um_stats *st = &r->res.st;
	char b[UT_SIZE_STR];
	int i = 0;

	snprintf(cells[i++], 32, "%s", budget_str(o, r, b));
	snprintf(cells[i++], 32, "%u", r->res.threads);
	snprintf(cells[i++], 32, "%.6f", r->res.loss_first);
	snprintf(cells[i++], 32, "%.6f", r->res.loss_last);
	snprintf(cells[i++], 32, "%s", ut_size_str(st->device[0].peak, b));
	snprintf(cells[i++], 32, "%s", ut_size_str(st->host_total.peak, b));
	snprintf(cells[i++], 32, "%s", ut_size_str(st->spill.peak, b));
	snprintf(cells[i++], 32, "%llu", (unsigned long long)st->migrations);
	snprintf(cells[i++], 32, "%s", ut_size_str(st->migrated_bytes, b));
	if (st->migration_ns)
		snprintf(cells[i++], 32, "%.2f",
			 gbps(st->migrated_bytes, st->migration_ns));
	else
		snprintf(cells[i++], 32, "-");
	snprintf(cells[i++], 32, "%llu", (unsigned long long)st->evict_count);
	snprintf(cells[i++], 32, "%s", ut_size_str(st->evict_bytes, b));
	snprintf(cells[i++], 32, "%llu",
		 (unsigned long long)st->evict_clean_count);
	snprintf(cells[i++], 32, "%llu", (unsigned long long)st->restore_count);
	snprintf(cells[i++], 32, "%llu", (unsigned long long)st->nomem);
	snprintf(cells[i++], 32, "%.2f", r->res.seconds);
	snprintf(cells[i++], 32, "%.1f",
		 r->res.seconds * 1e3 / (double)o->cfg.steps);
	snprintf(cells[i++], 32, "%016llx",
		 (unsigned long long)r->res.checksum);
	snprintf(cells[i++], 32, "%016llx",
		 (unsigned long long)r->res.state_checksum);
}

static void print_table(const struct opts *o, const struct run *runs,
			int nruns)
{
	static const char *const rows[NROWS] = {
		"device budget", "math threads", "loss first", "loss last",
		"device peak", "host peak", "spill peak", "migrations",
		"migrated",
		"migration GB/s", "evictions", "evicted", "clean evictions",
		"restores",
		"refused (ENOMEM)", "train seconds", "ms per step",
		"weights checksum", "state checksum",
	};
	const char *cols[3] = { "METRIC", "UNLIMITED", "BUDGET" };
	char cells[2][NROWS][32];
	struct libscols_table *tb;
	int i, k;

	if (nruns == 1)
		cols[1] = "VALUE";
	tb = ut_table_new(cols, nruns + 1, 0x6);
	if (!tb)
		return;
	for (k = 0; k < nruns; k++)
		fill_column(o, &runs[k], cells[k]);
	for (i = 0; i < NROWS; i++) {
		const char *line[3] = { rows[i], cells[0][i],
					nruns > 1 ? cells[1][i] : NULL };
		ut_table_row(tb, line);
	}
	ut_table_print(tb);
}

static void json_step_rate(struct ut_json *j, const struct opts *o,
			   const struct timing *tm);

static void json_run(struct ut_json *j, const struct opts *o,
		     const struct run *r)
{
	const struct um_stats *st = &r->res.st;
	char hex[24];

	ut_json_obj_begin(j, NULL);
	ut_json_str(j, "label", r->label);
	ut_json_bool(j, "ok", r->ok);
	ut_json_u64(j, "threads", r->res.threads);
	if (r->label[0] == 'u')
		ut_json_null(j, "budget_bytes");
	else
		ut_json_u64(j, "budget_bytes", r->res.budget);
	ut_json_dbl(j, "loss_first", r->res.loss_first);
	ut_json_dbl(j, "loss_last", r->res.loss_last);
	ut_json_u64(j, "device_peak_bytes", st->device[0].peak);
	ut_json_u64(j, "host_peak_bytes", st->host_total.peak);
	ut_json_u64(j, "spill_peak_bytes", st->spill.peak);
	ut_json_u64(j, "migrations", st->migrations);
	ut_json_u64(j, "migrated_bytes", st->migrated_bytes);
	ut_json_u64(j, "migration_ns", st->migration_ns);
	ut_json_u64(j, "steps_migrated_bytes", r->res.steps_migrated_bytes);
	ut_json_u64(j, "steps_migration_ns", r->res.steps_migration_ns);
	ut_json_dbl(j, "migration_gbps",
		    gbps(st->migrated_bytes, st->migration_ns));
	ut_json_u64(j, "evictions", st->evict_count);
	ut_json_u64(j, "evicted_bytes", st->evict_bytes);
	ut_json_u64(j, "clean_evictions", st->evict_clean_count);
	ut_json_u64(j, "clean_evicted_bytes", st->evict_clean_bytes);
	ut_json_u64(j, "restores", st->restore_count);
	ut_json_u64(j, "restored_bytes", st->restore_bytes);
	ut_json_u64(j, "nomem", st->nomem);
	ut_json_dbl(j, "train_seconds", r->res.seconds);
	snprintf(hex, sizeof(hex), "%016llx",
		 (unsigned long long)r->res.checksum);
	ut_json_str(j, "weights_checksum", hex);
	snprintf(hex, sizeof(hex), "%016llx",
		 (unsigned long long)r->res.state_checksum);
	ut_json_str(j, "state_checksum", hex);
	ut_json_obj_end(j);
}

static void print_json(const struct opts *o, const struct train_sizes *sz,
		       const struct run *runs, int nruns, int equal,
		       const struct timing *tm)
{
	const struct train_cfg *c = &o->cfg;
	struct ut_json j;
	int k;

	ut_json_init(&j, stdout);
	ut_json_obj_begin(&j, NULL);
	ut_json_obj_begin(&j, "config");
	ut_json_u64(&j, "hidden", c->hidden);
	ut_json_u64(&j, "layers", c->layers);
	ut_json_u64(&j, "batch", c->batch);
	ut_json_u64(&j, "steps", c->steps);
	ut_json_u64(&j, "seed", c->seed);
	ut_json_dbl(&j, "lr", c->lr);
	ut_json_u64(&j, "threads", runs[0].res.threads);
	ut_json_u64(&j, "shard_bytes", c->shard_bytes);
	ut_json_str(&j, "backend", runs[0].res.backend == UM_BACKEND_CUDA ?
		    "cuda" : "sim");
	ut_json_obj_end(&j);
	ut_json_obj_begin(&j, "model");
	ut_json_u64(&j, "parameters", sz->params);
	ut_json_u64(&j, "param_bytes", sz->param_bytes);
	ut_json_u64(&j, "grad_bytes", sz->grad_bytes);
	ut_json_u64(&j, "optimizer_state_bytes", sz->state_bytes);
	ut_json_u64(&j, "activation_bytes", sz->act_bytes);
	ut_json_u64(&j, "regions", sz->regions);
	ut_json_u64(&j, "optimizer_state_regions", sz->state_regions);
	ut_json_u64(&j, "working_set_bytes", sz->working_set);
	ut_json_obj_end(&j);
	ut_json_arr_begin(&j, "runs");
	for (k = 0; k < nruns; k++)
		json_run(&j, o, &runs[k]);
	ut_json_arr_end(&j);
	if (equal < 0)
		ut_json_null(&j, "checksums_equal");
	else
		ut_json_bool(&j, "checksums_equal", equal);
	json_step_rate(&j, o, tm);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static double mean(const double *v, size_t n)
{
	double sum = 0.0;

	for (size_t i = 0; i < n; i++)
		sum += v[i];
	return sum / (double)n;
}

/* Steps per second at the median step time of each run. */
static void step_rates(const struct timing *tm, double *unlimited,
		       double *budget)
{
	*unlimited = 1.0 / median(tm->step_s[0], tm->n);
	*budget = 1.0 / median(tm->step_s[1], tm->n);
}

/* The budget run's step rate over the unlimited run's at their mean step
 * (every step counted, the slow ones included). */
static double mean_ratio(const struct timing *tm)
{
	return mean(tm->step_s[0], tm->n) / mean(tm->step_s[1], tm->n);
}

static void json_step_rate(struct ut_json *j, const struct opts *o,
			   const struct timing *tm)
{
	double u, b;

	if (!tm->rounds) {
		ut_json_null(j, "step_rate");
		return;
	}
	step_rates(tm, &u, &b);
	ut_json_obj_begin(j, "step_rate");
	ut_json_u64(j, "rounds", tm->rounds);
	ut_json_u64(j, "steps_timed", tm->n);
	ut_json_dbl(j, "unlimited_steps_per_s", u);
	ut_json_dbl(j, "budget_steps_per_s", b);
	ut_json_dbl(j, "ratio", b / u);
	ut_json_dbl(j, "mean_ratio", mean_ratio(tm));
	ut_json_obj_end(j);
}

static void print_step_rate(const struct opts *o, const struct timing *tm,
			    const struct run *budget)
{
	const struct train_result *res = &budget->res;
	double u, b, steps = (double)o->cfg.steps;
	char moved[UT_SIZE_STR];

	step_rates(tm, &u, &b);
	printf("step rate: unlimited %.3f steps/s, budget %.3f steps/s, "
	       "ratio %.3f (median step of %u lockstep round%s, %zu steps "
	       "each run); %.3f at the mean step\n", u, b, b / u, tm->rounds,
	       tm->rounds == 1 ? "" : "s", tm->n, mean_ratio(tm));
	printf("copies: the budget run's steps migrated %s each, in %.1f ms "
	       "of copying (last round), beside %u math thread%s\n",
	       ut_size_str((uint64_t)((double)res->steps_migrated_bytes /
				      steps), moved),
	       (double)res->steps_migration_ns / steps * 1e-6, res->threads,
	       res->threads == 1 ? "" : "s");
}

static bool same_result(const struct train_result *a,
			const struct train_result *b)
{
	return a->checksum == b->checksum &&
	       a->state_checksum == b->state_checksum &&
	       !memcmp(&a->loss_first, &b->loss_first, sizeof(double)) &&
	       !memcmp(&a->loss_last, &b->loss_last, sizeof(double));
}

static bool do_run(const struct opts *o, struct run *r, bool unlimited)
{
	struct train_cfg cfg = o->cfg;
	char err[512];
	int rc;

	cfg.unlimited = unlimited;
	ut_progress_init(&r->prog, cfg.steps, !o->quiet);
	rc = train_run(&cfg, &r->res, on_step, r, on_libum_log, r, err,
		       sizeof(err));
	ut_progress_end(&r->prog);
	if (rc) {
		fprintf(stderr, "%s: %s run failed: %s\n", ut_progname,
			r->label, err[0] ? err : strerror(-rc));
		return false;
	}
	return true;
}

/* One --bench round: both runs in lockstep, their step times into tm. */
static bool do_lockstep(const struct opts *o, struct run runs[2],
			struct timing *tm)
{
	struct train_cfg cfg[2] = { o->cfg, o->cfg };
	const struct train_cfg *pc[2] = { &cfg[0], &cfg[1] };
	struct train_result res[2];
	uint64_t *ns[2] = { NULL, NULL };
	unsigned int k, s;
	char err[512];
	int rc = -ENOMEM;

	cfg[0].unlimited = true;
	cfg[1].unlimited = false;
	ns[0] = calloc(o->cfg.steps, sizeof(uint64_t));
	ns[1] = calloc(o->cfg.steps, sizeof(uint64_t));
	if (ns[0] && ns[1])
		rc = train_lockstep(pc, res, ns, on_libum_log, &runs[1], err,
				    sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: lockstep runs failed: %s\n", ut_progname,
			rc != -ENOMEM && err[0] ? err : strerror(-rc));
	} else {
		for (k = 0; k < 2; k++) {
			runs[k].res = res[k];
			runs[k].ok = true;
			for (s = 0; s < o->cfg.steps; s++)
				tm->step_s[k][tm->n + s] = (double)ns[k][s] *
							   1e-9;
		}
		tm->n += o->cfg.steps;
		tm->rounds++;
	}
	free(ns[0]);
	free(ns[1]);
	return !rc;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.cfg = {
			.hidden = 1024, .layers = 16, .batch = 32,
			.steps = 20, .seed = 1, .lr = 1e-4f,
			.shard_bytes = 2 * MiB, .backend = UM_BACKEND_SIM,
		},
		.auto_budget = true,
	};
	struct run runs[2] = { { .label = "unlimited" }, { .label = "budget" } };
	struct train_sizes sz;
	int nruns = 1, equal = -1, k;
	struct timing tm = { .rounds = 0 };
	struct run *first;
	unsigned int r;

	ut_set_progname(argv);
	parse_args(argc, argv, &o);
	train_sizes(&o.cfg, &sz);
	check_budget(&o, &sz);

	first = o.compare || o.cfg.unlimited ? &runs[0] : &runs[1];
	if (o.compare)
		nruns = 2;
	if (!o.json && !o.quiet)
		print_header(&o, &sz);
	if (o.rounds) {
		for (k = 0; k < 2; k++) {
			tm.step_s[k] = calloc((size_t)o.rounds * o.cfg.steps,
					      sizeof(double));
			if (!tm.step_s[k]) {
				fprintf(stderr, "%s: out of memory\n",
					ut_progname);
				return 1;
			}
		}
		for (r = 0; r < o.rounds && equal != 0; r++) {
			if (!do_lockstep(&o, runs, &tm))
				return 1;
			equal = same_result(&runs[0].res, &runs[1].res);
		}
	} else {
		for (k = 0; k < nruns; k++) {
			first[k].ok = do_run(&o, &first[k],
					     &first[k] == &runs[0]);
			if (!first[k].ok)
				return 1;
		}
		if (o.compare)
			equal = same_result(&runs[0].res, &runs[1].res);
	}
	if (o.json) {
		print_json(&o, &sz, first, nruns, equal, &tm);
	} else if (o.quiet) {
		for (k = 0; k < nruns; k++)
			printf("%s checksum %016llx\n", first[k].label,
			       (unsigned long long)first[k].res.checksum);
	} else {
		print_table(&o, first, nruns);
	}
	if (equal == 0) {
		fprintf(stderr, "%s: FAIL: the run under a %s budget differs "
			"from the unlimited run\n", ut_progname,
			ut_size_str(runs[1].res.budget, (char[UT_SIZE_STR]){0}));
		return 1;
	}
	if (equal == 1 && !o.json && !o.quiet)
		printf("\nchecksums equal: yes (budget run evicted %llu times, "
		       "restored %llu times)\n",
		       (unsigned long long)runs[1].res.st.evict_count,
		       (unsigned long long)runs[1].res.st.restore_count);
	if (equal == 1 && !o.json && !o.quiet && tm.rounds)
		print_step_rate(&o, &tm, &runs[1]);
	return 0;
}
