/* SPDX-License-Identifier: MIT */
/*
 * Description: a trainer started where umm.ko is not loaded (the rig boots
 * with --no-module) works the same: libum says once which sources it has
 * (PSI where the kernel takes a trigger, its own budgets always), budgets
 * hold, and every region's checksum is intact after training. Real memory
 * pressure on its node meanwhile (umpressure, floor kept) must not hurt it.
 */
#define TEST_TIMEOUT 600
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "probes.h"
#include "e2e.h"
#include "pressure.h"

TEST(trainer_without_module)
{
	static const char *const args[] = {
		"--node", "0", "--target", "96M", "--rate", "32", "--hold", "1",
		"--json", NULL,
	};
	struct trainer_cfg cfg = {
		.nregions = 6,
		.region_bytes = 8 * MiB,
		.sim_capacity = 16 * MiB,
	};
	struct um_stats st = { .size = sizeof(st) };
	unsigned int want = UM_PSRC_BUDGET;
	struct trainer t;
	pid_t ump;
	int status;

	if (!access("/dev/umm", F_OK))
		SKIP(return, "umm.ko is loaded here (this one runs without it)");
	if (probe_psi_trigger())
		want |= UM_PSRC_PSI;
	setenv("LIBUM_PRESSURE", "1", 1);
	ASSERT_EQ(0, trainer_init(&t, &cfg));
	EXPECT_EQ(want, um__pressure_sources(t.ctx));
	EXPECT_NE(NULL, strstr(t.log, "pressure: sources:")) TH_LOG("log: %s", t.log);
	EXPECT_NE(NULL, strstr(t.log, "no /dev/umm")) TH_LOG("log: %s", t.log);
	ump = e2e_spawn_umpressure(args, "/tmp/umpressure-nomod.json");
	ASSERT_LT(0, ump);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, trainer_step(&t));
	status = e2e_wait(ump);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ASSERT_EQ(0, trainer_step(&t));
	ASSERT_EQ(0, um_stats_get(t.ctx, &st));
	EXPECT_LE(st.device[0].peak, cfg.sim_capacity);
	EXPECT_EQ(0, st.nomem);
	EXPECT_EQ(0, trainer_verify(&t));
	printf("# nomodule: sources 0x%x (%s), %llu steps, checksums intact\n",
	       um__pressure_sources(t.ctx),
	       (want & UM_PSRC_PSI) ? "PSI + budgets" : "budgets only",
	       (unsigned long long)t.steps);
	trainer_dump_log(&t);
	trainer_fini(&t);
}

TEST_HARNESS_MAIN
