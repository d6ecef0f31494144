/* SPDX-License-Identifier: MIT */
/*
 * pressure_cgroup.c - libum's own watch of its memory cgroup and host
 * budget, for when umm.ko does not watch them.
 *
 * A trainer in a container or a batch job is OOM-killed at its cgroup's
 * memory.max while the node has room; most such machines have no umm.ko.
 * So the loop samples memory.current of the cgroup it runs in (from
 * /proc/self/cgroup and the cgroup2 mount) against the effective limit, the
 * lowest memory.max or memory.high on the path up to the mount's root, or
 * the host budget (LIBUM_HOST_BUDGET) where that is lower. Where the
 * memory controller is cgroup v1's (RHEL 8, older Kubernetes and Slurm
 * nodes, a systemd "hybrid" layout) the same watch reads its files:
 * memory.usage_in_bytes against the lowest memory.limit_in_bytes (v1 has
 * no memory.high, and no PSI file per cgroup: sampling alone). Without a
 * memory controller the host budget is held against the process's
 * resident set. Levels come from the room left, as umm.ko's
 * cgroup/{low,medium,critical}_bp defaults have them (20, 10 and 5 % of the
 * limit), and each rise is answered like umm.ko's UMM_TIER_CGROUP PRESSURE:
 * released host copies to the spill tier and the pool trimmed
 * (pressure_shed.c). The sampling interval shrinks as the room does, so a
 * fast fill still gets CRITICAL before the limit; a PSI trigger on the
 * cgroup's memory.pressure, where we may write one, wakes a sample early.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/umm.h>

#include "internal.h"
#include "pressure_internal.h"
#include "util.h"

#define CG_LOW_BP	2000u		/* as umm.ko's cgroup/ defaults */
#define CG_MEDIUM_BP	1000u
#define CG_CRITICAL_BP	500u
#define CG_SLOW_NS	(100ull * 1000000)	/* sampling with room */
#define CG_FAST_NS	(2ull * 1000000)	/* the fastest */
#define CG_LIMITS_NS	(1000ull * 1000000)	/* limits re-read */
#define CG_REPEAT_NS	(1000ull * 1000000)	/* same level asked again */
/* a fill is assumed this fast until a faster one is seen, as in umm.ko */
#define CG_FAST_FILL_BPS (1ull << 30)
#define CG_PSI_TRIGGER	"some 150000 2000000"
#define CG_MAX_DEPTH	16
/* v1 writes "no limit" as the page counter's largest value, about 2^63 */
#define CG_V1_NO_LIMIT	(1ull << 62)

/* ---- finding our cgroup ------------------------------------------------ */

/* mountinfo writes space, tab, newline and backslash as \ooo. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

/* "memory" among the n bytes of a comma-separated list of names. */
static bool names_memory(const char *list, size_t n)
{
	while (n) {
		size_t k = strcspn(list, ",");

		if (k > n)
			k = n;
		if (k == 6 && !strncmp(list, "memory", 6))
			return true;
		k += k < n;	/* and its comma */
		list += k;
		n -= k;
	}
	return false;
}

/*
 * The mount of our memory controller's hierarchy: its point and the
 * cgroup path it shows as its root. v2: the cgroup2 mount; v1: the cgroup
 * mount whose super options name memory.
 */
