/* SPDX-License-Identifier: MIT */
/*
 * Description: every LIBUM_* variable is checked when a context is
 * created: a bad value fails with -EINVAL and one ERR line that
 * names the variable, its value and the form it takes, whether the
 * variable would be used or a field of the configuration wins (one rule:
 * field, else variable, else default); good values of every form pass;
 * UM_BACKEND, read until 2026-12-02, is not read and is a WARN naming
 * LIBUM_BACKEND; an unknown LIBUM_ name is a WARN. Without a log callback ERR lines reach stderr and nothing else
 * does, unless LIBUM_LOG_LEVEL says otherwise (off: nothing). Each case
 * runs in a child of its own, so setenv stays there.
 */
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

/* Runs fn in a child with stderr going to a file; its exit status. */
static int in_child(int (*fn)(const void *arg), const void *arg,
		    char *err, size_t len)
{
	char path[] = "/tmp/um-test-env-XXXXXX";
	int fd = mkstemp(path), status = -1;
	pid_t pid;
	ssize_t n;

	if (fd < 0)
		return -1;
	unlink(path);
	pid = fork();
	if (!pid) {
		dup2(fd, STDERR_FILENO);
		_exit(fn(arg));
	}
	if (pid > 0)
		waitpid(pid, &status, 0);
	n = pread(fd, err, len - 1, 0);
	err[n > 0 ? n : 0] = '\0';
	close(fd);
	return pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct env_case {
	const char *var, *val;
	const char *form;	/* a piece of the accepted form's text */
};

/* A sim context with a capturing log and no field set: the variables rule. */
static int create_with(const struct env_case *c, struct um_context **ctx)
{
	struct um_config cfg;

	cfg_sim(&cfg, 0, 0);
	cfg.backend = 0;
	cfg.log_level = 0;
	setenv("LIBUM_BACKEND", "sim", 1);
	if (strcmp(c->var, "LIBUM_PRESSURE"))
		setenv("LIBUM_PRESSURE", "0", 1);
	if (strcmp(c->var, "LIBUM_SIM_CAPACITY"))
		setenv("LIBUM_SIM_CAPACITY", "16M", 1);
	setenv(c->var, c->val, 1);
	return um_context_create(&cfg, ctx);
}

/* 0 when the case fails as it should, with the one ERR line it should. */
static int refused(const void *arg)
{
	const struct env_case *c = arg;
	struct um_context *ctx = NULL;
	char want[96];

	snprintf(want, sizeof(want), "%s=\"%s\"", c->var, c->val);
	logcap_reset();
	if (create_with(c, &ctx) != -EINVAL || ctx)
		return 1;
	if (!logcap_has(UM_LOG_ERR, want, "is not valid: want", c->form, NULL))
		return 2;
	return g_log.err == 1 ? 0 : 3;
}

TEST(every_variable_refuses_garbage)
{
	static const struct env_case bad[] = {
		{ "LIBUM_BACKEND", "gpu", "sim, cuda or auto" },
		{ "LIBUM_DEVICE_BUDGET", "0", "at least 1 byte" },
		{ "LIBUM_DEVICE_BUDGET", "lots", "such as 512M" },
		{ "LIBUM_SIM_CAPACITY", "0", "at least 1M" },
		{ "LIBUM_SIM_CAPACITY", "512K", "at least 1M" },
		{ "LIBUM_POOL_SIZE", "-1", "0 for none" },
		{ "LIBUM_POOL_CHUNK", "1M", "at least 2M" },
		{ "LIBUM_CHUNK_BYTES", "4K", "at least 64K" },
		{ "LIBUM_LOG_LEVEL", "8", "0-7" },
		{ "LIBUM_LOG_LEVEL", "loud", "off" },
		{ "LIBUM_PRESSURE", "maybe", "0, off, no, false" },
		{ "LIBUM_PRESSURE_REPORT_MS", "0", "1 to 60000" },
		{ "LIBUM_PRESSURE_REPORT_MS", "60001", "1 to 60000" },
		{ "LIBUM_PRESSURE_REPORT_MS", "10ms", "1 to 60000" },
		{ "LIBUM_PRESSURE_REPORT_MS", " 5", "1 to 60000" },
		{ "LIBUM_PRIORITY", "high", "-2147483648 to 2147483647" },
		{ "LIBUM_PRIORITY", "2147483648", "-2147483648" },
		{ "LIBUM_PRIORITY", "-2147483649", "-2147483648" },
		{ "LIBUM_PRIORITY", "1.5", "an integer" },
		{ "LIBUM_CLIENT_NAME", "a name longer than thirty-one chars",
		  "1 to 31 printable" },
		{ "LIBUM_CLIENT_NAME", "tab\there", "printable ASCII" },
		{ "LIBUM_UMM_DEV", "dev/umm", "an absolute path" },
		{ "LIBUM_PSI_PATH", "memory", "an absolute path" },
		{ "LIBUM_HOME_NODE", "-1", "or any" },
		{ "LIBUM_HOME_NODE", "4096", "a NUMA node of this machine" },
		{ "LIBUM_HOME_NODE", "node0", "or any" },
		{ "LIBUM_SPILL_REMOVE_STALE", "yes", "1 or 0" },
		{ "LIBUM_SPILL_DIR", "spill", "an absolute directory path" },
		{ "LIBUM_SPILL_DIR", "/tmp/a\033b", "an absolute directory" },
		{ "LIBUM_SPILL_DIR", "/tmp/../root", "an absolute directory" },
	};
	char err[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT_EQ(0, in_child(refused, &bad[i], err, sizeof(err)))
			TH_LOG("%s=%s", bad[i].var, bad[i].val);
}

static int accepted(const void *arg)
{
	const struct env_case *c = arg;
	struct um_context *ctx = NULL;

	logcap_reset();
	if (create_with(c, &ctx) || !ctx)
		return 1;
	if (g_log.err || g_log.warn)
		return 2;
	return um_context_destroy(ctx) ? 3 : 0;
}

TEST(every_form_accepted)
{
	static const struct env_case good[] = {
		{ "LIBUM_BACKEND", "SIM", NULL },
		{ "LIBUM_POOL_SIZE", "0", NULL },
		{ "LIBUM_DEVICE_BUDGET", "4MiB", NULL },
		{ "LIBUM_LOG_LEVEL", "off", NULL },
		{ "LIBUM_LOG_LEVEL", "Warning", NULL },
		{ "LIBUM_LOG_LEVEL", "0", NULL },
		{ "LIBUM_PRESSURE", "no", NULL },
		{ "LIBUM_PRESSURE", "FALSE", NULL },
		{ "LIBUM_PRESSURE_REPORT_MS", "1", NULL },
		{ "LIBUM_PRESSURE_REPORT_MS", "60000", NULL },
		{ "LIBUM_PRIORITY", "-2147483648", NULL },
		{ "LIBUM_PRIORITY", "2147483647", NULL },
		{ "LIBUM_CLIENT_NAME", "my trainer #2", NULL },
		{ "LIBUM_UMM_DEV", "/dev/umm", NULL },
		{ "LIBUM_PSI_PATH", "/proc/pressure/memory", NULL },
		{ "LIBUM_HOME_NODE", "any", NULL },
		{ "LIBUM_HOME_NODE", "0", NULL },
		{ "LIBUM_SPILL_REMOVE_STALE", "1", NULL },
		{ "LIBUM_SPILL_DIR", "", NULL },		/* empty: unset */
	};
	char err[4096];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		EXPECT_EQ(0, in_child(accepted, &good[i], err, sizeof(err)))
			TH_LOG("%s=%s", good[i].var, good[i].val);
}

/* The field wins, but a bad variable is not ignored for that. */
static int field_and_variable(const void *arg)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;
	uint64_t b = 0;

	cfg_sim(&cfg, 8 * MiB, 16 * MiB);
	setenv("LIBUM_PRESSURE", "0", 1);
	setenv("LIBUM_DEVICE_BUDGET", "4M", 1);
	if (um_context_create(&cfg, &ctx) || um_budget_get(ctx, 0, &b) ||
	    b != 8 * MiB || um_context_destroy(ctx))
		return 1;
	logcap_reset();
	setenv("LIBUM_DEVICE_BUDGET", "4Q", 1);
	ctx = NULL;
	if (um_context_create(&cfg, &ctx) != -EINVAL || ctx)
		return 2;
	return logcap_has(UM_LOG_ERR, "LIBUM_DEVICE_BUDGET=\"4Q\"", NULL) ? 0 : 3;
}

TEST(field_wins_variable_still_checked)
{
	char err[4096];

	EXPECT_EQ(0, in_child(field_and_variable, NULL, err, sizeof(err)));
}

/* backend: the field, else LIBUM_BACKEND; UM_BACKEND is not libum's */
static int backend_names(const void *arg)
{
	struct um_config cfg;
	struct um_context *ctx = NULL;
	int ret;

	cfg_sim(&cfg, 0, 16 * MiB);
	cfg.backend = UM_BACKEND_AUTO;
	setenv("LIBUM_PRESSURE", "0", 1);
	setenv("LIBUM_BACKEND", "Sim", 1);	/* in any case */
	if (um_context_create(&cfg, &ctx) ||
	    um_context_backend(ctx) != UM_BACKEND_SIM || um_context_destroy(ctx))
		return 1;
	/* neither checked nor used, whatever it says; but not silently */
	logcap_reset();
	setenv("UM_BACKEND", "tpu", 1);
	if (um_context_create(&cfg, &ctx) ||
	    um_context_backend(ctx) != UM_BACKEND_SIM ||
	    um_context_destroy(ctx) || g_log.err)
		return 2;
	if (!logcap_has(UM_LOG_WARN, "config: UM_BACKEND is no longer read",
			"set LIBUM_BACKEND instead", NULL))
		return 5;
	setenv("UM_BACKEND", "cuda", 1);
	if (um_context_create(&cfg, &ctx) ||
	    um_context_backend(ctx) != UM_BACKEND_SIM ||
	    um_context_destroy(ctx) || g_log.err)
		return 3;
	/* a field the caller set beats the variable */
	cfg.backend = UM_BACKEND_CUDA;
	setenv("LIBUM_BACKEND", "sim", 1);
	ret = um_context_create(&cfg, &ctx);
	if (ret == 0)
		return um_context_backend(ctx) == UM_BACKEND_CUDA &&
		       !um_context_destroy(ctx) ? 0 : 4;
	return ret == -ENODEV ? 0 : 5;	/* no GPU here: cuda, refused */
}

TEST(backend_one_rule)
{
	char err[4096];

	EXPECT_EQ(0, in_child(backend_names, NULL, err, sizeof(err)));
}

/* A sim context with a capturing log, after setenv(var, val). */
static int create_env(const char *var, const char *val,
		      struct um_context **ctx)
{
	struct um_config cfg;

	cfg_sim(&cfg, 0, 16 * MiB);
	setenv("LIBUM_PRESSURE", "0", 1);
	setenv(var, val, 1);
	logcap_reset();
	*ctx = NULL;
	return um_context_create(&cfg, ctx);
}

static int unknown_name(const void *arg)
{
	struct um_context *ctx;

	if (create_env("LIBUM_DEVICE_BUGDET", "1G", &ctx))
		return 1;
	um_context_destroy(ctx);
	return logcap_has(UM_LOG_WARN, "LIBUM_DEVICE_BUGDET",
			  "not a libum variable", NULL) ? 0 : 2;
}

TEST(unknown_variable_warned)
{
	char err[4096];

	EXPECT_EQ(0, in_child(unknown_name, NULL, err, sizeof(err)));
}

/* ---- without a log callback: stderr -------------------------------------- */

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A context without a callback and what its creation returns. */
static int create_silent(void)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;
	int ret;

	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_SIM;
	cfg.sim_capacity = 16 * MiB;
	setenv("LIBUM_PRESSURE", "0", 1);
	ret = um_context_create(&cfg, &ctx);
	if (!ret)
		um_context_destroy(ctx);
	return ret;
}

