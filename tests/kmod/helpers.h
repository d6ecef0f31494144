/* SPDX-License-Identifier: GPL-2.0 */
/*
 * helpers.h - shared helpers of the umm.ko selftests (run inside the VM).
 *
 * All functions return 0 (or a count / fd) on success and -errno on failure;
 * none of them asserts, so each test decides what a failure means.
 */
#ifndef UMM_SELFTEST_HELPERS_H
#define UMM_SELFTEST_HELPERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/umm.h>

#define UMM_SYSFS	"/sys/kernel/mm/umm"
#define UMM_DEBUGFS	"/sys/kernel/debug/umm"

/* open(/dev/umm) with O_RDWR | O_CLOEXEC | @flags: fd or -errno. */
int umm_open(int flags);
/* UMM_IOC_API with the usual fields; @out (may be NULL) gets the reply. */
int umm_handshake(int fd, const char *name, int priority, uint64_t features,
		  struct umm_api *out);
/* umm_open + umm_handshake: fd or -errno (nothing left open on failure). */
int umm_client(const char *name, int priority, uint64_t features, int flags);
/* UMM_IOC_REPORT of @n tiers with @flags. */
int umm_report(int fd, const struct umm_tier_report *t, unsigned int n,
	       unsigned int flags);
/* REPORT (update) of one tier. */
int umm_report_one(int fd, uint32_t tier_type, uint32_t id,
		   uint64_t resident, uint64_t reclaimable);
/* UMM_IOC_ACK; @latency_ns may be NULL. */
int umm_ack(int fd, uint64_t seq, uint64_t freed, uint64_t *latency_ns);
/* UMM_IOC_QUERY into @lv (room @room); returns the number of sources. */
int umm_query(int fd, struct umm_level_info *lv, unsigned int room,
	      struct umm_query *q);

/*
 * Wait up to @timeout_ms (-1: forever) for a record and read one: 1 when
 * read, 0 when none came, -errno on error.
 */
int umm_next_event(int fd, struct umm_event *ev, int timeout_ms);
/* Like umm_next_event but skip records whose type is not @type. */
int umm_wait_type(int fd, uint32_t type, struct umm_event *ev, int timeout_ms);
/* Like umm_wait_type, and also require the event to be about one tier. */
int umm_wait_tier(int fd, uint32_t type, uint32_t tier_type, uint32_t id,
		  struct umm_event *ev, int timeout_ms);
/* Read and drop everything queued now; returns how many records were about
 * tier (@tier_type, @id) (UMM_TIER_NONE with id ~0u: count every record). */
int umm_drain_tier(int fd, uint32_t tier_type, uint32_t id);
/* Read and drop everything queued now; returns how many records. */
int umm_drain(int fd);
/* The name of an event type, for messages. */
const char *umm_event_name(uint32_t type);

/* sysfs/debugfs: @path relative to UMM_SYSFS unless it starts with '/'. */
int attr_read(const char *path, char *buf, size_t len);
int attr_read_u64(const char *path, uint64_t *v);
int attr_read_s64(const char *path, int64_t *v);
int attr_write(const char *path, const char *val);
int attr_write_u64(const char *path, uint64_t v);
/* st_mode & 07777 of @path, or -errno. */
int attr_mode(const char *path);

/*
 * The memory a ring of @queue_len really takes, as the ABI document says
 * ring_bytes counts it: (queue_len + 1) records of 64 bytes, rounded up to
 * a kmalloc size up to a page and to whole pages beyond.
 */
uint64_t ring_alloc_bytes(uint64_t queue_len);

/* Write @spec to the inject file (UMM_SYSFS "/inject"). */
int umm_inject(const char *spec);

/* CLOCK_MONOTONIC in ns. */
uint64_t now_ns(void);
/* MemFree of NUMA node @node in bytes (from its meminfo), or 0. */
uint64_t node_free_bytes(int node);
/* umm.ko's nodes/node@nid/@what as a number, 0 when unreadable. */
uint64_t node_attr_u64(int nid, const char *what);
/* Node @nid's low_bp, medium_bp and critical_bp into @wm[0..2]. */
void node_wm_save(int nid, uint64_t wm[3]);
/*
 * Writes @wm (as node_wm_save left it) back, raising from low down and then
 * lowering from critical up, so the three stay ordered after every write
 * whatever the test set in between. Best effort: for teardowns.
 */
void node_wm_restore(int nid, const uint64_t wm[3]);

/*
 * Count the io_uring worker threads (iou-wrk-*) of this process.
 */
int count_iou_workers(void);

/*
 * A memory hog: a child process whose memory is bound to one NUMA node
 * (numa_set_membind) and that allocates and touches memory only when told,
 * so a test can raise real pressure in steps and stop before the OOM
 * killer would act.
 */
struct hog {
	pid_t pid;
	int go;			/* write: bytes to allocate next */
	int done;		/* read: 0 per finished step */
	uint64_t bytes;		/* allocated so far */
};
/* Start a hog on @node with oom_score_adj @oom_adj. */
int hog_start(struct hog *h, int node, int oom_adj);
/* Allocate and touch @bytes more; 0 when done, -errno (the hog died). */
int hog_step(struct hog *h, uint64_t bytes);
/* Tell the hog to allocate without pausing, @step at a time, until it is
 * killed. */
int hog_run_free(struct hog *h, uint64_t step);
/* SIGKILL and reap; returns the wait status. */
int hog_stop(struct hog *h);

/*
 * Clean page cache: a child whose memory is bound to @node (-1: not bound)
 * writes @bytes to a new file at @path, 1 MiB at a time with an fsync every
 * 16 MiB, so the cache holds clean pages that reclaim drops at once.
 * Returns 0, -errno, or the child's exit status when it failed.
 */
int cache_fill(const char *path, uint64_t bytes, int node);

/* A counter of /proc/vmstat (e.g. "oom_kill"), or -errno. */
long long vmstat(const char *name);
/* The sum of the "min" watermarks of @node's zones, in bytes. */
uint64_t node_min_wmark_bytes(int node);
/* 1 when kswapd gave up on @node (zoneinfo node_unreclaimable), else 0. */
int node_unreclaimable(int node);
/* Write @val to /proc/sys/@path (e.g. "vm/watermark_scale_factor"). */
int sysctl_write(const char *path, const char *val);
int sysctl_read(const char *path, char *buf, size_t len);
/* Set this process's /proc/self/oom_score_adj. */
int set_oom_score_adj(int adj);

/* Fork; in the child drop to uid/gid 65534 and run @fn; return its status. */
int run_as_nobody(int (*fn)(void *), void *arg);

#endif