static int cgroup_mount(bool v1, char *point, char *root, size_t len)
{
	char line[4096], r[PATH_MAX], p[PATH_MAX];
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (!sep || strncmp(sep, v1 ? " - cgroup " : " - cgroup2 ",
				    v1 ? 10 : 11) ||
		    sscanf(line, "%*s %*s %*s %4095s %4095s", r, p) != 2)
			continue;
		/* v1: " - cgroup SOURCE OPTIONS" */
		if (v1) {
			const char *opts = strchr(sep + 10, ' ');

			if (!opts ||
			    !names_memory(opts + 1, strcspn(opts + 1, " \n")))
				continue;
		}
		unescape(r);
		unescape(p);
		if (strlen(r) >= len || strlen(p) >= len)
			continue;
		strcpy(root, r);
		strcpy(point, p);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * Our cgroup's path in /proc/self/cgroup: v2's "0::" line, or v1's line
 * whose controllers name memory ("4:memory:/kubepods/...").
 */
static int cgroup_path(bool v1, char *path, size_t len)
{
	char line[PATH_MAX + 64];
	int ret = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *names = strchr(line, ':'), *p;
		size_t n;

		p = names ? strchr(names + 1, ':') : NULL;
		if (!p || (v1 ? !names_memory(names + 1,
					       (size_t)(p - names - 1)) :
				strncmp(line, "0::", 3)))
			continue;
		n = strcspn(p + 1, "\n");
		if (n >= len)
			break;
		memcpy(path, p + 1, n);
		path[n] = '\0';
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/*
 * The directory of our cgroup, and how far up its limits are looked for
 * (the mount point: above it are cgroups we cannot see).
 */
static int find_cgroup(struct um_cgwatch *w, bool v1, char *why, size_t len)
{
	char point[PATH_MAX], root[PATH_MAX], path[PATH_MAX];
	const char *rel;
	size_t rl;
	int ret;

	ret = cgroup_mount(v1, point, root, sizeof(point));
	if (ret) {
		snprintf(why, len, v1 ? "no cgroup v1 memory hierarchy mounted" :
				       "no cgroup2 file system mounted");
		return ret;
	}
	ret = cgroup_path(v1, path, sizeof(path));
	if (ret) {
		snprintf(why, len, v1 ? "no memory line in /proc/self/cgroup" :
				       "no cgroup v2 line in /proc/self/cgroup");
		return ret;
	}
	/* a mount of a subtree shows paths below its root */
	rel = path;
	rl = strlen(root);
	if (strcmp(root, "/") && !strncmp(path, root, rl) &&
	    (path[rl] == '/' || !path[rl]))
		rel = path + rl;
	if (snprintf(w->dir, sizeof(w->dir), "%s%s", point,
		     strcmp(rel, "/") ? rel : "") >= (int)sizeof(w->dir) ||
	    snprintf(w->top, sizeof(w->top), "%s", point) >=
		    (int)sizeof(w->top))
		return -ENAMETOOLONG;
	return 0;
}

/* ---- reading it ----------------------------------------------------------- */

/* What a read of n bytes into buf gave: one number and a newline. */
static int parse_counter(char *buf, ssize_t n, uint64_t *out)
{
	if (n <= 0)
		return n ? -errno : -EPROTO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return um__parse_size(buf, out) ? -EPROTO : 0;
}

/*
 * A memory.* value: a number, or none (UINT64_MAX): v2's "max", or v1's
 * largest value.
 */
static int read_value(int dirfd, const char *name, uint64_t *out)
{
	char buf[32];
	ssize_t n;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0)
		buf[n] = '\0';
	if (n > 0 && !strncmp(buf, "max", 3)) {
		*out = UINT64_MAX;
		return 0;
	}
	n = parse_counter(buf, n, out);
	if (!n && *out >= CG_V1_NO_LIMIT)
		*out = UINT64_MAX;
	return (int)n;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static void take_lower(struct um_cgwatch *w, uint64_t v, const char *file,
		       const char *dir)
{
	if (v >= w->limit)
		return;
	w->limit = v;
	snprintf(w->limit_what, sizeof(w->limit_what), "%s of %s", file,
		 dir);
}

/*
 * The effective limit: the lowest memory.max or memory.high (v1: memory.
 * limit_in_bytes) from our cgroup up to the top we can see (a Slurm job or
 * a pod slice sets it on a parent), or the host budget where lower.
 */
static void read_limits(struct um_cgwatch *w)
{
	char dir[PATH_MAX];
	uint64_t v;

	w->limit = UINT64_MAX;
	w->limit_what[0] = '\0';
	if (w->budget)
		take_lower(w, w->budget, "the host budget",
			   "host_budget / LIBUM_HOST_BUDGET");
	if (w->current_fd < 0)
		goto out;
	snprintf(dir, sizeof(dir), "%s", w->dir);
	for (int depth = 0; depth < CG_MAX_DEPTH; depth++) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		char *slash;

		if (fd < 0)
			break;
		for (int i = 0; i < 2 && w->files->limit[i]; i++)
			if (!read_value(fd, w->files->limit[i], &v))
				take_lower(w, v, w->files->limit[i], dir);
		close(fd);
		slash = strrchr(dir, '/');
		if (!strcmp(dir, w->top) || !slash || slash == dir)
			break;
		*slash = '\0';
	}
out:
	w->limits_ns = um__now_ns();
}

/* What counts against the limit: the cgroup's charge, or our RSS. */
static int read_usage(const struct um_cgwatch *w, uint64_t *out)
{
	unsigned long long size, res;
	char buf[128];
	ssize_t n;

	if (w->current_fd >= 0) {
		n = pread(w->current_fd, buf, sizeof(buf) - 1, 0);
		return parse_counter(buf, n, out);
	}
	n = pread(w->statm_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return n ? -errno : -EPROTO;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &res) != 2)
		return -EPROTO;
	*out = (uint64_t)res * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}

