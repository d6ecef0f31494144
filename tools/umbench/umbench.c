// SPDX-License-Identifier: MIT
/*
 * umbench - libum's benchmarks: the pinned pool against malloc and against
 * raw pinned allocation, migration against memcpy, and (--gpu, from the
 * plugin umbench-gpu.so, gpu.h) the GPU benchmarks. Ratios are measured side
 * by side in one run. See umbench(1).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "gpu.h"
#include "um.h"

struct section {
	const char *name;
	int (*fn)(const struct bench_opts *o);
	const char *help;
	bool not_in_all;	/* long: run only when named */
};

static const struct section sections[] = {
	{ "pool", bench_pool,
	  "pinned pool alloc+free vs malloc+free vs raw pinned allocation",
	  false },
	{ "migrate", bench_migrate,
	  "evict+restore through libum vs memcpy of the same bytes", false },
	{ "suballoc", bench_suballoc,
	  "4 KiB blocks of a sub-allocator vs a region each", false },
	{ "scale", bench_scale,
	  "per-call cost at 64 .. 65536 regions (not in all; also --scale)",
	  true },
};

#define NSECTIONS (sizeof(sections) / sizeof(sections[0]))

static const uint64_t default_sizes[] = {
	256, 4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20,
};

static void usage(void)
{
	size_t i;

	printf("Usage: %s [SECTION] [options]\n"
	       "       %s --gpu [GPU options]\n\n"
	       "Benchmark libum; every ratio is measured side by side in one "
	       "run.\n\nSections (default: all):\n", ut_progname,
	       ut_progname);
	for (i = 0; i < NSECTIONS; i++)
		printf("  %-9s %s\n", sections[i].name, sections[i].help);
	printf("  all       every section above\n"
	       "  help      this text\n\n"
"Options:\n"
"  -J, --json           print one JSON document\n"
"      --quick          short runs (for tests; figures are rougher)\n"
"  -r, --rounds N       measurement rounds, medians reported (default 15)\n"
"      --backend NAME   sim, cuda or auto (default sim)\n"
"      --sizes LIST     pool sizes, comma-separated (default\n"
"                       256,4K,64K,1M,16M,64M)\n"
"      --region-bytes SIZE  migrate: bytes per region (default 64M)\n"
"      --regions N      migrate: regions (default 4)\n"
"      --scale          run the scale section (same as SECTION scale)\n"
"      --scale-max N    scale: stop at N regions (default 65536; --quick\n"
"                       measures 64 and 512 only)\n"
"      --gpu            run the GPU benchmarks instead (umbench-gpu.so)\n"
"  -q, --quiet          no progress bar\n"
"  -h, --help           show this help\n"
"  -V, --version        show the version\n\n"
"Exit status: 0 every target met, 1 a target missed or a run failed,\n"
"2 bad usage.\n");
}

static void parse_sizes(struct bench_opts *o, const char *list)
{
	char *copy = strdup(list), *tok, *save = NULL;

	if (!copy)
		ut_die_usage("out of memory");
	o->nsizes = 0;
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		uint64_t v;

		if (o->nsizes == BENCH_MAX_SIZES)
			ut_die_usage("--sizes: at most %d sizes",
				     BENCH_MAX_SIZES);
		if (ut_parse_size(tok, &v) || !v || v > (1ull << 34))
			ut_die_usage("invalid size '%s' in --sizes", tok);
		o->sizes[o->nsizes++] = v;
	}
	free(copy);
	if (!o->nsizes)
		ut_die_usage("--sizes needs at least one size");
}

static const struct section *section_named(const char *name)
{
	size_t i;

	for (i = 0; i < NSECTIONS; i++)
		if (!strcmp(name, sections[i].name))
			return &sections[i];
	return NULL;
}

static int has_gpu_flag(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--gpu"))
			return 1;
	}
	return 0;
}

