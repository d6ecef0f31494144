/* SPDX-License-Identifier: MIT */
/*
 * Description: node 0 fills up under real pressure (umpressure bound to
 * node 0, past the floor) while a trainer whose memory is bound to node 0
 * keeps stepping. umm.ko's PRESSURE events name node 1 as the destination;
 * libum moves the trainer's released host copies there, ACKs, and the
 * pressure that would OOM-kill the trainer with the reaction off (see
 * e2e_oom_off) fits. Passes when: no OOM (the rig's dmesg judge), copies
 * now on node 1, events received and ACKed, no back and forth between
 * the nodes, trainer checksum intact.
 * Reports the lead time (first event -> node 0 critical) and event-to-ACK
 * latency.
 */
#define TEST_TIMEOUT 900
#include <stdio.h>

#include "harness.h"
#include "e2e.h"
#include "scenario.h"

TEST(node0_fills_copies_move_to_node1)
{
	struct scenario sc = {
		.name = "node_fill",
		.reaction = true,
		.nregions = 8,
		.region_bytes = 16 * MiB,
	};
	struct scenario_result res;

	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	ASSERT_EQ(0, scenario_run(&sc, &res));
	EXPECT_TRUE(res.umpressure_exited);
	EXPECT_EQ(0, res.umpressure_status) TH_LOG("umpressure did not reach its target");
	EXPECT_FALSE(res.trainer_killed);
	EXPECT_EQ(0, res.bad_regions);
	EXPECT_LT(0, res.umm_events);
	EXPECT_LT(0, res.acks);
	EXPECT_LT(0, res.shed_bytes);
	/*
	 * Once away, copies stay away while node 0 is still filling: a
	 * RELIEF that their own move caused must not bring them back (they
	 * would push the node to LOW again at the next step).
	 */
	/* each region's host copy fills its pool chunk: pages move */
	EXPECT_LT(0, res.moves_paged) TH_LOG("no host copy moved by move_pages");
	EXPECT_GE(2, res.steered_away)
		TH_LOG("copies went back and forth between the nodes");
	/*
	 * The copies went where the module said there was room (they come
	 * home once node 0 has room again, so look at node 1's peak).
	 */
	EXPECT_LE(res.host_start[0] / 2, res.host_peak[1])
		TH_LOG("at most %llu bytes went to node 1",
		       (unsigned long long)res.host_peak[1]);
}

TEST_HARNESS_MAIN