/* ---- levels ------------------------------------------------------------- */

static uint64_t mark(const struct um_cgwatch *w, unsigned int bp)
{
	return w->limit / 10000 * bp + w->limit % 10000 * bp / 10000;
}

static unsigned int level_of(const struct um_cgwatch *w, uint64_t room)
{
	if (room < mark(w, CG_CRITICAL_BP))
		return UMM_LEVEL_CRITICAL;
	if (room < mark(w, CG_MEDIUM_BP))
		return UMM_LEVEL_MEDIUM;
	if (room < mark(w, CG_LOW_BP))
		return UMM_LEVEL_LOW;
	return UMM_LEVEL_NORMAL;
}

/* Room that ends a hot spell: a quarter above the low mark. */
static uint64_t relief_room(const struct um_cgwatch *w)
{
	uint64_t low = mark(w, CG_LOW_BP);

	return low + low / 4;
}

/* The room of the next level down, 0 at CRITICAL (the limit itself). */
static uint64_t next_mark(const struct um_cgwatch *w, unsigned int level)
{
	switch (level) {
	case UMM_LEVEL_NORMAL:
		return mark(w, CG_LOW_BP);
	case UMM_LEVEL_LOW:
		return mark(w, CG_MEDIUM_BP);
	case UMM_LEVEL_MEDIUM:
		return mark(w, CG_CRITICAL_BP);
	default:
		return 0;
	}
}

/*
 * Half the time to the next level at the rate seen, or to the limit at
 * the fastest fill seen (at least CG_FAST_FILL_BPS): sampling gets faster
 * as the room shrinks, so a fill cannot cross a level between samples.
 */
static uint64_t next_interval(const struct um_cgwatch *w, uint64_t room)
{
	uint64_t t = CG_SLOW_NS, fast, nm, gap;

	fast = w->max_bps > CG_FAST_FILL_BPS ? w->max_bps : CG_FAST_FILL_BPS;
	t = min_u64(t, (uint64_t)((double)room / (double)fast * 5e8));
	nm = next_mark(w, w->level);
	if (w->bps && room > nm) {
		gap = room - nm;
		t = min_u64(t, (uint64_t)((double)gap /
					      (double)w->bps * 5e8));
	}
	return t < CG_FAST_NS ? CG_FAST_NS : t;
}

static uint32_t eta_ms(const struct um_cgwatch *w, uint64_t room)
{
	double ms;

	if (!w->bps)
		return 0;
	ms = (double)room / (double)w->bps * 1e3;
	return ms > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)ms + 1;
}

