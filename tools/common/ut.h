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

#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "knobs.h"

/* ---- Option values ---------------------------------------------------- */

/*
 * The grammar of umm.ko's files, which every tool's options share
 * (Documentation/ABI/testing/sysfs-kernel-mm-umm, "Values"): a number is
 * decimal digits ("010" is ten), or "0x"/"0X" and hex digits; no sign, no
 * blanks. -EINVAL on anything else, -ERANGE past UINT64_MAX.
 */
int ut_parse_num(const char *s, uint64_t *out);
/* A number (ut_parse_num) in [min, max]. -EINVAL junk, -ERANGE outside. */
int ut_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * A size in bytes: a number as ut_parse_num, or decimal with a fraction and
 * a binary suffix: "64K", "64KiB", "1.5G", "2MB" (K = 1024, up to E),
 * optional spaces before the suffix, "B" alone allowed. Fractions are
 * rounded down to whole bytes ("1.5K" is 1536, "0.3K" 307). Hex takes no
 * suffix. -EINVAL on junk, -ERANGE on overflow.
 */
int ut_parse_size(const char *s, uint64_t *out);
/*
 * A boolean as umm.ko's enabled takes it: 1, y, yes, on, true (1) or 0,
 * n, no, off, false (0), in any case, the whole word; or a number of
 * ut_parse_num()'s grammar that is 0 or 1 ("0x1" is 1, "10" is refused).
 * Returns 1, 0 or -EINVAL.
 */
int ut_parse_bool(const char *s);
/* Finite double in [min, max]. */
int ut_parse_double(const char *s, double min, double max, double *out);
/* A size as ut_parse_size, then in [min, max] (-ERANGE outside). */
int ut_parse_size_range(const char *s, uint64_t min, uint64_t max,
			uint64_t *out);
/* "sim", "cuda" or "auto": the UM_BACKEND_* id, or -EINVAL. */
int ut_parse_backend(const char *s);

/* Program name for messages (set from argv[0] by ut_set_progname). */
extern const char *ut_progname;
void ut_set_progname(char **argv);
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

/* um's release (VERSION, else um.h's MAJOR.MINOR): what -V prints. */
const char *ut_version(void);
/*
 * The end of every tool's getopt switch (default: ut_opt_common(c, usage)):
 * 'h' prints usage() and exits 0, 'V' prints "prog (um) VERSION" and exits
 * 0, anything else is an option getopt has already complained about (exit
 * 2). UT_OPTS_TAIL ends the long option table to match.
 */
void ut_opt_common(int c, void (*usage)(void)) __attribute__((noreturn));
#define UT_OPTS_TAIL							\
	{ "help", no_argument, NULL, 'h' },				\
	{ "version", no_argument, NULL, 'V' },				\
	{ NULL, 0, NULL, 0 }
/*
 * --sysroot DIR, in every tool that reads /sys or /proc: DIR stands for /,
 * as in util-linux. The tools' older --sysfs-root DIR (DIR stands for /sys)
 * stays as an alias. Returns "DIR/sys" (a static buffer).
 */
#define UT_OPT_SYSROOT	0x5359	/* getopt id of --sysroot */
const char *ut_sysroot_sys(const char *dir);

/* ---- Human sizes, times and small files -------------------------------- */

#define UT_SIZE_STR 24
/* "256 B", "4 KiB", "1.5 GiB"; returns buf. */
char *ut_size_str(uint64_t bytes, char buf[UT_SIZE_STR]);
/* Monotonic clock in nanoseconds. */
uint64_t ut_now_ns(void);
/* Median of n values (sorts v in place); 0 when n == 0. */
double ut_median(double *v, size_t n);
/*
 * A small file (a /sys or /proc one) into buf, NUL-terminated, at most
 * len - 1 bytes with one read(): sysfs hands a file over whole in one. 0 or
 * -errno.
 */
int ut_read_file(const char *path, char *buf, size_t len);

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
	bool line;		/* the whole document on one line */
	int depth;
	bool first[UT_JSON_MAX_DEPTH];
	bool in_array[UT_JSON_MAX_DEPTH];
};

