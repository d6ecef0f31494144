/* SPDX-License-Identifier: MIT */
/*
 * backend_sim.h - test hooks of the simulated backend (internal).
 *
 * The ops themselves are reached through um__backend_sim (backend.h). These
 * hooks make the sim's asynchronous work observable and its failures
 * deterministic for tests; no real backend has them. Each takes the
 * struct um_backend that um__backend_sim.init filled in.
 */
#ifndef UM_BACKEND_SIM_H
#define UM_BACKEND_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

/*
 * Hold (true) or let go (false) every queue of the backend: while held, no
 * queue starts a new job, so a fence recorded after submitted work stays
 * unreached (-EAGAIN) until let go. Do not queue_sync or fence_wait on a
 * held queue from the thread that must let it go. 0 or -EINVAL.
 */
int um__sim_hold(struct um_backend *be, bool hold);

/*
 * Make the next count copy or fill jobs to run (on any queue) fail with err
 * (a negative errno): the job is skipped, its destination left untouched,
 * and so is every later copy or fill on that queue up to the next fence
 * recorded there, which reports -EIO (the queue is healthy again after
 * it). queue_sync on that queue then returns -EIO once. 0 or -EINVAL.
 */
int um__sim_fail_next(struct um_backend *be, int err, unsigned int count);

/* Bytes of sim device memory mapped now (the extent allocator's view). */
uint64_t um__sim_mapped_bytes(struct um_backend *be);

/*
 * Copies and fills of at least split_min bytes are cut into pieces run in
 * parallel by helper threads (one fewer than the CPUs, at most 3).
 * 0 disables splitting. Returns the previous value.
 */
uint64_t um__sim_set_split_min(struct um_backend *be, uint64_t split_min);

#endif /* UM_BACKEND_SIM_H */
