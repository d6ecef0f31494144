// SPDX-License-Identifier: MIT
/*
 * umctl - administer umm.ko: its state, its client list, the memory cgroups
 * it watches, its knobs and its inject file, all through /sys/kernel/mm/umm
 * and debugfs; its figures for Prometheus (metrics.c).
 *
 * Exit status: 0 done, 1 the system refused or umm.ko is not there, 2 bad
 * usage (unknown command or knob, a value out of range). See umctl(8).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "umctl.h"
#include "ut.h"

static int cmd_help(struct umctl *u, int argc, char **argv);

/*
 * "knobs:" and every global number knob of the table (enabled and
 * ring_bytes_max have their place on the lines above).
 */
static void print_knobs(const uint64_t *g)
{
	const char *sep = " ";
	size_t i;

	printf("knobs:   ");
	for (i = 0; i < ut_nknobs; i++) {
		const struct ut_knob *k = &ut_knobs[i];

		if (k->dir != UT_KNOB_GLOBAL || k->kind != UT_KNOB_NUM)
			continue;
		printf("%s%s %llu", sep, k->name,
		       (unsigned long long)g[k->field]);
		sep = ", ";
	}
	printf("\n\n");
}

static int umctl_print_status(const struct ut_umm *s)
{
	const uint64_t *g = s->g;
	char fr[UT_SIZE_STR], rb[UT_SIZE_STR], rmax[UT_SIZE_STR];
	int ret;

	printf("umm.ko:   loaded, API %llu, events %s\n",
	       (unsigned long long)g[UT_UMM_G_api_version],
	       g[UT_UMM_G_enabled] ? "enabled" : "disabled");
	printf("clients:  %llu, rings %s (ring_bytes_max %s)\n",
	       (unsigned long long)g[UT_UMM_G_clients],
	       ut_size_str(g[UT_UMM_G_ring_bytes], rb),
	       ut_size_str(g[UT_UMM_G_ring_bytes_max], rmax));
	printf("events:   %llu sent, %llu dropped, %llu overflows\n",
	       (unsigned long long)g[UT_UMM_G_events_sent],
	       (unsigned long long)g[UT_UMM_G_events_dropped],
	       (unsigned long long)g[UT_UMM_G_overflows]);
	printf("acks:     %llu, %s freed, latency avg %.3f ms, max %.3f ms\n",
	       (unsigned long long)g[UT_UMM_G_acks],
	       ut_size_str(g[UT_UMM_G_bytes_freed], fr),
	       (double)g[UT_UMM_G_ack_latency_ns_avg] / 1e6,
	       (double)g[UT_UMM_G_ack_latency_ns_max] / 1e6);
	printf("kernel:   %llu shrinker calls, %llu OOM notifier calls\n",
	       (unsigned long long)g[UT_UMM_G_shrinker_calls],
	       (unsigned long long)g[UT_UMM_G_oom_calls]);
	if (s->has_cgroup)
		printf("cgroups:  %llu watched, thresholds low %llu, medium %llu, critical %llu bp\n",
		       (unsigned long long)s->cg[UT_UMM_CG_watched],
		       (unsigned long long)s->cg[UT_UMM_CG_low_bp],
		       (unsigned long long)s->cg[UT_UMM_CG_medium_bp],
		       (unsigned long long)s->cg[UT_UMM_CG_critical_bp]);
	print_knobs(g);
	ret = ut_umm_print_nodes(s, NULL);
	if (!ret && s->ngpus) {
		putchar('\n');
		ret = ut_umm_print_gpus(s, false);
	}
	return ret;
}

/* {"module": {"loaded": false}}: scripts can test the field either way. */
static void json_not_loaded(void)
{
	struct ut_json j;

	ut_json_init(&j, stdout);
	ut_json_obj_begin(&j, NULL);
	ut_json_obj_begin(&j, "module");
	ut_json_bool(&j, "loaded", false);
	ut_json_obj_end(&j);
	ut_json_obj_end(&j);
	ut_json_finish(&j);
}

