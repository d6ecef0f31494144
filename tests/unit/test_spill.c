/* SPDX-License-Identifier: MIT */
/*
 * Description: the spill tier (libum/src/spill.c) against real filesystems:
 * round trips of awkward sizes and alignments, directory creation and
 * permission rules, a directory that vanishes, ENOSPC on a small tmpfs,
 * the buffered fallback on a filesystem without O_DIRECT (ramfs), checksum
 * and header corruption, truncation, stale files of dead processes, bad
 * arguments, and concurrent use, on io_uring and where a seccomp profile
 * refuses it (pread and pwrite). Every failure must leave the caller's bytes
 * untouched and no file behind.
 *
 * The temp directories live under $UM_TEST_DIR, else /var/tmp (a disk
 * filesystem here; /tmp may be tmpfs elsewhere). Tests that mount a tmpfs or
 * ramfs need root and skip otherwise.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "refuse_io_uring.h"
#include "spill.h"

#define MiB (1024ull * 1024)

struct logbook {
	int n, info, warn, err;
	char last[512];
};

static void logfn(void *arg, int level, const char *fmt, ...)
{
	struct logbook *lb = arg;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(lb->last, sizeof(lb->last), fmt, ap);
	va_end(ap);
	lb->n++;
	if (level <= 3)
		lb->err++;
	else if (level == 4)
		lb->warn++;
	else
		lb->info++;
}

static const char *base_dir(void)
{
	const char *d = getenv("UM_TEST_DIR");

	return d && *d ? d : "/var/tmp";
}

/* A fresh, empty parent directory for one test. */
static void make_parent(char *buf, size_t len)
{
	snprintf(buf, len, "%s/um-test-spill.XXXXXX", base_dir());
	if (!mkdtemp(buf))
		buf[0] = '\0';
}

static void rm_tree(const char *dir)
{
	char cmd[8400];
	int rc;

	if (!dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	rc = system(cmd);
	(void)rc;
}

static void fill(void *p, size_t len, unsigned int seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	unsigned char *c = p;

	for (size_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		c[i] = (unsigned char)x;
	}
}

static int count_files(const char *dir, const char *prefix)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, prefix, strlen(prefix)))
			n++;
	closedir(d);
	return n;
}

/* Path of region's spill file (the one file of this pid with that region). */
static int find_file(const char *dir, uint64_t region, char *out, size_t len)
{
	char suffix[64];
	struct dirent *de;
	DIR *d = opendir(dir);
	int found = 0;

	if (!d)
		return 0;
	snprintf(suffix, sizeof(suffix), "-%llu.spill",
		 (unsigned long long)region);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), s = strlen(suffix);
		char pfx[32];

		snprintf(pfx, sizeof(pfx), "um-%d-", (int)getpid());
		if (n > s && !strcmp(de->d_name + n - s, suffix) &&
		    !strncmp(de->d_name, pfx, strlen(pfx))) {
			snprintf(out, len, "%s/%s", dir, de->d_name);
			found++;
		}
	}
	closedir(d);
	return found;
}

FIXTURE(spill) {
	char parent[4096];
	char dir[4200];
	struct um_spill *sp;
	struct logbook lb;
};

/*
 * Each test of the fixture twice: on io_uring, and where a seccomp profile
 * refuses it (Docker's, containerd's), on pread and pwrite.
 */
FIXTURE_VARIANT(spill) {
	bool refuse_io_uring;
};

FIXTURE_VARIANT_ADD(spill, io_uring) {
	.refuse_io_uring = false,
};

FIXTURE_VARIANT_ADD(spill, io_uring_refused) {
	.refuse_io_uring = true,
};

FIXTURE_SETUP(spill)
{
	struct um_spill_config c = { 0 };

	if (variant->refuse_io_uring)
		ASSERT_EQ(0, refuse_io_uring());
	make_parent(self->parent, sizeof(self->parent));
	ASSERT_NE(0, self->parent[0]);
	snprintf(self->dir, sizeof(self->dir), "%s/spill", self->parent);
	c.dir = self->dir;
	c.log = logfn;
	c.log_arg = &self->lb;
	ASSERT_EQ(0, um__spill_open(&c, &self->sp));
	ASSERT_EQ(0, self->lb.err) TH_LOG("%s", self->lb.last);
	if (variant->refuse_io_uring)
		ASSERT_NE(NULL, strstr(self->lb.last, "pread and pwrite"))
			TH_LOG("%s", self->lb.last);
}

