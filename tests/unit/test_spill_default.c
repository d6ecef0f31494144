/* SPDX-License-Identifier: MIT */
/*
 * Description: the spill tier a user who sets nothing gets:
 * /var/tmp/libum-<euid>, made 0700 at the first spill (a process that
 * never spills, whether it destroys its context or not, leaves nothing
 * behind), shared by every context and process of that user, removed by
 * the last one to leave; spill_dir /
 * LIBUM_SPILL_DIR "off" for none; none, quietly and with the reason kept
 * for the ERR line of an unmet limit, where /var/tmp is memory (tmpfs) or
 * the directory is not safely ours. Each test runs in a mount namespace of
 * its own with a fresh directory bound over /var/tmp (root only; skipped
 * otherwise).
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"
#include "internal.h"
#include "spill.h"

#define N (4 * MiB)

FIXTURE(vartmp) {
	char tmp[64];
	char dir[64];		/* the default spill directory */
	bool bound;
};

FIXTURE_SETUP(vartmp)
{
	snprintf(self->tmp, sizeof(self->tmp), "/var/tmp/um-test-vt.XXXXXX");
	ASSERT_NONNULL(mkdtemp(self->tmp));
	snprintf(self->dir, sizeof(self->dir), "/var/tmp/libum-%u",
		 (unsigned int)geteuid());
	if (unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount(self->tmp, "/var/tmp", NULL, MS_BIND, NULL))
		SKIP(return, "no mount namespace of our own (%s)",
		     strerror(errno));
	self->bound = true;
	unsetenv("LIBUM_SPILL_DIR");
	setenv("LIBUM_PRESSURE", "0", 1);
	logcap_reset();
}

FIXTURE_TEARDOWN(vartmp)
{
	char cmd[128];

	if (self->bound)
		umount2("/var/tmp", MNT_DETACH);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->tmp);
	if (system(cmd))
		TH_LOG("could not remove %s", self->tmp);
}

static struct um_context *plain_ctx(const char *spill_dir)
{
	struct um_context *ctx = NULL;
	struct um_config cfg;

	cfg_sim(&cfg, 8 * MiB, 64 * MiB);
	cfg.spill_dir = spill_dir;
	return um_context_create(&cfg, &ctx) ? NULL : ctx;
}

/* Region bytes through the disk tier and back. */
static int spill_round_trip(struct um_context *ctx, unsigned int seed)
{
	um_region_t r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, N, "spilled");
	int ret;

	if (!r)
		return -ENOMEM;
	ret = put_pattern(ctx, r, N, seed);
	if (!ret)
		ret = um_evict(ctx, r, UM_TIER_DISK);
	if (!ret)
		ret = get_pattern(ctx, r, N, seed);
	um_free(ctx, r);
	return ret;
}

TEST_F(vartmp, default_made_shared_and_removed_by_the_last)
{
	struct um_context *a, *b;
	struct stat st;

	a = plain_ctx(NULL);
	ASSERT_NONNULL(a);
	ASSERT_NONNULL(a->spill) TH_LOG("log: %s", g_log.text);
	ASSERT_STREQ(self->dir, um__spill_dir(a->spill));
	EXPECT_NE(0, access(self->dir, F_OK)) TH_LOG("made before a spill");
	EXPECT_EQ(0, spill_round_trip(a, 11));
	ASSERT_EQ(0, stat(self->dir, &st));
	EXPECT_EQ(0700, st.st_mode & 07777);
	EXPECT_EQ(geteuid(), st.st_uid);
	b = plain_ctx(NULL);
	ASSERT_NONNULL(b);
	ASSERT_NONNULL(b->spill);
	/* a made it; leaving first it must leave it to b */
	EXPECT_EQ(0, um_context_destroy(a));
	ASSERT_EQ(0, access(self->dir, F_OK));
	EXPECT_EQ(0, spill_round_trip(b, 12));
	EXPECT_EQ(0, um_context_destroy(b));
	EXPECT_NE(0, access(self->dir, F_OK)) TH_LOG("left behind");
	EXPECT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);
}

/*
 * A process that never spills leaves no directory, even one that ends
 * without um_context_destroy (an exit, a kill): /var/tmp/libum-<euid> was
 * made at create and stayed behind, empty.
 */
