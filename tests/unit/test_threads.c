/* SPDX-License-Identifier: MIT */
/*
 * Description: one context used by several threads at once. Six workers
 * acquire, write, check, release and evict their own regions and read
 * shared ones (nested acquires from several threads), while another thread
 * sheds, moves the budget up and down and dumps stats. The budget is
 * tight, so evictions and restores run all the time. Every region's bytes
 * are checked at each acquire and at the end; the books never go above the
 * largest budget set; event callbacks may call back into libum. libum's
 * own threads carry their names (top -H, ps -L).
 */
#include <dirent.h>

#include "harness.h"
#include "helpers.h"

#define WORKERS 6
#define OWN 4
#define SHARED 3
#define SZ (2 * MiB)
#define ROUNDS 400
#define BUDGET (9 * SZ)

TEST_TIMEOUT_SET(many_threads_one_context, 120);
TEST_TIMEOUT_SET(many_threads_with_spill, 120);

struct shared {
	struct um_context *ctx;
	int spill;		/* the meddler also sheds host copies to disk */
	um_region_t shared[SHARED];
	int stop;		/* atomic */
	int failures;
	pthread_mutex_t mu;
	uint64_t events;
};

struct worker {
	struct shared *sh;
	int id;
};

static void fail(struct shared *sh, const char *what, int i, int ret)
{
	pthread_mutex_lock(&sh->mu);
	if (__atomic_fetch_add(&sh->failures, 1, __ATOMIC_RELAXED) < 10)
		fprintf(stderr, "# worker failure: %s %d -> %d\n", what, i, ret);
	pthread_mutex_unlock(&sh->mu);
}

static void on_event(void *arg, const struct um_event *ev)
{
	struct shared *sh = arg;
	struct um_region_info i = { .size = sizeof(i) };

	/* re-entering libum from a callback must not deadlock */
	if (ev->region)
		um_region_info(sh->ctx, ev->region, &i);
	__atomic_add_fetch(&sh->events, 1, __ATOMIC_RELAXED);
}

/* Acquire with retries: -ENOMEM is fair while others hold the budget. */
static int acquire(struct um_context *ctx, um_region_t r)
{
	for (int t = 0; t < 2000; t++) {
		int ret = um_acquire(ctx, r, UM_TIER_GPU(0), NULL);

		if (ret != -ENOMEM)
			return ret;
		usleep(200);
	}
	return -ENOMEM;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	struct shared *sh = w->sh;
	struct um_context *ctx = sh->ctx;
	um_region_t own[OWN];
	uint64_t seed[OWN];
	uint64_t x = (uint64_t)w->id * 7919 + 1;
	int ret;

	for (int i = 0; i < OWN; i++) {
		own[i] = region(ctx, i % UM_KIND_COUNT, w->id, SZ - 4096 * i,
				"own");
		seed[i] = 0;
		if (!own[i])
			fail(sh, "alloc", i, 0);
	}
	for (int n = 0; n < ROUNDS &&
	     !__atomic_load_n(&sh->failures, __ATOMIC_RELAXED); n++) {
		int i = (int)((x = mix64(x)) % OWN);
		uint64_t bytes = SZ - 4096 * (uint64_t)i;
		void *p;

		if ((x >> 16) % 3 == 0) {
			int s = (int)((x >> 24) % SHARED);

			ret = acquire(ctx, sh->shared[s]);
			if (ret) {
				fail(sh, "acquire shared", s, ret);
				break;
			}
			if (um_ptr(ctx, sh->shared[s], &p) ||
			    pattern_check(p, SZ, 900 + (uint64_t)s) >= 0)
				fail(sh, "shared bytes", s, 0);
			ret = um_release(ctx, sh->shared[s]);
			if (ret)
				fail(sh, "release shared", s, ret);
			continue;
		}
		ret = acquire(ctx, own[i]);
		if (ret) {
			fail(sh, "acquire", i, ret);
			break;
		}
		um_ptr(ctx, own[i], &p);
		if (seed[i] && pattern_check(p, bytes, seed[i]) >= 0)
			fail(sh, "own bytes", i, 0);
		seed[i] = ((uint64_t)w->id << 32) | (uint64_t)(n + 1);
		pattern_fill(p, bytes, seed[i]);
		ret = um_release(ctx, own[i]);
		if (ret)
			fail(sh, "release", i, ret);
		if ((x >> 40) % 4 == 0) {
			ret = um_evict(ctx, own[(i + 1) % OWN], UM_TIER_HOST_ANY);
			if (ret)
				fail(sh, "evict", i, ret);
		}
		if ((x >> 44) % 16 == 0)
			um_wait(ctx, own[i]);
	}
	for (int i = 0; i < OWN; i++) {
		if (seed[i]) {
			uint64_t bytes = SZ - 4096 * (uint64_t)i;
			void *p;

			ret = acquire(ctx, own[i]);
			if (ret) {
				fail(sh, "final acquire", i, ret);
				continue;
			}
			um_ptr(ctx, own[i], &p);
			if (pattern_check(p, bytes, seed[i]) >= 0)
				fail(sh, "final bytes", i, 0);
			um_release(ctx, own[i]);
		}
		ret = um_free(ctx, own[i]);
		if (ret)
			fail(sh, "free", i, ret);
	}
	return NULL;
}