/*
 * Pretty-printed, two-space indent. Every value call takes a key, which must
 * be NULL inside arrays and at the top level and non-NULL inside objects.
 */
void ut_json_init(struct ut_json *j, FILE *f);
/* The same, on one line without blanks: for newline-delimited streams. */
void ut_json_init_line(struct ut_json *j, FILE *f);
void ut_json_obj_begin(struct ut_json *j, const char *key);
void ut_json_obj_end(struct ut_json *j);
void ut_json_arr_begin(struct ut_json *j, const char *key);
void ut_json_arr_end(struct ut_json *j);
void ut_json_str(struct ut_json *j, const char *key, const char *val);
void ut_json_u64(struct ut_json *j, const char *key, uint64_t val);
void ut_json_i64(struct ut_json *j, const char *key, int64_t val);
/* Non-finite values are written as null. */
void ut_json_dbl(struct ut_json *j, const char *key, double val);
/* With decimals digits after the point (fixed-width figures); the same. */
void ut_json_fixed(struct ut_json *j, const char *key, double val,
		   int decimals);
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
/* The same with the cells as arguments (umm_show.c, for both backends). */
int ut_table_rowf(struct libscols_table *tb, int ncols, ...);
int ut_table_ncols(const struct libscols_table *tb);
/* Prints to stdout and frees the table. */
int ut_table_print(struct libscols_table *tb);
/* Frees a table without printing it. */
void ut_table_free(struct libscols_table *tb);
/*
 * Prints tb as ut_table_print, in at most width columns (0: any): whole
 * columns are hidden, the lowest prio[i] first (the rightmost of equals),
 * until the rest fits or one is left; a cell is never cut. The names of
 * the hidden ones are appended to hidden (hlen bytes, a blank between
 * them). Frees the table.
 */
int ut_table_print_fit(struct libscols_table *tb, int width,
		       const unsigned char *prio, char *hidden, size_t hlen);
/* For table_fit.c, from each table implementation: column i's widest cell
 * (its header included), its header, and hiding it from the print. */
int ut_table_col_width(struct libscols_table *tb, int i);
const char *ut_table_col_name(struct libscols_table *tb, int i);
void ut_table_col_hide(struct libscols_table *tb, int i);

/* ---- umm.ko's knobs (knob.c, the rows in knobs.h) -------------------- */

enum ut_knob_kind { UT_KNOB_BOOL, UT_KNOB_NUM, UT_KNOB_WM, UT_KNOB_SIZE };
enum ut_knob_dir { UT_KNOB_GLOBAL, UT_KNOB_NODE, UT_KNOB_GPU, UT_KNOB_CGROUP };

struct ut_knob {
	const char *pattern;	/* "nodes/node#/low_bp": '#' for an id */
	const char *name;	/* the file's own name: "low_bp" */
	enum ut_knob_dir dir;
	enum ut_knob_kind kind;
	int field;		/* index in ut_umm's g[] or cg[], a node's/GPU's v[] */
	uint64_t min, max, def, floor;
};

extern const struct ut_knob ut_knobs[];
extern const size_t ut_nknobs;

/* The knob NAME is ("gpus/gpu3/budget_bytes": *id = 3), or NULL. */
const struct ut_knob *ut_knob_find(const char *name, unsigned int *id);
/* Its file under ROOT/kernel/mm/umm for id; -ENAMETOOLONG. */
int ut_knob_path(const struct ut_knob *k, unsigned int id, char *buf,
		 size_t len);
/* "bool", "num", "wm", "size". */
const char *ut_knob_kind_name(enum ut_knob_kind kind);
/*
 * A value for knob k in the grammar of its kind: 0 with *out, -EINVAL when
 * it is not one, -ERANGE outside min..max, -EDOM for a size under the floor
 * (not 0).
 */
