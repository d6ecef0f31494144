/* SPDX-License-Identifier: MIT */
/*
 * spill.c - the spill tier: one file per region, io_uring, XXH3 checksums.
 *
 * Where io_uring is refused (Docker's and containerd's default seccomp
 * profiles refuse io_uring_setup), the same pieces go through pread and
 * pwrite, one at a time, on the calling thread: the io_uring path waits
 * for them there too, so only their overlap is lost. The data, the
 * header, the checksums and every check are the same.
 *
 * File layout: a 4 KiB header block, then the region's bytes from offset
 * 4096, padded with zeros to a 4 KiB multiple so O_DIRECT can write the
 * tail. The header is written last, so a file whose header does not verify
 * was never completed. The checksum is kept in memory too: a read must match
 * both, so a file swapped behind our back is caught as well as a torn one.
 *
 * The spill is an extension of memory for this process's life, not durable
 * storage: O_DIRECT writes skip the page cache, and buffered writes are
 * followed by fdatasync (so ENOSPC/EIO surface here, not at some later
 * writeback) and POSIX_FADV_DONTNEED (so the page cache gives the RAM back,
 * which was the point of spilling).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "spill.h"
#include "util.h"

#define SPILL_ALIGN	4096u
#define SPILL_HDR	4096u
#define SPILL_MAGIC	"UMSPILL1"
#define SPILL_VERSION	1u
#define SPILL_BUCKETS	256u
#define DEF_QD		8u
#define DEF_IO		(1u << 20)
#define MAX_QD		64u
#define MAX_IO		(64u << 20)

/* Log levels, as enum um_log_level (spill.h keeps um.h out of its users). */
#define L_ERR	3
#define L_WARN	4
#define L_INFO	6
#define L_DEBUG	7

struct spill_hdr {
	char magic[8];
	uint32_t version;
	uint32_t hdr_bytes;
	uint64_t region;
	uint64_t len;
	uint64_t data_off;
	uint64_t sum;		/* XXH3-64 of the len bytes */
	uint32_t pid;
	uint32_t ctx;
	uint64_t hdr_sum;	/* XXH3-64 of the fields above */
};

struct spill_file {
	struct spill_file *next;
	uint64_t region;
	uint64_t len;
	uint64_t sum;
};

struct um_spill {
	pthread_mutex_t lock;
	char *dir;
	int dirfd;		/* dir.fd; -1 until made (deferred) */
	struct um_spill_dir dir_held;
	/*
	 * Ours by name (UM_SPILL_OWN_DIR) and not there at open: made at
	 * the first write, so that a process that never spills leaves no
	 * empty directory behind, however it ends.
	 */
	bool deferred;
	pid_t pid;
	unsigned int ctx;
	uint32_t flags;
	unsigned int qd;
	size_t io_bytes;
	int direct;		/* 1 O_DIRECT, 0 buffered */
	bool on_ring;		/* io_uring, else pread/pwrite */
	struct io_uring ring;
	/* without io_uring: the pieces done, as the ring's completions */
	struct sync_done {
		unsigned int slot;
		int res;
	} done[MAX_QD];
	unsigned int done_head, ndone;
	char *bufs;		/* qd * io_bytes + one header block, aligned */
	XXH3_state_t *xxh;
	um_spill_log_fn log;
	void *log_arg;
	struct spill_file *table[SPILL_BUCKETS];
	struct um_spill_stats st;
};

static atomic_uint spill_ctx_seq;

#define slog(sp, lvl, ...)						\
	do {								\
		if ((sp)->log)						\
			(sp)->log((sp)->log_arg, (lvl), __VA_ARGS__);	\
	} while (0)

static size_t round_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static void file_name(const struct um_spill *sp, uint64_t region, char *buf,
		      size_t len)
{
	snprintf(buf, len, "um-%d-%u-%llu.spill", (int)sp->pid, sp->ctx,
		 (unsigned long long)region);
}

static struct spill_file **file_slot(struct um_spill *sp, uint64_t region)
{
	uint64_t h = (region * 0x9e3779b97f4a7c15ull) >> 56;
	struct spill_file **pp = &sp->table[h & (SPILL_BUCKETS - 1)];

