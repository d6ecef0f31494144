/* SPDX-License-Identifier: MIT */
/*
 * umpressure - create real memory pressure on a NUMA node.
 *
 * Allocates anonymous memory bound to a node (mbind MPOL_BIND), touching
 * every page so the kernel really has to find it, at a chosen rate, until a
 * target size or a umm.ko level is reached; holds it; then gives it back.
 * A floor of free memory on the node (--min-free) stops it first, unless
 * --force; SIGINT/SIGTERM end it early and still release everything.
 * With --cgroup it first joins a cgroup v2, so that the fill is charged
 * there, and also stops short of that cgroup's effective limit.
 *
 * Exit status: 0 goal reached (or, without a goal, the floor), 1 error,
 * 2 usage (also a --cgroup that cannot be used), 3 stopped by a floor
 * before the goal, 130 stopped by a signal. See umpressure(1).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <numaif.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ut.h"

#define MiB		(1024ull * 1024)
#define DEF_STEP	(16 * MiB)
#define DEF_FLOOR_BP	200		/* 2 % of the node */
#define MAX_CHUNKS	65536
#define SAMPLE_NS	50000000ull	/* level/free sampling while holding */

enum level { LV_NONE, LV_NORMAL, LV_LOW, LV_MEDIUM, LV_CRITICAL, LV_COUNT };
static const char *const level_names[LV_COUNT] = {
	"none", "normal", "low", "medium", "critical",
};

enum stop {
	ST_TARGET, ST_LEVEL, ST_FLOOR, ST_CGFLOOR, ST_SIGNAL, ST_NOMEM,
	ST_COUNT
};
static const char *const stop_names[ST_COUNT] = {
	"target", "level", "floor", "cgroup_floor", "signal", "nomem",
};

struct opts {
	int node;			/* -1: no binding */
	double rate;			/* MiB/s, 0 = as fast as possible */
	uint64_t target;		/* 0: none */
	int until;			/* LV_NONE: none */
	double hold;			/* seconds */
	uint64_t min_free;
	bool min_free_set, min_free_pct_set;
	bool force;
	uint64_t step;
	bool json;
	bool quiet;
	const char *sysroot;
	int oom_adj;
	bool oom_adj_set;
	const char *cgroup;		/* --cgroup PATH; NULL: none */
	bool cg_create;
};

struct chunk {
	void *p;
	size_t len;
};

#define CG_DEPTH	64		/* cgroups on a path looked at */
#define CG_PATH		4096

/* memory.events counters reported (of the cgroup that has the limit) */
enum { CG_EV_OOM_KILL, CG_EV_MAX, CG_EV_HIGH, CG_EV_COUNT };
static const char *const cg_ev_names[CG_EV_COUNT] = {
	"oom_kill", "max", "high",
};

struct cgroup {
	char dir[CG_PATH];		/* its directory, resolved (--sysroot) */
	char path[CG_PATH];		/* the same as the system names it */
	size_t base;			/* dir[0..base): the mount */
	bool created;			/* by --create */
	int nlim;			/* cgroups on the path with a limit */
	size_t lim_len[CG_DEPTH];	/* dir[0..lim_len[i]): one of them */
	uint64_t lim[CG_DEPTH];		/* lower of memory.max, .high */
	const char *lim_file[CG_DEPTH];
	int bind;			/* the lowest of them; -1: no limit */
	uint64_t limit, margin;		/* effective limit (0: none) */
	uint64_t cur_start, cur_peak, cur_end, room_min;
	uint64_t ev_start[CG_EV_COUNT], ev_end[CG_EV_COUNT];
};

struct run {
	struct chunk *chunks;
	size_t nchunks;
	uint64_t allocated, peak;
	uint64_t total, free_start, free_min, free_end, floor, min_wmark;
	enum stop stop;
	int level_max;
	int64_t level_ms[LV_COUNT];	/* first seen, ms from start; -1 never */
	uint64_t t0, t_alloc_end, t_hold_end, t_release_end;
	struct cgroup cg;		/* with --cgroup */
};

static volatile sig_atomic_t stop_sig;

static void on_signal(int sig)
{
	stop_sig = sig;
}

/* ---- the node, as the kernel sees it ------------------------------------ */

/* path under --sysroot. */
static int read_file(const char *root, const char *path, char *buf, size_t len)
{
	char full[4096];

	snprintf(full, sizeof(full), "%s%s", root ? root : "", path);
	return ut_read_file(full, buf, len);
}

/* MemTotal/MemFree of node (or of the machine for node -1), in bytes. */
static int node_mem(const struct opts *o, uint64_t *free_b, uint64_t *total_b)
{
	char path[128], buf[8192], *line;
	unsigned long long kb;
	bool got_free = false, got_total = false;

	if (o->node >= 0)
		snprintf(path, sizeof(path),
			 "/sys/devices/system/node/node%d/meminfo", o->node);
	else
		snprintf(path, sizeof(path), "/proc/meminfo");
	if (read_file(o->sysroot, path, buf, sizeof(buf)))
		return -ENOENT;
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *k = strstr(line, "MemTotal:"), *f = strstr(line, "MemFree:");

		if (k && sscanf(k, "MemTotal: %llu kB", &kb) == 1) {
			*total_b = kb * 1024;
			got_total = true;
		} else if (f && sscanf(f, "MemFree: %llu kB", &kb) == 1) {
			*free_b = kb * 1024;
			got_free = true;
		}
	}
	return got_free && got_total ? 0 : -EIO;
}

