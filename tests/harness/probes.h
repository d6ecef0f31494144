/* SPDX-License-Identifier: MIT */
/*
 * probes.h - what the running kernel offers, asked independently of the
 * code under test, for suites that expect different outcomes per kernel.
 */
#ifndef UM_TEST_PROBES_H
#define UM_TEST_PROBES_H

#include <fcntl.h>
#include <unistd.h>

/* Whether this kernel takes a PSI memory trigger from us (root, PSI on). */
static inline int probe_psi_trigger(void)
{
	static const char trig[] = "some 150000 2000000";
	int fd = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK);
	int ok;

	if (fd < 0)
		return 0;
	ok = write(fd, trig, sizeof(trig)) > 0;
	close(fd);
	return ok;
}

#endif /* UM_TEST_PROBES_H */
