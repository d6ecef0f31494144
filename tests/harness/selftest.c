// SPDX-License-Identifier: MIT
/*
 * Description: the harness works when tests pass, skip, use fixtures with
 * variants or expect a signal. Every test here must pass or skip; the tests
 * that must fail or hang live in fail.c and hang.c and are run by check.sh.
 */
#include <pthread.h>
#include <stdbool.h>

#include "harness.h"

TEST(pass_compare_mixed_types)
{
	size_t sz = 4096;
	ssize_t neg = -1;
	unsigned char uc = 200;
	bool yes = true;
	double half = 0.5;
	int x = 3;
	int *px = &x;

	ASSERT_EQ(4096, sz);
	ASSERT_NE(neg, sz);	/* -1 is not SIZE_MAX here */
	ASSERT_LT(neg, sz);
	ASSERT_GT(sz, neg);
	ASSERT_LE(uc, 200);
	ASSERT_GE(uc, 199u);
	ASSERT_TRUE(yes);
	ASSERT_FALSE(!yes);
	ASSERT_EQ(0.5, half);
	ASSERT_LT(half, 1);
	ASSERT_EQ(px, &x);
	ASSERT_NONNULL(px);
	ASSERT_NULL(NULL);
	ASSERT_TRUE(px);
	ASSERT_NE(MAP_FAILED, px);
	ASSERT_EQ(-1, neg);
	ASSERT_EQ(UINT64_MAX, (uint64_t)-1);
	ASSERT_LT(INT64_MIN, UINT64_MAX);
	ASSERT_STREQ("abc", "abc");
	ASSERT_STRNE("abc", "abd");
	ASSERT_STRNE("abc", NULL);
	EXPECT_EQ(x, 3);
	EXPECT_STREQ(NULL, NULL);
}

/* gcc -O0 once took this for a read of uninitialized memory */
TEST(pass_fresh_allocation_is_only_an_address)
{
	char *fresh = malloc(16);

	ASSERT_NONNULL(fresh);
	EXPECT_NE(NULL, fresh);
	free(fresh);
}

static int evaluations;

static int count_call(void)
{
	return ++evaluations;
}

TEST(pass_operands_evaluated_once)
{
	ASSERT_EQ(1, count_call());
	EXPECT_EQ(2, count_call());
	ASSERT_EQ(2, evaluations);
}

TEST(pass_statement_after_check_runs_only_on_failure)
{
	int ran = 0;

	ASSERT_EQ(1, 1) ran = 1;
	EXPECT_TRUE(1) ran = 2;
	ASSERT_EQ(0, ran);
	if (ran)
		ASSERT_EQ(0, 1);	/* no braces: a single statement */
	else
		EXPECT_EQ(0, ran);
}

TEST(skip_reports_reason)
{
	SKIP(return, "skipping on purpose (%d)", 42);
	ASSERT_TRUE(0);	/* never reached */
}

TEST_SIGNAL(signal_abort, SIGABRT)
{
	abort();
}

TEST_SIGNAL(signal_usr1, SIGUSR1)
{
	raise(SIGUSR1);
}

static void *expect_in_thread(void *arg)
{
	EXPECT_EQ(7, *(int *)arg);
	ASSERT_EQ(7, *(int *)arg);
	return NULL;
}

TEST(pass_checks_from_a_thread)
{
	pthread_t th;
	int v = 7;

	ASSERT_EQ(0, pthread_create(&th, NULL, expect_in_thread, &v));
	ASSERT_EQ(0, pthread_join(th, NULL));
}

TEST(pass_child_is_own_process_group)
{
	ASSERT_EQ(getpid(), getpgrp());
}

TEST_TIMEOUT_SET(pass_timeout_set, 5);
TEST(pass_timeout_set)
{
	sleep(0);
}

/* A fixture with variants: setup, test and teardown see the same data. */
FIXTURE(counter)
{
	int value;
	int step;
	char *buf;
};

FIXTURE_VARIANT(counter)
{
	int start;
	int step;
};

FIXTURE_VARIANT_ADD(counter, from_zero)
{
	.start = 0, .step = 1,
};

FIXTURE_VARIANT_ADD(counter, from_ten)
{
	.start = 10, .step = 5,
};

FIXTURE_SETUP(counter)
{
	self->value = variant->start;
	self->step = variant->step;
	self->buf = malloc(64);
	ASSERT_NONNULL(self->buf);
}

FIXTURE_TEARDOWN(counter)
{
	free(self->buf);
}

TEST_F(counter, step_adds)
{
	int before = self->value;

	self->value += self->step;
	ASSERT_EQ(before + variant->step, self->value);
	ASSERT_EQ(variant->start + variant->step, self->value);
}

TEST_F(counter, skip_from_ten)
{
	if (variant->start == 10)
		SKIP(return, "variant from_ten skips");
	ASSERT_EQ(0, self->value);
}

TEST_F_SIGNAL(counter, signal_in_fixture, SIGABRT)
{
	abort();
}

/* A fixture without variants and without teardown. */
FIXTURE(plain)
{
	int fd;
};

FIXTURE_SETUP(plain)
{
	self->fd = dup(1);
	ASSERT_LE(0, self->fd);
}

TEST_F(plain, fd_valid)
{
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(0, close(self->fd));
}

/* Skipping in setup skips the body but still runs the teardown. */
FIXTURE(skipped_setup)
{
	int body_ran;
};

FIXTURE_SETUP(skipped_setup)
{
	SKIP(return, "setup decided to skip");
}

FIXTURE_TEARDOWN(skipped_setup)
{
	ASSERT_EQ(0, self->body_ran);
}

TEST_F(skipped_setup, body_not_run)
{
	self->body_ran = 1;
	ASSERT_TRUE(0);
}

TEST_HARNESS_MAIN