FIXTURE_TEARDOWN(spill)
{
	um__spill_close(self->sp);
	rm_tree(self->parent);
}

/* Sizes and offsets that hit every path: tiny, sub-block, exact, pieces. */
TEST_F(spill, round_trip_sizes)
{
	static const size_t sizes[] = { 1, 511, 4095, 4096, 4097, 65536 + 7,
					MiB, 3 * MiB + 1234, 9 * MiB };
	static const size_t offs[] = { 0, 1, 4096, 100 };
	size_t maxlen = 9 * MiB + 8192;
	char *src, *dst;

	ASSERT_EQ(0, posix_memalign((void **)&src, 4096, maxlen));
	ASSERT_EQ(0, posix_memalign((void **)&dst, 4096, maxlen));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t j = 0; j < sizeof(offs) / sizeof(offs[0]); j++) {
			uint64_t region = 1 + i * 16 + j;
			size_t len = sizes[i], o = offs[j];

			fill(src + o, len, (unsigned int)region);
			memset(dst, 0xee, maxlen);
			ASSERT_EQ(0, um__spill_write(self->sp, region, src + o,
						     len))
				TH_LOG("len %zu off %zu", len, o);
			ASSERT_EQ(1, um__spill_has(self->sp, region));
			ASSERT_EQ(0, um__spill_read(self->sp, region,
						    dst + (j ? 8192 - o : 0),
						    len))
				TH_LOG("len %zu off %zu", len, o);
			ASSERT_EQ(0, memcmp(src + o, dst + (j ? 8192 - o : 0),
					    len))
				TH_LOG("len %zu off %zu", len, o);
			/* nothing written past the end of dst's range */
			ASSERT_EQ(0xee, (unsigned char)dst[(j ? 8192 - o : 0) +
							   len]);
			ASSERT_EQ(0, um__spill_drop(self->sp, region));
			ASSERT_EQ(0, um__spill_has(self->sp, region));
		}
	}
	ASSERT_EQ(0, count_files(self->dir, "um-"));
	free(src);
	free(dst);
}

TEST_F(spill, files_named_counted_and_removed)
{
	struct um_spill_stats st;
	char path[8192], buf[1000];
	struct stat sb;

	fill(buf, sizeof(buf), 3);
	ASSERT_EQ(0, um__spill_write(self->sp, 10, buf, sizeof(buf)));
	ASSERT_EQ(0, um__spill_write(self->sp, 11, buf, 600));
	ASSERT_EQ(1, find_file(self->dir, 10, path, sizeof(path)));
	ASSERT_EQ(0, stat(path, &sb));
	ASSERT_EQ(0600, sb.st_mode & 0777);
	/* header block + data padded to the block */
	ASSERT_EQ(8192, sb.st_size);
	um__spill_stats(self->sp, &st);
	ASSERT_EQ(2, st.files);
	ASSERT_EQ(1600, st.bytes);
	ASSERT_EQ(2, st.writes);
	ASSERT_EQ(2, count_files(self->dir, "um-"));
	ASSERT_EQ(0, um__spill_drop(self->sp, 10));
	ASSERT_EQ(-ENOENT, um__spill_drop(self->sp, 10));
	ASSERT_EQ(1, count_files(self->dir, "um-"));
	um__spill_stats(self->sp, &st);
	ASSERT_EQ(1, st.files);
	ASSERT_EQ(600, st.bytes);
	ASSERT_EQ(1600, st.peak_bytes);
	/* close removes what is left, and the directory it made */
	um__spill_close(self->sp);
	self->sp = NULL;
	ASSERT_EQ(-1, count_files(self->dir, "um-"));
	ASSERT_EQ(ENOENT, errno);
}

