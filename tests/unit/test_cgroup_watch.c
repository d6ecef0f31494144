/* SPDX-License-Identifier: MIT */
/*
 * Description: libum's own watch of its memory cgroup and host budget
 * (libum/src/pressure_cgroup.c), for machines without umm.ko. The cgroup is
 * a tree of plain files under /var/tmp named by LIBUM_CGROUP_DIR (this
 * machine's cgroups cannot be made to fill on demand): memory.current, and
 * memory.max and memory.high on the cgroup and its parent. Writing
 * memory.current is a fill; the pressure loop samples it on its own thread,
 * so the tests wait (bounded only as a guard against a hang) for what it
 * does: released host copies spilled, the application told, the figures,
 * the relief, and one ERR line naming the limit when it cannot be met; and
 * the same where a seccomp profile refuses io_uring. The
 * real cgroup files are exercised in the VM (tests/e2e, e2e_cgroup_own).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"
#include "pressure_internal.h"

#define NREG	4
#define RBYTES	(4 * MiB)
#define LIMIT	(256 * MiB)
/* iterations of 10 ms: a guard against a hang, not a time limit */
#define GUARD	2000

struct seen {
	pthread_mutex_t lock;
	int pressure, relief;
	struct um_event last;
};

static void on_event(void *arg, const struct um_event *ev)
{
	struct seen *s = arg;

	if (ev->type != UM_EVENT_PRESSURE)
		return;
	pthread_mutex_lock(&s->lock);
	if (!ev->level)
		s->relief++;
	else
		s->pressure++;
	s->last = *ev;
	pthread_mutex_unlock(&s->lock);
}

struct tree {
	char root[64];		/* the parent: a job or a pod */
	char cg[96];		/* ours, inside it */
	char spill[96];
	const char *usage;	/* memory.current, or v1's file */
};