static void fill_rate(struct um_cgwatch *w, uint64_t usage, uint64_t now)
{
	uint64_t dt = now - w->last_ns;

	if (w->last_ns && dt) {
		uint64_t bps = usage > w->last_usage ?
			(uint64_t)((double)(usage - w->last_usage) * 1e9 /
				   (double)dt) : 0;

		/* smoothed, so that one quiet sample does not hide a fill */
		w->bps = (w->bps + 3 * bps) / 4;
		if (bps > w->max_bps)
			w->max_bps = bps;
	}
	w->last_usage = usage;
	w->last_ns = now;
}

/* ---- answering ---------------------------------------------------------- */

/* What umm.ko would have sent about our cgroup, for pressure_shed.c. */
static struct umm_event cg_event(const struct um_cgwatch *w, uint32_t type,
				 uint64_t room, uint64_t ask)
{
	return (struct umm_event){
		.type = type,
		.size = sizeof(struct umm_event),
		.tier_type = UMM_TIER_CGROUP,
		.ts_ns = um__now_ns(),
		.tier_id = w->id,
		.level = w->level,
		.bytes_to_free = ask,
		.bytes_free = room,
		.dest_node = UMM_NODE_NONE,
		.eta_ms = eta_ms(w, room),
	};
}

/* The last sample's figures, for um__pressure_stats(). */
static void publish(struct um_pressure *pr)
{
	const struct um_cgwatch *w = &pr->cgw;

	pthread_mutex_lock(&pr->st_lock);
	pr->st.cgroup_usage = w->usage;
	pr->st.cgroup_limit = w->limit;
	pr->st.cgroup_level = w->level;
	pthread_mutex_unlock(&pr->st_lock);
}

static void on_level(struct um_pressure *pr, uint64_t room, uint64_t now)
{
	struct um_cgwatch *w = &pr->cgw;
	unsigned int level = level_of(w, room);
	struct umm_event ev;
	uint64_t freed = 0, want;

	if (w->level >= UMM_LEVEL_LOW && level == UMM_LEVEL_NORMAL &&
	    room < relief_room(w))
		level = UMM_LEVEL_LOW;	/* not out of it yet */
	if (level == UMM_LEVEL_NORMAL) {
		bool was_hot = w->level >= UMM_LEVEL_LOW;

		w->level = level;
		if (was_hot) {
			ev = cg_event(w, UMM_EVENT_RELIEF, room, 0);
			um__pressure_steer_back(pr, &ev);
			um__pressure_post_event(pr->ctx, UM_TIER_HOST_ANY,
						UM_TIER_NONE, 0, level);
		}
		return;
	}
	if (level <= w->level && now - w->asked_ns < CG_REPEAT_NS)
		return;
	w->level = level;
	w->asked_ns = now;
	want = relief_room(w);
	ev = cg_event(w, UMM_EVENT_PRESSURE, room,
		      want > room ? want - room : 0);
	publish(pr);
	um__pressure_answer(pr, &ev, &freed);
	/* counted once answered: what it did shows with it */
	pthread_mutex_lock(&pr->st_lock);
	pr->st.events++;
	pr->st.cgroup_own_events++;
	pthread_mutex_unlock(&pr->st_lock);
}

static void sample(struct um_pressure *pr)
{
	struct um_cgwatch *w = &pr->cgw;
	uint64_t usage, room, now = um__now_ns();

	if (now - w->limits_ns >= CG_LIMITS_NS)
		read_limits(w);
	if (read_usage(w, &usage))
		return;
	fill_rate(w, usage, now);
	w->usage = usage;
	if (w->limit == UINT64_MAX) {
		w->interval_ns = CG_SLOW_NS;
		return;
	}
	room = usage < w->limit ? w->limit - usage : 0;
	on_level(pr, room, now);
	w->interval_ns = next_interval(w, room);
	publish(pr);
}