TEST_F(spill, rewrite_replaces)
{
	char a[5000], b[7000], out[7000];
	struct um_spill_stats st;

	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	ASSERT_EQ(0, um__spill_write(self->sp, 5, a, sizeof(a)));
	ASSERT_EQ(0, um__spill_write(self->sp, 5, b, sizeof(b)));
	ASSERT_EQ(-EINVAL, um__spill_read(self->sp, 5, out, sizeof(a)));
	ASSERT_EQ(0, um__spill_read(self->sp, 5, out, sizeof(b)));
	ASSERT_EQ(0, memcmp(b, out, sizeof(b)));
	um__spill_stats(self->sp, &st);
	ASSERT_EQ(1, st.files);
	ASSERT_EQ(sizeof(b), st.bytes);
	ASSERT_EQ(1, count_files(self->dir, "um-"));
}

TEST_F(spill, bad_arguments)
{
	struct um_spill_config c = { .dir = self->dir };
	struct um_spill *sp = NULL;
	char buf[64] = { 0 };

	ASSERT_EQ(-EINVAL, um__spill_open(NULL, &sp));
	ASSERT_EQ(-EINVAL, um__spill_open(&c, NULL));
	c.dir = NULL;
	ASSERT_EQ(-EINVAL, um__spill_open(&c, &sp));
	c.dir = "";
	ASSERT_EQ(-EINVAL, um__spill_open(&c, &sp));
	c.dir = self->dir;
	c.flags = 1u << 30;
	ASSERT_EQ(-EINVAL, um__spill_open(&c, &sp));
	c.flags = 0;
	c.io_bytes = 1000;
	ASSERT_EQ(-EINVAL, um__spill_open(&c, &sp));
	c.io_bytes = 0;
	c.queue_depth = 100000;
	ASSERT_EQ(-EINVAL, um__spill_open(&c, &sp));
	ASSERT_NULL(sp);

	ASSERT_EQ(-EINVAL, um__spill_write(NULL, 1, buf, sizeof(buf)));
	ASSERT_EQ(-EINVAL, um__spill_write(self->sp, 0, buf, sizeof(buf)));
	ASSERT_EQ(-EINVAL, um__spill_write(self->sp, 1, NULL, sizeof(buf)));
	ASSERT_EQ(-EINVAL, um__spill_write(self->sp, 1, buf, 0));
	ASSERT_EQ(-EINVAL, um__spill_read(self->sp, 0, buf, sizeof(buf)));
	ASSERT_EQ(-EINVAL, um__spill_read(self->sp, 1, NULL, sizeof(buf)));
	ASSERT_EQ(-ENOENT, um__spill_read(self->sp, 1, buf, sizeof(buf)));
	ASSERT_EQ(-EINVAL, um__spill_drop(self->sp, 0));
	ASSERT_EQ(-ENOENT, um__spill_drop(self->sp, 77));
	ASSERT_EQ(0, um__spill_has(self->sp, 77));
	ASSERT_EQ(0, um__spill_has(NULL, 77));
	ASSERT_EQ(0, count_files(self->dir, "um-"));
	um__spill_close(NULL);
}

/* Flip one byte of the data, then of the header: -EIO, file kept, and the
 * region reads back fine once the byte is put back (nothing was lost). */
