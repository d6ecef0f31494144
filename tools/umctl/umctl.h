/* SPDX-License-Identifier: MIT */
/*
 * umctl.h - what umctl's command files share.
 */
#ifndef UMCTL_H
#define UMCTL_H

#include <stdbool.h>

/* Exit status: 0 done, 1 the system said no, 2 the command line is wrong. */
enum { EX_DONE = 0, EX_RUNTIME = 1, EX_USAGE = 2 };

struct umctl {
	const char *root;	/* stands for /sys */
	bool json;
};

int cmd_knobs(struct umctl *u, int argc, char **argv);
int cmd_get(struct umctl *u, int argc, char **argv);
int cmd_set(struct umctl *u, int argc, char **argv);
int cmd_inject(struct umctl *u, int argc, char **argv);
int cmd_metrics(struct umctl *u, int argc, char **argv);

/*
 * Writes "VAL\n" to ROOT/kernel/mm/umm/REL with one write(), as sysfs wants:
 * 0 or -errno. append: keep what the file holds (the inject file, which
 * sysfs takes command by command; a fake tree then logs every command).
 */
int umctl_write(const struct umctl *u, const char *rel, const char *val,
		bool append);
/* "umctl: WHAT: strerror (ENAME)" and a hint for the errno; EX_RUNTIME. */
int umctl_fail(const char *what, int err);
/* EX_DONE when umm.ko is there, else EX_RUNTIME and why not. */
int umctl_need_module(const struct umctl *u);

#endif /* UMCTL_H */
