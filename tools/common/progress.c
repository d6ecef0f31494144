// SPDX-License-Identifier: MIT
/*
 * progress.c - a one-line progress bar on stderr.
 *
 * Drawn only when both stdout and stderr are terminals: output redirected to
 * a file or a pipe (a log, a test) stays free of carriage returns.
 */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "ut.h"

#define BAR_WIDTH 24
#define REDRAW_NS 100000000ull

void ut_progress_init(struct ut_progress *p, uint64_t total, bool wanted)
{
	p->on = wanted && total && isatty(STDOUT_FILENO) &&
		isatty(STDERR_FILENO);
	p->total = total;
	p->last_ns = 0;
}

void ut_progress_update(struct ut_progress *p, uint64_t done,
			const char *fmt, ...)
{
	char bar[BAR_WIDTH + 1];
	uint64_t now, fill;
	va_list ap;
	int i;

	if (!p->on)
		return;
	now = ut_now_ns();
	if (done < p->total && p->last_ns && now - p->last_ns < REDRAW_NS)
		return;
	p->last_ns = now;
	fill = (done > p->total ? p->total : done) * BAR_WIDTH / p->total;
	for (i = 0; i < BAR_WIDTH; i++)
		bar[i] = (uint64_t)i < fill ? '#' : '.';
	bar[BAR_WIDTH] = '\0';
	fprintf(stderr, "\r\033[K[%s] %llu/%llu ", bar,
		(unsigned long long)done, (unsigned long long)p->total);
	if (fmt) {
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
	}
	fflush(stderr);
}

void ut_progress_end(struct ut_progress *p)
{
	if (!p->on)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
}
