// SPDX-License-Identifier: MIT
/*
 * Description: a program whose every test skips exits with 4. Run by
 * check.sh.
 */
#include "harness.h"

TEST(skip_a)
{
	SKIP(return, "no device");
}

TEST(skip_b)
{
	SKIP(return, "no device either");
}

TEST_HARNESS_MAIN