/* ---- the source ------------------------------------------------------- */

static void open_psi(struct um_cgwatch *w)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/memory.pressure", w->dir);
	w->psi_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (w->psi_fd < 0)
		return;
	if (write(w->psi_fd, CG_PSI_TRIGGER, sizeof(CG_PSI_TRIGGER)) < 0) {
		close(w->psi_fd);
		w->psi_fd = -1;
	}
}

static const struct um_cg_files cg_v2 = {
	"memory.current", { "memory.max", "memory.high" },
};
static const struct um_cg_files cg_v1 = {
	"memory.usage_in_bytes", { "memory.limit_in_bytes", NULL },
};

static bool has_file(const char *dir, const char *name)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

/*
 * Our cgroup's directory and files: v2's where it has its memory
 * controller, else v1's memory hierarchy where there is one; *why says
 * why not v2 (false: neither).
 */
static bool pick_cgroup(struct um_cgwatch *w, const char *forced, char *why,
			size_t len)
{
	char why1[128];
	int v2;

	w->files = &cg_v2;
	if (forced) {
		/* named by hand: its limits and every parent's we can read */
		snprintf(w->dir, sizeof(w->dir), "%s", forced);
		w->top[0] = '\0';
		if (!has_file(w->dir, cg_v2.usage) &&
		    has_file(w->dir, cg_v1.usage))
			w->files = &cg_v1;
		return true;
	}
	v2 = find_cgroup(w, false, why, len);
	if (!v2 && has_file(w->dir, cg_v2.usage))
		return true;
	if (!find_cgroup(w, true, why1, sizeof(why1)) &&
	    has_file(w->dir, cg_v1.usage)) {
		w->files = &cg_v1;
		return true;
	}
	if (v2) {
		size_t n = strlen(why);

		snprintf(why + n, len - n, ", %s", why1);
		return false;
	}
	/* v2's cgroup again: its missing file is the reason given */
	return !find_cgroup(w, false, why, len);
}

/* Our cgroup's usage file, or no cgroup to watch (*why says so). */
static void open_cgroup(struct um_pressure *pr, char *why, size_t len)
{
	struct um_cgwatch *w = &pr->cgw;
	char path[PATH_MAX + 32];
	struct stat st;

	why[0] = '\0';
	if (!pick_cgroup(w, pr->ctx->set.cgroup_dir, why, len))
		return;
	snprintf(path, sizeof(path), "%s/%s", w->dir, w->files->usage);
	w->current_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (w->current_fd < 0) {
		snprintf(why, len, "%s: %s%s", path, strerror(errno),
			 errno == ENOENT ?
				 " (no memory controller on our cgroup, v2 or v1)" :
				 "");
		return;
	}
	if (!stat(w->dir, &st))
		w->id = (uint32_t)st.st_ino;
	open_psi(w);
}

int um__cgwatch_open(struct um_pressure *pr, char *why, size_t len)
{
	struct um_cgwatch *w = &pr->cgw;
	bool timer_armed = w->timer_armed, psi_armed = w->psi_armed;

	if (w->open)
		return 0;
	/*
	 * A request of an earlier opening may still be on the ring: its
	 * completion finds the flag set and this opening goes on from it.
	 */
	*w = (struct um_cgwatch){ .current_fd = -1, .psi_fd = -1,
				  .statm_fd = -1,
				  .budget = pr->ctx->set.host_budget,
				  .timer_armed = timer_armed,
				  .psi_armed = psi_armed };
	open_cgroup(pr, why, len);
	if (w->current_fd < 0 && w->budget) {
		w->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
		if (w->statm_fd < 0) {
			snprintf(why, len, "/proc/self/statm: %s",
				 strerror(errno));
			return -errno;
		}
	}
	if (w->current_fd < 0 && w->statm_fd < 0)
		return -ENOENT;
	read_limits(w);
	if (w->limit == UINT64_MAX) {
		snprintf(why, len, w->files == &cg_v1 ?
			 "memory.limit_in_bytes unlimited on %s and up, and no host budget" :
			 "no memory.max or memory.high on %s and no host budget",
			 w->dir);
		um__cgwatch_close(pr);
		return -ENOENT;
	}
	w->level = UMM_LEVEL_NORMAL;
	w->interval_ns = CG_SLOW_NS;
	w->open = true;
	return 0;
}

