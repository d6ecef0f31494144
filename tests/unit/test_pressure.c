/* SPDX-License-Identifier: MIT */
/*
 * Description: the pressure loop (libum/src/pressure.c) where umm.ko is not
 * loaded: which sources a context finds (no device, a device that refuses
 * the handshake, PSI as this kernel allows it, PSI refused), that it says so
 * once and clearly, that LIBUM_PRESSURE=0 turns the thread off, that the
 * library's own budgets still hold, and that create/destroy leaves no
 * thread or file descriptor behind. With the module, the loop is tested in
 * the VM (tests/e2e).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "harness.h"
#include "probes.h"
#include "helpers.h"
#include "internal.h"
#include "pressure.h"
#include "pressure_internal.h"
#include "util.h"

#define NO_DEV	"/nonexistent/umm"
#define NO_PSI	"/nonexistent/pressure"

/* A sim context with the pressure loop on (helpers.h turns it off). */
static struct um_context *pctx(uint64_t budget, uint64_t capacity)
{
	setenv("LIBUM_PRESSURE", "1", 1);
	/* whatever limit the machine's own cgroup has: none here */
	setenv("LIBUM_CGROUP_DIR", "/nonexistent/cgroup", 1);
	return ctx_sim(budget, capacity);
}

/* Lines of the captured log containing needle. */
static int log_count(const char *needle)
{
	const char *p = g_log.text;
	int n = 0;

	while ((p = strstr(p, needle))) {
		n++;
		p += strlen(needle);
	}
	return n;
}

