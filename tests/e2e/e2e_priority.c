/* SPDX-License-Identifier: MIT */
/*
 * Description: two trainers on the sim backend share gpu0 under one budget
 * set in umm.ko (gpus/gpu0/budget_bytes). Each holds 48 MiB there, all of it
 * released (reclaimable). The budget is set to 64 MiB: the module asks the
 * lower-priority client (LIBUM_PRIORITY=-10) for the excess first; it
 * sheds, ACKs and reports again, and the higher-priority one (+10) keeps
 * everything. Passes when: the low one shed at least the excess, the high
 * one shed nothing, the sum is back within the budget, all bytes intact.
 */
#define TEST_TIMEOUT 600
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "e2e.h"
#include "pressure.h"

#define HOLD	(48 * MiB)
#define BUDGET	(64 * MiB)

struct report {
	int error;
	uint64_t dev_before, dev_after;
	uint64_t acks, shed_bytes, umm_events;
	uint64_t sum_ack_ns, max_ack_ns;
	int bad;
};

static void child(int prio, int wfd, int rfd)
{
	struct trainer_cfg cfg = {
		.nregions = 3,
		.region_bytes = 16 * MiB,
		.sim_capacity = 64 * MiB,
		.priority = prio,
	};
	struct um_pressure_stats ps;
	struct report rep = { 0 };
	struct trainer t;
	char c, p[16];

	snprintf(p, sizeof(p), "%d", prio);
	setenv("LIBUM_PRIORITY", p, 1);
	setenv("LIBUM_CLIENT_NAME", prio < 0 ? "trainer-low" : "trainer-high", 1);
	setenv("LIBUM_PRESSURE", "1", 1);
	rep.error = trainer_init(&t, &cfg);
	/* one step: every region ends released but resident on gpu0 */
	if (!rep.error)
		rep.error = trainer_step(&t);
	trainer_where(&t, NULL, 0, NULL, &rep.dev_before);
	if (write(wfd, &rep, sizeof(rep)) != sizeof(rep) || rep.error)
		_exit(1);
	if (read(rfd, &c, 1) < 0)
		_exit(1);
	trainer_where(&t, NULL, 0, NULL, &rep.dev_after);
	if (!um__pressure_stats(t.ctx, &ps)) {
		rep.acks = ps.acks;
		rep.shed_bytes = ps.shed_bytes;
		rep.umm_events = ps.umm_events;
		rep.sum_ack_ns = ps.sum_ack_ns;
		rep.max_ack_ns = ps.max_ack_ns;
	}
	rep.bad = trainer_verify(&t);
	trainer_dump_log(&t);
	fflush(stdout);
	if (write(wfd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(1);
	trainer_fini(&t);
	_exit(0);
}

static pid_t spawn(int prio, int *wfd, int *rfd)
{
	int up[2], down[2];
	pid_t pid;

	if (pipe(up) || pipe(down))
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		child(prio, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);
	*rfd = up[0];
	*wfd = down[1];
	return pid;
}

static int get(int fd, struct report *r)
{
	size_t got = 0;

	while (got < sizeof(*r)) {
		ssize_t n = read(fd, (char *)r + got, sizeof(*r) - got);

		if (n <= 0)
			return -EIO;
		got += (size_t)n;
	}
	return 0;
}

static void ms_sleep(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

TEST(lower_priority_sheds_first)
{
	const char *budget = UMM_SYSFS "/gpus/gpu0/budget_bytes";
	const char *used = UMM_SYSFS "/gpus/gpu0/used_bytes";
	struct report lo, hi, lo2, hi2;
	int lo_w, lo_r, hi_w, hi_r;
	uint64_t u = 0, t0, t_budget, t_ok = 0;
	pid_t plo, phi;
	char val[32];

	if (!e2e_have_umm())
		SKIP(return, "no /dev/umm (runs in the VM rig)");
	ASSERT_EQ(0, e2e_write_str(budget, "0"));
	plo = spawn(-10, &lo_w, &lo_r);
	phi = spawn(10, &hi_w, &hi_r);
	ASSERT_LT(0, plo);
	ASSERT_LT(0, phi);
	ASSERT_EQ(0, get(lo_r, &lo));
	ASSERT_EQ(0, get(hi_r, &hi));
	ASSERT_EQ(0, lo.error);
	ASSERT_EQ(0, hi.error);
	ASSERT_EQ(HOLD, lo.dev_before);
	ASSERT_EQ(HOLD, hi.dev_before);
	/* both REPORTs in (the loop reports at least every 100 ms) */
	for (int i = 0; i < 500 && u < 2 * HOLD; i++) {
		ms_sleep(10);
		e2e_read_u64(used, &u);
	}
	ASSERT_EQ(2 * HOLD, u);

	snprintf(val, sizeof(val), "%llu", (unsigned long long)BUDGET);
	t_budget = e2e_now_ns();
	ASSERT_EQ(0, e2e_write_str(budget, val));
	for (int i = 0; i < 3000; i++) {
		e2e_read_u64(used, &u);
		if (u <= BUDGET) {
			t_ok = e2e_now_ns();
			break;
		}
		ms_sleep(10);
	}
	/* let a late (wrong) ask reach the high one, if there were one */
	ms_sleep(500);
	t0 = e2e_now_ns();
	ASSERT_EQ(1, write(lo_w, "s", 1));
	ASSERT_EQ(1, write(hi_w, "s", 1));
	ASSERT_EQ(0, get(lo_r, &lo2));
	ASSERT_EQ(0, get(hi_r, &hi2));
	e2e_wait(plo);
	e2e_wait(phi);
	e2e_write_str(budget, "0");
	(void)t0;

	printf("# priority: budget %llu MiB; low (-10) %llu -> %llu MiB, %llu ACK(s), shed %llu MiB; high (+10) %llu -> %llu MiB, shed %llu MiB\n",
	       (unsigned long long)(BUDGET / MiB),
	       (unsigned long long)(lo.dev_before / MiB),
	       (unsigned long long)(lo2.dev_after / MiB),
	       (unsigned long long)lo2.acks,
	       (unsigned long long)(lo2.shed_bytes / MiB),
	       (unsigned long long)(hi.dev_before / MiB),
	       (unsigned long long)(hi2.dev_after / MiB),
	       (unsigned long long)(hi2.shed_bytes / MiB));
	if (t_ok)
		printf("# priority: budget set -> usage within budget in %.1f ms; event-to-ACK avg %.1f ms max %.1f ms\n",
		       e2e_ms(t_ok - t_budget),
		       lo2.acks ? e2e_ms(lo2.sum_ack_ns / lo2.acks) : 0,
		       e2e_ms(lo2.max_ack_ns));
	EXPECT_NE(0, t_ok) TH_LOG("gpu0 stayed over its budget (%llu)",
				  (unsigned long long)u);
	EXPECT_LE(lo2.dev_after + hi2.dev_after, BUDGET);
	EXPECT_LE(2 * HOLD - BUDGET, lo2.shed_bytes);
	EXPECT_LT(0, lo2.acks);
	EXPECT_EQ(HOLD, hi2.dev_after);
	EXPECT_EQ(0, hi2.shed_bytes);
	EXPECT_EQ(0, lo2.bad);
	EXPECT_EQ(0, hi2.bad);
}

TEST_HARNESS_MAIN