static int put(const char *dir, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int put(const char *dir, const char *name, const char *fmt, ...)
{
	char path[256], text[64];
	va_list ap;
	ssize_t n;
	int fd, len;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	va_start(ap, fmt);
	len = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/*
	 * In place, as the kernel's file changes (the loop keeps
	 * memory.current open), in one write: a read between the truncation
	 * and the write sees an empty file, which the loop skips.
	 */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	n = write(fd, text, (size_t)len);
	return close(fd) || n != len ? -1 : 0;
}

static int make_dirs(struct tree *t)
{
	snprintf(t->root, sizeof(t->root), "/var/tmp/um-test-cgw.XXXXXX");
	if (!mkdtemp(t->root))
		return -1;
	snprintf(t->cg, sizeof(t->cg), "%s/trainer", t->root);
	snprintf(t->spill, sizeof(t->spill), "%s/spill", t->root);
	return mkdir(t->cg, 0700);
}

static int make_tree(struct tree *t, const char *parent_max,
		     const char *own_max, const char *own_high)
{
	t->usage = "memory.current";
	if (make_dirs(t))
		return -1;
	return put(t->root, "memory.max", "%s\n", parent_max) ||
	       put(t->root, "memory.high", "max\n") ||
	       put(t->cg, "memory.max", "%s\n", own_max) ||
	       put(t->cg, "memory.high", "%s\n", own_high) ||
	       put(t->cg, "memory.current", "%llu\n", 40 * MiB) ? -1 : 0;
}

/* The same as cgroup v1 writes it: no memory.high, "no limit" a number. */
static int make_tree_v1(struct tree *t, const char *parent_limit)
{
	t->usage = "memory.usage_in_bytes";
	if (make_dirs(t))
		return -1;
	return put(t->root, "memory.limit_in_bytes", "%s\n", parent_limit) ||
	       put(t->cg, "memory.limit_in_bytes", "9223372036854771712\n") ||
	       put(t->cg, t->usage, "%llu\n", 40 * MiB) ? -1 : 0;
}

/* A captured line of level holding the formatted text. */
static int has_line(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int has_line(int level, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return logcap_has(level, text, NULL);
}

static void rm_tree(const struct tree *t)
{
	char cmd[128];

	if (!t->root[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", t->root);
	if (system(cmd))
		return;
}

/* A sim context without the module or PSI, watching t's cgroup. */
static struct um_context *watch_ctx(const struct tree *t, bool spill,
				    uint64_t host_budget)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;

	setenv("LIBUM_PRESSURE", "1", 1);
	setenv("LIBUM_UMM_DEV", "/dev/null", 1);
	setenv("LIBUM_PSI_PATH", "/nonexistent/pressure", 1);
	if (t)
		setenv("LIBUM_CGROUP_DIR", t->cg, 1);
	else
		setenv("LIBUM_CGROUP_DIR", "/nonexistent", 1);
	cfg_sim(&cfg, 0, 64 * MiB);
	cfg.spill_dir = spill && t ? t->spill : "off";
	if (host_budget) {
		char v[32];

		snprintf(v, sizeof(v), "%llu", (unsigned long long)host_budget);
		setenv("LIBUM_HOST_BUDGET", v, 1);
	}
	logcap_reset();
	if (um_context_create(&cfg, &ctx))
		return NULL;
	return ctx;
}

static void unset_env(void)
{
	unsetenv("LIBUM_CGROUP_DIR");
	unsetenv("LIBUM_HOST_BUDGET");
}

/* NREG released regions with host copies only, each its own pattern. */
static int host_copies(struct um_context *ctx, um_region_t *r)
{
	for (int i = 0; i < NREG; i++) {
		void *p;

		r[i] = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, RBYTES, "cgw");
		if (!r[i] || um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL) ||
		    um_ptr(ctx, r[i], &p))
			return -1;
		pattern_fill(p, RBYTES, 300 + (uint64_t)i);
		if (um_release(ctx, r[i]) ||
		    um_evict(ctx, r[i], UM_TIER_HOST_NODE(0)) ||
		    um_wait_all(ctx))
			return -1;
	}
	return um_pool_trim(ctx) < 0 ? -1 : 0;
}

static int on_disk(struct um_context *ctx, const um_region_t *r)
{
	int n = 0;

	for (int i = 0; i < NREG; i++)
		n += residency(ctx, r[i]) == UM_TIER_DISK;
	return n;
}

static int check_and_free(struct um_context *ctx, const um_region_t *r)
{
	for (int i = 0; i < NREG; i++) {
		void *p;

		if (um_acquire(ctx, r[i], UM_TIER_GPU(0), NULL) ||
		    um_ptr(ctx, r[i], &p) ||
		    pattern_check(p, RBYTES, 300 + (uint64_t)i) != -1 ||
		    um_release(ctx, r[i]) || um_free(ctx, r[i]))
			return -1;
	}
	return 0;
}

static struct um_pressure_stats pstats(struct um_context *ctx)
{
	struct um_pressure_stats st;
	struct um_stats s = { .size = sizeof(s) };

	/* a public call: it delivers the events queued meanwhile */
	(void)um_stats_get(ctx, &s);
	um__pressure_stats(ctx, &st);
	return st;
}

/* Until the loop has raised n events of its own (false on the guard). */
static bool wait_own_events(struct um_context *ctx, uint64_t n)
{
	for (int i = 0; i < GUARD; i++) {
		if (pstats(ctx).cgroup_own_events >= n)
			return true;
		usleep(10000);
	}
	return false;
}

static bool wait_cold(struct um_context *ctx, struct seen *s)
{
	for (int i = 0; i < GUARD; i++) {
		int relief;

		(void)pstats(ctx);
		pthread_mutex_lock(&s->lock);
		relief = s->relief;
		pthread_mutex_unlock(&s->lock);
		if (relief && !atomic_load(&ctx->cgroup_hot))
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * 50 MiB of room: under the low 20 % of the limit; the ask (14 MiB, up to
 * a quarter above the low mark) is what we hold: every host copy goes to
 * the spill and the application is told.
 */
static void spill_at_low(struct __test_metadata *_metadata,
			 struct um_context *ctx, const struct tree *t,
			 const um_region_t *r, struct seen *seen)
{
	ASSERT_EQ(0, put(t->cg, t->usage, "%llu\n", LIMIT - 50 * MiB));
	ASSERT_TRUE(wait_own_events(ctx, 1));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(NREG, on_disk(ctx, r));
	ASSERT_EQ((uint32_t)UMM_LEVEL_LOW, pstats(ctx).cgroup_level);
	ASSERT_GE(pstats(ctx).cgroup_freed, 14 * MiB - 2);
	pthread_mutex_lock(&seen->lock);
	ASSERT_GE(seen->pressure, 1);
	ASSERT_EQ(UM_TIER_HOST_ANY, seen->last.from);
	ASSERT_EQ(UM_TIER_DISK, seen->last.to);
	ASSERT_EQ(1u, seen->last.level);
	pthread_mutex_unlock(&seen->lock);
}

/* Room again, past the low mark and its quarter: the spell ends quietly. */
static void relief_with_room(struct __test_metadata *_metadata,
			     struct um_context *ctx, const struct tree *t,
			     struct seen *seen)
{
	ASSERT_EQ(0, put(t->cg, t->usage, "%llu\n", 64 * MiB));
	ASSERT_TRUE(wait_cold(ctx, seen));
	ASSERT_EQ((uint32_t)UMM_LEVEL_NORMAL, pstats(ctx).cgroup_level);
	ASSERT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);
}

TEST(parent_limit_spills_host_copies_then_relief)
{
	struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct um_pressure_stats st;
	struct um_context *ctx;
	struct tree t = { 0 };
	um_region_t r[NREG];

	ASSERT_EQ(0, make_tree(&t, "268435456", "max", "max"));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_NONNULL(ctx->spill);
	ASSERT_TRUE(um__pressure_sources(ctx) & UM_PSRC_CGROUP);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "memory cgroup: watching memory.max of %s, 256 MiB",
			       t.root)) TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &seen));
	st = pstats(ctx);
	ASSERT_EQ(0u, st.cgroup_own_events);

	spill_at_low(_metadata, ctx, &t, r, &seen);
	st = pstats(ctx);
	ASSERT_EQ(LIMIT, st.cgroup_limit);
	ASSERT_EQ(LIMIT - 50 * MiB, st.cgroup_usage);
	ASSERT_EQ(0u, st.cgroup_unmet);
	ASSERT_EQ(50 * MiB, st.cgroup_room);
	pthread_mutex_lock(&seen.lock);
	/* 5 % and 1.25 x 20 % of the limit, rounded down */
	ASSERT_GE(seen.last.bytes, 14 * MiB - 2);
	ASSERT_LE(seen.last.bytes, 14 * MiB);
	pthread_mutex_unlock(&seen.lock);
	relief_with_room(_metadata, ctx, &t, &seen);

	ASSERT_EQ(0, check_and_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

/*
 * cgroup v1's memory controller (RHEL 8, older Kubernetes and Slurm
 * nodes): the same watch on its files, the limit on the parent, the
 * cgroup's own "no limit" (v1's largest value) not taken for one.
 */
TEST(v1_files_watched_the_same)
{
	struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct um_context *ctx;
	struct tree t = { 0 };
	um_region_t r[NREG];

	ASSERT_EQ(0, make_tree_v1(&t, "268435456"));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_TRUE(um__pressure_sources(ctx) & UM_PSRC_CGROUP);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "memory cgroup: watching memory.limit_in_bytes of %s, 256 MiB",
			       t.root)) TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &seen));
	spill_at_low(_metadata, ctx, &t, r, &seen);
	ASSERT_EQ(LIMIT, pstats(ctx).cgroup_limit);
	relief_with_room(_metadata, ctx, &t, &seen);
	ASSERT_EQ(0, check_and_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

/* v1 with no limit anywhere: nothing to watch, and said so. */
TEST(v1_without_a_limit_not_watched)
{
	struct um_context *ctx;
	struct tree t = { 0 };

	ASSERT_EQ(0, make_tree_v1(&t, "9223372036854771712"));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_FALSE(um__pressure_sources(ctx) & UM_PSRC_CGROUP);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "memory.limit_in_bytes unlimited on %s and up",
			       t.cg)) TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