int ut_knob_parse(const struct ut_knob *k, const char *s, uint64_t *out);
/*
 * The table, one knob a line after a "#" header, in decimal:
 * "NAME KIND MIN MAX DEFAULT FLOOR", ids written as N ("nodes/nodeN/low_bp").
 */
void ut_knobs_list(FILE *f);

/* ---- umm.ko's files (umm.c) ------------------------------------------- */

/*
 * ROOT stands for /sys: the module's files are ROOT/kernel/mm/umm/... and
 * ROOT/kernel/debug/umm/{clients,cgroups}, so tests can point the tools at
 * a fake tree (--sysfs-root or $UMM_SYSFS_ROOT).
 * Documentation/ABI/testing/sysfs-kernel-mm-umm describes every file.
 */
#define UT_UMM_ROOT_ENV		"UMM_SYSFS_ROOT"
#define UT_UMM_DIR		"/kernel/mm/umm"
#define UT_UMM_CLIENTS		"/kernel/debug/umm/clients"
#define UT_UMM_CGROUPS		"/kernel/debug/umm/cgroups"
#define UT_UMM_MAX_GPUS		16
#define UT_UMM_LEVEL_LEN	16
#define UT_UMM_ETA_NONE		4294967295ull	/* eta_ms: not falling */
#define UT_UMM_NO_LIMIT		UINT64_MAX	/* a cgroup's limit and room */

/*
 * The figures and knobs of each directory, in the ABI's order; the knobs
 * come from knobs.h, so X takes one argument (a figure) or six (a knob's
 * row): X(name, ...) in both cases.
 */
#define UT_UMM_GLOBALS(X)						\
	X(api_version) UT_KNOBS_GLOBAL(X) X(clients) X(events_sent)	\
	X(events_dropped) X(overflows) X(acks) X(bytes_freed)		\
	X(ack_latency_ns_avg) X(ack_latency_ns_max) X(shrinker_calls)	\
	X(oom_calls) X(oom_deferred) X(ring_bytes)
#define UT_UMM_NODE_FIELDS(X)						\
	UT_KNOBS_NODE(X) X(critical_effective_bytes) X(free_bytes)	\
	X(total_bytes) X(resident_bytes) X(reclaimable_bytes) X(eta_ms)	\
	X(events)
#define UT_UMM_GPU_FIELDS(X)						\
	UT_KNOBS_GPU(X) X(used_bytes) X(reclaimable_bytes) X(events)
#define UT_UMM_CGROUP_FIELDS(X)						\
	UT_KNOBS_CGROUP(X) X(watched)

#define UT_UMM_G_ENUM(n, ...)	UT_UMM_G_##n,
#define UT_UMM_N_ENUM(n, ...)	UT_UMM_N_##n,
#define UT_UMM_GPU_ENUM(n, ...)	UT_UMM_GPU_##n,
#define UT_UMM_CG_ENUM(n, ...)	UT_UMM_CG_##n,
enum { UT_UMM_GLOBALS(UT_UMM_G_ENUM) UT_UMM_G_COUNT };
enum { UT_UMM_NODE_FIELDS(UT_UMM_N_ENUM) UT_UMM_N_COUNT };
enum { UT_UMM_GPU_FIELDS(UT_UMM_GPU_ENUM) UT_UMM_GPU_COUNT };
enum { UT_UMM_CGROUP_FIELDS(UT_UMM_CG_ENUM) UT_UMM_CG_COUNT };

/* File names, indexed by the enums above. */
extern const char *const ut_umm_global_names[UT_UMM_G_COUNT];
extern const char *const ut_umm_node_names[UT_UMM_N_COUNT];
extern const char *const ut_umm_gpu_names[UT_UMM_GPU_COUNT];
extern const char *const ut_umm_cgroup_names[UT_UMM_CG_COUNT];

struct ut_umm_node {
	unsigned int id;
	char level[UT_UMM_LEVEL_LEN];
	uint64_t v[UT_UMM_N_COUNT];
};

struct ut_umm_gpu {
	unsigned int id;
	char level[UT_UMM_LEVEL_LEN];
	uint64_t v[UT_UMM_GPU_COUNT];
};