/*
 * The kernel's min watermark of node (all nodes for -1), in bytes, from
 * /proc/zoneinfo; 0 when it cannot be read. Below it allocations reclaim
 * directly and the OOM killer is near: a default floor under it (2 % of a
 * 512 MiB node is 10 MiB, its min watermark 23-25 MiB) got umpressure
 * itself killed.
 */
static uint64_t node_min_watermark(const struct opts *o)
{
	char path[4096], line[512];
	unsigned long long pages, sum = 0;
	int node = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/zoneinfo",
		 o->sysroot ? o->sysroot : "");
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Node %d, zone", &node) == 1)
			continue;
		if ((o->node < 0 || node == o->node) &&
		    sscanf(line, " min %llu", &pages) == 1)
			sum += pages;
	}
	fclose(f);
	return sum * (uint64_t)sysconf(_SC_PAGESIZE);
}

static int parse_level(const char *s)
{
	char word[32];
	size_t n = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	while (s[n] && s[n] != '\n' && s[n] != ' ' && n < sizeof(word) - 1) {
		word[n] = s[n];
		n++;
	}
	word[n] = '\0';
	for (int i = LV_NORMAL; i < LV_COUNT; i++)
		if (!strcmp(word, level_names[i]))
			return i;
	return -EINVAL;
}

/* umm.ko's level of the node, LV_NONE when the module is not there. */
static int node_level(const struct opts *o)
{
	char path[128], buf[64];
	int lv;

	snprintf(path, sizeof(path), "/sys/kernel/mm/umm/nodes/node%d/level",
		 o->node < 0 ? 0 : o->node);
	if (read_file(o->sysroot, path, buf, sizeof(buf)))
		return LV_NONE;
	lv = parse_level(buf);

	return lv < 0 ? LV_NONE : lv;
}

/* ---- the memory cgroup (--cgroup) --------------------------------------- */

/*
 * The fill stops where the room under the cgroup's effective limit would
 * fall below 2 % of that limit, and never nearer than 4 MiB. memory.current
 * is read before a step; until the next read the cgroup also takes the
 * step's page tables and whatever its other processes fault in meanwhile,
 * and one fault with transparent huge pages takes 2 MiB at once: 2 % alone
 * (1.3 MiB of a 64 MiB cgroup) would not hold even one of theirs. Reclaim
 * starts only at memory.max and throttling at memory.high, so below the
 * margin the fill meets neither.
 */
#define CG_MARGIN_BP	200
#define CG_MARGIN_MIN	(4 * MiB)

/* mountinfo writes blanks and backslashes in paths as \ooo (octal). */
static void unescape(char *s)
{
	char *d = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 |
				      (s[3] - '0'));
			s += 3;
		} else {
			*d++ = *s;
		}
	}
	*d = '\0';
}

/* Is path at or below dir (whole components)? */
static bool path_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

/*
 * The cgroup2 mount point, from /proc/self/mountinfo: for an absolute
 * PATH the one PATH lies under (the deepest, if mounts nest), else the
 * first. -ENOENT without a cgroup2 mount, -ENOTDIR when none holds PATH.
 */
static int cg_mount(const struct opts *o, char *mnt, size_t len)
{
	char path[CG_PATH], line[8192], best[CG_PATH] = "";
	bool any = false;
	FILE *f;

	snprintf(path, sizeof(path), "%s/proc/self/mountinfo",
		 o->sysroot ? o->sysroot : "");
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - "), *save = NULL, *point = NULL;
		char *tok = strtok_r(line, " ", &save);

		for (int i = 1; tok && i < 5; i++)	/* 5th: the point */
			tok = strtok_r(NULL, " ", &save);
		point = tok;
		if (!sep || !point || strncmp(sep, " - cgroup2 ", 11))
			continue;
		unescape(point);
		any = true;
		if (o->cgroup[0] != '/') {
			snprintf(best, sizeof(best), "%s", point);
			break;
		}
		if (path_under(o->cgroup, point) &&
		    strlen(point) >= strlen(best))
			snprintf(best, sizeof(best), "%s", point);
	}
	fclose(f);
	if (!any)
		return -ENOENT;
	if (!best[0])
		return -ENOTDIR;
	snprintf(mnt, len, "%s", best);
	return 0;
}

static bool cg_has(const char *dir, size_t len, const char *file)
{
	char p[CG_PATH];

	snprintf(p, sizeof(p), "%.*s/%s", (int)len, dir, file);
	return !access(p, F_OK);
}

