/* SPDX-License-Identifier: MIT */
/*
 * Description: e2e_cgroup's trainer and filler (140 MiB at 32 MiB/s) in a
 * cgroup with memory.high 224 MiB below memory.max 256 MiB: together they
 * take more than memory.max. umm.ko takes the lower of the two as the
 * cgroup's limit, so its events come before memory.high is crossed (the
 * kernel's reclaim and throttling start there) and libum spills. Measured
 * and reported: how often the cgroup went over memory.high (memory.events
 * "high"), when first, the events and ACKs, bytes spilled. Passes when
 * oom_kill is 0, the trainer's checksums are intact, events came and were
 * ACKed, and the first one came before memory.high was first crossed
 * where it was (how often it was crossed is reported, not judged: the
 * kernel counts each reclaim pass over high). With E2E_CG_REACTION_OFF=1
 * the fill goes through memory.high to memory.max, the OOM killer takes
 * the trainer and the scene fails: the check that it can.
 */
#define TEST_TIMEOUT 600
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "cgroup_scene.h"
#include "e2e.h"

TEST(cgroup_memory_high_met_by_spilling)
{
	struct cg_scene sc = cg_scene_224("e2e-cgroup-high",
					    "/mnt/um-spill-cg-high");
	struct cg_result res;

	sc.limit = 256 * MiB;
	sc.high = 224 * MiB;
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
	printf("# memory.high crossed %llu time(s) (memory.events high), first %.0f ms after the fill began (-1 never); %llu cgroup events in all\n",
	       (unsigned long long)res.high_events,
	       res.high_ns ? e2e_ms(res.high_ns - res.fill_start_ns) : -1,
	       (unsigned long long)res.cgroup_events);
	CG_EXPECT_WARNED_AND_SURVIVED(res);
	EXPECT_LT(0, res.acks);
	if (res.high_ns)
		EXPECT_LT(res.first_event_ns, res.high_ns);
}

TEST_HARNESS_MAIN