/* Everything under ROOT/kernel/mm/umm at one time. */
struct ut_umm {
	uint64_t t_ns;			/* ut_now_ns() when read */
	uint64_t g[UT_UMM_G_COUNT];
	struct ut_umm_node *nodes;	/* by id */
	size_t nnodes;
	struct ut_umm_gpu gpus[UT_UMM_MAX_GPUS];
	size_t ngpus;
	/* cgroup/: a module built without it has none (has_cgroup false) */
	bool has_cgroup;
	uint64_t cg[UT_UMM_CG_COUNT];
	char failed[128];		/* the file that could not be read */
};

/* umm.ko's ACK latency buckets: upper bounds in ms, then one for the rest. */
#define UT_UMM_ACK_BUCKETS	14
extern const unsigned int ut_umm_ack_le_ms[UT_UMM_ACK_BUCKETS - 1];

struct ut_umm_client {
	int pid;
	char name[128];		/* bytes that are not printable stay \ooo */
	int priority;
	int ready;
	uint64_t queue_len, queued, events, drops, acks, bytes_freed;
	uint64_t ack_ns_avg;
	char books[1024];	/* "node0:<res>/<recl>,gpu1:..." or "-" */
	/* event-to-ACK latencies, when the module counts them (hist = 1) */
	int hist;
	uint64_t ack_ns_sum;
	uint64_t ack_ms_le[UT_UMM_ACK_BUCKETS];	/* per bucket, not cumulative */
};

/* opt when set, else $UMM_SYSFS_ROOT when set, else "/sys". */
const char *ut_umm_root(const char *opt);
/* ROOT/kernel/mm/umm/REL into buf; -ENAMETOOLONG if it does not fit. */
int ut_umm_path(char *buf, size_t len, const char *root, const char *rel);
/* First line of ROOT/kernel/mm/umm/REL, newline removed: 0 or -errno. */
int ut_umm_read_str(const char *root, const char *rel, char *buf,
		    size_t len);
/* The same as a decimal number (-EPROTO if it is not one). */
int ut_umm_read_u64(const char *root, const char *rel, uint64_t *out);
/*
 * Is umm.ko there? 0 when ROOT/kernel/mm/umm is a directory, -ENOENT when
 * it is not, another -errno when it cannot be told (-EACCES).
 */
int ut_umm_present(const char *root);
/*
 * Reads every file of the tree into s (cgroup/ only where the module has
 * it: s->has_cgroup): 0, -ENOENT when umm.ko is not loaded, else the
 * -errno of the first file that failed (its name in s->failed; -EACCES as
 * non-root). ut_umm_free(s) afterwards, always.
 */
int ut_umm_read(const char *root, struct ut_umm *s);
void ut_umm_free(struct ut_umm *s);
/*
 * The debugfs client table: 0 with *out (free() it) and *n, -ENOENT when
 * umm.ko is not loaded, -ENODEV when debugfs is not mounted on
 * ROOT/kernel/debug, -EACCES when not root, -EPROTO for a line it cannot
 * parse.
 */
int ut_umm_clients(const char *root, struct ut_umm_client **out, size_t *n);
/*
 * A watched memory cgroup, a row of ROOT/kernel/debug/umm/cgroups. limit is
 * the effective one, the lowest memory.max or memory.high on its path to
 * the root; room the least left under any of them (both UT_UMM_NO_LIMIT
 * without a limit); level is the word sysfs uses ("normal" .. "critical").
 */
struct ut_umm_cgroup {
	uint64_t id;
	/*
	 * Relative to the cgroup2 root ("/slurm/job42"), escaped bytes that
	 * are printable back, the others still \ooo (as a client's name);
	 * cut at 4095 bytes (only a path of many unprintable bytes is longer).
	 */
	char path[4096];
	uint64_t usage, limit, room;
	char level[UT_UMM_LEVEL_LEN];
	uint64_t clients;
	uint64_t eta_ms;	/* to the critical threshold; UT_UMM_ETA_NONE */
	int64_t fill_bps;	/* room lost per second; negative: it grew */
	uint64_t events;
};