	while (*pp && (*pp)->region != region)
		pp = &(*pp)->next;
	return pp;
}

/* Take region's file out of the table and off the disk; NULL if none. */
static struct spill_file *file_forget(struct um_spill *sp, uint64_t region,
				      const char *name)
{
	struct spill_file **pp = file_slot(sp, region), *f = *pp;

	if (f) {
		*pp = f->next;
		sp->st.files--;
		sp->st.bytes -= f->len;
		unlinkat(sp->dirfd, name, 0);
	}
	return f;
}

/* ---- directory ------------------------------------------------------- */

static int pid_alive(pid_t pid)
{
	if (pid <= 0)
		return 0;
	return !kill(pid, 0) || errno == EPERM;
}

/* Report (and maybe remove) files left by processes that are gone. */
static void scan_stale(struct um_spill *sp)
{
	unsigned long long region;
	int remove, dfd, pid, n;
	struct dirent *de;
	unsigned int ctx;
	struct stat st;
	DIR *d;

	remove = !!(sp->flags & UM_SPILL_REMOVE_STALE);
	dfd = dup(sp->dirfd);
	if (dfd < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		n = 0;
		if (sscanf(de->d_name, "um-%d-%u-%llu.spill%n", &pid, &ctx,
			   &region, &n) != 3 || de->d_name[n])
			continue;
		if (pid_alive(pid))
			continue;
		if (fstatat(sp->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		sp->st.stale_files++;
		sp->st.stale_bytes += (uint64_t)st.st_size;
		if (remove)
			unlinkat(sp->dirfd, de->d_name, 0);
	}
	closedir(d);
	if (sp->st.stale_files)
		slog(sp, L_WARN,
		     "spill: %llu stale file(s), %s, from dead processes in %s: %s",
		     (unsigned long long)sp->st.stale_files,
		     UM_SIZE(sp->st.stale_bytes), sp->dir,
		     remove ? "removed" :
			      "kept (LIBUM_SPILL_REMOVE_STALE=1 removes them)");
}

/*
 * The directory, joined or made; our own by name (the default one) only
 * where it is there already, else at the first write (dir_made).
 */
static int open_dir(struct um_spill *sp, const struct um_spill_config *cfg)
{
	struct stat st;
	int ret;

	if ((cfg->flags & UM_SPILL_OWN_DIR) && stat(cfg->dir, &st) &&
	    errno == ENOENT) {
		sp->deferred = true;
		return 0;
	}
	ret = um__spill_dir_open(cfg->dir, &sp->dir_held);
	sp->dirfd = sp->dir_held.fd;
	return ret;
}

/*
 * The deferred directory, made before the first file (under sp->lock); a
 * failure is the write's, said in its line.
 */
static int dir_made(struct um_spill *sp)
{
	int ret;

	if (sp->dirfd >= 0)
		return 0;
	ret = um__spill_dir_open(sp->dir, &sp->dir_held);
	sp->dirfd = sp->dir_held.fd;
	return ret;
}

/* What open made, in reverse (the ring is the caller's, when it exists). */
static void sp_free(struct um_spill *sp)
{
	if (sp->dirfd >= 0)
		um__spill_dir_close(&sp->dir_held, sp->dir,
				    sp->flags & UM_SPILL_OWN_DIR);
	free(sp->bufs);
	XXH3_freeState(sp->xxh);
	free(sp->dir);
	pthread_mutex_destroy(&sp->lock);
	free(sp);
}

int um__spill_open(const struct um_spill_config *cfg, struct um_spill **out)
{
	struct um_spill *sp;
	size_t bytes;
	int ret;

	if (!cfg || !out || !cfg->dir || !cfg->dir[0] ||
	    (cfg->flags & ~(UM_SPILL_REMOVE_STALE | UM_SPILL_NO_DIRECT |
			    UM_SPILL_OWN_DIR)) ||
	    cfg->queue_depth > MAX_QD || cfg->io_bytes > MAX_IO ||
	    (cfg->io_bytes && cfg->io_bytes % SPILL_ALIGN))
		return -EINVAL;
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return -ENOMEM;
	sp->log = cfg->log;
	sp->log_arg = cfg->log_arg;
	sp->flags = cfg->flags;
	sp->qd = cfg->queue_depth ? cfg->queue_depth : DEF_QD;
	sp->io_bytes = cfg->io_bytes ? cfg->io_bytes : DEF_IO;
	sp->direct = !(cfg->flags & UM_SPILL_NO_DIRECT);
	sp->pid = getpid();
	sp->ctx = atomic_fetch_add(&spill_ctx_seq, 1);
	sp->dirfd = -1;
	pthread_mutex_init(&sp->lock, NULL);
	ret = -ENOMEM;
	sp->dir = strdup(cfg->dir);
	sp->xxh = XXH3_createState();
	if (!sp->dir || !sp->xxh)
		goto err;
	bytes = (size_t)sp->qd * sp->io_bytes + SPILL_HDR;
	if (posix_memalign((void **)&sp->bufs, SPILL_ALIGN, bytes)) {
		sp->bufs = NULL;
		goto err;
	}
	ret = open_dir(sp, cfg);
	if (ret) {
		slog(sp, L_ERR, "spill: cannot use directory %s: %s%s",
		     cfg->dir, strerror(-ret),
		     ret == -EPERM ? " (must be ours, and sticky if others can write to it)" : "");
		goto err;
	}
	ret = io_uring_queue_init(sp->qd + 1, &sp->ring, 0);
	sp->on_ring = !ret;
	if (ret)
		slog(sp, L_INFO,
		     "spill: io_uring is refused here (%s; a seccomp profile?): pread and pwrite instead, one piece at a time",
		     strerror(-ret));
	if (!sp->deferred)
		scan_stale(sp);
	*out = sp;
	return 0;
err:
	sp_free(sp);
	return ret;
}

void um__spill_close(struct um_spill *sp)
{
	struct spill_file *f, *next;
	char name[96];
	unsigned int i;

	if (!sp)
		return;
	for (i = 0; i < SPILL_BUCKETS; i++) {
		for (f = sp->table[i]; f; f = next) {
			next = f->next;
			file_name(sp, f->region, name, sizeof(name));
			unlinkat(sp->dirfd, name, 0);
			free(f);
		}
	}
	if (sp->on_ring)
		io_uring_queue_exit(&sp->ring);
	sp_free(sp);
}

/* ---- I/O ------------------------------------------------------------- */

/* One piece of a transfer, as it moves through a ring slot. */
struct piece {
	char *mem;		/* where the kernel reads/writes */
	size_t len;		/* bytes of the piece on disk (aligned) */
	size_t done;
	uint64_t off;		/* file offset */
};

/* pread or pwrite, as io_uring's result: bytes, or -errno. */
static int sync_rw(int fd, int write, void *buf, size_t len, uint64_t off)
{
	ssize_t n;

	do {
		n = write ? pwrite(fd, buf, len, (off_t)off) :
			    pread(fd, buf, len, (off_t)off);
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : (int)n;
}

static int submit_piece(struct um_spill *sp, int fd, struct piece *p,
			int write, unsigned int slot)
{
	struct io_uring_sqe *sqe;

	if (!sp->on_ring) {
		/* done at once; its completion waits for reap_one() */
		struct sync_done *d =
			&sp->done[(sp->done_head + sp->ndone) % MAX_QD];

		d->slot = slot;
		d->res = sync_rw(fd, write, p->mem + p->done, p->len - p->done,
				 p->off + p->done);
		sp->ndone++;
		return 0;
	}
	sqe = io_uring_get_sqe(&sp->ring);
	if (!sqe)
		return -EBUSY;
	if (write)
		io_uring_prep_write(sqe, fd, p->mem + p->done,
				    (unsigned int)(p->len - p->done),
				    p->off + p->done);
	else
		io_uring_prep_read(sqe, fd, p->mem + p->done,
				   (unsigned int)(p->len - p->done),
				   p->off + p->done);
	io_uring_sqe_set_data64(sqe, slot);
	return 0;
}

/* The next piece done: its slot and result (bytes or -errno). */
static int next_done(struct um_spill *sp, unsigned int *slot, int *res)
{
	struct io_uring_cqe *cqe;
	int ret;

	if (!sp->on_ring) {
		if (!sp->ndone)
			return -EIO;	/* none owed: a bug, not a hang */
		*slot = sp->done[sp->done_head].slot;
		*res = sp->done[sp->done_head].res;
		sp->done_head = (sp->done_head + 1) % MAX_QD;
		sp->ndone--;
		return 0;
	}
	for (;;) {
		ret = io_uring_submit_and_wait(&sp->ring, 1);
		if (ret < 0 && ret != -EINTR)
			return ret;
		ret = io_uring_peek_cqe(&sp->ring, &cqe);
		if (ret == -EAGAIN || ret == -EINTR)
			continue;
		if (ret)
			return ret;
		*slot = (unsigned int)io_uring_cqe_get_data64(cqe);
		*res = cqe->res;
		io_uring_cqe_seen(&sp->ring, cqe);
		return 0;
	}
}

/*
 * Wait for one piece to finish; resubmit the remainder of a short transfer.
 * Returns the slot that finished, or -errno (a read hitting end of file is
 * -EIO: the file is shorter than its header says). *inflight counts pieces
 * whose completion is still owed and is kept exact on every path.
 */
static int reap_one(struct um_spill *sp, int fd, struct piece *pieces,
		    int write, unsigned int *inflight)
{
	unsigned int slot;
	struct piece *p;
	int ret, res;

	for (;;) {
		ret = next_done(sp, &slot, &res);
		if (ret)
			return ret;
		p = &pieces[slot];
		if (res <= 0) {
			(*inflight)--;
			return res < 0 ? res : -EIO;
		}
		p->done += (size_t)res;
		if (p->done == p->len) {
			(*inflight)--;
			return (int)slot;
		}
		ret = submit_piece(sp, fd, p, write, slot);
		if (ret) {
			(*inflight)--;
			return ret;
		}
	}
}

/* Wait out whatever is still in flight after an error (buffers are ours). */
static void drain(struct um_spill *sp, unsigned int inflight)
{
	struct io_uring_cqe *cqe;

	if (!sp->on_ring) {
		sp->done_head = sp->ndone = 0;
		return;
	}
	io_uring_submit(&sp->ring);
	while (inflight--) {
		if (io_uring_wait_cqe(&sp->ring, &cqe))
			break;
		io_uring_cqe_seen(&sp->ring, cqe);
	}
}

static int aligned(const void *p)
{
	return !((uintptr_t)p & (SPILL_ALIGN - 1));
}

static unsigned int free_slot(const unsigned char *busy, unsigned int qd)
{
	unsigned int s;

	for (s = 0; s < qd && busy[s]; s++)
		;
	return s;
}

/*
 * Write len bytes of src from file offset SPILL_HDR, hashing them in order.
 * Aligned whole pieces go straight from src; others through a bounce slot.
 */
static int write_data(struct um_spill *sp, int fd, const char *src, size_t len)
{
	struct piece pieces[MAX_QD];
	unsigned char busy[MAX_QD];
	unsigned int inflight = 0, slot;
	size_t off = 0;
	int ret = 0;

	XXH3_64bits_reset(sp->xxh);
	memset(busy, 0, sizeof(busy));
	while (off < len || inflight) {
		while (off < len && inflight < sp->qd) {
			size_t n = len - off < sp->io_bytes ? len - off :
							      sp->io_bytes;
			struct piece *p;
			char *buf;

			slot = free_slot(busy, sp->qd);
			p = &pieces[slot];
			buf = sp->bufs + (size_t)slot * sp->io_bytes;
			XXH3_64bits_update(sp->xxh, src + off, n);
			p->len = round_up(n, SPILL_ALIGN);
			if (aligned(src + off) && p->len == n) {
				p->mem = (char *)src + off;
			} else {
				memcpy(buf, src + off, n);
				memset(buf + n, 0, p->len - n);
				p->mem = buf;
			}
			p->done = 0;
			p->off = SPILL_HDR + off;
			ret = submit_piece(sp, fd, p, 1, slot);
			if (ret)
				goto out;
			busy[slot] = 1;
			off += n;
			inflight++;
		}
		ret = reap_one(sp, fd, pieces, 1, &inflight);
		if (ret < 0)
			goto out;
		busy[ret] = 0;
		ret = 0;
	}
out:
	if (ret < 0 && inflight)
		drain(sp, inflight);
	return ret;
}

/*
 * Read len bytes from file offset SPILL_HDR into dst. Pieces complete in
 * any order but are hashed (and copied out of bounce slots) strictly in file
 * order: slots are used round-robin, so the oldest piece is always at head.
 */
static int read_data(struct um_spill *sp, int fd, char *dst, size_t len,
		     uint64_t *sum)
{
	struct piece pieces[MAX_QD];
	size_t want[MAX_QD], doff[MAX_QD];
	unsigned char ready[MAX_QD];
	size_t issued = 0, consumed = 0;
	unsigned int inflight = 0, used = 0, head = 0, tail = 0;
	int ret = 0;

	XXH3_64bits_reset(sp->xxh);
	memset(ready, 0, sizeof(ready));
	while (consumed < len) {
		while (issued < len && used < sp->qd) {
			struct piece *p = &pieces[tail];
			size_t n = len - issued < sp->io_bytes ?
					   len - issued : sp->io_bytes;

			p->len = round_up(n, SPILL_ALIGN);
			p->mem = aligned(dst + issued) && p->len == n ?
					 dst + issued :
					 sp->bufs + (size_t)tail * sp->io_bytes;
			p->done = 0;
			p->off = SPILL_HDR + issued;
			want[tail] = n;
			doff[tail] = issued;
			ret = submit_piece(sp, fd, p, 0, tail);
			if (ret)
				goto out;
			issued += n;
			inflight++;
			used++;
			tail = (tail + 1) % sp->qd;
		}
		while (!ready[head]) {
			ret = reap_one(sp, fd, pieces, 0, &inflight);
			if (ret < 0)
				goto out;
			ready[ret] = 1;
		}
		ready[head] = 0;
		if (pieces[head].mem != dst + doff[head])
			memcpy(dst + doff[head], pieces[head].mem, want[head]);
		XXH3_64bits_update(sp->xxh, dst + doff[head], want[head]);
		consumed += want[head];
		used--;
		head = (head + 1) % sp->qd;
		ret = 0;
	}
	*sum = XXH3_64bits_digest(sp->xxh);
out:
	if (ret < 0 && inflight)
		drain(sp, inflight);
	return ret;
}

/* One synchronous operation through the ring (header, fsync). */
static int ring_op(struct um_spill *sp, int fd, int op, void *buf,
		   size_t len, uint64_t off)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&sp->ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	if (op == 'w')
		io_uring_prep_write(sqe, fd, buf, (unsigned int)len, off);
	else if (op == 'r')
		io_uring_prep_read(sqe, fd, buf, (unsigned int)len, off);
	else
		io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
	ret = io_uring_submit_and_wait(&sp->ring, 1);
	if (ret < 0)
		return ret;
	ret = io_uring_wait_cqe(&sp->ring, &cqe);
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&sp->ring, cqe);
	return ret;
}

/* The same without io_uring. */
static int sync_op(int fd, int op, void *buf, size_t len, uint64_t off)
{
	if (op == 'f')
		return fdatasync(fd) ? -errno : 0;
	return sync_rw(fd, op == 'w', buf, len, off);
}

/* One whole operation (header, fsync): 'w' write, 'r' read, 'f' fsync. */
static int ring_one(struct um_spill *sp, int fd, int op, void *buf,
		    size_t len, uint64_t off)
{
	int ret = sp->on_ring ? ring_op(sp, fd, op, buf, len, off) :
				sync_op(fd, op, buf, len, off);

	if (ret >= 0 && op != 'f' && (size_t)ret != len)
		return op == 'w' ? -ENOSPC : -EIO;
	return ret < 0 ? ret : 0;
}

static uint64_t hdr_sum(const struct spill_hdr *h)
{
	return XXH3_64bits(h, offsetof(struct spill_hdr, hdr_sum));
}

static char *hdr_buf(struct um_spill *sp)
{
	return sp->bufs + (size_t)sp->qd * sp->io_bytes;
}

static int open_file(struct um_spill *sp, const char *name, int flags)
{
	int fd;

	fd = openat(sp->dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC |
					     (sp->direct ? O_DIRECT : 0),
		    0600);
	return fd < 0 ? -errno : fd;
}

static void fallback_buffered(struct um_spill *sp, int err)
{
	sp->direct = 0;
	slog(sp, L_INFO,
	     "spill: %s does not take O_DIRECT (%s); using buffered I/O with fdatasync",
	     sp->dir, strerror(-err));
}

/* Create the file and write data then header; the file is gone on failure. */
static int write_file(struct um_spill *sp, const char *name, uint64_t region,
		      const void *src, size_t len, uint64_t *sum_out)
{
	struct spill_hdr *h = (struct spill_hdr *)hdr_buf(sp);
	int fd, ret, first = 1;

retry:
	fd = open_file(sp, name, O_WRONLY | O_CREAT | O_EXCL);
	if (fd == -EINVAL && sp->direct) {
		/* the file may exist by now: O_DIRECT is checked after create */
		unlinkat(sp->dirfd, name, 0);
		fallback_buffered(sp, fd);
		goto retry;
	}
	if (fd < 0)
		return fd;
	ret = write_data(sp, fd, src, len);
	if (ret == -EINVAL && sp->direct && first) {
		/* some filesystems accept O_DIRECT at open, refuse at write */
		close(fd);
		unlinkat(sp->dirfd, name, 0);
		fallback_buffered(sp, ret);
		first = 0;
		goto retry;
	}
	if (ret)
		goto fail;
	*sum_out = XXH3_64bits_digest(sp->xxh);
	memset(h, 0, SPILL_HDR);
	memcpy(h->magic, SPILL_MAGIC, sizeof(h->magic));
	h->version = SPILL_VERSION;
	h->hdr_bytes = SPILL_HDR;
	h->region = region;
	h->len = len;
	h->data_off = SPILL_HDR;
	h->sum = *sum_out;
	h->pid = (uint32_t)sp->pid;
	h->ctx = sp->ctx;
	h->hdr_sum = hdr_sum(h);
	ret = ring_one(sp, fd, 'w', h, SPILL_HDR, 0);
	if (ret)
		goto fail;
	if (!sp->direct) {
		ret = ring_one(sp, fd, 'f', NULL, 0, 0);
		if (ret)
			goto fail;
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	}
	close(fd);
	return 0;
fail:
	close(fd);
	unlinkat(sp->dirfd, name, 0);
	return ret;
}

int um__spill_write(struct um_spill *sp, uint64_t region, const void *src,
		    size_t len)
{
	struct spill_file **pp, *f;
	uint64_t t0, sum = 0;
	char name[96];
	int ret;

	if (!sp || !region || !src || !len || len > (SIZE_MAX >> 1))
		return -EINVAL;
	file_name(sp, region, name, sizeof(name));
	pthread_mutex_lock(&sp->lock);
	t0 = um__now_ns();
	/* replacing an older spill: it is stale by definition */
	f = file_forget(sp, region, name);
	if (!f) {
		f = malloc(sizeof(*f));
		if (!f) {
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = dir_made(sp);
	if (!ret)
		ret = write_file(sp, name, region, src, len, &sum);
	if (ret) {
		free(f);
		sp->st.write_errors++;
		slog(sp, L_ERR,
		     "spill: writing %s to %s failed: %s; its bytes stay where they were",
		     UM_SIZE(len), sp->dir, strerror(-ret));
		goto out;
	}
	f->region = region;
	f->len = len;
	f->sum = sum;
	pp = file_slot(sp, region);
	f->next = NULL;
	*pp = f;
	sp->st.files++;
	sp->st.bytes += len;
	if (sp->st.bytes > sp->st.peak_bytes)
		sp->st.peak_bytes = sp->st.bytes;
	sp->st.writes++;
	sp->st.write_bytes += len;
	sp->st.write_ns += um__now_ns() - t0;
out:
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

static int check_hdr(const struct spill_hdr *h, uint64_t region, size_t len,
		     uint64_t sum)
{
	if (memcmp(h->magic, SPILL_MAGIC, sizeof(h->magic)) ||
	    h->version != SPILL_VERSION || h->hdr_bytes != SPILL_HDR ||
	    h->data_off != SPILL_HDR || h->hdr_sum != hdr_sum(h))
		return -EIO;
	if (h->region != region || h->len != len || h->sum != sum)
		return -EIO;
	return 0;
}

static int read_file(struct um_spill *sp, const char *name,
		     const struct spill_file *f, void *dst, size_t len)
{
	struct spill_hdr *h = (struct spill_hdr *)hdr_buf(sp);
	uint64_t sum = 0;
	struct stat st;
	int fd, ret;

	fd = open_file(sp, name, O_RDONLY);
	if (fd == -EINVAL && sp->direct) {
		fallback_buffered(sp, fd);
		fd = open_file(sp, name, O_RDONLY);
	}
	if (fd < 0)
		return fd;
	ret = -EIO;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (uint64_t)st.st_size < SPILL_HDR + len)
		goto out;
	ret = ring_one(sp, fd, 'r', h, SPILL_HDR, 0);
	if (ret)
		goto out;
	ret = check_hdr(h, f->region, len, f->sum);
	if (ret) {
		sp->st.checksum_errors++;
		goto out;
	}
	ret = read_data(sp, fd, dst, len, &sum);
	if (ret)
		goto out;
	if (sum != f->sum) {
		sp->st.checksum_errors++;
		ret = -EIO;
	}
out:
	close(fd);
	return ret;
}

int um__spill_read(struct um_spill *sp, uint64_t region, void *dst,
		   size_t len)
{
	struct spill_file *f;
	char name[96];
	uint64_t t0;
	int ret;

	if (!sp || !region || !dst || !len)
		return -EINVAL;
	file_name(sp, region, name, sizeof(name));
	pthread_mutex_lock(&sp->lock);
	t0 = um__now_ns();
	f = *file_slot(sp, region);
	if (!f) {
		ret = -ENOENT;
		goto out;
	}
	if (f->len != len) {
		ret = -EINVAL;
		goto out;
	}
	ret = read_file(sp, name, f, dst, len);
	if (ret) {
		sp->st.read_errors++;
		slog(sp, L_ERR,
		     "spill: reading region %llu back from %s/%s failed: %s; the file is kept",
		     (unsigned long long)region, sp->dir, name,
		     ret == -EIO ? "checksum or header mismatch, or short file" :
				   strerror(-ret));
		goto out;
	}
	sp->st.reads++;
	sp->st.read_bytes += len;
	sp->st.read_ns += um__now_ns() - t0;
out:
	pthread_mutex_unlock(&sp->lock);
	return ret;
}

int um__spill_drop(struct um_spill *sp, uint64_t region)
{
	struct spill_file *f;
	char name[96];

	if (!sp || !region)
		return -EINVAL;
	file_name(sp, region, name, sizeof(name));
	pthread_mutex_lock(&sp->lock);
	f = file_forget(sp, region, name);
	pthread_mutex_unlock(&sp->lock);
	if (!f)
		return -ENOENT;
	free(f);
	return 0;
}

int um__spill_has(struct um_spill *sp, uint64_t region)
{
	int has;

	if (!sp || !region)
		return 0;
	pthread_mutex_lock(&sp->lock);
	has = *file_slot(sp, region) != NULL;
	pthread_mutex_unlock(&sp->lock);
	return has;
}

void um__spill_stats(struct um_spill *sp, struct um_spill_stats *st)
{
	if (!sp || !st)
		return;
	pthread_mutex_lock(&sp->lock);
	*st = sp->st;
	st->direct = (uint32_t)sp->direct;
	pthread_mutex_unlock(&sp->lock);
}

const char *um__spill_dir(const struct um_spill *sp)
{
	return sp ? sp->dir : NULL;
}
