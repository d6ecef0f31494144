// SPDX-License-Identifier: MIT
/*
 * util.c - formatting and logging shared by umbench's sections.
 */
#include <stdio.h>

#include "bench.h"
#include "um.h"

char *bench_time_str(double ns, char buf[UT_SIZE_STR])
{
	if (ns < 1e3)
		snprintf(buf, UT_SIZE_STR, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, UT_SIZE_STR, "%.1f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, UT_SIZE_STR, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, UT_SIZE_STR, "%.2f s", ns / 1e9);
	return buf;
}

const char *bench_backend_name(int id)
{
	switch (id) {
	case UM_BACKEND_SIM:
		return "sim";
	case UM_BACKEND_CUDA:
		return "cuda";
	default:
		return "auto";
	}
}

void bench_log(void *arg, int level, const char *msg)
{
	fprintf(stderr, "%s: libum: %s\n", ut_progname, msg);
}
