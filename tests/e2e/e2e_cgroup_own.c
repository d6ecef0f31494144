/* SPDX-License-Identifier: MIT */
/*
 * Description: e2e_cgroup's memory cgroup, trainer and filler, with the
 * trainer pointed away from umm.ko (LIBUM_UMM_DEV to a path that does not
 * exist, as on a node without the module): libum's own watch of its cgroup
 * (memory.current against the effective limit, its memory.pressure
 * trigger) raises the events, and the same shedding spills the host copies
 * before the limit. Passes as e2e_cgroup does, less the ACKs (there is no
 * one to ACK): no umm.ko event, the own watch among the sources, events
 * before the limit, bytes spilled, memory.events oom_kill 0, the trainer
 * alive with every region's checksum what the same steps give
 * unconstrained.
 */
#define TEST_TIMEOUT 600
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "cgroup_scene.h"
#include "e2e.h"

TEST(cgroup_limit_met_by_libum_own_watch)
{
	struct cg_scene sc = cg_scene_224("e2e-cgroup-own",
					    "/mnt/um-spill-cg-own");
	struct cg_result res;

	sc.own_watch = true;
	if (!e2e_have_umm())
		SKIP(return, "not in the VM rig (no /dev/umm)");
	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no spill disk (run-vm.sh --disk)");
	ASSERT_EQ(0, cg_scene_run(&sc, &res));
	ASSERT_TRUE(res.own_watch)
		TH_LOG("libum did not watch its cgroup (no cgroup v2 memory controller?)");
	EXPECT_EQ(0, res.umm_events);
	CG_EXPECT_WARNED_AND_SURVIVED(res);
	EXPECT_LT(0, res.own_events);
	EXPECT_LT(0, res.cgroup_freed);
	if (res.limit_ns)
		EXPECT_LT(res.first_event_ns, res.limit_ns);
}

TEST_HARNESS_MAIN
