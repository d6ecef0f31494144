/* SPDX-License-Identifier: MIT */
/*
 * Description: both nodes fill up. umpressure first takes node 1 below its
 * low watermark and holds it there, then fills node 0 past the floor while
 * the trainer (bound to node 0) steps. With no node left with headroom, the
 * module's events name no destination and libum spills host copies to the
 * spill directory on a virtio disk (ext4, mounted by the rig on /mnt);
 * later steps read them back. Passes when: no OOM, spill writes and reads
 * happened, nothing was moved to node 1, every region's checksum is
 * intact. Reports spill throughput,
 * lead time and event-to-ACK latency.
 */
#define TEST_TIMEOUT 900
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "e2e.h"
#include "scenario.h"

TEST(both_nodes_fill_regions_spill_and_return)
{
	struct scenario sc = {
		.name = "spill",
		.reaction = true,
		.nregions = 8,
		.region_bytes = 16 * MiB,
		.spill_dir = "/mnt/um-spill",
		.fill_node1 = true,
		/*
		 * With no node to move to, a step still needs host copies
		 * on node 0 for what it restores from the spill and what it
		 * evicts until the loop writes it out: up to three regions
		 * as measured (E2E_DEBUG), on top of node_fill's 64 MiB.
		 */
		.margin = 64 * MiB + 2 * 16 * MiB,
	};
	struct scenario_result res;

	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no spill disk (run-vm.sh --disk)");
	ASSERT_EQ(0, scenario_run(&sc, &res));
	EXPECT_EQ(0, res.umpressure_status);
	EXPECT_FALSE(res.trainer_killed);
	EXPECT_EQ(0, res.trainer_error);
	EXPECT_LT(0, res.steps);
	EXPECT_EQ(0, res.bad_regions);
	EXPECT_LT(0, res.umm_events);
	EXPECT_LT(0, res.spill_writes) TH_LOG("nothing was spilled");
	EXPECT_LT(0, res.spill_reads) TH_LOG("nothing came back from the spill");
	/*
	 * Node 1 sits at its low mark: events may still name it (the node
	 * with most room, however little), but nothing may go there.
	 */
	EXPECT_EQ(0, res.steered_away);
	EXPECT_EQ(0, res.moves_paged + res.moves_copied)
		TH_LOG("host copies moved to node 1, which had no room");
}

TEST_HARNESS_MAIN
