// SPDX-License-Identifier: MIT
/*
 * umm.c - read umm.ko's sysfs tree and its debugfs tables (clients, cgroups).
 *
 * Every file holds one value (Documentation/ABI/testing/sysfs-kernel-mm-umm).
 * The tree is read file by file, so a snapshot is not atomic: each value is
 * as the kernel had it when its file was read, which is what an admin tool
 * can offer.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ut.h"

#define UT_UMM_NAME(n, ...)	#n,
const char *const ut_umm_global_names[UT_UMM_G_COUNT] = {
	UT_UMM_GLOBALS(UT_UMM_NAME)
};
const char *const ut_umm_node_names[UT_UMM_N_COUNT] = {
	UT_UMM_NODE_FIELDS(UT_UMM_NAME)
};
const char *const ut_umm_gpu_names[UT_UMM_GPU_COUNT] = {
	UT_UMM_GPU_FIELDS(UT_UMM_NAME)
};
const char *const ut_umm_cgroup_names[UT_UMM_CG_COUNT] = {
	UT_UMM_CGROUP_FIELDS(UT_UMM_NAME)
};

const char *ut_umm_root(const char *opt)
{
	const char *env = getenv(UT_UMM_ROOT_ENV);

	if (opt)
		return opt;
	return env && *env ? env : "/sys";
}

int ut_umm_path(char *buf, size_t len, const char *root, const char *rel)
{
	int n = snprintf(buf, len, "%s%s%s%s", root, UT_UMM_DIR,
			 *rel ? "/" : "", rel);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int ut_umm_read_str(const char *root, const char *rel, char *buf, size_t len)
{
	char path[4096];
	int ret = ut_umm_path(path, sizeof(path), root, rel);

	if (!ret)
		ret = ut_read_file(path, buf, len);
	if (!ret)
		buf[strcspn(buf, "\n")] = '\0';
	return ret;
}

int ut_umm_read_u64(const char *root, const char *rel, uint64_t *out)
{
	char buf[32];
	int ret = ut_umm_read_str(root, rel, buf, sizeof(buf));

	if (ret)
		return ret;
	return ut_parse_u64(buf, 0, UINT64_MAX, out) ? -EPROTO : 0;
}

int ut_umm_present(const char *root)
{
	char path[4096];
	struct stat st;

	if (ut_umm_path(path, sizeof(path), root, ""))
		return -ENAMETOOLONG;
	if (stat(path, &st))
		return errno == ENOTDIR ? -ENOENT : -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOENT;
}

/* Reads names[i] under dir into v[i]; the failing name into s->failed. */
static int read_fields(const char *root, const char *dir,
		       const char *const *names, int count, uint64_t *v,
		       struct ut_umm *s)
{
	char rel[sizeof(s->failed)];
	int i, ret;

	for (i = 0; i < count; i++) {
		snprintf(rel, sizeof(rel), "%s%s%s", dir, *dir ? "/" : "",
			 names[i]);
		ret = ut_umm_read_u64(root, rel, &v[i]);
		if (ret == -ENOENT)
			ret = -EPROTO;	/* the directory is there, not it */
		if (ret) {
			memcpy(s->failed, rel, sizeof(rel));
			return ret;
		}
	}
	return 0;
}

/* nodes/ or gpus/: where the entries are and which files each has. */
struct umm_kind {
	const char *dir;		/* "nodes" */
	const char *prefix;		/* "node": entries are node<N> */
	const char *const *names;
	int count;
};

static const struct umm_kind node_kind = {
	"nodes", "node", ut_umm_node_names, UT_UMM_N_COUNT
};
static const struct umm_kind gpu_kind = {
	"gpus", "gpu", ut_umm_gpu_names, UT_UMM_GPU_COUNT
};

/*
 * Room for entry n of arr, an array of *cap entries of size bytes,
 * doubling it when full: the array (perhaps moved), or NULL when out of
 * memory (arr is kept, and still the caller's to free).
 */
static void *grow(void *arr, size_t size, size_t n, size_t *cap)
{
	size_t c = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return arr;
	p = realloc(arr, c * size);
	if (p)
		*cap = c;
	return p;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;

	return (x > y) - (x < y);
}

