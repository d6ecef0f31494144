/* SPDX-License-Identifier: MIT */
/*
 * e2e.h - shared pieces of the end-to-end scenarios (run in the VM rig).
 *
 * A "trainer" is a small stand-in for a training loop on libum's sim
 * backend: n optimizer-state regions, each step acquires every region on
 * gpu0, applies a deterministic update to every 64-bit word and releases it.
 * Its final contents are checked against the same update applied to the
 * regenerated initial pattern: a byte lost or torn anywhere (a failed spill,
 * a bad node move) shows up as a checksum mismatch.
 *
 * A level sampler thread reads umm.ko's level of a node every few ms, so a
 * scenario can say when the node went critical, and the trainer's event
 * callback records when libum first heard of pressure: their difference is
 * the lead time each scenario reports.
 */
#ifndef UM_E2E_H
#define UM_E2E_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "um.h"

#define MiB (1024ull * 1024)
#define UMM_SYSFS "/sys/kernel/mm/umm"

uint64_t e2e_now_ns(void);
double e2e_ms(uint64_t ns);

/* sysfs helpers: 0 or -errno. */
int e2e_read_str(const char *path, char *buf, size_t len);
int e2e_read_u64(const char *path, uint64_t *v);
int e2e_write_str(const char *path, const char *val);
bool e2e_have_umm(void);
/*
 * The fill rate of the node scenarios in MiB/s: E2E_FILL_RATE (decimal,
 * 1..4096) where set, else 16. -EINVAL (and a TAP comment) for a bad value.
 */
int e2e_fill_rate(unsigned int *mib_s);
/* Node memory from /sys/devices/system/node/node<N>/meminfo. */
int e2e_node_free(int node, uint64_t *free_b, uint64_t *total_b);
/*
 * What node's zones keep out of the allocator's sight, from /proc/zoneinfo:
 * *min_b their min watermarks, *pcp_cap_b the capacity of every CPU's
 * per-CPU free lists for them ("high", or "high_max" where the kernel
 * tunes it), *pcp_now_b what those lists hold now. Any may be NULL.
 */
int e2e_node_kept(int node, uint64_t *min_b, uint64_t *pcp_cap_b,
		  uint64_t *pcp_now_b);
/* This process's resident bytes per node (bytes[0..nnodes-1]), numa_maps. */
int e2e_self_node_bytes(uint64_t *bytes, int nnodes);

/*
 * Watermarks for a 512 MiB node on every node that has them writable:
 * critical well above the kernel's own min watermark (about 24 MiB there),
 * so "critical" is a stage before the OOM killer rather than the same
 * moment. With report, a knob that refuses the write is named on stdout.
 */
void e2e_set_watermarks(bool report);

/* Small process helpers shared by the scenarios and examples/demo. */
int e2e_full_read(int fd, void *buf, size_t len);	/* 0 or -EIO */
void e2e_sleep_ms(unsigned int ms);
int e2e_status_code(int st);	/* wait status as a shell exit code */

/* Process placement and OOM preference. */
int e2e_bind_node(int node);		/* MPOL_BIND for new pages */
int e2e_oom_adj(int adj);
int e2e_no_mlock(void);			/* see e2e.c */

/* Level of node from umm.ko: 1 normal .. 4 critical, 0 unknown. */
int e2e_node_level(int node);

struct e2e_sampler {
	pthread_t thread;
	int node;
	volatile bool stop;
	uint64_t t0;
	uint64_t first_ns[5];		/* by level, 0 never */
	int max_level;
};

void e2e_sampler_start(struct e2e_sampler *s, int node);
void e2e_sampler_stop(struct e2e_sampler *s);

struct trainer_cfg {
	int nregions;
	uint64_t region_bytes;
	uint64_t sim_capacity;		/* also the device budget */
	const char *spill_dir;		/* NULL: no spill tier */
	int priority;			/* um region priority */
};

struct trainer {
	struct um_context *ctx;
	struct trainer_cfg cfg;
	um_region_t *r;
	uint64_t steps;
	pthread_mutex_t lock;
	/* from the event callback */
	uint64_t first_pressure_ns;
	uint64_t pressure_events;
	uint32_t max_level;
	uint64_t evicted, errors;
	/* times libum sent new host copies away from an overfull home node */
	uint64_t steered_away;
	/* log lines worth showing */
	char log[8192];
	size_t loglen;
	int warns, errs;
};

int trainer_init(struct trainer *t, const struct trainer_cfg *cfg);
/* One step over every region. 0 or -errno. */
int trainer_step(struct trainer *t);
/* Regions whose contents differ from the expected ones (0 = intact). */
int trainer_verify(struct trainer *t);
/* Host bytes per node (counts[0..nnodes-1]) and on the spill. */
void trainer_where(struct trainer *t, uint64_t *host, int nnodes,
		   uint64_t *spill, uint64_t *device);
void trainer_fini(struct trainer *t);
/* Print the trainer's captured log as TAP comments. */
void trainer_dump_log(struct trainer *t);

/*
 * Start umpressure (from PATH) with argv (NULL-terminated, without the
 * program name); its stdout goes to out_path. Returns the pid or -errno.
 */
pid_t e2e_spawn_umpressure(const char *const *argv, const char *out_path);
/* Wait for pid; returns its wait status. */
int e2e_wait(pid_t pid);
/* Print a file as TAP comments. */
void e2e_cat(const char *path, const char *prefix);
/* @pid's threads: name, state, wchan and kernel stack, as "# " lines. */
void e2e_dump_threads(FILE *out, pid_t pid, const char *prefix);

#endif /* UM_E2E_H */