TEST_F(spill, checksum_mismatch_is_eio_and_keeps_file)
{
	size_t len = 2 * MiB + 17;
	char path[8192], *src = malloc(len), *dst = malloc(len);
	struct um_spill_stats st;
	unsigned char c, bad;
	int fd;

	ASSERT_NONNULL(src);
	ASSERT_NONNULL(dst);
	fill(src, len, 9);
	ASSERT_EQ(0, um__spill_write(self->sp, 42, src, len));
	ASSERT_EQ(1, find_file(self->dir, 42, path, sizeof(path)));
	fd = open(path, O_RDWR);
	ASSERT_LE(0, fd);

	/* data byte in the middle of the second piece */
	ASSERT_EQ(1, pread(fd, &c, 1, 4096 + MiB + 5));
	bad = c ^ 0x40;
	ASSERT_EQ(1, pwrite(fd, &bad, 1, 4096 + MiB + 5));
	ASSERT_EQ(-EIO, um__spill_read(self->sp, 42, dst, len));
	ASSERT_EQ(1, um__spill_has(self->sp, 42));
	ASSERT_EQ(1, count_files(self->dir, "um-"));
	ASSERT_LT(0, self->lb.err);
	ASSERT_NE(NULL, strstr(self->lb.last, "checksum"));
	ASSERT_EQ(1, pwrite(fd, &c, 1, 4096 + MiB + 5));
	ASSERT_EQ(0, um__spill_read(self->sp, 42, dst, len));
	ASSERT_EQ(0, memcmp(src, dst, len));

	/* header: the recorded length */
	ASSERT_EQ(1, pread(fd, &c, 1, 24));
	bad = c ^ 1;
	ASSERT_EQ(1, pwrite(fd, &bad, 1, 24));
	ASSERT_EQ(-EIO, um__spill_read(self->sp, 42, dst, len));
	ASSERT_EQ(1, pwrite(fd, &c, 1, 24));
	ASSERT_EQ(0, um__spill_read(self->sp, 42, dst, len));

	/* padding after the data is not covered: still fine */
	bad = 0x5a;
	ASSERT_EQ(1, pwrite(fd, &bad, 1, 4096 + len + 3));
	ASSERT_EQ(0, um__spill_read(self->sp, 42, dst, len));

	/* truncated file */
	ASSERT_EQ(0, ftruncate(fd, 4096 + MiB));
	ASSERT_EQ(-EIO, um__spill_read(self->sp, 42, dst, len));
	ASSERT_EQ(1, um__spill_has(self->sp, 42));
	close(fd);

	um__spill_stats(self->sp, &st);
	ASSERT_EQ(3, st.read_errors);
	ASSERT_LE(2, st.checksum_errors);
	free(src);
	free(dst);
}

/* A file replaced behind our back with another valid-looking spill. */
TEST_F(spill, swapped_file_detected)
{
	char a[9000], b[9000], out[9000], pa[8192], pb[8192];

	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	ASSERT_EQ(0, um__spill_write(self->sp, 1, a, sizeof(a)));
	ASSERT_EQ(0, um__spill_write(self->sp, 2, b, sizeof(b)));
	ASSERT_EQ(1, find_file(self->dir, 1, pa, sizeof(pa)));
	ASSERT_EQ(1, find_file(self->dir, 2, pb, sizeof(pb)));
	ASSERT_EQ(0, rename(pb, pa));
	ASSERT_EQ(-EIO, um__spill_read(self->sp, 1, out, sizeof(out)));
}

TEST(directory_created_0700)
{
	struct um_spill_config c = { 0 };
	char parent[4096], dir[4200];
	struct um_spill *sp;
	struct stat sb;

	make_parent(parent, sizeof(parent));
	ASSERT_NE(0, parent[0]);
	snprintf(dir, sizeof(dir), "%s/new", parent);
	c.dir = dir;
	umask(0);
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	ASSERT_EQ(0, stat(dir, &sb));
	ASSERT_TRUE(S_ISDIR(sb.st_mode));
	ASSERT_EQ(0700, sb.st_mode & 07777);
	ASSERT_STREQ(dir, um__spill_dir(sp));
	um__spill_close(sp);
	ASSERT_NE(0, access(dir, F_OK));	/* made here, gone with it */
	/* one it found stays */
	ASSERT_EQ(0, mkdir(dir, 0700));
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	um__spill_close(sp);
	ASSERT_EQ(0, access(dir, F_OK));
	/* only one level is created */
	snprintf(dir, sizeof(dir), "%s/a/b", parent);
	ASSERT_EQ(-ENOENT, um__spill_open(&c, &sp));
	rm_tree(parent);
}

TEST(not_a_directory)
{
	struct um_spill_config c = { 0 };
	char parent[4096], path[4200];
	struct um_spill *sp;
	int fd;

	make_parent(parent, sizeof(parent));
	snprintf(path, sizeof(path), "%s/file", parent);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	ASSERT_LE(0, fd);
	close(fd);
	c.dir = path;
	ASSERT_EQ(-ENOTDIR, um__spill_open(&c, &sp));
	rm_tree(parent);
}