/* ---- a real cgroup v1 memory controller, where this machine has one ---- */

#define V1_MOUNT	"/sys/fs/cgroup/memory"
#define V1_LIMIT	(320 * MiB)
#define V1_STEP		(4 * MiB)

/* A child of our own v1 memory cgroup (so any limit above still holds). */
static int v1_child(char *dir, size_t len)
{
	char line[512], *p;
	int ret = -ENOENT;
	FILE *f;

	if (access(V1_MOUNT "/memory.limit_in_bytes", F_OK))
		return -ENOENT;
	f = fopen("/proc/self/cgroup", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		p = strstr(line, ":memory:");
		if (!p)
			continue;
		p[strcspn(p, "\n")] = '\0';
		ret = snprintf(dir, len, V1_MOUNT "%s/um-test-v1.%d",
			       strcmp(p + 8, "/") ? p + 8 : "",
			       (int)getpid()) < (int)len ? 0 : -E2BIG;
		break;
	}
	fclose(f);
	if (!ret && mkdir(dir, 0700))
		ret = -errno;
	return ret;
}

static uint64_t v1_value(const char *dir, const char *name, const char *key)
{
	char path[PATH_MAX + 32], k[64];
	unsigned long long v, got = UINT64_MAX;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	if (!f)
		return UINT64_MAX;
	if (!key) {
		if (fscanf(f, "%llu", &v) == 1)
			got = v;
	} else {
		while (fscanf(f, "%63s %llu", k, &v) == 2)
			if (!strcmp(k, key))
				got = v;
	}
	fclose(f);
	return got;
}