static void *meddle(void *arg)
{
	struct shared *sh = arg;
	char buf[4096];
	uint64_t x = 99;

	while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
		x = mix64(x);
		switch (x % 4) {
		case 0:
			um_shed(sh->ctx, UM_TIER_GPU(0), SZ * (x >> 8) % (4 * SZ),
				sh->spill && (x >> 12) % 2 ? UM_TIER_DISK :
				UM_TIER_NONE);
			if (sh->spill)
				um_shed(sh->ctx, UM_TIER_HOST_ANY, SZ, UM_TIER_NONE);
			break;
		case 1:
			/* between 6 slots and the full budget: -EBUSY is fine */
			um_budget_set(sh->ctx, 0, BUDGET - SZ * ((x >> 8) % 4));
			break;
		case 2:
			if (um_stats_json(sh->ctx, buf, sizeof(buf)) <= 0)
				fail(sh, "json", 0, 0);
			break;
		case 3:
			um_wait_all(sh->ctx);
			break;
		}
		if (dev_current(sh->ctx) > BUDGET)
			fail(sh, "books over budget", 0, (int)(dev_current(sh->ctx) >> 20));
		usleep(300);
	}
	return NULL;
}

static void run(struct shared *shp, struct um_context *ctx)
{
	struct shared local = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct shared *S = shp ? shp : &local;
	struct worker w[WORKERS];
	pthread_t t[WORKERS], m;
	struct um_stats st = { .size = sizeof(st) };

	S->ctx = ctx;
	ASSERT_NONNULL(S->ctx);
	ASSERT_EQ(0, um_set_event_callback(S->ctx, on_event, S));
	for (int s = 0; s < SHARED; s++) {
		S->shared[s] = region(S->ctx, UM_KIND_PARAM, 10, SZ, "shared");
		ASSERT_EQ(0, put_pattern(S->ctx, S->shared[s], SZ, 900 + (uint64_t)s));
	}
	ASSERT_EQ(0, pthread_create(&m, NULL, meddle, S));
	for (int i = 0; i < WORKERS; i++) {
		w[i] = (struct worker){ .sh = S, .id = i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, work, &w[i]));
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&S->stop, 1, __ATOMIC_RELEASE);
	pthread_join(m, NULL);
	EXPECT_EQ(0, S->failures);
	ASSERT_EQ(0, um_budget_set(S->ctx, 0, BUDGET));
	for (int s = 0; s < SHARED; s++) {
		EXPECT_EQ(0, get_pattern(S->ctx, S->shared[s], SZ, 900 + (uint64_t)s));
		ASSERT_EQ(0, um_free(S->ctx, S->shared[s]));
	}
	ASSERT_EQ(0, um_stats_get(S->ctx, &st));
	EXPECT_GE(BUDGET, st.device[0].peak);
	EXPECT_LT(0, st.evict_count);
	EXPECT_LT(0, st.restore_count);
	EXPECT_EQ(0, st.regions);
	EXPECT_LT(0, S->events);
	if (S->spill)
		EXPECT_LT(0, st.spill.total);
	TH_LOG("evictions %llu restores %llu events %llu spilled %llu",
	       (unsigned long long)st.evict_count,
	       (unsigned long long)st.restore_count,
	       (unsigned long long)S->events,
	       (unsigned long long)st.spill.total);
	ASSERT_EQ(0, um_context_destroy(S->ctx));
}

TEST(many_threads_one_context)
{
	run(NULL, ctx_sim(BUDGET, 64 * MiB));
}

TEST(many_threads_with_spill)
{
	struct shared sh = { .mu = PTHREAD_MUTEX_INITIALIZER, .spill = 1 };
	struct um_config cfg;
	struct um_context *ctx = NULL;
	char dir[] = "/var/tmp/um-threads-XXXXXX", sub[64], cmd[128];

	ASSERT_NONNULL(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/spill", dir);
	cfg_sim(&cfg, BUDGET, 64 * MiB);
	cfg.spill_dir = sub;
	setenv("LIBUM_PRESSURE", "0", 0);
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	run(&sh, ctx);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	EXPECT_EQ(0, system(cmd));
}

/* Whether a thread of this process has the name @want. */
static int thread_named(const char *want)
{
	char path[64], name[32];
	struct dirent *de;
	int found = 0;
	DIR *d = opendir("/proc/self/task");

	while (d && !found && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm",
			 de->d_name);
		f = fopen(path, "r");
		if (f && fgets(name, sizeof(name), f)) {
			name[strcspn(name, "\n")] = '\0';
			found = !strcmp(name, want);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

/* A thread names itself when it first runs: give it that long (a hang guard). */
static int thread_named_soon(const char *want)
{
	for (int i = 0; i < 1000; i++) {
		if (thread_named(want))
			return 1;
		usleep(10 * 1000);
	}
	return 0;
}

TEST(libum_threads_are_named)
{
	struct um_context *ctx = ctx_sim(0, 8 * MiB);

	ASSERT_NONNULL(ctx);
	EXPECT_TRUE(thread_named_soon("um-refill"));
	EXPECT_TRUE(thread_named_soon("um-sim-stream"));
	if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
		EXPECT_TRUE(thread_named_soon("um-sim-copy"));
	EXPECT_EQ(0, um_context_destroy(ctx));
	EXPECT_FALSE(thread_named("um-refill"));
}

TEST_HARNESS_MAIN