/*
 * The ids N of the PREFIX<N> entries of kind k, sorted, in *ids
 * (malloc'ed). Returns the count or -errno (the directory in s->failed).
 */
static int list_ids(const char *root, const struct umm_kind *k,
		    unsigned int **ids, struct ut_umm *s)
{
	size_t plen = strlen(k->prefix), n = 0, cap = 0;
	char path[4096];
	struct dirent *de;
	uint64_t id;
	void *p;
	DIR *d;

	*ids = NULL;
	snprintf(s->failed, sizeof(s->failed), "%s", k->dir);
	if (ut_umm_path(path, sizeof(path), root, k->dir))
		return -ENAMETOOLONG;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, k->prefix, plen) ||
		    ut_parse_u64(de->d_name + plen, 0, 65535, &id))
			continue;
		p = grow(*ids, sizeof(**ids), n, &cap);
		if (!p) {
			closedir(d);
			return -ENOMEM;
		}
		*ids = p;
		(*ids)[n++] = (unsigned int)id;
	}
	closedir(d);
	s->failed[0] = '\0';
	if (n)
		qsort(*ids, n, sizeof(**ids), cmp_uint);
	return (int)n;
}

/* The files and the level of entry PREFIX<id> of kind k. */
static int read_entry(const char *root, const struct umm_kind *k,
		      unsigned int id, uint64_t *v, char *level,
		      struct ut_umm *s)
{
	char dir[64], rel[sizeof(s->failed)];
	int ret;

	snprintf(dir, sizeof(dir), "%s/%s%u", k->dir, k->prefix, id);
	ret = read_fields(root, dir, k->names, k->count, v, s);
	if (ret)
		return ret;
	snprintf(rel, sizeof(rel), "%s/level", dir);
	ret = ut_umm_read_str(root, rel, level, UT_UMM_LEVEL_LEN);
	if (ret == -ENOENT)
		ret = -EPROTO;
	if (ret)
		memcpy(s->failed, rel, sizeof(rel));
	return ret;
}

static int read_nodes(const char *root, struct ut_umm *s)
{
	unsigned int *ids;
	int n = list_ids(root, &node_kind, &ids, s), i, ret = 0;

	if (n < 0)
		return n;
	s->nodes = calloc(n ? (size_t)n : 1, sizeof(*s->nodes));
	for (i = 0; s->nodes && i < n && !ret; i++) {
		s->nodes[i].id = ids[i];
		s->nnodes = (size_t)i + 1;
		ret = read_entry(root, &node_kind, ids[i], s->nodes[i].v,
				 s->nodes[i].level, s);
	}
	free(ids);
	return s->nodes ? ret : -ENOMEM;
}

static int read_gpus(const char *root, struct ut_umm *s)
{
	unsigned int *ids;
	int n = list_ids(root, &gpu_kind, &ids, s), i, ret = 0;

	for (i = 0; i < n && !ret && s->ngpus < UT_UMM_MAX_GPUS; i++) {
		struct ut_umm_gpu *g = &s->gpus[s->ngpus++];

		g->id = ids[i];
		ret = read_entry(root, &gpu_kind, ids[i], g->v, g->level, s);
	}
	free(ids);
	return n < 0 ? n : ret;
}

/*
 * cgroup/, which a module built before it lacks: then not supported
 * (has_cgroup false), not an error. Once there, every file must be.
 */
static int read_cgroup(const char *root, struct ut_umm *s)
{
	char path[4096];
	struct stat st;

	if (ut_umm_path(path, sizeof(path), root, "cgroup"))
		return -ENAMETOOLONG;
	if (stat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		snprintf(s->failed, sizeof(s->failed), "cgroup");
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(s->failed, sizeof(s->failed), "cgroup");
		return -EPROTO;
	}
	s->has_cgroup = true;
	return read_fields(root, "cgroup", ut_umm_cgroup_names,
			   UT_UMM_CG_COUNT, s->cg, s);
}

