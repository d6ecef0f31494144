/* SPDX-License-Identifier: MIT */
/*
 * Description: fork() with a live context. The child's
 * copy of the context is inert: every public call on it returns -ECHILD,
 * um_context_destroy() returns 0 without touching the parent's threads or
 * device, and the pointer is dead afterwards (-EBADF); a context the child
 * creates itself works. The parent forks with regions on the device and on
 * the host, migrations held in flight, the pressure thread running and a
 * second thread calling libum, and keeps working: every byte checked.
 */
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "backend_sim.h"
#include "internal.h"

#define SZ (2 * MiB)
#define REGIONS 4

TEST_TIMEOUT_SET(child_context_is_inert, 60);

struct busy {
	struct um_context *ctx;
	um_region_t r;
	int stop;		/* atomic */
	int failures;
};

/* Keeps the context lock busy while the main thread forks. */
static void *keep_calling(void *arg)
{
	struct busy *b = arg;
	struct um_region_info info = { .size = sizeof(info) };

	while (!__atomic_load_n(&b->stop, __ATOMIC_ACQUIRE))
		if (um_region_info(b->ctx, b->r, &info))
			b->failures++;
	return NULL;
}

/* Every public call that takes the context; returns how many were wrong. */
static int inherited_calls(struct um_context *ctx, um_region_t r, int want)
{
	struct um_region_desc d = { .size = sizeof(d), .bytes = SZ };
	struct um_region_info info = { .size = sizeof(info) };
	struct um_stats st = { .size = sizeof(st) };
	um_region_t out = 0;
	uint64_t bytes = 0;
	char buf[256];
	void *p = NULL;
	int wrong = 0;
	int64_t got[] = {
		um_context_backend(ctx),
		um_alloc(ctx, &d, &out),
		um_free(ctx, r),
		um_ptr(ctx, r, &p),
		um_lookup(ctx, p, &out),
		um_acquire(ctx, r, UM_TIER_GPU(0), NULL),
		um_acquire_timeout(ctx, r, UM_TIER_GPU(0), NULL,
				   UM_WAIT_FOREVER),
		um_release(ctx, r),
		um_evict(ctx, r, UM_TIER_HOST_ANY),
		um_wait(ctx, r),
		um_wait_all(ctx),
		um_advise(ctx, r, UM_ADVISE_READ_MOSTLY, UM_TIER_GPU(0)),
		um_region_info(ctx, r, &info),
		um_budget_set(ctx, 0, SZ),
		um_budget_get(ctx, 0, &bytes),
		um_shed(ctx, UM_TIER_GPU(0), SZ, UM_TIER_NONE),
		um_set_event_callback(ctx, NULL, NULL),
		um_stats_get(ctx, &st),
		um_stats_json(ctx, buf, sizeof(buf)),
		um_host_alloc(ctx, 4096, &p),
		um_host_free(ctx, p),
		um_pool_trim(ctx),
	};

	for (size_t i = 0; i < sizeof(got) / sizeof(got[0]); i++) {
		if (got[i] != want) {
			fprintf(stderr, "# child: call %zu returned %lld, not %d\n",
				i, (long long)got[i], want);
			wrong++;
		}
	}
	return wrong;
}

/* The child's own context: created, used and destroyed as usual. */
static int own_context_works(void)
{
	struct um_context *ctx = ctx_sim(0, 64 * MiB);
	um_region_t r;
	int wrong = 0;

	if (!ctx)
		return 1;
	r = region(ctx, UM_KIND_GENERIC, 0, SZ, "child");
	wrong += !r;
	wrong += put_pattern(ctx, r, SZ, 77) != 0;
	wrong += um_evict(ctx, r, UM_TIER_HOST_ANY) != 0;
	wrong += get_pattern(ctx, r, SZ, 77) != 0;
	wrong += um_free(ctx, r) != 0;
	wrong += um_context_destroy(ctx) != 0;
	return wrong;
}

static int child(struct um_context *ctx, um_region_t r)
{
	int wrong = inherited_calls(ctx, r, -ECHILD);

	if (um_context_destroy(ctx) != 0)
		wrong++;
	/* destroyed: the pointer is dead, as in the parent after destroy */
	wrong += inherited_calls(ctx, r, -EBADF);
	if (um_context_destroy(ctx) != -EBADF)
		wrong++;
	wrong += own_context_works();
	return wrong;
}

TEST(child_context_is_inert)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;
	struct busy b = { 0 };
	um_region_t r[REGIONS];
	pthread_t t;
	int status = -1;
	pid_t pid;

	cfg_sim(&cfg, 2 * SZ, 64 * MiB);
	/* the pressure thread runs (on its own budgets where nothing else) */
	setenv("LIBUM_PRESSURE", "1", 1);
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	unsetenv("LIBUM_PRESSURE");
	ASSERT_NONNULL(ctx->pressure);
	for (int i = 0; i < REGIONS; i++) {
		r[i] = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, SZ, "r");
		ASSERT_EQ(0, put_pattern(ctx, r[i], SZ, 10 + (uint64_t)i));
	}
	ASSERT_EQ(0, um_acquire(ctx, r[3], UM_TIER_GPU(0), NULL));
	/* migrations in flight at the fork */
	ASSERT_EQ(0, um__sim_hold(&ctx->be, true));
	ASSERT_EQ(0, um_evict(ctx, r[2], UM_TIER_HOST_ANY));
	b.ctx = ctx;
	b.r = r[0];
	ASSERT_EQ(0, pthread_create(&t, NULL, keep_calling, &b));
	usleep(1000);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(child(ctx, r[0]) ? 1 : 0);
	__atomic_store_n(&b.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	EXPECT_EQ(0, b.failures);
	/* the parent goes on as if nothing happened */
	ASSERT_EQ(0, um__sim_hold(&ctx->be, false));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(0, um_release(ctx, r[3]));
	for (int i = 0; i < REGIONS; i++) {
		EXPECT_EQ(0, get_pattern(ctx, r[i], SZ, 10 + (uint64_t)i));
		ASSERT_EQ(0, um_free(ctx, r[i]));
	}
	EXPECT_GE(2 * SZ, dev_current(ctx));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

static int fork_lines, other_lines;

static void count_log(void *arg, int level, const char *msg)
{
	(void)arg;
	if (level == UM_LOG_ERR && strstr(msg, "fork()") &&
	    strstr(msg, "create a context in the child"))
		fork_lines++;
	else
		other_lines++;
}

/*
 * The child's first call on an inherited context says why it fails (ECHILD's
 * own text is "No child processes"), once; destroy, which is right there,
 * says nothing.
 */
TEST(child_is_told_once)
{
	struct um_stats st = { .size = sizeof(st) };
	struct um_config cfg;
	struct um_context *ctx = NULL;
	int status = -1;
	pid_t pid;

	cfg_sim(&cfg, SZ, 64 * MiB);
	cfg.log = count_log;
	cfg.log_level = UM_LOG_ERR;
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		int wrong = 0;

		wrong += um_stats_get(ctx, &st) != -ECHILD;
		wrong += um_context_backend(ctx) != -ECHILD;
		wrong += fork_lines != 1;
		wrong += um_context_destroy(ctx) != 0;
		wrong += fork_lines != 1 || other_lines != 0;
		if (wrong)
			fprintf(stderr, "# child: %d fork line(s), %d other(s)\n",
				fork_lines, other_lines);
		_exit(wrong ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	EXPECT_EQ(0, fork_lines) TH_LOG("the parent's context is its own");
	ASSERT_EQ(0, um_stats_get(ctx, &st));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