TEST(no_module_no_psi_budgets_only)
{
	struct um_pressure_stats st;
	struct um_context *ctx;

	setenv("LIBUM_UMM_DEV", NO_DEV, 1);
	setenv("LIBUM_PSI_PATH", NO_PSI, 1);
	logcap_reset();
	ctx = pctx(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(UM_PSRC_BUDGET, um__pressure_sources(ctx));
	ASSERT_TRUE(logcap_has(UM_LOG_INFO, "pressure: sources: own budgets",
			       "no " NO_DEV, NO_PSI, NULL))
		TH_LOG("log: %s", g_log.text);
	/* said once */
	ASSERT_EQ(1, log_count("pressure: sources"));
	ASSERT_EQ(0, um__pressure_stats(ctx, &st));
	ASSERT_EQ(UM_PSRC_BUDGET, st.sources);
	ASSERT_EQ(0, st.events);
	ASSERT_EQ(0, st.reports);
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(device_refusing_handshake)
{
	struct um_context *ctx;

	setenv("LIBUM_UMM_DEV", "/dev/null", 1);
	setenv("LIBUM_PSI_PATH", NO_PSI, 1);
	logcap_reset();
	ctx = pctx(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(UM_PSRC_BUDGET, um__pressure_sources(ctx));
	ASSERT_TRUE(logcap_has(UM_LOG_INFO, "pressure: sources: own budgets",
			       "/dev/null refused the handshake", NULL))
		TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* PSI is used exactly when the kernel accepts a trigger (not here: EINVAL). */
TEST(psi_as_this_kernel_allows)
{
	int want = probe_psi_trigger();
	struct um_context *ctx;

	setenv("LIBUM_UMM_DEV", NO_DEV, 1);
	unsetenv("LIBUM_PSI_PATH");
	logcap_reset();
	ctx = pctx(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	if (want) {
		ASSERT_EQ(UM_PSRC_BUDGET | UM_PSRC_PSI,
			  um__pressure_sources(ctx));
		ASSERT_TRUE(logcap_has(UM_LOG_INFO, "PSI trigger, own budgets",
				       NULL));
	} else {
		ASSERT_EQ(UM_PSRC_BUDGET, um__pressure_sources(ctx));
		ASSERT_TRUE(logcap_has(UM_LOG_INFO, "PSI: ",
				       "/proc/pressure/memory", NULL))
			TH_LOG("log: %s", g_log.text);
	}
	TH_LOG("PSI triggers %s on this kernel", want ? "work" : "are refused");
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(psi_path_not_a_trigger)
{
	struct um_context *ctx;

	setenv("LIBUM_UMM_DEV", NO_DEV, 1);
	setenv("LIBUM_PSI_PATH", "/", 1);
	logcap_reset();
	ctx = pctx(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(UM_PSRC_BUDGET, um__pressure_sources(ctx));
	ASSERT_TRUE(logcap_has(UM_LOG_INFO, "PSI: no /: ", NULL))
		TH_LOG("log: %s", g_log.text);
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(disabled_by_environment)
{
	struct um_pressure_stats st;
	struct um_context *ctx;
	int threads;

	setenv("LIBUM_PRESSURE", "0", 1);
	setenv("LIBUM_UMM_DEV", "/dev/null", 1);
	logcap_reset();
	threads = dir_entries("/proc/self/task");
	ctx = ctx_sim(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(UM_PSRC_BUDGET, um__pressure_sources(ctx));
	ASSERT_TRUE(logcap_has(UM_LOG_INFO, "LIBUM_PRESSURE=0", NULL));
	/* no handshake was even tried */
	ASSERT_EQ(0, log_count("handshake"));
	ASSERT_EQ(0, um__pressure_stats(ctx, &st));
	ASSERT_EQ(UM_PSRC_BUDGET, st.sources);
	/* sim queue threads may exist; the pressure thread must not */
	um__pressure_stop(ctx);
	um__pressure_notify(ctx);
	ASSERT_EQ(0, um_context_destroy(ctx));
	ASSERT_EQ(threads, threads_settle(threads));
}

TEST(bad_arguments)
{
	struct um_pressure_stats st;
	struct um_context *ctx;

	setenv("LIBUM_UMM_DEV", NO_DEV, 1);
	setenv("LIBUM_PSI_PATH", NO_PSI, 1);
	ctx = pctx(0, 64 * MiB);
	ASSERT_NONNULL(ctx);
	ASSERT_EQ(-EINVAL, um__pressure_stats(ctx, NULL));
	/* started already by um_context_create */
	ASSERT_EQ(-EINVAL, um__pressure_start(ctx));
	ASSERT_EQ(-EINVAL, um__pressure_start(NULL));
	um__pressure_stop(NULL);
	um__pressure_notify(NULL);
	ASSERT_EQ(UM_PSRC_BUDGET, um__pressure_sources(NULL));
	ASSERT_EQ(0, um__pressure_stats(NULL, &st));
	ASSERT_EQ(UM_PSRC_BUDGET, st.sources);
	/* stop is idempotent; destroy after an explicit stop is fine */
	um__pressure_stop(ctx);
	um__pressure_stop(ctx);
	ASSERT_EQ(0, um_context_destroy(ctx));
}

TEST(create_destroy_leaves_nothing)
{
	int fds, threads;

	setenv("LIBUM_UMM_DEV", "/dev/null", 1);
	setenv("LIBUM_PSI_PATH", NO_PSI, 1);
	setenv("LIBUM_PRESSURE_REPORT_MS", "5", 1);
	/* one round first: lazily created process-wide state settles */
	ASSERT_EQ(0, um_context_destroy(pctx(0, 16 * MiB)));
	fds = dir_entries("/proc/self/fd");
	threads = dir_entries("/proc/self/task");
	for (int i = 0; i < 20; i++) {
		struct um_context *ctx = pctx(0, 16 * MiB);

		ASSERT_NONNULL(ctx);
		um__pressure_notify(ctx);
		if (i % 2)
			usleep(10000);	/* let the loop run a few ticks */
		ASSERT_EQ(0, um_context_destroy(ctx));
	}
	ASSERT_EQ(fds, dir_entries("/proc/self/fd"));
	ASSERT_EQ(threads, threads_settle(threads));
}

/* Without any kernel source, the library's own budget still evicts. */
TEST(budgets_hold_without_sources)
{
	struct um_context *ctx;
	um_region_t a, b;
	void *p;

	setenv("LIBUM_UMM_DEV", NO_DEV, 1);
	setenv("LIBUM_PSI_PATH", NO_PSI, 1);
	ctx = pctx(8 * MiB, 64 * MiB);
	ASSERT_NONNULL(ctx);
	a = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 6 * MiB, "a");
	b = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, 6 * MiB, "b");
	ASSERT_NE(0, a);
	ASSERT_NE(0, b);
	ASSERT_EQ(0, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_ptr(ctx, a, &p));
	pattern_fill(p, 6 * MiB, 11);
	ASSERT_EQ(0, um_release(ctx, a));
	ASSERT_EQ(0, um_acquire(ctx, b, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_FALSE(on_gpu(ctx, a));
	ASSERT_TRUE(on_gpu(ctx, b));
	ASSERT_EQ(0, um_release(ctx, b));
	ASSERT_EQ(0, um_acquire(ctx, a, UM_TIER_GPU(0), NULL));
	ASSERT_EQ(0, um_wait_all(ctx));
	ASSERT_EQ(-1, pattern_check(p, 6 * MiB, 11));
	ASSERT_EQ(0, um_release(ctx, a));
	ASSERT_EQ(0, um_free(ctx, a));
	ASSERT_EQ(0, um_free(ctx, b));
	ASSERT_EQ(0, um_context_destroy(ctx));
}

/* A container that refuses io_uring still gets a working context, its
 * pressure loop in poll(2) and its default spill tier on pread and pwrite:
 * told as INFO lines (nothing failed). */
TEST(io_uring_refused_by_seccomp)
{
	struct um_context *ctx;
	um_region_t r;

	ASSERT_EQ(0, refuse_io_uring());
	setenv("LIBUM_UMM_DEV", NO_DEV, 1);
	unsetenv("LIBUM_SPILL_DIR");
	logcap_reset();
	ctx = pctx(0, 64 * MiB);
	ASSERT_NONNULL(ctx) TH_LOG("log: %s", g_log.text);
	EXPECT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "io_uring is refused",
			       "waits in poll(2)", NULL));
	ASSERT_NONNULL(ctx->pressure);
	EXPECT_FALSE(ctx->pressure->q.on_ring);
	ASSERT_NONNULL(ctx->spill) TH_LOG("%s", ctx->set.spill_none);
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "spill: io_uring is refused",
			       "pread and pwrite", NULL));
	r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, MiB, "works");
	ASSERT_NE(0, r);
	EXPECT_EQ(0, put_pattern(ctx, r, MiB, 5));
	EXPECT_EQ(0, um_evict(ctx, r, UM_TIER_DISK));
	EXPECT_EQ(0, um_wait_all(ctx));
	EXPECT_EQ(UM_TIER_DISK, residency(ctx, r));
	EXPECT_EQ(0, get_pattern(ctx, r, MiB, 5));
	EXPECT_EQ(0, um_free(ctx, r));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/*
 * The debug line of a move off a node, which `make demo` shows: the region
 * by its name, the tiers by theirs, bytes and time in units (it once read
 * "region 281474993487878 off node 0 to tier 0x20001: 0 in 101.1 ms").
 */
TEST(move_line_names_region_tiers_and_units)
{
	char line[256];

	um__pressure_move_line(line, sizeof(line), "adam.m", 0,
			       UM_TIER_HOST_NODE(1), 0, 16ull << 20,
			       101100000);
	ASSERT_STREQ("pressure: region \"adam.m\" moved off node 0 to node1: 16 MiB in 101.1 ms",
		     line);
	um__pressure_move_line(line, sizeof(line), "adam.v", 0,
			       UM_TIER_DISK, -EBUSY, 0, 2500000);
	ASSERT_STREQ("pressure: region \"adam.v\" stays on node 0: moving it to spill failed: Device or resource busy (2.5 ms)",
		     line);
	um__pressure_move_line(line, sizeof(line), "w", 1,
			       UM_TIER_HOST_NODE(0), 0, 0, 100000);
	ASSERT_STREQ("pressure: region \"w\" stays on node 1: taken again before it could move to node0 (0.1 ms)",
		     line);
	um__pressure_move_line(line, sizeof(line), NULL, 0,
			       UM_TIER_HOST_NODE(1), -ENOENT, 0, 0);
	ASSERT_STREQ("pressure: a region on node 0 was freed before it could move to node1 (0.0 ms)",
		     line);
}

TEST(size_str_units)
{
	char b[UM_SIZE_STR];

	ASSERT_STREQ("0 bytes", um__size_str(0, b));
	ASSERT_STREQ("1023 bytes", um__size_str(1023, b));
	ASSERT_STREQ("1 KiB", um__size_str(1024, b));
	ASSERT_STREQ("1.5 MiB", um__size_str(3ull << 19, b));
	ASSERT_STREQ("2 MiB", um__size_str(2ull << 20, b));
	ASSERT_STREQ("391 KiB", um__size_str(400000, b));
	ASSERT_STREQ("16 EiB", um__size_str(UINT64_MAX, b));
}

TEST_HARNESS_MAIN