/* A single-number file of the cgroup dir[0..len); "max" is UINT64_MAX. */
static int cg_read_u64(const char *dir, size_t len, const char *file,
		       uint64_t *v)
{
	char p[CG_PATH], buf[64], *nl;
	int ret;

	snprintf(p, sizeof(p), "%.*s/%s", (int)len, dir, file);
	ret = ut_read_file(p, buf, sizeof(buf));
	if (ret)
		return ret;
	nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	if (!strcmp(buf, "max")) {
		*v = UINT64_MAX;
		return 0;
	}
	return ut_parse_num(buf, v) ? -EIO : 0;
}

/* The counters of the memory.events of the cgroup that has the limit. */
static void cg_events(const struct cgroup *cg, uint64_t ev[CG_EV_COUNT])
{
	size_t len = cg->bind >= 0 ? cg->lim_len[cg->bind] : strlen(cg->dir);
	char p[CG_PATH], key[64];
	unsigned long long v;
	FILE *f;

	memset(ev, 0, CG_EV_COUNT * sizeof(*ev));
	snprintf(p, sizeof(p), "%.*s/memory.events", (int)len, cg->dir);
	f = fopen(p, "re");
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", key, &v) == 2)
		for (int i = 0; i < CG_EV_COUNT; i++)
			if (!strcmp(key, cg_ev_names[i]))
				ev[i] = v;
	fclose(f);
}

/*
 * Every memory.max and memory.high from the cgroup up to the mount, and
 * the effective limit: the lowest of them ("max" is none; the root has
 * neither file).
 */
static void cg_limits(struct cgroup *cg)
{
	static const char *const files[] = { "memory.max", "memory.high" };
	size_t len = strlen(cg->dir);

	cg->nlim = 0;
	cg->bind = -1;
	cg->limit = 0;
	while (len >= cg->base && cg->nlim < CG_DEPTH) {
		uint64_t lim = UINT64_MAX, v;
		const char *file = NULL;

		for (int i = 0; i < 2; i++) {
			if (cg_read_u64(cg->dir, len, files[i], &v) || v >= lim)
				continue;
			lim = v;
			file = files[i];
		}
		if (file) {
			cg->lim_len[cg->nlim] = len;
			cg->lim[cg->nlim] = lim;
			cg->lim_file[cg->nlim] = file;
			if (cg->bind < 0 || lim < cg->limit) {
				cg->bind = cg->nlim;
				cg->limit = lim;
			}
			cg->nlim++;
		}
		if (len == cg->base)
			break;
		while (len > cg->base && cg->dir[len - 1] != '/')
			len--;
		if (len > cg->base)
			len--;		/* the slash */
	}
	if (cg->limit) {
		cg->margin = (uint64_t)((double)cg->limit * CG_MARGIN_BP / 1e4);
		if (cg->margin < CG_MARGIN_MIN)
			cg->margin = CG_MARGIN_MIN;
	}
}

/*
 * The least room left under any limit on the path: that limit less the
 * usage of the cgroup that has it, which counts its other children too.
 * UINT64_MAX without a limit; 0 when a usage cannot be read.
 */
static uint64_t cg_room(struct cgroup *cg)
{
	uint64_t room = UINT64_MAX, cur;

	for (int i = 0; i < cg->nlim; i++) {
		if (cg_read_u64(cg->dir, cg->lim_len[i], "memory.current",
				&cur))
			return 0;
		cur = cur < cg->lim[i] ? cg->lim[i] - cur : 0;
		if (cur < room)
			room = cur;
	}
	if (room < cg->room_min)
		cg->room_min = room;
	return room;
}

static uint64_t cg_current(const struct cgroup *cg)
{
	uint64_t cur = 0;

	cg_read_u64(cg->dir, strlen(cg->dir), "memory.current", &cur);
	return cur;
}

/* Room for len more bytes above the margin (always, without a limit)? */
static bool cg_fits(struct cgroup *cg, uint64_t len)
{
	uint64_t room = cg_room(cg);

	return room == UINT64_MAX || room >= cg->margin + len;
}

/*
 * --create: mkdir full, whose parent must be a cgroup under base; then
 * cg->dir is full resolved.
 */
static int cg_create(struct cgroup *cg, const char *base, const char *full)
{
	char parent[CG_PATH + 16], *slash;
	int err;

	snprintf(parent, sizeof(parent), "%s", full);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		return -ENOENT;
	*slash = '\0';
	if (!realpath(parent, cg->dir) || !path_under(cg->dir, base) ||
	    !cg_has(cg->dir, strlen(cg->dir), "cgroup.procs"))
		return -ENOENT;
	if (mkdir(full, 0755))
		return -errno;
	if (!realpath(full, cg->dir)) {
		err = -errno;
		rmdir(full);
		return err;
	}
	cg->created = true;
	return 0;
}

