/* SPDX-License-Identifier: MIT */
/*
 * ut.h - small helpers shared by um's command-line tools and examples.
 *
 * Option values (sizes with K/M/G suffixes, bounded numbers), human-readable
 * sizes, a progress line for terminals, a streaming JSON writer and thin
 * wrappers over libsmartcols tables. Parsers return 0 or -errno and never
 * print: the tool decides how to report a bad value (ut_die_usage helps).
 */
#ifndef UT_H
#define UT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* ---- Option values ---------------------------------------------------- */

/*
 * "4096", "64K", "64KiB", "1.5G", "2MB" (all binary: K = 1024), optional
 * spaces before the suffix, "B" alone allowed. -EINVAL on junk, -ERANGE on
 * overflow. Fractions are rounded down to whole bytes.
 */
int ut_parse_size(const char *s, uint64_t *out);
/* Decimal unsigned integer in [min, max]. -EINVAL junk, -ERANGE outside. */
int ut_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Finite double in [min, max]. */
int ut_parse_double(const char *s, double min, double max, double *out);
/* A size as ut_parse_size, then in [min, max] (-ERANGE outside). */
int ut_parse_size_range(const char *s, uint64_t min, uint64_t max,
			uint64_t *out);
/* "sim", "cuda" or "auto": the UM_BACKEND_* id, or -EINVAL. */
int ut_parse_backend(const char *s);

/* Program name for messages (set from argv[0] by ut_set_progname). */
extern const char *ut_progname;
void ut_set_progname(const char *argv0);
/* "prog: message\nTry 'prog --help' for more information.\n", exit(2). */
void ut_die_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
/*
 * "Try 'prog --help' for more information.\n", exit(2): for getopt's '?',
 * which has already said what was wrong.
 */
void ut_die_try_help(void) __attribute__((noreturn));
/* "prog: message\n" on stderr. */
void ut_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- Human sizes and times ------------------------------------------- */

#define UT_SIZE_STR 24
/* "256 B", "4 KiB", "1.5 GiB"; returns buf. */
char *ut_size_str(uint64_t bytes, char buf[UT_SIZE_STR]);
/* Monotonic clock in nanoseconds. */
uint64_t ut_now_ns(void);
/* Median of n values (sorts v in place); 0 when n == 0. */
double ut_median(double *v, size_t n);

/* ---- Progress line (stderr, only when stdout and stderr are TTYs) ----- */

struct ut_progress {
	bool on;
	uint64_t total;
	uint64_t last_ns;
};

void ut_progress_init(struct ut_progress *p, uint64_t total, bool wanted);
/* Redraws at most ~10 times a second (always at done == total). */
void ut_progress_update(struct ut_progress *p, uint64_t done,
			const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Clears the line. */
void ut_progress_end(struct ut_progress *p);

/* ---- JSON writer ------------------------------------------------------ */

#define UT_JSON_MAX_DEPTH 32

struct ut_json {
	FILE *f;
	int depth;
	bool first[UT_JSON_MAX_DEPTH];
	bool in_array[UT_JSON_MAX_DEPTH];
};

/*
 * Pretty-printed, two-space indent. Every value call takes a key, which must
 * be NULL inside arrays and at the top level and non-NULL inside objects.
 */
void ut_json_init(struct ut_json *j, FILE *f);
void ut_json_obj_begin(struct ut_json *j, const char *key);
void ut_json_obj_end(struct ut_json *j);
void ut_json_arr_begin(struct ut_json *j, const char *key);
void ut_json_arr_end(struct ut_json *j);
void ut_json_str(struct ut_json *j, const char *key, const char *val);
void ut_json_u64(struct ut_json *j, const char *key, uint64_t val);
void ut_json_i64(struct ut_json *j, const char *key, int64_t val);
/* Non-finite values are written as null. */
void ut_json_dbl(struct ut_json *j, const char *key, double val);
void ut_json_bool(struct ut_json *j, const char *key, bool val);
void ut_json_null(struct ut_json *j, const char *key);
/* Ends the document with a newline. */
void ut_json_finish(struct ut_json *j);

/* ---- Tables (libsmartcols) -------------------------------------------- */

struct libscols_table;

/* A table with the given column names; right-aligned columns marked. */
struct libscols_table *ut_table_new(const char *const *cols, int ncols,
				    unsigned int right_mask);
/* Appends a row of ncols strings (NULL = empty). Returns 0 or -errno. */
int ut_table_row(struct libscols_table *tb, const char *const *cells);
int ut_table_rowf(struct libscols_table *tb, int ncols, ...);
/* Prints to stdout and frees the table. */
int ut_table_print(struct libscols_table *tb);

#endif /* UT_H */
