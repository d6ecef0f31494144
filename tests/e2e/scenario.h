/* SPDX-License-Identifier: MIT */
/*
 * scenario.h - the node pressure scenarios' common run: a trainer in a
 * child process (bound to node 0, the OOM killer's favourite), umpressure
 * filling node 0 past the floor at a fixed rate (and node 1 first, for the
 * spill scenario), the node's level sampled all along, results back
 * through a pipe. The test process itself is protected from the OOM killer
 * so it can tell what happened.
 */
#ifndef UM_E2E_SCENARIO_H
#define UM_E2E_SCENARIO_H

#include <stdbool.h>
#include <stdint.h>

struct scenario {
	const char *name;
	bool reaction;			/* false: LIBUM_PRESSURE=0 */
	int nregions;
	uint64_t region_bytes;
	const char *spill_dir;		/* NULL: no spill tier */
	bool fill_node1;		/* fill node 1 too (spill scenario) */
	uint64_t margin;		/* slack left on node 0 with the reaction; 0: 64M */
	double rate_mib;		/* 0: e2e_fill_rate() */
};

struct scenario_result {
	double rate_mib;		/* node 0's fill rate used */
	/* processes */
	bool umpressure_exited;
	int umpressure_status;		/* exit status, or 128 + signal */
	bool trainer_killed;		/* by SIGKILL (the OOM killer) */
	int trainer_status;
	/* trainer, from the child */
	uint64_t steps;
	int bad_regions;
	int trainer_error;
	uint64_t host_start[2], host_end[2];
	uint64_t spill_end;
	uint64_t host_peak[2], spill_peak;
	uint64_t first_pressure_ns;
	uint32_t first_eta_ms;
	uint32_t max_level;
	uint64_t steered_away;		/* home node changes away from node 0 */
	uint64_t moves_paged, moves_copied;	/* host copies between nodes */
	uint64_t umm_events, acks, acked_bytes, shed_bytes;
	uint64_t sum_ack_ns, max_ack_ns;
	uint32_t sources, fallbacks;
	uint64_t spill_writes, spill_reads, spill_write_bytes;
	uint64_t spill_read_bytes, spill_write_ns, spill_read_ns;
	uint32_t spill_direct;
	/* node 0 as sampled */
	uint64_t low_ns, medium_ns, critical_ns;
	int max_node_level;
	uint64_t t_start_ns;
	uint64_t trainer_end_ns;
};

/* 0 when the scenario ran (whatever its outcome), -errno otherwise. */
int scenario_run(const struct scenario *sc, struct scenario_result *res);
/* Print the figures as TAP comments. */
void scenario_report(const struct scenario *sc,
		     const struct scenario_result *res);

#endif /* UM_E2E_SCENARIO_H */