/* PATH to the cgroup's directory; messages for what is wrong. */
static int cg_resolve(const struct opts *o, struct cgroup *cg)
{
	const char *root = o->sysroot ? o->sysroot : "";
	char mnt[CG_PATH], full[CG_PATH + 16], base[CG_PATH];
	int ret = cg_mount(o, mnt, sizeof(mnt));

	if (ret == -ENOENT) {
		ut_warn("--cgroup: no cgroup2 file system in %s/proc/self/mountinfo (cgroup v1 only, or not mounted: mount -t cgroup2 none /sys/fs/cgroup)",
			root);
		return ret;
	}
	if (ret) {
		ut_warn("--cgroup: %s is not under a cgroup2 mount", o->cgroup);
		return ret;
	}
	snprintf(full, sizeof(full), "%s%s", root, mnt);
	if (!realpath(full, base)) {
		ut_warn("--cgroup: the cgroup2 mount %s: %s", mnt,
			strerror(errno));
		return -ENOENT;
	}
	cg->base = strlen(base);
	if (o->cgroup[0] == '/')
		ret = snprintf(full, sizeof(full), "%s%s", root, o->cgroup);
	else
		ret = snprintf(full, sizeof(full), "%s/%s", base, o->cgroup);
	if (ret >= (int)sizeof(full)) {
		ut_warn("--cgroup: %s: %s", o->cgroup, strerror(ENAMETOOLONG));
		return -ENAMETOOLONG;
	}
	if (!realpath(full, cg->dir)) {
		ret = errno == ENOENT && o->cg_create ?
			      cg_create(cg, base, full) : -errno;
		if (ret) {
			ut_warn("--cgroup: %s: %s%s", o->cgroup, strerror(-ret),
				ret == -ENOENT && !o->cg_create ?
					" (mkdir it, or --create)" : "");
			return ret;
		}
	}
	if (!path_under(cg->dir, base)) {
		ut_warn("--cgroup: %s is outside the cgroup2 hierarchy at %s",
			o->cgroup, mnt);
		return -EXDEV;
	}
	snprintf(cg->path, sizeof(cg->path), "%s%s",
		 strcmp(mnt, "/") || !cg->dir[cg->base] ? mnt : "",
		 cg->dir + cg->base);
	if (!cg_has(cg->dir, strlen(cg->dir), "cgroup.procs")) {
		ut_warn("--cgroup: %s is not a cgroup (no cgroup.procs)",
			cg->path);
		return -ENOTDIR;
	}
	return 0;
}

/* Move this process into the cgroup: what it allocates is charged there. */
static int cg_join(const struct cgroup *cg)
{
	char p[CG_PATH + 16], buf[24];
	int fd, n, err = 0;

	snprintf(p, sizeof(p), "%s/cgroup.procs", cg->dir);
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	fd = open(p, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n)
		err = -errno;
	close(fd);
	return err;
}

static const char *cg_join_hint(int err)
{
	switch (err) {
	case -EACCES:
	case -EPERM:
		return " (it takes write access to its cgroup.procs and to that of the nearest cgroup above both it and this process's own)";
	case -EBUSY:
		return " (it gives memory to its children, cgroup.subtree_control: only a leaf cgroup holds processes; name a child)";
	default:
		return "";
	}
}

/*
 * Everything --cgroup needs, checked before the process moves, then the
 * move: -errno after saying what is wrong (exit 2), the directory --create
 * made removed again.
 */
static int cg_setup(const struct opts *o, struct cgroup *cg)
{
	int ret = cg_resolve(o, cg);

	if (ret)
		goto fail;
	cg->room_min = UINT64_MAX;
	if (!cg_has(cg->dir, strlen(cg->dir), "memory.current")) {
		if (strlen(cg->dir) == cg->base)
			ut_warn("--cgroup: %s is the root cgroup, which has no limit: name a cgroup below it",
				cg->path);
		else
			ut_warn("--cgroup: %s has no memory controller (no memory.current): echo +memory > its parent's cgroup.subtree_control",
				cg->path);
		ret = -ENOENT;
		goto fail;
	}
	cg_limits(cg);
	if (!cg->limit && !o->target && o->until == LV_NONE) {
		ut_warn("--cgroup: %s has no memory limit (memory.max, memory.high are max up to the root): set one, or give --target or --until-level",
			cg->path);
		ret = -ERANGE;
		goto fail;
	}
	ret = cg_join(cg);
	if (ret) {
		ut_warn("--cgroup: cannot join %s: %s%s", cg->path,
			strerror(-ret), cg_join_hint(ret));
		goto fail;
	}
	cg->cur_start = cg_current(cg);
	cg->cur_peak = cg->cur_start;
	cg_events(cg, cg->ev_start);
	return 0;
fail:
	if (cg->created)
		rmdir(cg->dir);
	return ret;
}

static int64_t ms_since(uint64_t t0)
{
	return (int64_t)((ut_now_ns() - t0) / 1000000ull);
}

/* Sample level and free memory; record the first time each level is seen. */
static int sample(const struct opts *o, struct run *r)
{
	uint64_t free_b = 0, total_b = 0;
	int lv = node_level(o);

	if (lv > r->level_max)
		r->level_max = lv;
	for (int i = LV_LOW; i <= lv; i++)
		if (r->level_ms[i] < 0)
			r->level_ms[i] = ms_since(r->t0);
	if (!node_mem(o, &free_b, &total_b) && free_b < r->free_min)
		r->free_min = free_b;
	if (o->cgroup) {
		uint64_t cur = cg_current(&r->cg);

		if (cur > r->cg.cur_peak)
			r->cg.cur_peak = cur;
	}
	return lv;
}

