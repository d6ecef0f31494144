/* SPDX-License-Identifier: MIT */
/*
 * refuse_io_uring.h - a test process as a container's seccomp profile
 * leaves it (header only: tests/unit/helpers.h and test_spill.c include it,
 * tests/e2e/no_io_uring.c runs a scene under it).
 */
#ifndef UM_TEST_REFUSE_IO_URING_H
#define UM_TEST_REFUSE_IO_URING_H

#include <errno.h>
#include <stddef.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/*
 * What Docker's and containerd's default seccomp profiles do to io_uring:
 * io_uring_setup fails with EPERM, for this process (a test's own) and
 * what it starts, for good.
 */
static __attribute__((unused)) int refuse_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]),
				   .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		return -errno;
	return 0;
}

#endif /* UM_TEST_REFUSE_IO_URING_H */
