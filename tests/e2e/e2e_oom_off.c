/* SPDX-License-Identifier: MIT */
/*
 * Description: the same pressure as e2e_node_fill (umpressure filling node
 * 0 past the floor, at the same rate, to the same size) with libum's
 * reaction turned off (LIBUM_PRESSURE=0): the kernel OOM-kills the trainer.
 * This proves the scene is real and that the reaction is what saves the
 * trainer there. The OOM report is declared to the rig's dmesg judge, and
 * required: the run fails if the trainer survives. Reports the lead time
 * the module would have given (node 0 low -> the kill).
 */
#define TEST_TIMEOUT 900
#include <stdio.h>

#include "harness.h"
#include "e2e.h"
#include "scenario.h"

TEST(reaction_off_trainer_oom_killed)
{
	struct scenario sc = {
		.name = "oom_off",
		.reaction = false,
		.nregions = 8,
		.region_bytes = 16 * MiB,
	};
	struct scenario_result res;

	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	printf("# expect-dmesg: Out of memory|oom|RIP: 0033:\n");
	printf("# require-dmesg: Killed process [0-9]+ \\(e2e_oom_off\\)\n");
	fflush(stdout);
	ASSERT_EQ(0, scenario_run(&sc, &res));
	EXPECT_TRUE(res.trainer_killed) TH_LOG("the trainer survived: no real pressure?");
	EXPECT_EQ(0, res.umpressure_status);
	/* nobody listened: the loop was off */
	EXPECT_EQ(0, res.umm_events);
}

TEST_HARNESS_MAIN
