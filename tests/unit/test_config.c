/* SPDX-License-Identifier: MIT */
/*
 * Description: context creation from struct um_config and LIBUM_*
 * environment variables: defaults, K/M/G/T suffixes, a field beating its
 * variable (the backend's too: LIBUM_BACKEND decides only when the field
 * is auto), bad values failing
 * with -EINVAL and one ERR line naming the variable, wrong struct sizes,
 * the automatic backend choice logging why it fell back to sim, and the
 * variables without a field resolved into the context's settings (the
 * spill store's reaching it).
 * (Each test runs in its own process, so setenv stays local to it.)
 */
#include <fcntl.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"

static int create(struct um_config *cfg, struct um_context **ctx)
{
	setenv("LIBUM_PRESSURE", "0", 1);
	return um_context_create(cfg, ctx);
}

static uint64_t budget_of(struct um_context *ctx)
{
	uint64_t b = 0;

	um_budget_get(ctx, 0, &b);
	return b;
}

TEST(config_init_and_defaults)
{
	struct um_config cfg;
	struct um_context *ctx;

	memset(&cfg, 0x7f, sizeof(cfg));
	um_config_init(&cfg);
	EXPECT_EQ(sizeof(cfg), cfg.size);
	EXPECT_EQ(0, cfg.backend);
	EXPECT_EQ(0, cfg.device_budget);
	EXPECT_NULL(cfg.log);
	EXPECT_NULL(cfg.spill_dir);
	EXPECT_EQ(0, cfg.flags);
	cfg.backend = UM_BACKEND_SIM;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(UM_BACKEND_SIM, um_context_backend(ctx));
	EXPECT_EQ(1ull << 30, budget_of(ctx));	/* default sim capacity */
	EXPECT_EQ(0, um_context_destroy(ctx));
	/* NULL config: every default */
	setenv("LIBUM_BACKEND", "sim", 1);
	ASSERT_EQ(0, create(NULL, &ctx));
	EXPECT_EQ(UM_BACKEND_SIM, um_context_backend(ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/*
 * A program linked against LIBUM_0.1 allocated its 80-byte struct
 * um_config: its um_config_init (um__config_init_0_1 is that version,
 * libum/check-abi.c calls it through libum.so) writes no further. The
 * current one fills the whole struct.
 */
TEST(config_init_0_1_writes_80_bytes)
{
	unsigned char buf[sizeof(struct um_config) + 16];
	struct um_context *ctx;

	memset(buf, 0xa5, sizeof(buf));
	um__config_init_0_1((struct um_config *)buf);
	EXPECT_EQ(0xa5, buf[80]) TH_LOG("um_config_init@LIBUM_0.1 wrote past 80 bytes");
	EXPECT_EQ(80, ((struct um_config *)buf)->size);
	/* its context: the bytes past .size are never read */
	((struct um_config *)buf)->backend = UM_BACKEND_SIM;
	ASSERT_EQ(0, create((struct um_config *)buf, &ctx));
	EXPECT_EQ(0, ctx->set.host_budget);
	EXPECT_EQ(0, um_context_destroy(ctx));
	memset(buf, 0xa5, sizeof(buf));
	um_config_init((struct um_config *)buf);
	EXPECT_EQ(sizeof(struct um_config), ((struct um_config *)buf)->size);
	EXPECT_EQ(0, ((struct um_config *)buf)[0].host_budget);
	EXPECT_EQ(0xa5, buf[sizeof(struct um_config)]);
}

/*
 * host_budget, by the rule of every field: set, it wins over
 * LIBUM_HOST_BUDGET (which is still checked); at least 1M; unset (0), the
 * variable decides.
 */
TEST(host_budget_field)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;

	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.host_budget = 24 * GiB;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(24 * GiB, ctx->set.host_budget);
	EXPECT_EQ(0, um_context_destroy(ctx));
	setenv("LIBUM_HOST_BUDGET", "2G", 1);
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(24 * GiB, ctx->set.host_budget);	/* the field wins */
	EXPECT_EQ(0, um_context_destroy(ctx));
	cfg.host_budget = 0;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(2 * GiB, ctx->set.host_budget);	/* unset: the variable */
	EXPECT_EQ(0, um_context_destroy(ctx));
	/* a bad variable fails even under a field */
	setenv("LIBUM_HOST_BUDGET", "lots", 1);
	cfg.host_budget = 24 * GiB;
	logcap_reset();
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "LIBUM_HOST_BUDGET=\"lots\"", NULL));
	unsetenv("LIBUM_HOST_BUDGET");
	/* below 1M: refused, said by the field's name */
	cfg.host_budget = MiB - 1;
	logcap_reset();
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "host_budget", "below the minimum",
			       NULL)) TH_LOG("log: %s", g_log.text);
	EXPECT_NULL(ctx);
	cfg.host_budget = MiB;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(MiB, ctx->set.host_budget);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(env_sizes_with_suffixes)
{
	static const struct { const char *v; uint64_t want; } ok[] = {
		{ "64M", 64 * MiB }, { "64m", 64 * MiB }, { "1G", GiB },
		{ "1gib", GiB }, { "4096", 4096 }, { "512K", 512 * KiB },
		{ "3MB", 3 * MiB },
	};
	uint64_t v;
	struct um_config cfg;
	struct um_context *ctx;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		cfg_sim(&cfg, 0, 0);
		setenv("LIBUM_SIM_CAPACITY", "1G", 1);	/* >= every budget */
		setenv("LIBUM_DEVICE_BUDGET", ok[i].v, 1);
		ASSERT_EQ(0, create(&cfg, &ctx)) TH_LOG("%s", ok[i].v);
		EXPECT_EQ(ok[i].want, budget_of(ctx)) TH_LOG("%s", ok[i].v);
		EXPECT_EQ(0, um_context_destroy(ctx));
	}
	/* the parser itself, past what a test should map */
	ASSERT_EQ(0, um__parse_size("1T", &v));
	EXPECT_EQ(1ull << 40, v);
	ASSERT_EQ(0, um__parse_size("16EiB", &v) == -EINVAL ? 0 : 1);
	ASSERT_EQ(0, um__parse_size("15K", &v));
	EXPECT_EQ(15 * KiB, v);
	EXPECT_EQ(-EINVAL, um__parse_size("", &v));
	EXPECT_EQ(-EINVAL, um__parse_size("K", &v));
	EXPECT_EQ(-EINVAL, um__parse_size("18446744073709551616", &v));
	EXPECT_EQ(-EINVAL, um__parse_size("17179869184G", &v));
	/* the field beats the variable */
	cfg_sim(&cfg, 8 * MiB, 0);
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(8 * MiB, budget_of(ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST(env_bad_values)
{
	static const struct { const char *var, *val; } bad[] = {
		{ "LIBUM_DEVICE_BUDGET", "lots" },
		{ "LIBUM_DEVICE_BUDGET", "12Q" },
		{ "LIBUM_DEVICE_BUDGET", "-5" },
		{ "LIBUM_DEVICE_BUDGET", " 5" },
		{ "LIBUM_DEVICE_BUDGET", "99999999999999999999" },
		{ "LIBUM_DEVICE_BUDGET", "99999999999T" },
		{ "LIBUM_SIM_CAPACITY", "1K" },		/* below the minimum */
		{ "LIBUM_CHUNK_BYTES", "100" },
		{ "LIBUM_POOL_CHUNK", "1M" },
		{ "LIBUM_LOG_LEVEL", "loud" },
		{ "LIBUM_LOG_LEVEL", "9" },
		{ "LIBUM_BACKEND", "tpu" },
	};
	struct um_config cfg;
	struct um_context *ctx = (struct um_context *)&cfg;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid_t pid = fork();
		int status;

		ASSERT_LE(0, pid);
		if (!pid) {
			logcap_reset();
			cfg_sim(&cfg, 0, 0);
			cfg.backend = 0;	/* fields given beat variables */
			cfg.log_level = 0;
			setenv(bad[i].var, bad[i].val, 1);
			if (create(&cfg, &ctx) != -EINVAL || ctx)
				_exit(1);
			if (!logcap_has(UM_LOG_ERR, bad[i].var, bad[i].val, NULL))
				_exit(2);
			_exit(g_log.err == 1 ? 0 : 3);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("%s=%s", bad[i].var,
							  bad[i].val);
	}
}

TEST(backend_choice)
{
	struct um_config cfg;
	struct um_context *ctx;
	int ret;

	/* AUTO: sim here (no GPU), with one INFO line saying why */
	unsetenv("LIBUM_BACKEND");
	logcap_reset();
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.backend = UM_BACKEND_AUTO;
	ASSERT_EQ(0, create(&cfg, &ctx));
	if (um_context_backend(ctx) == UM_BACKEND_SIM)
		EXPECT_TRUE(logcap_has(UM_LOG_INFO, "using sim", NULL));
	EXPECT_EQ(0, um_context_destroy(ctx));

	/* the variable decides what the field leaves to it (auto) */
	setenv("LIBUM_BACKEND", "sim", 1);
	cfg.backend = UM_BACKEND_AUTO;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(UM_BACKEND_SIM, um_context_backend(ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));

	/* forcing cuda: a context on a GPU machine, else -ENODEV and why */
	logcap_reset();
	setenv("LIBUM_BACKEND", "cuda", 1);
	cfg.backend = UM_BACKEND_AUTO;
	ctx = NULL;
	ret = create(&cfg, &ctx);
	if (ret == 0) {
		EXPECT_EQ(UM_BACKEND_CUDA, um_context_backend(ctx));
		EXPECT_EQ(0, um_context_destroy(ctx));
	} else {
		EXPECT_EQ(-ENODEV, ret);
		EXPECT_NULL(ctx);
		EXPECT_TRUE(logcap_has(UM_LOG_ERR, "cuda", NULL));
	}
}

TEST(config_fields_checked)
{
	struct um_config cfg;
	struct {
		struct um_config c;
		uint32_t extra;
	} big;
	struct um_context *ctx = NULL;

	EXPECT_EQ(-EINVAL, create(&cfg, NULL));
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.size = 0;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.size = 4;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.size = 8192;
	EXPECT_EQ(-E2BIG, create(&cfg, &ctx));
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.flags = 1;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.flags = 0;
	cfg.backend = 3;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.backend = UM_BACKEND_SIM;
	cfg.log_level = 8;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.log_level = -1;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.log_level = UM_LOG_DEBUG;
	cfg.chunk_bytes = 1000;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.chunk_bytes = 0;
	cfg.spill_dir = "";
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.spill_dir = "spill";		/* relative: cwd-dependent */
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.spill_dir = "/tmp/a\001b";
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.spill_dir = "/tmp/../etc";
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.spill_dir = "/tmp/x/..";
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	cfg.spill_dir = NULL;
	/* the sim's own limit: said by name, not as a bare errno */
	logcap_reset();
	cfg.sim_capacity = SIZE_MAX;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "sim_capacity", "64 TiB", NULL));
	EXPECT_FALSE(logcap_has(UM_LOG_ERR, "(-22)", NULL));
	/* one line, in units: "backend sim: init failed: Invalid argument"
	 * came after it, and the size in bytes */
	logcap_reset();
	cfg.sim_capacity = 1ull << 47;
	EXPECT_EQ(-EINVAL, create(&cfg, &ctx));
	EXPECT_EQ(1, g_log.err) TH_LOG("log: %s", g_log.text);
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "sim: sim_capacity 128 TiB is above the largest simulated device, 64 TiB",
			       NULL)) TH_LOG("log: %s", g_log.text);
	cfg.sim_capacity = 16 * MiB;
	EXPECT_NULL(ctx);
	/* a newer caller's larger struct: unknown fields must be zero */
	memset(&big, 0, sizeof(big));
	cfg_sim(&big.c, 0, 16 * MiB);
	big.c.size = sizeof(big);
	big.extra = 5;
	EXPECT_EQ(-E2BIG, create(&big.c, &ctx));
	big.extra = 0;
	ASSERT_EQ(0, create(&big.c, &ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
	/* an older, shorter one (no log fields): defaults for the rest */
	cfg_sim(&cfg, 4 * MiB, 16 * MiB);
	cfg.size = offsetof(struct um_config, spill_dir);
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(4 * MiB, budget_of(ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
	/* a budget above the device: clamped, said once */
	logcap_reset();
	cfg_sim(&cfg, 64 * MiB, 16 * MiB);
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(16 * MiB, budget_of(ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "budget", "above", NULL));
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* The variables without a field land in the context's settings. */
TEST(environment_into_settings)
{
	struct um_config cfg;
	struct um_context *ctx;

	cfg_sim(&cfg, 0, 16 * MiB);
	ASSERT_EQ(0, create(&cfg, &ctx));	/* none set: the defaults */
	EXPECT_FALSE(ctx->set.pressure);	/* create() sets it to 0 */
	EXPECT_TRUE(ctx->set.pool_refill);
	EXPECT_EQ(UM_DEFAULT_REPORT_MS, ctx->set.report_ms);
	EXPECT_EQ(0, ctx->set.priority);
	EXPECT_NULL(ctx->set.client_name);
	EXPECT_NULL(ctx->set.umm_dev);
	EXPECT_NULL(ctx->set.psi_path);
	EXPECT_EQ(UM_HOME_AUTO, ctx->set.home_node);
	EXPECT_FALSE(ctx->set.spill_remove_stale);
	EXPECT_EQ(0, um_context_destroy(ctx));

	setenv("LIBUM_POOL_REFILL", "Off", 1);
	setenv("LIBUM_PRESSURE_REPORT_MS", "250", 1);
	setenv("LIBUM_PRIORITY", "-7", 1);
	setenv("LIBUM_CLIENT_NAME", "my job", 1);
	setenv("LIBUM_UMM_DEV", "/nonexistent/umm", 1);
	setenv("LIBUM_PSI_PATH", "/nonexistent/psi", 1);
	setenv("LIBUM_HOME_NODE", "any", 1);
	setenv("LIBUM_SPILL_REMOVE_STALE", "1", 1);
	setenv("LIBUM_PRESSURE", "yes", 1);
	ASSERT_EQ(0, um_context_create(&cfg, &ctx));
	EXPECT_TRUE(ctx->set.pressure);
	EXPECT_FALSE(ctx->set.pool_refill);
	EXPECT_EQ(250, ctx->set.report_ms);
	EXPECT_EQ(-7, ctx->set.priority);
	EXPECT_STREQ("my job", ctx->set.client_name);
	EXPECT_STREQ("/nonexistent/umm", ctx->set.umm_dev);
	EXPECT_STREQ("/nonexistent/psi", ctx->set.psi_path);
	EXPECT_EQ(-1, ctx->set.home_node);	/* any: UM_NUMA_ANY */
	EXPECT_TRUE(ctx->set.spill_remove_stale);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

/* LIBUM_SPILL_REMOVE_STALE=1 reaches the spill store a context opens. */
TEST(spill_remove_stale_from_environment)
{
	char dir[] = "/tmp/um-test-stale-XXXXXX", path[96];
	struct um_config cfg;
	struct um_context *ctx;
	int fd;

	ASSERT_NONNULL(mkdtemp(dir));
	/* a pid above any pid_max: a process that is gone */
	snprintf(path, sizeof(path), "%s/um-2147483647-0-1.spill", dir);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_LE(0, fd);
	ASSERT_EQ(4, write(fd, "gone", 4));
	close(fd);
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.spill_dir = dir;
	logcap_reset();
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "stale", "kept", NULL));
	EXPECT_EQ(0, access(path, F_OK));
	setenv("LIBUM_SPILL_REMOVE_STALE", "1", 1);
	logcap_reset();
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
	EXPECT_TRUE(logcap_has(UM_LOG_WARN, "stale", "removed", NULL));
	EXPECT_NE(0, access(path, F_OK));
	unlink(path);
	EXPECT_EQ(0, rmdir(dir));
}

/* A directory the context made is gone with it; one it found stays. */
TEST(spill_dir_made_is_removed)
{
	char dir[] = "/tmp/um-test-made-XXXXXX", sub[64];
	struct um_config cfg;
	struct um_context *ctx;

	ASSERT_NONNULL(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/spill", dir);
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.spill_dir = sub;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(0, access(sub, F_OK));
	EXPECT_EQ(0, um_context_destroy(ctx));
	EXPECT_NE(0, access(sub, F_OK));
	cfg.spill_dir = dir;
	ASSERT_EQ(0, create(&cfg, &ctx));
	EXPECT_EQ(0, um_context_destroy(ctx));
	EXPECT_EQ(0, rmdir(dir));	/* still there: it was not ours */
}

TEST(log_level_filters)
{
	struct um_config cfg;
	struct um_context *ctx;

	logcap_reset();
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.log_level = UM_LOG_ERR;
	ASSERT_EQ(0, create(&cfg, &ctx));
	ASSERT_NE(0, region(ctx, UM_KIND_PARAM, 0, MiB, "x"));
	EXPECT_EQ(1, um_context_destroy(ctx));	/* a WARN, filtered */
	EXPECT_EQ(0, g_log.n);
	/* from the environment, by name */
	logcap_reset();
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.log_level = 0;
	setenv("LIBUM_LOG_LEVEL", "warn", 1);
	ASSERT_EQ(0, create(&cfg, &ctx));
	ASSERT_NE(0, region(ctx, UM_KIND_PARAM, 0, MiB, "y"));
	EXPECT_EQ(1, um_context_destroy(ctx));
	EXPECT_EQ(1, g_log.n);
	EXPECT_EQ(1, g_log.warn);
	/* no callback: silent, nothing breaks */
	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.log = NULL;
	ASSERT_EQ(0, create(&cfg, &ctx));
	ASSERT_NE(0, region(ctx, UM_KIND_PARAM, 0, MiB, "z"));
	EXPECT_EQ(1, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