int ut_umm_read(const char *root, struct ut_umm *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	s->t_ns = ut_now_ns();
	ret = ut_umm_present(root);
	if (ret)
		return ret;
	ret = read_fields(root, "", ut_umm_global_names, UT_UMM_G_COUNT, s->g,
			  s);
	if (!ret)
		ret = read_nodes(root, s);
	if (!ret)
		ret = read_gpus(root, s);
	if (!ret)
		ret = read_cgroup(root, s);
	return ret;
}

void ut_umm_free(struct ut_umm *s)
{
	free(s->nodes);
	s->nodes = NULL;
	s->nnodes = 0;
}

/* ---- the debugfs client table ------------------------------------------ */

#define CLIENT_WORDS	12	/* pid name + 9 numbers + books */
/* The columns a module that counts ACK latencies appends to the header. */
#define ACK_COLUMNS \
	" ack_ns_sum ack_ms_le(1,2,5,10,20,50,100,200,500,1000,2000,5000,10000,inf)"

const unsigned int ut_umm_ack_le_ms[UT_UMM_ACK_BUCKETS - 1] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000,
};

/* A decimal number with an optional minus sign. */
static int parse_int(const char *w, long long *out)
{
	uint64_t v;

	if (ut_parse_u64(*w == '-' ? w + 1 : w, 0, INT32_MAX, &v))
		return -EPROTO;
	*out = *w == '-' ? -(long long)v : (long long)v;
	return 0;
}

/*
 * A name as umm.ko prints it: every byte that is not printable, a blank or
 * a backslash as \ooo (three octal digits), so that a name (a process's
 * comm before the handshake may hold anything) is one word and cannot
 * forge a row. Blanks and printable bytes come back; the others stay
 * written as \ooo, so that no control byte reaches a terminal.
 */
static int octal_byte(const char *p)
{
	for (int i = 0; i < 3; i++)
		if (p[i] < '0' || p[i] > '7')
			return -1;
	return (p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0');
}

static void unescape_name(const char *in, size_t len, char *out, size_t size)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < size; i++) {
		int b = in[i] == '\\' && i + 3 < len ? octal_byte(in + i + 1)
						      : -1;

		if (b >= 0x20 && b <= 0x7e) {
			out[o++] = (char)b;
			i += 3;
		} else {
			out[o++] = in[i];
		}
	}
	out[o] = '\0';
}

/* "n0,n1,...": exactly UT_UMM_ACK_BUCKETS counts. */
static int parse_buckets(const char *w, uint64_t *le)
{
	char copy[512], *save = NULL, *t;
	int i = 0;

	snprintf(copy, sizeof(copy), "%s", w);
	for (t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		if (i == UT_UMM_ACK_BUCKETS ||
		    ut_parse_u64(t, 0, UINT64_MAX, &le[i++]))
			return -EPROTO;
	}
	return i == UT_UMM_ACK_BUCKETS ? 0 : -EPROTO;
}

/*
 * "pid name priority ready queue_len queued events drops acks bytes_freed
 * ack_ns_avg books", then with hist "ack_ns_sum n0,n1,...": the name is
 * escaped (unescape_name()), one word; a module before escaping printed it
 * raw, so it is taken as what lies between the pid and the last words.
 */
static int parse_client(const char *line, struct ut_umm_client *c, int hist)
{
	uint64_t *u[] = { &c->queue_len, &c->queued, &c->events, &c->drops,
			  &c->acks, &c->bytes_freed, &c->ack_ns_avg };
	char copy[2048], *w[128];
	long long pid, prio, ready;
	size_t from, to;
	int n = 0, i, e;

	memset(c, 0, sizeof(*c));
	snprintf(copy, sizeof(copy), "%s", line);
	for (char *t = strtok(copy, " "); t && n < 128; t = strtok(NULL, " "))
		w[n++] = t;
	e = hist ? n - 2 : n;	/* one past the books */
	if (e < CLIENT_WORDS || parse_int(w[0], &pid) ||
	    parse_int(w[e - 10], &prio) || parse_int(w[e - 9], &ready))
		return -EPROTO;
	for (i = 0; i < 7; i++)
		if (ut_parse_u64(w[e - 8 + i], 0, UINT64_MAX, u[i]))
			return -EPROTO;
	if (hist && (ut_parse_u64(w[n - 2], 0, UINT64_MAX, &c->ack_ns_sum) ||
		     parse_buckets(w[n - 1], c->ack_ms_le)))
		return -EPROTO;
	from = (size_t)(w[1] - copy);
	to = (size_t)(w[e - 11] - copy) + strlen(w[e - 11]);
	unescape_name(line + from, to - from, c->name, sizeof(c->name));
	snprintf(c->books, sizeof(c->books), "%s", w[e - 1]);
	c->pid = (int)pid;
	c->priority = (int)prio;
	c->ready = (int)ready;
	c->hist = hist;
	return 0;
}

