/* SPDX-License-Identifier: MIT */
/*
 * pressure_internal.h - what the pressure loop's three files share: the
 * loop's state and what each file offers the ones above it.
 *
 *   pressure.c         the loop: its thread and ring, the wake eventfd,
 *                      start/stop/forget, the books hook, the figures
 *   pressure_source.c  the sources (umm.ko's /dev/umm, a PSI trigger):
 *                      opening them, falling back, and the module's
 *                      protocol (handshake, QUERY, REPORT, events, ACK)
 *   pressure_cgroup.c  our own watch of our memory cgroup and the host
 *                      budget, where umm.ko does not watch them
 *   pressure_shed.c    shedding and steering: what the context holds on
 *                      each node, moving it off, where new host copies go
 *   pressure_queue.c   the loop's requests and their completions, on
 *                      io_uring or, where it is refused, in poll(2)
 *
 * Calls go from each file to the ones below it only (libum/layers).
 */
#ifndef UM_PRESSURE_INTERNAL_H
#define UM_PRESSURE_INTERNAL_H

#include <limits.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/umm.h>

#include "internal.h"
#include "pressure.h"

#define EV_BATCH	16
#define MAX_GPUS	(UMM_MAX_GPUS < UM_MAX_DEVICES ? UMM_MAX_GPUS : \
			 UM_MAX_DEVICES)

/*
 * What a completion on the loop's ring is for (its user data): a source's
 * request, indexed like um__psources[], the loop's own eventfd, or a
 * cancellation's own completion (the loop ignores it; the cancelled
 * request completes under its own tag).
 */
enum um_pressure_tag {
	UM_PTAG_UMM,
	UM_PTAG_PSI,
	UM_PTAG_CGROUP,			/* our cgroup watch's sampling timer */
	UM_PTAG_CGPSI,			/* its PSI trigger */
	UM_PTAG_SOURCES,		/* how many sources have a request */
	UM_PTAG_WAKE = UM_PTAG_SOURCES,
	UM_PTAG_CANCEL,
};

/* A tag's request where the loop waits in poll(2) (pressure_queue.c). */
enum um_preq_kind {
	UM_PREQ_NONE,
	UM_PREQ_READ,
	UM_PREQ_POLL,
	UM_PREQ_TIMEOUT,
	UM_PREQ_CANCELLED,		/* completes with -ECANCELED */
};

struct um_preq {
	enum um_preq_kind kind;
	bool ready;			/* poll(2) found it, or its time came */
	short events, revents;
	int fd;
	void *buf;
	unsigned int len;
	uint64_t due_ns;		/* a timeout's, CLOCK_MONOTONIC */
	struct __kernel_timespec ts;	/* on io_uring: a timeout's */
};

/* The loop's requests, one per tag at most: on io_uring, else poll(2). */
struct um_pqueue {
	bool on_ring;
	struct io_uring ring;
	struct um_preq req[UM_PTAG_WAKE + 1];
	unsigned int last;		/* tag taken last, for fairness */
};

/* What the context holds and could give back, per tier. */
struct books {
	uint64_t host_res[UM_STATS_MAX_NODES];
	uint64_t host_rec[UM_STATS_MAX_NODES];
	uint64_t dev_res[MAX_GPUS];
	uint64_t dev_rec[MAX_GPUS];
};

/* Our own watch of our memory cgroup (pressure_cgroup.c). */
/* The files of a memory controller: cgroup v2's or v1's. */
struct um_cg_files {
	const char *usage;		/* what counts against the limit */
	const char *limit[2];		/* the limits, lowest wins */
};

struct um_cgwatch {
	bool open;
	bool timer_armed;
	bool psi_armed;
	char dir[PATH_MAX];		/* our cgroup's directory */
	char top[PATH_MAX];		/* limits are looked for up to it */
	const struct um_cg_files *files;
	int current_fd;			/* its usage file, or -1 */
	int statm_fd;			/* /proc/self/statm, without it */
	int psi_fd;			/* a trigger on its memory.pressure */
	uint32_t id;			/* low 32 bits of its inode */
	uint64_t budget;		/* the host budget, 0: none */
	uint64_t limit;			/* effective; UINT64_MAX: none */
	char limit_what[PATH_MAX + 32];	/* which file (or budget) set it */
	uint64_t limits_ns;		/* when the limits were read */
	uint64_t usage;
	uint64_t last_usage, last_ns;
	uint64_t bps, max_bps;		/* fill rate, smoothed and fastest */
	unsigned int level;		/* enum umm_level */
	uint64_t asked_ns;		/* last PRESSURE answered */
	uint64_t interval_ns;		/* to the next sample */
};