/* ---- allocation ----------------------------------------------------------- */

static int grab(const struct opts *o, struct run *r, size_t len)
{
	unsigned long mask[16] = { 0 };
	long ps = sysconf(_SC_PAGESIZE);
	char *p;

	if (r->nchunks == MAX_CHUNKS)
		return -E2BIG;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -ENOMEM;
	if (o->node >= 0) {
		mask[o->node / 64] = 1ul << (o->node % 64);
		if (mbind(p, len, MPOL_BIND, mask, 1024 + 1, 0)) {
			int err = -errno;

			munmap(p, len);
			return err;
		}
	}
	/*
	 * Fault every page in for writing: memory the kernel must really
	 * find. MADV_POPULATE_WRITE does it in one call where the kernel has
	 * it (5.14+); then a write per page still makes the pages non-zero.
	 */
	madvise(p, len, 23 /* MADV_POPULATE_WRITE */);
	for (size_t off = 0; off < len; off += (size_t)ps)
		p[off] = (char)(off >> 12 | 1);
	r->chunks[r->nchunks++] = (struct chunk){ p, len };
	r->allocated += len;
	if (r->allocated > r->peak)
		r->peak = r->allocated;
	return 0;
}

static void release(struct run *r)
{
	for (size_t i = 0; i < r->nchunks; i++)
		munmap(r->chunks[i].p, r->chunks[i].len);
	r->nchunks = 0;
	r->allocated = 0;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {
		.tv_sec = (time_t)(ns / 1000000000ull),
		.tv_nsec = (long)(ns % 1000000000ull),
	};

	nanosleep(&ts, NULL);	/* a signal cuts it short: fine */
}

static bool goal_met(const struct opts *o, const struct run *r, int lv)
{
	if (o->target && r->allocated >= o->target)
		return true;
	return o->until != LV_NONE && lv >= o->until;
}

static void fill(const struct opts *o, struct run *r)
{
	struct ut_progress pg;
	uint64_t free_b, total_b, goal = o->target;
	char s1[UT_SIZE_STR], s2[UT_SIZE_STR];
	int lv;

	ut_progress_init(&pg, goal ? goal : r->total, !o->quiet && !o->json);
	for (;;) {
		size_t len = (size_t)o->step;
		int ret;

		lv = sample(o, r);
		if (stop_sig) {
			r->stop = ST_SIGNAL;
			break;
		}
		if (goal_met(o, r, lv)) {
			r->stop = o->target && r->allocated >= o->target ?
					  ST_TARGET : ST_LEVEL;
			break;
		}
		if (o->target && o->target - r->allocated < len)
			len = (size_t)(o->target - r->allocated);
		if (node_mem(o, &free_b, &total_b))
			free_b = UINT64_MAX;
		if (!o->force && (free_b < r->floor + len)) {
			r->stop = ST_FLOOR;
			break;
		}
		if (!o->force && o->cgroup && !cg_fits(&r->cg, len)) {
			r->stop = ST_CGFLOOR;
			break;
		}
		ret = grab(o, r, len);
		if (ret) {
			r->stop = ST_NOMEM;
			break;
		}
		ut_progress_update(&pg, r->allocated, "%s held, node free %s%s%s",
				   ut_size_str(r->allocated, s1),
				   ut_size_str(free_b, s2),
				   lv != LV_NONE ? ", level " : "",
				   lv != LV_NONE ? level_names[lv] : "");
		if (o->rate > 0) {
			uint64_t due = (uint64_t)((double)r->allocated /
						  (o->rate * MiB) * 1e9);
			uint64_t el = ut_now_ns() - r->t0;

			if (due > el)
				sleep_ns(due - el);
		}
	}
	ut_progress_end(&pg);
}

static void hold(const struct opts *o, struct run *r)
{
	uint64_t end = ut_now_ns() + (uint64_t)(o->hold * 1e9);

	while (!stop_sig && ut_now_ns() < end) {
		uint64_t left = end - ut_now_ns();

		sample(o, r);
		sleep_ns(left < SAMPLE_NS ? left : SAMPLE_NS);
	}
	if (stop_sig && r->stop != ST_SIGNAL)
		r->stop = ST_SIGNAL;
}

/* ---- reporting ------------------------------------------------------------ */

static double secs(uint64_t a, uint64_t b)
{
	return b > a ? (double)(b - a) / 1e9 : 0;
}

static uint64_t cg_delta(const struct cgroup *cg, int ev)
{
	return cg->ev_end[ev] - cg->ev_start[ev];
}

