/* SPDX-License-Identifier: MIT */
/*
 * Description: two jobs in sibling memory cgroups under one parent (no
 * limit on the parent), each with its own memory.max of 224 MiB: job A is
 * e2e_cgroup's trainer with its filler (140 MiB at 32 MiB/s), job B a
 * smaller trainer (3 regions of 16 MiB) with no filler, far from its
 * limit. umm.ko asks only A: A gets PRESSURE events about its cgroup before
 * its limit, spills and ACKs, and A's oom_kill stays 0; B's libum counts
 * no cgroup event at all and B's oom_kill is 0; both trainers' checksums
 * are intact. E2E_CG_FILL_SIBLING=1 puts the filler in B instead: then
 * both halves of the assertion fail (A hears nothing, B is asked), the
 * check that this scene can fail. Reports both jobs' figures.
 */
#define TEST_TIMEOUT 600
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"
#include "cgroup_scene.h"
#include "e2e.h"

TEST(cgroup_only_the_filling_sibling_is_asked)
{
	struct cg_scene sc = cg_scene_224("a", "/mnt/um-spill-cg-sib");
	struct cg_result a, b;

	sc.parent = "e2e-cgroup-siblings";
	sc.sibling = "b";
	sc.sibling_limit = 224 * MiB;
	sc.sibling_nregions = 3;
	sc.fill_sibling = getenv("E2E_CG_FILL_SIBLING") != NULL;
	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	if (!getenv("UM_VM_DISK"))
		SKIP(return, "no spill disk (run-vm.sh --disk)");
	ASSERT_EQ(0, cg_scene_run_pair(&sc, &a, &b));
	ASSERT_TRUE(a.cgroup_feature && b.cgroup_feature)
		TH_LOG("umm.ko did not grant UMM_FEATURE_CGROUP (no cgroup v2 memory controller?)");
	/* A: warned before its limit, never OOM-killed */
	CG_EXPECT_WARNED_AND_SURVIVED(a);
	EXPECT_LT(0, a.acks);
	if (a.limit_ns)
		EXPECT_LT(a.first_event_ns, a.limit_ns);
	/* B: never asked about a cgroup */
	EXPECT_FALSE(b.trainer_killed);
	EXPECT_EQ(0, b.oom_kill);
	EXPECT_EQ(0, b.trainer_error);
	EXPECT_LT(0, b.steps);
	EXPECT_EQ(0, b.bad_regions);
	EXPECT_EQ(0, b.cgroup_events) TH_LOG("the sibling without the filler was asked");
}

TEST_HARNESS_MAIN