/* Why a table of ROOT/kernel/debug/umm is not there. */
static int table_missing(const char *root)
{
	char path[4096];
	struct dirent *de;
	struct stat st;
	bool empty = true;
	DIR *d;
	int ret = ut_umm_present(root);

	if (ret)
		return ret;
	snprintf(path, sizeof(path), "%s/kernel/debug/umm", root);
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return -ENOSYS;	/* the module's files, a newer one missing */
	snprintf(path, sizeof(path), "%s/kernel/debug", root);
	d = opendir(path);
	if (!d)
		return errno == EACCES ? -EACCES : -ENODEV;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = false;
	closedir(d);
	/* debugfs mounted but no umm/: a module without debugfs support */
	return empty ? -ENODEV : -ENOTSUP;
}

static int parse_clients(FILE *f, struct ut_umm_client **out, size_t *n)
{
	char line[2048];
	size_t cap = 0;
	int ret = 0, hist;
	void *p;

	*out = NULL;
	*n = 0;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "pid ", 4))
		return -EPROTO;
	line[strcspn(line, "\n")] = '\0';
	hist = strstr(line, ACK_COLUMNS) != NULL;
	if (!hist && strstr(line, " ack_ms_le("))
		return -EPROTO;	/* other buckets than ours */
	while (!ret && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		p = grow(*out, sizeof(**out), *n, &cap);
		if (!p)
			return -ENOMEM;
		*out = p;
		ret = parse_client(line, &(*out)[*n], hist);
		if (!ret)
			(*n)++;
	}
	return ret;
}

/* ROOT + REL (UT_UMM_CLIENTS, UT_UMM_CGROUPS) open in *f, or why not. */
static int open_table(const char *root, const char *rel, FILE **f)
{
	char path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s%s", root, rel) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	*f = fopen(path, "re");
	if (!*f)
		return errno == ENOENT ? table_missing(root) : -errno;
	return 0;
}

