/* SPDX-License-Identifier: MIT */
/*
 * Description: umm.ko is switched off mid-run (its enabled knob set to 0).
 * The module sends DISABLED; libum notices, drops the module from its
 * sources (falling back to PSI where the kernel has it, and to its own
 * budgets always), says so once, and the trainer keeps stepping with
 * nothing lost. Switched on again, libum uses the module again. A trainer
 * started while the module is disabled starts on the fallback sources and
 * picks the module up when it is enabled. Budgets hold throughout and every
 * region's checksum is intact at the end.
 */
#define TEST_TIMEOUT 600
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "e2e.h"
#include "pressure.h"

#define ENABLED UMM_SYSFS "/enabled"

static void ms_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Step t until its sources match (want & mask) == want, up to ~30 s. */
static int step_until(struct trainer *t, unsigned int mask, unsigned int want,
		      uint64_t *ns)
{
	uint64_t t0 = e2e_now_ns();

	for (int i = 0; i < 3000; i++) {
		if ((um__pressure_sources(t->ctx) & mask) == want) {
			*ns = e2e_now_ns() - t0;
			return 0;
		}
		if (i % 10 == 0 && trainer_step(t))
			return -1;
		ms_sleep(10);
	}
	return -1;
}

/*
 * io_uring worker threads of this process. The loop keeps a read of
 * /dev/umm armed all the time: had the module's read_iter ignored
 * IOCB_NOWAIT, io_uring would park an "iou-wrk-*" thread in that read.
 */
static int iou_workers(void)
{
	char path[300], comm[64];
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		if (!e2e_read_str(path, comm, sizeof(comm)) &&
		    !strncmp(comm, "iou-wrk", 7))
			n++;
	}
	closedir(d);
	return n;
}

static struct trainer_cfg cfg = {
	.nregions = 4,
	.region_bytes = 8 * MiB,
	.sim_capacity = 16 * MiB,
};

TEST(disabled_mid_run_falls_back_and_returns)
{
	struct um_pressure_stats ps;
	struct um_stats st = { .size = sizeof(st) };
	struct trainer t;
	uint64_t ns_off = 0, ns_off2 = 0, ns_on = 0;
	unsigned int src;

	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	setenv("LIBUM_PRESSURE", "1", 1);
	ASSERT_EQ(0, e2e_write_str(ENABLED, "1"));
	ASSERT_EQ(0, trainer_init(&t, &cfg));
	src = um__pressure_sources(t.ctx);
	ASSERT_EQ(UM_PSRC_UMM | UM_PSRC_BUDGET, src & (UM_PSRC_UMM | UM_PSRC_BUDGET));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, trainer_step(&t));
	ms_sleep(300);
	EXPECT_EQ(0, iou_workers()) TH_LOG("the /dev/umm read went to a worker");

	ASSERT_EQ(0, e2e_write_str(ENABLED, "0"));
	ASSERT_EQ(0, step_until(&t, UM_PSRC_UMM | UM_PSRC_BUDGET, UM_PSRC_BUDGET,
				&ns_off)) TH_LOG("libum did not notice enabled=0");
	src = um__pressure_sources(t.ctx);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, trainer_step(&t));
	ASSERT_EQ(0, um__pressure_stats(t.ctx, &ps));
	EXPECT_EQ(1, ps.fallbacks);
	EXPECT_NE(NULL, strstr(t.log, "umm.ko was disabled"))
		TH_LOG("no clear message; log: %s", t.log);

	ASSERT_EQ(0, e2e_write_str(ENABLED, "1"));
	ASSERT_EQ(0, step_until(&t, UM_PSRC_UMM, UM_PSRC_UMM, &ns_on))
		TH_LOG("libum did not come back to the module");
	ASSERT_EQ(0, trainer_step(&t));

	/*
	 * Again: the PSI trigger's poll, cancelled when the module came back,
	 * completes as cancelled, not as a failed trigger, and the new
	 * trigger is the one armed.
	 */
	ASSERT_EQ(0, e2e_write_str(ENABLED, "0"));
	ASSERT_EQ(0, step_until(&t, UM_PSRC_UMM | UM_PSRC_BUDGET, UM_PSRC_BUDGET,
				&ns_off2)) TH_LOG("enabled=0 missed the second time");
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, trainer_step(&t));
	EXPECT_EQ(src, um__pressure_sources(t.ctx))
		TH_LOG("fallback sources differ the second time");
	EXPECT_EQ(NULL, strstr(t.log, "PSI trigger failed"))
		TH_LOG("log: %s", t.log);
	ASSERT_EQ(0, e2e_write_str(ENABLED, "1"));
	ASSERT_EQ(0, step_until(&t, UM_PSRC_UMM, UM_PSRC_UMM, &ns_on))
		TH_LOG("libum did not come back to the module again");
	ASSERT_EQ(0, trainer_step(&t));

	/* budgets held all along, nothing lost */
	ASSERT_EQ(0, um_stats_get(t.ctx, &st));
	EXPECT_LE(st.device[0].peak, cfg.sim_capacity);
	EXPECT_EQ(0, st.nomem);
	EXPECT_EQ(0, trainer_verify(&t));
	printf("# disable: enabled=0 noticed in %.1f ms (fallback sources 0x%x: %s; %.1f ms the second time), enabled=1 in %.1f ms; %llu steps, checksums intact\n",
	       e2e_ms(ns_off), src,
	       (src & UM_PSRC_PSI) ? "PSI + budgets" : "budgets",
	       e2e_ms(ns_off2), e2e_ms(ns_on), (unsigned long long)t.steps);
	trainer_dump_log(&t);
	trainer_fini(&t);
}

TEST(started_while_disabled)
{
	struct trainer t;
	uint64_t ns = 0;

	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	setenv("LIBUM_PRESSURE", "1", 1);
	ASSERT_EQ(0, e2e_write_str(ENABLED, "0"));
	ASSERT_EQ(0, trainer_init(&t, &cfg));
	EXPECT_EQ(0, um__pressure_sources(t.ctx) & UM_PSRC_UMM);
	EXPECT_NE(NULL, strstr(t.log, "loaded but disabled"))
		TH_LOG("log: %s", t.log);
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, trainer_step(&t));
	ASSERT_EQ(0, e2e_write_str(ENABLED, "1"));
	EXPECT_EQ(0, step_until(&t, UM_PSRC_UMM, UM_PSRC_UMM, &ns));
	EXPECT_EQ(0, trainer_verify(&t));
	trainer_dump_log(&t);
	trainer_fini(&t);
	e2e_write_str(ENABLED, "1");
}

TEST_HARNESS_MAIN
