// SPDX-License-Identifier: MIT
/*
 * json.c - a streaming JSON writer: enough for reports, strict on nesting.
 */
#include <math.h>
#include <stdio.h>

#include "ut.h"

void ut_json_init(struct ut_json *j, FILE *f)
{
	j->f = f;
	j->line = false;
	j->depth = 0;
	j->first[0] = true;
	j->in_array[0] = true;	/* the top level takes no key */
}

void ut_json_init_line(struct ut_json *j, FILE *f)
{
	ut_json_init(j, f);
	j->line = true;
}

/* Newline and indent before a member or a closing bracket (pretty only). */
static void indent(struct ut_json *j)
{
	int i;

	if (j->line)
		return;
	fputc('\n', j->f);
	for (i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

static void put_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Separator, newline, indent and key before any value. */
static void value_prefix(struct ut_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	if (j->depth)
		indent(j);
	j->first[j->depth] = false;
	if (!j->in_array[j->depth]) {
		put_string(j->f, key ? key : "");
		fputs(j->line ? ":" : ": ", j->f);
	}
}

static void open_scope(struct ut_json *j, const char *key, char c, bool arr)
{
	value_prefix(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < UT_JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
	j->in_array[j->depth] = arr;
}

static void close_scope(struct ut_json *j, char c)
{
	bool empty = j->first[j->depth];

	if (j->depth)
		j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void ut_json_obj_begin(struct ut_json *j, const char *key)
{
	open_scope(j, key, '{', false);
}

void ut_json_obj_end(struct ut_json *j)
{
	close_scope(j, '}');
}

void ut_json_arr_begin(struct ut_json *j, const char *key)
{
	open_scope(j, key, '[', true);
}

void ut_json_arr_end(struct ut_json *j)
{
	close_scope(j, ']');
}

void ut_json_str(struct ut_json *j, const char *key, const char *val)
{
	value_prefix(j, key);
	if (val)
		put_string(j->f, val);
	else
		fputs("null", j->f);
}

void ut_json_u64(struct ut_json *j, const char *key, uint64_t val)
{
	value_prefix(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void ut_json_i64(struct ut_json *j, const char *key, int64_t val)
{
	value_prefix(j, key);
	fprintf(j->f, "%lld", (long long)val);
}

void ut_json_dbl(struct ut_json *j, const char *key, double val)
{
	value_prefix(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.9g", val);
	else
		fputs("null", j->f);
}

void ut_json_fixed(struct ut_json *j, const char *key, double val,
		   int decimals)
{
	value_prefix(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.*f", decimals, val);
	else
		fputs("null", j->f);
}

void ut_json_bool(struct ut_json *j, const char *key, bool val)
{
	value_prefix(j, key);
	fputs(val ? "true" : "false", j->f);
}

void ut_json_null(struct ut_json *j, const char *key)
{
	value_prefix(j, key);
	fputs("null", j->f);
}

void ut_json_finish(struct ut_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}