struct um_pressure {
	struct um_context *ctx;
	pthread_t thread;
	bool started;
	struct um_pqueue q;
	int wake_fd;
	uint64_t wake_buf;
	atomic_bool stop;
	atomic_bool dirty;

	/* /dev/umm */
	int umm_fd;
	bool umm_enabled;
	/*
	 * um__pressure_report (pressure_source.c), for the shedding below it
	 * to REPORT each region it moves at once: set by um__pressure_start.
	 */
	void (*report)(struct um_pressure *pr, bool force);
	bool umm_read_armed;
	bool umm_cgroup;		/* the module watches our memory cgroup */
	bool cgroup_unmet_said;		/* the ERR line of an unmet ask */
	int umm_prio;
	char umm_name[UMM_NAME_LEN];
	uint64_t last_seq;
	struct umm_event evbuf[EV_BATCH];
	struct books sent;
	bool sent_valid;
	uint64_t last_report_ns;
	uint64_t report_ns;

	/* host placement steered away from a node under pressure */
	int home_orig;			/* -1: not steered */
	/*
	 * Nodes at LOW or worse since their last event, and where to put
	 * what we hold there: between events, the loop keeps our released
	 * host copies off them (a trainer's next step would otherwise bring
	 * back, through evictions and restores, what an event just moved).
	 */
	uint32_t hot;			/* bit per node < 32 */
	int hot_dest[32];		/* node the module named, or -1 */
	/*
	 * Free bytes a node had when it was said to be LOW or worse: about
	 * its low mark. Copies steered away come home only when the node's
	 * free memory covers them and stays above it, or they would push it
	 * straight back to LOW (seen in the VM: a RELIEF after every move,
	 * the copies back on the next step, PRESSURE again).
	 */
	uint64_t low_mark[32];
	uint64_t last_home_check_ns;
	uint64_t last_keep_ns;		/* last pass of keep_away(); 0: due */
	bool keep_yields;		/* keep_away() runs: stop for events */
	bool keep_cut;			/* it stopped: go on after them */

	/* PSI */
	int psi_fd;
	bool psi_armed;
	const char *psi_path;
	uint64_t last_psi_ns;

	struct um_cgwatch cgw;

	pthread_mutex_t st_lock;
	struct um_pressure_stats st;
	atomic_uint sources;
};

/* ---- pressure_source.c ------------------------------------------------- */

/*
 * A source whose events come through a request on the loop's ring. The
 * loop arms each at start, hands it its completions and closes it at the
 * end; which ones are open is pressure_source.c's choice (the module,
 * else PSI). A new source is an entry of um__psources[], its tag, its bit
 * in enum um_pressure_source, and its opening in
 * um__pressure_open_sources().
 */
struct um_psource {
	unsigned int bit;		/* enum um_pressure_source */
	const char *name;		/* in the sources line */
	bool (*active)(const struct um_pressure *pr);
	void (*arm)(struct um_pressure *pr);	/* if open and not armed */
	void (*done)(struct um_pressure *pr, int res);	/* its completion */
	void (*close)(struct um_pressure *pr);	/* idempotent */
};

extern const struct um_psource *const um__psources[UM_PTAG_SOURCES];

/*
 * The sources' settings, then the sources by preference (umm.ko, else
 * PSI); publishes them and logs the line that names them.
 */
void um__pressure_open_sources(struct um_pressure *pr);
/* REPORT when the books changed, at most once per report interval. */
void um__pressure_report(struct um_pressure *pr, bool force);

/* ---- pressure_cgroup.c ------------------------------------------------- */

extern const struct um_psource um__psource_cgroup;
extern const struct um_psource um__psource_cgroup_psi;
/*
 * Find our memory cgroup (or LIBUM_CGROUP_DIR) and its effective limit,
 * or the host budget: 0 when there is a limit to watch, else -ENOENT (or
 * an errno) with *why for the sources line.
 */