static int cmd_status(struct umctl *u, int argc, char **argv)
{
	struct ut_umm s;
	struct ut_json j;
	int ret;

	if (argc > 1)
		ut_die_usage("status: unexpected argument '%s'", argv[1]);
	ret = ut_umm_read(u->root, &s);
	if (ret) {
		if (ret == -ENOENT && u->json)
			json_not_loaded();
		ut_umm_warn(u->root, s.failed[0] ? s.failed : "status", ret);
		ut_umm_free(&s);
		return EX_RUNTIME;
	}
	if (u->json) {
		ut_json_init(&j, stdout);
		ut_json_obj_begin(&j, NULL);
		ut_umm_json(&j, &s, NULL);
		ut_json_obj_end(&j);
		ut_json_finish(&j);
	} else {
		ret = umctl_print_status(&s);
	}
	ut_umm_free(&s);
	return ret ? umctl_fail("status", ret) : EX_DONE;
}

static int cmd_clients(struct umctl *u, int argc, char **argv)
{
	struct ut_umm_client *c;
	struct ut_json j;
	size_t n;
	int ret;

	if (argc > 1)
		ut_die_usage("clients: unexpected argument '%s'", argv[1]);
	ret = ut_umm_clients(u->root, &c, &n);
	if (ret) {
		ut_umm_warn(u->root, "clients", ret);
		return EX_RUNTIME;
	}
	if (u->json) {
		ut_json_init(&j, stdout);
		ut_json_obj_begin(&j, NULL);
		ut_umm_json_clients(&j, "clients", c, n);
		ut_json_obj_end(&j);
		ut_json_finish(&j);
	} else {
		ret = ut_umm_print_clients(c, n);
	}
	free(c);
	return ret ? umctl_fail("clients", ret) : EX_DONE;
}

static int cmd_cgroups(struct umctl *u, int argc, char **argv)
{
	struct ut_umm_cgroup *c;
	struct ut_json j;
	size_t n;
	int ret;

	if (argc > 1)
		ut_die_usage("cgroups: unexpected argument '%s'", argv[1]);
	ret = ut_umm_cgroups(u->root, &c, &n);
	if (ret) {
		ut_umm_warn(u->root, "cgroups", ret);
		return EX_RUNTIME;
	}
	if (u->json) {
		ut_json_init(&j, stdout);
		ut_json_obj_begin(&j, NULL);
		ut_umm_json_cgroups(&j, "cgroups", c, n);
		ut_json_obj_end(&j);
		ut_json_finish(&j);
	} else {
		ret = ut_umm_print_cgroups(c, n);
	}
	free(c);
	return ret ? umctl_fail("cgroups", ret) : EX_DONE;
}

struct command {
	const char *name;
	int (*fn)(struct umctl *u, int argc, char **argv);
	const char *args;
	const char *help;
};

static const struct command commands[] = {
	{ "status", cmd_status, "",
	  "module counters, nodes and GPUs" },
	{ "clients", cmd_clients, "",
	  "the processes that have /dev/umm open (debugfs, root)" },
	{ "cgroups", cmd_cgroups, "",
	  "the watched memory cgroups (debugfs)" },
	{ "metrics", cmd_metrics, "[FILE]",
	  "Prometheus text, to stdout or FILE (atomic)" },
	{ "knobs", cmd_knobs, "",
	  "the knobs: kind, range, default, floor" },
	{ "get", cmd_get, "[KNOB]",
	  "print one knob, or all of them" },
	{ "set", cmd_set, "[--force] KNOB VALUE",
	  "write a knob (checked first)" },
	{ "inject", cmd_inject, "node N LEVEL|clear|shrink SIZE",
	  "" },
	{ "inject", cmd_inject, "gpu N LEVEL|clear | oom | clear",
	  "raise a level or event (test only)" },
	{ "help", cmd_help, "", "this text" },
};

/* "KNOB: enabled, ..., gpus/gpuN/budget_bytes" from the table, wrapped. */
static void usage_knobs(void)
{
	size_t i, col = 7;

	printf("\nKNOB:");
	for (i = 0; i < ut_nknobs; i++) {
		const char *p = ut_knobs[i].pattern, *hash = strchr(p, '#');
		size_t len = strlen(p) + 2;

		if (col + len > 76) {
			printf("\n ");
			col = 2;
		}
		if (hash)
			printf(" %.*sN%s%s", (int)(hash - p), p, hash + 1,
			       i + 1 < ut_nknobs ? "," : "");
		else
			printf(" %s%s", p, i + 1 < ut_nknobs ? "," : "");
		col += len;
	}
	printf("\n  ('%s knobs': ranges). VALUE: decimal or 0x hex; sizes also\n"
	       "  1.5G (K/M/G/T/P/E, binary); booleans 1/0, y/n, on/off, ...\n"
	       "  A byte knob under its floor needs --force. LEVEL: normal,\n"
	       "  low, medium, critical.\n", ut_progname);
}

