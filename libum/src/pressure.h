/* SPDX-License-Identifier: MIT */
/*
 * pressure.h - the pressure loop: one event thread per context, on io_uring
 * (in poll(2) where a seccomp profile refuses io_uring),
 * that listens to every pressure source and sheds through um_shed().
 *
 * Sources, in order of preference, all feeding one loop:
 *  - umm.ko's /dev/umm: handshake, REPORT of what the context holds and
 *    could give back per tier (on change, rate-limited), events read with
 *    io_uring reads, um_shed() toward the suggested node, ACK of bytes freed;
 *    with UMM_FEATURE_CGROUP, the events of the memory cgroup (v2) the
 *    process runs in too, answered by spilling host copies (no steering);
 *  - a PSI memory trigger (/proc/pressure/memory) when the module is absent
 *    (or gone) and the kernel accepts triggers;
 *  - always, the library's own budgets (enforced by the core).
 * The set of sources is logged once at start (INFO) and on every change
 * (WARN), e.g. when the module is disabled or unloaded mid-run: nothing
 * in the context is lost, the loop only falls back.
 *
 * Its settings come from the context's (config.c): LIBUM_PRESSURE=0
 * disables the thread (start returns 0, no sources); LIBUM_UMM_DEV
 * overrides the device path (tests), LIBUM_PSI_PATH the PSI file,
 * LIBUM_PRESSURE_REPORT_MS the REPORT rate limit (default 100).
 */
#ifndef UM_PRESSURE_H
#define UM_PRESSURE_H

#include <stdint.h>

struct um_context;

enum um_pressure_source {
	UM_PSRC_BUDGET = 1u << 0,	/* the library's own budgets */
	UM_PSRC_UMM = 1u << 1,		/* /dev/umm */
	UM_PSRC_PSI = 1u << 2,		/* PSI trigger */
	UM_PSRC_CGROUP = 1u << 3,	/* our own memory cgroup watch */
};

/*
 * Called by um_context_create() once the context is usable (um_shed and
 * um_stats_get work). Starts the thread; failing to find a source is not
 * an error (returns 0, budgets only). -errno only for resource failures
 * (thread, memory), which the core may treat as fatal or log and ignore.
 */
int um__pressure_start(struct um_context *ctx);
/* Called by um_context_destroy() before regions are torn down. Idempotent. */
void um__pressure_stop(struct um_context *ctx);
/*
 * In a child of fork(), where the loop's thread does not exist: close this
 * process's copies of the loop's descriptors and free its memory, without
 * joining, locking or telling the module anything (the parent's client
 * stays open). Idempotent.
 */
void um__pressure_forget(struct um_context *ctx);

/*
 * um__pressure_start() installs this as ctx->books_changed, which books.c
 * calls when the books change (residency, alloc, free), so the next REPORT
 * is sent promptly; cheap and lock-free. Without it the loop still notices
 * changes by polling um_stats_get().
 */
void um__pressure_notify(struct um_context *ctx);

/* Bitmask of enum um_pressure_source in use now (0 if not started). */
unsigned int um__pressure_sources(struct um_context *ctx);

/* Figures for stats and tests. */
struct um_pressure_stats {
	uint64_t events;		/* events received from any source */
	uint64_t umm_events;
	uint64_t psi_events;
	uint64_t reports;		/* REPORTs sent */
	uint64_t acks;			/* ACKs sent */
	uint64_t acked_bytes;
	uint64_t shed_calls;
	uint64_t shed_bytes;		/* bytes um_shed() scheduled */
	uint64_t overflows;		/* events lost, as the module counted */
	uint64_t seq_gaps;
	uint64_t last_ack_ns;		/* event read -> ACK written */
	uint64_t max_ack_ns;
	uint64_t sum_ack_ns;
	uint32_t sources;		/* enum um_pressure_source */
	uint32_t fallbacks;		/* times the module went away */
	uint64_t first_event_ns;	/* CLOCK_MONOTONIC, first pressure */
	uint32_t first_eta_ms;		/* its estimate of ms to critical */
	uint32_t max_level;		/* worst enum umm_level seen */
	/* PRESSURE events about our memory cgroup (UMM_TIER_CGROUP) */
	uint64_t cgroup_events;
	uint64_t cgroup_freed;		/* bytes those gave back */
	uint64_t cgroup_room;		/* the last one's room (bytes_free) */
	uint32_t cgroup_id;		/* the last one's tier_id */
	uint32_t cgroup_unmet;		/* asks not met in full */
	/* our own watch of it (pressure_cgroup.c), where umm.ko does not */
	uint32_t cgroup_level;		/* enum umm_level, last sample */
	uint64_t cgroup_own_events;	/* PRESSUREs it raised */
	uint64_t cgroup_usage;		/* memory.current (or RSS) */
	uint64_t cgroup_limit;		/* effective limit */
};

int um__pressure_stats(struct um_context *ctx, struct um_pressure_stats *st);

#endif /* UM_PRESSURE_H */