static int bad_priority(const void *arg)
{
	const char *level = arg;

	if (level)
		setenv("LIBUM_LOG_LEVEL", level, 1);
	setenv("LIBUM_PRIORITY", "high", 1);
	return create_silent() == -EINVAL ? 0 : 1;
}

/* a region left at destroy: a WARN line */
static int leak_one(const void *arg)
{
	struct um_region_desc d = {
		.size = sizeof(d), .bytes = 4096, .name = "left",
	};
	struct um_context *ctx = NULL;
	struct um_config cfg;
	um_region_t r;

	if (arg)
		setenv("LIBUM_LOG_LEVEL", arg, 1);
	setenv("LIBUM_PRESSURE", "0", 1);
	um_config_init(&cfg);
	cfg.backend = UM_BACKEND_SIM;
	cfg.sim_capacity = 16 * MiB;
	if (um_context_create(&cfg, &ctx) || um_alloc(ctx, &d, &r))
		return 1;
	return um_context_destroy(ctx) == 1 ? 0 : 2;
}

TEST(stderr_without_callback)
{
	char err[4096];

	/* an ERR line, and only it, by default */
	ASSERT_EQ(0, in_child(bad_priority, NULL, err, sizeof(err)));
	EXPECT_NONNULL(strstr(err,
		"libum: error: config: LIBUM_PRIORITY=\"high\" is not valid: want an integer"))
		TH_LOG("stderr: %s", err);
	EXPECT_EQ(1, lines(err));
	/* off: nothing, even then */
	ASSERT_EQ(0, in_child(bad_priority, "off", err, sizeof(err)));
	EXPECT_STREQ("", err);
	/* a working program stays quiet: no INFO, no WARN by default */
	ASSERT_EQ(0, in_child(leak_one, NULL, err, sizeof(err)));
	EXPECT_STREQ("", err);
	ASSERT_EQ(0, in_child(leak_one, "err", err, sizeof(err)));
	EXPECT_STREQ("", err);
	/* warn: the leak is said */
	ASSERT_EQ(0, in_child(leak_one, "warn", err, sizeof(err)));
	EXPECT_NONNULL(strstr(err, "libum: warning: ")) TH_LOG("%s", err);
	EXPECT_NONNULL(strstr(err, "left")) TH_LOG("%s", err);
}

static int bad_with_callback(const void *arg)
{
	struct um_context *ctx;

	if (create_env("LIBUM_PRIORITY", "high", &ctx) != -EINVAL)
		return 1;
	return logcap_has(UM_LOG_ERR, "LIBUM_PRIORITY", NULL) ? 0 : 2;
}

TEST(callback_takes_all_stderr_nothing)
{
	char err[4096];

	ASSERT_EQ(0, in_child(bad_with_callback, NULL, err, sizeof(err)));
	EXPECT_STREQ("", err);
}

TEST_HARNESS_MAIN