/*
 * In the v1 cgroup, with the module and PSI off: fill until the watch
 * asks (exit 0), each failure its own status.
 */
static int v1_trainer(const char *dir, const char *spill)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;
	um_region_t r[NREG];
	char want[PATH_MAX + 64];
	void *fill[V1_LIMIT / V1_STEP];
	int n = 0, ret = 0;

	setenv("LIBUM_PRESSURE", "1", 1);
	setenv("LIBUM_UMM_DEV", "/dev/null", 1);
	setenv("LIBUM_PSI_PATH", "/nonexistent/pressure", 1);
	unsetenv("LIBUM_CGROUP_DIR");
	cfg_sim(&cfg, 0, 64 * MiB);
	cfg.spill_dir = spill;
	logcap_reset();
	if (um_context_create(&cfg, &ctx))
		return 10;
	snprintf(want, sizeof(want), "watching memory.limit_in_bytes of %s, 320 MiB",
		 dir);
	if (!(um__pressure_sources(ctx) & UM_PSRC_CGROUP) ||
	    !logcap_has(UM_LOG_INFO, want, NULL)) {
		fprintf(stderr, "# log: %s\n", g_log.text);
		return 11;
	}
	if (host_copies(ctx, r))
		return 12;
	/* a real fill, in steps: the watch must ask before the limit */
	while (!ret && !pstats(ctx).cgroup_own_events) {
		uint64_t used = v1_value(dir, "memory.usage_in_bytes", NULL);

		if (used == UINT64_MAX || used + 2 * V1_STEP >= V1_LIMIT ||
		    n == (int)(sizeof(fill) / sizeof(*fill)))
			ret = 13;
		else if (!(fill[n] = malloc(V1_STEP)))
			ret = 14;
		else
			memset(fill[n++], 1, V1_STEP);
		usleep(20000);
	}
	if (!ret)
		fprintf(stderr, "# v1: asked at %llu MiB of %llu, after %d MiB of fill\n",
			(unsigned long long)pstats(ctx).cgroup_usage >> 20,
			(unsigned long long)V1_LIMIT >> 20, n * 4);
	for (int i = 0; !ret && i < GUARD && on_disk(ctx, r) < NREG; i++)
		usleep(10000);
	if (!ret && on_disk(ctx, r) < NREG)
		ret = 15;
	while (n)
		free(fill[--n]);
	if (!ret && check_and_free(ctx, r))
		ret = 16;
	if (um_context_destroy(ctx) && !ret)
		ret = 17;
	return ret;
}

TEST(real_v1_cgroup_watched_before_its_limit)
{
	char dir[PATH_MAX], spill[] = "/var/tmp/um-test-v1s.XXXXXX";
	int go[2], status = 0, err;
	pid_t pid;
	char b = 0;

	err = v1_child(dir, sizeof(dir));
	if (err)
		SKIP(return, "no cgroup v1 memory controller we may use here (%s)",
		     strerror(-err));
	ASSERT_NONNULL(mkdtemp(spill));
	ASSERT_EQ(0, put(dir, "memory.limit_in_bytes", "%llu\n",
			 (unsigned long long)V1_LIMIT));
	ASSERT_EQ(0, pipe(go));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		close(go[1]);
		_exit(read(go[0], &b, 1) == 1 ? v1_trainer(dir, spill) : 9);
	}
	close(go[0]);
	if (put(dir, "cgroup.procs", "%d\n", (int)pid)) {
		err = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		rmdir(dir);
		SKIP(return, "cannot move a process into %s (%s)", dir,
		     strerror(err));
	}
	ASSERT_EQ(1, write(go[1], &b, 1));
	close(go[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status)) TH_LOG("killed by signal %d",
					     WTERMSIG(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0u, v1_value(dir, "memory.oom_control", "oom_kill"));
	EXPECT_EQ(0, rmdir(dir));
	snprintf(dir, sizeof(dir), "rm -rf '%s'", spill);
	EXPECT_EQ(0, system(dir));
}