TEST_F(vartmp, nothing_left_without_a_spill)
{
	pid_t pid = fork();
	int status;

	ASSERT_LE(0, pid);
	if (!pid) {
		struct um_context *ctx = plain_ctx(NULL);
		um_region_t r;

		if (!ctx || !ctx->spill)
			_exit(1);
		r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, N, "kept");
		_exit(r && !um_evict(ctx, r, UM_TIER_HOST_ANY) &&
		      !um_wait_all(ctx) ? 0 : 2);	/* no destroy */
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status));
	EXPECT_NE(0, access(self->dir, F_OK)) TH_LOG("left behind");
}

TEST_F(vartmp, off_means_none)
{
	struct um_context *ctx;
	um_region_t r;

	setenv("LIBUM_SPILL_DIR", "off", 1);
	ctx = plain_ctx(NULL);
	ASSERT_NONNULL(ctx);
	EXPECT_NULL(ctx->spill);
	EXPECT_NE(NULL, strstr(ctx->set.spill_none, "is off"));
	r = region(ctx, UM_KIND_OPTIMIZER_STATE, 0, N, "stays");
	ASSERT_NE(0, r);
	EXPECT_EQ(-EOPNOTSUPP, um_evict(ctx, r, UM_TIER_DISK));
	EXPECT_EQ(0, um_free(ctx, r));
	EXPECT_EQ(0, um_context_destroy(ctx));
	unsetenv("LIBUM_SPILL_DIR");
	/* the field says the same; the variable's dir does not win over it */
	setenv("LIBUM_SPILL_DIR", self->tmp, 1);
	ctx = plain_ctx("off");
	ASSERT_NONNULL(ctx);
	EXPECT_NULL(ctx->spill);
	EXPECT_EQ(0, um_context_destroy(ctx));
	unsetenv("LIBUM_SPILL_DIR");
	EXPECT_NE(0, access(self->dir, F_OK)) TH_LOG("made although off");
	/* only "off" itself: "Off" is a relative path, refused */
	ASSERT_NULL(plain_ctx("Off"));
	EXPECT_TRUE(logcap_has(UM_LOG_ERR, "not off or an absolute path",
			       NULL));
}

/* Someone else's (or a world-writable) directory where ours would be: no
 * spill tier, no ERR line for a choice the user never made, the reason
 * kept; the directory left as it was. */
TEST_F(vartmp, unsafe_default_left_alone)
{
	struct um_context *ctx;
	struct stat st;

	ASSERT_EQ(0, mkdir(self->dir, 0700));
	ASSERT_EQ(0, chmod(self->dir, 0777));
	ctx = plain_ctx(NULL);
	ASSERT_NONNULL(ctx);
	EXPECT_NULL(ctx->spill);
	EXPECT_EQ(0, g_log.err) TH_LOG("log: %s", g_log.text);
	EXPECT_TRUE(logcap_has(UM_LOG_INFO, "default directory", self->dir,
			       "Operation not permitted", NULL))
		TH_LOG("log: %s", g_log.text);
	EXPECT_NE(NULL, strstr(ctx->set.spill_none, self->dir));
	EXPECT_EQ(0, um_context_destroy(ctx));
	ASSERT_EQ(0, stat(self->dir, &st));
	EXPECT_EQ(0777, st.st_mode & 07777);
}

/* A spill to memory frees nothing: none where /var/tmp is a tmpfs. */
TEST_F(vartmp, none_where_var_tmp_is_memory)
{
	struct um_context *ctx;

	ASSERT_EQ(0, mount("none", "/var/tmp", "tmpfs", 0, "size=16m"));
	ctx = plain_ctx(NULL);
	umount2("/var/tmp", MNT_DETACH);
	ASSERT_NONNULL(ctx);
	EXPECT_NULL(ctx->spill);
	EXPECT_NE(NULL, strstr(ctx->set.spill_none, "in memory"))
		TH_LOG("%s", ctx->set.spill_none);
	EXPECT_EQ(0, g_log.err);
	EXPECT_EQ(0, um_context_destroy(ctx));
}

TEST_HARNESS_MAIN