static void report_json_cgroup(struct ut_json *j, const struct cgroup *cg)
{
	char holder[CG_PATH];

	ut_json_obj_begin(j, "cgroup");
	ut_json_str(j, "path", cg->path);
	ut_json_bool(j, "created", cg->created);
	ut_json_u64(j, "limit_bytes", cg->limit);
	if (cg->bind >= 0) {
		/* the system's name for it: the path less what lies below */
		size_t below = strlen(cg->dir) - cg->lim_len[cg->bind];

		snprintf(holder, sizeof(holder), "%.*s",
			 (int)(strlen(cg->path) - below), cg->path);
		ut_json_str(j, "limit_path", holder);
		ut_json_str(j, "limit_file", cg->lim_file[cg->bind]);
	} else {
		ut_json_null(j, "limit_path");
		ut_json_null(j, "limit_file");
	}
	ut_json_u64(j, "margin_bytes", cg->margin);
	if (cg->room_min == UINT64_MAX)
		ut_json_null(j, "room_min_bytes");
	else
		ut_json_u64(j, "room_min_bytes", cg->room_min);
	ut_json_u64(j, "memory_current_start_bytes", cg->cur_start);
	ut_json_u64(j, "memory_current_peak_bytes", cg->cur_peak);
	ut_json_u64(j, "memory_current_end_bytes", cg->cur_end);
	for (int i = 0; i < CG_EV_COUNT; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_delta", cg_ev_names[i]);
		ut_json_u64(j, key, cg_delta(cg, i));
	}
	ut_json_obj_end(j);
}

static void report_json(const struct opts *o, const struct run *r)
{
	struct ut_json j;
	double alloc_s = secs(r->t0, r->t_alloc_end);

	ut_json_init(&j, stdout);
	ut_json_obj_begin(&j, NULL);
	ut_json_str(&j, "tool", "umpressure");
	ut_json_i64(&j, "node", o->node);
	ut_json_dbl(&j, "rate_mib_s", o->rate);
	ut_json_u64(&j, "target_bytes", o->target);
	ut_json_str(&j, "until_level", level_names[o->until]);
	ut_json_u64(&j, "step_bytes", o->step);
	ut_json_bool(&j, "force", o->force);
	ut_json_u64(&j, "floor_bytes", r->floor);
	ut_json_u64(&j, "min_watermark_bytes", r->min_wmark);
	ut_json_u64(&j, "node_total_bytes", r->total);
	ut_json_u64(&j, "node_free_start_bytes", r->free_start);
	ut_json_u64(&j, "node_free_min_bytes", r->free_min);
	ut_json_u64(&j, "node_free_end_bytes", r->free_end);
	ut_json_u64(&j, "peak_bytes", r->peak);
	ut_json_str(&j, "stop_reason", stop_names[r->stop]);
	ut_json_bool(&j, "goal_reached",
		     r->stop == ST_TARGET || r->stop == ST_LEVEL);
	ut_json_dbl(&j, "alloc_s", alloc_s);
	ut_json_dbl(&j, "achieved_mib_s",
		    alloc_s > 0 ? (double)r->peak / MiB / alloc_s : 0);
	ut_json_dbl(&j, "hold_s", secs(r->t_alloc_end, r->t_hold_end));
	ut_json_dbl(&j, "release_s", secs(r->t_hold_end, r->t_release_end));
	ut_json_str(&j, "level_max", level_names[r->level_max]);
	ut_json_obj_begin(&j, "level_first_ms");
	for (int i = LV_LOW; i < LV_COUNT; i++) {
		if (r->level_ms[i] < 0)
			ut_json_null(&j, level_names[i]);
		else
			ut_json_i64(&j, level_names[i], r->level_ms[i]);
	}
	ut_json_obj_end(&j);
	if (o->cgroup)
		report_json_cgroup(&j, &r->cg);
	else
		ut_json_null(&j, "cgroup");
	ut_json_obj_end(&j);
	ut_json_finish(&j);
}

static void report_text_cgroup(const struct cgroup *cg)
{
	char a[UT_SIZE_STR], b[UT_SIZE_STR], c[UT_SIZE_STR];

	if (cg->bind >= 0)
		printf("umpressure: cgroup %s: limit %s (%s %s), margin %s\n",
		       cg->path, ut_size_str(cg->limit, a),
		       cg->lim_file[cg->bind],
		       cg->lim_len[cg->bind] == strlen(cg->dir) ? "of its own" :
								  "above it",
		       ut_size_str(cg->margin, b));
	else
		printf("umpressure: cgroup %s: no limit\n", cg->path);
	printf("umpressure: cgroup memory.current %s -> peak %s -> %s; memory.events oom_kill +%llu, max +%llu\n",
	       ut_size_str(cg->cur_start, a), ut_size_str(cg->cur_peak, b),
	       ut_size_str(cg->cur_end, c),
	       (unsigned long long)cg_delta(cg, CG_EV_OOM_KILL),
	       (unsigned long long)cg_delta(cg, CG_EV_MAX));
}

/* What the run filled, for a person: "node 1", or "all nodes" without --node. */
static const char *where_str(const struct opts *o, char buf[16])
{
	if (o->node < 0)
		return "all nodes";
	snprintf(buf, 16, "node %d", o->node);
	return buf;
}

