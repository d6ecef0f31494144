// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what an unprivileged user (uid/gid 65534, in a forked child)
 * can do. /dev/umm is 0660 root:root by default, so it cannot open it; it
 * cannot write any file under /sys/kernel/mm/umm, cannot read the 0400
 * figures, and cannot read the client table in debugfs (other clients'
 * names, pids and books). Root can do all of it.
 */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "helpers.h"

TEST(device_node_mode)
{
	struct stat st;

	ASSERT_EQ(0, stat(UMM_DEVICE_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0660, st.st_mode & 07777);
	EXPECT_EQ(0, st.st_uid);
	EXPECT_EQ(0, st.st_gid);
}

static int nobody_open_dev(void *arg)
{
	struct stat st;
	int fd;

	(void)arg;
	/* the path is reachable: a refusal must come from the node's mode */
	if (stat(UMM_DEVICE_PATH, &st))
		return 14;
	fd = open(UMM_DEVICE_PATH, O_RDWR);
	if (fd >= 0)
		return 10;
	if (errno != EACCES)
		return 11;
	fd = open(UMM_DEVICE_PATH, O_RDONLY);
	if (fd >= 0)
		return 12;
	return errno == EACCES ? 0 : 13;
}

TEST(nobody_cannot_open_device)
{
	int fd = umm_client("root-ok", 0, 0, 0);

	ASSERT_LE(0, fd) TH_LOG("root must be able to");
	close(fd);
	EXPECT_EQ(0, run_as_nobody(nobody_open_dev, NULL));
}

/* The walk runs as nobody: count what it could do that it must not. */
static int walk_bad, walk_files;

static int try_file(const char *path, const struct stat *st, int type,
		    struct FTW *ftw)
{
	char buf[64];
	int fd;

	(void)ftw;
	if (type != FTW_F)
		return 0;
	walk_files++;
	fd = open(path, O_WRONLY);
	if (fd >= 0) {
		if (write(fd, "0", 1) >= 0)
			walk_bad++;
		close(fd);
		walk_bad++;
	} else if (errno != EACCES) {
		walk_bad++;
	}
	if (!(st->st_mode & 0044)) {	/* not readable by others */
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			if (read(fd, buf, sizeof(buf)) >= 0)
				walk_bad++;
			close(fd);
		}
	}
	return 0;
}

static int nobody_walk(void *dir)
{
	walk_bad = walk_files = 0;
	/* the directories are 0755: looking is allowed, touching is not */
	if (nftw(dir, try_file, 16, FTW_PHYS) < 0)
		return 200;
	if (walk_files < 10)
		return 201;	/* did not see the files at all */
	if (walk_bad)
		return walk_bad > 99 ? 99 : walk_bad;
	return 0;
}

TEST(nobody_cannot_write_knobs_or_read_figures)
{
	EXPECT_EQ(0, run_as_nobody(nobody_walk, (void *)UMM_SYSFS))
		TH_LOG("files nobody could open/write (or read if 0400)");
}

static int nobody_debugfs(void *arg)
{
	char buf[256];
	struct stat st;

	(void)arg;
	if (stat("/sys/kernel", &st))
		return 21;	/* sysfs itself must be reachable */
	if (attr_read(UMM_DEBUGFS "/clients", buf, sizeof(buf)) >= 0)
		return 20;
	return 0;
}

TEST(nobody_cannot_read_client_table)
{
	char buf[4096];
	int fd = umm_client("secret-client", 0, 0, 0);

	ASSERT_LE(0, fd);
	ASSERT_LT(0, attr_read(UMM_DEBUGFS "/clients", buf, sizeof(buf)))
		TH_LOG("root reads the table");
	EXPECT_NONNULL(strstr(buf, "secret-client"));
	EXPECT_EQ(0, run_as_nobody(nobody_debugfs, NULL));
	close(fd);
}

TEST_HARNESS_MAIN
