// SPDX-License-Identifier: MIT
/*
 * prom.c - the Prometheus text exposition format (version 0.0.4), as
 * node_exporter's textfile collector and promtool read it: a family's
 * "# HELP" and "# TYPE" lines, then all its samples together.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ut.h"

void ut_prom_family(FILE *f, const char *name, const char *type,
		    const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Bytes of the UTF-8 sequence at s, 0 when it is not a valid one. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;

	if (*s < 0x80)
		return 1;
	if (*s >= 0xc2 && *s <= 0xdf)
		n = 2;
	else if (*s >= 0xe0 && *s <= 0xef)
		n = 3;
	else if (*s >= 0xf0 && *s <= 0xf4)
		n = 4;
	else
		return 0;
	for (i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong forms, UTF-16 surrogates, past U+10FFFF */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

/* What c becomes inside a label value; NULL when it passes as it is. */
static const char *escape_of(unsigned char c, char hex[8])
{
	switch (c) {
	case '\\':
		return "\\\\";
	case '"':
		return "\\\"";
	case '\n':
		return "\\n";
	default:
		if (c >= 0x20 && c != 0x7f)
			return NULL;
		/* other control bytes: visible, as the text \xNN */
		snprintf(hex, 8, "\\\\x%02x", c);
		return hex;
	}
}

/* k bytes of p at buf + *at, always leaving room for the final NUL. */
static int put(char *buf, size_t len, size_t *at, const void *p, size_t k)
{
	if (*at + k >= len)
		return -ENOSPC;
	memcpy(buf + *at, p, k);
	*at += k;
	return 0;
}

/* val's bytes as the format wants them, from buf + *at on. */
static int put_value(char *buf, size_t len, size_t *at, const char *val)
{
	const unsigned char *s = (const unsigned char *)val;
	const char *esc;
	char hex[8];
	size_t n;
	int ret = 0;

	for (; *s && !ret; s += n) {
		n = utf8_len(s);
		if (!n) {
			/* not UTF-8, which the format requires */
			snprintf(hex, sizeof(hex), "\\\\x%02x", *s);
			ret = put(buf, len, at, hex, strlen(hex));
			n = 1;
		} else if (n == 1 && (esc = escape_of(*s, hex))) {
			ret = put(buf, len, at, esc, strlen(esc));
		} else {
			ret = put(buf, len, at, s, n);
		}
	}
	return ret;
}

int ut_prom_label(char *buf, size_t len, const char *key, const char *val)
{
	size_t start = strlen(buf), at = start;
	int ret = 0;

	if (at)
		ret = put(buf, len, &at, ",", 1);
	if (!ret)
		ret = put(buf, len, &at, key, strlen(key));
	if (!ret)
		ret = put(buf, len, &at, "=\"", 2);
	if (!ret)
		ret = put_value(buf, len, &at, val);
	if (!ret)
		ret = put(buf, len, &at, "\"", 1);
	buf[ret ? start : at] = '\0';	/* all of it or nothing */
	return ret;
}

static void sample_name(FILE *f, const char *name, const char *labels)
{
	if (labels && *labels)
		fprintf(f, "%s{%s} ", name, labels);
	else
		fprintf(f, "%s ", name);
}

void ut_prom_u64(FILE *f, const char *name, const char *labels, uint64_t v)
{
	sample_name(f, name, labels);
	fprintf(f, "%" PRIu64 "\n", v);
}

void ut_prom_dbl(FILE *f, const char *name, const char *labels, double v)
{
	sample_name(f, name, labels);
	if (isnan(v))
		fputs("NaN\n", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf\n" : "-Inf\n", f);
	else
		fprintf(f, "%.15g\n", v);
}