/*
 * The debugfs table of watched cgroups: 0 with *out (free() it) and *n,
 * -ENOENT when umm.ko is not loaded, -ENODEV when debugfs is not mounted,
 * -EACCES when not root, -ENOSYS when umm.ko's debugfs directory has no
 * such table (a module before memory cgroups), -EPROTO for a header or a
 * line it cannot parse.
 */
int ut_umm_cgroups(const char *root, struct ut_umm_cgroup **out, size_t *n);

/* One tier of a client's books: what it holds there and could give back. */
struct ut_umm_book {
	char tier[16];			/* "node0", "gpu1" */
	uint64_t resident, reclaimable;	/* bytes */
};
#define UT_UMM_MAX_BOOKS	64

/*
 * A client's books ("node0:<res>/<recl>,gpu1:...", "-" for none) into
 * b[0..max): returns how many; entries of another shape are skipped.
 */
int ut_umm_books(const char *books, struct ut_umm_book *b, int max);
/* One line saying why ut_umm_read/ut_umm_clients/_cgroups failed (err). */
void ut_umm_warn(const char *root, const char *what, int err);

/*
 * "module", "nodes" and "gpus" members of the current JSON object, and
 * "cgroup" where the module has that directory; with
 * decline (see ut_umm_print_nodes), each node's as free_decline_bytes_per_s.
 */
void ut_umm_json(struct ut_json *j, const struct ut_umm *s,
		 const double *decline);
/* An array member key of client objects (books parsed into an array). */
void ut_umm_json_clients(struct ut_json *j, const char *key,
			 const struct ut_umm_client *c, size_t n);
/*
 * An array member key of cgroup objects: every field as a number, bytes
 * exact (UT_UMM_NO_LIMIT, 18446744073709551615, for no limit), the level
 * and the path as strings.
 */
void ut_umm_json_cgroups(struct ut_json *j, const char *key,
			 const struct ut_umm_cgroup *c, size_t n);
/*
 * Tables on stdout. decline: bytes per second the free memory of each node
 * fell since the last sample, negative when it grew, NaN when unknown (a
 * column only when not NULL). GPUs without a
 * budget, usage, events or a level are left out unless all.
 */
int ut_umm_print_nodes(const struct ut_umm *s, const double *decline);
int ut_umm_print_gpus(const struct ut_umm *s, bool all);
int ut_umm_print_clients(const struct ut_umm_client *c, size_t n);
/* USED% is the share of the limit not left as room, as levels judge it. */
int ut_umm_print_cgroups(const struct ut_umm_cgroup *c, size_t n);
/*
 * The tables above in at most cols columns from now on (0, the default:
 * any width), whole columns hidden by their priority (ut_table_print_fit);
 * ut_umm_fit_hidden names those hidden since the last ut_umm_fit, table
 * by table ("nodes: RECLAIMABLE; clients: BOOKS QLEN").
 */
void ut_umm_fit(int cols);
const char *ut_umm_fit_hidden(void);

/* ---- Prometheus text exposition (prom.c) ------------------------------- */

/* "# HELP name help" and "# TYPE name type" (counter, gauge, ...). */
void ut_prom_family(FILE *f, const char *name, const char *type,
		    const char *help);
/*
 * Appends key="val" to the label list in buf (after a comma when buf is not
 * empty), val escaped as the format wants (\\, \" and \n); other control
 * bytes and bytes that are not UTF-8 become the visible text \xNN. Returns
 * 0, or -ENOSPC with buf unchanged.
 */
int ut_prom_label(char *buf, size_t len, const char *key, const char *val);
/* A sample "name{labels} v"; labels as ut_prom_label built them, or "". */
void ut_prom_u64(FILE *f, const char *name, const char *labels, uint64_t v);
/* The same for a double: NaN, +Inf and -Inf spelt as the format wants. */
void ut_prom_dbl(FILE *f, const char *name, const char *labels, double v);

#endif /* UT_H */