/*
 * Where a seccomp profile refuses io_uring (Docker's, containerd's), the
 * loop waits in poll(2) and the spill tier writes with pwrite: the watch
 * samples on its timer all the same, the application is told, released
 * host copies are spilled and come back intact, the relief comes.
 */
TEST(watch_and_spill_work_where_io_uring_is_refused)
{
	struct seen seen = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct um_context *ctx;
	struct tree t = { 0 };
	um_region_t r[NREG];

	ASSERT_EQ(0, make_tree(&t, "268435456", "max", "max"));
	ASSERT_EQ(0, refuse_io_uring());
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx) TH_LOG("log: %s", g_log.text);
	ASSERT_NONNULL(ctx->spill);
	ASSERT_TRUE(um__pressure_sources(ctx) & UM_PSRC_CGROUP)
		TH_LOG("log: %s", g_log.text);
	ASSERT_FALSE(ctx->pressure->q.on_ring);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "waits in poll(2)"));
	ASSERT_TRUE(has_line(UM_LOG_INFO, "pread and pwrite"));
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_EQ(0, um_set_event_callback(ctx, on_event, &seen));
	spill_at_low(_metadata, ctx, &t, r, &seen);
	relief_with_room(_metadata, ctx, &t, &seen);
	/* every byte back from the spill, checksummed and compared */
	ASSERT_EQ(0, check_and_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

TEST(memory_high_below_max_is_the_limit)
{
	struct um_context *ctx;
	struct tree t = { 0 };

	ASSERT_EQ(0, make_tree(&t, "max", "536870912", "134217728"));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "watching memory.high of %s, 128 MiB",
			       t.cg)) TH_LOG("log: %s", g_log.text);
	/* 20 MiB left under high: LOW (20 %) but not MEDIUM (10 %) */
	ASSERT_EQ(0, put(t.cg, "memory.current", "%llu\n", 108 * MiB));
	ASSERT_TRUE(wait_own_events(ctx, 1));
	ASSERT_EQ(128 * MiB, pstats(ctx).cgroup_limit);
	ASSERT_EQ((uint32_t)UMM_LEVEL_LOW, pstats(ctx).cgroup_level);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

TEST(no_limit_no_watch)
{
	struct um_context *ctx;
	struct tree t = { 0 };

	ASSERT_EQ(0, make_tree(&t, "max", "max", "max"));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_FALSE(um__pressure_sources(ctx) & UM_PSRC_CGROUP);
	ASSERT_TRUE(has_line(UM_LOG_INFO,
			       "no memory.max or memory.high on %s and no host budget",
			       t.cg)) TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

TEST(no_memory_controller_named)
{
	struct um_context *ctx;
	struct tree t = { 0 };
	char path[160];

	ASSERT_EQ(0, make_tree(&t, "268435456", "max", "max"));
	snprintf(path, sizeof(path), "%s/memory.current", t.cg);
	ASSERT_EQ(0, unlink(path));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_FALSE(um__pressure_sources(ctx) & UM_PSRC_CGROUP);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "no memory controller on our cgroup"))
		TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

/* A host budget where no cgroup exists: held against our own RSS. */
TEST(host_budget_without_cgroup)
{
	struct um_pressure_stats st;
	struct um_context *ctx;
	uint64_t budget;
	long rss_pages = 0;
	FILE *f;

	f = fopen("/proc/self/statm", "r");
	ASSERT_NONNULL(f);
	ASSERT_EQ(1, fscanf(f, "%*d %ld", &rss_pages));
	fclose(f);
	/* the smallest budget, below what we hold: over it at once */
	budget = 1 * MiB;
	ASSERT_GT((uint64_t)rss_pages * (uint64_t)sysconf(_SC_PAGESIZE),
		  budget);
	ctx = watch_ctx(NULL, false, budget);
	ASSERT_NONNULL(ctx);
	ASSERT_TRUE(um__pressure_sources(ctx) & UM_PSRC_CGROUP);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "watching the host budget of host_budget / LIBUM_HOST_BUDGET"))
		TH_LOG("log: %s", g_log.text);
	ASSERT_TRUE(wait_own_events(ctx, 1)) TH_LOG("log: %s", g_log.text);
	st = pstats(ctx);
	ASSERT_EQ(budget, st.cgroup_limit);
	ASSERT_EQ((uint32_t)UMM_LEVEL_CRITICAL, st.cgroup_level);
	ASSERT_GE(st.cgroup_usage, budget);
	ASSERT_EQ(0, um_context_destroy(ctx));
	unset_env();
}

