/* SPDX-License-Identifier: MIT */
/*
 * stager.h - a thread that acquires regions on the device ahead of their
 * use, in the order they were posted.
 *
 * um_acquire() on the sim backend returns only once the bytes are there
 * (the caller's "stream" is the calling thread), so acquiring ahead from
 * the thread that computes overlaps nothing. The stager's thread makes the
 * acquire - evictions to make room, the restore - while the caller
 * computes; the caller then takes the region over. With CUDA the acquire
 * is asynchronous anyway and the stager only issues it earlier.
 */
#ifndef UMTRAIN_STAGER_H
#define UMTRAIN_STAGER_H

#include "um.h"

#define STAGER_DEPTH	16	/* posted and not yet taken, at most */

struct stager;

/* 0 or -errno. */
int stager_start(struct stager **out, struct um_context *ctx);
/* Queue an acquire of r on device 0: 0, or -ENOSPC with STAGER_DEPTH
 * regions posted and not taken, -EINVAL if r is posted already. */
int stager_post(struct stager *s, um_region_t r);
/*
 * Hand r over to the caller: 1 when the stager acquired it (the caller now
 * holds it and must release it), 0 when r was not posted or had not been
 * started (withdrawn: the caller acquires it), or the acquire's -errno.
 */
int stager_take(struct stager *s, um_region_t r);
/* Wait until every region posted has been acquired (or failed). NULL is a
 * no-op. */
void stager_drain(struct stager *s);
/* Withdraw what has not started, release what was acquired and never
 * taken, stop the thread. NULL is a no-op. */
void stager_stop(struct stager *s);

#endif /* UMTRAIN_STAGER_H */