/* Writable by others: refused unless sticky; someone else's: refused. */
TEST(unsafe_directories_refused)
{
	struct um_spill_config c = { 0 };
	struct logbook lb = { 0 };
	char parent[4096];
	struct um_spill *sp;

	make_parent(parent, sizeof(parent));
	c.dir = parent;
	c.log = logfn;
	c.log_arg = &lb;
	ASSERT_EQ(0, chmod(parent, 0777));
	ASSERT_EQ(-EPERM, um__spill_open(&c, &sp));
	ASSERT_NE(NULL, strstr(lb.last, "sticky"));
	ASSERT_EQ(0, chmod(parent, 0770));
	ASSERT_EQ(-EPERM, um__spill_open(&c, &sp));
	ASSERT_EQ(0, chmod(parent, 01777));
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	um__spill_close(sp);
	ASSERT_EQ(0, chmod(parent, 0755));
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	um__spill_close(sp);
	if (geteuid() == 0) {
		ASSERT_EQ(0, chown(parent, 65534, 65534));
		ASSERT_EQ(-EPERM, um__spill_open(&c, &sp));
		ASSERT_EQ(0, chown(parent, 0, 0));
	}
	rm_tree(parent);
}

/* The directory disappears under a live store: writes fail cleanly. */
TEST_F(spill, directory_removed_after_open)
{
	char buf[10000], copy[10000];

	fill(buf, sizeof(buf), 5);
	memcpy(copy, buf, sizeof(buf));
	ASSERT_EQ(0, um__spill_write(self->sp, 1, buf, sizeof(buf)));
	rm_tree(self->dir);
	ASSERT_EQ(-ENOENT, um__spill_write(self->sp, 2, buf, sizeof(buf)));
	ASSERT_EQ(0, memcmp(buf, copy, sizeof(buf)));
	ASSERT_EQ(0, um__spill_has(self->sp, 2));
	ASSERT_NE(NULL, strstr(self->lb.last, "stay where they were"));
	/* the one written before is gone with the directory: a clean error */
	ASSERT_EQ(-ENOENT, um__spill_read(self->sp, 1, buf, sizeof(buf)));
}

static int try_mount(const char *type, const char *opts, const char *dir)
{
	if (mount(type, dir, type, 0, opts))
		return -errno;
	return 0;
}

/*
 * A parent directory to mount a small filesystem on. Lazy unmount: the
 * io_uring ring of a closed store drops its file references asynchronously,
 * so a plain umount can still find the mount busy for a moment.
 */
FIXTURE(mnt) {
	char parent[4096];
};

FIXTURE_VARIANT(mnt) {
	bool refuse_io_uring;
};

FIXTURE_VARIANT_ADD(mnt, io_uring) {
	.refuse_io_uring = false,
};

FIXTURE_VARIANT_ADD(mnt, io_uring_refused) {
	.refuse_io_uring = true,
};

FIXTURE_SETUP(mnt)
{
	if (variant->refuse_io_uring)
		ASSERT_EQ(0, refuse_io_uring());
	make_parent(self->parent, sizeof(self->parent));
	ASSERT_NE(0, self->parent[0]);
}

FIXTURE_TEARDOWN(mnt)
{
	umount2(self->parent, MNT_DETACH);
	rm_tree(self->parent);
}

/* A 1 MiB tmpfs: a 4 MiB spill fails with ENOSPC, leaves nothing behind. */
TEST_F(mnt, enospc_leaves_bytes_and_no_file)
{
	struct um_spill_config c = { 0 };
	struct um_spill_stats st;
	struct logbook lb = { 0 };
	char *parent = self->parent, *src, *copy;
	size_t len = 4 * MiB;
	struct um_spill *sp;
	int ret;

	ret = try_mount("tmpfs", "size=1m,mode=0700", parent);
	if (ret)
		SKIP(return, "cannot mount a tmpfs (%s)", strerror(-ret));
	src = malloc(len);
	copy = malloc(len);
	ASSERT_NONNULL(src);
	fill(src, len, 77);
	memcpy(copy, src, len);
	c.dir = parent;
	c.log = logfn;
	c.log_arg = &lb;
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	ret = um__spill_write(sp, 1, src, len);
	EXPECT_EQ(-ENOSPC, ret);
	EXPECT_EQ(0, memcmp(src, copy, len));
	EXPECT_EQ(0, um__spill_has(sp, 1));
	EXPECT_EQ(0, count_files(parent, "um-"));
	EXPECT_NE(NULL, strstr(lb.last, "No space"));
	/* the store still works for what fits */
	EXPECT_EQ(0, um__spill_write(sp, 2, src, 64 * 1024));
	EXPECT_EQ(0, um__spill_read(sp, 2, copy, 64 * 1024));
	EXPECT_EQ(0, memcmp(src, copy, 64 * 1024));
	um__spill_stats(sp, &st);
	EXPECT_EQ(1, st.write_errors);
	EXPECT_EQ(1, st.files);
	um__spill_close(sp);
	free(src);
	free(copy);
}

