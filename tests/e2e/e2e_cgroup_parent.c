/* SPDX-License-Identifier: MIT */
/*
 * Description: e2e_cgroup with the limit one level up, as a Slurm job's or
 * a pod slice's: memory.max 224 MiB on a parent cgroup, the trainer and
 * its filler (140 MiB at 32 MiB/s) in a child cgroup with no limit of its
 * own. umm.ko counts the parent's limit as the client's room: PRESSURE
 * events about the cgroup come before the parent's limit is hit, libum
 * spills and ACKs, the parent's memory.events (hierarchical) says oom_kill
 * 0, the trainer's checksums are intact. With E2E_CG_REACTION_OFF=1
 * (LIBUM_PRESSURE=0) the parent's OOM killer takes the trainer and the
 * scene fails: the check that it can. Reports what e2e_cgroup does.
 */
#define TEST_TIMEOUT 600
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "cgroup_scene.h"
#include "e2e.h"

TEST(cgroup_parent_limit_met_by_spilling)
{
	struct cg_scene sc = cg_scene_224("job", "/mnt/um-spill-cg-parent");
	struct cg_result res;

	sc.parent = "e2e-cgroup-parent";
	sc.limit_on_parent = true;
	sc.reaction = !getenv("E2E_CG_REACTION_OFF");
	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no spill disk (run-vm.sh --disk)");
	if (!sc.reaction)
		printf("# expect-dmesg: Out of memory|oom|RIP: 0033:\n");
	ASSERT_EQ(0, cg_scene_run(&sc, &res));
	EXPECT_TRUE(res.cgroup_feature)
		TH_LOG("umm.ko did not grant UMM_FEATURE_CGROUP (no cgroup v2 memory controller?)");
	CG_EXPECT_WARNED_AND_SURVIVED(res);
	EXPECT_LT(0, res.acks);
	EXPECT_LT(0, res.acked_bytes);
	if (res.limit_ns)
		EXPECT_LT(res.first_event_ns, res.limit_ns);
}

TEST_HARNESS_MAIN
