// SPDX-License-Identifier: MIT
/*
 * Description: tests that never end are killed at their timeout, with
 * whatever they forked, reported "not ok", and the run goes on. Run by
 * check.sh.
 */
#include <fcntl.h>

#include "harness.h"

TEST_TIMEOUT_SET(hang_with_grandchild, 1);
TEST(hang_with_grandchild)
{
	const char *pidfile = getenv("HANG_PIDFILE");
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(null, 2);
		for (;;)
			pause();
	}
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");

		ASSERT_NONNULL(f);
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
	signal(SIGTERM, SIG_IGN);
	for (;;)
		pause();
}

/* Ends only through UM_TEST_TIMEOUT when check.sh sets it. */
TEST(sleep_long)
{
	sleep(5);
}

TEST(pass_after)
{
	ASSERT_TRUE(1);
}

TEST_HARNESS_MAIN