/* ramfs has no O_DIRECT: the store says so once and works buffered. */
TEST_F(mnt, odirect_fallback_on_ramfs)
{
	struct um_spill_config c = { 0 };
	struct um_spill_stats st;
	struct logbook lb = { 0 };
	char *parent = self->parent, *src, *dst;
	size_t len = 3 * MiB + 5;
	struct um_spill *sp;
	int ret, i;

	ret = try_mount("ramfs", "mode=0700", parent);
	if (ret)
		SKIP(return, "cannot mount a ramfs (%s)", strerror(-ret));
	src = malloc(len);
	dst = malloc(len);
	ASSERT_NONNULL(src);
	ASSERT_NONNULL(dst);
	c.dir = parent;
	c.log = logfn;
	c.log_arg = &lb;
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	for (i = 1; i <= 3; i++) {
		fill(src, len, (unsigned int)i);
		ASSERT_EQ(0, um__spill_write(sp, (uint64_t)i, src, len));
		ASSERT_EQ(0, um__spill_read(sp, (uint64_t)i, dst, len));
		ASSERT_EQ(0, memcmp(src, dst, len));
	}
	um__spill_stats(sp, &st);
	EXPECT_EQ(0, st.direct);
	/* and the line of io_uring refused, where it is */
	EXPECT_EQ(1 + variant->refuse_io_uring, lb.info);
	EXPECT_NE(NULL, strstr(lb.last, "O_DIRECT"));
	EXPECT_EQ(3, count_files(parent, "um-"));
	um__spill_close(sp);
	EXPECT_EQ(0, count_files(parent, "um-"));
	free(src);
	free(dst);
}

TEST(no_direct_flag)
{
	struct um_spill_config c = { .flags = UM_SPILL_NO_DIRECT };
	struct um_spill_stats st;
	char parent[4096], buf[3000], out[3000];
	struct um_spill *sp;

	make_parent(parent, sizeof(parent));
	c.dir = parent;
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	fill(buf, sizeof(buf), 8);
	ASSERT_EQ(0, um__spill_write(sp, 3, buf, sizeof(buf)));
	ASSERT_EQ(0, um__spill_read(sp, 3, out, sizeof(out)));
	ASSERT_EQ(0, memcmp(buf, out, sizeof(buf)));
	um__spill_stats(sp, &st);
	ASSERT_EQ(0, st.direct);
	um__spill_close(sp);
	rm_tree(parent);
}

static pid_t dead_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void plant(const char *dir, const char *name, size_t bytes)
{
	char path[8192], buf[4096] = { 0 };
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	if (fd < 0)
		return;
	while (bytes) {
		size_t n = bytes < sizeof(buf) ? bytes : sizeof(buf);

		if (write(fd, buf, n) < 0)
			break;
		bytes -= n;
	}
	close(fd);
}

/* Files of a dead pid are reported (count, bytes) and removed on request;
 * files of live processes and unrelated files are never touched. */
