// SPDX-License-Identifier: MIT
/*
 * opt.c - option value parsers and usage messages for um's tools.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "um.h"
#include "ut.h"

const char *ut_progname = "um";

void ut_set_progname(char **argv)
{
	const char *slash;

	if (!argv[0] || !*argv[0])
		return;
	slash = strrchr(argv[0], '/');
	ut_progname = slash ? slash + 1 : argv[0];
	/* getopt's own messages name argv[0]: the short name there too */
	argv[0] = (char *)ut_progname;
}

static void vwarn(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", ut_progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void ut_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
}

void ut_die_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vwarn(fmt, ap);
	va_end(ap);
	ut_die_try_help();
}

void ut_die_try_help(void)
{
	fprintf(stderr, "Try '%s --help' for more information.\n",
		ut_progname);
	exit(2);
}

#define UT_STR(x)	#x
#define UT_XSTR(x)	UT_STR(x)

const char *ut_version(void)
{
#ifdef UM_RELEASE	/* the VERSION file, where the build passes it */
	return UM_RELEASE;
#else
	return UT_XSTR(UM_VERSION_MAJOR) "." UT_XSTR(UM_VERSION_MINOR);
#endif
}

void ut_opt_common(int c, void (*usage)(void))
{
	switch (c) {
	case 'h':
		usage();
		exit(0);
	case 'V':
		printf("%s (um) %s\n", ut_progname, ut_version());
		exit(0);
	default:
		ut_die_try_help();
	}
}

const char *ut_sysroot_sys(const char *dir)
{
	static char sys[4096];

	if ((size_t)snprintf(sys, sizeof(sys), "%s/sys", dir) >= sizeof(sys))
		ut_die_usage("--sysroot: path too long");
	return sys;
}

static int digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return 99;
}

static bool is_hex(const char *s)
{
	return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

/* By hand: strtoull would take "-1", " 5", "+5" and octal "010". */
int ut_parse_num(const char *s, uint64_t *out)
{
	unsigned int base = 10;
	const char *p;
	uint64_t v = 0;

	if (!s)
		return -EINVAL;
	if (is_hex(s)) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -EINVAL;
	for (p = s; *p; p++)
		if (digit(*p) >= (int)base)
			return -EINVAL;
	for (p = s; *p; p++) {
		unsigned int d = (unsigned int)digit(*p);

		if (v > (UINT64_MAX - d) / base)
			return -ERANGE;
		v = v * base + d;
	}
	*out = v;
	return 0;
}

int ut_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int ret = ut_parse_num(s, &v);

	if (ret)
		return ret;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ut_parse_bool(const char *s)
{
	static const char *const yes[] = { "1", "y", "yes", "on", "true" };
	static const char *const no[] = { "0", "n", "no", "off", "false" };
	uint64_t v;
	size_t i;

	if (!s)
		return -EINVAL;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i]))
			return 1;
		if (!strcasecmp(s, no[i]))
			return 0;
	}
	/* a number of the knobs' grammar (0x1, 00) that is 0 or 1, as umm.ko */
	if (!ut_parse_num(s, &v) && v <= 1)
		return (int)v;
	return -EINVAL;
}

int ut_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || end == s || isnan(v))
		return -EINVAL;
	if (errno == ERANGE || isinf(v) || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

static int suffix_shift(const char *s, unsigned int *shift)
{
	static const char units[] = "KMGTPE";
	const char *u;

	while (*s == ' ')
		s++;
	if (!*s || !strcmp(s, "B")) {
		*shift = 0;
		return 0;
	}
	u = strchr(units, *s >= 'a' ? *s - 'a' + 'A' : *s);
	if (!u)
		return -EINVAL;
	s++;
	if (*s && strcmp(s, "B") && strcmp(s, "iB"))
		return -EINVAL;
	*shift = 10 * (unsigned int)(u - units + 1);
	return 0;
}

int ut_parse_size(const char *s, uint64_t *out)
{
	uint64_t whole = 0, frac = 0, frac_div = 1, v;
	unsigned int shift;
	const char *p = s;

	if (!s || *p < '0' || *p > '9')
		return -EINVAL;
	if (is_hex(s))
		return ut_parse_num(s, out);
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');

		if (whole > (UINT64_MAX - d) / 10)
			return -ERANGE;
		whole = whole * 10 + d;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (frac_div >= 1000000000ull)
				continue;	/* finer than a byte */
			frac = frac * 10 + (uint64_t)(*p - '0');
			frac_div *= 10;
		}
	}
	if (suffix_shift(p, &shift))
		return -EINVAL;
	if (shift >= 64 || (shift && whole > (UINT64_MAX >> shift)))
		return -ERANGE;
	v = whole << shift;
	if (frac) {
		/* frac/frac_div of one unit, without overflowing. */
		uint64_t unit = 1ull << shift;
		uint64_t add = unit / frac_div * frac +
			       unit % frac_div * frac / frac_div;

		if (v > UINT64_MAX - add)
			return -ERANGE;
		v += add;
	}
	*out = v;
	return 0;
}

int ut_parse_size_range(const char *s, uint64_t min, uint64_t max,
			uint64_t *out)
{
	uint64_t v;
	int ret = ut_parse_size(s, &v);

	if (ret)
		return ret;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int ut_parse_backend(const char *s)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "sim"))
		return UM_BACKEND_SIM;
	if (!strcmp(s, "cuda"))
		return UM_BACKEND_CUDA;
	if (!strcmp(s, "auto"))
		return UM_BACKEND_AUTO;
	return -EINVAL;
}
