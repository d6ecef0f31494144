/* SPDX-License-Identifier: MIT */
/*
 * spill.h - the spill tier: region bytes kept in files on disk.
 *
 * One store per context, in the directory the user names (um_config's
 * spill_dir / LIBUM_SPILL_DIR). One file per spilled region, named
 * "um-<pid>-<ctx>-<region>.spill", written and read with io_uring (with
 * pread and pwrite where a seccomp profile refuses io_uring), with
 * O_DIRECT where the filesystem allows it (buffered otherwise, said once
 * in the log), and an XXH3-64 checksum of the bytes verified on every read.
 *
 * Rules the core can rely on:
 *  - um__spill_write() never touches src; on any failure (-ENOSPC, -EIO,
 *    -ENOENT when the directory vanished, ...) the partial file is removed
 *    and the region's bytes are still only where they were.
 *  - um__spill_read() fills dst; on failure (-EIO: checksum or header
 *    mismatch, short file; -ENOENT: no such spill) the file is kept as is,
 *    dst's contents are unspecified, and the region is still in the spill
 *    tier: the caller must not switch its residency.
 *  - A successful read does not remove the file: call um__spill_drop() once
 *    the caller has switched the region's residency away from the spill.
 *  - Calls are synchronous and thread-safe (one store lock; disk I/O is the
 *    bottleneck anyway). They block: call them off hot paths.
 *
 * Directory safety: created 0700 when missing (one level only). An existing
 * directory must be owned by the effective uid, and if group or others can
 * write to it, it must be sticky (like /tmp); otherwise open fails with
 * -EPERM. Files are created O_EXCL | O_NOFOLLOW, mode 0600, relative to a
 * directory fd held open for the store's life.
 *
 * Stale files (pid in the name no longer alive) found at open are reported
 * once as a WARN with their count and bytes, and removed when
 * UM_SPILL_REMOVE_STALE is set (a context sets it for
 * LIBUM_SPILL_REMOVE_STALE=1).
 */
#ifndef UM_SPILL_H
#define UM_SPILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct um_spill;

/* Same shape as struct um_backend's log: level is enum um_log_level. */
typedef void (*um_spill_log_fn)(void *log_arg, int level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

enum um_spill_flags {
	UM_SPILL_REMOVE_STALE = 1u << 0,	/* unlink stale files at open */
	UM_SPILL_NO_DIRECT = 1u << 1,		/* never try O_DIRECT */
	UM_SPILL_OWN_DIR = 1u << 2,	/* ours by name: made at the first
					 * write if not there, the last user
					 * removes it, whoever made it */
};

struct um_spill_config {
	const char *dir;		/* required */
	uint32_t flags;			/* enum um_spill_flags */
	uint32_t queue_depth;		/* I/Os in flight; 0: default (8) */
	uint32_t io_bytes;		/* bytes per I/O; 0: default (1 MiB) */
	um_spill_log_fn log;		/* may be NULL */
	void *log_arg;
};

struct um_spill_stats {
	uint64_t files;			/* spill files alive now */
	uint64_t bytes;			/* region bytes in them now */
	uint64_t peak_bytes;
	uint64_t writes, write_bytes, write_ns;
	uint64_t reads, read_bytes, read_ns;
	uint64_t write_errors;		/* writes refused or failed */
	uint64_t read_errors;		/* including checksum errors */
	uint64_t checksum_errors;
	uint64_t stale_files;		/* found at open */
	uint64_t stale_bytes;
	uint32_t direct;		/* 1: O_DIRECT in use */
	uint32_t pad;
};

/* A spill directory held open, shared with its other users (spill_dir.c). */
struct um_spill_dir {
	int fd;
	bool made;		/* we created it */
};

/* Make (0700) or open path, ours and safe; -EPERM where it is not. */
int um__spill_dir_open(const char *path, struct um_spill_dir *d);
/* Let go; the last user removes it if empty and made or may_remove. */
void um__spill_dir_close(struct um_spill_dir *d, const char *path,
			 bool may_remove);
/* The directory used where none is given; -errno and why where none fits. */
int um__spill_default_dir(char *buf, size_t len, const char **why);

/*
 * Open (and create, 0700) the store. -EINVAL bad config, -ENOTDIR, -EPERM
 * unsafe directory, -ENOENT parent missing, -ENOMEM. Without io_uring
 * (refused, or any error setting up a ring) it uses pread and pwrite.
 */
int um__spill_open(const struct um_spill_config *cfg, struct um_spill **out);
/* Remove every file this store wrote, then free it. NULL is a no-op. */
void um__spill_close(struct um_spill *sp);

/*
 * Write len bytes of src as region's spill (replacing any previous spill of
 * that region). len may be anything > 0; src needs no alignment.
 */
int um__spill_write(struct um_spill *sp, uint64_t region, const void *src,
		    size_t len);
/* Read region's spill into dst; len must equal the length written. */
int um__spill_read(struct um_spill *sp, uint64_t region, void *dst,
		   size_t len);
/* Remove region's spill file; -ENOENT if it has none. */
int um__spill_drop(struct um_spill *sp, uint64_t region);
/* 1 if region has a spill file, 0 if not. */
int um__spill_has(struct um_spill *sp, uint64_t region);

void um__spill_stats(struct um_spill *sp, struct um_spill_stats *st);
const char *um__spill_dir(const struct um_spill *sp);

#endif /* UM_SPILL_H */
