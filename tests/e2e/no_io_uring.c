/* SPDX-License-Identifier: MIT */
/*
 * no_io_uring PROG [ARG...] - runs PROG as a container under Docker's or
 * containerd's default seccomp profile would: io_uring_setup refused with
 * EPERM (tests/harness/refuse_io_uring.h), for PROG and all it starts.
 * In the VM rig, `no_io_uring e2e_cgroup` is the cgroup scene with libum's
 * pressure loop in poll(2) and its spill on pread/pwrite. Exits 1 if the
 * filter cannot be installed, else as exec(3) leaves it.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "refuse_io_uring.h"

int main(int argc, char **argv)
{
	int ret;

	if (argc < 2) {
		fprintf(stderr, "usage: no_io_uring PROG [ARG...]\n");
		return 1;
	}
	ret = refuse_io_uring();
	if (ret) {
		fprintf(stderr, "no_io_uring: seccomp filter: %s\n",
			strerror(-ret));
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "no_io_uring: %s: %s\n", argv[1], strerror(errno));
	return 1;
}