void um__cgwatch_close(struct um_pressure *pr)
{
	struct um_cgwatch *w = &pr->cgw;

	if (w->current_fd >= 0)
		close(w->current_fd);
	if (w->psi_fd >= 0)
		close(w->psi_fd);
	if (w->statm_fd >= 0)
		close(w->statm_fd);
	w->current_fd = w->psi_fd = w->statm_fd = -1;
	w->open = false;
}

/*
 * On the loop's thread, with its ring alive: a poll of the closed trigger
 * would never complete (the ring holds the file), so it is cancelled.
 */
void um__cgwatch_stop(struct um_pressure *pr)
{
	if (pr->cgw.psi_armed)
		um__pq_cancel(&pr->q, UM_PTAG_CGPSI);
	um__cgwatch_close(pr);
}

void um__cgwatch_describe(const struct um_pressure *pr, char *buf,
			  size_t len)
{
	const struct um_cgwatch *w = &pr->cgw;

	snprintf(buf, len, "%s, %llu MiB", w->limit_what,
		 (unsigned long long)(w->limit >> 20));
}

static bool cg_active(const struct um_pressure *pr)
{
	return pr->cgw.open;
}

static void arm_timer(struct um_pressure *pr)
{
	struct um_cgwatch *w = &pr->cgw;

	if (!w->open || w->timer_armed)
		return;
	w->timer_armed = um__pq_timeout(&pr->q, w->interval_ns,
					UM_PTAG_CGROUP);
}

static void on_timer(struct um_pressure *pr, int res)
{
	(void)res;	/* -ETIME: the interval passed */
	pr->cgw.timer_armed = false;
	if (!pr->cgw.open)
		return;
	sample(pr);
	arm_timer(pr);
}

static bool cg_psi_active(const struct um_pressure *pr)
{
	return pr->cgw.open && pr->cgw.psi_fd >= 0;
}

static void arm_cg_psi(struct um_pressure *pr)
{
	struct um_cgwatch *w = &pr->cgw;

	if (!w->open || w->psi_fd < 0 || w->psi_armed)
		return;
	w->psi_armed = um__pq_poll(&pr->q, w->psi_fd, POLLPRI, UM_PTAG_CGPSI);
}

/* Tasks of our cgroup stall on memory: look now, not at the next tick. */
static void on_cg_psi(struct um_pressure *pr, int res)
{
	struct um_cgwatch *w = &pr->cgw;

	w->psi_armed = false;
	if (res == -ECANCELED) {
		arm_cg_psi(pr);	/* a newer opening's trigger, if any */
		return;
	}
	if (!w->open || w->psi_fd < 0)
		return;
	if (res < 0 || (res & (POLLERR | POLLNVAL))) {
		close(w->psi_fd);
		w->psi_fd = -1;
		return;
	}
	sample(pr);
	arm_cg_psi(pr);
}

const struct um_psource um__psource_cgroup = {
	.bit = UM_PSRC_CGROUP,
	.name = "memory cgroup",
	.active = cg_active,
	.arm = arm_timer,
	.done = on_timer,
	.close = um__cgwatch_close,
};

const struct um_psource um__psource_cgroup_psi = {
	.bit = UM_PSRC_CGROUP,
	.name = "memory cgroup PSI trigger",
	.active = cg_psi_active,
	.arm = arm_cg_psi,
	.done = on_cg_psi,
	.close = um__cgwatch_close,
};
