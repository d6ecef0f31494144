// SPDX-License-Identifier: MIT
/*
 * spill_dir.c - the spill tier's directory: made, checked, shared, removed.
 *
 * Several processes (a trainer's ranks, every context of one process) may
 * spill into one directory, the default one above all. Whoever leaves last
 * removes a directory it may remove, and only then: each user holds a
 * shared flock(2) on it while open; the one that leaves takes it exclusive
 * without waiting, which succeeds only where no one else holds it, and
 * removes the directory under that lock. One that opens meanwhile blocks
 * on its shared lock until the removal is done, sees that the path no
 * longer names the directory it opened, and makes it anew.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "spill.h"

#define OPEN_TRIES	8
#define TMPFS_MAGIC	0x01021994
#define RAMFS_MAGIC	0x858458f6

/* Anyone who can write here could plant or swap files: allow that only in
 * a sticky directory (they cannot touch ours) that we own. */
static bool safe(const struct stat *st)
{
	return st->st_uid == geteuid() &&
	       (!(st->st_mode & (S_IWGRP | S_IWOTH)) ||
		(st->st_mode & S_ISVTX));
}

/* Does path still name the directory fd is open on (not removed since)? */
static bool still_there(const char *path, int fd)
{
	struct stat a, b;

	return !fstat(fd, &a) && !stat(path, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

static int open_once(const char *path, struct um_spill_dir *d)
{
	struct stat st;
	int fd, err;

	d->made = !mkdir(path, 0700);
	if (!d->made && errno != EEXIST)
		return -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* removed by the last one leaving between our mkdir and here */
	if (fd < 0)
		return errno == ENOENT ? -EAGAIN : -errno;
	err = fstat(fd, &st) ? -errno : safe(&st) ? 0 : -EPERM;
	if (!err && flock(fd, LOCK_SH))
		err = -errno;
	if (!err && !still_there(path, fd))
		err = -EAGAIN;		/* removed by the last one leaving */
	if (err) {
		close(fd);
		return err;
	}
	d->fd = fd;
	return 0;
}

int um__spill_dir_open(const char *path, struct um_spill_dir *d)
{
	int ret = -EAGAIN;

	d->fd = -1;
	d->made = false;
	for (int i = 0; i < OPEN_TRIES && ret == -EAGAIN; i++)
		ret = open_once(path, d);
	return ret;
}

void um__spill_dir_close(struct um_spill_dir *d, const char *path,
			 bool may_remove)
{
	if (d->fd < 0)
		return;
	/* Fails, as it should, while anything is still in it or while
	 * another user holds it. */
	if ((d->made || may_remove) && !flock(d->fd, LOCK_EX | LOCK_NB))
		rmdir(path);
	close(d->fd);
	d->fd = -1;
}

/*
 * /var/tmp/libum-<euid>: on disk where /tmp may be memory, made at the
 * first spill (spill.c defers it: UM_SPILL_OWN_DIR), kept across
 * reboots only as long as it holds something (the last user removes it).
 * A spill to tmpfs or ramfs would take as much memory as it frees, so none
 * there.
 */
int um__spill_default_dir(char *buf, size_t len, const char **why)
{
	static const char base[] = "/var/tmp";
	struct statfs fs;

	if (statfs(base, &fs)) {
		*why = "/var/tmp is missing";
		return -errno;
	}
	if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
		*why = "/var/tmp is in memory (tmpfs)";
		return -EXDEV;
	}
	if ((size_t)snprintf(buf, len, "%s/libum-%u", base,
			     (unsigned int)geteuid()) >= len) {
		*why = "no room for the path";
		return -ENAMETOOLONG;
	}
	*why = NULL;
	return 0;
}