static const struct section *parse_args(int argc, char **argv,
					struct bench_opts *o)
{
	enum { OPT_QUICK = 256, OPT_BACKEND, OPT_SIZES, OPT_RBYTES,
	       OPT_REGIONS, OPT_SCALE, OPT_SCALE_MAX };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "quick", no_argument, NULL, OPT_QUICK },
		{ "rounds", required_argument, NULL, 'r' },
		{ "backend", required_argument, NULL, OPT_BACKEND },
		{ "sizes", required_argument, NULL, OPT_SIZES },
		{ "region-bytes", required_argument, NULL, OPT_RBYTES },
		{ "regions", required_argument, NULL, OPT_REGIONS },
		{ "scale", no_argument, NULL, OPT_SCALE },
		{ "scale-max", required_argument, NULL, OPT_SCALE_MAX },
		{ "quiet", no_argument, NULL, 'q' },
		UT_OPTS_TAIL,
	};
	bool rounds_set = false, rbytes_set = false, regions_set = false;
	const struct section *only = NULL;
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "Jr:qhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'J':
			o->json = true;
			break;
		case OPT_QUICK:
			o->quick = true;
			break;
		case 'r':
			if (ut_parse_u64(optarg, 1, 10000, &v))
				ut_die_usage("invalid --rounds '%s': need 1.."
					     "10000", optarg);
			o->rounds = (unsigned int)v;
			rounds_set = true;
			break;
		case OPT_BACKEND:
			o->backend = ut_parse_backend(optarg);
			if (o->backend < 0)
				ut_die_usage("invalid --backend '%s': need sim, "
					     "cuda or auto", optarg);
			break;
		case OPT_SIZES:
			parse_sizes(o, optarg);
			break;
		case OPT_RBYTES:
			if (ut_parse_size_range(optarg, 4096, 1ull << 36, &v))
				ut_die_usage("invalid --region-bytes '%s': need "
					     "4K..64G", optarg);
			o->region_bytes = v;
			rbytes_set = true;
			break;
		case OPT_REGIONS:
			if (ut_parse_u64(optarg, 1, 4096, &v))
				ut_die_usage("invalid --regions '%s': need "
					     "1..4096", optarg);
			o->regions = (unsigned int)v;
			regions_set = true;
			break;
		case OPT_SCALE:
			only = section_named("scale");
			break;
		case OPT_SCALE_MAX:
			if (ut_parse_u64(optarg, 64, 1u << 20, &v))
				ut_die_usage("invalid --scale-max '%s': need "
					     "64..1048576", optarg);
			o->scale_max = (unsigned int)v;
			break;
		case 'q':
			o->quiet = true;
			break;
		default:
			ut_opt_common(c, usage);
		}
	}
	if (o->quick) {
		if (!rounds_set)
			o->rounds = 3;
		if (!rbytes_set)
			o->region_bytes = 8ull << 20;
		if (!regions_set)
			o->regions = 2;
	}
	if (optind < argc) {
		const char *name = argv[optind++];

		if (!strcmp(name, "help")) {
			usage();
			exit(0);
		}
		const struct section *named = section_named(name);

		if (!named && strcmp(name, "all"))
			ut_die_usage("unknown section '%s'", name);
		if (only && named != only)
			ut_die_usage("--scale and section '%s' both given",
				     name);
		only = named;
	}
	if (optind < argc)
		ut_die_usage("unexpected argument '%s'", argv[optind]);
	return only;
}

/* --gpu: the GPU benchmarks are umbench-gpu.so's (gpu.h). */
static int run_gpu(int argc, char **argv)
{
	const struct umbench_gpu *gpu;
	const char *why;

	gpu = umbench_gpu_load(&why);
	if (!gpu) {
		ut_warn("--gpu: cannot load the GPU benchmarks: %s", why);
		return 2;
	}
	return gpu->main(argc, argv);
}

int main(int argc, char **argv)
{
	struct bench_opts o = {
		.backend = UM_BACKEND_SIM,
		.rounds = 15,
		.region_bytes = 64ull << 20,
		.regions = 4,
	};
	const struct section *only;
	struct ut_json j;
	int rc, worst = 0;
	size_t i;

	ut_set_progname(argv);
	if (has_gpu_flag(argc, argv))
		return run_gpu(argc, argv);
	memcpy(o.sizes, default_sizes, sizeof(default_sizes));
	o.nsizes = sizeof(default_sizes) / sizeof(default_sizes[0]);
	only = parse_args(argc, argv, &o);
	if (o.json) {
		ut_json_init(&j, stdout);
		o.j = &j;
		ut_json_obj_begin(&j, NULL);
		ut_json_str(&j, "tool", "umbench");
		ut_json_str(&j, "version", ut_version());
		ut_json_bool(&j, "quick", o.quick);
	}
	for (i = 0; i < NSECTIONS; i++) {
		if (only ? only != &sections[i] : sections[i].not_in_all)
			continue;
		rc = sections[i].fn(&o);
		if (rc < 0 || rc > worst)
			worst = 1;
		if (rc < 0 && o.json)
			ut_json_null(&j, sections[i].name);
	}
	if (o.json) {
		ut_json_bool(&j, "pass", worst == 0);
		ut_json_obj_end(&j);
		ut_json_finish(&j);
	}
	return worst;
}