TEST(host_budget_below_cgroup_limit_wins)
{
	struct um_context *ctx;
	struct tree t = { 0 };

	ASSERT_EQ(0, make_tree(&t, "1073741824", "max", "max"));
	setenv("LIBUM_HOST_BUDGET", "192M", 1);
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_TRUE(has_line(UM_LOG_INFO, "watching the host budget of host_budget / LIBUM_HOST_BUDGET, 192 MiB"))
		TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, put(t.cg, "memory.current", "%llu\n", 190 * MiB));
	ASSERT_TRUE(wait_own_events(ctx, 1));
	ASSERT_EQ(192 * MiB, pstats(ctx).cgroup_limit);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

/* Without a spill nothing can go: one ERR line, naming the limit. */
TEST(limit_not_met_said_once_with_the_limit)
{
	struct um_context *ctx;
	struct tree t = { 0 };
	um_region_t r[NREG];

	ASSERT_EQ(0, make_tree(&t, "268435456", "max", "max"));
	ctx = watch_ctx(&t, false, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_NULL(ctx->spill);
	ASSERT_EQ(0, host_copies(ctx, r));
	ASSERT_EQ(0, put(t.cg, "memory.current", "%llu\n", LIMIT - 4 * MiB));
	ASSERT_TRUE(wait_own_events(ctx, 1));
	/* a second spell: still one line */
	ASSERT_EQ(0, put(t.cg, "memory.current", "%llu\n", 10 * MiB));
	ASSERT_EQ(0, put(t.cg, "memory.current", "%llu\n", LIMIT - 2 * MiB));
	ASSERT_TRUE(wait_own_events(ctx, 2));
	ASSERT_EQ(1, g_log.err) TH_LOG("log: %s", g_log.text);
	ASSERT_TRUE(has_line(UM_LOG_ERR, "(limit: memory.max of %s, 256 MiB)",
			       t.root)) TH_LOG("log: %s", g_log.text);
	ASSERT_TRUE(has_line(UM_LOG_ERR,
			     "no spill tier (spill_dir / LIBUM_SPILL_DIR is off)"));
	ASSERT_EQ(0, check_and_free(ctx, r));
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

/* memory.current that is not a number is skipped, never acted upon. */
TEST(garbage_usage_is_ignored)
{
	struct um_context *ctx;
	struct tree t = { 0 };

	ASSERT_EQ(0, make_tree(&t, "268435456", "max", "max"));
	ctx = watch_ctx(&t, true, 0);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(0, put(t.cg, "memory.current", "lots\n"));
	usleep(300000);	/* a few samples */
	ASSERT_EQ(0u, pstats(ctx).cgroup_own_events);
	ASSERT_EQ(0, um_context_destroy(ctx));
	rm_tree(&t);
	unset_env();
}

TEST(bad_settings_refused)
{
	static const char *const budgets[] = {
		"0", "512K", "12x", "-1", "18446744073709551616",
	};
	struct um_context *ctx = NULL;
	struct um_config cfg;

	setenv("LIBUM_PRESSURE", "0", 1);
	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++) {
		setenv("LIBUM_HOST_BUDGET", budgets[i], 1);
		cfg_sim(&cfg, 0, 64 * MiB);
		logcap_reset();
		ASSERT_EQ(-EINVAL, um_context_create(&cfg, &ctx))
			TH_LOG("LIBUM_HOST_BUDGET=%s", budgets[i]);
		ASSERT_TRUE(has_line(UM_LOG_ERR, "LIBUM_HOST_BUDGET=\"%s\" is not valid",
				       budgets[i]));
	}
	unsetenv("LIBUM_HOST_BUDGET");

	setenv("LIBUM_CGROUP_DIR", "sys/fs/cgroup", 1);
	cfg_sim(&cfg, 0, 64 * MiB);
	ASSERT_EQ(-EINVAL, um_context_create(&cfg, &ctx));
	setenv("LIBUM_CGROUP_DIR", "/sys/fs/cgroup/../x", 1);
	ASSERT_EQ(-EINVAL, um_context_create(&cfg, &ctx));
	ASSERT_NULL(ctx);
	unset_env();
	unsetenv("LIBUM_PRESSURE");
}

TEST_HARNESS_MAIN
