/* SPDX-License-Identifier: MIT */
/*
 * cgroup_scene.h - the memory-cgroup scene's common run: a cgroup v2 with
 * memory.max below what a trainer and a filler in it would take together;
 * the trainer (libum, sim backend) holds its regions as host copies, the
 * filler takes anonymous memory at a fixed rate. With the reaction, umm.ko's
 * cgroup events make libum spill the host copies and the filler fits; with
 * it off, the cgroup's OOM killer takes the trainer. A scene says where the
 * limit is (on the job's cgroup, or on a parent with the job in a child
 * that has none of its own), whether memory.high is set below it, and
 * whether a second trainer runs in a sibling cgroup with its own limit.
 */
#ifndef UM_E2E_CGROUP_SCENE_H
#define UM_E2E_CGROUP_SCENE_H

#include <stdbool.h>
#include <stdint.h>

struct cg_scene {
	const char *name;		/* also the job's cgroup directory */
	const char *parent;		/* NULL: the job's cgroup is the
					 * root's child; else under this */
	bool limit_on_parent;		/* memory.max (and .high) there */
	const char *sibling;		/* a second trainer, no filler, in
					 * parent/sibling; NULL none */
	uint64_t sibling_limit;		/* its own memory.max */
	int sibling_nregions;
	bool fill_sibling;		/* the filler there instead: proves
					 * the siblings scene can fail */
	bool reaction;			/* false: LIBUM_PRESSURE=0 */
	bool own_watch;			/* libum's own watch: no umm.ko */
	const char *spill_dir;
	uint64_t limit;			/* memory.max */
	uint64_t high;			/* memory.high beside it; 0 none */
	uint64_t fill;			/* what the filler takes */
	unsigned int rate_mib;		/* its rate, MiB/s */
	int nregions;
	uint64_t region_bytes;
};

struct cg_result {
	/* processes */
	bool trainer_killed;
	int trainer_error;
	int filler_status;
	/* trainer, from the child */
	uint64_t steps;
	int bad_regions;
	uint64_t host_start;		/* host copies before the fill */
	bool cgroup_feature;		/* the handshake granted it */
	bool own_watch;			/* libum watched the cgroup itself */
	uint64_t own_events;		/* PRESSUREs its own watch raised */
	uint64_t cgroup_events, cgroup_freed, cgroup_room, cgroup_unmet;
	uint64_t umm_events, acks, acked_bytes, sum_ack_ns, max_ack_ns;
	uint32_t ack_p50_ms, ack_p99_ms;	/* umm.ko's histogram: upper
						 * bounds; 0 none, ~0u above */
	uint64_t first_event_ns;	/* CLOCK_MONOTONIC */
	uint32_t first_eta_ms, max_level;
	uint64_t spill_writes, spill_write_bytes, spill_reads;
	uint64_t spill_end;
	/* the cgroup where the limit is, as sampled (a sibling's: its own,
	 * at the end only) */
	uint64_t fill_start_ns, fill_end_ns;
	uint64_t limit_ns;		/* memory.events max first rose */
	uint64_t oom_ns;		/* memory.events oom first rose */
	uint64_t high_ns;		/* memory.events high first rose */
	uint64_t max_events, high_events, oom, oom_kill;
	uint64_t peak;			/* highest memory.current sampled */
	uint64_t id;			/* the cgroup's inode number */
};

/*
 * The scene of e2e_cgroup and its variants: memory.max 224 MiB, a trainer
 * with 7 regions of 16 MiB, a filler taking 140 MiB at 32 MiB/s, with
 * libum's reaction on.
 */
struct cg_scene cg_scene_224(const char *name, const char *spill_dir);

/* 0 when the scene ran (whatever its outcome), -errno otherwise. */
int cg_scene_run(const struct cg_scene *sc, struct cg_result *res);
/* The same with a sibling (sc->sibling): its trainer's figures in @sib. */
int cg_scene_run_pair(const struct cg_scene *sc, struct cg_result *res,
		      struct cg_result *sib);

/*
 * What a scene with the reaction on requires of the job that filled, in a
 * TEST body (the harness's EXPECTs): it had copies to give, was warned,
 * spilled, and survived stepping with every region intact.
 */
#define CG_EXPECT_WARNED_AND_SURVIVED(r) do {				\
	EXPECT_LE(96 * MiB, (r).host_start);				\
	EXPECT_EQ(0, (r).filler_status);				\
	EXPECT_FALSE((r).trainer_killed);				\
	EXPECT_EQ(0, (r).oom_kill);					\
	EXPECT_EQ(0, (r).trainer_error);				\
	EXPECT_LT(0, (r).steps);					\
	EXPECT_EQ(0, (r).bad_regions);					\
	EXPECT_LT(0, (r).cgroup_events);				\
	EXPECT_LT(0, (r).spill_writes) TH_LOG("nothing was spilled");	\
	EXPECT_NE(0, (r).first_event_ns);				\
} while (0)

#endif /* UM_E2E_CGROUP_SCENE_H */