TEST(stale_files_reported_and_removed)
{
	struct um_spill_config c = { 0 };
	struct logbook lb = { 0 };
	struct um_spill_stats st;
	char parent[4096], name[128];
	struct um_spill *sp;
	pid_t dead = dead_pid();

	make_parent(parent, sizeof(parent));
	snprintf(name, sizeof(name), "um-%d-0-7.spill", (int)dead);
	plant(parent, name, 12288);
	snprintf(name, sizeof(name), "um-%d-3-8.spill", (int)dead);
	plant(parent, name, 4096);
	snprintf(name, sizeof(name), "um-%d-0-9.spill", (int)getppid());
	plant(parent, name, 4096);
	plant(parent, "um-notours.spill", 4096);
	plant(parent, "unrelated", 10);

	c.dir = parent;
	c.log = logfn;
	c.log_arg = &lb;
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	um__spill_stats(sp, &st);
	ASSERT_EQ(2, st.stale_files);
	ASSERT_EQ(16384, st.stale_bytes);
	ASSERT_EQ(1, lb.warn);
	ASSERT_NE(NULL, strstr(lb.last, "2 stale file(s), 16 KiB"));
	ASSERT_NE(NULL, strstr(lb.last, "kept"));
	um__spill_close(sp);
	ASSERT_EQ(4, count_files(parent, "um-"));

	c.flags = UM_SPILL_REMOVE_STALE;
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	ASSERT_NE(NULL, strstr(lb.last, "removed"));
	um__spill_close(sp);
	ASSERT_EQ(2, count_files(parent, "um-"));
	ASSERT_EQ(1, count_files(parent, "unrelated"));

	/* nothing stale: nothing said */
	lb.warn = 0;
	c.flags = 0;
	ASSERT_EQ(0, um__spill_open(&c, &sp));
	ASSERT_EQ(0, lb.warn);
	um__spill_close(sp);
	rm_tree(parent);
}

/* Two stores of one process share a directory without collisions. */
TEST(two_stores_one_directory)
{
	struct um_spill_config c = { 0 };
	char parent[4096], a[5000], b[5000], out[5000];
	struct um_spill *s1, *s2;

	make_parent(parent, sizeof(parent));
	c.dir = parent;
	ASSERT_EQ(0, um__spill_open(&c, &s1));
	ASSERT_EQ(0, um__spill_open(&c, &s2));
	fill(a, sizeof(a), 1);
	fill(b, sizeof(b), 2);
	ASSERT_EQ(0, um__spill_write(s1, 1, a, sizeof(a)));
	ASSERT_EQ(0, um__spill_write(s2, 1, b, sizeof(b)));
	ASSERT_EQ(0, um__spill_read(s1, 1, out, sizeof(out)));
	ASSERT_EQ(0, memcmp(a, out, sizeof(a)));
	ASSERT_EQ(0, um__spill_read(s2, 1, out, sizeof(out)));
	ASSERT_EQ(0, memcmp(b, out, sizeof(b)));
	um__spill_close(s1);
	ASSERT_EQ(1, count_files(parent, "um-"));
	um__spill_close(s2);
	ASSERT_EQ(0, count_files(parent, "um-"));
	rm_tree(parent);
}

/*
 * A directory several stores share is removed by the last to leave, and
 * only where it may be: one it made (a named directory), or any with
 * UM_SPILL_OWN_DIR (the default directory, whoever made it).
 */
TEST(shared_directory_removed_by_the_last)
{
	struct um_spill_config c = { 0 };
	char parent[4096], dir[4200], a[4400];
	struct um_spill *s1, *s2;

	make_parent(parent, sizeof(parent));
	ASSERT_NE(0, parent[0]);
	snprintf(dir, sizeof(dir), "%s/spill", parent);
	c.dir = dir;
	fill(a, sizeof(a), 3);
	/* s1 made it, s2 found it: s1 leaving first must not remove it */
	ASSERT_EQ(0, um__spill_open(&c, &s1));
	ASSERT_EQ(0, um__spill_open(&c, &s2));
	um__spill_close(s1);
	ASSERT_EQ(0, access(dir, F_OK));
	ASSERT_EQ(0, um__spill_write(s2, 1, a, sizeof(a)));
	um__spill_close(s2);
	ASSERT_EQ(0, access(dir, F_OK)) TH_LOG("s2 did not make it");
	/* ours by name: the last one removes it, whoever made it */
	c.flags = UM_SPILL_OWN_DIR;
	ASSERT_EQ(0, um__spill_open(&c, &s1));
	ASSERT_EQ(0, um__spill_open(&c, &s2));
	um__spill_close(s1);
	ASSERT_EQ(0, access(dir, F_OK));
	um__spill_close(s2);
	ASSERT_NE(0, access(dir, F_OK));
	/* never one that holds a file it did not make */
	ASSERT_EQ(0, mkdir(dir, 0700));
	snprintf(a, sizeof(a), "%s/keep", dir);
	ASSERT_EQ(0, close(open(a, O_CREAT | O_WRONLY, 0600)));
	ASSERT_EQ(0, um__spill_open(&c, &s1));
	um__spill_close(s1);
	ASSERT_EQ(0, access(a, F_OK));
	rm_tree(parent);
}

