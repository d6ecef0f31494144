// SPDX-License-Identifier: MIT
/*
 * ut-knobs - print the tools' knob table (knobs.h) for the scripts that
 * need it: fakeumm.sh makes its fake tree from it and check-knobs.py
 * compares it with kmod/sysfs.c.
 */
#include <stdio.h>

#include "ut.h"

int main(int argc, char **argv)
{
	if (argc > 1) {
		fprintf(stderr, "usage: ut-knobs\n");
		return 2;
	}
	ut_knobs_list(stdout);
	return fflush(stdout) ? 1 : 0;
}