int um__cgwatch_open(struct um_pressure *pr, char *why, size_t len);
/* Idempotent; any thread once the loop is gone. */
void um__cgwatch_close(struct um_pressure *pr);
/* The same on the loop's thread, cancelling what is armed on its ring. */
void um__cgwatch_stop(struct um_pressure *pr);
/* "memory.max of DIR, N MiB": the limit watched, for log lines. */
void um__cgwatch_describe(const struct um_pressure *pr, char *buf,
			  size_t len);

/* ---- pressure_shed.c --------------------------------------------------- */

/* What the context holds and could give back, per tier, from its regions. */
int um__pressure_collect(struct um_context *ctx, struct books *b);
/*
 * Tell the application: a PRESSURE event through the context's callback.
 * level is an enum umm_level.
 */
void um__pressure_post_event(struct um_context *ctx, um_tier_t tier,
			     um_tier_t dest, uint64_t bytes,
			     unsigned int umm_level);
/*
 * The tier an event of the module names, for the application's
 * UM_EVENT_PRESSURE: its GPU or node; a memory cgroup, which is no tier of
 * ours, is UM_TIER_HOST_ANY (what we hold there is our host copies on
 * every node together).
 */
um_tier_t um__pressure_event_tier(const struct umm_event *ev);
/* Shed bytes from tier toward dest and wait; returns bytes freed. */
uint64_t um__pressure_shed(struct um_pressure *pr, um_tier_t tier,
			   uint64_t bytes, um_tier_t dest);
/*
 * A module event that asks for bytes (PRESSURE, SHRINK, OOM, GPU_BUDGET):
 * steer, tell the application, shed. true when it asked for bytes, with
 * *freed what went; the caller ACKs.
 */
bool um__pressure_answer(struct um_pressure *pr, const struct umm_event *ev,
			 uint64_t *freed);
/*
 * A RELIEF: the node (or our memory cgroup) is no longer hot; send host
 * copies home if they were steered away.
 */
void um__pressure_steer_back(struct um_pressure *pr,
			     const struct umm_event *ev);
/* Between events: keep off hot nodes and a hot memory cgroup, look home. */
void um__pressure_keep_away(struct um_pressure *pr);
/*
 * The log line of one move off node to dest that took ns: the region by
 * its name (NULL: freed meanwhile), the tiers by theirs, the bytes that
 * left the node (moved) and the time in units, or why nothing left (ret).
 */
void um__pressure_move_line(char *buf, size_t len, const char *name,
			    int node, um_tier_t dest, int ret, uint64_t moved,
			    uint64_t ns);

/* ---- pressure_queue.c -------------------------------------------------- */

/*
 * On io_uring where the kernel lets us have a ring (0), else in poll(2)
 * (-errno: why not io_uring); q->on_ring says which.
 */
int um__pq_init(struct um_pqueue *q);
void um__pq_exit(struct um_pqueue *q);
/*
 * A request whose completion comes tagged (enum um_pressure_tag), with
 * io_uring's result: a read of len bytes of fd into buf (bytes or -errno),
 * a poll of fd for events (revents), a timeout after ns (-ETIME); one per
 * tag at a time. false if it could not be queued (try again later).
 */
bool um__pq_read(struct um_pqueue *q, int fd, void *buf, unsigned int len,
		 uint64_t tag);
bool um__pq_poll(struct um_pqueue *q, int fd, short events, uint64_t tag);
bool um__pq_timeout(struct um_pqueue *q, uint64_t ns, uint64_t tag);
/* The tag's request completes with -ECANCELED. */
void um__pq_cancel(struct um_pqueue *q, uint64_t tag);
/* Requests armed since the last wait start now (io_uring_submit). */
void um__pq_submit(struct um_pqueue *q);
/* A completion is waiting. */
bool um__pq_ready(struct um_pqueue *q);
/*
 * The next completion: 0 with *tag and *res; -ETIME after timeout_ms
 * without one; -EAGAIN to ask again; another -errno if the queue broke.
 */
int um__pq_next(struct um_pqueue *q, int timeout_ms, uint64_t *tag, int *res);

#endif /* UM_PRESSURE_INTERNAL_H */