struct churner {
	const char *dir;
	int id;
	int errors;
};

/* Open, spill, read back, close, over and over, as short-lived processes
 * sharing the default directory do. */
static void *churn(void *arg)
{
	struct churner *w = arg;
	struct um_spill_config c = { .dir = w->dir, .flags = UM_SPILL_OWN_DIR };
	char src[8192], dst[8192];
	struct um_spill *sp;

	for (int i = 0; i < 100; i++) {
		fill(src, sizeof(src), (unsigned int)(w->id * 1000 + i));
		if (um__spill_open(&c, &sp)) {
			w->errors++;
			continue;
		}
		if (um__spill_write(sp, 1, src, sizeof(src)) ||
		    um__spill_read(sp, 1, dst, sizeof(dst)) ||
		    memcmp(src, dst, sizeof(src)))
			w->errors++;
		um__spill_close(sp);
	}
	return NULL;
}

/* The last one leaving removes the directory while others open it: none of
 * them may find itself in a removed directory. */
TEST(shared_directory_open_close_race)
{
	struct churner w[6];
	pthread_t t[6];
	char parent[4096], dir[4200];

	make_parent(parent, sizeof(parent));
	ASSERT_NE(0, parent[0]);
	snprintf(dir, sizeof(dir), "%s/spill", parent);
	for (int i = 0; i < 6; i++) {
		w[i] = (struct churner){ .dir = dir, .id = i };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, churn, &w[i]));
	}
	for (int i = 0; i < 6; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].errors) TH_LOG("churner %d", i);
	}
	EXPECT_NE(0, access(dir, F_OK)) TH_LOG("the last one left it behind");
	rm_tree(parent);
}

struct worker {
	struct um_spill *sp;
	int id;
	int errors;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	size_t len = 300000 + (size_t)w->id * 4097;
	char *src = malloc(len), *dst = malloc(len);

	if (!src || !dst) {
		w->errors++;
		goto out;
	}
	for (int i = 0; i < 20; i++) {
		uint64_t region = (uint64_t)w->id * 1000 + (uint64_t)(i % 4) + 1;

		fill(src, len, (unsigned int)region + (unsigned int)i);
		if (um__spill_write(w->sp, region, src, len) ||
		    um__spill_read(w->sp, region, dst, len) ||
		    memcmp(src, dst, len))
			w->errors++;
		if (i % 3 == 0 && um__spill_drop(w->sp, region))
			w->errors++;
	}
out:
	free(src);
	free(dst);
	return NULL;
}

TEST_F(spill, threads)
{
	struct worker w[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ .sp = self->sp, .id = i + 1 };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, work, &w[i]));
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, w[i].errors) TH_LOG("worker %d", i);
	}
}

/* Not a timing test: reports what the disk gave, for the record. */
TEST_F(spill, throughput_figure)
{
	size_t len = 64 * MiB;
	struct um_spill_stats st;
	char *buf;

	ASSERT_EQ(0, posix_memalign((void **)&buf, 4096, len));
	fill(buf, len, 1);
	ASSERT_EQ(0, um__spill_write(self->sp, 1, buf, len));
	ASSERT_EQ(0, um__spill_read(self->sp, 1, buf, len));
	um__spill_stats(self->sp, &st);
	ASSERT_LT(0, st.write_ns);
	ASSERT_LT(0, st.read_ns);
	printf("# spill %s, %s, on %s: write %.2f GB/s, read %.2f GB/s (64 MiB)\n",
	       st.direct ? "O_DIRECT" : "buffered",
	       variant->refuse_io_uring ? "pread/pwrite" : "io_uring", base_dir(),
	       (double)st.write_bytes / (double)st.write_ns,
	       (double)st.read_bytes / (double)st.read_ns);
	free(buf);
}

TEST_HARNESS_MAIN
