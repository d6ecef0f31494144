// SPDX-License-Identifier: MIT
/*
 * knob.c - umm.ko's knobs (the rows of knobs.h) as a table: names, the
 * grammar of each kind, the listing that the fake tree and the check
 * against kmod/sysfs.c read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ut.h"

#define UT_KNOB_G(n, kind, mn, mx, def, fl)				\
	{ #n, #n, UT_KNOB_GLOBAL, UT_KNOB_##kind, UT_UMM_G_##n,		\
	  mn, mx, def, fl },
#define UT_KNOB_N(n, kind, mn, mx, def, fl)				\
	{ "nodes/node#/" #n, #n, UT_KNOB_NODE, UT_KNOB_##kind,		\
	  UT_UMM_N_##n, mn, mx, def, fl },
#define UT_KNOB_GPU(n, kind, mn, mx, def, fl)				\
	{ "gpus/gpu#/" #n, #n, UT_KNOB_GPU, UT_KNOB_##kind,		\
	  UT_UMM_GPU_##n, mn, mx, def, fl },
#define UT_KNOB_CG(n, kind, mn, mx, def, fl)				\
	{ "cgroup/" #n, #n, UT_KNOB_CGROUP, UT_KNOB_##kind,		\
	  UT_UMM_CG_##n, mn, mx, def, fl },

const struct ut_knob ut_knobs[] = {
	UT_KNOBS_GLOBAL(UT_KNOB_G)
	UT_KNOBS_NODE(UT_KNOB_N)
	UT_KNOBS_GPU(UT_KNOB_GPU)
	UT_KNOBS_CGROUP(UT_KNOB_CG)
};
const size_t ut_nknobs = sizeof(ut_knobs) / sizeof(ut_knobs[0]);

/* name against pattern, '#' matching a decimal id (into *id). */
static bool match(const char *pat, const char *name, unsigned int *id)
{
	uint64_t v = 0;

	for (; *pat; pat++) {
		if (*pat != '#') {
			if (*name++ != *pat)
				return false;
			continue;
		}
		if (*name < '0' || *name > '9')
			return false;
		for (v = 0; *name >= '0' && *name <= '9' && v < 100000; name++)
			v = v * 10 + (uint64_t)(*name - '0');
		*id = (unsigned int)v;
	}
	return !*name;
}

const struct ut_knob *ut_knob_find(const char *name, unsigned int *id)
{
	size_t i;

	for (i = 0; name && i < ut_nknobs; i++)
		if (match(ut_knobs[i].pattern, name, id))
			return &ut_knobs[i];
	return NULL;
}

int ut_knob_path(const struct ut_knob *k, unsigned int id, char *buf,
		 size_t len)
{
	const char *hash = strchr(k->pattern, '#');
	int n;

	if (!hash)
		n = snprintf(buf, len, "%s", k->pattern);
	else
		n = snprintf(buf, len, "%.*s%u%s", (int)(hash - k->pattern),
			     k->pattern, id, hash + 1);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

const char *ut_knob_kind_name(enum ut_knob_kind kind)
{
	static const char *const names[] = {
		[UT_KNOB_BOOL] = "bool", [UT_KNOB_NUM] = "num",
		[UT_KNOB_WM] = "wm", [UT_KNOB_SIZE] = "size",
	};

	return names[kind];
}

int ut_knob_parse(const struct ut_knob *k, const char *s, uint64_t *out)
{
	uint64_t v;
	int ret;

	switch (k->kind) {
	case UT_KNOB_BOOL:
		ret = ut_parse_bool(s);
		if (ret < 0)
			return ret;
		*out = (uint64_t)ret;
		return 0;
	case UT_KNOB_SIZE:
		ret = ut_parse_size_range(s, k->min, k->max, &v);
		if (ret)
			return ret;
		if (v && v < k->floor)
			return -EDOM;
		*out = v;
		return 0;
	default:
		return ut_parse_u64(s, k->min, k->max, out);
	}
}

void ut_knobs_list(FILE *f)
{
	size_t i;

	fprintf(f, "# knob kind min max default floor\n");
	for (i = 0; i < ut_nknobs; i++) {
		const struct ut_knob *k = &ut_knobs[i];
		const char *hash = strchr(k->pattern, '#');
		int pre = (int)(hash ? (size_t)(hash - k->pattern) :
				       strlen(k->pattern));

		fprintf(f, "%.*s%s%s %s %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRIu64 "\n", pre, k->pattern, hash ? "N" : "",
			hash ? hash + 1 : "", ut_knob_kind_name(k->kind),
			k->min, k->max, k->def, k->floor);
	}
}
