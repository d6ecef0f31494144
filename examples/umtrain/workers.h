/* SPDX-License-Identifier: MIT */
/*
 * workers.h - a fixed team of threads that run one function together.
 *
 * workers_run(fn) calls fn(arg, id, n) once for every id in [0, n) (id 0 on
 * the caller's thread) and returns when all have returned. The kernels split
 * their output by id with slice(), so the result never depends on n.
 */
#ifndef UMTRAIN_WORKERS_H
#define UMTRAIN_WORKERS_H

#include <stddef.h>

struct workers;
typedef void (*work_fn)(void *arg, unsigned int id, unsigned int n);

/* 0 or -errno. n >= 1; n == 1 runs everything on the caller's thread. */
int workers_start(struct workers **out, unsigned int n);
void workers_run(struct workers *w, work_fn fn, void *arg);
unsigned int workers_count(const struct workers *w);
void workers_stop(struct workers *w);

/* Part id of n of [0, total), boundaries rounded to multiples of align. */
void slice(size_t total, size_t align, unsigned int id, unsigned int n,
	   size_t *lo, size_t *hi);

#endif /* UMTRAIN_WORKERS_H */