static void usage(void)
{
	size_t i;

	printf("Usage: %s [options] COMMAND [ARGS]\n"
	       "Administer umm.ko (/sys/kernel/mm/umm).\n\nCommands:\n",
	       ut_progname);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		printf("  %-7s %-32s %s\n", commands[i].name, commands[i].args,
		       commands[i].help);
	usage_knobs();
	printf("\nOptions:\n"
	       "  -J, --json            machine-readable output\n"
	       "      --sysroot DIR     DIR stands for / (tests with a fake tree)\n"
	       "  -r, --sysfs-root DIR  DIR stands for /sys (the older form;\n"
	       "                        also $%s)\n"
	       "  -h, --help            this text\n"
	       "  -V, --version         the version\n\n"
	       "Exit: 0 done, 1 refused by the system or umm.ko not loaded,\n"
	       "2 bad usage.\n", UT_UMM_ROOT_ENV);
}

static int cmd_help(struct umctl *u, int argc, char **argv)
{
	usage();
	return EX_DONE;
}

/* --sysroot DIR, or its older form --sysfs-root DIR (-r): the /sys to read. */
static void set_root(struct umctl *u, int opt, const char *dir)
{
	u->root = opt == UT_OPT_SYSROOT ? ut_sysroot_sys(dir) : dir;
}

static void parse(int argc, char **argv, struct umctl *u)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "sysroot", required_argument, NULL, UT_OPT_SYSROOT },
		{ "sysfs-root", required_argument, NULL, 'r' },
		UT_OPTS_TAIL,
	};
	int c;

	u->root = ut_umm_root(NULL);
	/* '+': stop at the command, whose arguments keep_args sorts out */
	while ((c = getopt_long(argc, argv, "+Jr:hV", lo, NULL)) != -1) {
		if (c == 'J')
			u->json = true;
		else if (c == 'r' || c == UT_OPT_SYSROOT)
			set_root(u, c, optarg);
		else
			ut_opt_common(c, usage);
	}
}

/*
 * argv[*i] is --sysroot, --sysfs-root or -r with its DIR (after '=' or as
 * the next word): sets u->root, steps *i past it and returns true.
 */
static bool take_root(int argc, char **argv, int *i, struct umctl *u)
{
	const char *a = argv[*i], *v;
	int opt = 'r';

	if (!strncmp(a, "--sysroot", 9)) {
		opt = UT_OPT_SYSROOT;
		v = a + 9;
	} else if (!strncmp(a, "--sysfs-root", 12)) {
		v = a + 12;
	} else if (!strcmp(a, "-r")) {
		v = "";
	} else {
		return false;
	}
	if (*v == '=') {
		set_root(u, opt, v + 1);
		return true;
	}
	if (*v)
		return false;	/* "--sysrootx": a word for the command */
	if (++*i == argc)
		ut_die_usage("%s needs a directory", a);
	set_root(u, opt, argv[*i]);
	return true;
}

/*
 * The command's own words, with --json and --sysroot (--sysfs-root) taken
 * out wherever they are ("umctl status --json"); anything else, "-1"
 * included, is an argument for the command to judge. Returns the new argc.
 */
static int keep_args(int argc, char **argv, struct umctl *u)
{
	int i, n = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-J") || !strcmp(argv[i], "--json"))
			u->json = true;
		else if (!take_root(argc, argv, &i, u))
			argv[n++] = argv[i];
	}
	return n;
}

int main(int argc, char **argv)
{
	struct umctl u = { 0 };
	size_t i;

	ut_set_progname(argv);
	parse(argc, argv, &u);
	if (optind >= argc)
		ut_die_usage("no command (status, clients, cgroups, metrics, knobs, get, set, inject)");
	argc = keep_args(argc - optind, argv + optind, &u);
	argv += optind;
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[0], commands[i].name))
			return commands[i].fn(&u, argc, argv);
	ut_die_usage("unknown command '%s'", argv[0]);
}
