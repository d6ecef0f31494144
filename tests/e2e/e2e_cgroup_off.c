/* SPDX-License-Identifier: MIT */
/*
 * Description: e2e_cgroup's memory cgroup, trainer and filler, with libum's
 * reaction off (LIBUM_PRESSURE=0): the cgroup's OOM killer takes the
 * trainer (memory.events oom_kill >= 1). This proves the scene is real
 * and that the reaction is what saves the trainer there. The OOM report is
 * declared to the rig's dmesg judge, and required. Reports when the limit
 * was first hit, for e2e_cgroup's lead time.
 */
#define TEST_TIMEOUT 600
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "cgroup_scene.h"
#include "e2e.h"

TEST(cgroup_reaction_off_trainer_oom_killed)
{
	struct cg_scene sc = cg_scene_224("e2e-cgroup-off",
					    "/mnt/um-spill-cg-off");
	struct cg_result res;

	sc.reaction = false;
	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no spill disk (run-vm.sh --disk)");
	printf("# expect-dmesg: Out of memory|oom|RIP: 0033:\n");
	printf("# require-dmesg: Killed process [0-9]+ \\(e2e_cgroup_off\\)\n");
	fflush(stdout);
	ASSERT_EQ(0, cg_scene_run(&sc, &res));
	EXPECT_LE(96 * MiB, res.host_start);
	EXPECT_TRUE(res.trainer_killed) TH_LOG("the trainer survived: no real pressure?");
	EXPECT_LE(1, res.oom_kill);
	EXPECT_EQ(0, res.filler_status);
	/* nobody listened: the loop was off */
	EXPECT_EQ(0, res.cgroup_events);
}

TEST_HARNESS_MAIN