static void report_text(const struct opts *o, const struct run *r)
{
	char a[UT_SIZE_STR], b[UT_SIZE_STR], c[UT_SIZE_STR], d[UT_SIZE_STR];
	char w[16];

	if (o->quiet)
		return;
	printf("umpressure: %s: held %s (stop: %s), free %s -> min %s, floor %s\n",
	       where_str(o, w), ut_size_str(r->peak, a), stop_names[r->stop],
	       ut_size_str(r->free_start, b), ut_size_str(r->free_min, c),
	       ut_size_str(r->floor, d));
	if (r->level_max != LV_NONE) {
		printf("umpressure: level reached %s", level_names[r->level_max]);
		for (int i = LV_LOW; i < LV_COUNT; i++)
			if (r->level_ms[i] >= 0)
				printf(", %s at %lld ms", level_names[i],
				       (long long)r->level_ms[i]);
		printf("\n");
	}
	if (o->cgroup)
		report_text_cgroup(&r->cg);
}

/* ---- options -------------------------------------------------------------- */

static void usage(void)
{
	printf("Usage: %s [options]\n"
	       "Allocate and touch memory on a NUMA node to create real pressure.\n\n"
	       "  -n, --node N          node to fill (default: no binding, the machine)\n"
	       "  -r, --rate MIB        MiB per second (default: as fast as possible)\n"
	       "  -t, --target SIZE     stop at SIZE bytes held (K/M/G/T/P/E)\n"
	       "  -u, --until-level L   stop when umm.ko says node level L\n"
	       "                        (low, medium, critical)\n"
	       "  -H, --hold SECS       hold the memory that long (default 0)\n"
	       "  -m, --min-free SIZE   never take the node below SIZE free, or\n"
	       "                        a percentage (\"5%%\"; default the kernel's\n"
	       "                        min watermark + 2%% of the node)\n"
	       "  -f, --force           ignore the floor\n"
	       "  -s, --step SIZE       allocation step (default 16M)\n"
	       "  -c, --cgroup PATH     join cgroup v2 PATH first (absolute, or\n"
	       "                        under the cgroup2 mount) and stop short of\n"
	       "                        its effective limit (2%% margin, >= 4M)\n"
	       "      --create          mkdir --cgroup's PATH if it is missing\n"
	       "      --oom-score-adj N write N to /proc/self/oom_score_adj\n"
	       "      --sysroot DIR     DIR stands for / (/sys, /proc; tests)\n"
	       "  -J, --json            print a JSON summary\n"
	       "  -q, --quiet           no text output\n"
	       "  -h, --help            this text\n"
	       "  -V, --version         the version\n\n"
	       "Exit: 0 goal reached, 1 error, 2 usage, 3 floor reached first,\n"
	       "130 interrupted. Memory is always released before exit.\n",
	       ut_progname);
}

static void parse_min_free(struct opts *o, const char *arg, double *pct)
{
	size_t n = strlen(arg);
	uint64_t v;

	if (n && arg[n - 1] == '%') {
		char num[32];

		if (n - 1 >= sizeof(num))
			ut_die_usage("bad --min-free '%s'", arg);
		memcpy(num, arg, n - 1);
		num[n - 1] = '\0';
		if (ut_parse_double(num, 0, 100, pct))
			ut_die_usage("bad --min-free '%s' (0..100%%)", arg);
		o->min_free_pct_set = true;
		return;
	}
	if (ut_parse_size(arg, &v))
		ut_die_usage("bad --min-free '%s'", arg);
	o->min_free = v;
	o->min_free_set = true;
}