int ut_umm_clients(const char *root, struct ut_umm_client **out, size_t *n)
{
	FILE *f;
	int ret;

	*out = NULL;
	*n = 0;
	ret = open_table(root, UT_UMM_CLIENTS, &f);
	if (ret)
		return ret;
	ret = parse_clients(f, out, n);
	fclose(f);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

/* ---- the debugfs table of watched cgroups ------------------------------- */

#define CGROUP_COLUMNS \
	"id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps events"
#define CGROUP_WORDS	10

/* A decimal number with an optional minus sign, all of int64_t's range. */
static int parse_i64(const char *w, int64_t *out)
{
	bool neg = *w == '-';
	uint64_t v;

	if (ut_parse_u64(neg ? w + 1 : w, 0,
			 neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &v))
		return -EPROTO;
	*out = neg && v ? -(int64_t)(v - 1) - 1 : (int64_t)v;
	return 0;
}

/* A level is a word of lowercase letters: a number there is a column off. */
static int parse_level(const char *w, char *level)
{
	size_t len = strspn(w, "abcdefghijklmnopqrstuvwxyz");

	if (!len || len >= UT_UMM_LEVEL_LEN || w[len])
		return -EPROTO;
	memcpy(level, w, len + 1);
	return 0;
}

/*
 * The header: ours, or ours with the columns a newer module appends (their
 * values come after ours and are skipped). Returns the words a row has.
 */
static int cgroup_header(const char *line)
{
	size_t k = strlen(CGROUP_COLUMNS);
	int words = CGROUP_WORDS;
	const char *p;

	if (strncmp(line, CGROUP_COLUMNS, k) || (line[k] && line[k] != ' '))
		return -EPROTO;
	for (p = line + k; *p; p++)
		if (*p == ' ' && p[1] && p[1] != ' ')
			words++;
	return words;
}

/*
 * "id path usage_bytes limit_bytes room_bytes level clients eta_ms fill_bps
 * events": the path is one word, escaped as a client's name is
 * (unescape_name()); fill_bps is the only signed figure.
 */
static int parse_cgroup(char *line, int words, struct ut_umm_cgroup *c)
{
	uint64_t *u[] = { &c->usage, &c->limit, &c->room };
	char *w[CGROUP_WORDS], *save = NULL, *t;
	int n = 0, i;

	memset(c, 0, sizeof(*c));
	for (t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save))
		if (n++ < CGROUP_WORDS)
			w[n - 1] = t;
	if (n != words || ut_parse_u64(w[0], 0, UINT64_MAX, &c->id))
		return -EPROTO;
	for (i = 0; i < 3; i++)
		if (ut_parse_u64(w[2 + i], 0, UINT64_MAX, u[i]))
			return -EPROTO;
	if (parse_level(w[5], c->level) ||
	    ut_parse_u64(w[6], 0, UINT64_MAX, &c->clients) ||
	    ut_parse_u64(w[7], 0, UINT64_MAX, &c->eta_ms) ||
	    parse_i64(w[8], &c->fill_bps) ||
	    ut_parse_u64(w[9], 0, UINT64_MAX, &c->events))
		return -EPROTO;
	unescape_name(w[1], strlen(w[1]), c->path, sizeof(c->path));
	return 0;
}

/* Lines of any length: a path takes up to PATH_MAX bytes, four per byte. */
static int parse_cgroups(FILE *f, struct ut_umm_cgroup **out, size_t *n)
{
	char *line = NULL;
	size_t len = 0, cap = 0;
	int ret = -EPROTO, words = -EPROTO;

	if (getline(&line, &len, f) >= 0) {
		line[strcspn(line, "\n")] = '\0';
		words = ret = cgroup_header(line);
	}
	while (ret >= 0 && getline(&line, &len, f) >= 0) {
		line[strcspn(line, "\n")] = '\0';
		struct ut_umm_cgroup *p = grow(*out, sizeof(**out), *n, &cap);

		if (!p) {
			ret = -ENOMEM;
			break;
		}
		*out = p;
		ret = parse_cgroup(line, words, &(*out)[*n]);
		if (!ret)
			(*n)++;
	}
	free(line);
	if (ret >= 0 && ferror(f))
		ret = -EIO;
	return ret < 0 ? ret : 0;
}

int ut_umm_cgroups(const char *root, struct ut_umm_cgroup **out, size_t *n)
{
	FILE *f;
	int ret;

	*out = NULL;
	*n = 0;
	ret = open_table(root, UT_UMM_CGROUPS, &f);
	if (ret)
		return ret;
	ret = parse_cgroups(f, out, n);
	fclose(f);
	if (ret) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return ret;
}

void ut_umm_warn(const char *root, const char *what, int err)
{
	switch (err) {
	case -ENOENT:
		ut_warn("umm.ko is not loaded (no %s%s)", root, UT_UMM_DIR);
		break;
	case -EACCES:
	case -EPERM:
		ut_warn("%s: permission denied (umm.ko's files are root's)",
			what);
		break;
	case -ENODEV:
		ut_warn("%s: debugfs is not mounted on %s/kernel/debug (mount -t debugfs none /sys/kernel/debug)",
			what, root);
		break;
	case -ENOTSUP:
		ut_warn("%s: umm.ko made no debugfs files (kernel without CONFIG_DEBUG_FS?)",
			what);
		break;
	case -ENOSYS:
		ut_warn("%s: not supported by this umm.ko (no such table in %s/kernel/debug/umm: a module before it)",
			what, root);
		break;
	case -EPROTO:
		ut_warn("%s: unexpected contents (another umm.ko version?)",
			what);
		break;
	default:
		ut_warn("%s: %s", what, strerror(-err));
	}
}
