// SPDX-License-Identifier: MIT
/*
 * Description: every test here but the first must be reported "not ok", so
 * the harness cannot pass a broken test silently. Run by check.sh, which
 * reads this program's output; not part of the pass/fail totals itself.
 */
#include <pthread.h>

#include "harness.h"

TEST(pass_one)
{
	ASSERT_EQ(1, 1);
}

TEST(assert_stops_test)
{
	ASSERT_EQ(1, 2);
	TH_LOG("NOT REACHED after ASSERT");
}

TEST(expect_continues)
{
	EXPECT_EQ(2, 1 + 2);
	TH_LOG("reached after EXPECT");
}

TEST(mixed_sign_is_not_equal)
{
	size_t big = (size_t)-1;

	ASSERT_EQ(-1, big);
}

TEST(statement_after_failed_check)
{
	ASSERT_STREQ("abc", "abd") TH_LOG("extra message on failure");
}

TEST(null_check)
{
	int x = 0;

	ASSERT_NULL(&x);
}

TEST(unexpected_signal)
{
	raise(SIGSEGV);
}

TEST_SIGNAL(missing_signal, SIGABRT)
{
}

TEST(odd_exit_code)
{
	exit(3);
}

TEST(exit_skip_code_without_skip)
{
	exit(KSFT_SKIP);
}

static void *assert_in_thread(void *arg)
{
	ASSERT_EQ(0, *(int *)arg);
	return NULL;
}

TEST(assert_in_thread)
{
	pthread_t th;
	int one = 1;

	ASSERT_EQ(0, pthread_create(&th, NULL, assert_in_thread, &one));
	pthread_join(th, NULL);
	pause();	/* the failing thread ends the test */
}

TEST(expect_then_skip)
{
	EXPECT_TRUE(0);
	SKIP(return, "a failure is not hidden by a skip");
}

FIXTURE(torn)
{
	int ready;
};

FIXTURE_SETUP(torn)
{
	self->ready = 1;
}

FIXTURE_TEARDOWN(torn)
{
	TH_LOG("teardown ran, ready=%d", self->ready);
}

TEST_F(torn, teardown_after_assert)
{
	ASSERT_FALSE(self->ready);
}

FIXTURE(bad_setup)
{
	int unused;
};

FIXTURE_SETUP(bad_setup)
{
	ASSERT_TRUE(0);
}

TEST_F(bad_setup, body_skipped)
{
	TH_LOG("NOT REACHED after failed setup");
}

TEST_HARNESS_MAIN
