/* SPDX-License-Identifier: MIT */
/*
 * Description: a trainer in a memory cgroup (v2) whose memory.max is below
 * what it and a filler in the same cgroup take together: the trainer holds
 * 96 MiB of libum host copies (6 of its 7 regions of 16 MiB, the seventh
 * on the sim device, whose memory is the process's too), the filler takes
 * 140 MiB at 32 MiB/s under a 224 MiB limit (the trainer takes 130-150 MiB
 * before the fill, with the pool's chunks); the scene sets umm.ko's
 * cgroup/low_bp to 4000 for its run (see cgroup_scene.c). umm.ko's PRESSURE events about the cgroup reach libum
 * before the limit; libum spills the host copies (never to another node:
 * that frees nothing in a cgroup), trims the pool and ACKs, and the filler
 * fits. Passes when: the handshake granted the cgroup events, events came
 * and were ACKed with bytes freed, bytes were spilled, memory.events says
 * oom_kill 0, the trainer survived and every region's checksum is what the
 * same steps give unconstrained. The control is e2e_cgroup_off.
 * Reports the fill rate, the first event's time (and lead to the limit
 * where it was hit), event-to-ACK times and bytes spilled.
 */
#define TEST_TIMEOUT 600
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "cgroup_scene.h"
#include "e2e.h"

TEST(cgroup_limit_met_by_spilling)
{
	struct cg_scene sc = cg_scene_224("e2e-cgroup",
					    "/mnt/um-spill-cg");
	struct cg_result res;


	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no spill disk (run-vm.sh --disk)");
	ASSERT_EQ(0, cg_scene_run(&sc, &res));
	ASSERT_TRUE(res.cgroup_feature)
		TH_LOG("umm.ko did not grant UMM_FEATURE_CGROUP (no cgroup v2 memory controller?)");
	CG_EXPECT_WARNED_AND_SURVIVED(res);
	EXPECT_LT(0, res.acks);
	EXPECT_LT(0, res.acked_bytes);
	/* the first event came before the cgroup first hit its limit */
	if (res.limit_ns)
		EXPECT_LT(res.first_event_ns, res.limit_ns);
}

TEST_HARNESS_MAIN
