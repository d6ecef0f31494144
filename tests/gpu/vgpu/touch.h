/* SPDX-License-Identifier: MIT */
/*
 * touch.h - whether a CPU read of an address faults, from a forked child
 * (so the test survives the SIGSEGV it expects).
 */
#ifndef UM_TESTS_VGPU_TOUCH_H
#define UM_TESTS_VGPU_TOUCH_H

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* 1 when reading p kills a child with SIGSEGV, 0 when not, -1 on error. */
static inline int vgpu_touch_faults(volatile const char *p)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		(void)p[0];
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

#endif /* UM_TESTS_VGPU_TOUCH_H */