static void parse(int argc, char **argv, struct opts *o, double *pct)
{
	static const struct option lo[] = {
		{ "node", required_argument, NULL, 'n' },
		{ "rate", required_argument, NULL, 'r' },
		{ "target", required_argument, NULL, 't' },
		{ "until-level", required_argument, NULL, 'u' },
		{ "hold", required_argument, NULL, 'H' },
		{ "min-free", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'f' },
		{ "step", required_argument, NULL, 's' },
		{ "oom-score-adj", required_argument, NULL, 'O' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "create", no_argument, NULL, 'C' },
		{ "sysroot", required_argument, NULL, UT_OPT_SYSROOT },
		{ "json", no_argument, NULL, 'J' },
		{ "quiet", no_argument, NULL, 'q' },
		UT_OPTS_TAIL,
	};
	uint64_t v;
	double d;
	int c;

	while ((c = getopt_long(argc, argv, "n:r:t:u:H:m:fs:c:JqhV", lo, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (ut_parse_u64(optarg, 0, 1023, &v))
				ut_die_usage("bad --node '%s' (0..1023)", optarg);
			o->node = (int)v;
			break;
		case 'r':
			if (ut_parse_double(optarg, 0.001, 1e6, &o->rate))
				ut_die_usage("bad --rate '%s' (MiB/s > 0)", optarg);
			break;
		case 't':
			if (ut_parse_size(optarg, &o->target) || !o->target)
				ut_die_usage("bad --target '%s'", optarg);
			break;
		case 'u':
			o->until = parse_level(optarg);
			if (o->until < LV_LOW)
				ut_die_usage("bad --until-level '%s' (low, medium, critical)",
					     optarg);
			break;
		case 'H':
			if (ut_parse_double(optarg, 0, 86400, &d))
				ut_die_usage("bad --hold '%s' (seconds)", optarg);
			o->hold = d;
			break;
		case 'm':
			parse_min_free(o, optarg, pct);
			break;
		case 'f':
			o->force = true;
			break;
		case 's':
			if (ut_parse_size_range(optarg, 4096, 1ull << 34,
						&o->step))
				ut_die_usage("bad --step '%s' (4K..16G)", optarg);
			break;
		case 'O':
			if (ut_parse_u64(optarg[0] == '-' ? optarg + 1 : optarg,
					 0, 1000, &v))
				ut_die_usage("bad --oom-score-adj '%s' (-1000..1000)",
					     optarg);
			o->oom_adj = optarg[0] == '-' ? -(int)v : (int)v;
			o->oom_adj_set = true;
			break;
		case 'c':
			if (!optarg[0])
				ut_die_usage("bad --cgroup '' (a cgroup v2 directory)");
			o->cgroup = optarg;
			break;
		case 'C':
			o->cg_create = true;
			break;
		case UT_OPT_SYSROOT:
			o->sysroot = optarg;
			break;
		case 'J':
			o->json = true;
			break;
		case 'q':
			o->quiet = true;
			break;
		default:
			ut_opt_common(c, usage);
		}
	}
	if (optind < argc)
		ut_die_usage("unexpected argument '%s'", argv[optind]);
	if (o->cg_create && !o->cgroup)
		ut_die_usage("--create needs --cgroup");
}

static int set_oom_adj(int v)
{
	char buf[16];
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	int n = snprintf(buf, sizeof(buf), "%d\n", v);

	if (fd < 0)
		return -errno;
	if (write(fd, buf, (size_t)n) != n) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .node = -1, .step = DEF_STEP, .until = LV_NONE };
	struct sigaction sa = { .sa_handler = on_signal };
	struct run r = { .free_min = UINT64_MAX };
	double pct = DEF_FLOOR_BP / 100.0;
	int ret;

	ut_set_progname(argv);
	parse(argc, argv, &o, &pct);
	ret = node_mem(&o, &r.free_start, &r.total);
	if (ret) {
		char w[16];

		ut_warn("cannot read the memory of %s%s%s", where_str(&o, w),
			o.sysroot ? " under " : "", o.sysroot ? o.sysroot : "");
		return o.node >= 0 ? 2 : 1;
	}
	if (o.until != LV_NONE && node_level(&o) == LV_NONE) {
		ut_warn("--until-level needs umm.ko's /sys/kernel/mm/umm/nodes/node%d/level",
			o.node < 0 ? 0 : o.node);
		return 2;
	}
	if (o.oom_adj_set && (ret = set_oom_adj(o.oom_adj))) {
		ut_warn("cannot set oom_score_adj: %s", strerror(-ret));
		return 1;
	}
	if (o.cgroup && cg_setup(&o, &r.cg))
		return 2;
	r.min_wmark = node_min_watermark(&o);
	r.floor = o.force ? 0 : o.min_free_set ? o.min_free :
		  (uint64_t)((double)r.total * pct / 100.0);
	if (!o.force && !o.min_free_set && !o.min_free_pct_set)
		r.floor += r.min_wmark;
	r.chunks = calloc(MAX_CHUNKS, sizeof(*r.chunks));
	if (!r.chunks) {
		ut_warn("out of memory");
		return 1;
	}
	for (int i = 0; i < LV_COUNT; i++)
		r.level_ms[i] = -1;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	r.t0 = ut_now_ns();
	fill(&o, &r);
	r.t_alloc_end = ut_now_ns();
	if (r.stop != ST_SIGNAL && r.stop != ST_NOMEM)
		hold(&o, &r);
	r.t_hold_end = ut_now_ns();
	release(&r);
	r.t_release_end = ut_now_ns();
	if (node_mem(&o, &r.free_end, &r.total))
		r.free_end = 0;
	if (o.cgroup) {
		r.cg.cur_end = cg_current(&r.cg);
		cg_events(&r.cg, r.cg.ev_end);
	}
	if (r.free_min == UINT64_MAX)
		r.free_min = r.free_start;
	if (o.json)
		report_json(&o, &r);
	else
		report_text(&o, &r);
	free(r.chunks);
	switch (r.stop) {
	case ST_TARGET:
	case ST_LEVEL:
		return 0;
	case ST_FLOOR:
	case ST_CGFLOOR:
		return o.target || o.until != LV_NONE ? 3 : 0;
	case ST_SIGNAL:
		return 130;
	default:
		char held[UT_SIZE_STR];

		ut_warn("allocation failed after %s",
			ut_size_str(r.peak, held));
		return 1;
	}
}
